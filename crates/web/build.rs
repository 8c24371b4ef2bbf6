//! Lists the browser verifier's module files (web/verifier: the modules,
//! pages/, vendor/, rules/ — not its tests or Node tools) for
//! `assets.rs`, which serves them: every file is compiled into the binary
//! with `include_str!`, so the browser runs the very files the verifier's
//! Node tests run, and a file added there (a rules module) is served
//! without touching the Rust code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../../web/verifier").canonicalize().expect("web/verifier exists");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// (path under web/verifier, contents) of every file the browser may load.\npub static FILES: &[(&str, &str)] = &[\n",
    );
    for (relative, absolute) in &files {
        writeln!(out, "    ({relative:?}, include_str!({absolute:?})),").expect("writing to a String");
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("verifier_files.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// The `.js` files under `dir`, skipping what only Node runs.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let entries = std::fs::read_dir(dir).expect("web/verifier is readable");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "test" | "tools" | "node_modules") && !name.starts_with('.') {
                println!("cargo:rerun-if-changed={}", path.display());
                collect(root, &path, files);
            }
        } else if name.ends_with(".js") {
            let relative = path.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
            files.push((relative, path.to_string_lossy().into_owned()));
        }
    }
}
