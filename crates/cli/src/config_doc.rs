//! `docs/config.md`: every configuration key of every service and every
//! option of `battlelog up`, written from their types — each service's
//! `Config` through [`battlelog_runtime::config::reference`] (its keys,
//! variables, flags, defaults and doc comments), and `up`'s clap arguments.
//! The test below fails while the file differs from what the types give;
//! [`REGENERATE`] writes it. It lives in the CLI because `up`'s arguments
//! are the binary's own and the CLI depends on every service.

use std::fmt::Write as _;
use std::path::PathBuf;

use battlelog_runtime::config::{KeyReference, reference};
use clap::Args as _;

/// The one command that writes `docs/config.md` again.
const REGENERATE: &str = "BATTLELOG_WRITE_DOCS=1 cargo test -p battlelog-cli --bin battlelog config_doc";

/// A service binary and its keys.
struct Service {
    binary: &'static str,
    service: &'static str,
    what: &'static str,
    keys: Vec<KeyReference>,
}

/// The services in the order of the README's table: the one forums call
/// first, then what it calls, then the pages and the webhooks.
fn services() -> Vec<Service> {
    use battlelog_journal::config::SERVICE as JOURNAL;
    use battlelog_resolver::config::SERVICE as RESOLVER;
    use battlelog_roller::config::SERVICE as ROLLER;
    use battlelog_web::config::SERVICE as WEB;
    use battlelog_webhooks::config::SERVICE as WEBHOOKS;
    vec![
        Service {
            binary: "battlelog-resolver",
            service: RESOLVER,
            what: "The gRPC API forums and judges call: battles' game logic over the roller and the journal.",
            keys: reference::<battlelog_resolver::Config>(RESOLVER),
        },
        Service {
            binary: "battlelog-roller",
            service: ROLLER,
            what: "Dice from committed seeds, journaled before anyone sees them.",
            keys: reference::<battlelog_roller::Config>(ROLLER),
        },
        Service {
            binary: "battlelog-journal",
            service: JOURNAL,
            what: "The hash-chained event log and its transparency log.",
            keys: reference::<battlelog_journal::Config>(JOURNAL),
        },
        Service {
            binary: "battlelog-web",
            service: WEB,
            what: "The judges' web pages: battle pages verified in the browser, `/verify`.",
            keys: reference::<battlelog_web::Config>(WEB),
        },
        Service {
            binary: "battlelog-webhooks",
            service: WEBHOOKS,
            what: "Each committed event POSTed to its tenant's endpoint, signed.",
            keys: reference::<battlelog_webhooks::Config>(WEBHOOKS),
        },
    ]
}

/// A table cell: on one line, with `|` escaped.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// `text` as code, or `(unset)`.
fn code_or_unset(text: Option<&str>) -> String {
    text.map_or_else(|| "(unset)".to_owned(), |text| format!("`{}`", cell(text)))
}

/// The whole of `docs/config.md`: how a service reads its configuration,
/// each service's keys, then `battlelog up`'s options.
fn render() -> String {
    let services = services();
    let mut doc = intro();
    let links: Vec<String> = services
        .iter()
        .map(|service| format!("[`{}`](#{})", service.binary, service.binary))
        .chain(["[`battlelog up`](#battlelog-up)".to_owned()])
        .collect();
    let _ = writeln!(doc, "{}\n", links.join(" · "));
    for service in &services {
        service_table(&mut doc, service);
    }
    up_table(&mut doc);
    doc
}

/// The title and how a service reads its configuration.
fn intro() -> String {
    let mut doc = String::new();
    let _ = write!(
        doc,
        "# Configuration reference\n\
         \n\
         <!-- Generated from the config types; do not edit. Write it again with:\n\
         {REGENERATE}\n\
         -->\n\
         \n\
         Every configuration key of every battlelog service, with its default,\n\
         its environment variable and its flag; then the options of\n\
         `battlelog up`, which runs the whole stack in one process. This file is\n\
         written from the services' config types (a key is a field of its\n\
         service's `Config`, its description the field's doc comment), and a test\n\
         fails while it differs from them. After adding or changing a key, write\n\
         it again with\n\
         \n\
         ```sh\n\
         {REGENERATE}\n\
         ```\n\
         \n\
         ## How a service reads its configuration\n\
         \n\
         Each service binary takes its configuration in layers, each over the\n\
         one before:\n\
         \n\
         1. the defaults below;\n\
         2. a TOML file, given with `--config FILE` or in\n\
         \x20  `BATTLELOG_<SERVICE>_CONFIG`, whose keys are the first column's;\n\
         3. the environment: `BATTLELOG_<SERVICE>_<KEY>`;\n\
         4. the flags: `--<key>`, with `-` for `_`.\n\
         \n\
         Variables and flags are text: a number or a boolean is read from it, a\n\
         list (`auth_keys`) is comma-separated. A table (the webhooks'\n\
         `tenants`) is given in the file only. A value that does not fit its\n\
         key, or a key in the file that the service does not know, stops the\n\
         service at start with an error naming the key and the file, variable\n\
         or flag it came from. Each binary's `--help` lists its flags. Defaults\n\
         are written as in the TOML file; `(unset)` means no value.\n\
         \n"
    );
    doc
}

