// Writes a verifyExport report into a page by DOM contract v2 (issue 21),
// after checking that what the page DRAWS is what was verified, so that
// the battle page and /verify mark it the same way and tests (or other
// tools) can read the verdict from attributes:
//
//   <body data-audit="pending|verified|failed|unrevealed" data-roller-key="pinned|unpinned|mismatch">
//   each roll element  [data-nonce]   → data-check="ok|bad|unrevealed"
//   each event element [data-version] → data-check="ok|bad|unrevealed"
//   #first-failure: the first failing version (empty when none)
//   ul#checks: one li[data-check-name][data-check] per check, in the page's language
//   #roller-key, #roller-key-status; ul#client-problems: links to #v<N>
//   #log-key, #log-key-status, body[data-log-key="pinned|unpinned|mismatch|none"]
//     (docs/protocol.md §5: the trailer's log key; none: no trailer)
//   #verdict[data-verdict] (issue 39, verdict.js): the judge's one word,
//     #verdict-headline, #verdict-why, #verdict-technical inside a <details>;
//   #roller-keys-pinned: the roller keys the check really pinned to
//
// What is drawn, compared with the verified records (any difference: the
// roll and its event bad, the page failed at that version):
//   - a roll's dice: the [data-face] elements inside it, in order, one per
//     die (dropped, rerolled, exploded included); each data-face and each
//     die's visible face (its .pip count, else its .value text; a fudge die
//     shows − / nothing / +) equal the die re-derived (or recorded while
//     the seed is secret); data-total and the .total text equal the total
//     ('' when the arithmetic failed);
//   - an event's [data-summary="<field>"] text (whitespace collapsed) equals
//     that field of the record's event; at most one per event.
// A roll or event on the page that the export does not hold is bad, and so
// is a die drawn outside any roll; and the signed checkpoint a page offers
// to keep (pre#checkpoint-note) must be the verified trailer's, word for word.
//
// No dependencies beyond checks.js and no DOM globals: it works on the
// `document` it is given (tests give it a small stand-in).
import { checkOfProblem, pageLanguage, summarizeChecks, t } from './checks.js';
import { verdictOf, verdictTexts } from './verdict.js';
import { messageText, problemText, segments } from './messages.js';

const FUDGE_FACES = new Map([[-1, '\u2212'], [0, ''], [1, '+']]);

function normalize(text) {
  return String(text ?? '').replace(/\s+/g, ' ').trim();
}

/** The die's face as the reader sees it: pips counted, else its one .value
 * text. Pips and a number together, or more than one .value, are two
 * faces where the verifier compares one: null (a mismatch). */
function visibleFace(die) {
  const pips = die.querySelectorAll('.pip');
  const values = die.querySelectorAll('.value');
  if (pips.length > 0) return values.length === 0 ? String(pips.length) : null;
  return values.length === 1 ? values[0].textContent.trim() : null;
}

/** The face a die's accessible name speaks (`d6: 4, …`, `dF: −1`), as the
 * recorded value's text; null when the name says no face. */
function spokenFace(die) {
  const label = die.getAttribute('aria-label');
  if (label === null) return undefined;
  const found = /:\s*([\u2212+-]?\d+)/.exec(label);
  return found ? String(Number(found[1].replace('\u2212', '-').replace('+', ''))) : null;
}

