// Pass 2c of verifyExport: a ruling that says which dispute it answers
// (`JudgeRuling.answers_dispute`, docs/rules.md §5.1) names a dispute raised
// earlier in this battle. The resolver refuses any other ruling, so one in
// an export was written past it; `battlelog audit` finds the same
// (crates/verify, `ruling`).

/** A finding for every ruling that answers something that is no dispute. */
export function checkRulings(audit, decodedEvents) {
  const disputes = new Set();
  for (const e of decodedEvents) {
    const ev = e.decoded.event;
    if (ev.type === 'DisputeRaised') disputes.add(e.version);
    const answers = ev.type === 'JudgeRuling' ? ev.answers_dispute : undefined;
    if (answers !== undefined && answers !== null && !disputes.has(answers)) {
      audit.find(e.version, 'ruling', `the ruling says it answers version ${answers}, which is no dispute raised before it in this battle`, e);
    }
  }
}
