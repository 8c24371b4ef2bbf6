//! DESIGN.md invariant 7 and the layout's rule: `dice` and `rules` are pure —
//! no I/O, no clock, no randomness of their own. This reads their sources
//! and manifests, and asks cargo for their resolved dependencies, so a
//! change that brings any of it in fails here: a path written out
//! (`std::fs::read`), an import in any form (`use std::{fs, io}`,
//! `use std::fs as f`, a glob, `std` renamed), or a dependency in any table
//! of the manifest or anywhere below it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Modules of `std` a pure crate must never reach: files, sockets,
/// processes, the environment, threads, the clock and the OS.
const FORBIDDEN_MODULES: &[&str] =
    &["std::fs", "std::net", "std::process", "std::env", "std::thread", "std::time", "std::os"];

/// Items elsewhere that mean I/O, the clock or randomness of its own (other
/// than the roll's ChaCha20 stream).
const FORBIDDEN_ITEMS: &[&str] = &[
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "SystemTime",
    "Instant::now",
    "stdin()",
    "stdout()",
    "stderr()",
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
    "tokio",
    "thread_rng",
    "OsRng",
    "getrandom",
    "from_entropy",
    "rand::random",
];

/// Packages a pure crate may not depend on, directly or not: async
/// runtimes, networking, storage, the clock and OS randomness.
fn impure_package(name: &str) -> bool {
    const EXACT: &[&str] =
        &["getrandom", "rand", "sled", "async-nats", "reqwest", "mio", "socket2", "chrono", "tempfile"];
    const PREFIXES: &[&str] = &["tokio", "tonic", "hyper", "tower"];
    EXACT.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn crate_dir(name: &str) -> PathBuf {
    workspace_dir().join("crates").join(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments and without the contents of its
/// string and character literals: a comment or a message naming `std::fs`
/// is no I/O, and a `//` inside a string must not hide the rest of a line.
/// Test modules count too, so that nothing hides behind one.
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            code.push(' ');
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !is_ident(chars.get(i.wrapping_sub(1))) {
            // A raw string r"…" or r#"…"#: it ends at a quote followed by as
            // many hashes as it opened with.
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                code.push(c);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len() && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&h| h == '#')) {
                i += 1;
            }
            i += 1 + hashes;
            code.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            code.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime has no
            // closing quote and stays code.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            code.push_str("' '");
        } else {
            code.push(c);
            i += 1;
        }
    }
    // `std :: fs` is `std::fs`.
    let mut normalized = code;
    while normalized.contains(" ::") || normalized.contains(":: ") || normalized.contains("\n::") {
        normalized = normalized.replace(" ::", "::").replace(":: ", "::").replace("\n::", "::");
    }
    normalized
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Every path a `use` declaration brings in, its braces expanded:
/// `use std::{fs, io::{self, Read}};` gives `std::fs`, `std::io::self`,
/// `std::io::Read`. An alias stays on its path (`std::fs as f`).
fn use_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + 4..];
        if is_ident(before.as_ref()) {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        let tree: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        expand("", tree.trim().trim_start_matches("::"), &mut paths);
        rest = &rest[end..];
    }
    paths
}

fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let join = |item: &str| if prefix.is_empty() { item.to_owned() } else { format!("{prefix}::{item}") };
    match tree.find('{') {
        None => out.push(join(tree.trim())),
        Some(open) => {
            let head = tree[..open].trim().trim_end_matches("::");
            let inner = &tree[open + 1..tree.rfind('}').expect("a closing brace in a use tree")];
            let prefix = if head.is_empty() { prefix.to_owned() } else { join(head) };
            // Split on the commas at the top level of the braces.
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand_item(&prefix, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand_item(&prefix, &inner[start..], out);
        }
    }
}

fn expand_item(prefix: &str, item: &str, out: &mut Vec<String>) {
    if !item.trim().is_empty() {
        expand(prefix, item.trim(), out);
    }
}

