// Loads rules/index.js and its sibling modules into a V8 context that holds
// only the language's built-ins — no process, Buffer, require, nor any web
// global: the rules need none, so they run alike in a page, a Web Worker and
// node — and re-resolves the fixture exports' outcomes there. Run with
// `node --experimental-vm-modules` (vm modules are still flagged in Node 20);
// rules-portable.test.mjs does. Prints one JSON line: file → [actions, bad].
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'rules');
const context = vm.createContext({});
const modules = new Map();

function load(file) {
  if (!modules.has(file)) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    modules.set(file, new vm.SourceTextModule(source, { context, identifier: file }));
  }
  return modules.get(file);
}

async function linker(specifier) {
  // Only siblings: './x.js'.
  const match = /^\.\/([a-z0-9-]+\.js)$/.exec(specifier);
  if (!match) throw new Error(`rules import ${specifier}, which is not a sibling module`);
  return load(match[1]);
}

const index = load('index.js');
await index.link(linker);
await index.evaluate();
const { checkOutcomes } = index.namespace;

const fixtures = path.join(dir, '..', 'test', 'fixtures');
const out = {};
for (const file of fs.readdirSync(fixtures).filter((f) => f.endsWith('.jsonl')).sort()) {
  const text = fs.readFileSync(path.join(fixtures, file), 'utf8');
  // The lines parsed inside the context, as a page would parse them.
  const lines = vm.runInContext(`(${JSON.stringify(text)}).split('\\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l))`, context);
  const results = checkOutcomes(lines);
  out[file] = [results.length, results.filter((r) => !r.ok).length];
}
process.stdout.write(`${JSON.stringify(out)}\n`);
