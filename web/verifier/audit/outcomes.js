// Pass 3 of verifyExport: every outcome re-resolved under docs/rules.md by
// the rules engine (rules/index.js, its own module tree). Each version it
// checks comes back ok or not, and the first that is not fails the export
// there. The lines it gets hold the event as the record says, not as the
// line shows.

let rules; // the rules module once loaded; null when it is not there

/**
 * rules/index.js, loaded on first use (null when it cannot be: verifyExport
 * then fails the outcomes check, never passes or skips it).
 */
export async function loadRules() {
  if (rules === undefined) {
    try {
      rules = await import('../rules/index.js');
      if (typeof rules.checkOutcomes !== 'function') rules = null;
    } catch {
      rules = null;
    }
  }
  return rules;
}

/**
 * The outcomes checked ({ checked, bad }), or null when no rules engine
 * ran. `options.rules`: a rules module for tests and tools (null: none, the
 * caller's explicit choice). A rules engine that should be there and cannot
 * be loaded is a failure, not a skip: "verified" would then not cover the
 * outcomes the page shows.
 */
export async function checkOutcomes(audit, lines, options) {
  const rulesGiven = 'rules' in options;
  const engine = rulesGiven ? options.rules : await loadRules();
  const byVersion = new Map(audit.events.map((e) => [e.version, e]));
  if (!engine) {
    if (!rulesGiven) {
      audit.find(0, 'outcomes', 'the rules engine (rules/index.js) could not be loaded, so no outcome was re-resolved', audit.events.find((e) => e.version === 0) ?? null);
    }
    return null;
  }
  const checked = engine.checkOutcomes(
    lines.map(({ value }) => {
      const e = byVersion.get(value.version);
      return e && e.decoded ? { ...value, event: e.decoded.event } : value;
    }),
  );
  const outcomes = { checked: checked.length, bad: 0 };
  for (const result of checked) {
    if (result.ok) continue;
    outcomes.bad += 1;
    const detail = result.problem || `recorded ${JSON.stringify(result.recorded)}, the rules give ${JSON.stringify(result.expected)}`;
    audit.find(result.version, 'outcomes', `the outcome is not the one the rules give: ${detail}`, byVersion.get(result.version) ?? null);
  }
  return outcomes;
}