/// What in `code` makes it impure, if anything.
fn impurities(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for path in use_paths(code) {
        let bare = path.split(" as ").next().unwrap_or_default().trim();
        let bare = bare.strip_suffix("::self").unwrap_or(bare);
        let reaches = |module: &str| bare == module || bare.starts_with(&format!("{module}::"));
        if FORBIDDEN_MODULES.iter().any(|module| reaches(module)) || FORBIDDEN_ITEMS.iter().any(|item| reaches(item)) {
            found.push(format!("use {path}"));
        }
        // `std` itself renamed, or all of it glob-imported, hides every path.
        if (bare == "std" && path.contains(" as ")) || bare == "std::*" {
            found.push(format!("use {path}"));
        }
    }
    for word in FORBIDDEN_MODULES.iter().chain(FORBIDDEN_ITEMS) {
        if code.contains(word) {
            found.push((*word).to_owned());
        }
    }
    if code.contains("extern crate std as") {
        found.push("extern crate std as …".to_owned());
    }
    found
}

/// The packages a manifest depends on for its library and build script, in
/// every table that can hold them: `[dependencies]`, `[build-dependencies]`,
/// `[target.'…'.dependencies]` and `[target.'…'.build-dependencies]`, also
/// written as `[dependencies.name]` or dotted keys. Renames (`package = …`)
/// are resolved, through `[workspace.dependencies]` too. Dev-dependencies
/// are left out: tests and benches may do I/O; the library cannot use them.
fn runtime_dependencies(manifest: &toml::Table, workspace: &toml::Table) -> Vec<String> {
    let mut tables: Vec<&toml::Table> = Vec::new();
    for key in ["dependencies", "build-dependencies"] {
        tables.extend(manifest.get(key).and_then(toml::Value::as_table));
    }
    for target in manifest.get("target").and_then(toml::Value::as_table).into_iter().flat_map(|t| t.values()) {
        for key in ["dependencies", "build-dependencies"] {
            tables.extend(target.get(key).and_then(toml::Value::as_table));
        }
    }
    let shared = workspace
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
        .expect("[workspace.dependencies]");
    let mut names = Vec::new();
    for table in tables {
        for (name, spec) in table {
            let renamed = |spec: &toml::Value| spec.get("package").and_then(toml::Value::as_str).map(str::to_owned);
            let from_workspace = || shared.get(name).and_then(renamed);
            let is_workspace = spec.get("workspace").and_then(toml::Value::as_bool) == Some(true);
            let package = renamed(spec).or_else(|| is_workspace.then(from_workspace).flatten());
            names.push(package.unwrap_or_else(|| name.clone()));
        }
    }
    names
}

/// Every package in the crate's resolved graph of normal and build
/// dependencies, as `cargo tree` reports it (features as this crate alone
/// turns them on).
fn resolved_dependencies(package: &str) -> Vec<String> {
    // The cargo running the tests, else the one that built them, else PATH's.
    let cargo = std::env::var_os("CARGO").or_else(|| option_env!("CARGO").map(Into::into)).unwrap_or("cargo".into());
    let output = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-e", "normal,build", "--prefix", "none", "-p", package])
        .current_dir(workspace_dir())
        .output()
        .expect("run cargo tree");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    let names: Vec<String> =
        stdout.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect();
    assert!(names.iter().any(|n| n == package), "cargo tree lists {package} itself:\n{stdout}");
    names
}

