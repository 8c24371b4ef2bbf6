// Pass 1 of verifyExport: the hash chain and the records (docs/protocol.md
// §4). Every line becomes an event of the report, with its record decoded
// when it can be; every link is checked from the hash the line before
// claims, so one broken link is one finding, not one on every later line.
import { base64ToBytes, bytesEqual, hexToBytes } from '../bytes.js';
import { chainHash, genesisHash } from '../chain.js';
import { decodeRecord } from '../protobuf.js';
import { sameJson } from './context.js';

/** Checks `lines` into `audit.events` (each with `decoded` when it decodes). */
export async function checkRecords(audit, lines) {
  const links = linksOf(lines, await genesisHash(audit.stream));
  let expectedVersion = 0;
  lines.forEach(({ line, value }, index) => {
    audit.step();
    const event = {
      version: value.version, line, type: null, hash: 'ok', link: 'ok', record: 'ok', event: 'ok',
      check: 'ok', problems: [], decoded: null, unchecked: [],
    };
    audit.events.push(event);
    checkPlace(audit, event, value, expectedVersion);
    expectedVersion = value.version + 1;
    const { record } = links[index];
    if (checkLink(audit, event, links[index])) checkRecord(audit, event, value, record);
  });
}

/** Each line's record bytes, its claimed hash, and the hash it should have. */
function linksOf(lines, genesis) {
  let previous = genesis;
  return lines.map(({ value }) => {
    let record = null;
    let claimed = null;
    try {
      record = base64ToBytes(value.record);
    } catch {
      record = null;
    }
    try {
      claimed = typeof value.hash === 'string' && value.hash.length === 64 ? hexToBytes(value.hash) : null;
    } catch {
      claimed = null;
    }
    const computed = record && claimed ? chainHash(previous, record) : null;
    if (claimed) previous = claimed;
    return { record, claimed, computed };
  });
}

/** The line's stream and version where the export says they should be. */
function checkPlace(audit, event, value, expectedVersion) {
  const { version } = value;
  if (value.stream !== audit.stream) {
    event.link = 'bad';
    audit.find(version, 'record', `the line names stream ${JSON.stringify(value.stream)}, not ${JSON.stringify(audit.stream)}`, event);
  }
  if (version !== expectedVersion) {
    event.link = 'bad';
    // A gap is reported at the first missing version: that is where the
    // export stops being the journal's.
    const at = Math.min(version, expectedVersion);
    const message = version > expectedVersion
      ? `version ${expectedVersion} expected here, found version ${version}: missing or out of order`
      : `version ${version} comes again or out of order after version ${expectedVersion - 1}`;
    audit.find(at, 'sequence', message, event);
  }
}

/** The link to the line before; whether the record's bytes are there to decode. */
function checkLink(audit, event, { record, claimed, computed }) {
  const { version } = event;
  if (!record) {
    event.record = 'bad';
    audit.find(version, 'record', 'the record is not base64', event);
  }
  if (!claimed) {
    event.hash = 'bad';
    audit.find(version, 'chain', 'the hash is not 64 hex digits', event);
  }
  if (record && claimed && !bytesEqual(computed, claimed)) {
    event.hash = 'bad';
    audit.find(version, 'chain', 'the hash does not follow from the previous hash and this record', event);
  }
  return Boolean(record);
}

/** The record decoded, and what the line shows of it held to it. */
function checkRecord(audit, event, value, record) {
  const { version } = event;
  let decoded;
  try {
    decoded = decodeRecord(record);
  } catch (e) {
    event.record = 'bad';
    audit.find(version, 'record', `the record bytes do not decode: ${e.message}`, event);
    return;
  }
  event.decoded = decoded;
  event.type = decoded.event.type;
  if (decoded.stream_id !== audit.stream) {
    event.record = 'bad';
    audit.find(version, 'record', `the record belongs to stream ${JSON.stringify(decoded.stream_id)}`, event);
  }
  if (decoded.version !== version) {
    event.record = 'bad';
    audit.find(version, 'record', `the record says version ${decoded.version}`, event);
  }
  checkShown(audit, event, value.event, decoded.event);
}

/**
 * The line's `event` is for people to read; the record is what is hashed.
 * Whatever both show must agree, or a reader is being misled.
 */
function checkShown(audit, event, shown, fromRecord) {
  if (shown === undefined || shown === null) return;
  if (typeof shown !== 'object' || Array.isArray(shown)) {
    event.event = 'bad';
    audit.find(event.version, 'event', 'the event shown is not an object', event);
    return;
  }
  for (const [key, recorded] of Object.entries(fromRecord)) {
    if (key in shown && !sameJson(shown[key], recorded)) {
      event.event = 'bad';
      audit.find(event.version, 'event', `the event shown differs from the record in ${key}`, event);
    }
  }
  event.unchecked = Object.keys(shown).filter((k) => !(k in fromRecord));
}
