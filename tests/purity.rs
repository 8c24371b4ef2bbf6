//! ARCHITECTURE.md, invariant 7, and the layout's rule: `dice`, `rules`,
//! `verify`, `post` (the forum posts), `tlog`, `feed` (the event feed's
//! wire format) and `beacon` (protocol v2's randomness beacon) are pure — no I/O, no clock, no
//! randomness of their own.
//!
//! Their code is held to it by clippy: each crate's `clippy.toml` forbids
//! the calls, types and macros that reach files, sockets, processes, the
//! environment, threads, the clock and the terminal, and
//! `cargo clippy --workspace --all-targets -- -D warnings` fails on any of
//! them. This test keeps that honest — the files are there and
//! agree, they name the calls that matter, and no source of a pure crate
//! silences the lints — and checks what clippy cannot see: the crates'
//! manifests and their resolved dependencies, so that no async runtime,
//! network, storage or OS randomness comes in through a dependency (which
//! is also the only way to randomness: `rand_core` 0.10 has no OS source).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Issue 38's length rule, a source-level check like the ones here.
mod style;

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

/// The pure crates, by directory under `crates/`.
const PURE: &[&str] = &["dice", "rules", "verify", "post", "tlog", "feed", "beacon"];

/// Calls, types and macros every pure crate's `clippy.toml` must forbid:
/// one or more of each kind of impurity, so that a file emptied or cut
/// down fails here.
const MUST_FORBID: &[&str] = &[
    "std::time::SystemTime::now",
    "std::time::Instant::now",
    "std::fs::read",
    "std::fs::write",
    "std::fs::File",
    "std::env::var",
    "std::process::Command",
    "std::thread::spawn",
    "std::net::TcpStream",
    "std::io::stdin",
    "std::println",
];

/// The lints `clippy.toml` configures; an `allow` or `expect` of one of
/// them in a pure crate's sources would switch the rule off.
const PURITY_LINTS: &[&str] = &["disallowed_methods", "disallowed_types", "disallowed_macros"];

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

/// Every `path = "…"` a clippy.toml's `disallowed-*` tables name.
fn forbidden_paths(config: &toml::Table) -> Vec<String> {
    ["disallowed-methods", "disallowed-types", "disallowed-macros"]
        .iter()
        .filter_map(|key| config.get(*key).and_then(toml::Value::as_array))
        .flatten()
        .filter_map(|entry| entry.as_str().or_else(|| entry.get("path").and_then(toml::Value::as_str)))
        .map(str::to_owned)
        .collect()
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

/// Every package in the crate's resolved graph along `edges` (`normal`, or
/// `normal,build`), as `cargo tree` reports it (features as this crate
/// alone turns them on).
fn resolved_dependencies(package: &str, edges: &str) -> Vec<String> {
    // The cargo running the tests, else the one that built them, else PATH's.
    let cargo = std::env::var_os("CARGO").or_else(|| option_env!("CARGO").map(Into::into)).unwrap_or("cargo".into());
    let output = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-e", edges, "--prefix", "none", "-p", package])
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

/// The crate's manifest and resolved dependencies hold nothing impure.
/// `edges` is `normal,build` for a crate whose whole graph must be pure, or
/// `normal` where a dependency's build script does file I/O at compile time
/// (battlelog-proto's compiles the `.proto` files with protox and
/// prost-build): that is not the library's, which is what must be pure.
fn assert_pure(name: &str, package: &str, edges: &str) {
    let dir = crate_dir(name);
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
    let resolved = resolved_dependencies(package, edges);
    let impure: Vec<&String> = resolved.iter().filter(|d| impure_package(d)).collect();
    assert!(impure.is_empty(), "{name} must stay pure, but it depends on {impure:?} (through its dependencies)");
}

#[test]
fn the_dice_crate_depends_on_nothing_impure() {
    assert_pure("dice", "battlelog-dice", "normal,build");
}

#[test]
fn the_rules_crate_depends_on_nothing_impure() {
    assert_pure("rules", "battlelog-rules", "normal,build");
}

/// The acceptance of issue 11: no tokio, tonic or sled below verify, which
/// links battlelog-proto without its `grpc` feature.
#[test]
fn the_verify_crate_depends_on_nothing_impure() {
    assert_pure("verify", "battlelog-verify", "normal");
}

#[test]
fn the_post_crate_depends_on_nothing_impure() {
    assert_pure("post", "battlelog-post", "normal,build");
}

/// Issue 23: the transparency log (tree, proofs, notes, trailer) is what
/// a verifier runs offline; tlog_tiles and ed25519-dalek bring no runtime.
#[test]
fn the_tlog_crate_depends_on_nothing_impure() {
    assert_pure("tlog", "battlelog-tlog", "normal,build");
}

/// Issue 38: the event feed's wire format (subjects, headers, the framing
/// of the JetStream log) is one pure crate the journal, the resolver and
/// webhooks share; a consumer links it without the journal's engines.
#[test]
fn the_feed_crate_depends_on_nothing_impure() {
    assert_pure("feed", "battlelog-feed", "normal,build");
}

/// Issue 40: the beacon's verification (a round's BLS signature, its
/// randomness, the round rule) is what every verifier of a v2 roll runs;
/// the pairing crates bring no runtime and no OS randomness.
#[test]
fn the_beacon_crate_depends_on_nothing_impure() {
    assert_pure("beacon", "battlelog-beacon", "normal,build");
}

/// Every pure crate carries the same clippy.toml, and it forbids at least
/// the calls of `MUST_FORBID`.
#[test]
fn every_pure_crate_has_the_purity_lints() {
    let read = |name: &str| {
        let path = crate_dir(name).join("clippy.toml");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name} needs {}: {e}", path.display()))
    };
    let first = PURE[0];
    let reference = read(first);
    for name in PURE {
        assert_eq!(read(name), reference, "crates/{name}/clippy.toml differs from crates/{first}/clippy.toml");
    }
    let config: toml::Table = reference.parse().expect("clippy.toml is TOML");
    let forbidden = forbidden_paths(&config);
    let missing: Vec<&&str> = MUST_FORBID.iter().filter(|path| !forbidden.iter().any(|f| f == *path)).collect();
    assert!(missing.is_empty(), "clippy.toml must forbid {missing:?}");
}

/// Clippy's rule holds only where it is not switched off: no source of a
/// pure crate names the purity lints (an `allow`, an `expect`). Tests under
/// `tests/` may do I/O and are not looked at.
#[test]
fn no_pure_source_switches_the_lints_off() {
    for name in PURE {
        let mut files = Vec::new();
        rust_files(&crate_dir(name).join("src"), &mut files);
        assert!(!files.is_empty(), "{name}: found no sources");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read source");
            for lint in PURITY_LINTS {
                assert!(!text.contains(lint), "{} switches off clippy::{lint}", file.display());
            }
        }
    }
}

/// The manifest and clippy.toml readers themselves, on what they must
/// find and what they must let by.
#[test]
fn the_checks_find_every_form_and_nothing_else() {
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

#[test]
fn forbidden_paths_reads_every_form_of_entry() {
    let config: toml::Table = r#"
        disallowed-methods = ["std::fs::read", { path = "std::env::var", reason = "no" }]
        disallowed-types = [{ path = "std::fs::File" }]
        disallowed-macros = ["std::println"]
        msrv = "1.89"
    "#
    .parse()
    .expect("a clippy.toml");
    assert_eq!(forbidden_paths(&config), ["std::fs::read", "std::env::var", "std::fs::File", "std::println"]);
}