fn assert_pure(name: &str, package: &str) {
    let dir = crate_dir(name);
    let mut files = Vec::new();
    rust_files(&dir.join("src"), &mut files);
    assert!(files.len() > 3, "{name}: found no sources under {}", dir.display());
    for file in files {
        let code = code_of(&std::fs::read_to_string(&file).expect("read source"));
        let found = impurities(&code);
        assert!(found.is_empty(), "{name} must stay pure, but {} has {found:?}", file.display());
    }

    let read = |path: PathBuf| -> toml::Table {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let manifest = read(dir.join("Cargo.toml"));
    let workspace = read(workspace_dir().join("Cargo.toml"));
    let direct = runtime_dependencies(&manifest, &workspace);
    assert!(!direct.is_empty(), "{name}: found no dependencies in its manifest");
    let impure: Vec<&String> = direct.iter().filter(|d| impure_package(d)).collect();
    assert!(impure.is_empty(), "{name} must stay pure, but its manifest depends on {impure:?}");
    let resolved = resolved_dependencies(package);
    let impure: Vec<&String> = resolved.iter().filter(|d| impure_package(d)).collect();
    assert!(impure.is_empty(), "{name} must stay pure, but it depends on {impure:?} (through its dependencies)");
}

#[test]
fn the_dice_crate_is_pure() {
    assert_pure("dice", "battlelog-dice");
}

#[test]
fn the_rules_crate_is_pure() {
    assert_pure("rules", "battlelog-rules");
}

/// The checks themselves, on what they must catch and what they must let by.
#[test]
fn the_checks_catch_every_form_and_nothing_else() {
    let impure = [
        "use std::fs;",
        "use std::{fs, io};",
        "use std::{collections::HashMap, fs::File};",
        "use std::{\n    fmt,\n    net::{TcpStream, UdpSocket},\n};",
        "use std::fs as files;",
        "use std::{env as e};",
        "use ::std::process::Command;",
        "use std :: fs;",
        "use std::io::{self, stdin};",
        "use std as s;",
        "use std::*;",
        "pub(crate) use std::time::Instant;",
        "fn f() { let _ = std::fs::read(\"x\"); }",
        "fn f() { let _ = std::time::SystemTime::now(); }",
        "fn f() { let x = \"//\"; std::fs::remove_file(x); }",
        "fn f() { let _ = r#\"a \" b\"#; std::env::var(\"A\"); }",
        "fn f<'a>(x: &'a str) { std::thread::spawn(|| {}); }",
        "extern crate std as s;",
    ];
    for code in impure {
        assert!(!impurities(&code_of(code)).is_empty(), "must be caught: {code}");
    }
    let pure = [
        "use std::{collections::BTreeMap, fmt, sync::Arc};",
        "use std::fmt::{self, Display};",
        "// use std::fs;\nuse std::cmp::Ordering;",
        "/* std::fs /* nested */ std::net */ fn f() {}",
        "fn f() -> &'static str { \"std::fs is not used here\" }",
        "fn f() -> char { '\\'' }",
        "fn f<'a>(x: &'a str) -> &'a str { x }",
        "use rand_core::{Rng, SeedableRng};",
    ];
    for code in pure {
        let found = impurities(&code_of(code));
        assert!(found.is_empty(), "must pass: {code}: {found:?}");
    }

    let manifest: toml::Table = r#"
        [dependencies]
        serde.workspace = true
        [build-dependencies]
        tokio = "1"
        [target.'cfg(unix)'.dependencies]
        files = { package = "tempfile", version = "3" }
        [target.'cfg(windows)'.build-dependencies.hyper]
        version = "1"
        [dependencies.rng]
        workspace = true
        [dev-dependencies]
        criterion = "0.8"
    "#
    .parse()
    .expect("a manifest");
    let workspace: toml::Table =
        "[workspace.dependencies]\nserde = \"1\"\nrng = { package = \"getrandom\", version = \"0.4\" }\n"
            .parse()
            .expect("a workspace manifest");
    let mut found = runtime_dependencies(&manifest, &workspace);
    found.sort();
    assert_eq!(found, ["getrandom", "hyper", "serde", "tempfile", "tokio"]);
    let impure: Vec<&String> = found.iter().filter(|d| impure_package(d)).collect();
    assert_eq!(impure, ["getrandom", "hyper", "tempfile", "tokio"]);
    for allowed in ["rand_chacha", "rand_core", "serde", "sha2", "ed25519-dalek", "battlelog-dice"] {
        assert!(!impure_package(allowed), "{allowed} is allowed");
    }
}