/** The problems of one roll element against its verified roll. */
function rollDrawingProblems(el, roll) {
  const problems = [];
  const source = roll.derived ?? roll.recorded;
  const dice = source.dice ?? [];
  const drawn = el.querySelectorAll('[data-face]');
  if (drawn.length !== dice.length) problems.push(`${drawn.length} dice drawn, ${dice.length} in the roll`);
  for (let i = 0; i < Math.min(drawn.length, dice.length); i++) {
    const die = drawn[i];
    const value = dice[i].value;
    const face = die.getAttribute('data-face');
    if (face !== String(value)) problems.push(`die ${i + 1} is drawn with data-face ${face}, the roll has ${value}`);
    const fudge = die.getAttribute('data-fudge') === '1';
    const visible = visibleFace(die);
    const expected = fudge ? FUDGE_FACES.get(value) : String(value);
    if (fudge && dice[i].sides !== 3) problems.push(`die ${i + 1} is drawn as a fudge die, the roll's is a d${dice[i].sides}`);
    if (visible !== expected) problems.push(`die ${i + 1} shows ${JSON.stringify(visible)}, the roll has ${value}`);
    const spoken = spokenFace(die);
    if (spoken !== undefined && spoken !== String(value)) problems.push(`die ${i + 1} is named ${JSON.stringify(die.getAttribute('aria-label'))}, the roll has ${value}`);
  }
  const error = source.error;
  const total = error ? '' : String(source.total);
  const dataTotal = el.getAttribute('data-total');
  if (dataTotal === null) problems.push('the roll carries no data-total');
  if (dataTotal !== null && dataTotal !== total) problems.push(`data-total ${JSON.stringify(dataTotal)}, the roll's total is ${JSON.stringify(total)}`);
  const totals = el.querySelectorAll('.total');
  if (dataTotal !== null && totals.length !== 1) problems.push(`${totals.length} totals drawn`);
  for (const shown of totals) {
    if (shown.textContent.trim() !== total) problems.push(`the total shows ${JSON.stringify(shown.textContent.trim())}, the roll's is ${JSON.stringify(total)}`);
  }
  return { problems, dice: drawn.length };
}

// The fields whose text is an event's summary: one of them must be drawn as
// the event's [data-summary] whenever the record holds it, so that no
// summary can be drawn unmarked, out of the check's sight.
const SUMMARY_FIELDS = {
  ActionResolved: ['summary_en', 'summary_ru'], DisputeRaised: ['reason'], JudgeRuling: ['text'],
  BattleClosed: ['reason'], BattleOpened: ['title'],
};

/**
 * What a drawn summary says in the record's own notation: its text, with
 * each <s> or <del> (a die not counted) written back as `~~face~~`.
 */
function drawnSummary(node) {
  const parts = node.childNodes ? [...node.childNodes] : [node.text, ...node.children];
  return parts
    .map((part) => {
      if (typeof part === 'string') return part;
      if (part.nodeType === 3) return part.data;
      if (part.tagName === 'S' || part.tagName === 'DEL') return `~~${part.textContent}~~`;
      return drawnSummary(part);
    })
    .join('');
}

/** The problems of an event element's own [data-summary] against the record. */
function summaryProblems(el, event) {
  const own = [...el.querySelectorAll('[data-summary]')].filter((s) => s.closest('.event') === el);
  if (own.length > 1) return { problems: [`${own.length} summaries drawn`], summaries: own.length };
  const recorded = event.decoded ? event.decoded.event : null;
  const problems = [];
  const fields = recorded ? SUMMARY_FIELDS[recorded.type] ?? [] : [];
  if (own.length === 0 && fields.some((f) => typeof recorded[f] === 'string' && recorded[f] !== '')) {
    problems.push(`the event's summary (${fields.join(' or ')}) is not drawn as its [data-summary]`);
  }
  for (const s of own) {
    const field = s.getAttribute('data-summary');
    if (!recorded || typeof recorded[field] !== 'string') {
      problems.push(`the summary shows a field (${field}) the record does not hold`);
    } else if (normalize(drawnSummary(s)) !== normalize(recorded[field])) {
      problems.push(`the summary reads ${JSON.stringify(normalize(drawnSummary(s)))}, the record's ${field} is ${JSON.stringify(normalize(recorded[field]))}`);
    }
  }
  return { problems, summaries: own.length };
}

/**
 * Compares what `doc` draws with `report`: returns { problems: [{ version,
 * check: 'drawing', message, nonce? }], rolls, dice, summaries } (counts
 * of what was compared).
 */
