// Pass 2b of verifyExport, in journal order: the rules of docs/protocol.md
// §1–§2 about epochs and nonces, roll-forward (§4: a journaled roll is
// resolved before anything else happens), and every roll re-derived from
// its epoch's revealed seed.
import { DiceExpressionError, compareDice, deriveRollWithKey, parseExpression } from '../dice.js';
import { rollKeyOf } from '../hash.js';
import { sameJson } from './context.js';

/** The battle's rolls, each { version, nonce, epoch, expression, check, problems, recorded, derived }. */
export async function checkRolls(audit, decodedEvents, seeds) {
  const walk = new RollWalk(audit, seeds);
  for (const e of decodedEvents) {
    audit.step();
    walk.rollForward(e);
    await walk.event(e);
  }
  return walk.rolls;
}

class RollWalk {
  constructor(audit, { commitments, reveals, clientSeed }) {
    this.audit = audit;
    this.commitments = commitments;
    this.reveals = reveals;
    this.clientSeed = clientSeed;
    this.rolls = [];
    this.nextNonce = 0;
    this.epoch = 0;
    this.opened = false;
    this.revealedSoFar = new Set();
    this.seenNonces = new Map(); // nonce -> version
    this.rollKeys = new Map(); // epoch -> roll key (§2)
    this.parsed = new Map(); // expression -> its parse (or the error)
    // The action whose rolls are journaled and whose resolution is not yet:
    // { nonces, action }. Only its own further rolls and its resolution may
    // follow; anything else left a journaled roll behind, the operator's
    // finding.
    this.pending = null;
  }

  /** Roll-forward (§4): a journaled roll's action is resolved next. */
  rollForward(e) {
    const ev = e.decoded.event;
    const continuesPending = (ev.type === 'DiceRolled' && !ev.for_action) || ev.type === 'ActionResolved';
    if (this.pending && !continuesPending) {
      this.audit.find(e.version, 'roll', `roll ${this.pending.nonces[0]} was drawn for an action that was not resolved before this event: a journaled roll was left without its resolution`, e);
      this.pending = null;
    }
    if (ev.type === 'DiceRolled') {
      if (ev.for_action) this.pending = { nonces: [ev.nonce], action: ev.for_action.action ?? null };
      else if (this.pending) this.pending.nonces.push(ev.nonce);
    } else if (ev.type === 'ActionResolved' && this.pending) {
      const { nonces, action } = this.pending;
      if (!sameJson(action, ev.action)) {
        this.audit.find(e.version, 'roll', `the action resolved is not the action roll ${nonces[0]} was drawn for`, e);
      }
      if (nonces.join(',') !== ev.rolls.join(',')) {
        this.audit.find(e.version, 'roll', `the action was drawn rolls [${nonces.join(', ')}] but its resolution uses rolls [${ev.rolls.join(', ')}]`, e);
      }
      this.pending = null;
    }
  }

  async event(e) {
    const ev = e.decoded.event;
    switch (ev.type) {
      case 'BattleOpened':
        if (e.version !== 0 || this.opened) this.audit.find(e.version, 'sequence', 'BattleOpened is not the first event', e);
        this.opened = true;
        break;
      case 'SeedCommitted':
        this.seedCommitted(e, ev);
        break;
      case 'SeedRevealed':
        this.seedRevealed(e, ev);
        break;
      case 'DiceRolled':
        await this.diceRolled(e, ev);
        break;
      case 'ActionResolved':
        // The rolls an action used are earlier rolls of this battle.
        for (const nonce of ev.rolls) {
          if (!this.seenNonces.has(nonce)) this.audit.find(e.version, 'roll', `the action uses nonce ${nonce}, which no earlier roll has`, e);
        }
        break;
      default:
    }
  }

  /**
   * A new epoch follows the reveal of the current one (§1), never a live
   * one: otherwise the seed of an unfinished epoch could be dropped.
   */
  seedCommitted(e, ev) {
    const revealed = this.revealedSoFar.has(this.epoch);
    if (ev.epoch !== this.epoch + 1 || !revealed) {
      this.audit.find(e.version, 'commitment', `epoch ${ev.epoch} committed while epoch ${this.epoch} is current${revealed ? '' : ' and not revealed'}`, e);
    }
    this.epoch = ev.epoch;
  }

