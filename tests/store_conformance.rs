//! The journal's storage conformance suite (`battlelog_journal::store::
//! conformance`, feature `test-util`), run from outside the journal crate
//! as a store of another crate would run it: every check on sled (real
//! files on disk) and in memory, each on a fresh store.

use std::sync::Arc;

use battlelog_journal::store::EventStore;
use battlelog_journal::{MemoryStore, SledStore};
use battlelog_test_support::temp_dir;

/// Small groups and cache: the suite's streams are tiny.
fn sled_at(dir: &std::path::Path) -> Arc<dyn EventStore> {
    Arc::new(SledStore::open(dir, 1 << 20, 64).expect("open sled"))
}

mod sled {
    use super::*;

    battlelog_journal::conformance_tests!(async {
        let dir = temp_dir("conformance-sled");
        (sled_at(dir.path()), dir)
    });

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn survives_reopen() {
        let dir = temp_dir("conformance-sled-reopen");
        battlelog_journal::store::conformance::survives_reopen(|| async { sled_at(dir.path()) }).await;
    }
}

mod memory {
    use super::*;

    battlelog_journal::conformance_tests!(async { (Arc::new(MemoryStore::new()) as Arc<dyn EventStore>, ()) });
}
