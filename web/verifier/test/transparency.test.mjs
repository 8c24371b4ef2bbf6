// docs/protocol.md §5 in the JavaScript verifier (transparency.js): leaves,
// inclusion proofs against RFC 6962's definitions (tools/make-trailer.mjs,
// built with node:crypto apart from the verifier), C2SP signed notes (Go's
// own known answer), and an export's trailer, valid and tampered with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import {
  base64ToBytes, bytesToHex, checkTrailer, keyIdOf, leafHash, leafInput, nodeHash, openCheckpoint, openNote,
  parseVerifierKey, TransparencyError, verifyExport, verifyInclusion,
} from '../verify.js';
import { summarizeChecks } from '../checks.js';
import { makeExport } from '../tools/make-export.mjs';
import { headMessageOf, lastEvent, leafHashOf, logKey, makeTrailer, mth, path, signNote } from '../tools/make-trailer.mjs';

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const sha = (bytes) => new Uint8Array(createHash('sha256').update(bytes).digest());

test('§5 leaf input, byte by byte: "battlelog/v1/leaf" 0x00 stream 0x00 u64_le(version) h(version)', () => {
  const hash = new Uint8Array(32).map((_, i) => i);
  const expected = new Uint8Array([
    ...Buffer.from('battlelog/v1/leaf', 'ascii'), 0x00, ...Buffer.from('b-\u00e9', 'utf8'), 0x00,
    0x02, 0x01, 0, 0, 0, 0, 0, 0, // 258 little-endian
    ...hash,
  ]);
  assert.deepEqual(leafInput('b-\u00e9', 258, hash), expected);
  assert.deepEqual(leafHash('b-\u00e9', 258, hash), sha(Buffer.concat([Buffer.from([0]), expected])));
  assert.deepEqual(nodeHash(hash, hash), sha(Buffer.concat([Buffer.from([1]), hash, hash])));
});

test('inclusion proofs of RFC 6962 PATH verify at every size 1–20 and every index, and each tamper is refused', () => {
  for (let size = 1; size <= 20; size++) {
    const leaves = Array.from({ length: size }, (_, i) => leafHashOf('s', i, sha(Buffer.from(`leaf ${i}`))));
    const root = mth(leaves);
    for (let index = 0; index < size; index++) {
      const proof = path(index, leaves);
      assert.doesNotThrow(() => verifyInclusion(index, size, leaves[index], proof, root), `size ${size} index ${index}`);
      const refused = (p, i = index, n = size, leaf = leaves[index], r = root) => {
        assert.throws(() => verifyInclusion(i, n, leaf, p, r), (e) => e instanceof TransparencyError && e.what === 'inclusion-proof', `size ${size} index ${index}`);
      };
      for (let k = 0; k < proof.length; k++) {
        const flipped = proof.map((h) => h.slice());
        flipped[k][k % 32] ^= 1;
        refused(flipped);
        refused(proof.filter((_, j) => j !== k));
      }
      refused([...proof, leaves[0]]);
      if (size > 1) refused(proof, (index + 1) % size);
      // The proof at size n against the tree of n + 1 leaves (a checkpoint
      // signs its size and root together: a size without its root is no case).
      refused(proof, index, size + 1, leaves[index], mth([...leaves, leafHashOf('s', size, sha(Buffer.from('more')))]));
      refused(proof, size, size);
      const otherLeaf = leaves[index].slice();
      otherLeaf[0] ^= 0x80;
      refused(proof, index, size, otherLeaf);
    }
  }
  // No panic on sizes and indices out of range, nor on odd hashes.
  for (const [i, n] of [[0, 0], [-1, 1], [1.5, 4], [2 ** 60, 2], ['1', 2], [0n, (1n << 64n)]]) {
    assert.throws(() => verifyInclusion(i, n, new Uint8Array(32), [], new Uint8Array(32)), TransparencyError);
  }
  assert.throws(() => verifyInclusion(0, 2, new Uint8Array(32), [new Uint8Array(31)], new Uint8Array(32)), TransparencyError);
});

// golang.org/x/mod/sumdb/note's example, signed by Go's implementation.
const PETER = {
  vkey: 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
  skey: 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz',
  text: "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n",
  sig: 'x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=',
};