  seedRevealed(e, ev) {
    const reveal = this.reveals.get(ev.epoch);
    if (!this.commitments.has(ev.epoch)) {
      this.audit.find(e.version, 'commitment', `epoch ${ev.epoch} is revealed but was never committed`, e);
    } else if (reveal.version === e.version && !reveal.matches) {
      this.audit.find(e.version, 'commitment', `the seed revealed for epoch ${ev.epoch} does not hash to its commitment ${this.commitments.get(ev.epoch).commitment}`, e);
    } else if (reveal.version !== e.version && reveal.seed !== ev.server_seed) {
      this.audit.find(e.version, 'commitment', `epoch ${ev.epoch} is revealed again with another seed`, e);
    }
    this.revealedSoFar.add(ev.epoch);
  }

  async diceRolled(e, ev) {
    const roll = {
      version: e.version, nonce: ev.nonce, epoch: ev.epoch, expression: ev.expression,
      check: 'ok', problems: [], recorded: { dice: ev.dice, total: ev.total, error: ev.error ?? null }, derived: null,
    };
    this.rolls.push(roll);
    const bad = (check, message) => {
      roll.check = 'bad';
      roll.problems.push(message);
      this.audit.find(e.version, check, message, e);
    };
    this.checkPlace(e.version, ev, bad);
    const reveal = this.reveals.get(ev.epoch);
    if (!reveal || this.clientSeed === null) {
      if (roll.check === 'ok') roll.check = 'unrevealed';
      return;
    }
    if (!reveal.matches) {
      // The fault is the reveal's (reported at its version): this roll is
      // not re-derived from a seed nobody committed to, and stays
      // unverified — bad, but not the export's first failure.
      roll.check = 'bad';
      const message = `the seed revealed for epoch ${ev.epoch} at version ${reveal.version} does not match its commitment`;
      roll.problems.push(message);
      e.problems.push(`roll: ${message}`);
      return;
    }
    await this.rederive(roll, ev, reveal, bad);
  }

  /** The roll's nonce next in line, in the current epoch, before its reveal. */
  checkPlace(version, ev, bad) {
    if (ev.nonce !== this.nextNonce) {
      bad('nonce', this.seenNonces.has(ev.nonce)
        ? `nonce ${ev.nonce} was already used at version ${this.seenNonces.get(ev.nonce)}`
        : `nonce ${this.nextNonce} expected, found ${ev.nonce}`);
    }
    this.seenNonces.set(ev.nonce, version);
    this.nextNonce = ev.nonce + 1;
    if (ev.epoch !== this.epoch) bad('roll', `rolled in epoch ${ev.epoch} while epoch ${this.epoch} is current`);
    if (this.revealedSoFar.has(ev.epoch)) bad('roll', `rolled in epoch ${ev.epoch} after its seed was revealed: anyone could have predicted it`);
  }

  /** The roll re-derived from its epoch's seed (§2) and compared. */
  async rederive(roll, ev, reveal, bad) {
    let derived;
    try {
      // The roll key depends on the epoch's seed and the battle's client
      // seed only: made once per epoch, not once per roll.
      if (!this.rollKeys.has(ev.epoch)) this.rollKeys.set(ev.epoch, await rollKeyOf(reveal.seed, this.clientSeed));
      derived = deriveRollWithKey(this.rollKeys.get(ev.epoch), ev.nonce, this.expression(ev.expression));
    } catch (err) {
      bad('roll', err instanceof DiceExpressionError
        ? `the expression does not parse: ${err.message}`
        : `cannot re-derive: ${err.message}`);
      return;
    }
    roll.derived = { dice: derived.dice, total: derived.total, error: derived.error ? derived.error.message : null };
    for (const m of compareDice(derived.dice, ev.dice)) bad('roll', m);
    if (derived.total !== ev.total) bad('roll', `total ${ev.total} recorded, ${derived.total} re-derived`);
    // The error's wording is each implementation's own; whether there is
    // one is not.
    if (Boolean(derived.error) !== Boolean(ev.error)) {
      bad('roll', derived.error ? `the arithmetic fails (${derived.error.message}) but no error is recorded` : `an error is recorded (${ev.error}) but the arithmetic succeeds`);
    }
  }

  /** Each expression parsed once. */
  expression(source) {
    if (!this.parsed.has(source)) {
      try {
        this.parsed.set(source, parseExpression(source));
      } catch (error) {
        this.parsed.set(source, error);
      }
    }
    const result = this.parsed.get(source);
    if (result instanceof Error) throw result;
    return result;
  }
}
