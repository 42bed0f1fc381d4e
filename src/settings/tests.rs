//! The layering rule, the printed file and the names. The environment
//! layer is read by clap from the process environment, so its place in the
//! order is checked through the real binary (tests/settings_cli.rs), not
//! here (no test mutates the process environment).

use std::path::{Path, PathBuf};

use clap::Command;
use sitemapd_scheduler::policy::BuiltinPolicy;
use sitemapd_sim::SimPolicy;

use super::*;

/// `T` as the command line `args` and the file `file` give it.
fn load<T: Settings>(file: Option<&Path>, args: &[&str]) -> Result<T> {
    let m = T::augment_args(Command::new("t"))
        .try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))?;
    let parsed = T::from_arg_matches(&m)?;
    let config = ConfigArgs {
        config: file.map(Path::to_path_buf),
        print_config: false,
    };
    layer(&config, &parsed, &m)
}

fn file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("settings.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn round_trip<T: Settings + PartialEq>() {
    let printed = to_toml(&T::default()).unwrap();
    let parsed: T = toml::from_str(&printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
    assert_eq!(parsed, T::default(), "{printed}");
    let dir = tempfile::tempdir().unwrap();
    let layered: T = load(Some(&file(&dir, &printed)), &[]).unwrap();
    assert_eq!(layered, T::default());
}

#[test]
fn the_printed_default_parses_back_to_the_default() {
    round_trip::<ParseCommandSettings>();
    round_trip::<RobotsCommandSettings>();
    round_trip::<SiteSettings>();
    round_trip::<IngestSettings>();
    round_trip::<QueueSettings>();
    round_trip::<DaemonSettings>();
    round_trip::<SimulateSettings>();
}

#[test]
fn the_printed_file_comments_every_key_with_its_help() {
    let printed = to_toml(&DaemonSettings::default()).unwrap();
    assert!(printed.contains("# Index nesting followed at most (0 to 8)\nmax_depth = 3\n"));
    assert!(printed.contains("\n[fetch]\n"), "{printed}");
    // Unset keys are shown, commented out.
    assert!(printed.contains("\n# proxy =\n"), "{printed}");
    assert!(printed.contains("\n# policy =\n"), "{printed}");
}

#[test]
fn defaults_come_from_the_libraries() {
    let d = DaemonSettings::default();
    assert_eq!(d.fetch.timeout, 300.0);
    assert_eq!(d.fetch.min_delay, 1.0);
    assert_eq!(d.walk.max_sitemaps, 5_000);
    assert_eq!(d.parse.max_entries, 50_000);
    assert_eq!(d.refresh.min_refresh_secs, 900);
    assert_eq!(d.scheduler.lease_delay, 1.0);
    assert_eq!(d.store.store, PathBuf::from("sitemapd-data"));
    assert_eq!(
        SimulateSettings::default().sim(),
        sitemapd_sim::SimConfig::default()
    );
    // With nothing given, the layers give the default.
    assert_eq!(load::<DaemonSettings>(None, &[]).unwrap(), d);
}

#[test]
fn default_then_file_then_flag_for_every_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(
        &dir,
        "store = \"from-file\"\n\
         [api]\nmax_lease = 11\n\
         [scheduler]\nper_host = 12\n\
         [refresh]\nsitemap_secs = 13\n\
         [walk]\nmax_depth = 4\n\
         [parse]\nmax_entries = 15\n\
         [fetch]\nmin_delay = 5.0\nallow_private = true\n",
    );
    let d = DaemonSettings::default();
    let f: DaemonSettings = load(Some(&path), &[]).unwrap();
    assert_eq!(f.store.store, PathBuf::from("from-file"));
    assert_eq!(f.api.max_lease, 11);
    assert_eq!(f.scheduler.per_host, 12);
    assert_eq!(f.refresh.sitemap_secs, 13);
    assert_eq!(f.walk.max_depth, 4);
    assert_eq!(f.parse.max_entries, 15);
    assert_eq!(f.fetch.min_delay, 5.0);
    assert!(f.fetch.allow_private);
    // What the file does not set keeps its default.
    assert_eq!(f.api.listen, d.api.listen);
    assert_eq!(f.fetch.timeout, d.fetch.timeout);

    let flags = [
        "--store",
        "from-flag",
        "--max-lease",
        "21",
        "--per-host",
        "22",
        "--sitemap-secs",
        "23",
        "--max-depth",
        "5",
        "--max-entries",
        "25",
        "--min-delay",
        "2",
        "--timeout",
        "26",
    ];
    let g: DaemonSettings = load(Some(&path), &flags).unwrap();
    assert_eq!(g.store.store, PathBuf::from("from-flag"));
    assert_eq!(g.api.max_lease, 21);
    assert_eq!(g.scheduler.per_host, 22);
    assert_eq!(g.refresh.sitemap_secs, 23);
    assert_eq!(g.walk.max_depth, 5);
    assert_eq!(g.parse.max_entries, 25);
    assert_eq!(g.fetch.min_delay, 2.0);
    assert_eq!(g.fetch.timeout, 26.0);
    // A flag not given leaves the file's value, even a `true` one.
    assert!(g.fetch.allow_private);
}

