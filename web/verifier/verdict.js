// The verdict a judge reads first (issue 39): one word for the whole check,
// in plain language, with the technical detail one click away. No DOM here
// (dom.js writes it): a report, or the error that stopped the check, or a
// field the judge typed wrong, becomes one of
//
//   verified           everything checks, signed by a roller key the site
//                      (or the judge) trusts;
//   verified-unpinned  everything agrees with itself, but no trusted key
//                      vouches for the signer: anyone could have made it
//                      (never shown as plain "verified");
//   unrevealed         consistent so far, the seed still secret;
//   failed             a check fails: the first failing version and check;
//   not-an-export      the file is not a battle export at all;
//   key-mismatch       consistent, but signed by another key than the one
//                      given (a typo in a typed key lands here);
//   cut-short          the export ends before the head the journal signed
//                      (or the forum posted);
//   input-error        a field the judge typed is not well formed (named).
//
// Which problems mean what: a problem marked `cutShort` (audit.js: a posted
// head the export does not hold, a closed battle ending with a secret seed,
// a trailer whose head is past the export's end) says the export stops too
// early; a `roller-key` problem says only whose key signed. A verdict is
// `failed` only when some other problem is left.
import { checkOfProblem, pageLanguage, t } from './checks.js';
import { messageText, problemText } from './messages.js';

export const VERDICTS = ['idle', 'pending', 'verified', 'verified-unpinned', 'unrevealed', 'failed', 'not-an-export', 'key-mismatch', 'cut-short', 'input-error'];

/** Whether a problem says the export stops before the battle does. */
export function isCutShort(problem) {
  return Boolean(problem.cutShort) || (problem.check === 'checkpoint' && (problem.what === 'head-not-last-event' || problem.what === 'missing'));
}

/** A typed hash or key: empty (not given), or 64 hex digits; else what is wrong. */
export function hexFieldProblem(value) {
  const text = String(value ?? '').trim();
  if (text === '' || /^[0-9a-fA-F]{64}$/.test(text)) return null;
  return { length: [...text].length, text };
}

/**
 * The verdict: { kind, version?, check?, problem?, field?, length? }.
 * `report` is the marked report (dom.js's withDrawing), `error` what
 * stopped the check, `inputError` { field, length } for a malformed field
 * (it wins unless the battle fails anyway: a judge must hear both, and a
 * failure is the bigger news).
 */
export function verdictOf({ report = null, error = null, inputError = null } = {}) {
  if (error) return error.name === 'ExportFormatError' ? { kind: 'not-an-export', message: String(error.message ?? error) } : { kind: 'failed', message: String(error.message ?? error) };
  if (!report) return inputError ? { kind: 'input-error', ...inputError } : { kind: 'pending' };
  const ordinary = report.problems.filter((p) => p.check !== 'roller-key' && !isCutShort(p));
  if (ordinary.length > 0) {
    const first = ordinary[0];
    return { kind: 'failed', version: first.version, check: checkOfProblem(first), problem: first };
  }
  if (inputError) return { kind: 'input-error', ...inputError };
  const cut = report.problems.find(isCutShort);
  if (cut) {
    const last = report.events.length > 0 ? report.events[report.events.length - 1].version : 0;
    return { kind: 'cut-short', version: last, problem: cut };
  }
  if (report.problems.some((p) => p.check === 'roller-key') || report.rollerKeyStatus === 'mismatch') {
    return { kind: 'key-mismatch', signer: report.rollerKey ?? '', given: (report.trustedKeys ?? []).join(', ') };
  }
  if (report.status === 'unrevealed') return { kind: 'unrevealed' };
  if (report.rollerKeyStatus !== 'pinned') return { kind: 'verified-unpinned', signer: report.rollerKey ?? '' };
  return { kind: 'verified' };
}

/**
 * What the banner says: { headline, explanation } in `lang`, plain words;
 * the technical lines for the <details> are `technical` (each a string).
 */
export function verdictTexts(verdict, lang) {
  const l = pageLanguage(lang);
  const values = { ...verdict };
  if (verdict.kind === 'failed' && verdict.check) values.check = t(l, `check.${verdict.check}`);
  if (verdict.kind === 'input-error') values.field = t(l, `field.${verdict.field}`);
  const kind = verdict.kind === 'failed' && verdict.version === undefined ? 'failed-unchecked' : verdict.kind;
  const headline = t(l, `verdict.${kind}`, values);
  const quiet = kind === 'pending' || kind === 'idle';
  const explanation = quiet ? '' : kind === 'failed' ? t(l, `why.${verdict.check}`, values) : t(l, `verdict.${kind}.why`, values);
  const technical = [];
  if (verdict.problem) {
    const check = checkOfProblem(verdict.problem);
    const reason = problemText(verdict.problem, l, {
      whatText: verdict.problem.what ? t(l, `what.${verdict.problem.what}`) : null,
      fallback: t(l, `why.${check}`),
    }).replace(/`/g, '');
    technical.push(`${t(l, `check.${check}`)} · v${verdict.problem.version}: ${reason}`);
  }
  if (verdict.message) technical.push((messageText(verdict.message, l) ?? verdict.message).replace(/`/g, ''));
  return { headline, explanation, technical };
}
