//! One error vocabulary (issue 20).
//!
//! - Exactly one place builds a gRPC `Status` from an error:
//!   `crates/proto/src/error.rs` (`battlelog_proto::error`). Every other
//!   source file of `crates/*/src` is scanned for tonic's constructors.
//! - `docs/errors.md` holds the table of reasons generated from the enums.
//! - Over the real binaries, a rules refusal answers `FAILED_PRECONDITION`
//!   with an `ErrorInfo` of domain `battlelog.dev`, the rule's reason and
//!   its docs/rules.md section, and one `LocalizedMessage`: Russian when the
//!   request's `accept-language` prefers it, English otherwise; and the CLI
//!   prints the message of the user's locale in its one line.

use std::path::{Path, PathBuf};
use std::process::Command;

use battlelog_proto::v1 as pb;
use battlelog_test_support::TestAuth;
use battlelog_test_support::stack::*;
use serde_json::json;
use tonic::{Code, Status};
use tonic_types::{ErrorDetail, StatusExt};

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

// ---------------------------------------------------------------------------
// The one place.
// ---------------------------------------------------------------------------

/// The only file allowed to build a `Status`.
const THE_ONE_PLACE: &str = "crates/proto/src/error.rs";

/// tonic's ways of making a `Status`: its constructors by code, and the
/// ones with a code, details or metadata given.
const CONSTRUCTORS: &[&str] = &[
    "new",
    "with_details",
    "with_details_and_metadata",
    "with_metadata",
    "with_error_details",
    "with_error_details_vec",
    "with_error_details_and_metadata",
    "with_error_details_vec_and_metadata",
    "from_error",
    "ok",
    "cancelled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` that build a `Status`, with their numbers. The rule:
/// a call `Status::<constructor>(` (also as `tonic::Status::…`), outside
/// comments and outside the file's unit tests (from its `#[cfg(test)]` on:
/// tests make statuses to check how they are read, which is allowed).
fn status_builders(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or_default();
        for (at, _) in code.match_indices("Status::") {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // e.g. ServingStatus::
            }
            let rest = &code[at + "Status::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let call = rest[name.len()..].trim_start().starts_with('(');
            if call && CONSTRUCTORS.contains(&name.as_str()) {
                found.push((number + 1, line.trim().to_owned()));
            }
        }
    }
    found
}

#[test]
fn the_scan_sees_every_kind_of_construction_and_nothing_else() {
    let source = "fn a() -> Status { Status::internal(\"x\") }\n\
                  fn b() { tonic::Status::with_error_details(Code::Aborted, \"m\", d) }\n\
                  fn c() { Status :: new(Code::Ok, \"\") ; Status::new (Code::Ok, \"\") }\n\
                  // Status::internal(\"in a comment\")\n\
                  fn d() { let s = ServingStatus::unknown(); Status::from_header_map(h); }\n\
                  fn e() { x.map_err(Status::from) }\n\
                  #[cfg(test)]\n\
                  fn f() { Status::internal(\"a test\") }\n";
    let found: Vec<usize> = status_builders(source).into_iter().map(|(n, _)| n).collect();
    // Line 3's first call is spaced oddly and not seen; that spelling would
    // fail rustfmt, which the workspace keeps.
    assert_eq!(found, [1, 2, 3]);
}

#[test]
fn exactly_one_place_builds_a_status_from_an_error() {
    let root = workspace_dir();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let src = krate.expect("a crate").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 50, "the scan found too few files: {}", files.len());
    let mut places = Vec::new();
    let mut others = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let relative = file.strip_prefix(&root).expect("under the workspace").to_string_lossy().replace('\\', "/");
        let found = status_builders(&text);
        if found.is_empty() {
            continue;
        }
        if relative == THE_ONE_PLACE {
            places.push(relative);
        } else {
            others.extend(found.into_iter().map(|(line, code)| format!("{relative}:{line}: {code}")));
        }
    }
    assert!(
        others.is_empty(),
        "only {THE_ONE_PLACE} may build a Status (use battlelog_proto::error::Error):\n{}",
        others.join("\n")
    );
    assert_eq!(places, [THE_ONE_PLACE], "the one place builds the statuses");
}

// ---------------------------------------------------------------------------
// The table of reasons.
// ---------------------------------------------------------------------------

const TABLE_BEGIN: &str = "<!-- reasons: generated by battlelog_proto::error::reasons_table; do not edit -->\n";
const TABLE_END: &str = "<!-- reasons: end -->";

