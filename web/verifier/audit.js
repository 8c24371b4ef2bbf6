// verifyExport: an export checked end to end (docs/protocol.md §1–§5, the
// signatures addendum). The report's shape is described in verify.js. Each
// pass is a module of audit/:
//
//   audit/lines.js        the text read as event lines and a trailer
//   audit/records.js      1. the hash chain and the records
//   audit/commitments.js  2a. each epoch's commitment, reveal and signature
//   audit/rolls.js        2b. epochs, nonces, roll-forward, rolls re-derived
//   audit/rulings.js      2c. rulings answer disputes of the battle
//   audit/outcomes.js     3. outcomes re-resolved by the rules engine
//   audit/end.js          4. the close's reveals, a given head, the trailer
//   audit/context.js      the problems, events and progress they share
import { auditContext } from './audit/context.js';
import { checkEnd } from './audit/end.js';
import { parseExportLines } from './audit/lines.js';
import { checkOutcomes } from './audit/outcomes.js';
import { checkRecords } from './audit/records.js';
import { checkRolls } from './audit/rolls.js';
import { checkRulings } from './audit/rulings.js';
import { checkSignatures, collectSeeds } from './audit/commitments.js';

export { ExportFormatError } from './audit/lines.js';
export { loadRules } from './audit/outcomes.js';

/**
 * Verifies an export: the chain, each record against its line, each epoch's
 * commitment against its revealed seed, every roll re-derived, every outcome
 * re-resolved, and its end against a given head and its trailer.
 */
export async function verifyExport(text, options = {}) {
  const exported = parseExportLines(text);
  const { lines } = exported;
  const stream = options.stream ?? lines[0].value.stream;
  // Progress: the chain pass is half the work, the rolls the other half.
  const audit = auditContext(stream, lines.length * 2, options.onProgress);

  await checkRecords(audit, lines);
  const decodedEvents = audit.events.filter((e) => e.decoded);
  const seeds = await collectSeeds(audit, decodedEvents);
  const signing = await checkSignatures(audit, seeds.commitments, options);
  const rolls = await checkRolls(audit, decodedEvents, seeds);
  checkRulings(audit, decodedEvents);
  const outcomes = await checkOutcomes(audit, lines, options);
  const end = await checkEnd(audit, exported, decodedEvents, seeds.commitments, options);
  audit.finish();

  return {
    ...verdictOf(audit, rolls, seeds.commitments),
    stream,
    headHash: lines[lines.length - 1].value.hash,
    events: audit.events,
    rolls,
    head: end.head,
    trailer: end.trailer,
    rollerKey: signing.rollerKey,
    rollerKeyStatus: signing.rollerKeyStatus,
    trustedKeys: signing.trusted,
    outcomes,
  };
}

/**
 * The problems in version order, each event's mark, and the status:
 * failed on any problem, unrevealed while a seed is secret, else verified.
 */
function verdictOf(audit, rolls, commitments) {
  const { problems, events } = audit;
  problems.sort((a, b) => a.version - b.version);
  const rollsByVersion = new Map(rolls.map((r) => [r.version, r]));
  for (const e of events) {
    if (e.problems.length > 0) e.check = 'bad';
    else if (rollsByVersion.get(e.version)?.check === 'unrevealed') e.check = 'unrevealed';
  }
  const commitmentList = [...commitments.values()].sort((a, b) => a.epoch - b.epoch);
  let status = 'verified';
  if (problems.length > 0) status = 'failed';
  else if (rolls.some((r) => r.check === 'unrevealed') || commitmentList.some((c) => c.check === 'unrevealed')) status = 'unrevealed';
  return { status, firstFailure: problems.length > 0 ? problems[0].version : null, commitments: commitmentList, problems };
}
