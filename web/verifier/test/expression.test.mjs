// The dice expression language v1 (docs/protocol.md §3): grammar, draw order,
// modifiers and limits. Dice come from scripted words so that every face is
// known: for a die of s faces, the word f − 1 (below s) gives face f.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { DiceExpressionError, evaluateExpression, parseExpression } from '../verify.js';

function roll(source, faces) {
  let i = 0;
  const next = () => {
    assert.ok(i < faces.length, `${source} drew more dice than the ${faces.length} scripted`);
    return faces[i++] - 1;
  };
  const result = evaluateExpression(parseExpression(source), next);
  assert.equal(i, faces.length, `${source} drew ${i} of the ${faces.length} scripted dice`);
  return result;
}

// Die records in the shape of the export: [value, flags] pairs, for brevity.
function dice(result) {
  return result.dice.map((d) => `${d.value}${d.rerolled ? 'r' : ''}${d.exploded ? 'e' : ''}${d.kept ? '' : '-'}`);
}

function refused(source, kind) {
  assert.throws(() => parseExpression(source), (e) => e instanceof DiceExpressionError && e.kind === kind, source);
}

test('arithmetic: precedence, left associativity, unary minus, parentheses', () => {
  assert.equal(roll('2+3*4', []).total, 14);
  assert.equal(roll('(2+3)*4', []).total, 20);
  assert.equal(roll('10-2-3', []).total, 5);
  assert.equal(roll('2*-3', []).total, -6);
  assert.equal(roll('--3', []).total, 3);
  assert.equal(roll(' 2d6 + 3 ', [1, 2]).total, 6);
  assert.equal(roll('2d6\t+3', [1, 2]).total, 6);
});

test("'/' truncates toward zero", () => {
  assert.equal(roll('7/2', []).total, 3);
  assert.equal(roll('-7/2', []).total, -3);
  assert.equal(roll('7/-2', []).total, -3);
  assert.equal(roll('1d6/4', [6]).total, 1);
});

test('every dice letter and side notation', () => {
  for (const letter of ['d', 'D', 'д', 'Д']) assert.equal(roll(`2${letter}10`, [3, 9]).total, 12);
  const percent = roll('d%', [100]);
  assert.equal(percent.dice[0].sides, 100);
  assert.equal(percent.total, 100);
  // A fudge die is a d3 minus 2, recorded with 3 sides.
  const fudge = roll('4dF', [1, 2, 3, 3]);
  assert.deepEqual(fudge.dice.map((d) => [d.sides, d.value]), [[3, -1], [3, 0], [3, 1], [3, 1]]);
  assert.equal(fudge.total, 1);
});

test('keep and drop: by value among dice not rerolled, ties to the earlier die', () => {
  assert.deepEqual(dice(roll('4d6kh3', [3, 5, 3, 1])), ['3', '5', '3', '1-']);
  // Three equal highest: kh1 keeps the first drawn, dh1 drops the first drawn.
  assert.deepEqual(dice(roll('3d6kh1', [4, 6, 6])), ['4-', '6', '6-']);
  assert.deepEqual(dice(roll('3d6dh1', [6, 2, 6])), ['6-', '2', '6']);
  assert.deepEqual(dice(roll('3d6kl1', [2, 5, 2])), ['2', '5-', '2-']);
  assert.deepEqual(dice(roll('3d6dl2', [2, 5, 2])), ['2-', '5', '2-']);
  assert.equal(roll('2d20kh', [4, 17]).total, 17, 'the count defaults to 1');
  assert.equal(roll('3d6kh0', [4, 5, 6]).total, 0);
  assert.equal(roll('2d6kh5', [4, 5]).total, 9, 'keeping more than drawn keeps all');
  // A rerolled die is out of the running; its replacement is in it.
  assert.deepEqual(dice(roll('2d6r1kh1', [1, 2, 5])), ['1r-', '2-', '5']);
});

test('reroll: once, right away, the replacement stands', () => {
  const result = roll('2d6r1', [1, 4, 1, 1]);
  assert.deepEqual(dice(result), ['1r-', '4', '1r-', '1']);
  assert.equal(result.total, 5);
  assert.deepEqual(dice(roll('3d8r<3', [2, 8, 3, 1, 1])), ['2r-', '8', '3', '1r-', '1']);
  assert.deepEqual(dice(roll('1d6r>=5', [6, 5])), ['6r-', '5']);
});

test('explode: on the highest face by default, chained, after the reroll, never rerolled', () => {
  const chained = roll('2d6!', [6, 6, 2, 3]);
  assert.deepEqual(dice(chained), ['6', '6e', '2e', '3']);
  assert.equal(chained.total, 17);
  assert.deepEqual(dice(roll('1d6r1!', [1, 6, 1])), ['1r-', '6', '1e'], 'an exploded 1 is not rerolled');
  assert.deepEqual(dice(roll('3d6!>=5', [5, 4, 2, 6, 1])), ['5', '4e', '2', '6', '1e']);
  assert.deepEqual(dice(roll('1dF!', [3, 3, 1])), ['1', '1e', '-1e']);
});

