//! How the browser verifier reaches the pages: its ES modules
//! (`web/verifier`: the verifier, the DOM marking, each page's own script,
//! the Web Worker, the vendored Ed25519, the rules engine) are compiled in
//! (`build.rs` lists them) and served as they are, from
//! `/assets/verifier/<build>/<path>`, so the browser runs exactly the files
//! the verifier's Node tests run. `<build>` is a hash of all of them: a
//! page never mixes modules of two versions, and each can be cached for
//! good. The pages' Content-Security-Policy admits scripts and the worker
//! from this origin only (`script-src 'self'; worker-src 'self'`), and the
//! live updates' EventSource (`connect-src 'self'`).
//!
//! Also the style sheet's neighbour: the script elements `page` and
//! `verify_page` put at the end of their bodies (`battle_script`,
//! `verify_script`), and the battle page's head (`battle_head_scripts`:
//! every module preloaded, and the script that starts the check at once).

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use maud::{Markup, PreEscaped, html};
use sha2::{Digest, Sha256, Sha384};

mod files {
    include!(concat!(env!("OUT_DIR"), "/verifier_files.rs"));
}
use files::FILES;

/// The hash of every served file (16 hex digits): the URL prefix.
pub static BUILD: LazyLock<String> = LazyLock::new(|| {
    let mut hash = Sha256::new();
    for (path, contents) in FILES {
        hash.update((path.len() as u64).to_be_bytes());
        hash.update(path.as_bytes());
        hash.update((contents.len() as u64).to_be_bytes());
        hash.update(contents.as_bytes());
    }
    hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
});

/// The header every page is served with: scripts, the worker and
/// connections from this origin only, and the one inline script by its
/// hash (the battle page's first step, [`battle_head_scripts`]); nothing
/// else loads from anywhere.
pub static CONTENT_SECURITY_POLICY: LazyLock<String> = LazyLock::new(|| {
    let boot = file(BATTLE_BOOT).expect("the page entries are compiled in");
    let hash = format!("'sha256-{}'", BASE64.encode(Sha256::digest(boot.as_bytes())));
    POLICY.replacen("script-src 'self'", &format!("script-src 'self' {hash}"), 1)
});

const POLICY: &str = "default-src 'none'; script-src 'self'; worker-src 'self'; connect-src 'self'; \
     style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const BATTLE_ENTRY: &str = "pages/battle.js";
/// The battle page's first script, a classic one inline in its head (no
/// request to wait for; the policy admits it by its hash): it starts the
/// worker and the check as soon as the head is read.
const BATTLE_BOOT: &str = "pages/battle-boot.js";
/// The battle page's first module, in its head: it takes the check over.
const BATTLE_START: &str = "pages/battle-start.js";
const VERIFY_ENTRY: &str = "pages/verify-file.js";

/// The URL of a verifier file.
pub fn url(path: &str) -> String {
    format!("/assets/verifier/{}/{path}", *BUILD)
}

fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, contents)| *contents)
}

/// A module script element for an entry, with its Subresource Integrity
/// hash (the entry itself is pinned; the modules it imports are pinned by
/// the build hash in their URL and the policy's 'self').
fn module_script(entry: &str) -> Markup {
    html! { script type="module" src=(url(entry)) integrity=(integrity(entry)) {} }
}

/// The battle page's script element (what `page` puts at the end of the body).
pub fn battle_script() -> Markup {
    module_script(BATTLE_ENTRY)
}

/// What the battle page's head loads (issue 39): a `modulepreload` of every
/// module the page and its worker run, so that the browser asks for them
/// all at once as the head arrives rather than one import at a time; the
/// classic script, inline, that starts the worker and its check at once (a
/// module script, even `async`, runs only when the page's parse lets it),
/// told the worker's URL; and the module that takes the check over (with
/// its Subresource Integrity hash), `async` so that it runs as soon as the
/// page lets it, while the rest of the page is still arriving.
pub fn battle_head_scripts() -> Markup {
    html! {
        script data-worker=(url("worker.js")) { (PreEscaped(file(BATTLE_BOOT).expect("the page entries are compiled in"))) }
        @for path in BATTLE_MODULES.iter() {
            link rel="modulepreload" href=(url(path));
        }
        script type="module" async src=(url(BATTLE_START)) integrity=(integrity(BATTLE_START)) {}
    }
}

