//! A damaged store: no panic reaches the user; every
//! command says the store is damaged and what to do.

mod common;

use common::{indexed_site, run, stderr, with_store};

/// A store of 20,000 URLs with its `db` file cut to half its size (what a
/// full disk or a bad copy leaves): sled panicked inside its segment code
/// on every command (exit 101, a backtrace).
#[test]
fn a_store_cut_in_half_gives_a_clear_error_not_a_panic() {
    let site = indexed_site(10, 2_000);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let root = site.url("/");
    let o = run(&with_store(
        &store,
        &["ingest", "--allow-private", "--min-delay", "0", &root],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let db = store.join("db");
    let size = std::fs::metadata(&db).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(size / 2)
        .unwrap();
    for args in [
        &["stats", "--check"][..],
        &["queue", "-n", "3"],
        &["export"],
        &["ingest", "--allow-private", "--min-delay", "0", &root],
    ] {
        let o = run(&with_store(&store, args));
        let e = stderr(&o);
        assert_ne!(o.status.code(), Some(101), "{args:?} panicked: {e}");
        // No panic report reaches the user (a caught one is named in the
        // error's detail, "sled panicked: …", which is fine).
        assert!(
            !e.contains("thread '") && !e.contains("stack backtrace"),
            "{args:?}: {e}"
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("damaged") && e.contains(store.to_str().unwrap()),
            "{args:?}: {e}"
        );
    }
}