test("C2SP signed notes: Go's own example opens, its key id is §5's formula, and our test signer makes it byte for byte", async () => {
  const key = parseVerifierKey(PETER.vkey);
  assert.equal(key.name, 'PeterNeumann');
  assert.equal(bytesToHex(keyIdOf(key.name, key.publicKey)), 'c74f20a3');
  const note = `${PETER.text}\n\u2014 PeterNeumann ${PETER.sig}\n`;
  assert.equal(await openNote(note, key), PETER.text);
  // The test's signer (tools/make-trailer.mjs) is Go's format: the same seed
  // gives the same note (Ed25519 is deterministic).
  const seed = bytesToHex(base64ToBytes(PETER.skey.split('+').slice(4).join('+')).subarray(1));
  const signer = await logKey(seed, 'PeterNeumann');
  assert.equal(signer.verifierKey, PETER.vkey);
  assert.equal(await signNote(PETER.text, signer), note);
  // One byte of the text changed, the key id changed, another name: refused.
  await assert.rejects(openNote(note.replace('cryptography', 'cryptographY'), key), (e) => e.what === 'note-signature');
  await assert.rejects(openNote(`${PETER.text}\n\u2014 PeterNeumann ${b64(Buffer.from([0, 0, 0, 0, ...base64ToBytes(PETER.sig).subarray(4)]))}\n`, key), (e) => e.what === 'note-signature');
  await assert.rejects(openNote(note.replaceAll('PeterNeumann', 'PeterNeumann2'), key), (e) => e.what === 'note-signature');
  // Another key's line beside ours is ignored (C2SP), in either order.
  const other = await logKey('11'.repeat(32), 'EnochRoot');
  const both = await signNote(PETER.text, other, signer);
  assert.equal(await openNote(both, key), PETER.text);
  // Not notes at all.
  for (const bad of ['', PETER.text, `${PETER.text}\n`, `${PETER.text}\nPeterNeumann ${PETER.sig}\n`, `${PETER.text}\n\u2014 PeterNeumann ${PETER.sig}`, `a\u0007\n\n\u2014 PeterNeumann ${PETER.sig}\n`]) {
    await assert.rejects(openNote(bad, key), (e) => e instanceof TransparencyError, JSON.stringify(bad));
  }
});

