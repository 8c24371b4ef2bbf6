// What the verdict says it checked: a report (from verifyExport, plus the
// drawing's problems from dom.js) summed up as one line per check, with
// counts, in the page's language (en or ru), and each problem as a line
// naming its check in that language. No DOM here: dom.js writes these.

/** The checks, in the order the verdict lists them. */
export const CHECK_NAMES = ['dice', 'chain', 'commitments', 'signatures', 'outcomes', 'head', 'checkpoint', 'drawing'];

// Which check each problem of the report belongs to (problem.check).
const CHECK_OF_PROBLEM = {
  roll: 'dice', nonce: 'dice',
  chain: 'chain', sequence: 'chain', record: 'chain', event: 'chain',
  commitment: 'commitments',
  signature: 'signatures', 'roller-key': 'signatures',
  outcomes: 'outcomes',
  head: 'head',
  checkpoint: 'checkpoint',
  drawing: 'drawing',
};

export const STRINGS = {
  en: {
    'dice.ok': 'Dice re-derived: {rolls} rolls, {dice} dice',
    'dice.bad': 'Dice re-derived: {bad} of {rolls} rolls do not match the seeds',
    'dice.skipped': 'Dice not re-derived yet: the seed stays secret until it is revealed ({rolls} rolls so far)',
    'chain.ok': 'Hash chain: {events} events, versions 0 to {last}, each linked to the one before',
    'chain.bad': 'Hash chain: {bad} of {events} events break it or are malformed',
    'commitments.ok': 'Commitments: {revealed} of {epochs} seeds revealed, each matching its commitment',
    'commitments.bad': 'Commitments: {bad} of {epochs} seeds do not match what was committed',
    'signatures.ok': 'Signatures: {signed} commitments signed by roller key {key}',
    'signatures.bad': 'Signatures: {bad} problems with the roller’s signatures (key {key})',
    'outcomes.ok': 'Outcomes re-resolved under the rules: {actions} actions',
    'outcomes.bad': 'Outcomes re-resolved under the rules: {bad} of {actions} actions do not follow them',
    'outcomes.skipped': 'Outcomes not re-resolved: the rules engine could not be loaded here',
    'head.ok': 'Head: the posted head {head} is in this log ({message})',
    'head.bad': 'Head: no event of this log has the posted head {head}',
    'head.skipped': 'Head: not checked — type the head hash the forum posted',
    'checkpoint.ok': 'Signed checkpoint: the last event (version {last}) is in the journal’s log of {size} records, root {root}, signed by log key {logKey} ({keyStatus})',
    'checkpoint.bad': 'Signed checkpoint: failed — {what}',
    'checkpoint.skipped': 'No trailer: checked only as far as the chain (an export cut short at its end would not show)',
    'logkey.pinned': 'a trusted log key (pinned)',
    'logkey.unpinned': 'no trusted log key given: the key is not pinned',
    'logkey.mismatch': 'NOT a trusted log key',
    'logkey.none': 'no trailer, so no log key',
    'what.malformed': 'the trailer is malformed',
    'what.note-signature': 'the checkpoint’s signature does not verify',
    'what.log-key-not-trusted': 'the log key is not a trusted one',
    'what.missing': 'no trailer, and a log key is pinned: where the battle ends is not shown',
    'what.head-not-last-event': 'the signed head is not the export’s last event',
    'what.head-signature': 'the head signature does not verify',
    'what.inclusion-proof': 'the inclusion proof does not lead to the checkpoint’s root',
    'drawing.ok': 'What is drawn is what was verified: {rolls} rolls, {dice} dice, {summaries} summaries',
    'drawing.bad': 'What is drawn differs from the verified log in {bad} places',
    'key.pinned': 'a trusted roller key',
    'key.unpinned': 'no trusted roller key given: the key is not pinned',
    'key.mismatch': 'NOT a trusted roller key',
    'key.pending': 'checking…',
    'key.none': 'no signed commitment',
    'check.dice': 'dice', 'check.chain': 'hash chain', 'check.commitments': 'commitments', 'check.signatures': 'signatures',
    'check.outcomes': 'outcomes', 'check.head': 'head', 'check.checkpoint': 'checkpoint', 'check.drawing': 'drawing',
    'event.ok': 'verified', 'event.bad': 'failed', 'event.unrevealed': 'not revealed yet',
    progress: 'Checking: {done} of {total} events',
    'error.notExport': 'This is not a battle export: {message}',
  },
  ru: {
    'dice.ok': 'Кости пересчитаны: бросков — {rolls}, костей — {dice}',
    'dice.bad': 'Кости пересчитаны: {bad} из {rolls} бросков не сходятся с зёрнами',
    'dice.skipped': 'Кости ещё не пересчитаны: зерно секретно, пока его не раскроют (бросков пока — {rolls})',
    'chain.ok': 'Цепочка хешей: событий — {events}, версии от 0 до {last}, каждая связана с предыдущей',
    'chain.bad': 'Цепочка хешей: {bad} из {events} событий разрывают её или повреждены',
    'commitments.ok': 'Обязательства: раскрыто зёрен — {revealed} из {epochs}, каждое совпадает с обязательством',
    'commitments.bad': 'Обязательства: {bad} из {epochs} зёрен не совпадают с обязательством',
    'signatures.ok': 'Подписи: обязательств подписано — {signed}, ключ роллера {key}',
    'signatures.bad': 'Подписи: проблем с подписями роллера — {bad} (ключ {key})',
    'outcomes.ok': 'Исходы пересчитаны по правилам: действий — {actions}',
    'outcomes.bad': 'Исходы пересчитаны по правилам: {bad} из {actions} действий им не следуют',
    'outcomes.skipped': 'Исходы не пересчитаны: движок правил здесь не загрузился',
    'head.ok': 'Голова: опубликованный хеш {head} есть в этом журнале ({message})',
    'head.bad': 'Голова: ни у одного события журнала нет опубликованного хеша {head}',
    'head.skipped': 'Голова не проверена — введите хеш, опубликованный на форуме',
    'checkpoint.ok': 'Подписанный чекпойнт: последнее событие (версия {last}) есть в журнале из {size} записей, корень {root}, подпись ключом журнала {logKey} ({keyStatus})',
    'checkpoint.bad': 'Подписанный чекпойнт: ошибка — {what}',
    'checkpoint.skipped': 'Трейлера нет: проверено только по цепочке хешей (обрезанный в конце экспорт так не обнаружить)',
    'logkey.pinned': 'доверенный ключ журнала (закреплён)',
    'logkey.unpinned': 'доверенный ключ журнала не задан: ключ не закреплён',
    'logkey.mismatch': 'НЕ доверенный ключ журнала',
    'logkey.none': 'трейлера нет, значит, нет и ключа журнала',
    'what.malformed': 'трейлер повреждён',
    'what.note-signature': 'подпись чекпойнта не сходится',
    'what.log-key-not-trusted': 'ключ журнала не из доверенных',
    'what.missing': 'трейлера нет, а ключ журнала закреплён: где кончается бой, не показано',
    'what.head-not-last-event': 'подписанная голова — не последнее событие экспорта',
    'what.head-signature': 'подпись головы не сходится',
    'what.inclusion-proof': 'доказательство включения не ведёт к корню чекпойнта',
    'drawing.ok': 'Показано то, что проверено: бросков — {rolls}, костей — {dice}, описаний — {summaries}',
    'drawing.bad': 'Показанное расходится с проверенным журналом в {bad} местах',
    'key.pinned': 'доверенный ключ роллера',
    'key.unpinned': 'доверенный ключ роллера не задан: ключ не закреплён',
    'key.mismatch': 'НЕ доверенный ключ роллера',
    'key.pending': 'проверка…',
    'key.none': 'нет подписанных обязательств',
    'check.dice': 'кости', 'check.chain': 'цепочка хешей', 'check.commitments': 'обязательства', 'check.signatures': 'подписи',
    'check.outcomes': 'исходы', 'check.head': 'голова', 'check.checkpoint': 'чекпойнт', 'check.drawing': 'отображение',
    'event.ok': 'проверено', 'event.bad': 'ошибка', 'event.unrevealed': 'ещё не раскрыто',
    progress: 'Проверка: {done} из {total} событий',
    'error.notExport': 'Это не экспорт боя: {message}',
  },
};

