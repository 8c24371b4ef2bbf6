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

/// `battlelog token revoke` appends one entry a line to the list it is
/// given (creating it), says so, and says when the entry was there already;
/// the services' reader (battlelog_auth's, as a service configured with the
/// file uses it) then refuses the token by its id or its subject.
#[test]
fn revoke_writes_the_list_the_services_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("signing.pem");
    let key_arg = key.display().to_string();
    assert!(battlelog(&["token", "keygen", "--out", &key_arg]).status.success());
    let issue = |subject: &str| {
        let output = battlelog(&[
            "token",
            "issue",
            "--role",
            "forum",
            "--tenant",
            "forum-a",
            "--subject",
            subject,
            "--key",
            &key_arg,
        ]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
    };
    let (leaked, other, gone) = (issue("forum-a"), issue("forum-a"), issue("forum-gone"));
    let public = dir.path().join("signing.pem.pub");
    let verifier = Verifier::new(VerificationKeys::read(std::slice::from_ref(&public)).expect("the public key"));
    let jti = verifier.verify(&leaked).expect("valid").jti.expect("an issued token has an id");

    let list = dir.path().join("lists").join("revoked");
    std::fs::create_dir(dir.path().join("lists")).expect("a dir");
    let list_arg = list.display().to_string();
    let revoked = battlelog(&["token", "revoke", "--jti", &jti, "--list", &list_arg]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    let said = String::from_utf8(revoked.stdout).expect("utf-8");
    assert!(said.starts_with(&format!("revoked token id {jti} in {list_arg}")), "{said}");
    let again = battlelog(&["token", "revoke", "--jti", &jti, "--list", &list_arg]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("already revoked"), "a second time changes nothing");
    assert!(battlelog(&["token", "revoke", "--subject", "forum-gone", "--list", &list_arg]).status.success());
    assert_eq!(std::fs::read_to_string(&list).expect("the list"), format!("jti {jti}\nsub forum-gone\n"));

    let list = battlelog_auth::RevocationList::open(&list, std::time::Duration::ZERO).expect("the services read it");
    let verifier = verifier.with_revocations(list);
    for (token, by) in [(&leaked, "token id"), (&gone, "subject")] {
        let refused = verifier.verify(token).expect_err("revoked");
        assert_eq!(refused.reason().as_str(), "TOKEN_REVOKED");
        assert!(refused.to_string().contains(by), "{refused}");
    }
    assert!(verifier.verify(&other).is_ok(), "the leaked token's sibling is not revoked");
}

#[test]
fn revoke_refuses_bad_input_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let list = dir.path().join("revoked").display().to_string();
    let revoke = |extra: &[&str]| {
        let mut args = vec!["token", "revoke"];
        args.extend_from_slice(extra);
        battlelog(&args)
    };
    refused(&revoke(&["--jti", "two words", "--list", &list]), "--jti: a token id must be 1 to 128 bytes");
    refused(&revoke(&["--jti", "", "--list", &list]), "--jti");
    refused(&revoke(&["--subject", " padded", "--list", &list]), "--subject: a subject must be");
    let long = "s".repeat(129);
    refused(&revoke(&["--subject", &long, "--list", &list]), "--subject");
    refused(&revoke(&["--list", &list]), "--jti");
    refused(&revoke(&["--jti", "a", "--subject", "b", "--list", &list]), "cannot be used with");
    refused(&revoke(&["--jti", "a"]), "--list");
    let nowhere = dir.path().join("no-up").display().to_string();
    refused(&revoke(&["--jti", "a", "--data-dir", &nowhere]), "run `battlelog up` first");
    let unwritable = dir.path().join("missing-dir").join("revoked").display().to_string();
    refused(&revoke(&["--jti", "a", "--list", &unwritable]), "cannot write revocation list");
    assert!(!std::path::Path::new(&list).exists(), "nothing was written by a refusal");
}
