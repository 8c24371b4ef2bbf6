// Dice expressions v1 (docs/protocol.md §3): the parser, the evaluation drawing
// from ChaCha20 words, and one roll re-derived from a revealed seed (§2).
import { bytesToHex, seedBytes, utf8 } from './bytes.js';
import { RollWords, dieFace } from './chacha20.js';
import { commitmentOf, rollKeyOf } from './hash.js';

export const LIMITS = Object.freeze({
  expressionBytes: 1000,
  count: 1000,
  sides: 1000000,
  dicePerRoll: 10000,
  explosionsPerTerm: 100,
  nesting: 32,
});

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/**
 * Why an expression was refused (`kind` names the rule; `position` is the
 * 1-based character column, so a forum user can count it on what they typed).
 */
export class DiceExpressionError extends Error {
  constructor(kind, message, position = null) {
    super(position === null ? message : `${message} at ${position}`);
    this.name = 'DiceExpressionError';
    this.kind = kind;
    this.position = position;
  }
}

const DICE_LETTERS = new Set(['d', 'D', 'д', 'Д']);
const isDigit = (c) => c !== undefined && c >= '0' && c <= '9';
// Characters a user cannot see (C0, DEL, C1): refused by name rather than
// reported as a confusing token, and kept out of comments that are pasted
// into forum posts and terminals.
const isControl = (c) => {
  const p = c.codePointAt(0);
  return p < 0x20 || (p >= 0x7f && p < 0xa0);
};
const describeChar = (c) =>
  c === undefined ? 'the end' : isControl(c) ? `control character U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}` : `'${c}'`;

function meets(cmp, threshold, value) {
  switch (cmp) {
    case '>=': return value >= threshold;
    case '<=': return value <= threshold;
    case '>': return value > threshold;
    case '<': return value < threshold;
    default: return value === threshold;
  }
}

class ExpressionParser {
  constructor(source) {
    // Code points, not UTF-16 units: 'д' is one column.
    this.chars = Array.from(source);
    this.pos = 0;
    this.depth = 0;
  }

  peek(offset = 0) {
    return this.chars[this.pos + offset];
  }

  column() {
    return this.pos + 1;
  }

  fail(message) {
    return new DiceExpressionError('syntax', message, this.column());
  }

