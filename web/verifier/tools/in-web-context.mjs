// Loads verify.js into a V8 context that holds the language's built-ins and
// only the web platform globals it may use (crypto, TextEncoder, TextDecoder,
// atob, btoa) — no process, Buffer or require — and verifies the fixture
// exports there. Run with `node --experimental-vm-modules` (vm modules are
// still flagged in Node 20); portable.test.mjs does. Prints one JSON line.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const context = vm.createContext({ crypto: globalThis.crypto, TextEncoder, TextDecoder, atob, btoa });

async function load(file) {
  const module = new vm.SourceTextModule(fs.readFileSync(path.join(dir, file), 'utf8'), { context, identifier: file });
  await module.link(() => {
    throw new Error(`${file} imports a module`);
  });
  await module.evaluate();
  return module.namespace;
}

const verify = await load('verify.js');
await load('dom.js');
const statuses = {};
for (const name of ['demo-pokemon-closed.jsonl', 'open-pokemon.jsonl']) {
  const report = await verify.verifyExport(fs.readFileSync(path.join(dir, 'test', 'fixtures', name), 'utf8'));
  statuses[name] = [report.status, report.commitments.map((c) => c.signature).join(',')];
}
process.stdout.write(JSON.stringify(statuses) + '\n');
