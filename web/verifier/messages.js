// The verifier's reasons in the page's language. The checks (audit.js,
// dice.js, dom.js, rules/index.js) word each problem in English, the words
// `battlelog audit` uses and the tests match; a Russian page reads each one
// through the table below. What is not a word — a hash, a key, a JSON value,
// a field's or an expression's own spelling — is kept as it is and marked as
// code (`…` in the text; dom.js draws it as <code>), never translated.
//
// Every message the verifier writes has its pattern here: test/messages.test.mjs
// forges exports that raise them and holds the Russian text to no English word.

/** A die's recorded field in Russian (compareDice's `sides`, `value`, …). */
const DIE_FIELD = { sides: 'граней', value: 'значение', kept: 'оставлена', rerolled: 'переброшена', exploded: 'взорвалась' };

/** A check's name as problems carry it in `check: message` (audit.js's events). */
const CHECK_WORD = {
  roll: 'кости', nonce: 'кости', chain: 'цепочка хешей', sequence: 'цепочка хешей', record: 'цепочка хешей',
  event: 'цепочка хешей', commitment: 'обязательства', signature: 'подписи', 'roller-key': 'подписи',
  outcomes: 'исходы', ruling: 'решения судьи', head: 'голова', checkpoint: 'чекпойнт', drawing: 'отображение',
};

const code = (text) => `\`${String(text).replace(/`/g, "'")}\``;

