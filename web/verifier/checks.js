// What the verdict says it checked: a report (from verifyExport, plus the
// drawing's problems from dom.js) summed up as one line per check, with
// counts, in the page's language (en or ru), and each problem as a line
// naming its check in that language. No DOM here: dom.js writes these.

/** The checks, in the order the verdict lists them. */
import { messageText } from './messages.js';

export const CHECK_NAMES = ['dice', 'chain', 'commitments', 'signatures', 'outcomes', 'head', 'checkpoint', 'drawing'];

// Which check each problem of the report belongs to (problem.check).
const CHECK_OF_PROBLEM = {
  roll: 'dice', nonce: 'dice',
  chain: 'chain', sequence: 'chain', record: 'chain', event: 'chain',
  commitment: 'commitments',
  signature: 'signatures', 'roller-key': 'signatures',
  // A ruling that answers no dispute (audit/rulings.js): the battle's
  // judging, which the outcomes line speaks for.
  outcomes: 'outcomes', ruling: 'outcomes',
  head: 'head',
  checkpoint: 'checkpoint',
  drawing: 'drawing',
};

export const STRINGS = {
  en: {
    'dice.ok': 'Dice re-derived: {rolls#roll|rolls}, {dice#die|dice}',
    'dice.bad': 'Dice re-derived: {bad} of {rolls#roll|rolls} do not match the seeds',
    'dice.skipped': 'Dice not re-derived yet: the seed stays secret until it is revealed ({rolls#roll|rolls} so far)',
    'chain.ok': 'Hash chain: {events#event|events}, versions 0 to {last}, each linked to the one before',
    'chain.bad': 'Hash chain: {bad} of {events#event|events} break it or are malformed',
    'commitments.ok': 'Commitments: {revealed} of {epochs#seed|seeds} revealed, each matching its commitment',
    'commitments.bad': 'Commitments: {bad} of {epochs#seed|seeds} do not match what was committed',
    'signatures.ok': 'Signatures: {signed#commitment|commitments} signed by roller key {key}',
    'signatures.bad': 'Signatures: {bad} of {epochs#commitment|commitments} not signed as they must be (key {key})',
    'outcomes.ok': 'Outcomes re-resolved under the rules: {actions#action|actions}',
    'outcomes.bad': 'Outcomes re-resolved under the rules: {bad} of {actions#action|actions} do not follow them',
    'outcomes.skipped': 'Outcomes not re-resolved: the rules engine could not be loaded here',
    'head.ok': 'Head: the posted head {head} is in this log ({message})',
    'head.bad': 'Head: no event of this log has the posted head {head}',
    'head.skipped': 'Head: not compared with the forum’s — type the head hash the forum posted',
    'head.cut': 'Head: the export ends at version {last}, before the head the journal signed or the forum posted',
    'checkpoint.ok': 'Signed checkpoint: the last event (version {last}) is in the journal’s log of {size#record|records}, root {root} (hex, as `battlelog audit` prints it; in the signed note, base64 {rootBase64}), signed by log key {logKey} ({keyStatus})',
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
    'drawing.ok': 'What is drawn is what was verified: {rolls#roll|rolls}, {dice#die|dice}, {summaries#summary|summaries}',
    'drawing.bad': 'What is drawn differs from the verified log in {bad#place|places}',
    'key.pinned': 'a trusted roller key',
    'key.unpinned': 'no trusted roller key given: the key is not pinned',
    'key.mismatch': 'NOT a trusted roller key',
    'key.pending': 'checking…',
    'key.none': 'no signed commitment',
    'check.dice': 'dice', 'check.chain': 'hash chain', 'check.commitments': 'commitments', 'check.signatures': 'signatures',
    'check.outcomes': 'outcomes', 'check.head': 'head', 'check.checkpoint': 'checkpoint', 'check.drawing': 'drawing',
    'event.ok': 'verified', 'event.bad': 'failed', 'event.unrevealed': 'not revealed yet',
    // An event's type as the battle page titles it (crates/web's i18n.rs).
    'type.BattleOpened': 'Battle opened', 'type.DiceRolled': 'Roll', 'type.ActionResolved': 'Action',
    'type.DisputeRaised': 'Dispute', 'type.JudgeRuling': 'Ruling', 'type.BattleClosed': 'Battle closed',
    'type.SeedRevealed': 'Seed revealed', 'type.SeedCommitted': 'Next seed committed',
    progress: 'Checking: {done} of {total#event|events}',
    'error.notExport': 'This is not a battle export: {message}',
    'verdict.pending': 'Checking…',
    'verdict.idle': 'Choose an export file to check it',
    'verdict.verified': 'Verified: the battle is exactly as the roller and the journal recorded it',
    'verdict.verified.why': 'Every die was re-derived from the seeds the roller committed to in advance, the log is unbroken, every result follows the rules, and the commitments are signed by a roller key this site trusts.',
    'verdict.verified-unpinned': 'Consistent, but not vouched for: the signing key is not a trusted one',
    'verdict.verified-unpinned.why': 'Everything in this export agrees with itself, but no key this page trusts vouches for the roller key that signed it ({signer}): anyone can make such an export with a key of their own. Give the roller key the site publishes to check it against.',
    'verdict.unrevealed': 'Consistent so far: the dice can be re-derived once the seed is revealed',
    'verdict.unrevealed.why': 'Nothing in the log contradicts itself, but the seed of the current dice stays secret until it is revealed (at the latest when the battle closes); only then can every die be re-derived.',
    'verdict.failed': 'Failed at version {version}: {check}',
    'verdict.failed-unchecked': 'Not checked: the check could not run here',
    'verdict.failed-unchecked.why': 'The verifier stopped before it could say anything about the battle (see the technical detail). Try another browser, or run battlelog audit on the export.',
    'verdict.not-an-export': 'This file is not a battle export',
    'verdict.not-an-export.why': 'It cannot be read as the JSON Lines file battlelog export writes, so nothing about any battle was checked: the battle is neither confirmed nor refuted. Choose the export file itself.',
    'verdict.key-mismatch': 'Signed by another roller key than the one given',
    'verdict.key-mismatch.why': 'The battle agrees with itself, but the key that signed its commitments ({signer}) is not the roller key given here ({given}). If you typed the key, check it for a typo; if it is the site’s, this export was not made by this site’s roller.',
    'verdict.cut-short': 'Cut short: the export ends before the battle does',
    'verdict.cut-short.why': 'The export stops at version {version}, before the head the journal signed (or the forum posted): events at its end are missing. Get the whole export.',
    'verdict.input-error': 'Check the field “{field}”: 64 hex digits (0–9, a–f) expected, {length} characters typed',
    'verdict.input-error.why': 'The value typed there cannot be a key or a hash, so the check left it out. Correct it or clear the field.',
    'verdict.details': 'Technical detail',
    'offline.title': 'Verify a battle export (offline)',
    'offline.roller-key': 'Trusted roller key (64 hex digits, optional)',
    'offline.head': 'Head hash the forum posted (optional)',
    'offline.choose': 'Choose or drop a battlelog export file.',
    'offline.first-failure': 'First failing version',
    'offline.signed-by': 'Key that signed the commitments',
    'offline.pinned': 'Roller keys the check pins to',
    'field.roller-key': 'Trusted roller key', 'field.head': 'Head hash the forum posted', 'field.log-key': 'Journal log key',
    'field.invalid': '64 hex digits (0–9, a–f) expected, {length} characters typed',
    'why.dice': 'A die recorded here is not the one the committed seed gives: the roll was changed after it was drawn.',
    'why.chain': 'The log was edited: an event was changed, removed or put out of order after it was recorded.',
    'why.commitments': 'A revealed seed is not the one the roller committed to before the dice were drawn.',
    'why.signatures': 'A commitment is not properly signed by the roller.',
    'why.outcomes': 'A result is not the one the rules give for these dice.',
    'why.head': 'The log does not hold the head it should end at.',
    'why.checkpoint': 'The journal’s signed checkpoint does not vouch for this export.',
    'why.drawing': 'What this page shows is not what was verified: it was changed on its way to you.',
  },
  ru: {
    'dice.ok': 'Кости пересчитаны: {rolls#бросок|броска|бросков}, {dice#кость|кости|костей}',
    'dice.bad': 'Кости пересчитаны: {bad} из {rolls#броска|бросков|бросков} не сходятся с сидами',
    'dice.skipped': 'Кости ещё не пересчитаны: сид секретен, пока его не раскроют (пока {rolls#бросок|броска|бросков})',
    'chain.ok': 'Цепочка хешей: {events#событие|события|событий}, версии от 0 до {last}, каждая связана с предыдущей',
    'chain.bad': 'Цепочка хешей: {bad} из {events#события|событий|событий} разрывают её или повреждены',
    'commitments.ok': 'Обязательства: раскрыто сидов: {revealed} из {epochs#сида|сидов|сидов}, каждый совпадает с обязательством',
    'commitments.bad': 'Обязательства: {bad} из {epochs#сида|сидов|сидов} не совпадают с обязательством',
    'signatures.ok': 'Подписи: подписано {signed#обязательство|обязательства|обязательств}, ключ роллера {key}',
    'signatures.bad': 'Подписи: {bad} из {epochs#обязательства|обязательств|обязательств} подписаны не так, как нужно (ключ {key})',
    'outcomes.ok': 'Исходы пересчитаны по правилам: {actions#действие|действия|действий}',
    'outcomes.bad': 'Исходы пересчитаны по правилам: {bad} из {actions#действия|действий|действий} им не следуют',
    'outcomes.skipped': 'Исходы не пересчитаны: движок правил здесь не загрузился',
    'head.ok': 'Голова: опубликованный хеш {head} есть в этом журнале ({message})',
    'head.bad': 'Голова: ни у одного события журнала нет опубликованного хеша {head}',
    'head.skipped': 'Голова: не сверена с форумом — введите хеш головы, опубликованный на форуме',
    'head.cut': 'Голова: экспорт кончается на версии {last}, раньше головы, которую подписал журнал или опубликовал форум',
    'checkpoint.ok': 'Подписанный чекпойнт: последнее событие (версия {last}) есть в журнале из {size#записи|записей|записей}, корень {root} (шестнадцатеричный, как печатает `battlelog audit`; в подписанной записи — в кодировке `base64`: {rootBase64}), подпись ключом журнала {logKey} ({keyStatus})',
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
    'drawing.ok': 'Показано то, что проверено: {rolls#бросок|броска|бросков}, {dice#кость|кости|костей}, {summaries#описание|описания|описаний}',
    'drawing.bad': 'Показанное расходится с проверенным журналом в {bad#месте|местах|местах}',
    'key.pinned': 'доверенный ключ роллера',
    'key.unpinned': 'доверенный ключ роллера не задан: ключ не закреплён',
    'key.mismatch': 'НЕ доверенный ключ роллера',
    'key.pending': 'проверка…',
    'key.none': 'нет подписанных обязательств',
    'check.dice': 'кости', 'check.chain': 'цепочка хешей', 'check.commitments': 'обязательства', 'check.signatures': 'подписи',
    'check.outcomes': 'исходы', 'check.head': 'голова', 'check.checkpoint': 'чекпойнт', 'check.drawing': 'отображение',
    'event.ok': 'проверено', 'event.bad': 'ошибка', 'event.unrevealed': 'ещё не раскрыто',
    'type.BattleOpened': 'Бой открыт', 'type.DiceRolled': 'Бросок', 'type.ActionResolved': 'Действие',
    'type.DisputeRaised': 'Оспаривание', 'type.JudgeRuling': 'Решение судьи', 'type.BattleClosed': 'Бой окончен',
    'type.SeedRevealed': 'Сид раскрыт', 'type.SeedCommitted': 'Новое обязательство сида',
    progress: 'Проверка: {done} из {total#события|событий|событий}',
    'error.notExport': 'Это не экспорт боя: {message}',
    'verdict.pending': 'Проверка…',
    'verdict.idle': 'Выберите файл экспорта для проверки',
    'verdict.verified': 'Проверено: бой в точности такой, каким его записали роллер и журнал',
    'verdict.verified.why': 'Каждая кость заново выведена из сидов, за которые роллер поручился заранее; журнал не разорван; каждый итог следует правилам; обязательства подписаны ключом роллера, которому доверяет сайт.',
    'verdict.verified-unpinned': 'Сходится, но не заверено: ключ подписи не из доверенных',
    'verdict.verified-unpinned.why': 'Всё в этом экспорте согласовано, но ключ роллера, которым он подписан ({signer}), не заверен никем, кому доверяет страница: такой экспорт любой может сделать своим ключом. Укажите ключ роллера, опубликованный сайтом, чтобы сверить с ним.',
    'verdict.unrevealed': 'Пока без противоречий: кости можно будет пересчитать после раскрытия сида',
    'verdict.unrevealed.why': 'В журнале ничто не противоречит одно другому, но сид текущих бросков секретен, пока его не раскроют (самое позднее — при закрытии боя); только тогда можно пересчитать каждую кость.',
    'verdict.failed': 'Не сходится на версии {version}: {check}',
    'verdict.failed-unchecked': 'Не проверено: проверка здесь не смогла выполниться',
    'verdict.failed-unchecked.why': 'Проверка остановилась, ничего не сказав о бое (см. технические подробности). Попробуйте другой браузер или запустите battlelog audit на экспорте.',
    'verdict.not-an-export': 'Этот файл — не экспорт боя',
    'verdict.not-an-export.why': 'Его не удаётся прочитать как файл JSON Lines, который пишет battlelog export, поэтому ни один бой не проверялся: бой ни подтверждён, ни опровергнут. Выберите сам файл экспорта.',
    'verdict.key-mismatch': 'Подписано не тем ключом роллера, что указан',
    'verdict.key-mismatch.why': 'Бой сам с собой сходится, но ключ, подписавший его обязательства ({signer}), — не тот ключ роллера, что указан здесь ({given}). Если ключ вводили вы, проверьте его на опечатку; если это ключ сайта, экспорт сделан не роллером этого сайта.',
    'verdict.cut-short': 'Обрезано: экспорт кончается раньше боя',
    'verdict.cut-short.why': 'Экспорт обрывается на версии {version}, раньше головы, которую подписал журнал (или опубликовал форум): событий в конце не хватает. Возьмите экспорт целиком.',
    'verdict.input-error': 'Проверьте поле «{field}»: нужно 64 шестнадцатеричные цифры (0–9, a–f), введено символов — {length}',
    'verdict.input-error.why': 'Введённое там значение не может быть ни ключом, ни хешем, поэтому проверка его не учла. Исправьте его или очистите поле.',
    'verdict.details': 'Технические подробности',
    'offline.title': 'Проверка экспорта боя (без сети)',
    'offline.roller-key': 'Доверенный ключ роллера (64 шестнадцатеричные цифры, необязательно)',
    'offline.head': 'Хеш головы, опубликованный форумом (необязательно)',
    'offline.choose': 'Выберите или перетащите файл экспорта battlelog.',
    'offline.first-failure': 'Первая ошибочная версия',
    'offline.signed-by': 'Ключ, подписавший обязательства',
    'offline.pinned': 'Ключи роллера, с которыми сверяется проверка',
    'field.roller-key': 'Доверенный ключ роллера', 'field.head': 'Хеш головы, опубликованный форумом', 'field.log-key': 'Ключ журнала',
    'field.invalid': 'нужно 64 шестнадцатеричные цифры (0–9, a–f), введено символов — {length}',
    'why.dice': 'Записанная здесь кость — не та, что даёт сид, за который роллер поручился: бросок изменили после того, как его сделали.',
    'why.chain': 'Журнал правили: событие изменили, удалили или переставили после записи.',
    'why.commitments': 'Раскрытый сид — не тот, за который роллер поручился до бросков.',
    'why.signatures': 'Обязательство не подписано роллером как следует.',
    'why.outcomes': 'Итог — не тот, что дают правила при этих костях.',
    'why.head': 'В журнале нет головы, которой он должен кончаться.',
    'why.checkpoint': 'Подписанный чекпойнт журнала не подтверждает этот экспорт.',
    'why.drawing': 'Страница показывает не то, что проверено: её изменили по дороге к вам.',
  },
};