/// `docs/errors.md` holds [`battlelog_proto::error::reasons_table`] between
/// its markers. `BATTLELOG_WRITE_DOCS=1 cargo test -p
/// battlelog-system-tests --test errors` writes it there.
#[test]
fn the_docs_table_of_reasons_is_the_enums() {
    let path = workspace_dir().join("docs/errors.md");
    let text = std::fs::read_to_string(&path).expect("docs/errors.md");
    let begin = text.find(TABLE_BEGIN).expect("the table's begin marker") + TABLE_BEGIN.len();
    let end = text.find(TABLE_END).expect("the table's end marker");
    let table = battlelog_proto::error::reasons_table();
    if std::env::var_os("BATTLELOG_WRITE_DOCS").is_some() {
        let written = format!("{}{table}{}", &text[..begin], &text[end..]);
        std::fs::write(&path, written).expect("write docs/errors.md");
        return;
    }
    assert!(
        text[begin..end] == table,
        "docs/errors.md is not the table of the enums; write it with \
         BATTLELOG_WRITE_DOCS=1 cargo test -p battlelog-system-tests --test errors"
    );
    // Spot checks written from docs/rules.md and the brief, not from the code.
    for row in [
        "| `ABILITY_USED_THIS_EPISODE` | rules | FAILED_PRECONDITION | §2.1 |",
        "| `DODGES_EXHAUSTED` | rules | FAILED_PRECONDITION | §1.3 |",
        "| `DODGES_EXHAUSTED` | rules | FAILED_PRECONDITION | §6.1.3 |",
        "| `BATTLE_CLOSED` | battle | FAILED_PRECONDITION |",
        "| `TOKEN_EXPIRED` | auth | UNAUTHENTICATED |",
        "| `RATE_LIMITED` | limits | RESOURCE_EXHAUSTED |",
    ] {
        assert!(table.contains(row), "no row {row}");
    }
}

// ---------------------------------------------------------------------------
// Over the real services.
// ---------------------------------------------------------------------------

/// The reason, the metadata `section` and the `LocalizedMessage`s of a
/// battlelog refusal.
fn refusal(status: &Status) -> (String, Option<String>, Vec<(String, String)>) {
    let details = status.get_error_details_vec();
    let info = details
        .iter()
        .find_map(|d| match d {
            ErrorDetail::ErrorInfo(info) => Some(info.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    assert_eq!(info.domain, "battlelog.dev", "{status:?}");
    let messages = details
        .into_iter()
        .filter_map(|d| match d {
            ErrorDetail::LocalizedMessage(m) => Some((m.locale, m.message)),
            _ => None,
        })
        .collect();
    (info.reason, info.metadata.get("section").cloned(), messages)
}

async fn act_in(
    resolver: &mut battlelog_proto::v1::resolver_client::ResolverClient<battlelog_auth::AuthChannel>,
    battle_id: &str,
    action: serde_json::Value,
    request_id: &str,
    accept_language: Option<&str>,
) -> Result<pb::ActResponse, Status> {
    let mut request = tonic::Request::new(pb::ActRequest {
        battle_id: battle_id.into(),
        action: Some(obj(action)),
        request_id: request_id.into(),
        ..Default::default()
    });
    if let Some(value) = accept_language {
        request.metadata_mut().insert("accept-language", value.parse().expect("ASCII"));
    }
    resolver.act(request).await.map(tonic::Response::into_inner)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_refusal_names_its_rule_and_speaks_the_callers_language() {
    let stack = Stack::start("errors-rules", false).await;
    let mut forum = resolver_client(&stack.resolver).await;

    // docs/rules.md §2.1: an ability with a `per_episode` limit of 1, used once
    // (in one post), is used up for the episode (in any other post).
    let battle = "errors-arcana";
    let sheets = json!([{"id": "morgana", "abilities": {"Щит": {"per_episode": 1}}}, {"id": "knight"}]);
    open(&mut forum, battle, "arcana-2d10@1", sheets, "forum:errors/1").await;
    let cast =
        |post: &str| json!({"type": "cast", "actor": "morgana", "ability": "Щит", "skill_points": 6, "post": post});
    act_in(&mut forum, battle, cast("p1"), "first", None).await.expect("the first use");

    let refused = act_in(&mut forum, battle, cast("p2"), "second-ru", Some("ru-RU,ru;q=0.9,en;q=0.8"))
        .await
        .expect_err("a second use in the episode");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    let (reason, section, messages) = refusal(&refused);
    assert_eq!(reason, "ABILITY_USED_THIS_EPISODE");
    assert_eq!(section.as_deref(), Some("docs/rules.md §2.1"));
    assert_eq!(messages.len(), 1, "one message, in the language asked for: {messages:?}");
    assert_eq!(messages[0].0, "ru");
    assert!(
        messages[0].1.contains("«Щит»") && messages[0].1.contains("исчерпана в этом эпизоде"),
        "a Russian message naming the ability: {}",
        messages[0].1
    );

    for (accept_language, request_id) in [(None, "second-none"), (Some("en-GB,ru;q=0.5"), "second-en")] {
        let refused =
            act_in(&mut forum, battle, cast("p2"), request_id, accept_language).await.expect_err("still used up");
        let (reason, section, messages) = refusal(&refused);
        assert_eq!((reason.as_str(), section.as_deref()), ("ABILITY_USED_THIS_EPISODE", Some("docs/rules.md §2.1")));
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0].0, "en", "{accept_language:?}");
        assert!(messages[0].1.contains("is used up for this episode"), "{}", messages[0].1);
        // What a client decodes is the typed error back.
        let error = battlelog_proto::error::Error::from_status(&refused).expect("a battlelog error");
        assert_eq!(
            error.reason,
            battlelog_proto::error::RulesReason::AbilityUsedThisEpisode.into(),
            "{accept_language:?}"
        );
    }

    // docs/rules.md §1.3: no dodges left after 5 counted ones (pokemon-d6@1).
    let battle = "errors-pokemon";
    open(&mut forum, battle, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "forum:errors/2").await;
    let mut counted = 0;
    let mut n = 0;
    let refused = loop {
        n += 1;
        assert!(n < 200, "five counted dodges never came");
        let dodge = json!({"type": "dodge", "actor": "meowth"});
        match act_in(&mut forum, battle, dodge, &format!("dodge-{n}"), Some("ru")).await {
            Ok(response) => {
                let outcome = struct_json(response.resolved.as_ref().and_then(|r| r.outcome.as_ref()));
                if outcome["counted"] == json!(true) {
                    counted += 1;
                }
            }
            Err(status) => break status,
        }
    };
    assert_eq!(counted, 5, "refused only after the fifth counted dodge: {refused:?}");
    let (reason, section, messages) = refusal(&refused);
    assert_eq!((reason.as_str(), section.as_deref()), ("DODGES_EXHAUSTED", Some("docs/rules.md §1.3")));
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].0, "ru");
    assert!(messages[0].1.contains("уклонений"), "{}", messages[0].1);
}