test('verifier keys: a key id that does not match, another type, bad text are refused naming the key', () => {
  // A key whose base64 holds a '+' (transparency-dev/formats' note tests).
  assert.equal(parseVerifierKey('TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6').name, 'TEST');
  // As Go's note package: the key id in either case.
  assert.equal(parseVerifierKey('PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW').name, 'PeterNeumann');
  for (const bad of ['', 'PeterNeumann', 'PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
    'PeterNeumann+c74f20a3+AhpC2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW', 'Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW',
    'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10', 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW+']) {
    assert.throws(() => parseVerifierKey(bad), (e) => e.what === 'malformed' && e.message.includes('log_key'), bad);
  }
});

test('a checkpoint opens with its key and gives its size and root; its origin must be the key name', async () => {
  const key = await logKey();
  const root = sha(Buffer.from('root'));
  const note = await signNote(`${key.origin}\n42\n${b64(root)}\n`, key);
  const opened = await openCheckpoint(note, parseVerifierKey(key.verifierKey));
  assert.equal(opened.size, 42n);
  assert.deepEqual(opened.root, root);
  for (const text of [`${key.origin}\n042\n${b64(root)}\n`, `${key.origin}\n-1\n${b64(root)}\n`, `${key.origin}\n1\n${b64(root.subarray(1))}\n`, `${key.origin}\n18446744073709551616\n${b64(root)}\n`, `${key.origin}\n1\n`]) {
    await assert.rejects(openCheckpoint(await signNote(text, key), parseVerifierKey(key.verifierKey)), (e) => e.what === 'malformed', text);
  }
});

// --- Exports with a trailer --------------------------------------------------

async function exportWithTrailer(edit = (t) => t, options = {}) {
  const { text, lastVersion } = await makeExport();
  const key = await logKey();
  const trailer = edit(await makeTrailer(lastEvent(text), key, options), key);
  return { text: `${text}${JSON.stringify(trailer)}\n`, base: text, lastVersion, key, trailer };
}

function assertCheckpointFails(report, lastVersion, what) {
  assert.equal(report.status, 'failed');
  assert.equal(report.firstFailure, lastVersion + 1);
  assert.equal(report.trailer.check, 'bad');
  assert.ok(report.trailer.failures.some((f) => f.what === what), JSON.stringify(report.trailer.failures));
  assert.ok(report.problems.some((p) => p.check === 'checkpoint' && p.what === what && p.version === lastVersion + 1), JSON.stringify(report.problems));
  for (const lang of ['en', 'ru']) {
    const item = summarizeChecks(report, lang).find((c) => c.name === 'checkpoint');
    assert.equal(item.check, 'bad', lang);
  }
}

test("log keys with a '+' in their base64 work end to end (found by the real stack)", async () => {
  const { text } = await makeExport();
  let seen = 0;
  for (let i = 0; i < 64 && seen < 3; i++) {
    const key = await logKey(i.toString(16).padStart(2, '0').repeat(32));
    if (!key.verifierKey.split('+').slice(2).join('+').includes('+')) continue;
    seen += 1;
    const trailer = await makeTrailer(lastEvent(text), key);
    const report = await verifyExport(`${text}${JSON.stringify(trailer)}\n`, { logKeys: [key.verifierKey] });
    assert.equal(report.status, 'verified', JSON.stringify(report.problems));
    assert.equal(report.trailer.keyStatus, 'pinned');
  }
  assert.ok(seen > 0, "no seed gave a key with a '+'");
});

test('a valid trailer passes the checkpoint check, pinned to the site key, in English and Russian', async () => {
  for (const [index, size] of [[0, 1], [3, 6], [6, 7], [12, 20]]) {
    const { text, key } = await exportWithTrailer(undefined, { index, size });
    const report = await verifyExport(text, { logKeys: [key.verifierKey] });
    assert.equal(report.status, 'verified', JSON.stringify(report.problems));
    assert.equal(report.trailer.check, 'ok');
    assert.equal(report.trailer.keyStatus, 'pinned');
    assert.equal(report.trailer.checkpoint.size, String(size));
    const en = summarizeChecks(report, 'en').find((c) => c.name === 'checkpoint');
    assert.equal(en.check, 'ok');
    // The root in hex, as `battlelog audit` prints it, and the note's base64 beside it.
    const rootHex = Buffer.from(report.trailer.checkpoint.root, 'base64').toString('hex');
    // Values are marked `…` (drawn as code): read without the marks.
    const plain = en.text.replace(/`/g, '');
    assert.ok(plain.includes(`log of ${size} ${size === 1 ? 'record' : 'records'}, root ${rootHex} `), en.text);
    assert.ok(plain.includes(`base64 ${report.trailer.checkpoint.root}`), en.text);
    assert.match(summarizeChecks(report, 'ru').find((c) => c.name === 'checkpoint').text, /Подписанный чекпойнт: последнее событие/);
  }
  // No trusted key given: it passes, unpinned, and says so.
  const { text } = await exportWithTrailer();
  const unpinned = await verifyExport(text);
  assert.equal(unpinned.status, 'verified');
  assert.equal(unpinned.trailer.keyStatus, 'unpinned');
  assert.match(summarizeChecks(unpinned, 'en').find((c) => c.name === 'checkpoint').text, /not pinned/);
});

test('no trailer: the checkpoint check is skipped and says the export was checked only as far as the chain', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text);
  assert.equal(report.status, 'verified');
  assert.equal(report.trailer, null);
  const en = summarizeChecks(report, 'en').find((c) => c.name === 'checkpoint');
  assert.deepEqual([en.check, en.text.startsWith('No trailer: checked only as far as the chain')], ['skipped', true]);
  assert.match(summarizeChecks(report, 'ru').find((c) => c.name === 'checkpoint').text, /^Трейлера нет/);
});

test('each tamper with the trailer fails the export where it ends, naming what failed', async () => {
  const flipB64 = (s, at = 0) => {
    const bytes = base64ToBytes(s);
    bytes[at] ^= 1;
    return b64(bytes);
  };
  const cases = {
    // The note's size edited (the signature is over the text).
    'note-signature': (t) => ({ ...t, checkpoint: t.checkpoint.replace(/\n6\n/, '\n7\n') }),
    'head-not-last-event': (t) => ({ ...t, head: { ...t.head, version: t.head.version + 1 } }),
    'head-signature': (t) => ({ ...t, head_signature: flipB64(t.head_signature, 10) }),
    'inclusion-proof': (t) => ({ ...t, inclusion_proof: [flipB64(t.inclusion_proof[0]), ...t.inclusion_proof.slice(1)] }),
    malformed: (t) => ({ ...t, head_signature: 'not base64!' }),
  };
  for (const [what, edit] of Object.entries(cases)) {
    const { text, lastVersion, key } = await exportWithTrailer(edit);
    assertCheckpointFails(await verifyExport(text, { logKeys: [key.verifierKey] }), lastVersion, what);
  }
  // The head's hash or stream edited.
  for (const edit of [(t) => ({ ...t, head: { ...t.head, hash: '00'.repeat(32) } }), (t) => ({ ...t, head: { ...t.head, stream: 'b-other' } })]) {
    const { text, lastVersion } = await exportWithTrailer(edit);
    assertCheckpointFails(await verifyExport(text), lastVersion, 'head-not-last-event');
  }
  // The wrong leaf index: the same proof shows another leaf.
  const wrongIndex = await exportWithTrailer((t) => ({ ...t, leaf_index: 2 }));
  assertCheckpointFails(await verifyExport(wrongIndex.text), wrongIndex.lastVersion, 'inclusion-proof');
  // A proof one hash short, one too long.
  for (const edit of [(t) => ({ ...t, inclusion_proof: t.inclusion_proof.slice(1) }), (t) => ({ ...t, inclusion_proof: [...t.inclusion_proof, t.inclusion_proof[0]] })]) {
    const { text, lastVersion } = await exportWithTrailer(edit);
    assertCheckpointFails(await verifyExport(text), lastVersion, 'inclusion-proof');
  }
});

test("a trailer by another log key fails when the site's key is pinned, even though it is self-consistent", async () => {
  const { text, lastVersion } = await exportWithTrailer();
  const site = await logKey('22'.repeat(32));
  const report = await verifyExport(text, { logKeys: [site.verifierKey] });
  assertCheckpointFails(report, lastVersion, 'log-key-not-trusted');
  assert.equal(report.trailer.keyStatus, 'mismatch');
  assert.equal(report.trailer.failures.length, 1, 'only the key: everything else holds');
  // Re-signed by another key end to end, with the log_key left as the
  // site's: the signatures fail instead.
  const key = await logKey();
  const base = await makeExport();
  const other = await makeTrailer(lastEvent(base.text), site);
  const mixed = `${base.text}${JSON.stringify({ ...other, log_key: key.verifierKey })}\n`;
  const report2 = await verifyExport(mixed, { logKey: key.verifierKey });
  assertCheckpointFails(report2, base.lastVersion, 'note-signature');
});

test('an export cut short with its trailer kept fails: the signed head is a later version', async () => {
  const { text, base, lastVersion, key } = await exportWithTrailer();
  const lines = base.trimEnd().split('\n');
  const trailerLine = text.trimEnd().split('\n').at(-1);
  const cut = `${lines.slice(0, -1).join('\n')}\n${trailerLine}\n`;
  const report = await verifyExport(cut, { logKeys: [key.verifierKey] });
  assertCheckpointFails(report, lastVersion - 1, 'head-not-last-event');
  assert.match(report.trailer.failures[0].message, new RegExp(`head is version ${lastVersion}, the export ends at version ${lastVersion - 1}`));
  // With the trailer dropped too, nothing shows it: only the skipped check says so.
  const dropped = await verifyExport(`${lines.slice(0, -1).join('\n')}\n`);
  assert.equal(dropped.trailer, null);
});

test('checkTrailer never throws on junk: each is a malformed failure', async () => {
  const last = { stream: 's', version: 0, hash: '00'.repeat(32) };
  const key = await logKey();
  const good = await makeTrailer(last, key);
  for (const junk of [null, 7, [], {}, { ...good, head: null }, { ...good, leaf_index: -1 }, { ...good, leaf_index: 2 ** 60 }, { ...good, inclusion_proof: 'x' },
    { ...good, inclusion_proof: [b64(new Uint8Array(31))] }, { ...good, head: { ...good.head, hash: 'zz' } }, { ...good, log_key: 'nope' }, { ...good, checkpoint: 3 }]) {
    const result = await checkTrailer(junk, last, []);
    assert.equal(result.check, 'bad', JSON.stringify(junk));
    assert.equal(result.failures[0].what, 'malformed', JSON.stringify(result.failures));
  }
  assert.equal((await checkTrailer(good, last, [])).check, 'ok');
  // The head message the test signs is §5's, which the verifier checks.
  assert.equal(headMessageOf('s', 0, new Uint8Array(32), 6).length, 17 + 1 + 1 + 1 + 8 + 32 + 8);
});

test('no trailer with a log key pinned: the export fails at its end, as `battlelog audit --log-key` does', async () => {
  // An export with its trailer dropped (as one cut short would be) looks
  // like one written before §5: only a pinned key tells that a trailer was due.
  const { text } = await exportWithTrailer();
  const cut = text.trim().split('\n').slice(0, -1).join('\n') + '\n';
  const key = await logKey();
  const report = await verifyExport(cut, { logKeys: [key.verifierKey] });
  assert.equal(report.status, 'failed');
  const missing = report.problems.filter((p) => p.check === 'checkpoint');
  assert.deepEqual(missing.map((p) => p.what), ['missing']);
  assert.equal(missing[0].version, lastEvent(cut).version + 1);
  const en = summarizeChecks(report, 'en').find((c) => c.name === 'checkpoint');
  assert.equal(en.check, 'bad');
  assert.match(en.text, /no trailer, and a log key is pinned/);
  assert.match(summarizeChecks(report, 'ru').find((c) => c.name === 'checkpoint').text, /трейлера нет, а ключ журнала закреплён/);
  // A caller that knows the export has gone past its trailer (a live page) says so.
  const live = await verifyExport(cut, { logKeys: [key.verifierKey], requireTrailer: false });
  assert.equal(live.status, 'verified', JSON.stringify(live.problems));
});

test('the trailer is read as strictly as the Rust audit reads it: padded base64, lowercase hex', async () => {
  for (const [name, edit] of [
    ['unpadded head_signature', (t) => ({ ...t, head_signature: t.head_signature.replace(/=+$/, '') })],
    ['a space in a proof hash', (t) => ({ ...t, inclusion_proof: [` ${t.inclusion_proof[0]}`, ...t.inclusion_proof.slice(1)] })],
    ['an upper-case head hash', (t) => ({ ...t, head: { ...t.head, hash: t.head.hash.toUpperCase() } })],
  ]) {
    const { text, key } = await exportWithTrailer(edit);
    const report = await verifyExport(text, { logKeys: [key.verifierKey] });
    assert.equal(report.status, 'failed', name);
    assert.deepEqual(report.trailer.failures.map((f) => f.what), ['malformed'], name);
  }
});

test('notes past the Rust audit limits are refused before any signature is checked', async () => {
  const { text, key } = await exportWithTrailer();
  const trailer = JSON.parse(text.trim().split('\n').at(-1));
  const [body, signature] = trailer.checkpoint.split('\n\n');
  const line = signature.trimEnd();
  for (const [name, note] of [
    ['101 signature lines', `${body}\n\n${`${line}\n`.repeat(101)}`],
    ['over 16 KiB', `${body}\n\n${line}\n${'— other+00000000 AAAAAAA=\n'.repeat(700)}`],
  ]) {
    const report = await verifyExport(text.replace(JSON.stringify(trailer), JSON.stringify({ ...trailer, checkpoint: note })), { logKeys: [key.verifierKey] });
    assert.equal(report.status, 'failed', name);
    assert.deepEqual(report.trailer.failures.map((f) => f.what), ['malformed'], name);
  }
  // A hundred lines are still read (the log key's among them).
  const hundred = `${body}\n\n${`${line}\n`.repeat(100)}`;
  const ok = await verifyExport(text.replace(JSON.stringify(trailer), JSON.stringify({ ...trailer, checkpoint: hundred })), { logKeys: [key.verifierKey] });
  assert.equal(ok.status, 'verified', JSON.stringify(ok.problems));
});