// [English pattern, Russian text (a function of the match)]. Order matters
// only where one pattern is a prefix of another: the longer comes first.
const RU = [
  // audit.js: the chain and the records
  [/^the line names stream (.+), not (.+)$/, (m) => `строка называет поток ${code(m[1])}, а не ${code(m[2])}`],
  [/^version (\d+) expected here, found version (\d+): missing or out of order$/, (m) => `здесь ожидалась версия ${m[1]}, а стоит версия ${m[2]}: событие пропущено или переставлено`],
  [/^version (\d+) comes again or out of order after version (\d+)$/, (m) => `версия ${m[1]} повторяется или стоит не на месте после версии ${m[2]}`],
  [/^the record is not base64$/, () => `запись не в кодировке ${code('base64')}`],
  [/^the hash is not 64 hex digits$/, () => 'хеш — не 64 шестнадцатеричные цифры'],
  [/^the hash does not follow from the previous hash and this record$/, () => 'хеш не следует из предыдущего хеша и этой записи: событие изменено'],
  [/^the record bytes do not decode: (.*)$/, (m) => `байты записи не читаются: ${code(m[1])}`],
  [/^the record belongs to stream (.+)$/, (m) => `запись из другого потока: ${code(m[1])}`],
  [/^the record says version (\d+)$/, (m) => `в записи стоит версия ${m[1]}`],
  [/^the event shown is not an object$/, () => 'показанное событие — не объект'],
  [/^the event shown differs from the record in (.+)$/, (m) => `показанное событие расходится с записью в поле ${code(m[1])}`],
  [/^no BattleOpened: the client seed and the epoch-0 commitment are missing$/, () => 'нет открытия боя: нет клиентского сида и обязательства эпохи 0'],
  [/^BattleOpened is not the first event$/, () => 'открытие боя — не первое событие'],
  // signatures
  [/^the commitment of epoch (\d+) is not signed$/, (m) => `обязательство эпохи ${m[1]} не подписано`],
  [/^the signature of the commitment of epoch (\d+) does not verify with the roller key it names$/, (m) => `подпись обязательства эпохи ${m[1]} не сходится с ключом роллера, указанным в нём`],
  [/^epoch (\d+) is signed by roller key (\S+), not the battle's (\S+)$/, (m) => `эпоха ${m[1]} подписана ключом роллера ${code(m[2])}, а не ключом этого боя ${code(m[3])}`],
  [/^epoch (\d+) is signed by roller key (\S+), which is not a trusted roller key \((.*)\)$/, (m) => `эпоха ${m[1]} подписана ключом роллера ${code(m[2])}, которого нет среди доверенных (${code(m[3])})`],
  // rolls and the actions that use them
  [/^roll (\d+) was drawn for an action that was not resolved before this event: a journaled roll was left without its resolution$/, (m) => `бросок ${m[1]} сделан для действия, которое не разрешено до этого события: записанный бросок остался без разрешения`],
  [/^the action resolved is not the action roll (\d+) was drawn for$/, (m) => `разрешено не то действие, для которого сделан бросок ${m[1]}`],
  [/^the action was drawn rolls \[(.*)\] but its resolution uses rolls \[(.*)\]$/, (m) => `для действия сделаны броски [${m[1]}], а его разрешение берёт броски [${m[2]}]`],
  [/^the action uses nonce (\d+), which no earlier roll has$/, (m) => `действие берёт бросок с номером ${m[1]}, которого раньше не было`],
  [/^nonce (\d+) was already used at version (\d+)$/, (m) => `номер броска ${m[1]} уже был в версии ${m[2]}`],
  [/^nonce (\d+) expected, found (\d+)$/, (m) => `ожидался номер броска ${m[1]}, а стоит ${m[2]}`],
  [/^rolled in epoch (\d+) while epoch (\d+) is current$/, (m) => `брошено в эпохе ${m[1]}, когда текущая — эпоха ${m[2]}`],
  [/^rolled in epoch (\d+) after its seed was revealed: anyone could have predicted it$/, (m) => `брошено в эпохе ${m[1]} после раскрытия её сида: результат мог предсказать любой`],
  [/^the expression does not parse: (.*)$/, (m) => `выражение не разбирается: ${code(m[1])}`],
  [/^cannot re-derive: (.*)$/, (m) => `пересчитать не удалось: ${code(m[1])}`],
  [/^dice: not a list$/, () => 'кости записаны не списком'],
  [/^dice: (\d+) recorded, (\d+) re-derived$/, (m) => `костей записано ${m[1]}, пересчитано ${m[2]}`],
  [/^die (\d+): (\w+) (.+) recorded, (.+) re-derived$/, (m) => `кость ${m[1]}: ${DIE_FIELD[m[2]] ?? code(m[2])} — записано ${m[3]}, пересчитано ${m[4]}`],
  [/^total (.+) recorded, (.+) re-derived$/, (m) => `итог броска: записано ${m[1]}, пересчитано ${m[2]}`],
  [/^the arithmetic fails \((.*)\) but no error is recorded$/, (m) => `арифметика не выполняется (${code(m[1])}), а ошибка не записана`],
  [/^an error is recorded \((.*)\) but the arithmetic succeeds$/, (m) => `записана ошибка (${code(m[1])}), а арифметика выполняется`],
  // seeds and commitments
  [/^epoch (\d+) committed while epoch (\d+) is current and not revealed$/, (m) => `обязательство эпохи ${m[1]} дано, пока текущая эпоха ${m[2]} не раскрыта`],
  [/^epoch (\d+) committed while epoch (\d+) is current$/, (m) => `обязательство эпохи ${m[1]} дано, пока текущая — эпоха ${m[2]}`],
  [/^epoch (\d+) is revealed but was never committed$/, (m) => `сид эпохи ${m[1]} раскрыт, а обязательства по нему не было`],
  [/^the seed revealed for epoch (\d+) does not hash to its commitment (\S+)$/, (m) => `раскрытый сид эпохи ${m[1]} не даёт хеш своего обязательства ${code(m[2])}`],
  [/^the seed revealed for epoch (\d+) at version (\d+) does not match its commitment$/, (m) => `сид эпохи ${m[1]}, раскрытый в версии ${m[2]}, не совпадает со своим обязательством`],
  [/^epoch (\d+) is revealed again with another seed$/, (m) => `сид эпохи ${m[1]} раскрыт ещё раз, и другой`],
  [/^the battle is closed \(version (\d+)\) but the export ends with the seed of epoch (\d+) unrevealed: it is cut short or the reveal is missing$/, (m) => `бой закрыт (версия ${m[1]}), а экспорт кончается, не раскрыв сид эпохи ${m[2]}: экспорт обрезан или раскрытие потеряно`],
  // outcomes (audit.js and rules/index.js)
  [/^the rules engine \(rules\/index\.js\) could not be loaded, so no outcome was re-resolved$/, () => 'движок правил не загрузился, поэтому исходы не пересчитаны'],
  [/^the outcome is not the one the rules give: (.*)$/, (m) => `исход не тот, что дают правила: ${ru(m[1])}`],
  [/^outcome field (\w+): recorded (.*), the rules give none$/, (m) => `поле исхода ${code(m[1])}: записано ${code(m[2])}, а правила его не дают`],
  [/^outcome field (\w+): the rules give (.*), the record has none$/, (m) => `поле исхода ${code(m[1])}: правила дают ${code(m[2])}, а в записи его нет`],
  [/^outcome field (\w+): recorded (.*), the rules give (.*)$/, (m) => `поле исхода ${code(m[1])}: записано ${code(m[2])}, правила дают ${code(m[3])}`],
  [/^the recorded outcome is not an object$/, () => 'записанный исход — не объект'],
  [/^the outcomes differ$/, () => 'исходы различаются'],
  [/^recorded (.*), the rules give (.*)$/, (m) => `записано ${code(m[1])}, правила дают ${code(m[2])}`],
  [/^the battle does not open under the rules: (.*)$/, (m) => `бой не открывается по правилам: ${code(m[1])}`],
  [/^an action before the battle was opened$/, () => 'действие до открытия боя'],
  [/^the rules refuse this (\w+): (.*)$/, (m) => `правила не принимают это действие (${code(m[1])}): ${code(m[2])}`],
  [/^the action names roll (\d+), which is not in the log$/, (m) => `действие называет бросок ${m[1]}, которого нет в журнале`],
  [/^a free roll names exactly one roll of the log$/, () => 'свободный бросок называет ровно один бросок журнала'],
  [/^the rules forbid this action: (.*)$/, (m) => `правила запрещают это действие: ${code(m[1])}`],
  [/^the action's dice or fields do not fit the rules: (.*)$/, (m) => `кости или поля действия не подходят к правилам: ${code(m[1])}`],
  [/^the action's rolls are \[(.*)\], the rules ask for \[(.*)\]$/, (m) => `броски действия — [${code(m[1])}], а правила требуют [${code(m[2])}]`],
  [/^die (\d+) of the action's rolls is a d(\d+), the rules ask for a d(\d+)$/, (m) => `кость ${m[1]} бросков действия — d${m[2]}, а правила требуют d${m[3]}`],
  // audit/rulings.js
  [/^the ruling says it answers version (\d+), which is no dispute raised before it in this battle$/, (m) => `решение судьи называет себя ответом на версию ${m[1]}, а это не спор, поднятый в этом бою до него`],
  // the head
  [/^the export ends at the head given \(version (\d+)\)$/, (m) => `экспорт кончается на введённой голове (версия ${m[1]})`],
  [/^the head given is version (\d+); the export goes on to version (\d+)$/, (m) => `введённая голова — версия ${m[1]}; экспорт продолжается до версии ${m[2]}`],
  [/^no event of the export has the head hash given: the export is cut short or not the battle the head is of$/, () => 'ни у одного события экспорта нет введённого хеша головы: экспорт обрезан или это другой бой'],
  // dom.js: what the page draws
  [/^(\d+) dice drawn, (\d+) in the roll$/, (m) => `нарисовано костей: ${m[1]}, в броске: ${m[2]}`],
  [/^die (\d+) is drawn with data-face (.*), the roll has (.*)$/, (m) => `кость ${m[1]} нарисована гранью ${m[2]}, а в броске ${m[3]}`],
  [/^die (\d+) is drawn as a fudge die, the roll's is a d(\d+)$/, (m) => `кость ${m[1]} нарисована как ${code('dF')}, а в броске d${m[2]}`],
  [/^die (\d+) shows (.*), the roll has (.*)$/, (m) => `кость ${m[1]} показывает ${code(m[2])}, а в броске ${m[3]}`],
  [/^die (\d+) is named (.*), the roll has (.*)$/, (m) => `кость ${m[1]} озвучена как ${code(m[2])}, а в броске ${m[3]}`],
  [/^the roll carries no data-total$/, () => 'у броска на странице нет итога для сверки'],
  [/^data-total (.*), the roll's total is (.*)$/, (m) => `итог броска на странице ${code(m[1])}, а проверенный — ${code(m[2])}`],
  [/^(\d+) totals drawn$/, (m) => `нарисовано итогов: ${m[1]}`],
  [/^(\d+) summaries drawn$/, (m) => `нарисовано описаний: ${m[1]}`],
  [/^the total shows (.*), the roll's is (.*)$/, (m) => `итог показан как ${code(m[1])}, а проверенный — ${code(m[2])}`],
  [/^the event's summary \((.*)\) is not drawn as its \[data-summary\]$/, (m) => `описание события (${code(m[1])}) не нарисовано`],
  [/^the summary shows a field \((.*)\) the record does not hold$/, (m) => `описание показывает поле (${code(m[1])}), которого нет в записи`],
  [/^the summary reads (".*"), the record's (\w+) is (".*")$/, (m) => `описание читается как ${code(m[1])}, а в записи (${code(m[2])}) — ${code(m[3])}`],
  [/^the page shows a roll with nonce (\d+), which the export does not hold$/, (m) => `страница показывает бросок с номером ${m[1]}, которого нет в экспорте`],
  [/^the page shows version (.*), which the export does not hold$/, (m) => `страница показывает версию ${m[1]}, которой нет в экспорте`],
  [/^a die \(data-face (.*)\) is drawn outside any roll$/, (m) => `кость (грань ${m[1]}) нарисована вне броска`],
  [/^the page shows a checkpoint to keep, but the export has no verified one$/, () => 'страница предлагает сохранить чекпойнт, а проверенного чекпойнта в экспорте нет'],
  [/^the checkpoint the page shows to keep is not the one the trailer holds$/, () => 'чекпойнт, который страница предлагает сохранить, — не тот, что в трейлере'],
  [/^roll (\d+): (.*)$/, (m) => `бросок ${m[1]}: ${ru(m[2])}`],
  // fetch-export.js: the battle page's export could not be read (ExportFetchError)
  [/^the battle's export could not be read: HTTP (\d+)$/, (m) => `экспорт битвы не удалось получить: ответ сервера ${code(m[1])}`],
  [/^the battle's export could not be read: (.*)$/, (m) => `экспорт битвы не удалось получить: ${code(m[1])}`],
  // audit.js: a file that is not an export (ExportFormatError)
  [/^line (\d+): (.*)$/, (m) => { const rest = ru(m[2]); return rest === null ? null : `строка ${m[1]}: ${rest}`; }],
  [/^an export is text$/, () => 'экспорт — это текст'],
  [/^a line follows the trailer \(the line without a version\)$/, () => 'после трейлера (строки без версии) идёт ещё строка'],
  [/^not JSON: (.*)$/, (m) => `не ${code('JSON')}: ${code(m[1])}`],
  [/^not a JSON object$/, () => `не объект ${code('JSON')}`],
  [/^field (\w+) is missing or not a (\w+)$/, (m) => `поля ${code(m[1])} нет или оно не того типа (${code(m[2])})`],
  [/^field version is not a non-negative integer$/, () => `поле ${code('version')} — не целое неотрицательное число`],
  [/^the export holds no event$/, () => 'в экспорте нет ни одного события'],
  // audit.js's per-event lines: `check: message`
  [/^([a-z-]+): (.*)$/, (m) => (m[1] in CHECK_WORD ? `${CHECK_WORD[m[1]]}: ${ru(m[2])}` : null)],
];

function ru(message) {
  for (const [pattern, text] of RU) {
    const m = pattern.exec(message);
    if (!m) continue;
    const out = text(m);
    if (out !== null) return out;
  }
  return null;
}

/**
 * `message` (one of the verifier's English reasons) in `lang`: as it is in
 * English; in Russian, translated, with values marked `…`; null when no
 * pattern knows it (the caller then says so in Russian and keeps the
 * English as a technical detail).
 */
export function messageText(message, lang) {
  const text = String(message ?? '');
  if (lang !== 'ru') return text;
  return ru(text);
}

/**
 * A problem's reason in `lang`: a checkpoint's failure by its `what`
 * (`whatText`, checks.js's `what.*`), else its message translated; a
 * message no pattern knows gives its check's plain explanation
 * (`fallback`, checks.js's `why.*`).
 */
export function problemText(problem, lang, { whatText = null, fallback = '' } = {}) {
  if (lang !== 'ru') return String(problem.message ?? '');
  if (problem.what && whatText) return whatText;
  return ru(String(problem.message ?? '')) ?? fallback;
}

/**
 * `text` with `…` spans as [{ code: bool, text }], for drawing code as
 * <code>.
 */
export function segments(text) {
  return String(text).split('`').map((part, i) => ({ code: i % 2 === 1, text: part })).filter((s) => s.text !== '');
}