  // Spaces and tabs separate tokens; a dice term is one token, so
  // `2 d6` is refused rather than read two ways.
  skipSpace() {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t') this.pos++;
      else if (c !== undefined && isControl(c)) throw this.fail(`unexpected ${describeChar(c)}`);
      else return;
    }
  }

  deeper(at) {
    this.depth++;
    if (this.depth > LIMITS.nesting) {
      throw new DiceExpressionError('too_deep', `nesting deeper than ${LIMITS.nesting} levels`, at);
    }
  }

  // roll := expr [ '#' comment ]
  roll() {
    const root = this.expr();
    this.skipSpace();
    let comment = null;
    const c = this.peek();
    if (c === '#') {
      const rest = this.chars.slice(this.pos + 1);
      const bad = rest.findIndex(isControl);
      if (bad >= 0) {
        this.pos += 1 + bad;
        throw this.fail(`the comment holds ${describeChar(rest[bad])}`);
      }
      comment = rest.join('').trim();
    } else if (c === ')') {
      throw this.fail("unmatched ')'");
    } else if (c !== undefined) {
      throw this.fail(`unexpected ${describeChar(c)}`);
    }
    return { root, comment };
  }

  // expr := term { ('+' | '-') term }
  expr() {
    let node = this.term();
    for (;;) {
      this.skipSpace();
      const op = this.peek();
      if (op !== '+' && op !== '-') return node;
      const at = this.column();
      this.pos++;
      node = { kind: 'binary', op, left: node, right: this.term(), at };
    }
  }

  // term := unary { ('*' | '/') unary }
  term() {
    let node = this.unary();
    for (;;) {
      this.skipSpace();
      const op = this.peek();
      if (op !== '*' && op !== '/') return node;
      const at = this.column();
      this.pos++;
      node = { kind: 'binary', op, left: node, right: this.unary(), at };
    }
  }

  // unary := '-' unary | atom — each '-' is a level of nesting, so that a
  // thousand minus signs cannot exhaust the evaluator's stack.
  unary() {
    this.skipSpace();
    if (this.peek() === '-') {
      const at = this.column();
      this.pos++;
      this.deeper(at);
      const operand = this.unary();
      this.depth--;
      return { kind: 'negate', operand, at };
    }
    return this.atom();
  }

  // atom := INT | dice | '(' expr ')'
  atom() {
    const c = this.peek();
    if (c === '(') {
      const open = this.column();
      this.pos++;
      this.deeper(open);
      const inner = this.expr();
      this.skipSpace();
      if (this.peek() !== ')') {
        throw this.fail(`expected ')' to close the '(' at ${open}, found ${describeChar(this.peek())}`);
      }
      this.pos++;
      this.depth--;
      return inner;
    }
    if (isDigit(c)) {
      const start = this.pos;
      const digits = this.digits();
      if (DICE_LETTERS.has(this.peek())) {
        return this.dice(start, this.bounded(digits, start, 'dice count', 1, LIMITS.count));
      }
      const value = BigInt(digits);
      if (value > I64_MAX) {
        throw new DiceExpressionError('out_of_range', `number ${digits} is outside the signed 64-bit range`, start + 1);
      }
      return { kind: 'number', value };
    }
    if (DICE_LETTERS.has(c)) return this.dice(this.pos, 1);
    throw this.fail(`expected a number, a dice term or '(', found ${describeChar(c)}`);
  }

  digits() {
    const start = this.pos;
    while (isDigit(this.peek())) this.pos++;
    return this.chars.slice(start, this.pos).join('');
  }

  bounded(digits, start, what, min, max) {
    // Compare as BigInt: a 30-digit count must be refused, not rounded.
    const n = BigInt(digits);
    if (n < BigInt(min) || n > BigInt(max)) {
      throw new DiceExpressionError('out_of_range', `${what} ${digits} is outside the allowed ${min}..=${max}`, start + 1);
    }
    return Number(n);
  }

  cmp() {
    const a = this.peek();
    const b = this.peek(1);
    if ((a === '>' || a === '<') && b === '=') {
      this.pos += 2;
      return a + '=';
    }
    if (a === '>' || a === '<' || a === '=') {
      this.pos++;
      return a;
    }
    return null;
  }

  conditionValue(cmp) {
    if (!isDigit(this.peek())) throw this.fail(`expected a number after '${cmp}'`);
    const start = this.pos;
    // No face passes a million, so a larger threshold can only be a typo.
    return this.bounded(this.digits(), start, 'comparison value', 0, LIMITS.sides);
  }

  // dice := [COUNT] D SIDES { modifier } [ cmp INT ]; `pos` is at the letter.
  dice(start, count) {
    const letter = this.peek();
    this.pos++;
    let faces;
    let fudge = false;
    const s = this.peek();
    if (s === '%') {
      this.pos++;
      faces = 100;
    } else if (s === 'F') {
      this.pos++;
      faces = 3;
      fudge = true;
    } else if (isDigit(s)) {
      const at = this.pos;
      faces = this.bounded(this.digits(), at, 'die sides', 1, LIMITS.sides);
    } else {
      throw this.fail(`expected a number, '%' or 'F' after '${letter}'`);
    }
    const term = { kind: 'dice', count, faces, fudge, explode: null, reroll: null, keep: null, success: null };
    const lowest = fudge ? -1 : 1;
    const highest = fudge ? 1 : faces;
    for (;;) {
      const at = this.column();
      const c = this.peek();
      const next = this.peek(1);
      if (c === '!') {
        this.pos++;
        if (term.explode) throw new DiceExpressionError('repeated_modifier', "a dice term takes one explode ('!') modifier; another one is", at);
        const cmp = this.cmp();
        const explode = cmp ? { cmp, value: this.conditionValue(cmp) } : { cmp: '=', value: highest };
        // Conditions are a threshold or a single value, so the two extreme
        // faces (and, for '=', a one-faced die) decide whether every face meets it.
        const everyFace =
          meets(explode.cmp, explode.value, lowest) &&
          meets(explode.cmp, explode.value, highest) &&
          (explode.cmp !== '=' || lowest === highest);
        if (everyFace) {
          throw new DiceExpressionError('endless_explosion', `the explosion condition is met by every face of a d${fudge ? 'F' : faces}, so it would never stop`, at);
        }
        term.explode = explode;
      } else if (c === 'r') {
        this.pos++;
        if (term.reroll) throw new DiceExpressionError('repeated_modifier', "a dice term takes one reroll ('r') modifier; another one is", at);
        const cmp = this.cmp() || '=';
        term.reroll = { cmp, value: this.conditionValue(cmp) };
      } else if ((c === 'k' || c === 'd') && (next === 'h' || next === 'l')) {
        this.pos += 2;
        if (term.keep) throw new DiceExpressionError('repeated_modifier', 'a dice term takes one keep/drop modifier; another one is', at);
        let n = 1;
        if (isDigit(this.peek())) {
          const digitsAt = this.pos;
          n = this.bounded(this.digits(), digitsAt, 'keep/drop count', 0, LIMITS.count);
        }
        term.keep = { keep: c === 'k', highest: next === 'h', n };
      } else if (c === '>' || c === '<' || c === '=') {
        const cmp = this.cmp();
        term.success = { cmp, value: this.conditionValue(cmp) };
        break; // the trailing comparison ends the term
      } else {
        break;
      }
    }
    term.text = this.chars.slice(start, this.pos).join('');
    return term;
  }
}

