// Pass 2a of verifyExport: each epoch's commitment and the first seed
// revealed for it, checked against each other (docs/protocol.md §1), so that
// the rolls (which come before their reveal) know whether their seed can be
// trusted; then the commitments' signatures (docs/PROTOCOL-signatures.md §4).
import { hexToBytes } from '../bytes.js';
import { commitmentOf } from '../hash.js';
import { commitmentMessage, verifyEd25519 } from '../signatures.js';

/** The trusted roller keys from the options, lowercase hex, no duplicates. */
export function trustedKeys(options) {
  const keys = [...(options.rollerKeys ?? []), ...(options.rollerKey ? [options.rollerKey] : [])];
  return [...new Set(keys.map((k) => String(k).trim().toLowerCase()).filter((k) => k !== ''))];
}

/**
 * The battle's seeds: `commitments` (epoch → { epoch, commitment, version,
 * revealedAt, check, signature }), `reveals` (epoch → { seed, version,
 * matches }), the `clientSeed`.
 */
export async function collectSeeds(audit, decodedEvents) {
  const commitments = new Map();
  const reveals = new Map();
  let clientSeed = null;
  for (const e of decodedEvents) {
    const ev = e.decoded.event;
    const epochOf = ev.type === 'BattleOpened' ? 0 : ev.epoch;
    if ((ev.type === 'BattleOpened' && clientSeed === null) || (ev.type === 'SeedCommitted' && !commitments.has(ev.epoch))) {
      if (ev.type === 'BattleOpened') clientSeed = ev.client_seed;
      commitments.set(epochOf, {
        epoch: epochOf, commitment: ev.commitment, version: e.version, revealedAt: null, check: 'unrevealed', signature: 'unsigned',
      });
    } else if (ev.type === 'SeedRevealed' && !reveals.has(ev.epoch)) {
      const matches = await revealMatches(commitments.get(ev.epoch), ev.server_seed);
      reveals.set(ev.epoch, { seed: ev.server_seed, version: e.version, matches });
      const c = commitments.get(ev.epoch);
      if (c) {
        c.revealedAt = e.version;
        c.check = matches ? 'ok' : 'bad';
      }
    }
  }
  if (clientSeed === null && decodedEvents.length > 0) {
    audit.find(decodedEvents[0].version, 'sequence', 'no BattleOpened: the client seed and the epoch-0 commitment are missing', decodedEvents[0]);
  }
  return { commitments, reveals, clientSeed };
}

async function revealMatches(commitment, seed) {
  try {
    return Boolean(commitment) && (await commitmentOf(seed)) === commitment.commitment;
  } catch {
    return false; // not 64 hex digits
  }
}

/**
 * Every commitment signed, all by one roller key, and by a trusted one when
 * trusted keys are given (`rollerKeys`, the site's published list, or
 * `rollerKey`, one typed). The fields come from the record (decodeRecord
 * shows bytes as hex). Returns the battle's `rollerKey`, its
 * `rollerKeyStatus` — pinned: signed by a trusted key; unpinned: no trusted
 * key given (the signatures hold, but anyone could have made them);
 * mismatch: signed by another key (a failure, reported) — and `trusted`.
 */
export async function checkSignatures(audit, commitments, options) {
  let rollerKey = null;
  const trusted = trustedKeys(options);
  const eventAt = (version) => audit.events.find((x) => x.version === version);
  for (const c of commitments.values()) {
    const e = eventAt(c.version);
    const ev = e.decoded.event;
    if (!ev.commitment_signature || !ev.roller_key) {
      c.signature = 'unsigned';
      audit.find(c.version, 'signature', `the commitment of epoch ${c.epoch} is not signed`, e);
      continue;
    }
    rollerKey ??= ev.roller_key;
    // verifyEd25519 is never "not checked": WebCrypto, else JavaScript.
    const valid = await verifyEd25519(hexToBytes(ev.roller_key), hexToBytes(ev.commitment_signature), commitmentMessage(audit.stream, c.epoch, c.commitment));
    if (!valid) {
      c.signature = 'bad';
      audit.find(c.version, 'signature', `the signature of the commitment of epoch ${c.epoch} does not verify with the roller key it names`, e);
      continue;
    }
    c.signature = 'ok';
    if (ev.roller_key !== rollerKey) {
      c.signature = 'bad';
      audit.find(c.version, 'signature', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, not the battle's ${rollerKey}`, e);
    } else if (trusted.length > 0 && !trusted.includes(ev.roller_key)) {
      c.signature = 'bad';
      audit.find(c.version, 'roller-key', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, which is not a trusted roller key (${trusted.join(', ')})`, e);
    }
  }
  let rollerKeyStatus = 'unpinned';
  if (trusted.length > 0) {
    const signers = [...commitments.values()].map((c) => eventAt(c.version).decoded.event.roller_key).filter(Boolean);
    rollerKeyStatus = signers.length > 0 && signers.every((k) => trusted.includes(k)) ? 'pinned' : 'mismatch';
  }
  return { rollerKey, rollerKeyStatus, trusted };
}