export function checkDrawing(doc, report) {
  const rolls = new Map(report.rolls.map((r) => [String(r.nonce), r]));
  const events = new Map(report.events.map((e) => [String(e.version), e]));
  const out = { problems: [], rolls: 0, dice: 0, summaries: 0, badNonces: new Set(), badVersions: new Set() };
  const lastVersion = report.events.length > 0 ? report.events[report.events.length - 1].version : 0;
  for (const el of doc.querySelectorAll('[data-nonce]')) {
    const nonce = el.getAttribute('data-nonce');
    const roll = rolls.get(nonce);
    if (!roll) {
      // A roll the export does not hold: whatever it shows, no seed backs it.
      const owner = el.closest('[data-version]');
      const v = owner ? Number(owner.getAttribute('data-version')) : NaN;
      out.problems.push({ version: Number.isSafeInteger(v) ? v : lastVersion + 1, check: 'drawing', message: `the page shows a roll with nonce ${nonce}, which the export does not hold`, nonce });
      out.badNonces.add(nonce);
      continue;
    }
    const { problems, dice } = rollDrawingProblems(el, roll);
    out.rolls += 1;
    out.dice += dice;
    for (const message of problems) out.problems.push({ version: roll.version, check: 'drawing', message: `roll ${nonce}: ${message}`, nonce });
    if (problems.length > 0) out.badNonces.add(nonce);
  }
  for (const el of doc.querySelectorAll('[data-version]')) {
    const event = events.get(el.getAttribute('data-version'));
    if (!event) {
      const v = Number(el.getAttribute('data-version'));
      out.problems.push({ version: Number.isSafeInteger(v) ? v : lastVersion + 1, check: 'drawing', message: `the page shows version ${el.getAttribute('data-version')}, which the export does not hold` });
      continue;
    }
    const { problems, summaries } = summaryProblems(el, event);
    out.summaries += summaries;
    for (const message of problems) out.problems.push({ version: event.version, check: 'drawing', message });
  }
  // A die drawn outside any roll is a die no roll backs.
  for (const die of doc.querySelectorAll('[data-face]')) {
    if (die.closest('[data-nonce]')) continue;
    const owner = die.closest('[data-version]');
    const v = owner ? Number(owner.getAttribute('data-version')) : NaN;
    out.problems.push({ version: Number.isSafeInteger(v) ? v : lastVersion + 1, check: 'drawing', message: `a die (data-face ${die.getAttribute('data-face')}) is drawn outside any roll` });
  }
  // The checkpoint the page tells a judge to keep: the one verified, or none.
  const note = doc.getElementById('checkpoint-note');
  const shownNote = note ? note.textContent : '';
  if (shownNote !== '') {
    const verified = report.trailer && report.trailer.checkpoint ? report.trailer.checkpoint.note : null;
    if (shownNote !== verified) {
      out.problems.push({
        version: lastVersion + 1, check: 'drawing',
        message: verified === null ? 'the page shows a checkpoint to keep, but the export has no verified one' : 'the checkpoint the page shows to keep is not the one the trailer holds',
      });
    }
  }
  for (const p of out.problems) out.badVersions.add(String(p.version));
  return out;
}

/**
 * The report with the drawing's problems folded in: status, first failure,
 * problems sorted, events and rolls marked. `report` is not changed.
 */
export function withDrawing(report, drawing) {
  const problems = [...report.problems, ...drawing.problems].sort((a, b) => a.version - b.version);
  const failed = problems.length > 0;
  return {
    ...report,
    problems,
    status: failed ? 'failed' : report.status,
    firstFailure: failed ? problems[0].version : null,
    drawing: { rolls: drawing.rolls, dice: drawing.dice, summaries: drawing.summaries },
  };
}

function ownCheckText(doc, el) {
  for (const child of el.children ?? []) if (child.classList && child.classList.contains('check-text')) return child;
  const span = doc.createElement('span');
  span.setAttribute('class', 'sr-only check-text');
  el.prepend ? el.prepend(span) : el.append(span);
  return span;
}

/**
 * Marks `doc` (a Document) with `report` (from verifyExport), after
 * comparing what it draws with it. Returns the report as marked (with the
 * drawing's problems).
 */
