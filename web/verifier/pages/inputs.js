// The battle page's inputs for its check, read the same way by the page
// (pages/battle-start.js) and by the worker that the page's head starts
// (pages/battle-boot.js hands it the page's text as written): the head the
// forum posted and the keys the site trusts.
import { hexFieldProblem } from '../verdict.js';

/** The keys a JSON script element's text lists (`{ "keys": [...] }`). */
export function keysOfJson(text) {
  try {
    const keys = JSON.parse(text).keys;
    return Array.isArray(keys) ? keys.filter((k) => typeof k === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * A posted head as typed (the field, or ?head=): undefined when empty, or
 * when malformed (an input error named at the field, never a failed
 * battle: it is left out of the check).
 */
export function headOfInput(typed) {
  const head = String(typed ?? '').trim();
  return head && !hexFieldProblem(head) ? head : undefined;
}

/** verifyExport's options from the page's inputs as written. */
export function optionsOfPage({ head, rollerKeys, logKeys }) {
  return { head: headOfInput(head), rollerKeys: keysOfJson(rollerKeys), logKeys: keysOfJson(logKeys) };
}
