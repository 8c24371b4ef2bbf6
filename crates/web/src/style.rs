//! The pages' style sheet, inline in each page (one request less),
//! admitted by the Content-Security-Policy's
//! `style-src 'unsafe-inline'`.
//!
//! Colours are variables on `:root`, set again for a dark scheme: each
//! status colour keeps a WCAG AA contrast (≥ 4.5:1) against its scheme's
//! background (a test computes them). Nothing may scroll the page
//! sideways on a 320 px phone: long hashes break anywhere, tables scroll
//! inside their own `.scroll-box`. Ok/bad is an icon and a word, never a
//! colour alone.

/// The style sheet every page carries in its `<style>` element.
pub const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --ok: #1a7f37; --bad: #cf222e; --wait: #8a5c00; --muted: #59636e; --link: #0550ae; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --ok: #3fb950; --bad: #ff7b72; --wait: #d29922; --muted: #9198a1; --link: #58a6ff; }
}
*, *::before, *::after { box-sizing: border-box; }
html { background: var(--bg); color: var(--fg); }
body { font: 16px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 0 auto; padding: 1rem; background: var(--bg); color: var(--fg); overflow-wrap: anywhere; }
a { color: var(--link); }
main { display: block; min-width: 0; }
.skip-link { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .4rem .8rem; z-index: 1; }
.skip-link:focus { left: 1rem; }
/* WCAG 2.2 focus appearance: a 2px ring in the link colour (AA on both
   schemes' backgrounds), offset so that it never hides what it rings. */
:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; }
#timeline-section:focus, ol.timeline:focus { outline: none; }
.field.check { flex-direction: row; align-items: center; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
header nav { display: flex; gap: .4rem 1rem; flex-wrap: wrap; font-size: .9rem; }
h1 { margin: .5rem 0; }
h3 { margin: .1rem 0; font-size: 1rem; }
h4 { margin: .1rem 0; font-size: .95rem; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; min-width: 0; }
@media (max-width: 36rem) { dl.facts { grid-template-columns: minmax(0, 1fr); } dl.facts dd { margin-left: .8rem; } }
code, .hash { font-family: ui-monospace, monospace; font-size: .85em; word-break: break-all; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 100%; }
input, select, button { max-width: 100%; font: inherit; }
.field { display: flex; flex-direction: column; gap: .2rem; margin: .4rem 0; }
.field input[type="text"] { width: 100%; font-family: ui-monospace, monospace; }
.scroll-box { max-width: 100%; overflow-x: auto; }
.notice { border: 2px solid var(--wait); padding: .4rem .8rem; }
/* The verdict banner (issue 39): an icon and a word, the border's colour
   only adds; amber for what is consistent but not vouched for. */
#verdict { border: 3px solid var(--muted); border-radius: .4rem; padding: .4rem .8rem; margin: .6rem 0; }
#verdict-headline { font-weight: 700; font-size: 1.1rem; margin: .2rem 0; }
#verdict-why { margin: .2rem 0; } #verdict-why:empty { display: none; }
#verdict[data-verdict="verified"] { border-color: var(--ok); }
#verdict[data-verdict="verified"] #verdict-headline::before { content: "✓ "; color: var(--ok); }
#verdict:is([data-verdict="failed"], [data-verdict="not-an-export"], [data-verdict="key-mismatch"], [data-verdict="cut-short"]) { border-color: var(--bad); }
#verdict:is([data-verdict="failed"], [data-verdict="not-an-export"], [data-verdict="key-mismatch"], [data-verdict="cut-short"]) #verdict-headline::before { content: "✗ "; color: var(--bad); }
#verdict:is([data-verdict="verified-unpinned"], [data-verdict="unrevealed"], [data-verdict="input-error"]) { border-color: var(--wait); }
#verdict:is([data-verdict="verified-unpinned"], [data-verdict="unrevealed"], [data-verdict="input-error"]) #verdict-headline::before { content: "⚠ "; color: var(--wait); }
/* The disputes panel (issue 39): an open dispute stands out by its word
   and an amber edge; an answered one links its ruling. */
#disputes { border: 2px solid var(--muted); border-radius: .4rem; padding: .2rem .8rem; margin: .6rem 0; }
#disputes h2 { font-size: 1.1rem; margin: .3rem 0; }
ul.dispute-list { list-style: none; padding: 0; margin: .2rem 0; }
li.dispute { border-left: 4px solid var(--muted); padding: .2rem .6rem; margin: .3rem 0; }
li.dispute[data-status="open"] { border-left-color: var(--wait); }
li.dispute[data-status="open"] .dispute-status { color: var(--wait); }
li.dispute[data-status="answered"] { border-left-color: var(--ok); }
.dispute-answer[data-status="open"] { color: var(--wait); }
/* A ruling followed through: the action it reaches says so where it is read. */
.affected-note { border: 2px solid var(--wait); border-radius: .3rem; padding: .2rem .6rem; margin: .3rem 0; }
.affected-note ul { margin: .2rem 0; padding-left: 1.2rem; } ins.again { text-decoration: none; font-weight: 700; }
.ruling-effect { margin: .3rem 0; }
.field-error { color: var(--bad); font-weight: 600; }
#first-failure:empty, #first-failure:empty + * { display: none; }
ul#checks { list-style: none; padding: 0; }
ul#checks li[data-check="ok"]::before { content: "✓ "; color: var(--ok); }
ul#checks li[data-check="bad"]::before { content: "✗ "; color: var(--bad); }
ul#checks li[data-check="skipped"]::before { content: "– "; color: var(--muted); }
body[data-roller-key="mismatch"] #roller-key-status { color: var(--bad); font-weight: 600; }
body[data-roller-key="pinned"] #roller-key-status { color: var(--ok); }
form#search { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: flex-end; }
form#search h3 { flex-basis: 100%; }
form#search .field { margin: 0; }
.pager { display: flex; flex-wrap: wrap; gap: .4rem 1rem; margin: .6rem 0; }
ol.timeline { list-style: none; padding: 0; }
ol.timeline > li { border-left: 4px solid var(--muted); padding: .4rem .8rem; margin: .6rem 0; min-width: 0; }
.event.nested { border-left: 3px solid var(--muted); padding: .2rem .6rem; margin: .4rem 0; }
.event[data-check="ok"] { border-left-color: var(--ok); }
.event[data-check="bad"] { border-left-color: var(--bad); }
.event[data-check="unrevealed"] { border-left-color: var(--wait); }
.event[data-check="ok"] > :is(h3, h4) .event-title::before { content: "✓ "; color: var(--ok); }
.event[data-check="bad"] > :is(h3, h4) .event-title::before { content: "✗ "; color: var(--bad); }
.event[data-check="unrevealed"] > :is(h3, h4) .event-title::before { content: "🔒 "; }
.event:target { outline: 2px solid Highlight; }
.event-title { font-weight: 600; } a.permalink { color: var(--muted); font-size: .85em; margin-left: .5rem; }
.after-close { color: var(--wait); }
.final-outcome { border: 1px solid var(--muted); padding: .2rem .6rem; margin: .3rem 0; }
.final-outcome ul { margin: .2rem 0; padding-left: 1.2rem; }
del.recorded { color: var(--muted); } ins.final { text-decoration: none; font-weight: 700; }
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
table.changes { border-collapse: collapse; margin: .3rem 0; max-width: 100%; }
table.changes td, table.changes th { border: 1px solid var(--muted); padding: .15rem .5rem; text-align: left; }
table.changes caption { text-align: left; font-weight: 600; }
table.changes th { overflow-wrap: normal; }
.muted { color: var(--muted); font-size: .9em; }
#drop-zone { border: 2px dashed var(--muted); padding: 2rem 1rem; text-align: center; margin: 1rem 0; }
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
/* Why a result is what it is (explain.rs): the sums and rows read as
   lines; the state panel and the calculation wrap on a phone. */
section.explanation { margin: .3rem 0; padding: .3rem .6rem; border-left: 2px solid var(--muted); }
section.explanation ul, .state-panel ul { margin: .2rem 0; padding-left: 1.2rem; }
.state-panel table, .calculation table, table.fields { border-collapse: collapse; max-width: 100%; }
.state-panel td, .state-panel th, .calculation td, .calculation th, table.fields td, table.fields th {
  border: 1px solid var(--muted); padding: .1rem .4rem; text-align: left; overflow-wrap: anywhere; }
.calculation .mismatch { color: var(--bad); font-weight: 600; }
.calculation code, .key-hex { overflow-wrap: anywhere; word-break: break-all; }
/* The words table keeps its words and numbers whole: on a phone it scrolls
   inside its .scroll-box instead of breaking "rejected" into "rejec/ted". */
.calculation table.words td, .calculation table.words th, .calculation table.words code { overflow-wrap: normal; word-break: normal; white-space: nowrap; }
dl.sheet-fields { margin: 0; display: grid; grid-template-columns: max-content auto; gap: 0 .5rem; }
dl.sheet-fields dd { margin: 0; }
ul.sheet-list { margin: 0; padding-left: 1.1rem; }
"#;

#[cfg(test)]
mod tests {
    use super::STYLE;

    /// The `--name: #rrggbb` variables of the first rule block after
    /// `marker` in the style sheet.
    fn variables(marker: &str) -> Vec<(String, [u8; 3])> {
        let from = STYLE.find(marker).expect(marker);
        let block = &STYLE[from..];
        let block = &block[block.find(":root {").expect(":root") + ":root {".len()..];
        let block = &block[..block.find('}').expect("}")];
        block
            .split(';')
            .filter_map(|decl| {
                let (name, value) = decl.split_once(':')?;
                let name = name.trim().strip_prefix("--")?;
                let hex = value.trim().strip_prefix('#')?;
                let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
                Some((name.to_owned(), [byte(0)?, byte(2)?, byte(4)?]))
            })
            .collect()
    }

    /// WCAG 2.x relative luminance and contrast ratio.
    fn luminance([r, g, b]: [u8; 3]) -> f64 {
        let channel = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.03928 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    }

    fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
        let (la, lb) = (luminance(a), luminance(b));
        (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
    }

    #[test]
    fn the_contrast_formula_gives_the_known_ratios() {
        // WCAG's extremes, and a grey whose ratio on white is documented
        // as 4.54:1 (#767676, the lightest AA grey on white).
        assert!((contrast([0, 0, 0], [255, 255, 255]) - 21.0).abs() < 1e-9);
        assert!((contrast([0x76; 3], [255; 3]) - 4.54).abs() < 0.01);
    }

    #[test]
    fn every_status_colour_reaches_aa_on_its_background_light_and_dark() {
        for scheme in [":root {", "@media (prefers-color-scheme: dark)"] {
            let vars = variables(scheme);
            let get =
                |name: &str| vars.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{scheme}: --{name}")).1;
            let bg = get("bg");
            for colour in ["fg", "ok", "bad", "wait", "muted", "link"] {
                let ratio = contrast(get(colour), bg);
                assert!(ratio >= 4.5, "{scheme} --{colour} on --bg: {ratio:.2}:1 < 4.5:1");
            }
        }
    }

    #[test]
    fn the_dark_scheme_sets_every_colour_the_light_one_does() {
        let light: Vec<String> = variables(":root {").into_iter().map(|(n, _)| n).collect();
        let dark: Vec<String> = variables("@media (prefers-color-scheme: dark)").into_iter().map(|(n, _)| n).collect();
        assert_eq!(light, dark);
        assert!(light.len() >= 6, "{light:?}");
    }
}