#[test]
fn simulate_settings_layer_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(
        &dir,
        "policies = [\"fixed\", \"adaptive\"]\nseeds = 2\n\
         [world]\npages = 60\nhosts = 3\n[sitemap]\nlastmod = \"day\"\n[crawl]\nbudget = 60\n",
    );
    let f: SimulateSettings = load(Some(&path), &[]).unwrap();
    assert_eq!(
        f.policies,
        [
            SimPolicy::Store(BuiltinPolicy::Fixed),
            SimPolicy::Store(BuiltinPolicy::Adaptive)
        ]
    );
    assert_eq!(f.seeds, 2);
    assert_eq!(f.world.pages, 60);
    assert_eq!(f.sitemap.lastmod, sitemapd_sim::LastmodPrecision::Day);
    assert_eq!(f.crawl.budget, 60.0);
    assert_eq!(f.days, SimulateSettings::default().days);
    let g: SimulateSettings = load(
        Some(&path),
        &[
            "--policies",
            "uniform",
            "--pages",
            "70",
            "--lastmod",
            "none",
            "--budget",
            "80",
            "--estimator",
            "naive",
        ],
    )
    .unwrap();
    assert_eq!(g.policies, [SimPolicy::Store(BuiltinPolicy::Uniform)]);
    assert_eq!(g.seeds, 2);
    assert_eq!(g.world.pages, 70);
    assert_eq!(g.world.hosts, 3);
    assert_eq!(g.sitemap.lastmod, sitemapd_sim::LastmodPrecision::None);
    assert_eq!(g.crawl.budget, 80.0);
    assert_eq!(
        g.crawl.estimator,
        sitemapd_scheduler::estimate::Estimator::Naive
    );
}

#[test]
fn unknown_keys_are_refused_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for text in [
        "[fetch]\nuser_agnet = \"x\"\n",
        "user_agnet = 1\n",
        "[fetchh]\n",
    ] {
        let path = file(&dir, text);
        let e = format!(
            "{:#}",
            load::<DaemonSettings>(Some(&path), &[]).unwrap_err()
        );
        let key = if text.contains("fetchh") {
            "fetchh"
        } else {
            "user_agnet"
        };
        assert!(e.contains(key) && e.contains("settings.toml"), "{e}");
    }
    // A key of another command's settings is unknown here.
    let path = file(&dir, "[api]\nmax_lease = 3\n");
    let e = format!("{:#}", load::<SiteSettings>(Some(&path), &[]).unwrap_err());
    assert!(e.contains("api"), "{e}");
    // A file that is not there is an error, not the defaults.
    let e = load::<SiteSettings>(Some(&dir.path().join("nope.toml")), &[]).unwrap_err();
    assert!(format!("{e:#}").contains("nope.toml"), "{e:#}");
}

#[test]
fn bad_values_name_their_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("[api]\nlisten = \"nowhere\"\n", "listen"),
        (
            "[refresh]\nmin_refresh_secs = 10\nmax_refresh_secs = 5\n",
            "refresh.max_refresh_secs",
        ),
        ("[fetch]\ntimeout = 0\n", "fetch.timeout"),
        ("[fetch]\nresolve = [\"a.example:1=1.2.3.4\"]\n", "resolve"),
        ("[scheduler]\nretire_after = 9\n", "scheduler.retire_after"),
        (
            "[api]\nurlfrontier_tls_cert = \"c.pem\"\n",
            "api.urlfrontier_tls_key",
        ),
        (
            "[api]\nurlfrontier_client_ca = \"ca.pem\"\n",
            "api.urlfrontier_client_ca",
        ),
    ] {
        let path = file(&dir, text);
        let e = format!(
            "{:#}",
            load::<DaemonSettings>(Some(&path), &[]).unwrap_err()
        );
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[test]
fn a_bad_enum_value_lists_the_possible_values() {
    // On the command line (and in the environment): clap's message.
    let e = load::<SiteSettings>(None, &["--scope", "hoste"]).unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("possible values") && e.contains("directory"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        load::<SimulateSettings>(None, &["--process", "poison"]).unwrap_err()
    );
    assert!(e.contains("possible values") && e.contains("bursty"), "{e}");
    // In the file: the key and the variants.
    let dir = tempfile::tempdir().unwrap();
    for (text, key, variant) in [
        ("[parse]\nscope = \"hoste\"\n", "scope", "directory"),
        ("[scheduler]\npolicy = \"adaptiv\"\n", "policy", "adaptive"),
        ("[api]\nlog_format = \"xml\"\n", "log_format", "pretty"),
    ] {
        let path = file(&dir, text);
        let e = format!(
            "{:#}",
            load::<DaemonSettings>(Some(&path), &[]).unwrap_err()
        );
        assert!(e.contains(key) && e.contains(variant), "{text}: {e}");
    }
    let path = file(&dir, "[world]\nprocess = \"poison\"\n");
    let e = format!(
        "{:#}",
        load::<SimulateSettings>(Some(&path), &[]).unwrap_err()
    );
    assert!(e.contains("process") && e.contains("bursty"), "{e}");
}

#[test]
fn daemon_flags_without_a_file() {
    let s: DaemonSettings = load(
        None,
        &["--store", "b", "--allow-private", "--policy", "lastmod"],
    )
    .unwrap();
    assert_eq!(s.store.store, PathBuf::from("b"));
    assert!(s.fetch.allow_private);
    assert_eq!(s.scheduler.policy, Some(BuiltinPolicy::Lastmod));
    assert_eq!(
        s.scheduler.store_options().policy.as_deref(),
        Some("lastmod")
    );
}