test('the explosion budget is 100 dice per term, shared by its dice', () => {
  const one = roll('1d2!', Array(101).fill(2));
  assert.equal(one.dice.length, 101);
  assert.equal(one.total, 202);
  // The first die spends the whole budget; the second cannot explode.
  const two = roll('2d2!', Array(102).fill(2));
  assert.equal(two.dice.filter((d) => d.exploded).length, 100);
  // Each term has its own budget.
  assert.equal(roll('1d2!+1d2!', Array(202).fill(2)).dice.length, 202);
});

test('a trailing comparison counts the kept dice that meet it', () => {
  assert.equal(roll('4d6>=5', [5, 6, 1, 4]).total, 2);
  assert.equal(roll('4d6kh2>=5', [5, 1, 6, 2]).total, 2);
  assert.equal(roll('3d6<2', [1, 1, 2]).total, 2);
  assert.equal(roll('3d6=6', [6, 1, 6]).total, 2);
  assert.equal(roll('4dF>1', [3, 3, 3, 3]).total, 0);
  refused('2d6>=7kh1', 'syntax'); // the comparison ends the term
});

test('draw order: left operand first, depth first', () => {
  const result = roll('(1d4+1d6)*1d8-1d10', [1, 2, 3, 4]);
  assert.deepEqual(result.dice.map((d) => d.sides), [4, 6, 8, 10]);
  assert.equal(result.total, (1 + 2) * 3 - 4);
});

test('a comment after # is kept apart, trimmed', () => {
  assert.equal(parseExpression('2d6 # attack roll').comment, 'attack roll');
  assert.equal(parseExpression('2d6').comment, null);
  refused('1d6 # bell\u0007', 'syntax');
});

test('arithmetic errors keep the dice drawn until then and stop there', () => {
  const result = roll('1d6/(1d1-1)+1d6', [4, 1]);
  assert.equal(result.error.kind, 'division_by_zero');
  assert.equal(result.total, 0);
  assert.deepEqual(result.dice.map((d) => d.value), [4, 1]);
  assert.equal(roll('9223372036854775807', []).total, 9223372036854775807);
  assert.equal(roll('9223372036854775807+1', []).error.kind, 'overflow');
  assert.equal(roll('-9223372036854775807-1', []).error, null, 'the minimum itself is fine');
  assert.equal(roll('(-9223372036854775807-1)/-1', []).error.kind, 'overflow');
  assert.equal(roll('-(-9223372036854775807-1)', []).error.kind, 'overflow');
  assert.equal(roll('3037000500*3037000500', []).error.kind, 'overflow');
  refused('9223372036854775808', 'out_of_range');
});

test('limits: count, sides, expression length, nesting, dice per roll', () => {
  parseExpression('1000d6');
  refused('1001d6', 'out_of_range');
  refused('0d6', 'out_of_range');
  refused('99999999999999999999d6', 'out_of_range');
  parseExpression('d1000000');
  refused('d1000001', 'out_of_range');
  refused('1d0', 'out_of_range');

  const long = '1' + '+1'.repeat(499); // 999 bytes
  parseExpression(long + ' ');
  refused(long + '  ', 'too_long');
  // Bytes, not characters: 'д' is two bytes in UTF-8.
  const base = '1' + '+1'.repeat(496); // 993 bytes
  parseExpression(base + '+111д1'); // 1000 bytes, 999 characters
  refused(base + '+111д11', 'too_long'); // 1001 bytes, 1000 characters

  parseExpression('('.repeat(32) + '1' + ')'.repeat(32));
  refused('('.repeat(33) + '1' + ')'.repeat(33), 'too_deep');
  parseExpression('-'.repeat(32) + '1');
  refused('-'.repeat(33) + '1', 'too_deep');
  refused('('.repeat(16) + '-'.repeat(17) + '1' + ')'.repeat(16), 'too_deep');

  // The worst case counts: every die rerolled, every explosion budget spent.
  const fiveThousandPairs = Array(5).fill('1000d6r1').join('+');
  parseExpression(fiveThousandPairs); // exactly 10 000
  refused(fiveThousandPairs + '+1d6', 'too_many_dice');
  refused(Array(10).fill('1000d6').join('+') + '+1d6!', 'too_many_dice');
});

test('modifiers: at most one of each, explosions that must stop', () => {
  refused('2d6kh1dl1', 'repeated_modifier');
  refused('1d6!!', 'repeated_modifier');
  refused('1d6r1r2', 'repeated_modifier');
  refused('1d1!', 'endless_explosion');
  refused('1d6!>=1', 'endless_explosion');
  refused('1d6!<=6', 'endless_explosion');
  refused('1d6!<7', 'endless_explosion');
  refused('1dF!<=1', 'endless_explosion');
  parseExpression('1dF!>=0'); // −1 does not explode
  parseExpression('1d6!=1');
});

test('syntax errors name the column', () => {
  const at = (source) => {
    try {
      parseExpression(source);
    } catch (e) {
      return [e.kind, e.position];
    }
    return null;
  };
  assert.deepEqual(at('1d6+'), ['syntax', 5]);
  assert.deepEqual(at('abc'), ['syntax', 1]);
  assert.deepEqual(at('1d6)'), ['syntax', 4]);
  assert.deepEqual(at('2 d6'), ['syntax', 3], 'a dice term is one token');
  assert.deepEqual(at('1д6 x'), ['syntax', 5], 'columns count characters, not bytes');
  assert.deepEqual(at('1d6\n'), ['syntax', 4]);
  assert.deepEqual(at(''), ['syntax', 1]);
});
