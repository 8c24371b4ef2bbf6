// Builds a small battle export at test time, record by record, in the
// journal's formats (proto/battlelog/v1/journal.proto and battle.proto),
// with rolls drawn from known seeds — so that tests can tell exactly which
// version a forgery should be caught at.
import {
  bytesToBase64, bytesToHex, chainHash, commitmentMessage, commitmentOf, decodeRecord, deriveRoll, genesisHash, hexToBytes, hmacSha256,
} from '../verify.js';
import { bytesField, concat, messageField, struct, varint, varintField } from './protobuf.mjs';

export const STREAM = 'b-test-battle';
export const CLIENT_SEED = 'forum:test/thread/1';
// Two epochs' server seeds: fixed bytes, as a roller's would be.
export const SEEDS = [
  '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f',
  'f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff',
];

// The roller's master key for these tests; its signing key is derived as
// docs/PROTOCOL-signatures.md §1 says.
export const MASTER_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

/**
 * A roller's Ed25519 key from its master key: signing_seed =
 * HMAC-SHA256(master_key, "battlelog/v1/commitment-key"). WebCrypto takes a
 * raw Ed25519 secret only wrapped in PKCS #8, whose prefix for Ed25519 is
 * fixed (RFC 8410). Returns { sign(message), publicKey } (Node's WebCrypto).
 */
export async function rollerSigner(masterKeyHex = MASTER_KEY) {
  const seed = await hmacSha256(hexToBytes(masterKeyHex), new TextEncoder().encode('battlelog/v1/commitment-key'));
  const pkcs8 = concat([hexToBytes('302e020100300506032b657004220420'), seed]);
  const key = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, true, ['sign']);
  const jwk = await crypto.subtle.exportKey('jwk', key);
  return {
    publicKey: new Uint8Array(Buffer.from(jwk.x, 'base64url')),
    sign: async (message) => new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key, message)),
  };
}

const EVENT_NUMBERS = {
  BattleOpened: 1, SeedCommitted: 2, DiceRolled: 3, ActionResolved: 4,
  DisputeRaised: 5, JudgeRuling: 6, SeedRevealed: 7, BattleClosed: 8,
};

function encodeEvent(type, e) {
  switch (type) {
    case 'BattleOpened':
      return concat([
        bytesField(1, e.ruleset), bytesField(2, e.title), bytesField(3, e.forum_ref),
        ...e.participants.map((p) => messageField(4, struct(p))),
        bytesField(5, e.client_seed), bytesField(6, e.commitment), bytesField(7, e.tenant),
        bytesField(8, e.commitment_signature), bytesField(9, e.roller_key),
      ]);
    case 'SeedCommitted':
      return concat([
        varintField(1, e.epoch), bytesField(2, e.commitment), bytesField(3, e.commitment_signature), bytesField(4, e.roller_key),
      ]);
    case 'DiceRolled':
      return concat([
        varintField(1, e.epoch), varintField(2, e.nonce), bytesField(3, e.expression), bytesField(4, e.purpose),
        bytesField(5, e.actor),
        ...e.dice.map((d) => messageField(6, concat([
          varintField(1, d.sides), varintField(2, d.value), varintField(3, d.kept), varintField(4, d.rerolled), varintField(5, d.exploded),
        ]))),
        varintField(7, e.total), bytesField(8, e.error || ''),
        // for_action (RequestedAction): the action, on an action's first roll.
        ...(e.for_action ? [messageField(9, messageField(1, struct(e.for_action.action)))] : []),
      ]);
    case 'ActionResolved':
      return concat([
        messageField(1, struct(e.action)), ...(e.rolls.length ? [bytesField(2, concat(e.rolls.map((n) => varint(n))))] : []) /* packed, as prost writes it: a nonce 0 too */, messageField(3, struct(e.outcome)),
        bytesField(4, e.summary_ru), bytesField(5, e.summary_en),
      ]);
    case 'DisputeRaised':
      return concat([bytesField(1, e.by), varintField(2, e.refers_to), bytesField(3, e.reason)]);
    case 'JudgeRuling':
      // override (4) and credential (5) left out; answers_dispute is field 6.
      return concat([bytesField(1, e.judge), varintField(2, e.refers_to), bytesField(3, e.text), varintField(6, e.answers_dispute)]);
    case 'SeedRevealed':
      return concat([varintField(1, e.epoch), bytesField(2, e.server_seed)]);
    case 'BattleClosed':
      return concat([bytesField(1, e.by), bytesField(2, e.reason)]);
    default:
      throw new Error(`no encoder for ${type}`);
  }
}

