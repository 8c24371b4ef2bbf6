// verifyExport: an export checked end to end (docs/protocol.md §1–§5, the
// signatures addendum). The report's shape is described in verify.js.
import { base64ToBytes, bytesEqual, hexToBytes } from './bytes.js';
import { chainHash, genesisHash } from './chain.js';
import { DiceExpressionError, compareDice, deriveRollWithKey, parseExpression } from './dice.js';
import { commitmentOf, rollKeyOf } from './hash.js';
import { decodeRecord } from './protobuf.js';
import { commitmentMessage, verifyEd25519 } from './signatures.js';
import { checkTrailer } from './transparency.js';

/** The text is not an export at all (as opposed to an export that fails). */
export class ExportFormatError extends Error {
  constructor(line, message) {
    super(line ? `line ${line}: ${message}` : message);
    this.name = 'ExportFormatError';
    this.line = line;
  }
}

function parseExportLines(text) {
  if (typeof text !== 'string') throw new ExportFormatError(0, 'an export is text');
  const lines = [];
  let trailer = null;
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (trailer) throw new ExportFormatError(line, 'a line follows the trailer (the line without a version)');
    let value;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new ExportFormatError(line, `not JSON: ${e.message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ExportFormatError(line, 'not a JSON object');
    if (!('version' in value)) {
      // §5: the export's last line, without a version, is its trailer.
      trailer = { line, value };
      return;
    }
    for (const [name, kind] of [['stream', 'string'], ['hash', 'string'], ['record', 'string']]) {
      if (typeof value[name] !== kind) throw new ExportFormatError(line, `field ${name} is missing or not a ${kind}`);
    }
    if (!Number.isSafeInteger(value.version) || value.version < 0) {
      throw new ExportFormatError(line, 'field version is not a non-negative integer');
    }
    lines.push({ line, value });
  });
  if (lines.length === 0) throw new ExportFormatError(0, 'the export holds no event');
  return { lines, trailer };
}

/** The trusted roller keys from the options, lowercase hex, no duplicates. */
function trustedKeys(options) {
  const keys = [...(options.rollerKeys ?? []), ...(options.rollerKey ? [options.rollerKey] : [])];
  return [...new Set(keys.map((k) => String(k).trim().toLowerCase()).filter((k) => k !== ''))];
}

/** The trusted log keys from the options (verifier key texts), no duplicates. */
function trustedLogKeys(options) {
  const keys = [...(options.logKeys ?? []), ...(options.logKey ? [options.logKey] : [])];
  return [...new Set(keys.map((k) => String(k).trim()).filter((k) => k !== ''))];
}

let rules; // the rules module once loaded; null when it is not there

/**
 * rules/index.js, loaded on first use (null when it cannot be: verifyExport
 * then fails the outcomes check, never passes or skips it).
 */
export async function loadRules() {
  if (rules === undefined) {
    try {
      rules = await import('./rules/index.js');
      if (typeof rules.checkOutcomes !== 'function') rules = null;
    } catch {
      rules = null;
    }
  }
  return rules;
}

function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => k in b && sameJson(a[k], b[k]));
}

/**
 * Verifies an export: the chain, each record against its line, each epoch's
 * commitment against its revealed seed, and every roll re-derived. See the
 * top of this file for the report's shape.
 */
export async function verifyExport(text, options = {}) {
  const { lines, trailer } = parseExportLines(text);
  const stream = options.stream ?? lines[0].value.stream;
  const problems = [];
  const events = [];
  const byVersionOf = (list, version) => list.find((e) => e.version === version) ?? null;
  const find = (version, check, message, event) => {
    problems.push({ version, check, message });
    if (event) event.problems.push(`${check}: ${message}`);
  };

  // --- 1. The chain and the records -------------------------------------
  let previous = await genesisHash(stream);
  let expectedVersion = 0;
  // Progress: the chain pass is half the work, the rolls the other half.
  const progress = typeof options.onProgress === 'function' ? options.onProgress : null;
  const total = lines.length * 2;
  let done = 0;
  const step = () => {
    done += 1;
    if (progress && done % 200 === 0) progress(done, total);
  };
  // Every link is checked from the hash the line before claims (one broken
  // link is one finding, not one on every later line).
  const decodedLines = [];
  {
    let prev = previous;
    for (const { value } of lines) {
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
      decodedLines.push({ record, claimed, computed: record && claimed ? chainHash(prev, record) : null });
      if (claimed) prev = claimed;
    }
  }
  const computedHashes = decodedLines.map((d) => d.computed);
  let index = -1;
  for (const { line, value } of lines) {
    step();
    index += 1;
    const version = value.version;
    const event = {
      version, line, type: null, hash: 'ok', link: 'ok', record: 'ok', event: 'ok',
      check: 'ok', problems: [], decoded: null, unchecked: [],
    };
    events.push(event);
    if (value.stream !== stream) {
      event.link = 'bad';
      find(version, 'record', `the line names stream ${JSON.stringify(value.stream)}, not ${JSON.stringify(stream)}`, event);
    }
    if (version !== expectedVersion) {
      event.link = 'bad';
      // A gap is reported at the first missing version: that is where the
      // export stops being the journal's.
      const at = Math.min(version, expectedVersion);
      const message = version > expectedVersion
        ? `version ${expectedVersion} expected here, found version ${version}: missing or out of order`
        : `version ${version} comes again or out of order after version ${expectedVersion - 1}`;
      find(at, 'sequence', message, event);
    }
    expectedVersion = version + 1;

    const { record, claimed } = decodedLines[index];
    if (!record) {
      event.record = 'bad';
      find(version, 'record', 'the record is not base64', event);
    }
    if (!claimed) {
      event.hash = 'bad';
      find(version, 'chain', 'the hash is not 64 hex digits', event);
    }
    if (record && claimed) {
      const computed = computedHashes[index];
      if (!bytesEqual(computed, claimed)) {
        event.hash = 'bad';
        find(version, 'chain', 'the hash does not follow from the previous hash and this record', event);
      }
    }
    if (!record) continue;

    let decoded;
    try {
      decoded = decodeRecord(record);
    } catch (e) {
      event.record = 'bad';
      find(version, 'record', `the record bytes do not decode: ${e.message}`, event);
      continue;
    }
    event.decoded = decoded;
    event.type = decoded.event.type;
    if (decoded.stream_id !== stream) {
      event.record = 'bad';
      find(version, 'record', `the record belongs to stream ${JSON.stringify(decoded.stream_id)}`, event);
    }
    if (decoded.version !== version) {
      event.record = 'bad';
      find(version, 'record', `the record says version ${decoded.version}`, event);
    }
    // The line's `event` is for people to read; the record is what is
    // hashed. Whatever both show must agree, or a reader is being misled.
    const shown = value.event;
    if (shown !== undefined && shown !== null) {
      if (typeof shown !== 'object' || Array.isArray(shown)) {
        event.event = 'bad';
        find(version, 'event', 'the event shown is not an object', event);
      } else {
        for (const [key, fromRecord] of Object.entries(decoded.event)) {
          if (key in shown && !sameJson(shown[key], fromRecord)) {
            event.event = 'bad';
            find(version, 'event', `the event shown differs from the record in ${key}`, event);
          }
        }
        event.unchecked = Object.keys(shown).filter((k) => !(k in decoded.event));
      }
    }
  }

  // --- 2. The battle: commitments, nonces, epochs, rolls -----------------
  const decodedEvents = events.filter((e) => e.decoded);
  // First pass: each epoch's commitment and the first seed revealed for it,
  // checked against each other, so that the rolls (which come before their
  // reveal) know whether their seed can be trusted.
  const commitments = new Map(); // epoch -> CommitmentResult
  const reveals = new Map(); // epoch -> { seed, version, matches }
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
      let matches = false;
      try {
        matches = commitments.has(ev.epoch) && (await commitmentOf(ev.server_seed)) === commitments.get(ev.epoch).commitment;
      } catch {
        matches = false; // not 64 hex digits
      }
      reveals.set(ev.epoch, { seed: ev.server_seed, version: e.version, matches });
      const c = commitments.get(ev.epoch);
      if (c) {
        c.revealedAt = e.version;
        c.check = matches ? 'ok' : 'bad';
      }
    }
  }
  if (clientSeed === null && decodedEvents.length > 0) {
    find(decodedEvents[0].version, 'sequence', 'no BattleOpened: the client seed and the epoch-0 commitment are missing', decodedEvents[0]);
  }

  // Signatures (docs/PROTOCOL-signatures.md §4): every commitment signed,
  // all by one roller key, and by a trusted one when trusted keys are given
  // (`rollerKeys`, the site's published list, or `rollerKey`, one typed).
  // The fields come from the record (decodeRecord shows bytes as hex).
  let rollerKey = null;
  const trusted = trustedKeys(options);
  for (const c of commitments.values()) {
    const e = events.find((x) => x.version === c.version);
    const ev = e.decoded.event;
    if (!ev.commitment_signature || !ev.roller_key) {
      c.signature = 'unsigned';
      find(c.version, 'signature', `the commitment of epoch ${c.epoch} is not signed`, e);
      continue;
    }
    rollerKey ??= ev.roller_key;
    // verifyEd25519 is never "not checked": WebCrypto, else JavaScript.
    const valid = await verifyEd25519(hexToBytes(ev.roller_key), hexToBytes(ev.commitment_signature), commitmentMessage(stream, c.epoch, c.commitment));
    if (!valid) {
      c.signature = 'bad';
      find(c.version, 'signature', `the signature of the commitment of epoch ${c.epoch} does not verify with the roller key it names`, e);
      continue;
    }
    c.signature = 'ok';
    if (ev.roller_key !== rollerKey) {
      c.signature = 'bad';
      find(c.version, 'signature', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, not the battle's ${rollerKey}`, e);
    } else if (trusted.length > 0 && !trusted.includes(ev.roller_key)) {
      c.signature = 'bad';
      find(c.version, 'roller-key', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, which is not a trusted roller key (${trusted.join(', ')})`, e);
    }
  }
  // pinned: signed by a trusted key; unpinned: no trusted key given (the
  // signatures hold, but anyone could have made them); mismatch: signed by
  // another key (a failure, reported above).
  let rollerKeyStatus = 'unpinned';
  if (trusted.length > 0) {
    const signers = [...commitments.values()].map((c) => events.find((x) => x.version === c.version).decoded.event.roller_key).filter(Boolean);
    rollerKeyStatus = signers.length > 0 && signers.every((k) => trusted.includes(k)) ? 'pinned' : 'mismatch';
  }

  // Second pass, in journal order: the rules of §1–§2 about epochs and
  // nonces, and every roll re-derived.
  const rolls = [];
  let nextNonce = 0;
  let epoch = 0;
  let opened = false;
  const revealedSoFar = new Set();
  const seenNonces = new Map(); // nonce -> version
  const rollKeys = new Map(); // epoch -> roll key (§2)
  const parsed = new Map(); // expression -> its parse (or the error)
  const parsedExpression = (source) => {
    if (!parsed.has(source)) {
      try {
        parsed.set(source, parseExpression(source));
      } catch (error) {
        parsed.set(source, error);
      }
    }
    const result = parsed.get(source);
    if (result instanceof Error) throw result;
    return result;
  };
  // Roll-forward (§4): the action whose rolls are journaled and whose
  // resolution is not yet: { nonces, action }. Only its own further rolls
  // and its resolution may follow; anything else left a journaled roll
  // behind, the operator's finding.
  let pending = null;
  for (const e of decodedEvents) {
    step();
    const ev = e.decoded.event;
    const continuesPending = (ev.type === 'DiceRolled' && !ev.for_action) || ev.type === 'ActionResolved';
    if (pending && !continuesPending) {
      find(e.version, 'roll', `roll ${pending.nonces[0]} was drawn for an action that was not resolved before this event: a journaled roll was left without its resolution`, e);
      pending = null;
    }
    if (ev.type === 'DiceRolled') {
      if (ev.for_action) pending = { nonces: [ev.nonce], action: ev.for_action.action ?? null };
      else if (pending) pending.nonces.push(ev.nonce);
    } else if (ev.type === 'ActionResolved' && pending) {
      if (!sameJson(pending.action, ev.action)) {
        find(e.version, 'roll', `the action resolved is not the action roll ${pending.nonces[0]} was drawn for`, e);
      }
      if (pending.nonces.join(',') !== ev.rolls.join(',')) {
        find(e.version, 'roll', `the action was drawn rolls [${pending.nonces.join(', ')}] but its resolution uses rolls [${ev.rolls.join(', ')}]`, e);
      }
      pending = null;
    }
    if (ev.type === 'BattleOpened') {
      if (e.version !== 0 || opened) find(e.version, 'sequence', 'BattleOpened is not the first event', e);
      opened = true;
    } else if (ev.type === 'SeedCommitted') {
      // A new epoch follows the reveal of the current one (§1), never a
      // live one: otherwise the seed of an unfinished epoch could be dropped.
      if (ev.epoch !== epoch + 1 || !revealedSoFar.has(epoch)) {
        find(e.version, 'commitment', `epoch ${ev.epoch} committed while epoch ${epoch} is current${revealedSoFar.has(epoch) ? '' : ' and not revealed'}`, e);
      }
      epoch = ev.epoch;
    } else if (ev.type === 'SeedRevealed') {
      const reveal = reveals.get(ev.epoch);
      if (!commitments.has(ev.epoch)) {
        find(e.version, 'commitment', `epoch ${ev.epoch} is revealed but was never committed`, e);
      } else if (reveal.version === e.version && !reveal.matches) {
        find(e.version, 'commitment', `the seed revealed for epoch ${ev.epoch} does not hash to its commitment ${commitments.get(ev.epoch).commitment}`, e);
      } else if (reveal.version !== e.version && reveal.seed !== ev.server_seed) {
        find(e.version, 'commitment', `epoch ${ev.epoch} is revealed again with another seed`, e);
      }
      revealedSoFar.add(ev.epoch);
    } else if (ev.type === 'DiceRolled') {
      const roll = {
        version: e.version, nonce: ev.nonce, epoch: ev.epoch, expression: ev.expression,
        check: 'ok', problems: [], recorded: { dice: ev.dice, total: ev.total, error: ev.error ?? null }, derived: null,
      };
      rolls.push(roll);
      const bad = (check, message) => {
        roll.check = 'bad';
        roll.problems.push(message);
        find(e.version, check, message, e);
      };
      if (ev.nonce !== nextNonce) {
        bad('nonce', seenNonces.has(ev.nonce)
          ? `nonce ${ev.nonce} was already used at version ${seenNonces.get(ev.nonce)}`
          : `nonce ${nextNonce} expected, found ${ev.nonce}`);
      }
      seenNonces.set(ev.nonce, e.version);
      nextNonce = ev.nonce + 1;
      if (ev.epoch !== epoch) bad('roll', `rolled in epoch ${ev.epoch} while epoch ${epoch} is current`);
      if (revealedSoFar.has(ev.epoch)) bad('roll', `rolled in epoch ${ev.epoch} after its seed was revealed: anyone could have predicted it`);
      const reveal = reveals.get(ev.epoch);
      if (!reveal || clientSeed === null) {
        if (roll.check === 'ok') roll.check = 'unrevealed';
        continue;
      }
      if (!reveal.matches) {
        // The fault is the reveal's (reported at its version): this roll is
        // not re-derived from a seed nobody committed to, and stays
        // unverified — bad, but not the export's first failure.
        roll.check = 'bad';
        const message = `the seed revealed for epoch ${ev.epoch} at version ${reveal.version} does not match its commitment`;
        roll.problems.push(message);
        e.problems.push(`roll: ${message}`);
        continue;
      }
      let derived;
      try {
        // The roll key depends on the epoch's seed and the battle's client
        // seed only: made once per epoch, not once per roll.
        if (!rollKeys.has(ev.epoch)) rollKeys.set(ev.epoch, await rollKeyOf(reveal.seed, clientSeed));
        derived = deriveRollWithKey(rollKeys.get(ev.epoch), ev.nonce, parsedExpression(ev.expression));
      } catch (err) {
        bad('roll', err instanceof DiceExpressionError
          ? `the expression does not parse: ${err.message}`
          : `cannot re-derive: ${err.message}`);
        continue;
      }
      roll.derived = { dice: derived.dice, total: derived.total, error: derived.error ? derived.error.message : null };
      for (const m of compareDice(derived.dice, ev.dice)) bad('roll', m);
      if (derived.total !== ev.total) bad('roll', `total ${ev.total} recorded, ${derived.total} re-derived`);
      // The error's wording is each implementation's own; whether there is
      // one is not.
      if (Boolean(derived.error) !== Boolean(ev.error)) {
        bad('roll', derived.error ? `the arithmetic fails (${derived.error.message}) but no error is recorded` : `an error is recorded (${ev.error}) but the arithmetic succeeds`);
      }
    } else if (ev.type === 'ActionResolved') {
      // The rolls an action used are earlier rolls of this battle.
      for (const nonce of ev.rolls) {
        if (!seenNonces.has(nonce)) find(e.version, 'roll', `the action uses nonce ${nonce}, which no earlier roll has`, e);
      }
    }
  }

  // --- 2b. Outcomes re-resolved under docs/rules.md (rules/index.js) -------
  // The rules engine is its own module tree; each version it checks comes
  // back ok or not, and the first that is not fails the export there. The
  // lines it gets hold the event as the record says (not as the line shows).
  let outcomes = null;
  // options.rules: a rules module for tests and tools (null: none, the
  // caller's explicit choice). A rules engine that should be there and
  // cannot be loaded is a failure, not a skip: "verified" would then not
  // cover the outcomes the page shows.
  const rulesGiven = 'rules' in options;
  const rules = rulesGiven ? options.rules : await loadRules();
  if (!rules && !rulesGiven) {
    find(0, 'outcomes', 'the rules engine (rules/index.js) could not be loaded, so no outcome was re-resolved', byVersionOf(events, 0));
  }
  if (rules) {
    const byVersion = new Map(events.map((e) => [e.version, e]));
    const checked = rules.checkOutcomes(
      lines.map(({ value }) => {
        const e = byVersion.get(value.version);
        return e && e.decoded ? { ...value, event: e.decoded.event } : value;
      }),
    );
    outcomes = { checked: checked.length, bad: 0 };
    for (const result of checked) {
      if (result.ok) continue;
      outcomes.bad += 1;
      const e = byVersion.get(result.version) ?? null;
      const detail = result.problem || `recorded ${JSON.stringify(result.recorded)}, the rules give ${JSON.stringify(result.expected)}`;
      find(result.version, 'outcomes', `the outcome is not the one the rules give: ${detail}`, e);
    }
  }

  // --- 3. The end of the export: a head given by the caller, a trailer ----
  const last = lines[lines.length - 1].value;
  // Closing reveals the seed (§1), in the same append as the close: a closed
  // battle with a secret epoch is an export cut short (or a journal that
  // skipped the reveal) — reported where the export stops.
  const closedAt = decodedEvents.find((e) => e.decoded.event.type === 'BattleClosed');
  if (closedAt) {
    for (const c of commitments.values()) {
      if (c.revealedAt === null) {
        // cutShort: what a judge hears is "the export stops too early", not
        // "a seed does not match" (verdict.js).
        problems.push({ version: last.version + 1, check: 'commitment', cutShort: true, message: `the battle is closed (version ${closedAt.version}) but the export ends with the seed of epoch ${c.epoch} unrevealed: it is cut short or the reveal is missing` });
      }
    }
  }
  const headHash = last.hash;
  let head = null;
  if (options.head) {
    const given = String(options.head).trim().toLowerCase();
    const match = lines.find((l) => l.value.hash.toLowerCase() === given);
    if (match && match === lines[lines.length - 1]) {
      head = { given, check: 'ok', message: `the export ends at the head given (version ${last.version})` };
    } else if (match) {
      // The forum posted an earlier head; the export continues it.
      head = { given, check: 'ok', message: `the head given is version ${match.value.version}; the export goes on to version ${last.version}` };
    } else {
      head = { given, check: 'bad', message: 'no event of the export has the head hash given: the export is cut short or not the battle the head is of' };
      problems.push({ version: last.version + 1, check: 'head', cutShort: true, message: head.message });
    }
  }
  // §5: the trailer's checkpoint, log key, head, head signature and
  // inclusion proof (transparency.js). Its failures are reported where the
  // export ends: that is what the trailer speaks for.
  let trailerResult = null;
  if (trailer) {
    trailerResult = await checkTrailer(trailer.value, { stream, version: last.version, hash: headHash }, trustedLogKeys(options));
    for (const failure of trailerResult.failures) {
      problems.push({ version: last.version + 1, check: 'checkpoint', what: failure.what, message: failure.message });
    }
  } else if (options.requireTrailer ?? trustedLogKeys(options).length > 0) {
    // A log key pinned and no trailer: the export may be cut short with its
    // trailer dropped, which nothing else here can see (the Rust audit's
    // `--log-key` fails it the same way).
    problems.push({
      version: last ? last.version + 1 : 0,
      check: 'checkpoint',
      what: 'missing',
      message: 'no trailer, and a log key is pinned: the export does not show where the battle ends (docs/protocol.md §5)',
    });
  }

  if (progress) progress(total, total);

  // --- 4. Verdict ---------------------------------------------------------
  problems.sort((a, b) => a.version - b.version);
  const rollsByVersion = new Map(rolls.map((r) => [r.version, r]));
  for (const e of events) {
    if (e.problems.length > 0) e.check = 'bad';
    else if (rollsByVersion.get(e.version)?.check === 'unrevealed') e.check = 'unrevealed';
  }
  const commitmentList = [...commitments.values()].sort((a, b) => a.epoch - b.epoch);
  let status = 'verified';
  if (problems.length > 0) status = 'failed';
  else if (rolls.some((r) => r.check === 'unrevealed') || commitmentList.some((c) => c.check === 'unrevealed')) status = 'unrevealed';
  return {
    status,
    firstFailure: problems.length > 0 ? problems[0].version : null,
    stream,
    headHash,
    events,
    rolls,
    commitments: commitmentList,
    problems,
    head,
    trailer: trailerResult,
    rollerKey,
    rollerKeyStatus,
    trustedKeys: trusted,
    outcomes,
  };
}