function collectDiceTerms(node, out) {
  if (node.kind === 'dice') out.push(node);
  else if (node.kind === 'negate') collectDiceTerms(node.operand, out);
  else if (node.kind === 'binary') {
    collectDiceTerms(node.left, out);
    collectDiceTerms(node.right, out);
  }
  return out;
}

/**
 * Parses a dice expression and checks every limit of §3 that does not depend
 * on the dice. The per-roll dice limit is checked on the worst case (every
 * die rerolled, every explosion budget spent) so that it holds for any seed:
 * a roll must never be refused after its dice are drawn.
 */
export function parseExpression(source) {
  if (typeof source !== 'string') throw new TypeError('an expression is a string');
  const bytes = utf8.encode(source).length;
  if (bytes > LIMITS.expressionBytes) {
    throw new DiceExpressionError('too_long', `expression is ${bytes} bytes long; the limit is ${LIMITS.expressionBytes} bytes`);
  }
  const parser = new ExpressionParser(source);
  const { root, comment } = parser.roll();
  const terms = collectDiceTerms(root, []);
  const worstCase = terms.reduce(
    (n, t) => n + t.count * (t.reroll ? 2 : 1) + (t.explode ? LIMITS.explosionsPerTerm : 0),
    0,
  );
  if (worstCase > LIMITS.dicePerRoll) {
    throw new DiceExpressionError(
      'too_many_dice',
      `the expression may draw up to ${worstCase} dice (rerolls and explosions included); the limit is ${LIMITS.dicePerRoll} dice per roll`,
    );
  }
  return { source, root, comment, terms };
}

function rollTerm(term, nextWord, dice) {
  const draw = () => {
    const face = dieFace(nextWord, term.faces);
    return term.fudge ? face - 2 : face;
  };
  const die = (value, rerolled, exploded) => ({ sides: term.faces, value, kept: !rerolled, rerolled, exploded });
  const first = dice.length;
  let explosionsLeft = LIMITS.explosionsPerTerm;
  for (let i = 0; i < term.count; i++) {
    let value = draw();
    if (term.reroll && meets(term.reroll.cmp, term.reroll.value, value)) {
      // Rerolled once: the replacement is drawn right away and stands.
      dice.push(die(value, true, false));
      value = draw();
    }
    dice.push(die(value, false, false));
    while (explosionsLeft > 0 && term.explode && meets(term.explode.cmp, term.explode.value, value)) {
      explosionsLeft--;
      value = draw();
      dice.push(die(value, false, true));
    }
  }
  const drawn = dice.slice(first);
  if (term.keep) {
    const candidates = drawn.filter((d) => !d.rerolled);
    // Array.prototype.sort is stable (ES2019): among equal values the
    // earlier-drawn die stays first, so it is kept first by kh/kl and
    // dropped first by dh/dl, as §3 step 3 wants.
    candidates.sort((a, b) => (term.keep.highest ? b.value - a.value : a.value - b.value));
    const n = Math.min(term.keep.n, candidates.length);
    const dropped = term.keep.keep ? candidates.slice(n) : candidates.slice(0, n);
    for (const d of dropped) d.kept = false;
  }
  const kept = drawn.filter((d) => d.kept);
  if (term.success) return BigInt(kept.filter((d) => meets(term.success.cmp, term.success.value, d.value)).length);
  return kept.reduce((sum, d) => sum + BigInt(d.value), 0n);
}

function checked(value, at) {
  if (value < I64_MIN || value > I64_MAX) {
    throw new DiceExpressionError('overflow', 'arithmetic overflow: the result leaves the signed 64-bit range', at);
  }
  return value;
}

