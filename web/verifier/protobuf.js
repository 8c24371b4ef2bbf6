// Protobuf records (proto/battlelog/v1/journal.proto, battle.proto): only
// the wire format, read by hand, so that no generated code is trusted.
import { bytesToHex, utf8Decoder } from './bytes.js';

export class RecordDecodeError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RecordDecodeError';
  }
}

// Most varints of a record (keys, lengths, small numbers) fit a few bytes:
// read those as Numbers, and only longer ones with BigInt (which is exact
// for all 64 bits, but slow and garbage-heavy for thousands of fields).
// The readers return the value and leave where it ended in `varintEnd`
// (no pair allocated per varint: a record has dozens, an export thousands
// of records).
const FAST_BYTES = 8; // 56 bits, exact as a Number when the value is safe (below 2^53)
let varintEnd = 0;
// Whether the last readSmallVarint was exact (else readVarintBig reads it).
let varintExact = true;

/** A varint as a Number (exact below 2^53; longer ones go through readVarintBig). */
function readSmallVarint(bytes, at) {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length && i - at < FAST_BYTES; i++) {
    const b = bytes[i];
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) {
      // Every partial sum below 2^53 is exact, so a safe total is.
      varintExact = value <= Number.MAX_SAFE_INTEGER;
      varintEnd = i + 1;
      return value;
    }
    scale *= 128;
  }
  varintExact = false;
  return Number(readVarintBig(bytes, at));
}

/** A varint as a BigInt (exact for all 64 bits). */
function readVarint(bytes, at) {
  const value = readSmallVarint(bytes, at);
  return varintExact ? BigInt(value) : readVarintBig(bytes, at);
}

function readVarintBig(bytes, at) {
  let value = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (at >= bytes.length) throw new RecordDecodeError('truncated varint');
    const b = bytes[at++];
    value |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      varintEnd = at;
      return BigInt.asUintN(64, value);
    }
    shift += 7n;
  }
  throw new RecordDecodeError('varint longer than 10 bytes');
}

/**
 * The fields of one protobuf message in wire order: { number, wireType,
 * value, start, end } — value is a BigInt (varint, fixed) or a Uint8Array
 * (length-delimited); start/end frame the whole field in `bytes`.
 */
export function protobufFields(bytes) {
  const fields = [];
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    const key = readSmallVarint(bytes, at);
    at = varintEnd;
    // A key is at most 32 bits (field number < 2^29): exact as a Number.
    const number = Math.floor(key / 8);
    const wireType = key % 8;
    if (number === 0) throw new RecordDecodeError('field number 0');
    let value;
    if (wireType === 0) {
      value = readVarint(bytes, at);
      at = varintEnd;
    } else if (wireType === 1 || wireType === 5) {
      const n = wireType === 1 ? 8 : 4;
      if (at + n > bytes.length) throw new RecordDecodeError('truncated fixed-width field');
      const view = new DataView(bytes.buffer, bytes.byteOffset + at, n);
      value = n === 8 ? view.getBigUint64(0, true) : BigInt(view.getUint32(0, true));
      at += n;
    } else if (wireType === 2) {
      const length = readSmallVarint(bytes, at);
      at = varintEnd;
      if (length > bytes.length - at) throw new RecordDecodeError('length-delimited field runs past the end');
      value = bytes.subarray(at, at + length);
      at += length;
    } else {
      throw new RecordDecodeError(`wire type ${wireType} is not used by these messages`);
    }
    fields.push({ number, wireType, value, start, end: at });
  }
  return fields;
}

// A small schema language: name -> [type, repeated]. Types: string, bytes,
// bool, uint32, uint64, int64, double, a message schema, or 'struct' /
// 'credential'. Unknown field numbers are skipped (forward compatibility);
// a known field with the wrong wire type is an error.
const WIRE_OF = { string: 2, bytes: 2, bool: 0, uint32: 0, uint64: 0, int64: 0, double: 1 };

// Each schema's repeated fields, listed once.
const REPEATED = new WeakMap();
function repeatedNames(schema) {
  let names = REPEATED.get(schema);
  if (!names) {
    names = Object.values(schema).filter(([, , repeated]) => repeated).map(([name]) => name);
    REPEATED.set(schema, names);
  }
  return names;
}