export function applyReport(doc, report, { inputError = null } = {}) {
  const lang = pageLanguage(doc.documentElement && doc.documentElement.getAttribute('lang'));
  const drawing = checkDrawing(doc, report);
  const marked = withDrawing(report, drawing);
  const rolls = new Map(report.rolls.map((r) => [String(r.nonce), r]));
  const events = new Map(report.events.map((e) => [String(e.version), e]));
  for (const el of doc.querySelectorAll('[data-nonce]')) {
    const nonce = el.getAttribute('data-nonce');
    const roll = rolls.get(nonce);
    const check = !roll || drawing.badNonces.has(nonce) ? 'bad' : roll.check;
    el.setAttribute('data-check', check);
    const problems = [...(roll ? roll.problems : []), ...drawing.problems.filter((p) => p.nonce === nonce).map((p) => p.message)];
    // In the page's language, values as they are (the `…` marks dropped).
    const said = problems.map((m) => (messageText(m, lang) ?? t(lang, 'why.dice')).replace(/`/g, ''));
    if (problems.length > 0) el.setAttribute('title', said.join('\n'));
  }
  for (const el of doc.querySelectorAll('[data-version]')) {
    const version = el.getAttribute('data-version');
    const event = events.get(version);
    const check = !event || drawing.badVersions.has(version) ? 'bad' : event.check;
    el.setAttribute('data-check', check);
    // Not colour alone: a screen reader hears the verdict of each event.
    if (el.classList && el.classList.contains('event')) ownCheckText(doc, el).textContent = t(lang, `event.${check}`);
  }
  const first = doc.getElementById('first-failure');
  if (first) first.textContent = marked.firstFailure === null ? '' : String(marked.firstFailure);
  writeChecks(doc, marked, lang);
  writeProblems(doc, marked, lang);
  writeRollerKey(doc, marked, lang);
  writeLogKey(doc, marked, lang);
  writeVerdict(doc, verdictOf({ report: marked, inputError }), lang);
  // Set last: a test waiting on data-audit then sees every mark in place.
  doc.body.setAttribute('data-audit', marked.status);
  return marked;
}

function writeChecks(doc, report, lang) {
  const list = doc.getElementById('checks');
  if (!list) return;
  list.replaceChildren(
    ...summarizeChecks(report, lang).map((item) => {
      const li = doc.createElement('li');
      li.setAttribute('data-check-name', item.name);
      li.setAttribute('data-check', item.check);
      // Keys, hashes and commands (`…`) as code, the words as text.
      for (const part of segments(item.text)) {
        if (!part.code) {
          li.append(part.text);
          continue;
        }
        const value = doc.createElement('code');
        value.textContent = part.text;
        li.append(value);
      }
      return li;
    }),
  );
}

/** One line per problem: a link to its version, the check's name in the page's language, the detail. */
export function problemItem(doc, problem, lang) {
  const item = doc.createElement('li');
  // Not data-version: that names the page's events.
  item.setAttribute('data-problem-version', String(problem.version));
  item.setAttribute('data-problem', problem.check);
  const link = doc.createElement('a');
  link.setAttribute('href', `#v${problem.version}`);
  link.textContent = `v${problem.version}`;
  const what = doc.createElement('span');
  what.textContent = ` ${t(lang, `check.${checkOfProblem(problem)}`)}: `;
  // The reason in the page's language (messages.js), its values (hashes,
  // keys, JSON, field names) as code; on an English page the verifier's
  // own words.
  const check = checkOfProblem(problem);
  const text = problemText(problem, lang, {
    whatText: problem.what ? t(lang, `what.${problem.what}`) : null,
    fallback: t(lang, `why.${check}`),
  });
  const detail = doc.createElement('span');
  detail.className = 'problem-reason';
  for (const part of segments(text)) {
    const node = doc.createElement(part.code ? 'code' : 'span');
    node.textContent = part.text;
    detail.append(node);
  }
  item.append(link, what, detail);
  return item;
}

function writeProblems(doc, report, lang) {
  const list = doc.getElementById('client-problems');
  if (!list) return;
  list.replaceChildren(...report.problems.map((p) => problemItem(doc, p, lang)));
}

function writeRollerKey(doc, report, lang) {
  const key = doc.getElementById('roller-key');
  if (key) key.textContent = report.rollerKey ?? '';
  const status = doc.getElementById('roller-key-status');
  if (status) {
    status.setAttribute('data-roller-key', report.rollerKeyStatus);
    status.textContent = report.rollerKey ? t(lang, `key.${report.rollerKeyStatus}`) : t(lang, 'key.none');
  }
  doc.body.setAttribute('data-roller-key', report.rollerKeyStatus);
  // The keys the check pinned to (a typed one replaces the site's): the
  // row must never show one set while the status speaks of another.
  const pinned = doc.getElementById('roller-keys-pinned');
  if (pinned) {
    const keys = report.trustedKeys ?? [];
    pinned.replaceChildren(...(keys.length === 0 ? [t(lang, 'key.unpinned')] : keys.flatMap((k) => {
      const code = doc.createElement('code');
      code.setAttribute('class', 'hash');
      code.textContent = k;
      return [code, ' '];
    })));
  }
}

/** Where a version's event is: on this page, else the page holding it. */
function versionHref(doc, version) {
  if (doc.getElementById(`v${version}`)) return `#v${version}`;
  const search = doc.defaultView && doc.defaultView.location ? new URLSearchParams(doc.defaultView.location.search) : null;
  if (!search || !doc.body.hasAttribute('data-battle')) return `#v${version}`;
  search.set('v', String(version));
  return `?${search.toString()}#v${version}`;
}

/**
 * Writes the verdict banner (#verdict): its kind as data-verdict, the
 * headline (a failure links to its version), why in plain words, and the
 * technical detail inside its <details>.
 */
export function writeVerdict(doc, verdict, lang) {
  const banner = doc.getElementById('verdict');
  if (!banner) return;
  const texts = verdictTexts(verdict, lang);
  banner.setAttribute('data-verdict', verdict.kind);
  if (verdict.version !== undefined) banner.setAttribute('data-verdict-version', String(verdict.version));
  else banner.removeAttribute('data-verdict-version');
  if (verdict.check) banner.setAttribute('data-verdict-check', verdict.check);
  else banner.removeAttribute('data-verdict-check');
  const headline = doc.getElementById('verdict-headline');
  if (headline) {
    if (verdict.kind === 'failed' && verdict.version !== undefined) {
      const link = doc.createElement('a');
      link.setAttribute('href', versionHref(doc, verdict.version));
      link.textContent = texts.headline;
      headline.replaceChildren(link);
    } else {
      headline.textContent = texts.headline;
    }
  }
  const why = doc.getElementById('verdict-why');
  if (why) why.textContent = texts.explanation;
  const technical = doc.getElementById('verdict-technical');
  if (technical) {
    technical.replaceChildren(...texts.technical.map((line) => {
      const item = doc.createElement('li');
      // In the page's language (verdictTexts reads them through messages.js).
      item.textContent = line;
      return item;
    }));
  }
  const details = doc.getElementById('verdict-details');
  if (details) {
    if (texts.technical.length > 0) details.removeAttribute('hidden');
    else details.setAttribute('hidden', '');
  }
}

function writeLogKey(doc, report, lang) {
  const trailer = report.trailer;
  const state = trailer ? trailer.keyStatus : 'none';
  const key = doc.getElementById('log-key');
  if (key) key.textContent = trailer && trailer.logKey ? trailer.logKey : '';
  const status = doc.getElementById('log-key-status');
  if (status) {
    status.setAttribute('data-log-key', state);
    status.textContent = trailer ? t(lang, `logkey.${state}`) : t(lang, 'logkey.none');
  }
  doc.body.setAttribute('data-log-key', state);
}

/** Marks `doc` as failed when the input could not be verified at all (not an export, no WebCrypto). */
export function applyError(doc, error) {
  const lang = pageLanguage(doc.documentElement && doc.documentElement.getAttribute('lang'));
  writeVerdict(doc, verdictOf({ error }), lang);
  const first = doc.getElementById('first-failure');
  if (first) first.textContent = '';
  doc.body.setAttribute('data-audit', 'failed');
  doc.body.setAttribute('data-audit-error', String(error && error.message ? error.message : error));
}
