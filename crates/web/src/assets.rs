//! What the pages carry inline: the independent JavaScript verifier
//! (`web/verifier/verify.js`), its DOM marking (`dom.js`) and each page's
//! own script, joined into one module script per page, and the style sheet.
//!
//! Inline, because a page saved to disk must keep working (`file://` loads
//! no module from another file); joined at start-up from the very files
//! the verifier's own tests run, so the browser runs what was tested. The
//! Content-Security-Policy admits exactly these scripts by their hashes.

use std::sync::LazyLock;

use maud::{Markup, PreEscaped, html};

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

/// The battle page's script element (what `page` puts at the end of the
/// body): how the verifier reaches the page is this module's business.
pub fn battle_script() -> Markup {
    html! { script type="module" { (PreEscaped(&*BATTLE_SCRIPT)) } }
}

/// The /verify page's script element.
pub fn verify_script() -> Markup {
    html! { script type="module" { (PreEscaped(&*VERIFY_SCRIPT)) } }
}

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