function evaluateNode(node, nextWord, dice) {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'dice':
      return rollTerm(node, nextWord, dice);
    case 'negate':
      return checked(-evaluateNode(node.operand, nextWord, dice), node.at);
    default: {
      // Depth first, left to right: the whole left operand draws first.
      const left = evaluateNode(node.left, nextWord, dice);
      const right = evaluateNode(node.right, nextWord, dice);
      switch (node.op) {
        case '+': return checked(left + right, node.at);
        case '-': return checked(left - right, node.at);
        case '*': return checked(left * right, node.at);
        default:
          if (right === 0n) throw new DiceExpressionError('division_by_zero', 'division by zero', node.at);
          // BigInt division truncates toward zero, as §3 asks.
          return checked(left / right, node.at);
      }
    }
  }
}

/**
 * Evaluates a parsed expression drawing from `nextWord` (a function returning
 * the next u32). An arithmetic error stops the evaluation; the dice drawn
 * until then are returned with it, since the roller journals them.
 */
export function evaluateExpression(expression, nextWord) {
  const dice = [];
  try {
    const total = evaluateNode(expression.root, nextWord, dice);
    return { dice, total: Number(total), totalExact: total, error: null };
  } catch (error) {
    if (!(error instanceof DiceExpressionError)) throw error;
    return { dice, total: 0, totalExact: 0n, error };
  }
}

/**
 * §2–§3: one roll's dice from its roll key (rollKeyOf: the epoch's seed and
 * the client seed) — synchronous: the verifier makes the key once per epoch.
 */
export function deriveRollWithKey(rollKey, nonce, expression) {
  const parsed = typeof expression === 'string' ? parseExpression(expression) : expression;
  const words = new RollWords(rollKey, nonce);
  return evaluateExpression(parsed, () => words.next());
}

/** §2–§3: re-derives one roll from the revealed seed. */
export async function deriveRoll(serverSeed, clientSeed, nonce, expression) {
  const parsed = typeof expression === 'string' ? parseExpression(expression) : expression;
  const seed = seedBytes(serverSeed);
  const rollKey = await rollKeyOf(seed, clientSeed);
  const preview = new RollWords(rollKey, nonce);
  const firstWords = [preview.next(), preview.next(), preview.next(), preview.next()];
  const words = new RollWords(rollKey, nonce);
  const result = evaluateExpression(parsed, () => words.next());
  return {
    commitment: await commitmentOf(seed),
    rollKey: bytesToHex(rollKey),
    firstWords,
    dice: result.dice,
    total: result.total,
    error: result.error,
  };
}

const DIE_FIELDS = ['sides', 'value', 'kept', 'rerolled', 'exploded'];

export function compareDice(expected, actual) {
  const mismatches = [];
  if (!Array.isArray(actual)) return ['dice: not a list'];
  if (expected.length !== actual.length) mismatches.push(`dice: ${actual.length} recorded, ${expected.length} re-derived`);
  for (let i = 0; i < Math.min(expected.length, actual.length); i++) {
    for (const f of DIE_FIELDS) {
      if (expected[i][f] !== actual[i][f]) {
        mismatches.push(`die ${i + 1}: ${f} ${JSON.stringify(actual[i][f])} recorded, ${JSON.stringify(expected[i][f])} re-derived`);
      }
    }
  }
  return mismatches;
}

/** Checks one known-answer vector (vectors/rolls.json) field by field. */
export async function verifyRoll(vector) {
  const derived = await deriveRoll(vector.server_seed, vector.client_seed, vector.nonce, vector.notation);
  const mismatches = [];
  if (derived.commitment !== vector.commitment) mismatches.push(`commitment ${derived.commitment}, vector ${vector.commitment}`);
  if (derived.rollKey !== vector.roll_key) mismatches.push(`roll key ${derived.rollKey}, vector ${vector.roll_key}`);
  const words = vector.first_words || [];
  words.forEach((w, i) => {
    if (derived.firstWords[i] !== w) mismatches.push(`word ${i}: ${derived.firstWords[i]}, vector ${w}`);
  });
  if (derived.error) mismatches.push(`evaluation failed: ${derived.error.message}`);
  if (derived.total !== vector.total) mismatches.push(`total ${derived.total}, vector ${vector.total}`);
  mismatches.push(...compareDice(derived.dice, vector.dice));
  return { ok: mismatches.length === 0, mismatches, derived };
}
