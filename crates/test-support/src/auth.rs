//! Tokens for tests: one signing key per test process, its public key in a
//! file the real service binaries are configured with, and tokens of every
//! role for the services and the clients.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use battlelog_auth::{Role, SigningKey, VerificationKeys, Verifier};
use tempfile::TempDir;

/// The tenant the tests' forum, judge and reader tokens belong to.
pub const TEST_TENANT: &str = "test-forum";
/// Another tenant, for showing that one tenant cannot see another's battles.
pub const OTHER_TENANT: &str = "other-forum";
/// How long the tests' tokens live: longer than any test.
const TTL: Duration = Duration::from_secs(6 * 3600);

/// A signing key, its public key file, and a file with a `service` token.
#[derive(Debug)]
pub struct TestAuth {
    dir: TempDir,
    key: SigningKey,
}

impl TestAuth {
    /// A fresh key pair in a temp dir.
    pub fn generate() -> Self {
        let dir = crate::temp_dir("auth");
        let key = SigningKey::generate().expect("generate a signing key");
        key.write(&dir.path().join("signing-key.pem")).expect("write the signing key");
        let auth = Self { dir, key };
        std::fs::write(auth.service_token_file(), auth.service_token()).expect("write the service token");
        auth
    }

    /// The key every service the starters launch accepts. It lives as long
    /// as the test process (its temp dir is left behind, a few hundred bytes).
    pub fn shared() -> &'static TestAuth {
        static SHARED: OnceLock<TestAuth> = OnceLock::new();
        SHARED.get_or_init(TestAuth::generate)
    }

    /// The signing key (PKCS#8 PEM), as `battlelog token issue --key` takes it.
    pub fn signing_key_file(&self) -> PathBuf {
        self.dir.path().join("signing-key.pem")
    }

    /// The public key file services are configured with (`auth_keys`).
    pub fn public_key_file(&self) -> PathBuf {
        battlelog_auth::keys::public_path(&self.signing_key_file())
    }

    /// A file holding a `service` token (`token_file`).
    pub fn service_token_file(&self) -> PathBuf {
        self.dir.path().join("service.token")
    }

    /// A verifier accepting this key, for in-process servers.
    pub fn verifier(&self) -> Verifier {
        Verifier::new(VerificationKeys::from(&self.key))
    }

    /// A token for `subject` of `tenant` in `role`.
    pub fn token(&self, role: Role, tenant: &str, subject: &str) -> String {
        self.key.issue(subject, tenant, role, TTL).expect("issue a token")
    }

    /// The services' token.
    pub fn service_token(&self) -> String {
        self.token(Role::Service, "battlelog", "test-service")
    }

    /// A forum of [`TEST_TENANT`].
    pub fn forum(&self) -> String {
        self.token(Role::Forum, TEST_TENANT, "test-forum")
    }

    /// A judge of [`TEST_TENANT`].
    pub fn judge(&self) -> String {
        self.token(Role::Judge, TEST_TENANT, "judge-jenny")
    }

    /// A reader of [`TEST_TENANT`].
    pub fn reader(&self) -> String {
        self.token(Role::Reader, TEST_TENANT, "test-reader")
    }

    /// The environment that configures service `name` (journal, roller,
    /// resolver) with this key and, but for the journal, the service token.
    pub fn env(&self, name: &str) -> Vec<(String, String)> {
        let prefix = format!("BATTLELOG_{}", name.to_ascii_uppercase());
        let mut env = vec![(format!("{prefix}_AUTH_KEYS"), self.public_key_file().display().to_string())];
        if name != "journal" {
            env.push((format!("{prefix}_TOKEN_FILE"), self.service_token_file().display().to_string()));
        }
        env
    }
}