function decodeMessage(bytes, schema, depth = 0) {
  if (depth > 64) throw new RecordDecodeError('message nested too deeply');
  const out = {};
  for (const name of repeatedNames(schema)) out[name] = [];
  for (const field of protobufFields(bytes)) {
    const spec = schema[field.number];
    if (!spec) continue;
    const [name, type, repeated] = spec;
    const expectedWire = typeof type === 'string' && type in WIRE_OF ? WIRE_OF[type] : 2;
    // Packed repeated scalars (proto3's default for `repeated uint64`).
    if (repeated && expectedWire === 0 && field.wireType === 2) {
      let at = 0;
      while (at < field.value.length) {
        const v = readVarint(field.value, at);
        at = varintEnd;
        out[name].push(scalar(type, v));
      }
      continue;
    }
    if (field.wireType !== expectedWire) throw new RecordDecodeError(`field ${name} has wire type ${field.wireType}`);
    const value = decodeValue(type, field.value, depth);
    if (repeated) out[name].push(value);
    else out[name] = value;
  }
  return out;
}

function scalar(type, v) {
  switch (type) {
    case 'bool': return v !== 0n;
    case 'uint32': return Number(BigInt.asUintN(32, v));
    case 'int64': return Number(BigInt.asIntN(64, v));
    case 'double': return new DataView(new BigUint64Array([v]).buffer).getFloat64(0, true);
    default: return Number(v); // uint64: versions and nonces stay far below 2^53
  }
}

function decodeValue(type, raw, depth) {
  if (type === 'string') {
    try {
      return utf8Decoder.decode(raw);
    } catch {
      throw new RecordDecodeError('a string field is not UTF-8');
    }
  }
  if (type === 'bytes') return raw;
  if (type === 'struct') return decodeStruct(raw, depth + 1);
  if (typeof type === 'object') return decodeMessage(raw, type, depth + 1);
  return scalar(type, raw);
}

// google.protobuf.Struct / Value / ListValue, to plain JSON.
function decodeStruct(bytes, depth) {
  if (depth > 64) throw new RecordDecodeError('struct nested too deeply');
  const out = {};
  for (const entry of protobufFields(bytes)) {
    if (entry.number !== 1 || entry.wireType !== 2) continue;
    let key = '';
    let value = null;
    for (const f of protobufFields(entry.value)) {
      if (f.number === 1 && f.wireType === 2) key = decodeValue('string', f.value, depth);
      if (f.number === 2 && f.wireType === 2) value = decodeStructValue(f.value, depth + 1);
    }
    out[key] = value;
  }
  return out;
}

function decodeStructValue(bytes, depth) {
  if (depth > 64) throw new RecordDecodeError('struct nested too deeply');
  let value = null;
  for (const f of protobufFields(bytes)) {
    if (f.number === 1) value = null;
    else if (f.number === 2 && f.wireType === 1) value = scalar('double', f.value);
    else if (f.number === 3 && f.wireType === 2) value = decodeValue('string', f.value, depth);
    else if (f.number === 4 && f.wireType === 0) value = f.value !== 0n;
    else if (f.number === 5 && f.wireType === 2) value = decodeStruct(f.value, depth + 1);
    else if (f.number === 6 && f.wireType === 2) {
      value = protobufFields(f.value)
        .filter((item) => item.number === 1 && item.wireType === 2)
        .map((item) => decodeStructValue(item.value, depth + 1));
    }
  }
  return value;
}

