//! One layering rule through the real binary: built-in default < `--config`
//! file < `SITEMAPD_*` environment variables < flags, shown by
//! `--print-config` (which prints the effective settings and exits).

mod common;

use common::{bin, stderr, stdout};

/// `key = value` lines of a printed configuration, by table.
fn value(printed: &str, table: &str, key: &str) -> String {
    let mut current = String::new();
    for line in printed.lines() {
        if let Some(t) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = t.to_string();
        } else if current == table
            && let Some((k, v)) = line.split_once(" = ")
            && k == key
        {
            return v.to_string();
        }
    }
    panic!("no {table}.{key} in\n{printed}")
}

#[test]
fn daemon_print_config_shows_default_file_env_and_flag_layered() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.toml");
    std::fs::write(
        &file,
        "sites = [\"a.example\"]\n\
         [fetch]\nmin_delay = 5.0\ntimeout = 7.0\nuser_agent = \"file-agent\"\n\
         [scheduler]\nper_host = 3\nlease_ttl = 33\n\
         [api]\nmax_lease = 44\n",
    )
    .unwrap();
    let o = bin()
        .args([
            "daemon",
            "--config",
            file.to_str().unwrap(),
            "--print-config",
        ])
        .args(["--per-host", "5", "--max-depth", "6", "b.example"])
        .env("SITEMAPD_TIMEOUT", "9")
        .env("SITEMAPD_PER_HOST", "4")
        .env("SITEMAPD_LEASE_TTL", "55")
        .env("SITEMAPD_REQUEST_BODY_SECS", "12")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let p = stdout(&o);
    // Default only.
    assert_eq!(value(&p, "api", "listen"), "\"127.0.0.1:8710\"");
    assert_eq!(value(&p, "refresh", "sitemap_secs"), "86400");
    // File over default.
    assert_eq!(value(&p, "fetch", "min_delay"), "5.0");
    assert_eq!(value(&p, "fetch", "user_agent"), "\"file-agent\"");
    assert_eq!(value(&p, "api", "max_lease"), "44");
    // Environment over file, and over default.
    assert_eq!(value(&p, "fetch", "timeout"), "9.0");
    assert_eq!(value(&p, "scheduler", "lease_ttl"), "55");
    assert_eq!(value(&p, "api", "request_body_secs"), "12");
    // Flag over environment over file; a flag over the default.
    assert_eq!(value(&p, "scheduler", "per_host"), "5");
    assert_eq!(value(&p, "walk", "max_depth"), "6");
    // SITE arguments add to the file's sites.
    assert_eq!(value(&p, "", "sites"), "[\"a.example\", \"b.example\"]");

    // What it printed is a configuration that gives the same again.
    let again = dir.path().join("again.toml");
    std::fs::write(&again, &p).unwrap();
    let o = bin()
        .args([
            "daemon",
            "--config",
            again.to_str().unwrap(),
            "--print-config",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), p);
}

#[test]
fn every_command_with_settings_prints_them_and_reads_the_environment() {
    for (args, table, key, env, expected) in [
        (
            vec!["parse"],
            "parse",
            "max_entries",
            "SITEMAPD_MAX_ENTRIES",
            "7",
        ),
        (
            vec!["robots"],
            "fetch",
            "timeout",
            "SITEMAPD_TIMEOUT",
            "8.0",
        ),
        (
            vec!["discover"],
            "walk",
            "max_sitemaps",
            "SITEMAPD_MAX_SITEMAPS",
            "9",
        ),
        (
            vec!["ingest"],
            "",
            "store",
            "SITEMAPD_STORE",
            "\"elsewhere\"",
        ),
        (
            vec!["queue"],
            "scheduler",
            "per_host",
            "SITEMAPD_PER_HOST",
            "2",
        ),
        (vec!["simulate"], "world", "pages", "SITEMAPD_PAGES", "123"),
        (
            vec!["simulate"],
            "crawl",
            "estimator",
            "SITEMAPD_ESTIMATOR",
            "\"naive\"",
        ),
    ] {
        let raw = expected.trim_matches('"');
        let o = bin()
            .args(&args)
            .arg("--print-config")
            .env(env, raw)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(value(&stdout(&o), table, key), expected, "{args:?}");
    }
}

#[test]
fn a_bad_environment_value_is_a_usage_error_listing_the_choices() {
    let o = bin()
        .args(["discover", "--print-config"])
        .env("SITEMAPD_SCOPE", "hoste")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn queue_takes_count_for_n_and_names_n_as_it_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none");
    let store = store.to_str().unwrap();
    // `--count` is taken for `-n`: the command goes on to the store.
    let o = bin()
        .args(["queue", "--count", "5", "--store", store])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(err.contains("no store at"), "{err}");
    assert!(!err.contains("--config"), "{err}");
    // A bad value names the flag as it is typed.
    let o = bin().args(["queue", "-n", "abc"]).output().unwrap();
    let err = stderr(&o);
    assert!(err.contains("'-n <N>'"), "{err}");
    assert!(!err.contains("--n <N>"), "{err}");
}

#[test]
fn a_bad_config_file_says_what_is_wrong_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.toml");
    std::fs::write(&file, "[scheduler]\nper_hots = 3\n").unwrap();
    let o = bin()
        .args(["queue", "--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("unknown key `per_hots` in [scheduler] (the keys there: `policy`"),
        "{err}"
    );
    assert!(err.contains("`per_host`"), "{err}");
    assert!(!err.contains("``"), "{err}");

    // A directory given as the file.
    let o = bin()
        .args(["queue", "--config", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(err.contains("is a directory, not a TOML file"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}
