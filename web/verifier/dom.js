// Writes a verifyExport report into a page by the DOM contract of issue 12,
// so that the battle page and /verify mark it the same way and tests (or
// other tools) can read the verdict from attributes:
//
//   <body data-audit="pending|verified|failed|unrevealed">
//   each roll element:  data-nonce="N"    → data-check="ok|bad|unrevealed"
//   each event element: data-version="V"  → data-check="ok|bad|unrevealed"
//   id="first-failure": the first failing version (empty when none)
//
// A roll or event on the page that the export does not hold is marked bad:
// the page shows something the verified log does not back.
//
// No dependencies and no DOM globals: it works on the `document` it is given.

/** Marks `doc` (a Document) with `report` (from verifyExport). */
export function applyReport(doc, report) {
  const rolls = new Map(report.rolls.map((r) => [String(r.nonce), r]));
  const events = new Map(report.events.map((e) => [String(e.version), e]));
  for (const el of doc.querySelectorAll('[data-nonce]')) {
    const roll = rolls.get(el.getAttribute('data-nonce'));
    el.setAttribute('data-check', roll ? roll.check : 'bad');
    if (roll && roll.problems.length > 0) el.setAttribute('title', roll.problems.join('\n'));
  }
  for (const el of doc.querySelectorAll('[data-version]')) {
    const event = events.get(el.getAttribute('data-version'));
    el.setAttribute('data-check', event ? event.check : 'bad');
  }
  const first = doc.getElementById('first-failure');
  if (first) first.textContent = report.firstFailure === null ? '' : String(report.firstFailure);
  // Set last: a test waiting on data-audit then sees every mark in place.
  doc.body.setAttribute('data-audit', report.status);
}

/** Marks `doc` as failed when the input could not be verified at all (not an export, no WebCrypto). */
export function applyError(doc, error) {
  const first = doc.getElementById('first-failure');
  if (first) first.textContent = '';
  doc.body.setAttribute('data-audit', 'failed');
  doc.body.setAttribute('data-audit-error', String(error && error.message ? error.message : error));
}