/// A page entry's Subresource Integrity value.
fn integrity(entry: &str) -> String {
    let contents = file(entry).expect("the page entries are compiled in");
    format!("sha384-{}", BASE64.encode(Sha384::digest(contents.as_bytes())))
}

/// The modules the battle page's own thread loads before it runs: its two
/// module scripts and everything they import statically, the modules each
/// imports before itself, found in the files themselves (a module added is
/// preloaded without a list to keep). Not the worker's: the head's worker
/// asks for those itself as it starts, and the page loads the verifier
/// (an `import()`) only where no worker starts.
static BATTLE_MODULES: LazyLock<Vec<&'static str>> = LazyLock::new(|| module_graph(&[BATTLE_START, BATTLE_ENTRY]));

/// `roots` and every module they import statically, each once, in
/// depth-first order (imports before their importer).
fn module_graph(roots: &[&str]) -> Vec<&'static str> {
    fn visit(path: &'static str, seen: &mut Vec<&'static str>, order: &mut Vec<&'static str>) {
        if seen.contains(&path) {
            return;
        }
        seen.push(path);
        for import in imports(path) {
            visit(import, seen, order);
        }
        order.push(path);
    }
    let (mut seen, mut order) = (Vec::new(), Vec::new());
    for root in roots {
        if let Some((path, _)) = FILES.iter().find(|(p, _)| p == root) {
            visit(path, &mut seen, &mut order);
        }
    }
    order
}

/// The served files `path` imports statically: each `from '…'` and
/// `import '…'` naming a relative path (a bare name, or a path in a
/// comment that names no served file, is left out).
fn imports(path: &str) -> Vec<&'static str> {
    let Some(contents) = file(path) else { return Vec::new() };
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut found = Vec::new();
    for marker in ["from '", "from \"", "import '", "import \""] {
        let quote = &marker[marker.len() - 1..];
        for (at, _) in contents.match_indices(marker) {
            let rest = &contents[at + marker.len()..];
            let Some(target) = rest.split(quote).next().filter(|t| t.starts_with('.')) else { continue };
            if let Some((served, _)) = FILES.iter().find(|(p, _)| *p == resolve(dir, target))
                && !found.contains(served)
            {
                found.push(*served);
            }
        }
    }
    found
}

/// `target` (`./x.js`, `../y/z.js`) from a module in `dir`, as a path under web/verifier.
fn resolve(dir: &str, target: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in target.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The /verify page's script element.
pub fn verify_script() -> Markup {
    module_script(VERIFY_ENTRY)
}

/// `/assets/verifier/<build>/<path>`: the verifier's files. Merge it into
/// the app outside the pages' `no-store` layer: these responses carry their
/// own headers (cached for good, same policy).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route("/assets/verifier/{build}/{*path}", get(serve))
}