/// A refusal at the door, before any handler: no token at all.
#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_at_the_door_speaks_the_callers_language_too() {
    let stack = Stack::start("errors-door", false).await;
    let mut anonymous = battlelog_proto::v1::resolver_client::ResolverClient::new(stack.resolver.channel().await);
    for (accept_language, locale) in [("ru", "ru"), ("en-US", "en")] {
        let mut request = tonic::Request::new(pb::ListRulesetsRequest::default());
        request.metadata_mut().insert("accept-language", accept_language.parse().expect("ASCII"));
        let refused = anonymous.list_rulesets(request).await.expect_err("no token");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
        let (reason, _, messages) = refusal(&refused);
        assert_eq!(reason, "TOKEN_MISSING");
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0].0, locale);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_prints_the_refusal_in_the_users_language() {
    let stack = Stack::start("errors-cli", false).await;
    let reader = TestAuth::shared().reader();
    let url = stack.resolver.url();
    let export = |lang: &str| {
        let output = Command::new(battlelog_test_support::cli_binary())
            .args(["export", "never-opened", "--resolver", &url, "--token", &reader])
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .env("LANG", lang)
            .output()
            .expect("run battlelog");
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (code, russian) = export("ru_RU.UTF-8");
    assert_eq!(code, Some(2), "{russian}");
    assert_eq!(russian.lines().count(), 1, "one line: {russian}");
    assert!(russian.contains("бой never-opened не открыт"), "{russian}");
    let (code, english) = export("C.UTF-8");
    assert_eq!(code, Some(2), "{english}");
    assert_eq!(english.lines().count(), 1, "one line: {english}");
    assert!(english.contains("battle never-opened has not been opened"), "{english}");
}

/// Issue 35, finding 6: an error that echoes a 5 000-character field
/// outgrew the client's 16 KiB header limit, so the caller saw
/// `RESOURCE_EXHAUSTED` instead of it. Over the real resolver, in either
/// language, the refusal arrives whole: `INVALID_ARGUMENT`, the field named,
/// its value cut.
#[tokio::test(flavor = "multi_thread")]
async fn an_error_echoing_a_huge_field_reaches_the_caller_with_the_field_named() {
    let stack = Stack::start("errors-huge-field", false).await;
    let mut forum = resolver_client(&stack.resolver).await;
    for (value, language) in [("x".repeat(5_000), None), ("щ".repeat(5_000), Some("ru"))] {
        let mut request = tonic::Request::new(pb::OpenBattleRequest {
            ruleset: value.clone(),
            title: "huge".into(),
            participants: vec![obj(json!({"id": "a"})), obj(json!({"id": "b"}))],
            request_id: format!("huge-{}", language.unwrap_or("en")),
            ..Default::default()
        });
        if let Some(language) = language {
            request.metadata_mut().insert("accept-language", language.parse().expect("ASCII"));
        }
        let refused = forum.open_battle(request).await.expect_err("an unknown ruleset");
        assert_eq!(refused.code(), Code::InvalidArgument, "{:?}", refused.code());
        let details = refused.get_error_details();
        assert_eq!(details.error_info().expect("ErrorInfo").reason, "INVALID_FIELD");
        let violation = &details.bad_request().expect("a BadRequest").field_violations[0];
        assert_eq!(violation.field, "ruleset");
        assert!(violation.description.contains("bytes cut"), "{}", violation.description);
        assert!(violation.description.len() < 2 * 1024, "{} bytes", violation.description.len());
        assert!(refused.message().starts_with("ruleset: "), "{}", refused.message());
        let localized = details.localized_message().expect("a LocalizedMessage");
        assert!(localized.message.starts_with("ruleset: ") && localized.message.contains("bytes cut"));
    }
}
