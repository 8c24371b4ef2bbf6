// The battle page's inputs (pages/inputs.js), read alike by the page and
// by the worker its head starts: a malformed posted head is left out (an
// input error at the field, never a failed battle), and a keys element
// that is not the JSON it should be gives no key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headOfInput, keysOfJson, optionsOfPage } from '../pages/inputs.js';

const HEAD = 'ab'.repeat(32);

test('a posted head is taken when it is 64 hex digits, trimmed, and left out otherwise', () => {
  assert.equal(headOfInput(` ${HEAD}\n`), HEAD);
  assert.equal(headOfInput(HEAD.toUpperCase()), HEAD.toUpperCase());
  for (const typed of ['', '   ', null, undefined, 'abc', `${HEAD}0`, HEAD.slice(1), `${HEAD.slice(2)}zz`]) {
    assert.equal(headOfInput(typed), undefined, JSON.stringify(typed));
  }
});

test('the keys a JSON element lists: only strings, and none from anything else', () => {
  assert.deepEqual(keysOfJson('{"keys":["a","b"]}'), ['a', 'b']);
  assert.deepEqual(keysOfJson('{"keys":["a",1,null,{"k":"b"}]}'), ['a']);
  for (const text of ['', 'not json', '{"keys":"a"}', '{}', '[]', 'null']) {
    assert.deepEqual(keysOfJson(text), [], JSON.stringify(text));
  }
});

test("the page's options: what the worker is told is what the page would check with", () => {
  assert.deepEqual(optionsOfPage({ head: HEAD, rollerKeys: '{"keys":["k1"]}', logKeys: '{"keys":["l1"]}' }), {
    head: HEAD,
    rollerKeys: ['k1'],
    logKeys: ['l1'],
  });
  assert.deepEqual(optionsOfPage({ head: 'abc', rollerKeys: '', logKeys: '{"keys":[]}' }), { head: undefined, rollerKeys: [], logKeys: [] });
});