async fn serve(Path((build, path)): Path<(String, String)>) -> Response {
    let Some(contents) = file(&path).filter(|_| build == *BUILD) else {
        return (
            StatusCode::NOT_FOUND,
            [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
            "no such file\n",
        )
            .into_response();
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8")),
            // The build hash is in the URL: these bytes never change under it.
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable")),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            // A worker runs under the policy its script comes with.
            (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY)),
        ],
        contents,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get(path: &str) -> Response {
        routes::<()>().oneshot(Request::get(path).body(Body::empty()).expect("a request")).await.expect("infallible")
    }

    #[test]
    fn the_modules_of_the_verifier_are_compiled_in_and_not_its_tests() {
        for path in [
            "verify.js",
            "audit.js",
            "dom.js",
            "worker.js",
            "client.js",
            BATTLE_ENTRY,
            VERIFY_ENTRY,
            "vendor/noble-ed25519/index.js",
        ] {
            assert!(file(path).is_some(), "{path}");
        }
        assert!(FILES.iter().all(|(p, _)| !p.starts_with("test/") && !p.starts_with("tools/")));
        assert!(file("verify.js").is_some_and(|f| f.contains("export { ExportFormatError, verifyExport }")));
    }

    #[tokio::test]
    async fn a_module_is_served_as_javascript_cached_for_good_under_its_build() {
        let response = get(&url("audit.js")).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert!(response.headers()[header::CACHE_CONTROL].to_str().is_ok_and(|c| c.contains("immutable")));
        assert_eq!(response.headers()[header::CONTENT_SECURITY_POLICY], POLICY);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a body");
        assert_eq!(body, file("audit.js").expect("compiled in").as_bytes());
    }

    #[tokio::test]
    async fn another_build_or_a_file_not_served_is_not_found() {
        for path in [
            "/assets/verifier/0000000000000000/audit.js".to_owned(),
            url("test/dom.test.mjs"),
            url("tools/tamper.mjs"),
            url("../Cargo.toml"),
            url("README.md"),
        ] {
            assert_eq!(get(&path).await.status(), StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn the_battle_page_preloads_the_modules_its_own_thread_imports_and_not_the_workers() {
        let preloaded: Vec<&str> = BATTLE_MODULES.to_vec();
        // Imported by name, and by an import of an import.
        for path in [
            "pages/battle.js",
            "pages/battle-start.js",
            "pages/inputs.js",
            "pages/draw.js",
            "dom.js",
            "client.js",
            "verdict.js",
            "fetch-export.js",
        ] {
            assert!(preloaded.contains(&path), "{path} in {preloaded:?}");
        }
        // The worker's: it asks for them itself as it starts (the head's
        // script starts it), and the page loads the verifier only where no
        // worker starts (an `import()`, not followed).
        for path in [
            "worker.js",
            "audit.js",
            "verify.js",
            "rules/index.js",
            "vendor/noble-hashes/sha2.js",
            "pages/battle-boot.js",
            "pages/verify-file.js",
        ] {
            assert!(!preloaded.contains(&path), "{path} not in {preloaded:?}");
        }
        let position = |path: &str| preloaded.iter().position(|p| *p == path);
        assert!(position("verdict.js") < position("pages/inputs.js"), "an import before its importer");
        let head = battle_head_scripts().into_string();
        assert_eq!(head.matches("rel=\"modulepreload\"").count(), preloaded.len(), "{head}");
        assert!(
            head.contains(&format!("<script type=\"module\" async src=\"{}\" integrity=\"sha384-", url(BATTLE_START)))
        );
    }

    #[test]
    fn the_inline_first_step_is_first_and_admitted_by_its_hash_alone() {
        let head = battle_head_scripts().into_string();
        let boot = file(BATTLE_BOOT).expect("compiled in");
        let inline = format!("<script data-worker=\"{}\">{boot}</script>", url("worker.js"));
        assert!(head.starts_with(&inline), "the first element of the scripts: {head:.300}");
        let hash = format!("'sha256-{}'", BASE64.encode(Sha256::digest(boot.as_bytes())));
        let script_src = CONTENT_SECURITY_POLICY.split(';').map(str::trim).find(|d| d.starts_with("script-src"));
        assert_eq!(script_src, Some(format!("script-src 'self' {hash}").as_str()));
        // Any other inline script (one byte changed) is not admitted.
        let other = format!("'sha256-{}'", BASE64.encode(Sha256::digest(format!("{boot} ").as_bytes())));
        assert!(!CONTENT_SECURITY_POLICY.contains(&other));
    }

    #[test]
    fn an_import_is_resolved_from_its_module() {
        assert_eq!(resolve("pages", "../dom.js"), "dom.js");
        assert_eq!(resolve("pages", "./draw.js"), "pages/draw.js");
        assert_eq!(resolve("", "./rules/index.js"), "rules/index.js");
        assert_eq!(resolve("vendor/noble-hashes", "./_md.js"), "vendor/noble-hashes/_md.js");
    }

    #[test]
    fn the_scripts_are_modules_from_this_origin_pinned_by_integrity() {
        let battle = battle_script().into_string();
        assert!(battle.contains(&format!("src=\"{}\"", url(BATTLE_ENTRY))), "{battle}");
        assert!(battle.contains("integrity=\"sha384-"), "{battle}");
        assert!(verify_script().into_string().contains(&url(VERIFY_ENTRY)));
        for directive in ["script-src 'self' 'sha256-", "worker-src 'self'", "connect-src 'self'"] {
            assert!(CONTENT_SECURITY_POLICY.split(';').any(|d| d.trim().starts_with(directive)), "{directive}");
        }
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-eval"));
        assert!(
            !CONTENT_SECURITY_POLICY.split(';').any(|d| d.trim().starts_with("script-src") && d.contains("unsafe"))
        );
    }
}
