// Counts in the verdict's lines read as English and Russian do: the noun's
// form follows the number (Intl.PluralRules' one/few/many).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { t } from '../checks.js';

test('English: 1 roll, 1 die, 1 commitment; 2 rolls, 0 rolls', () => {
  assert.equal(t('en', 'dice.ok', { rolls: 1, dice: 1 }), 'Dice re-derived: 1 roll, 1 die');
  assert.equal(t('en', 'dice.ok', { rolls: 2, dice: 0 }), 'Dice re-derived: 2 rolls, 0 dice');
  assert.match(t('en', 'signatures.ok', { signed: 1, key: 'k' }), /: 1 commitment signed/);
});

test('Russian: 1 бросок, 2 броска, 5 бросков, 11 бросков, 21 бросок, 22 броска; "из" takes the genitive', () => {
  for (const [n, form] of [[1, 'бросок'], [2, 'броска'], [5, 'бросков'], [11, 'бросков'], [21, 'бросок'], [22, 'броска'], [0, 'бросков']]) {
    assert.equal(t('ru', 'dice.ok', { rolls: n, dice: n }).split(': ')[1].split(',')[0], `${n} ${form}`);
  }
  assert.match(t('ru', 'dice.bad', { bad: 1, rolls: 1 }), /1 из 1 броска /);
  assert.match(t('ru', 'dice.bad', { bad: 1, rolls: 3 }), /1 из 3 бросков /);
  assert.match(t('ru', 'chain.ok', { events: 3, last: 2 }), /: 3 события,/);
});
