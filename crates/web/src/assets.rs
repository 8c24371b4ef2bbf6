//! What the pages carry inline: the independent JavaScript verifier
//! (`web/verifier/verify.js`), its DOM marking (`dom.js`) and each page's
//! own script, joined into one module script per page, and the style sheet.
//!
//! Inline, because a page saved to disk must keep working (`file://` loads
//! no module from another file); joined at start-up from the very files
//! the verifier's own tests run, so the browser runs what was tested. The
//! Content-Security-Policy admits exactly these scripts by their hashes.

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

const VERIFY_JS: &str = include_str!("../../../web/verifier/verify.js");
const DOM_JS: &str = include_str!("../../../web/verifier/dom.js");
const BATTLE_JS: &str = include_str!("../../../web/verifier/pages/battle.js");
const VERIFY_FILE_JS: &str = include_str!("../../../web/verifier/pages/verify-file.js");

/// The battle page's script: the verifier, the marking, the page's check.
pub static BATTLE_SCRIPT: LazyLock<String> = LazyLock::new(|| join_modules(&[VERIFY_JS, DOM_JS, BATTLE_JS]));
/// The /verify page's script.
pub static VERIFY_SCRIPT: LazyLock<String> = LazyLock::new(|| join_modules(&[VERIFY_JS, DOM_JS, VERIFY_FILE_JS]));

/// The header every page is served with: nothing loads from anywhere, and
/// only the two known scripts run.
pub static CONTENT_SECURITY_POLICY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src '{}' '{}'; style-src 'unsafe-inline'; img-src data:; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        script_hash(&BATTLE_SCRIPT),
        script_hash(&VERIFY_SCRIPT)
    )
});

/// ES modules as one: their `import` lines go (what they import is in the
/// same script now), their `export`s stay (harmless in a module script).
/// `</script` cannot occur in the sources: a test checks it.
fn join_modules(sources: &[&str]) -> String {
    let mut joined = String::new();
    for source in sources {
        for line in source.lines().filter(|line| !line.starts_with("import ")) {
            joined.push_str(line);
            joined.push('\n');
        }
    }
    joined
}

/// A CSP source for an inline script: `sha256-<base64>` of its text.
fn script_hash(script: &str) -> String {
    format!("sha256-{}", BASE64.encode(Sha256::digest(script.as_bytes())))
}

/// The pages' style sheet, inline for the same reason as the scripts.
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
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_scripts_cannot_end_their_script_element_early() {
        for script in [&*BATTLE_SCRIPT, &*VERIFY_SCRIPT] {
            assert!(!script.to_ascii_lowercase().contains("</script"));
            assert!(!script.lines().any(|line| line.starts_with("import ")));
            assert!(script.contains("export async function verifyExport"), "the verifier is inlined");
        }
    }

    #[test]
    fn the_policy_names_each_script_by_its_hash() {
        for script in [&*BATTLE_SCRIPT, &*VERIFY_SCRIPT] {
            assert!(CONTENT_SECURITY_POLICY.contains(&script_hash(script)));
        }
        assert!(
            !CONTENT_SECURITY_POLICY.split(';').any(|d| d.trim().starts_with("script-src") && d.contains("unsafe"))
        );
    }
}
