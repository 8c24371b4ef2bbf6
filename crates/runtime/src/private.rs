//! Every service's files are its owner's alone: the journal's hold battles
//! before their seeds are revealed, the roller's its master key, the
//! webhooks' queue the tenants' events and the keys of `battlelog up`.
//!
//! [`owner_only_from_now_on`] sets the process's umask to 077 (every binary
//! calls it through [`crate::start`]), so that whatever it creates — sled's
//! files, generated keys, directories — is 0600 or 0700 whatever umask it
//! was started with (022 is common); [`private_dir`] makes a data dir 0700,
//! also when it was there before with looser bits.

use std::io;
use std::path::Path;

/// The umask every service runs with: no bit for group or others.
#[cfg(unix)]
pub const UMASK: u32 = 0o077;

/// Sets the process's umask to [`UMASK`]: files and directories created
/// from now on (by any thread) are the owner's alone.
pub fn owner_only_from_now_on() {
    #[cfg(unix)]
    {
        let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(UMASK));
    }
}

/// Creates `dir` (and its missing parents) 0700, or makes an existing one
/// 0700 when group or others have any bit on it.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)?;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_data_dir_is_made_owner_only_new_or_old() {
        let root = tempfile::tempdir().expect("temp dir");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let new = root.path().join("a").join("b");
        private_dir(&new).unwrap();
        assert_eq!(mode(&new), 0o700);
        let old = root.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&old).unwrap();
        assert_eq!(mode(&old), 0o700, "an open one is closed");
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o500)).unwrap();
        private_dir(&old).unwrap();
        assert_eq!(mode(&old), 0o500, "an owner-only one is left as it is");
    }
}