/** The page's language: 'ru' or 'en' (anything else falls back to English). */
export function pageLanguage(lang) {
  return String(lang || '').toLowerCase().startsWith('ru') ? 'ru' : 'en';
}

/** A string of the table, `{name}` filled from `values`. */
export function t(lang, key, values = {}) {
  const text = STRINGS[pageLanguage(lang)][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in values ? String(values[name]) : `{${name}}`));
}

/** The check a problem belongs to. */
export function checkOfProblem(problem) {
  return CHECK_OF_PROBLEM[problem.check] ?? 'chain';
}

/** The checkpoint check's values: the trailer's checkpoint and key, and what failed, in `lang`. */
function checkpointValues(trailer, problems, lang) {
  if (!trailer) {
    // No trailer: what failed, if anything, is that one was demanded.
    const whats = [...new Set(problems.filter((p) => p.check === 'checkpoint').map((p) => p.what))];
    return { what: whats.map((w) => t(lang, `what.${w}`)).join('; ') };
  }
  const whats = [...new Set(trailer.failures.map((f) => f.what))];
  return {
    size: trailer.checkpoint ? trailer.checkpoint.size : '',
    root: trailer.checkpoint ? trailer.checkpoint.root : '',
    logKey: trailer.logKey ?? '',
    keyStatus: t(lang, `logkey.${trailer.keyStatus}`),
    what: whats.map((w) => t(lang, `what.${w}`)).join('; '),
  };
}

