// A protobuf wire-format writer for the tests and the tamper tool: enough to
// build journal records (proto/battlelog/v1) and to rewrite one field of an
// existing record while every other field keeps its exact bytes.
import { protobufFields } from '../verify.js';

const utf8 = new TextEncoder();

export function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const out = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Uint8Array.from(out);
}

export function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const key = (number, wireType) => varint((number << 3) | wireType);

/** A varint field (uint32, uint64, int64, bool); proto3 leaves zeros out. */
export function varintField(number, value) {
  if (value === 0 || value === 0n || value === false) return new Uint8Array(0);
  return concat([key(number, 0), varint(value === true ? 1 : value)]);
}

/** A length-delimited field: a string, bytes or an encoded message. */
export function bytesField(number, value) {
  const bytes = typeof value === 'string' ? utf8.encode(value) : value;
  if (bytes.length === 0) return new Uint8Array(0);
  return concat([key(number, 2), varint(bytes.length), bytes]);
}

function doubleField(number, value) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, value, true);
  return concat([key(number, 1), b]);
}

/** google.protobuf.Struct from a plain JSON object. */
export function struct(object) {
  // A map entry per field: { 1: key, 2: Value }.
  return concat(Object.entries(object).map(([k, v]) => messageField(1, concat([bytesField(1, k), messageField(2, structValue(v))]))));
}

/** A message field, written even when empty (an empty Struct is not "unset"). */
export function messageField(number, bytes) {
  return concat([key(number, 2), ...withLength(bytes)]);
}

function withLength(bytes) {
  return [varint(bytes.length), bytes];
}

function structValue(v) {
  if (v === null) return concat([key(1, 0), varint(0)]);
  if (typeof v === 'number') return doubleField(2, v);
  if (typeof v === 'string') return concat([key(3, 2), ...withLength(utf8.encode(v))]);
  if (typeof v === 'boolean') return concat([key(4, 0), varint(v ? 1 : 0)]);
  if (Array.isArray(v)) return concat([key(6, 2), ...withLength(concat(v.map((item) => concat([key(1, 2), ...withLength(structValue(item))]))))]);
  return concat([key(5, 2), ...withLength(struct(v))]);
}

/**
 * Rewrites the message `bytes`: `edit(fields)` gets the decoded field list
 * (see protobufFields) and returns a new list whose entries are either
 * original fields (re-emitted byte for byte) or `{ encoded }` replacements.
 */
export function rewrite(bytes, edit) {
  const fields = protobufFields(bytes);
  return concat(edit(fields).map((f) => (f.encoded ? f.encoded : bytes.subarray(f.start, f.end))));
}

/** Replaces the n-th length-delimited field `number` with `transform(its bytes)`. */
export function rewriteNested(bytes, number, index, transform) {
  return rewrite(bytes, (fields) => {
    let seen = -1;
    return fields.map((f) => {
      if (f.number !== number || f.wireType !== 2 || ++seen !== index) return f;
      return { encoded: concat([key(number, 2), ...withLength(transform(f.value))]) };
    });
  });
}

/** Sets the varint field `number` (adding it when proto3 had left it out). */
export function setVarint(bytes, number, value) {
  return rewrite(bytes, (fields) => {
    const replacement = { encoded: varintField(number, value) };
    // In place of the first occurrence; later duplicates would override it
    // on decoding, so they go.
    const out = [];
    let placed = false;
    for (const f of fields) {
      if (f.number !== number) out.push(f);
      else if (!placed) {
        out.push(replacement);
        placed = true;
      }
    }
    if (!placed) out.push(replacement);
    return out;
  });
}
