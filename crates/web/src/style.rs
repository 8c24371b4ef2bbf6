//! The pages' style sheet, inline like the scripts (a page saved to disk
//! keeps its look), admitted by the Content-Security-Policy's
//! `style-src 'unsafe-inline'`.

/// The style sheet every page carries in its `<style>` element.
pub const STYLE: &str = r#"
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --wait: #9a6700; --muted: #6e7781; }
body { font: 16px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 0 auto; padding: 1rem; }
header nav { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .9rem; }
h1 { margin: .5rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.facts dt { font-weight: 600; }
code, .hash { font-family: ui-monospace, monospace; font-size: .85em; word-break: break-all; }
.verdict span { display: none; font-weight: 600; }
body[data-audit="pending"] .verdict .pending,
body[data-audit="verified"] .verdict .verified,
body[data-audit="failed"] .verdict .failed,
body[data-audit="unrevealed"] .verdict .unrevealed { display: inline; }
.verdict .verified { color: var(--ok); } .verdict .failed { color: var(--bad); }
.verdict .pending, .verdict .unrevealed { color: var(--wait); }
#first-failure:empty, #first-failure:empty + * { display: none; }
ol.timeline { list-style: none; padding: 0; }
ol.timeline > li { border-left: 4px solid var(--muted); padding: .4rem .8rem; margin: .6rem 0; }
li.event[data-check="ok"] { border-left-color: var(--ok); }
li.event[data-check="bad"] { border-left-color: var(--bad); background: color-mix(in srgb, var(--bad) 8%, transparent); }
li.event[data-check="unrevealed"] { border-left-color: var(--wait); }
li.event:target { outline: 2px solid Highlight; }
.event-title { font-weight: 600; } a.permalink { color: var(--muted); font-size: .85em; margin-left: .5rem; }
.roll { display: flex; align-items: center; gap: .4rem; flex-wrap: wrap; margin: .3rem 0; }
.roll .check::before { content: "…"; }
.roll[data-check="ok"] .check::before { content: "✓"; color: var(--ok); }
.roll[data-check="bad"] .check::before { content: "✗"; color: var(--bad); }
.roll[data-check="unrevealed"] .check::before { content: "🔒"; }
svg.die { width: 2.2em; height: 2.2em; }
svg.die .face { fill: Canvas; stroke: CanvasText; stroke-width: 2; }
svg.die .pip { fill: CanvasText; } svg.die .value { fill: CanvasText; font-weight: 700; }
svg.die.dropped { opacity: .35; } svg.die .strike { stroke: var(--bad); stroke-width: 3; }
svg.die.rerolled .face { stroke-dasharray: 4 3; }
svg.die.exploded .face { stroke: #bf8700; stroke-width: 3.5; } svg.die .star { fill: #bf8700; }
table.changes { border-collapse: collapse; margin: .3rem 0; }
table.changes td, table.changes th { border: 1px solid var(--muted); padding: .15rem .5rem; text-align: left; }
.muted { color: var(--muted); font-size: .9em; }
#drop-zone { border: 2px dashed var(--muted); padding: 2rem; text-align: center; margin: 1rem 0; }
#drop-zone.over { border-color: Highlight; }
ul.problems { color: var(--bad); }
/* A roll's dice by term (dice.rs): marks are signs and shapes, colour only adds. */
.roll .expr { display: inline-flex; flex-wrap: wrap; align-items: center; gap: .35rem; max-width: 100%; }
.roll .term { display: inline-flex; flex-wrap: wrap; align-items: center; gap: .25rem; max-width: 100%;
  border: 1px solid color-mix(in srgb, CanvasText 25%, transparent); border-radius: .5rem; padding: .15rem .4rem; }
.roll .term-name { font-family: ui-monospace, monospace; font-size: .8em; color: var(--muted); }
.roll .op, .roll .paren { font-weight: 700; font-size: 1.15em; }
.roll .constant { font-weight: 700; }
.roll .subtotal { font-size: .9em; white-space: nowrap; }
.roll .explosion-arrow { color: #bf8700; font-weight: 700; margin: 0 -.15rem; }
.roll .roll-error { font-weight: 600; }
svg.die.wide { width: auto; }
svg.die.rerolled { opacity: .45; }
svg.die .star { stroke: Canvas; stroke-width: 3px; paint-order: stroke; }
.roll .die-mark { font-weight: 700; margin-left: -.2rem; }
svg.die.dropped { opacity: .5; }
svg.die.success .face { stroke-width: 3.5; }
"#;