/**
 * One entry per check: { name, check: 'ok'|'bad'|'skipped', text } in
 * `lang`. `report` is verifyExport's, with `drawing` (dom.js's counts)
 * when the page was compared with it.
 */
export function summarizeChecks(report, lang) {
  const badOf = new Map(CHECK_NAMES.map((n) => [n, 0]));
  for (const p of report.problems) badOf.set(checkOfProblem(p), badOf.get(checkOfProblem(p)) + 1);
  const rolls = report.rolls.length;
  const dice = report.rolls.reduce((n, r) => n + ((r.derived ?? r.recorded)?.dice?.length ?? 0), 0);
  const epochs = report.commitments.length;
  const revealed = report.commitments.filter((c) => c.revealedAt !== null).length;
  const key = report.rollerKey ?? t(lang, 'key.none');
  const values = {
    rolls, dice, epochs, revealed, key,
    events: report.events.length,
    last: report.events.length > 0 ? report.events[report.events.length - 1].version : 0,
    signed: report.commitments.filter((c) => c.signature === 'ok').length,
    actions: report.outcomes ? report.outcomes.checked : 0,
    head: report.head ? report.head.given : '',
    message: report.head ? report.head.message : '',
    summaries: report.drawing ? report.drawing.summaries : 0,
    ...checkpointValues(report.trailer, report.problems, lang),
  };
  const entry = (name, check) => ({ name, check, text: t(lang, `${name}.${check}`, { ...values, bad: badOf.get(name) }) });
  const state = (name, skipped) => (badOf.get(name) > 0 ? 'bad' : skipped ? 'skipped' : 'ok');
  const items = [
    entry('dice', state('dice', rolls > 0 && report.rolls.every((r) => r.check === 'unrevealed'))),
    entry('chain', state('chain', false)),
    entry('commitments', state('commitments', false)),
    entry('signatures', state('signatures', false)),
    entry('outcomes', state('outcomes', !report.outcomes)),
    entry('head', state('head', !report.head)),
    entry('checkpoint', state('checkpoint', !report.trailer)),
  ];
  if (report.drawing) {
    values.rolls = report.drawing.rolls;
    values.dice = report.drawing.dice;
    items.push(entry('drawing', state('drawing', false)));
  }
  return items;
}
