// Loads verify.js and every module it imports into a V8 context that holds
// the language's built-ins and only the web platform globals it may use
// (crypto, TextEncoder, TextDecoder, atob, btoa) — no process, Buffer or
// require — and verifies the fixture exports there. Imports resolve only to
// files of this directory by relative path, as a browser resolves them
// against the page's origin; a bare name (a package) is refused. Run with
// `node --experimental-vm-modules` (vm modules are still flagged in Node
// 20); portable.test.mjs does. Prints one JSON line.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const context = vm.createContext({ crypto: globalThis.crypto, TextEncoder, TextDecoder, atob, btoa });
const loaded = new Map(); // absolute path -> SourceTextModule

function moduleAt(file) {
  if (!loaded.has(file)) {
    loaded.set(file, new vm.SourceTextModule(fs.readFileSync(file, 'utf8'), { context, identifier: path.relative(dir, file) }));
  }
  return loaded.get(file);
}

async function load(name) {
  const module = moduleAt(path.join(dir, name));
  await module.link((specifier, referrer) => {
    if (!specifier.startsWith('./') && !specifier.startsWith('../')) {
      throw new Error(`${referrer.identifier} imports ${specifier}, not a file beside it`);
    }
    const file = path.resolve(dir, path.dirname(referrer.identifier), specifier);
    if (!file.startsWith(dir + path.sep)) throw new Error(`${referrer.identifier} imports ${specifier}, outside the verifier`);
    return moduleAt(file);
  });
  await module.evaluate();
  return module.namespace;
}

const verify = await load('verify.js');
await load('dom.js');
// A vm context has no dynamic import(): the rules engine is loaded here, the
// same way, and handed over (a verifier that cannot load it fails).
const rules = await load('rules/index.js');
const statuses = {};
for (const name of ['demo-pokemon-closed.jsonl', 'open-pokemon.jsonl']) {
  const report = await verify.verifyExport(fs.readFileSync(path.join(dir, 'test', 'fixtures', name), 'utf8'), { rules });
  statuses[name] = [report.status, report.commitments.map((c) => c.signature).join(',')];
}
process.stdout.write(JSON.stringify(statuses) + '\n');