/// One service's table: each key's default, variable, flag and description.
fn service_table(doc: &mut String, service: &Service) {
    let upper = service.service.to_ascii_uppercase();
    let _ = write!(
        doc,
        "## {binary}\n\
         \n\
         {what} File: `--config FILE` or `BATTLELOG_{upper}_CONFIG`; variables:\n\
         `BATTLELOG_{upper}_*`.\n\
         \n\
         | Key | Default | Environment variable | Flag | Description |\n\
         |---|---|---|---|---|\n",
        binary = service.binary,
        what = service.what,
    );
    for key in &service.keys {
        let (env, flag) = if key.file_only {
            ("— (file only)".to_owned(), "— (file only)".to_owned())
        } else {
            (format!("`{}`", key.env), format!("`{}`", key.flag))
        };
        let _ = writeln!(
            doc,
            "| `{}` | {} | {env} | {flag} | {} |",
            key.key,
            code_or_unset(key.default.as_deref()),
            cell(&key.description)
        );
    }
    doc.push('\n');
}

/// `battlelog up`'s options, from its arguments.
fn up_table(doc: &mut String) {
    let _ = write!(
        doc,
        "## battlelog up\n\
         \n\
         `battlelog up` runs the resolver, the roller, the journal and the web\n\
         pages (and the webhooks with `--webhook`) in one process for\n\
         development, each built from its own `Config` as above: `up` sets what\n\
         a development stack needs (these options, data directories under\n\
         `--data-dir`, tokens, TLS files) and leaves every other key at its\n\
         default; it reads no service's file or `BATTLELOG_<SERVICE>_*`\n\
         variables. A few options read a variable of\n\
         their own when the flag is not given. Without `--nats-url` or\n\
         `--no-nats` it starts a `nats-server` when it finds one: the one\n\
         `BATTLELOG_NATS_SERVER` names, else the first on `PATH`, else\n\
         `.tools/bin/nats-server` (`scripts/install-tools` puts one there).\n\
         \n\
         | Flag | Default | Environment variable | Description |\n\
         |---|---|---|---|\n"
    );
    let up = crate::up::UpArgs::augment_args(clap::Command::new("up"));
    for arg in up.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let defaults: Vec<String> =
            arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
        let default = if !arg.get_action().takes_values() {
            // A switch: given or not.
            "off".to_owned()
        } else if defaults.is_empty() {
            "(unset)".to_owned()
        } else {
            format!("`{}`", cell(&defaults.join(",")))
        };
        let env = arg.get_env().map_or_else(|| "—".to_owned(), |env| format!("`{}`", env.to_string_lossy()));
        let mut help = cell(&arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default());
        // clap drops a one-sentence doc comment's full stop; the services'
        // descriptions keep theirs.
        if !help.is_empty() && !help.ends_with('.') {
            help.push('.');
        }
        let _ = writeln!(doc, "| `--{long}` | {default} | {env} | {help} |");
    }
}

#[test]
fn config_doc_is_what_the_config_types_give() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md");
    let doc = render();
    if std::env::var_os("BATTLELOG_WRITE_DOCS").is_some() {
        std::fs::write(&path, &doc).expect("write docs/config.md");
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(written == doc, "docs/config.md is not what the config types give; write it with\n{REGENERATE}");

    // Each service's table has a row for each of its keys (as its loader
    // reads them, not as the reference lists them).
    for (service, keys) in [
        ("resolver", battlelog_runtime::config::keys::<battlelog_resolver::Config>()),
        ("roller", battlelog_runtime::config::keys::<battlelog_roller::Config>()),
        ("journal", battlelog_runtime::config::keys::<battlelog_journal::Config>()),
        ("web", battlelog_runtime::config::keys::<battlelog_web::Config>()),
        ("webhooks", battlelog_runtime::config::keys::<battlelog_webhooks::Config>()),
    ] {
        assert!(keys.len() > 5, "{service}: {keys:?}");
        for key in keys {
            let variable = format!("`BATTLELOG_{}_{}`", service.to_ascii_uppercase(), key.to_ascii_uppercase());
            let row = format!("| `{key}` | ");
            assert!(
                doc.lines()
                    .any(|line| line.starts_with(&row) && (line.contains(&variable) || line.contains("— (file only)"))),
                "{service}'s key {key} has no row"
            );
        }
    }
    // Spot checks written from the README and the services' defaults, not
    // from the generator.
    for row in [
        // The shared keys' descriptions are the same for every service
        // (battlelog_runtime::service::Shared); the default is the journal's.
        "| `listen` | `\"127.0.0.1:50053\"` | `BATTLELOG_JOURNAL_LISTEN` | `--listen` |",
        "| `data_dir` | `\"data/journal\"` | `BATTLELOG_JOURNAL_DATA_DIR` | `--data-dir` | The sled directory (backend `sled`). |",
        "| `master_key_file` | (unset) | `BATTLELOG_ROLLER_MASTER_KEY_FILE` | `--master-key-file` |",
        "| `auth_keys` | `[]` | `BATTLELOG_RESOLVER_AUTH_KEYS` | `--auth-keys` |",
        "| `metrics_listen` | (unset) | `BATTLELOG_WEB_METRICS_LISTEN` | `--metrics-listen` |",
        "| `tenants` | `{}` | — (file only) | — (file only) |",
        "| `--web-listen` | `127.0.0.1:8080` | — | The web pages' listen address (battle pages, /verify). |",
        "| `--tls` | off | — |",
        "| `--data-dir` | `data` | `BATTLELOG_DATA_DIR` |",
    ] {
        assert!(doc.contains(row), "no row starting {row}");
    }
    assert!(doc.contains("`text`, `json`"), "log_format's values");
}
