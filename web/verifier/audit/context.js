// What every pass of verifyExport shares: the problems found so far (each
// also noted on its event, for the page's per-event marks), the events as
// the chain pass made them, and the progress count.

/**
 * A fresh audit of `stream`: `find(version, check, message, event)` records
 * a problem (and on `event` when given); `step()` counts one unit of work
 * of `total` for `onProgress` (every 200, to keep messages few).
 */
export function auditContext(stream, total, onProgress) {
  const progress = typeof onProgress === 'function' ? onProgress : null;
  let done = 0;
  const problems = [];
  return {
    stream,
    problems,
    events: [],
    find(version, check, message, event) {
      problems.push({ version, check, message });
      if (event) event.problems.push(`${check}: ${message}`);
    },
    step() {
      done += 1;
      if (progress && done % 200 === 0) progress(done, total);
    },
    finish() {
      if (progress) progress(total, total);
    },
  };
}

/** Whether two JSON values are the same (key order aside). */
export function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => k in b && sameJson(a[k], b[k]));
}