const CREDENTIAL = { 1: ['subject', 'string'], 2: ['role', 'string'] };
// The action a roll is drawn for, on an action's first roll (§4, roll-forward).
const REQUESTED_ACTION = { 1: ['action', 'struct'], 2: ['credential', CREDENTIAL] };
const DIE = { 1: ['sides', 'uint32'], 2: ['value', 'int64'], 3: ['kept', 'bool'], 4: ['rerolled', 'bool'], 5: ['exploded', 'bool'] };
const EVENT_SCHEMAS = {
  1: ['BattleOpened', {
    1: ['ruleset', 'string'], 2: ['title', 'string'], 3: ['forum_ref', 'string'], 4: ['participants', 'struct', true],
    5: ['client_seed', 'string'], 6: ['commitment', 'string'], 7: ['tenant', 'string'],
    8: ['commitment_signature', 'bytes'], 9: ['roller_key', 'bytes'], 10: ['credential', CREDENTIAL],
  }],
  2: ['SeedCommitted', { 1: ['epoch', 'uint32'], 2: ['commitment', 'string'], 3: ['commitment_signature', 'bytes'], 4: ['roller_key', 'bytes'] }],
  3: ['DiceRolled', {
    1: ['epoch', 'uint32'], 2: ['nonce', 'uint64'], 3: ['expression', 'string'], 4: ['purpose', 'string'],
    5: ['actor', 'string'], 6: ['dice', DIE, true], 7: ['total', 'int64'], 8: ['error', 'string'],
    9: ['for_action', REQUESTED_ACTION],
  }],
  4: ['ActionResolved', {
    1: ['action', 'struct'], 2: ['rolls', 'uint64', true], 3: ['outcome', 'struct'], 4: ['summary_ru', 'string'],
    5: ['summary_en', 'string'], 6: ['credential', CREDENTIAL],
  }],
  5: ['DisputeRaised', { 1: ['by', 'string'], 2: ['refers_to', 'uint64'], 3: ['reason', 'string'], 4: ['credential', CREDENTIAL] }],
  6: ['JudgeRuling', {
    1: ['judge', 'string'], 2: ['refers_to', 'uint64'], 3: ['text', 'string'], 4: ['override', 'struct'], 5: ['credential', CREDENTIAL],
    6: ['answers_dispute', 'uint64'],
  }],
  7: ['SeedRevealed', { 1: ['epoch', 'uint32'], 2: ['server_seed', 'string'], 3: ['credential', CREDENTIAL] }],
  8: ['BattleClosed', { 1: ['by', 'string'], 2: ['reason', 'string'], 3: ['credential', CREDENTIAL] }],
};

// proto3 leaves default values out of the wire; give them back so that a
// decoded event has every field (a roll of epoch 0 has `epoch: 0`).
const DEFAULTS = { string: '', bytes: new Uint8Array(0), bool: false, uint32: 0, uint64: 0, int64: 0, double: 0, struct: null };

function withDefaults(decoded, schema) {
  for (const [name, type, repeated] of Object.values(schema)) {
    if (name in decoded) continue;
    if (repeated) decoded[name] = [];
    else if (typeof type === 'string') decoded[name] = DEFAULTS[type];
    else decoded[name] = null;
  }
  if (Array.isArray(decoded.dice)) decoded.dice = decoded.dice.map((d) => withDefaults(d, DIE));
  return decoded;
}

const JOURNAL_RECORD = {
  1: ['stream_id', 'string'], 2: ['version', 'uint64'], 3: ['event_id', 'string'], 4: ['event_type', 'string'],
  5: ['recorded_at_unix_micros', 'int64'], 6: ['idempotency_key', 'string'], 7: ['payload', 'bytes'],
};

/**
 * Decodes a journal record (JournalRecord) and its payload (BattleEvent).
 * Returns { stream_id, version, event_id, event_type, recorded_at_unix_micros,
 * idempotency_key, event } where `event` has `type` and the fields of
 * docs/protocol.md §4, named as in the export (bytes as lowercase hex, left out
 * when empty; `error` left out when empty), plus `credential` when recorded.
 */
export function decodeRecord(bytes) {
  const record = withDefaults(decodeMessage(bytes, JOURNAL_RECORD), JOURNAL_RECORD);
  const oneof = protobufFields(record.payload).filter((f) => f.number in EVENT_SCHEMAS);
  if (oneof.length === 0) throw new RecordDecodeError('the payload holds no battle event');
  // A oneof on the wire: the last one wins, as protobuf parsers do.
  const chosen = oneof[oneof.length - 1];
  if (chosen.wireType !== 2) throw new RecordDecodeError('the battle event is not a message');
  const [type, schema] = EVENT_SCHEMAS[chosen.number];
  const event = withDefaults(decodeMessage(chosen.value, schema), schema);
  for (const name of ['commitment_signature', 'roller_key']) {
    if (name in event) {
      if (event[name].length === 0) delete event[name];
      else event[name] = bytesToHex(event[name]);
    }
  }
  if (type === 'DiceRolled' && event.error === '') delete event.error;
  // Shown only when recorded (no dispute is at version 0: that is the
  // BattleOpened), as the export shows it.
  if (type === 'JudgeRuling' && event.answers_dispute === 0) delete event.answers_dispute;
  if (type === 'DiceRolled' && event.for_action === null) delete event.for_action;
  // As for the event's own: the caller's credential is kept, not shown.
  if (type === 'DiceRolled' && event.for_action) delete event.for_action.credential;
  if (event.credential === null) delete event.credential;
  const { payload, ...rest } = record;
  return { ...rest, event: { type, ...event } };
}