/** The page's language: 'ru' or 'en' (anything else falls back to English). */
export function pageLanguage(lang) {
  return String(lang || '').toLowerCase().startsWith('ru') ? 'ru' : 'en';
}

/** A string of the table, `{name}` filled from `values`. */
export function t(lang, key, values = {}) {
  const language = pageLanguage(lang);
  const text = STRINGS[language][key] ?? STRINGS.en[key] ?? key;
  return text
    .replace(/\{(\w+)#([^}]+)\}/g, (whole, name, forms) => (name in values ? counted(language, values[name], forms.split('|')) : whole))
    .replace(/\{(\w+)\}/g, (_, name) => (name in values ? String(values[name]) : `{${name}}`));
}

/**
 * `count` and the noun's form for it: `{rolls#roll|rolls}` in English,
 * `{rolls#бросок|броска|бросков}` in Russian (one, few, many, as
 * Intl.PluralRules names them: 1 бросок, 2 броска, 5 бросков, 21 бросок).
 */
function counted(language, count, forms) {
  const category = new Intl.PluralRules(language).select(Number(count));
  const order = forms.length === 3 ? ['one', 'few', 'many'] : ['one', 'other'];
  const index = order.indexOf(category);
  return `${count} ${forms[index === -1 ? forms.length - 1 : index]}`;
}

/** A value drawn as code (a key, a hash): marked `…` in a check's text. */
const code = (value) => `\`${String(value).replace(/`/g, "'")}\``;

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
    // In hex, as `battlelog audit` prints it; the signed note (shown beside
    // the checks) carries it in base64, so both are given.
    root: trailer.checkpoint ? code(trailer.checkpoint.rootHex ?? trailer.checkpoint.root) : '',
    rootBase64: trailer.checkpoint ? code(trailer.checkpoint.root) : '',
    logKey: trailer.logKey ? code(trailer.logKey) : '',
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
  // Counted in what a judge counts (rolls, events, commitments), never in
  // problems: one edited die is one roll, however many lines say so.
  const badOf = new Map(CHECK_NAMES.map((n) => [n, new Set()]));
  for (const p of report.problems) badOf.get(p.cutShort ? 'head' : checkOfProblem(p)).add(p.version);
  const cut = report.problems.some((p) => p.cutShort || (p.check === 'head'));
  const rolls = report.rolls.length;
  const dice = report.rolls.reduce((n, r) => n + ((r.derived ?? r.recorded)?.dice?.length ?? 0), 0);
  const epochs = report.commitments.length;
  const revealed = report.commitments.filter((c) => c.revealedAt !== null).length;
  // Values (keys, hashes) are marked `…`: dom.js draws them as code.
  const key = report.rollerKey ? code(report.rollerKey) : t(lang, 'key.none');
  const values = {
    rolls, dice, epochs, revealed, key,
    events: report.events.length,
    last: report.events.length > 0 ? report.events[report.events.length - 1].version : 0,
    signed: report.commitments.filter((c) => c.signature === 'ok').length,
    actions: report.outcomes ? report.outcomes.checked : 0,
    head: report.head ? code(report.head.given) : '',
    message: report.head ? messageText(report.head.message, pageLanguage(lang)) ?? report.head.message : '',
    summaries: report.drawing ? report.drawing.summaries : 0,
    ...checkpointValues(report.trailer, report.problems, lang),
  };
  const entry = (name, check) => ({ name, check, text: t(lang, name === 'head' && check === 'bad' && !report.head && cut ? 'head.cut' : `${name}.${check}`, { ...values, bad: badOf.get(name).size }) });
  const state = (name, skipped) => (badOf.get(name).size > 0 ? 'bad' : skipped ? 'skipped' : 'ok');
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
