//! A damaged store: no panic reaches the user; every
//! command says the store is damaged and what to do.

mod common;

use common::{indexed_site, run, stderr, stdout, with_store};

/// A loopback site of `sitemaps` sitemaps of `per` URLs, ingested into a
/// store in a temporary directory: the site, the directory, the store's
/// path.
fn ingested(
    sitemaps: usize,
    per: usize,
) -> (
    sitemapd_testsite::TestSite,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let site = indexed_site(sitemaps, per);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let root = site.url("/");
    let o = run(&with_store(
        &store,
        &["ingest", "--allow-private", "--min-delay", "0", &root],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (site, dir, store)
}

/// A store of 20,000 URLs with its `db` file cut to half its size (what a
/// full disk or a bad copy leaves): sled panicked inside its segment code
/// on every command (exit 101, a backtrace).
#[test]
fn a_store_cut_in_half_gives_a_clear_error_not_a_panic() {
    let (site, _dir, store) = ingested(10, 2_000);
    let root = site.url("/");
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

/// A store whose records do not decode where the commands read them (the
/// pages of URL records and the host's record, overwritten with sled
/// behind the binary's back): `queue`, `stats` and `export` printed what
/// they could and exited 0, as if the store were whole. Now they exit 1
/// after their output, naming the damage; `stats --repair` removes the
/// records, and the commands exit 0 again.
#[test]
fn records_that_do_not_decode_fail_the_commands_that_read_them() {
    let (_site, _dir, store) = ingested(1, 5);
    {
        // The binary has exited; its lock is released with the process.
        let db = sled::open(&store).unwrap();
        // `p`: pages of URL records; `h`: host records
        // (crates/scheduler/src/internal/keys.rs), in whichever of the
        // store's partitions (trees) holds the site's.
        for prefix in [b'p', b'h'] {
            let mut damaged = 0;
            for name in db.tree_names() {
                let tree = db.open_tree(name).unwrap();
                let keys: Vec<_> = tree
                    .scan_prefix([prefix])
                    .map(|item| item.unwrap().0)
                    .collect();
                for key in keys {
                    tree.insert(key, &[0xff, 0xff, 0xff][..]).unwrap();
                    damaged += 1;
                }
            }
            assert!(damaged > 0, "no {} key", prefix as char);
        }
        db.flush().unwrap();
    }
    let path = store.to_str().unwrap();
    for args in [&["queue", "-n", "5"][..], &["stats"], &["export"]] {
        let o = run(&with_store(&store, args));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("damaged") && e.contains("did not decode") && e.contains(path),
            "{args:?}: {e}"
        );
    }
    // What `stats` could read is still printed before the error.
    let o = run(&with_store(&store, &["stats"]));
    assert!(stdout(&o).contains("sitemaps"), "{}", stdout(&o));

    let o = run(&with_store(&store, &["stats", "--repair"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for args in [
        &["queue", "-n", "5"][..],
        &["stats", "--check"],
        &["export"],
    ] {
        let o = run(&with_store(&store, args));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}
