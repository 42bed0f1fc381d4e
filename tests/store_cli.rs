//! The store commands end to end: `ingest` from a loopback site into a sled
//! store on disk, `queue`, `complete`, `stats --check` and `export`
//! (`kill -9`: tests/crash_recovery.rs).

mod common;

use std::path::Path;
use std::process::Output;

use common::{indexed_site, json_lines, run, run_with_input, stderr, stdout, with_store};

fn ingest(dir: &Path, root: &str) -> Output {
    run(&with_store(
        dir,
        &["ingest", "--allow-private", "--min-delay", "0", root],
    ))
}

#[test]
fn ingest_queue_complete_stats_export() {
    let site = indexed_site(3, 20);
    let dir = tempfile::tempdir().unwrap();
    let root = site.url("/");
    let o = ingest(dir.path(), &root);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("60 entries, 60 new"), "{}", stderr(&o));

    // Again: conditional GETs, the index descended through what the store remembers.
    let o = ingest(dir.path(), &root);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("not modified"), "{}", stderr(&o));
    let conditional = site
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/sitemaps/") && r.header("if-none-match").is_some())
        .count();
    assert_eq!(conditional, 3);

    let o = run(&with_store(dir.path(), &["stats", "--check"]));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("60 active"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("check: 60 records, 60 due entries: ok"),
        "{}",
        stdout(&o)
    );

    let o = run(&with_store(dir.path(), &["queue", "-n", "5"]));
    assert_eq!(json_lines(&stdout(&o)).len(), 5);
    let o = run(&with_store(
        dir.path(),
        &["queue", "-n", "4", "--lease", "600", "--per-host", "4"],
    ));
    let leased = json_lines(&stdout(&o));
    assert_eq!(leased.len(), 4);
    assert!(
        leased
            .iter()
            .all(|l| l["reason"] == "leased" && l["due_reason"] == "new" && l["lease"].is_string())
    );

    let mut input = String::new();
    for (i, l) in leased.iter().enumerate() {
        let outcome = ["changed", "not-modified", "gone", "error"][i];
        input.push_str(&format!(
            "{{\"url\":{},\"outcome\":\"{outcome}\",\"status\":503}}\n",
            l["url"]
        ));
    }
    input.push_str("{\"url\":\"https://nowhere.example/x\",\"outcome\":\"changed\"}\n");
    input.push_str("{\"url\":\"https://nowhere.example/x\",\"outcome\":\"sideways\"}\n");
    let o = run_with_input(&with_store(dir.path(), &["complete"]), input.as_bytes());
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("line 5: unknown URL"), "{err}");
    assert!(
        err.contains("line 6: unknown outcome \"sideways\""),
        "{err}"
    );
    assert!(err.contains("complete: 4 recorded, 2 failed"), "{err}");

    let o = run(&with_store(dir.path(), &["export"]));
    let rows = json_lines(&stdout(&o));
    assert_eq!(rows.len(), 60);
    let fetched = rows.iter().filter(|r| r["fetches"] == 1).count();
    assert_eq!(fetched, 4);
    assert_eq!(rows[0]["changefreq"], "daily");
    assert_eq!(rows[0]["lastmod_precision"], "day");
    let o = run(&with_store(dir.path(), &["export", "--format", "csv"]));
    let csv = stdout(&o);
    assert!(
        csv.starts_with("url,first_seen,last_seen,lastmod,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 61);

    let o = run(&with_store(dir.path(), &["stats", "--json", "--check"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["active"], 60);
    assert_eq!(v["check"]["missing_due"], serde_json::json!([]));
}

#[test]
fn store_command_edge_cases() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let missing = missing.to_str().unwrap();
    // Read commands refuse a store that is not there.
    let o = run(&["stats", "--store", missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no store at"), "{}", stderr(&o));
    assert!(!std::path::Path::new(missing).exists());
    // A file that is not there is not taken for a site.
    let store = dir.path().join("st");
    let store = store.to_str().unwrap();
    for arg in ["missing.xml", "data/sitemap.xml", "./x"] {
        let o = run(&["ingest", "--store", store, arg]);
        assert_eq!(o.status.code(), Some(1), "{arg}");
        assert!(stderr(&o).contains("no such file"), "{arg}: {}", stderr(&o));
    }
    // Two files: the summary adds them up.
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "https://x.example/1\nhttps://x.example/2\n").unwrap();
    std::fs::write(&b, "https://x.example/3\n").unwrap();
    let o = run(&[
        "ingest",
        "--store",
        store,
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("3 entries, 3 new"), "{}", stderr(&o));
    // `queue` output with an outcome added is valid `complete` input.
    let o = run(&["queue", "--store", store, "-n", "1", "--lease", "60"]);
    let mut line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    line["outcome"] = "changed".into();
    let mut input = format!("{line}\n").into_bytes();
    input.extend_from_slice(b"\xff\xfe not utf-8\n");
    // A line past the 64 KiB cap is reported and skipped, not kept.
    input.extend(std::iter::repeat_n(b'x', 300_000));
    input.push(b'\n');
    input.extend_from_slice(format!("{line}\n").as_bytes());
    let o = run_with_input(&["complete", "--store", store], &input);
    let err = stderr(&o);
    assert!(err.contains("line 2: not UTF-8"), "{err}");
    assert!(
        err.contains("line 3: line longer than 65536 bytes"),
        "{err}"
    );
    assert!(err.contains("complete: 2 recorded, 2 failed"), "{err}");
    // CSV export of an empty store still has its header.
    let empty = dir.path().join("empty");
    let empty = empty.to_str().unwrap();
    std::fs::create_dir(empty).unwrap();
    let o = run(&["export", "--store", empty, "--format", "csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("url,first_seen,"), "{}", stdout(&o));
}

/// `stats --check` seen failing: a store whose due entry of one URL was
/// removed behind the binary's back (with sled, as the store lays keys out:
/// one tree, `sitemapd`; the ingest put the new URLs' due entries in a
/// run, a `d` key whose value lists them, see
/// crates/scheduler/src/internal/keys.rs) exits 1 and names the URL.
#[test]
fn stats_check_exits_1_and_names_a_missing_due_entry() {
    let site = indexed_site(1, 5);
    let dir = tempfile::tempdir().unwrap();
    let o = ingest(dir.path(), &site.url("/"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&with_store(dir.path(), &["stats", "--check"]));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    let victim = {
        // The binary has exited; its lock is released with the process.
        let db = sled::open(dir.path()).unwrap();
        // The partition (tree) that holds the site's keys.
        let tree = db
            .tree_names()
            .into_iter()
            .map(|name| db.open_tree(name).unwrap())
            .find(|tree| tree.scan_prefix([b'd']).next().is_some())
            .expect("a tree with a due list");
        let (key, value) = tree.scan_prefix([b'd']).next().unwrap().unwrap();
        assert!(sitemapd_scheduler::internal::keys::parse_run(&key).is_some());
        use sitemapd_scheduler::internal::record::{DueList, decode, encode};
        let mut list: DueList = decode(&value).unwrap();
        assert_eq!(list.entries.len(), 5);
        let url = list.entries.pop().unwrap().url;
        assert!(url.contains("/s0/page-"), "{url}");
        tree.insert(&key, encode(&list)).unwrap();
        db.flush().unwrap();
        url
    };
    let o = run(&with_store(dir.path(), &["stats", "--check"]));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("check: 5 records, 4 due entries: PROBLEMS"),
        "{out}"
    );
    assert!(
        out.contains(&format!("record without its due entry: {victim}")),
        "{out}"
    );
    let o = run(&with_store(dir.path(), &["stats", "--check", "--json"]));
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["check"]["missing_due"], serde_json::json!([victim]));
}

#[test]
fn a_file_given_as_the_store_or_a_directory_as_a_sitemap_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "not a store").unwrap();
    for args in [&["ingest", "a.example"][..], &["queue"][..], &["stats"][..]] {
        let o = run(&with_store(&file, args));
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("is a file, not a store directory"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("error").count(), 1, "{args:?}: {err}");
        assert!(!err.contains("no store at"), "{args:?}: {err}");
    }
    // A directory where a sitemap file is read: the same words from both.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let sub = sub.to_str().unwrap();
    let store = dir.path().join("store");
    for o in [
        run(&["parse", sub]),
        run(&with_store(&store, &["ingest", sub])),
    ] {
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert_eq!(
            err.trim_end(),
            format!(
                "error: {sub} is a directory, not a sitemap file: give the path of a file (or a URL to fetch)"
            )
        );
    }
}

#[test]
fn complete_reports_bad_lines_in_input_order_with_their_line_numbers() {
    let site = indexed_site(1, 2);
    let dir = tempfile::tempdir().unwrap();
    let o = ingest(dir.path(), &site.url("/"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let known = site.url("/s0/page-0");
    let input = format!(
        "{{\"url\":\"https://nowhere.example/x\",\"outcome\":\"changed\"}}\n\
         nope\n\
         {{\"url\":\"{known}\",\"outcome\":\"changed\"}}\n\
         {{\"outcome\":\"changed\"}}\n"
    );
    let o = run_with_input(&with_store(dir.path(), &["complete"]), input.as_bytes());
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines[0].starts_with("error: input line 1: unknown URL"),
        "{err}"
    );
    assert!(
        lines[1].starts_with(
            "error: input line 2: not JSON (at column 2): each line is one JSON object"
        ),
        "{err}"
    );
    assert!(
        lines[2].starts_with("error: input line 4: missing field `url` (at column"),
        "{err}"
    );
    assert!(!err.contains("expected ident"), "{err}");
    assert!(!err.contains("at line 1"), "{err}");
    assert_eq!(lines[3], "complete: 1 recorded, 3 failed", "{err}");
}

#[test]
fn a_first_ingest_that_reads_nothing_leaves_no_store() {
    // A port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let o = ingest(&store, &format!("http://127.0.0.1:{port}/"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!store.exists(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no store was left"), "{}", stderr(&o));
    let o = run(&with_store(&store, &["stats"]));
    assert!(stderr(&o).contains("no store at"), "{}", stderr(&o));

    // A store that was there before is kept, empty or not.
    std::fs::create_dir(&store).unwrap();
    let o = ingest(&store, &format!("http://127.0.0.1:{port}/"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(store.is_dir());
}

#[test]
fn a_store_held_by_another_command_says_so() {
    use std::io::Write;
    use std::process::Stdio;
    let site = indexed_site(1, 2);
    let dir = tempfile::tempdir().unwrap();
    let o = ingest(dir.path(), &site.url("/"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // `complete` holds the store while its input is open.
    let mut holder = common::bin()
        .args(["complete", "--store", dir.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    let mut err = String::new();
    for _ in 0..100 {
        let o = run(&with_store(dir.path(), &["queue", "-n", "1"]));
        err = stderr(&o);
        if err.contains("in use") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    assert!(holder.wait().unwrap().success());
    assert!(err.contains("in use by another sitemapd process"), "{err}");
    assert!(err.contains("another command on this store"), "{err}");
    assert!(!err.contains("most likely"), "{err}");
}

#[test]
fn stats_pluralise_and_show_the_size_in_binary_units() {
    let site = sitemapd_testsite::TestSite::start();
    site.route(
        "/robots.txt",
        sitemapd_testsite::Reply::ok(format!("Sitemap: {}\n", site.url("/s.xml"))),
    );
    site.route(
        "/s.xml",
        sitemapd_testsite::Reply::ok(format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{}</loc></url></urlset>"#,
            site.url("/p")
        )),
    );
    let dir = tempfile::tempdir().unwrap();
    let o = ingest(dir.path(), &site.url("/"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(" retired, 1 sitemap, "), "{err}");
    assert!(err.contains("robots.txt: 1 sitemap declared"), "{err}");
    assert!(err.contains("/s.xml 200 1 url\n"), "{err}");

    let o = run(&with_store(dir.path(), &["stats"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap();
    assert!(!first.contains("bytes"), "{out}");
    let size = first
        .split_once(" (")
        .and_then(|(_, rest)| rest.split_once(" on disk)"))
        .map(|(size, _)| size)
        .unwrap_or_else(|| panic!("no size: {out}"));
    let (number, unit) = size.split_once(' ').unwrap();
    assert!(["B", "KiB", "MiB", "GiB"].contains(&unit), "{out}");
    assert!(number.parse::<f64>().is_ok(), "{out}");
    assert!(out.contains(" retired; 1 sitemap\n"), "{out}");
    assert!(out.contains("; 0 sitemaps failing"), "{out}");

    // Exact bytes in JSON.
    let o = run(&with_store(dir.path(), &["stats", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(json["disk_bytes"].as_u64().unwrap() > 0, "{json}");
}

#[test]
fn ingest_compacts_a_store_grown_past_the_settings() {
    let site = indexed_site(4, 10_000);
    let root = site.url("/");
    // Past the floor (1 MiB here: sled's files for 40,000 URLs take more)
    // a store never compacted is compacted as the ingest ends; with
    // `--compact-growth 0`, never.
    for (growth, compacts) in [("2", true), ("0", false)] {
        let dir = tempfile::tempdir().unwrap();
        let o = run(&with_store(
            dir.path(),
            &[
                "ingest",
                "--allow-private",
                "--min-delay",
                "0",
                "--compact-floor-mib",
                "1",
                "--compact-growth",
                growth,
                &root,
            ],
        ));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let err = stderr(&o);
        let line = err.lines().find(|l| l.starts_with("store compacted: "));
        assert_eq!(line.is_some(), compacts, "growth {growth}: {err}");
        if let Some(line) = line {
            assert!(line.contains(" on disk in "), "{line}");
        }
        assert!(err.contains("40000 entries, 40000 new"), "{err}");
        let o = run(&with_store(dir.path(), &["stats", "--check"]));
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        assert!(
            stdout(&o).contains("check: 40000 records, 40000 due entries: ok"),
            "{}",
            stdout(&o)
        );
    }
}
