//! `battlelog token keygen` and `battlelog token issue` as an operator runs
//! them: the real binary; the tokens it prints are checked with the public
//! key it wrote, as a service configured with it would check them.

use std::process::{Command, Output};

use battlelog_auth::{Role, VerificationKeys, Verifier};

fn battlelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_battlelog")).args(args).output().expect("the battlelog binary runs")
}

/// A refusal: status 2, nothing on stdout, one line on stderr holding `says`.
fn refused(output: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout when refused");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(says), "{stderr:?} should say {says:?}");
}

#[test]
fn keygen_then_issue_gives_tokens_the_public_key_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("signing.pem");
    let key_arg = key.display().to_string();
    let made = battlelog(&["token", "keygen", "--out", &key_arg]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).expect("the key").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the signing key is the operator's alone");
    }
    refused(&battlelog(&["token", "keygen", "--out", &key_arg]), "never overwritten");

    let issued = battlelog(&[
        "token",
        "issue",
        "--role",
        "judge",
        "--tenant",
        "forum-a",
        "--subject",
        "oak",
        "--ttl",
        "2h",
        "--key",
        &key_arg,
    ]);
    assert!(issued.status.success(), "{}", String::from_utf8_lossy(&issued.stderr));
    let token = String::from_utf8(issued.stdout).expect("utf-8");
    assert_eq!(token.lines().count(), 1, "one token on stdout");
    let public = dir.path().join("signing.pem.pub");
    let verifier = Verifier::new(VerificationKeys::read(&[public]).expect("the public key"));
    let claims = verifier.verify(token.trim()).expect("the public key verifies the token");
    assert_eq!((claims.sub.as_str(), claims.tenant.as_str(), claims.role), ("oak", "forum-a", Role::Judge));
    assert_eq!(claims.exp - claims.iat, 2 * 3600, "--ttl 2h");
}

#[test]
fn issue_refuses_bad_input_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("signing.pem").display().to_string();
    assert!(battlelog(&["token", "keygen", "--out", &key]).status.success());
    let issue = |role: &str, tenant: &str, extra: &[&str]| {
        let mut args = vec!["token", "issue", "--role", role, "--tenant", tenant, "--subject", "s"];
        args.extend_from_slice(extra);
        battlelog(&args)
    };
    refused(&issue("forum", "forum.a", &["--key", &key]), "--tenant: tenant \"forum.a\" must be 1 to 64 bytes");
    refused(&issue("forum", "forum-a", &["--key", &key, "--ttl", "400d"]), "at most 366d");
    refused(&issue("admin", "forum-a", &["--key", &key]), "unknown role \"admin\"");
    // No signer at all, and a data dir where `battlelog up` never ran.
    refused(&issue("forum", "forum-a", &[]), "--key");
    let nowhere = dir.path().join("no-up").display().to_string();
    refused(&issue("forum", "forum-a", &["--data-dir", &nowhere]), "run `battlelog up` first");
}