/**
 * A battle: opened, three rolls with their actions (the third in epoch 1
 * when `midReveal`), and — when `closed` — closed with its seed revealed.
 * Returns the export text and the versions of interest.
 */
export async function makeExport({
  closed = true, midReveal = false, stream = STREAM, signers = {}, forAction = false, leftPending = false, answers = null,
} = {}) {
  // answers: after the second roll, meowth disputes it and the judge rules,
  // the ruling saying it answers the 'dispute' or (forged) the 'action'.
  // forAction: each roll carries its action (docs/protocol.md §4,
  // roll-forward); leftPending: a dispute comes between the second roll and
  // its resolution, leaving that roll behind.
  // signers: epoch -> a signer (rollerSigner()) or null for an unsigned
  // commitment; by default every epoch is signed with MASTER_KEY's key.
  const signer = await rollerSigner();
  const signed = async (epochNumber, commitment) => {
    const by = epochNumber in signers ? signers[epochNumber] : signer;
    if (!by) return { commitment, commitment_signature: '', roller_key: '' };
    const signature = await by.sign(commitmentMessage(stream, epochNumber, commitment));
    return { commitment, commitment_signature: signature, roller_key: by.publicKey };
  };
  const events = [];
  const rolls = [];
  let nonce = 0;
  let epoch = 0;
  const push = (type, fields) => events.push({ type, fields });
  const roll = async (expression, actor) => {
    const derived = await deriveRoll(SEEDS[epoch], CLIENT_SEED, nonce, expression);
    const action = { type: 'roll', actor, expression };
    push('DiceRolled', {
      epoch, nonce, expression, purpose: 'test', actor, dice: derived.dice, total: derived.total,
      ...(forAction || leftPending ? { for_action: { action } } : {}),
    });
    rolls.push({ version: events.length - 1, nonce, epoch });
    if (leftPending && nonce === 1) push('DisputeRaised', { by: 'meowth', refers_to: 2, reason: 'too soon' });
    push('ActionResolved', {
      action, rolls: [nonce],
      // A free roll's outcome is its dice and total (what the rules give).
      outcome: { dice: derived.dice.map(({ sides, value, kept, rerolled, exploded }) => ({ sides, value, kept, rerolled, exploded })), total: derived.total },
      summary_ru: `${actor} бросает ${expression}: ${derived.total}`, summary_en: `${actor} rolls ${expression}: ${derived.total}`,
    });
    nonce++;
  };

  push('BattleOpened', {
    ruleset: 'pokemon-d6@2', title: 'A test battle', forum_ref: 'forum:test/thread/1',
    participants: [{ id: 'pikachu' }, { id: 'meowth' }], client_seed: CLIENT_SEED,
    tenant: 'test', ...(await signed(0, await commitmentOf(SEEDS[0]))),
  });
  await roll('2d6+1', 'pikachu');
  await roll('4d6kh3', 'meowth');
  if (answers) {
    const contested = events.length - 1;
    push('DisputeRaised', { by: 'meowth', refers_to: contested, reason: 'too lucky' });
    const dispute = events.length - 1;
    push('JudgeRuling', { judge: 'judge', refers_to: contested, text: 'stands', answers_dispute: answers === 'dispute' ? dispute : contested });
  }
  if (midReveal) {
    push('SeedRevealed', { epoch: 0, server_seed: SEEDS[0] });
    epoch = 1;
    push('SeedCommitted', { epoch: 1, ...(await signed(1, await commitmentOf(SEEDS[1]))) });
  }
  await roll('1d20!', 'pikachu');
  if (closed) {
    push('BattleClosed', { by: 'judge', reason: 'over' });
    push('SeedRevealed', { epoch, server_seed: SEEDS[epoch] });
  }

  let previous = await genesisHash(stream);
  const lines = [];
  for (const [version, { type, fields }] of events.entries()) {
    const payload = messageField(EVENT_NUMBERS[type], encodeEvent(type, fields));
    const record = concat([
      bytesField(1, stream), varintField(2, version), bytesField(3, `0000-test-${version}`), bytesField(4, type),
      varintField(5, 1796104963000000 + version), bytesField(6, `request-${version}`), bytesField(7, payload),
    ]);
    previous = await chainHash(previous, record);
    // The readable event, as an exporter shows it: what the record holds,
    // minus the credential (not shown in exports).
    const { credential, ...event } = decodeRecord(record).event;
    lines.push({
      stream, version, hash: bytesToHex(previous), record: bytesToBase64(record),
      event_id: `0000-test-${version}`, event_type: type, recorded_at_unix_micros: 1796104963000000 + version, event,
    });
  }
  return {
    text: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
    rolls,
    versionOf: (type) => events.findIndex((e) => e.type === type),
    lastVersion: events.length - 1,
  };
}
