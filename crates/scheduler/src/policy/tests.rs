//! Policy tests: due times on hand-made states, the changefreq table,
//! adaptive updates, lastmod trust/precision/X8, the KKT allocations and the
//! closed-form values of docs/scheduling.md#closed-forms.

use super::*;
use proptest::prelude::*;

/// 2024-05-01T00:00:00Z.
const MAY1: i64 = 1_714_521_600;
const H: i64 = 3600;
const D: i64 = 86_400;

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn all_policies(params: &Params) -> Vec<Box<dyn Policy>> {
    POLICY_NAMES
        .iter()
        .map(|n| policy(n, params.clone()).expect("known policy"))
        .collect()
}

fn fetched(last: i64) -> UrlState {
    UrlState {
        first_seen: ts(MAY1 - 30 * D),
        last_fetch: Some(ts(last)),
        last_attempt: Some(ts(last)),
        last_outcome: Some(FetchOutcome::NotModified),
        ..UrlState::default()
    }
}

const TRUSTED: HostState = HostState {
    lastmod_trusted: true,
    lastmod_complete: false,
    lastmod_probation: false,
};
const COMPLETE: HostState = HostState {
    lastmod_trusted: true,
    lastmod_complete: true,
    lastmod_probation: false,
};
const UNTRUSTED: HostState = HostState {
    lastmod_trusted: false,
    lastmod_complete: false,
    lastmod_probation: false,
};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

// ---- names, factory ----

#[test]
fn names_and_factory() {
    for (p, n) in all_policies(&Params::default()).iter().zip(POLICY_NAMES) {
        assert_eq!(p.name(), n);
    }
    assert_eq!(
        policy("nope", Params::default()).unwrap_err(),
        UnknownPolicy::Name("nope".into())
    );
    let own = Params {
        fallback: "lastmod".into(),
        ..Params::default()
    };
    let err = policy("lastmod", own).unwrap_err();
    assert_eq!(err, UnknownPolicy::Fallback("lastmod".into()));
    assert!(err.to_string().contains("cannot fall back"));
    let bad = Params {
        fallback: "weekly".into(),
        ..Params::default()
    };
    assert_eq!(
        policy("lastmod", bad).unwrap_err(),
        UnknownPolicy::Fallback("weekly".into())
    );
    for fb in POLICY_NAMES.iter().filter(|n| **n != "lastmod") {
        let p = Params {
            fallback: (*fb).into(),
            ..Params::default()
        };
        assert!(policy("lastmod", p).is_ok(), "{fb}");
    }
    assert!(
        UnknownPolicy::Name("x".into())
            .to_string()
            .contains("sitemap-hints")
    );
}

#[test]
fn reason_names() {
    let all = [
        (Reason::New, "new"),
        (Reason::LastmodNewer, "lastmod-newer"),
        (Reason::Interval, "interval"),
        (Reason::Changefreq, "changefreq"),
        (Reason::Adaptive, "adaptive"),
        (Reason::Optimal, "optimal"),
        (Reason::Retry, "retry"),
        (Reason::LeaseExpired, "lease-expired"),
        (Reason::Notified, "notified"),
        (Reason::Requested, "requested"),
    ];
    for (r, s) in all {
        assert_eq!(r.as_str(), s);
        assert_eq!(r.to_string(), s);
    }
}

#[test]
fn defaults() {
    let p = Params::default();
    assert_eq!(p.fixed_interval, 86_400.0);
    assert_eq!(p.min_interval, 3600.0);
    assert_eq!(p.max_interval, 365.0 * 86_400.0);
    assert_eq!((p.adaptive_inc, p.adaptive_dec), (0.4, 0.2));
    assert_eq!(p.initial_interval, 86_400.0);
    assert_eq!(p.retry_after_error, 3600.0);
    assert_eq!(p.fallback, "adaptive");
    assert_eq!(UrlState::default().importance, 1.0);
}

// ---- rules every policy shares ----

#[test]
fn never_fetched_is_new_at_first_seen_everywhere() {
    let url = UrlState {
        first_seen: ts(MAY1),
        lastmod: Some(ts(MAY1 + H)),
        changefreq: Some(ChangeFreq::Hourly),
        rate: Some(1.0),
        ..UrlState::default()
    };
    let params = Params {
        calibration: Calibration {
            multiplier: 0.5,
            ..Calibration::default()
        },
        ..Params::default()
    };
    for p in all_policies(&params) {
        for host in [TRUSTED, UNTRUSTED] {
            let due = p.next_due(&url, &host, ts(MAY1 + 10 * D));
            assert_eq!(
                (due.at.unix(), due.reason),
                (MAY1, Reason::New),
                "{}",
                p.name()
            );
            assert!(due.score.is_finite() && due.score > 0.0, "{}", p.name());
        }
    }
}

#[test]
fn errors_retry_with_backoff_everywhere() {
    let params = Params::default();
    let mut url = fetched(MAY1 - 100 * D);
    url.last_attempt = Some(ts(MAY1));
    url.last_outcome = Some(FetchOutcome::Error);
    url.lastmod = Some(ts(MAY1 - D));
    for p in all_policies(&params) {
        for (errors, delay) in [(0, H), (1, H), (2, 2 * H), (4, 8 * H), (9, 256 * H)] {
            url.errors_in_a_row = errors;
            let due = p.next_due(&url, &TRUSTED, ts(MAY1 + 1));
            assert_eq!(
                (due.at.unix(), due.reason),
                (MAY1 + delay, Reason::Retry),
                "{}",
                p.name()
            );
        }
        url.errors_in_a_row = u32::MAX;
        let due = p.next_due(&url, &TRUSTED, ts(MAY1));
        assert_eq!(due.at.unix(), MAY1 + 365 * D, "capped at max_interval");
    }
    // The base: last attempt, else last success, else first seen.
    let fixed = policy("fixed", params).unwrap();
    url.errors_in_a_row = 1;
    url.last_attempt = None;
    assert_eq!(
        fixed.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 - 100 * D + H
    );
    url.last_fetch = None;
    url.first_seen = ts(MAY1 - 5 * D);
    let due = fixed.next_due(&url, &UNTRUSTED, ts(MAY1));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 - 5 * D + H, Reason::Retry)
    );
}

#[test]
fn retired_by_fetches_is_probed_every_probe_interval_everywhere() {
    let mut url = fetched(MAY1);
    url.last_outcome = Some(FetchOutcome::Gone);
    for p in all_policies(&Params::default()) {
        let due = p.next_due(&url, &TRUSTED, ts(MAY1));
        assert_eq!(
            (due.at.unix(), due.reason, due.score),
            (MAY1 + 30 * D, Reason::Probe, 0.0),
            "{}",
            p.name()
        );
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let params = Params {
            probe_interval: bad,
            ..Params::default()
        };
        let due = policy("fixed", params)
            .unwrap()
            .next_due(&url, &TRUSTED, ts(MAY1));
        assert_eq!(due.at.unix(), MAY1 + 30 * D, "{bad}");
    }
}

/// A redirect that did not retire the URL backs off as an error does:
/// never due at once, doubling per redirect in a row.
#[test]
fn redirect_backs_off_everywhere() {
    let mut url = fetched(MAY1 - D);
    url.last_attempt = Some(ts(MAY1));
    url.last_outcome = Some(FetchOutcome::Redirected);
    for (n, wait) in [(1, H), (2, 2 * H), (3, 4 * H)] {
        url.errors_in_a_row = n;
        for p in all_policies(&Params::default()) {
            let due = p.next_due(&url, &TRUSTED, ts(MAY1));
            assert_eq!(
                (due.at.unix(), due.reason),
                (MAY1 + wait, Reason::Retry),
                "{} after {n}",
                p.name()
            );
        }
    }
}

// ---- fixed ----

#[test]
fn fixed_interval_and_clamps() {
    let url = fetched(MAY1);
    let p = policy("fixed", Params::default()).unwrap();
    let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
    assert_eq!(
        (due.at.unix(), due.reason, due.score),
        (MAY1 + D, Reason::Interval, 1.0)
    );
    let due_with = |fixed_interval: f64| {
        let params = Params {
            fixed_interval,
            ..Params::default()
        };
        policy("fixed", params)
            .unwrap()
            .next_due(&url, &UNTRUSTED, ts(MAY1))
            .at
            .unix()
    };
    assert_eq!(due_with(60.0), MAY1 + H);
    assert_eq!(due_with(f64::NAN), MAY1 + 365 * D);
}

// ---- sitemap-hints ----

#[test]
fn changefreq_table() {
    let table = [
        (ChangeFreq::Always, H),
        (ChangeFreq::Hourly, H),
        (ChangeFreq::Daily, D),
        (ChangeFreq::Weekly, 7 * D),
        (ChangeFreq::Monthly, 30 * D),
        (ChangeFreq::Yearly, 365 * D),
        (ChangeFreq::Never, 365 * D),
    ];
    let p = policy("sitemap-hints", Params::default()).unwrap();
    for (cf, want) in table {
        let mut url = fetched(MAY1);
        url.changefreq = Some(cf);
        let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
        assert_eq!(
            (due.at.unix(), due.reason),
            (MAY1 + want, Reason::Changefreq),
            "{cf:?}"
        );
    }
    // always is clamped up to min_interval, never down to max_interval.
    let tight = Params {
        min_interval: 2.0 * 3600.0,
        max_interval: 100.0 * 86_400.0,
        ..Params::default()
    };
    assert_eq!(changefreq_interval(ChangeFreq::Always, &tight), 7200.0);
    assert_eq!(changefreq_interval(ChangeFreq::Hourly, &tight), 7200.0);
    assert_eq!(
        changefreq_interval(ChangeFreq::Yearly, &tight),
        100.0 * 86_400.0
    );
    assert_eq!(
        changefreq_interval(ChangeFreq::Never, &tight),
        100.0 * 86_400.0
    );
    // No changefreq: the fixed interval.
    let due = p.next_due(&fetched(MAY1), &UNTRUSTED, ts(MAY1));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Interval));
}

#[test]
fn priority_orders_hints_and_zero_is_schedulable() {
    let p = policy("sitemap-hints", Params::default()).unwrap();
    let cases: [(Option<f32>, f64); 8] = [
        (None, 0.5),
        (Some(0.0), 0.5),
        (Some(-0.0), 0.5),
        (Some(-1.0), 0.5),
        (Some(f32::NAN), 0.5),
        (Some(0.8), f64::from(0.8f32)),
        (Some(1.0), 1.0),
        (Some(7.0), 1.0),
    ];
    for (prio, want) in cases {
        let mut url = fetched(MAY1);
        url.priority = prio;
        url.changefreq = Some(ChangeFreq::Daily);
        let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
        assert_eq!(due.score, want, "{prio:?}");
        assert_eq!(
            due.at.unix(),
            MAY1 + D,
            "X11: priority {prio:?} still schedules"
        );
    }
}

// ---- adaptive ----

#[test]
fn adaptive_updates_and_clamps() {
    let p = policy("adaptive", Params::default()).unwrap();
    let mut url = fetched(MAY1);
    assert_eq!(
        p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + D,
        "initial interval"
    );
    url.interval = Some(10.0 * 3600.0);
    let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + 10 * H, Reason::Adaptive)
    );

    url.interval = Some(86_400.0);
    assert!(close(
        p.next_interval(&url, FetchOutcome::Changed).unwrap(),
        0.8 * 86_400.0,
        1e-12
    ));
    assert!(close(
        p.next_interval(&url, FetchOutcome::NotModified).unwrap(),
        1.4 * 86_400.0,
        1e-12
    ));
    assert!(close(
        p.next_interval(&url, FetchOutcome::Redirected).unwrap(),
        1.4 * 86_400.0,
        1e-12
    ));
    assert_eq!(p.next_interval(&url, FetchOutcome::Error), Some(86_400.0));
    assert_eq!(p.next_interval(&url, FetchOutcome::Gone), Some(86_400.0));
    url.interval = None;
    assert!(close(
        p.next_interval(&url, FetchOutcome::Changed).unwrap(),
        0.8 * 86_400.0,
        1e-12
    ));
    assert_eq!(p.next_interval(&url, FetchOutcome::Error), None);
    // A change a trusted lastmod announced: adaptive learns from it as from
    // any change; lastmod's fallback does not (it is there for the others).
    url.interval = Some(86_400.0);
    assert_eq!(
        p.next_interval_announced(&url, FetchOutcome::Changed),
        p.next_interval(&url, FetchOutcome::Changed)
    );
    let lastmod = policy("lastmod", Params::default()).unwrap();
    assert_eq!(
        lastmod.next_interval_announced(&url, FetchOutcome::Changed),
        Some(86_400.0)
    );
    assert_eq!(
        lastmod.next_interval(&url, FetchOutcome::Changed),
        p.next_interval(&url, FetchOutcome::Changed)
    );
    url.interval = None;

    // Repeated changes shrink to min_interval, repeated 304s grow to max.
    let mut i = Some(86_400.0);
    for _ in 0..100 {
        i = p.next_interval(
            &UrlState {
                interval: i,
                ..fetched(MAY1)
            },
            FetchOutcome::Changed,
        );
    }
    assert_eq!(i, Some(3600.0));
    for _ in 0..100 {
        i = p.next_interval(
            &UrlState {
                interval: i,
                ..fetched(MAY1)
            },
            FetchOutcome::NotModified,
        );
    }
    assert_eq!(i, Some(365.0 * 86_400.0));
    // A stored interval outside the bounds (params changed) is clamped.
    url.interval = Some(1.0);
    assert_eq!(p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(), MAY1 + H);
    url.interval = Some(f64::NAN);
    assert_eq!(p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(), MAY1 + D);
    // Nonsense factors change nothing.
    let odd = Params {
        adaptive_dec: 1.5,
        adaptive_inc: f64::NAN,
        ..Params::default()
    };
    let q = policy("adaptive", odd).unwrap();
    url.interval = Some(7200.0);
    assert_eq!(q.next_interval(&url, FetchOutcome::Changed), Some(7200.0));
    assert_eq!(
        q.next_interval(&url, FetchOutcome::NotModified),
        Some(7200.0)
    );
    // Other policies leave the interval alone.
    for other in [
        "fixed",
        "sitemap-hints",
        "freshness-optimal",
        "lambda-crawl",
    ] {
        let o = policy(other, Params::default()).unwrap();
        assert_eq!(
            o.next_interval(&url, FetchOutcome::Changed),
            Some(7200.0),
            "{other}"
        );
    }
}

// ---- lastmod ----

#[test]
fn lastmod_trusted_newer_is_due_now() {
    let p = policy("lastmod", Params::default()).unwrap();
    let mut url = fetched(MAY1);
    url.lastmod = Some(ts(MAY1 + 5 * H));
    let now = MAY1 + 6 * H;
    let due = p.next_due(&url, &TRUSTED, ts(now));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + 5 * H, Reason::LastmodNewer)
    );
    assert!(due.at.unix() <= now);
    // Untrusted host: the fallback (adaptive, initial interval 1 day).
    let due = p.next_due(&url, &UNTRUSTED, ts(now));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Adaptive));
    // Not newer than the fetch: fallback.
    url.lastmod = Some(ts(MAY1 - H));
    assert_eq!(p.next_due(&url, &TRUSTED, ts(now)).reason, Reason::Adaptive);
    url.lastmod = Some(ts(MAY1));
    assert_eq!(
        p.next_due(&url, &TRUSTED, ts(now)).reason,
        Reason::Adaptive,
        "equal is not newer"
    );
    url.lastmod = None;
    assert_eq!(p.next_due(&url, &TRUSTED, ts(now)).reason, Reason::Adaptive);
}

#[test]
fn complete_hosts_are_crawled_on_change() {
    let params = Params::default();
    let p = policy("lastmod", params.clone()).unwrap();
    let mut url = fetched(MAY1);
    let now = MAY1 + 6 * H;
    // Moved since the fetch: due at the change, as on a trusted host.
    url.lastmod = Some(ts(MAY1 + 5 * H));
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + 5 * H, Reason::LastmodNewer)
    );
    // Not moved: no rate schedule; after the safety interval, unless the
    // fetch's draw makes it a validation sample (due when the fallback
    // would have it).
    url.lastmod = Some(ts(MAY1 - H));
    url.sample = params.validation_share;
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + 30 * D, Reason::Safety));
    url.sample = params.validation_share / 2.0;
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Validation));
    // A trusted host that misses changes: the fallback's schedule.
    assert_eq!(p.next_due(&url, &TRUSTED, ts(now)).reason, Reason::Adaptive);
    // A validation sample never waits past the safety interval.
    url.interval = Some(60.0 * D as f64);
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + 30 * D, Reason::Safety));
    // No lastmod at all on a complete host: nothing to go by but the rate.
    url.lastmod = None;
    assert_eq!(
        p.next_due(&url, &COMPLETE, ts(now)).reason,
        Reason::Adaptive
    );
    // A coarse lastmod whose day holds the last fetch: a refresh when the
    // day is over (not a known change), scored by how likely another
    // change in it is; a page that changes faster than that is refreshed on
    // the fallback's schedule meanwhile.
    url.lastmod = Some(ts(MAY1));
    url.lastmod_precision = Some(Precision::Day);
    url.interval = Some(2.0 * D as f64);
    url.rate = Some(1.0 / D as f64);
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + D, Reason::LastmodPeriod)
    );
    assert_eq!(due.reason.urgency(), Urgency::Refresh);
    assert!(
        (due.score - (1.0 - (-1.0f64).exp())).abs() < 1e-9,
        "{due:?}"
    );
    url.interval = Some(H as f64);
    let due = p.next_due(&url, &COMPLETE, ts(now));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + H, Reason::Adaptive));
}

#[test]
fn urgency_classes_follow_the_reason() {
    use Urgency::*;
    for (reason, class) in [
        (Reason::Notified, Pushed),
        (Reason::LastmodNewer, Changed),
        (Reason::New, Changed),
        (Reason::Requested, Changed),
        (Reason::Adaptive, Refresh),
        (Reason::Retry, Refresh),
        (Reason::Safety, Refresh),
        (Reason::LeaseExpired, Refresh),
        (Reason::Validation, Validation),
    ] {
        assert_eq!(reason.urgency(), class, "{reason}");
    }
    assert!(Pushed < Changed && Changed < Refresh && Refresh < Validation);
}

#[test]
fn lastmod_newer_never_makes_an_overdue_url_later() {
    // The fallback had it due a day after the fetch; the sitemap says it
    // changed three days after: it stays due at the earlier time (a backlog
    // serves the oldest due first; found by the simulator, where lastmod
    // fell below its own fallback under a tight budget).
    let p = policy("lastmod", Params::default()).unwrap();
    let mut url = fetched(MAY1);
    url.lastmod = Some(ts(MAY1 + 3 * D));
    let due = p.next_due(&url, &TRUSTED, ts(MAY1 + 4 * D));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + D, Reason::LastmodNewer)
    );
}

#[test]
fn lastmod_in_the_future_is_not_believed() {
    // SPEC X8.
    let p = policy("lastmod", Params::default()).unwrap();
    let mut url = fetched(MAY1);
    url.lastmod = Some(ts(MAY1 + 7 * H));
    let due = p.next_due(&url, &TRUSTED, ts(MAY1 + 6 * H));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Adaptive));
    // Once now has caught up, it is.
    let due = p.next_due(&url, &TRUSTED, ts(MAY1 + 7 * H));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + 7 * H, Reason::LastmodNewer)
    );
}

#[test]
fn lastmod_day_precision_is_conservative() {
    let p = policy("lastmod", Params::default()).unwrap();
    let mut url = fetched(MAY1 + 10 * H); // fetched 10:00 on May 1
    url.lastmod = Some(ts(MAY1)); // "2024-05-01"
    url.lastmod_precision = Some(Precision::Day);
    assert!(lastmod_is_newer(
        ts(MAY1),
        Some(Precision::Day),
        ts(MAY1 + 10 * H)
    ));
    assert!(!lastmod_is_newer(
        ts(MAY1),
        Some(Precision::Second),
        ts(MAY1 + 10 * H)
    ));
    // Read the next day: due (since the end of May 1).
    let due = p.next_due(&url, &TRUSTED, ts(MAY1 + D + 3 * H));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + D, Reason::LastmodNewer)
    );
    assert!(due.at.unix() <= MAY1 + D + 3 * H);
    // Read the same day: due at the end of the day, not at once and again.
    let due = p.next_due(&url, &TRUSTED, ts(MAY1 + 10 * H + 300));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + D, Reason::LastmodNewer)
    );
    // A fetch after the day is over settles it.
    let mut later = url.clone();
    later.last_fetch = Some(ts(MAY1 + D + 30 * 60));
    later.last_attempt = later.last_fetch;
    assert!(!lastmod_is_newer(
        ts(MAY1),
        Some(Precision::Day),
        ts(MAY1 + D + 30 * 60)
    ));
    assert_eq!(
        p.next_due(&later, &TRUSTED, ts(MAY1 + 2 * D)).reason,
        Reason::Adaptive
    );
    // When the fallback is due before the day ends, it wins.
    let mut short = url.clone();
    short.interval = Some(2.0 * 3600.0);
    let due = p.next_due(&short, &TRUSTED, ts(MAY1 + 11 * H));
    assert_eq!(
        (due.at.unix(), due.reason),
        (MAY1 + 12 * H, Reason::Adaptive)
    );
}

#[test]
fn a_lastmod_move_dated_after_the_fetch_is_a_change_only_in_an_open_period() {
    let fetch = ts(MAY1 + 10 * H);
    let read_since = Some(ts(MAY1 + 12 * H));
    // A day's lastmod whose day holds the fetch: dated by the read.
    assert!(lastmod_says_changed(
        ts(MAY1),
        Some(Precision::Day),
        read_since,
        fetch
    ));
    assert!(!lastmod_says_changed(
        ts(MAY1),
        Some(Precision::Day),
        None,
        fetch
    ));
    assert!(!lastmod_says_changed(
        ts(MAY1),
        Some(Precision::Day),
        Some(ts(MAY1 + 9 * H)),
        fetch
    ));
    // An exact lastmod before the fetch says the fetch saw the change,
    // whenever a late sitemap moved it.
    for precision in [None, Some(Precision::Second)] {
        assert!(!lastmod_says_changed(
            ts(MAY1 + 9 * H),
            precision,
            read_since,
            fetch
        ));
        assert!(lastmod_says_changed(
            ts(MAY1 + 11 * H),
            precision,
            None,
            fetch
        ));
    }
    // A period over before the fetch: the same.
    assert!(!lastmod_says_changed(
        ts(MAY1 - D),
        Some(Precision::Day),
        read_since,
        fetch
    ));
}

#[test]
fn precision_spans() {
    assert_eq!(precision_span(MAY1, Precision::Fraction), 1);
    assert_eq!(precision_span(MAY1, Precision::Second), 1);
    assert_eq!(precision_span(MAY1, Precision::Minute), 60);
    assert_eq!(precision_span(MAY1, Precision::Day), D);
    assert_eq!(precision_span(MAY1, Precision::Month), 31 * D);
    let feb_2024 = MAY1 - (30 + 31 + 29) * D;
    let feb_2023 = feb_2024 - 365 * D;
    assert_eq!(precision_span(feb_2024, Precision::Month), 29 * D);
    assert_eq!(precision_span(feb_2023, Precision::Month), 28 * D);
    assert_eq!(
        precision_span(MAY1 + 31 * D, Precision::Month),
        30 * D,
        "June"
    );
    let jan_2024 = feb_2024 - 31 * D;
    assert_eq!(precision_span(jan_2024, Precision::Year), 366 * D);
    assert_eq!(precision_span(jan_2024 - 365 * D, Precision::Year), 365 * D);
    assert_eq!(precision_span(0, Precision::Year), 365 * D, "1970");
    assert_eq!(precision_span(-D, Precision::Month), 31 * D, "Dec 1969");
    // "2024" is newer than a fetch in March 2024, not than one in 2025.
    assert!(lastmod_is_newer(
        ts(jan_2024),
        Some(Precision::Year),
        ts(MAY1)
    ));
    assert!(!lastmod_is_newer(
        ts(jan_2024),
        Some(Precision::Year),
        ts(jan_2024 + 366 * D)
    ));
    // Extremes do not overflow.
    assert!(lastmod_is_newer(ts(i64::MAX), Some(Precision::Year), ts(0)));
    assert!(!lastmod_is_newer(
        ts(i64::MIN),
        Some(Precision::Year),
        ts(0)
    ));
}

#[test]
fn lastmod_delegates_to_its_fallback() {
    let params = Params {
        fallback: "fixed".into(),
        ..Params::default()
    };
    let p = policy("lastmod", params).unwrap();
    let url = fetched(MAY1);
    let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Interval));
    assert_eq!(p.next_interval(&url, FetchOutcome::Changed), None);
    let adaptive = policy("lastmod", Params::default()).unwrap();
    let with = UrlState {
        interval: Some(86_400.0),
        ..url
    };
    assert!(close(
        adaptive
            .next_interval(&with, FetchOutcome::Changed)
            .unwrap(),
        0.8 * 86_400.0,
        1e-12
    ));
}

// ---- allocation math ----

/// A small population: (λ, w).
fn population() -> Vec<(f64, f64)> {
    vec![
        (1.0 / 3600.0, 1.0),
        (1.0 / 86_400.0, 3.0),
        (1.0 / (7.0 * 86_400.0), 1.0),
        (1.0 / 600.0, 0.5),
        (1.0 / 60.0, 0.2),
        (1.0 / (30.0 * 86_400.0), 10.0),
        (2.0 / 86_400.0, 1.0),
    ]
}

/// 1 − (1 + r)e^{−r}, by 40 terms of its series for small r (no cancellation).
fn g_reference(r: f64) -> f64 {
    if r > 1.0 {
        return 1.0 - (1.0 + r) * (-r).exp();
    }
    let mut term = r * r / 2.0;
    let mut sum = 0.0;
    for k in 2..40 {
        sum += if k % 2 == 0 { 1.0 } else { -1.0 } * f64::from(k - 1) * term;
        term *= r / f64::from(k + 1);
    }
    sum
}

#[test]
fn freshness_optimal_kkt() {
    let pages = population();
    for budget in [1.0 / 60.0, 1.0 / 3600.0, 1e-5, 1e-6, 10.0] {
        let mu = optimal_multiplier(&pages, budget);
        assert!(mu > 0.0 && mu.is_finite(), "{budget}: {mu}");
        let rates: Vec<f64> = pages.iter().map(|&(l, w)| optimal_rate(l, w, mu)).collect();
        let sum: f64 = rates.iter().sum();
        assert!(close(sum, budget, 1e-6), "B = {budget}: Σf = {sum}");
        for (&(l, w), &f) in pages.iter().zip(&rates) {
            if w / l <= mu {
                assert_eq!(f, 0.0, "given up: w/λ = {} ≤ μ = {mu}", w / l);
            } else {
                assert!(f > 0.0);
                // Stationarity: (w/λ)(1 − (1 + r)e^{−r}) = μ.
                let r = l / f;
                let lhs = (w / l) * g_reference(r);
                assert!(close(lhs, mu, 1e-6), "{lhs} vs {mu}");
            }
        }
    }
    // A tight budget gives up the fast pages first.
    let tight = optimal_multiplier(&pages, 1e-6);
    assert_eq!(optimal_rate(1.0 / 60.0, 0.2, tight), 0.0);
}

#[test]
fn freshness_optimal_beats_uniform_and_uniform_beats_proportional() {
    let pages = population();
    let budget = 1e-4;
    let n = pages.len() as f64;
    let weighted = |rates: &[f64]| -> f64 {
        pages
            .iter()
            .zip(rates)
            .map(|(&(l, w), &f)| {
                w * if f > 0.0 {
                    freshness_fixed(l, 1.0 / f)
                } else {
                    0.0
                }
            })
            .sum()
    };
    let uniform = vec![budget / n; pages.len()];
    let total_l: f64 = pages.iter().map(|p| p.0).sum();
    let proportional: Vec<f64> = pages.iter().map(|p| p.0 / total_l * budget).collect();
    let mu = optimal_multiplier(&pages, budget);
    let optimal: Vec<f64> = pages.iter().map(|&(l, w)| optimal_rate(l, w, mu)).collect();
    assert!(weighted(&optimal) >= weighted(&uniform) - 1e-12);

    // Cho & Garcia-Molina: for unweighted freshness uniform is never worse.
    let unweighted = |rates: &[f64]| -> f64 {
        pages
            .iter()
            .zip(rates)
            .map(|(&(l, _), &f)| freshness_fixed(l, 1.0 / f))
            .sum()
    };
    assert!(unweighted(&uniform) >= unweighted(&proportional));
    for b in [1e-6, 1e-5, 1e-3, 1e-1] {
        let u = vec![b / n; pages.len()];
        let p: Vec<f64> = pages.iter().map(|p| p.0 / total_l * b).collect();
        assert!(unweighted(&u) >= unweighted(&p), "B = {b}");
    }
}

#[test]
fn lambda_crawl_kkt() {
    // (Δ, μ)
    let pages = population(); // read as (Δ, μ)
    for budget in [1.0, 1e-3, 1e-5, 1e-7] {
        let lagrange = lambda_crawl_multiplier(&pages, budget);
        assert!(lagrange > 0.0 && lagrange.is_finite());
        let rates: Vec<f64> = pages
            .iter()
            .map(|&(d, m)| lambda_crawl_rate(d, m, lagrange))
            .collect();
        let sum: f64 = rates.iter().sum();
        assert!(close(sum, budget, 1e-6), "B = {budget}: Σρ = {sum}");
        for (&(d, m), &rho) in pages.iter().zip(&rates) {
            assert!(rho > 0.0);
            // Stationarity: μΔ/(ρ(ρ + Δ)) = λ, and the quadratic formula.
            assert!(close(m * d / (rho * (rho + d)), lagrange, 1e-9));
            let quad = (-d + (d * d + 4.0 * m * d / lagrange).sqrt()) / 2.0;
            assert!(close(rho, quad, 1e-6));
        }
        // Optimal beats uniform on harmonic staleness.
        let cost = |rates: &[f64]| -> f64 {
            pages
                .iter()
                .zip(rates)
                .map(|(&(d, m), &r)| harmonic_cost_poisson(m, d, r))
                .sum()
        };
        let uniform = vec![budget / pages.len() as f64; pages.len()];
        assert!(cost(&rates) <= cost(&uniform) + 1e-12);
    }
    assert_eq!(lambda_crawl_on_change_probability(1.0, 2.0, 10.0, 4.0), 0.2);
    assert_eq!(
        lambda_crawl_on_change_probability(1.0, 0.01, 10.0, 4.0),
        1.0
    );
    assert_eq!(lambda_crawl_on_change_probability(1.0, 0.0, 10.0, 4.0), 1.0);
    assert_eq!(
        lambda_crawl_on_change_probability(f64::NAN, 1.0, 10.0, 4.0),
        0.0
    );
}

#[test]
fn lambda_crawl_on_change_level_fills_the_budget() {
    // (Δ, μ): every change fits in 10 → every change crawled.
    let pages = [(1.0, 4.0), (2.0, 1.0), (4.0, 1.0), (f64::NAN, 1.0)];
    assert_eq!(lambda_crawl_on_change_level(&pages, 10.0), f64::MAX);
    // A budget of 3: Σ min(Δ_i, c μ_i) = 3 at c = 1 (1 + 1 + 1).
    let c = lambda_crawl_on_change_level(&pages, 3.0);
    assert!(close(c, 1.0, 1e-9), "{c}");
    let spent: f64 = pages[..3]
        .iter()
        .map(|&(d, m)| d * lambda_crawl_on_change_probability(m, d, 1.0, c))
        .sum();
    assert!(close(spent, 3.0, 1e-9), "{spent}");
    // The slowest page for its importance gets every change, the others
    // a share.
    assert_eq!(lambda_crawl_on_change_probability(4.0, 1.0, 1.0, c), 1.0);
    assert!(close(
        lambda_crawl_on_change_probability(1.0, 4.0, 1.0, c),
        0.25,
        1e-9
    ));
    for bad in [0.0, -1.0, f64::NAN] {
        assert_eq!(lambda_crawl_on_change_level(&pages, bad), 0.0);
    }
    assert_eq!(lambda_crawl_on_change_level::<(f64, f64)>(&[], 3.0), 0.0);
}

#[test]
fn lambda_crawl_crawls_a_complete_host_on_change() {
    let changed_at = MAY1 + 10 * H;
    let mut url = fetched(MAY1);
    url.lastmod = Some(ts(changed_at));
    url.rate = Some(1.0 / D as f64);
    let now = ts(MAY1 + 11 * H);
    let with_level = |level: f64| {
        policy(
            "lambda-crawl",
            Params {
                calibration: Calibration {
                    // Uncalibrated rates: ρ = Δ̂, the rate due a day on.
                    multiplier: 0.0,
                    on_change_level: level,
                },
                ..Params::default()
            },
        )
        .unwrap()
    };
    // Uncalibrated, or every change fits: due at the change.
    for level in [0.0, f64::MAX] {
        let due = with_level(level).next_due(&url, &COMPLETE, now);
        assert_eq!(
            (due.at.unix(), due.reason),
            (changed_at, Reason::LastmodNewer)
        );
    }
    // Elsewhere, or a coarse lastmod: the rate schedule.
    let p = with_level(f64::MAX);
    assert_eq!(p.next_due(&url, &TRUSTED, now).reason, Reason::Optimal);
    let mut coarse = url.clone();
    coarse.lastmod_precision = Some(Precision::Day);
    assert_eq!(p.next_due(&coarse, &COMPLETE, now).reason, Reason::Optimal);
    // Unmoved: validation or the safety interval, not the rate.
    let mut quiet = url.clone();
    quiet.lastmod = Some(ts(MAY1 - D));
    quiet.sample = 0.5;
    let due = p.next_due(&quiet, &COMPLETE, now);
    assert_eq!((due.at.unix(), due.reason), (MAY1 + 30 * D, Reason::Safety));
    quiet.sample = 0.01;
    let due = p.next_due(&quiet, &COMPLETE, now);
    assert_eq!((due.at.unix(), due.reason), (MAY1 + D, Reason::Validation));
    // A tiny level crawls about that share of changes: one coin per
    // change (per lastmod and per-fetch sample).
    let scarce = with_level(0.1 / D as f64);
    let crawled = (0..1_000)
        .filter(|i| {
            let mut u = url.clone();
            u.sample = f64::from(*i) / 1_000.0;
            scarce.next_due(&u, &COMPLETE, now).reason == Reason::LastmodNewer
        })
        .count();
    assert!((50..=150).contains(&crawled), "{crawled} of 1000");
}

#[test]
fn allocation_edge_cases() {
    assert_eq!(optimal_rate(0.0, 1.0, 1.0), 0.0);
    assert_eq!(optimal_rate(1.0, 0.0, 1.0), 0.0);
    assert_eq!(optimal_rate(1.0, 1.0, 0.0), f64::INFINITY);
    assert_eq!(optimal_rate(f64::NAN, 1.0, 1.0), 0.0);
    assert_eq!(optimal_rate(1.0, 1.0, f64::NAN), 0.0);
    assert_eq!(optimal_rate(2.0, 1.0, 0.5), 0.0, "w/λ = μ");
    // Tiny c: r ≈ √(2c), f ≈ √(λw/(2μ)).
    let f = optimal_rate(1e-9, 1.0, 1e-12);
    assert!(close(f, (1e-9f64 / 2e-12).sqrt(), 1e-6), "{f}");
    assert_eq!(optimal_multiplier::<(f64, f64)>(&[], 1.0), 0.0);
    assert_eq!(optimal_multiplier(&[(f64::NAN, 1.0), (0.0, 1.0)], 1.0), 0.0);
    assert_eq!(optimal_multiplier(&[(1.0, 2.0), (2.0, 1.0)], 0.0), 2.0);
    assert_eq!(optimal_multiplier(&[(1.0, 2.0)], f64::INFINITY), 0.0);
    assert_eq!(lambda_crawl_rate(0.0, 1.0, 1.0), 0.0);
    assert_eq!(lambda_crawl_rate(1.0, 1.0, 0.0), f64::INFINITY);
    assert_eq!(
        lambda_crawl_rate(f64::INFINITY, 2.0, 4.0),
        0.0,
        "unusable like in the multiplier"
    );
    assert!(lambda_crawl_rate(1e-300, 1e300, 1e-300) > 0.0);
    assert_eq!(lambda_crawl_multiplier::<(f64, f64)>(&[], 1.0), 0.0);
    assert_eq!(lambda_crawl_multiplier(&[(1.0, 1.0)], 0.0), f64::MAX);
    // A page of astronomical importance next to an ordinary one (found by
    // proptest: the geometric midpoint used to overflow).
    let pages = [
        (1e-8, 1e-3),
        (9_870_993.384_494_135, 4.726_111_627_904_704e198),
    ];
    let budget = 8.526_997_831_480_418;
    let l = lambda_crawl_multiplier(&pages, budget);
    let sum: f64 = pages.iter().map(|&(d, m)| lambda_crawl_rate(d, m, l)).sum();
    assert!(close(sum, budget, 1e-9), "{sum}");
    // One page takes the whole budget.
    let l = lambda_crawl_multiplier(&[(1.0, 1.0)], 3.0);
    assert!(close(lambda_crawl_rate(1.0, 1.0, l), 3.0, 1e-9));
    let mu = optimal_multiplier(&[(1.0, 1.0)], 0.25);
    assert!(close(optimal_rate(1.0, 1.0, mu), 0.25, 1e-9));
}

// ---- closed forms (the values of docs/scheduling.md#closed-forms) ----

#[test]
fn closed_form_values() {
    let r4 = |x: f64| (x * 1e4).round() / 1e4;
    assert_eq!(r4(freshness_fixed(0.5, 1.0)), 0.7869);
    assert_eq!(r4(age_fixed(0.5, 1.0)), 0.0739);
    assert_eq!(r4(freshness_fixed(2.0, 1.0)), 0.4323);
    assert_eq!(r4(age_fixed(2.0, 1.0)), 0.2162);
    assert_eq!(r4(harmonic_cost_poisson(1.0, 0.5, 1.0)), 0.4055);
    // Limits and junk.
    assert_eq!(freshness_fixed(0.0, 5.0), 1.0);
    assert_eq!(freshness_fixed(f64::INFINITY, 1.0), 0.0);
    assert_eq!(freshness_fixed(f64::NAN, 1.0), 1.0);
    assert_eq!(freshness_fixed(0.0, f64::INFINITY), 1.0);
    assert_eq!(age_fixed(0.0, 1.0), 0.0);
    assert_eq!(age_fixed(f64::INFINITY, 4.0), 2.0);
    assert_eq!(age_fixed(-1.0, 4.0), 0.0);
    assert_eq!(harmonic_cost_poisson(1.0, 1.0, 0.0), f64::INFINITY);
    assert_eq!(harmonic_cost_poisson(1.0, 0.0, 0.0), 0.0);
    assert_eq!(
        harmonic_cost_poisson(1.0, f64::INFINITY, f64::INFINITY),
        0.0
    );
    // The series and the direct form agree where they meet (r = 0.1).
    let below = age_fixed(0.1 - 1e-12, 1.0);
    let above = age_fixed(0.1 + 1e-12, 1.0);
    assert!(close(below, above, 1e-9), "{below} vs {above}");
    // Small r: A ≈ I·r/6.
    assert!(close(age_fixed(1e-9, 1.0), 1e-9 / 6.0, 1e-6));
}

// ---- rate policies ----

#[test]
fn rate_policies_due_times() {
    let mut url = fetched(MAY1);
    url.rate = Some(1.0 / (3.0 * 86_400.0)); // changes every 3 days
    for name in ["freshness-optimal", "lambda-crawl"] {
        // Uncalibrated: refresh at the change rate.
        let p = policy(name, Params::default()).unwrap();
        let due = p.next_due(&url, &UNTRUSTED, ts(MAY1));
        assert_eq!(
            (due.at.unix(), due.reason),
            (MAY1 + 3 * D, Reason::Optimal),
            "{name}"
        );
        // No λ̂: the changefreq prior, then initial_interval.
        let mut prior = url.clone();
        prior.rate = None;
        prior.changefreq = Some(ChangeFreq::Weekly);
        assert_eq!(
            p.next_due(&prior, &UNTRUSTED, ts(MAY1)).at.unix(),
            MAY1 + 7 * D,
            "{name}"
        );
        prior.changefreq = None;
        assert_eq!(
            p.next_due(&prior, &UNTRUSTED, ts(MAY1)).at.unix(),
            MAY1 + D,
            "{name}"
        );
        // Never seen changing: floored, revisited at max_interval, not never.
        prior.rate = Some(0.0);
        assert_eq!(
            p.next_due(&prior, &UNTRUSTED, ts(MAY1)).at.unix(),
            MAY1 + 365 * D,
            "{name}"
        );
        // Score grows with the time since the last fetch, bounded by w.
        let s1 = p.next_due(&url, &UNTRUSTED, ts(MAY1 + D)).score;
        let s2 = p.next_due(&url, &UNTRUSTED, ts(MAY1 + 10 * D)).score;
        assert!(0.0 < s1 && s1 < s2 && s2 <= 1.0, "{name}: {s1} {s2}");
    }
    // Calibrated against a store: the due time is 1/f of the allocation.
    let pages = population();
    let budget = 1e-4;
    let mu = optimal_multiplier(&pages, budget);
    let params = Params {
        calibration: Calibration {
            multiplier: mu,
            ..Calibration::default()
        },
        ..Params::default()
    };
    let p = policy("freshness-optimal", params.clone()).unwrap();
    let (l, w) = pages[1];
    let f = optimal_rate(l, w, mu);
    let url = UrlState {
        rate: Some(l),
        importance: w,
        ..fetched(MAY1)
    };
    let want = MAY1 + params.interval_for_rate(f).round() as i64;
    assert_eq!(p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(), want);
    // A page the allocation gives up waits max_interval.
    let fast = UrlState {
        rate: Some(1.0 / 60.0),
        importance: 1e-9,
        ..fetched(MAY1)
    };
    assert_eq!(
        p.next_due(&fast, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + 365 * D
    );
    let lc = policy(
        "lambda-crawl",
        Params {
            calibration: Calibration {
                multiplier: lambda_crawl_multiplier(&pages, budget),
                ..Calibration::default()
            },
            ..Params::default()
        },
    )
    .unwrap();
    assert_eq!(
        lc.next_due(&url, &UNTRUSTED, ts(MAY1)).reason,
        Reason::Optimal
    );
}

#[test]
fn baseline_allocations() {
    // uniform: B/N per page; proportional: c = B/Σλ, so Σ cλ = B.
    assert_eq!(uniform_multiplier(4, 2.0), 0.5);
    assert_eq!(uniform_multiplier(0, 2.0), 0.0);
    assert_eq!(uniform_multiplier(4, f64::NAN), 0.0);
    assert_eq!(uniform_multiplier(4, -1.0), 0.0);
    let pages = [(1.0, 1.0), (3.0, 5.0), (f64::NAN, 1.0), (-2.0, 1.0)];
    let c = proportional_multiplier(&pages, 2.0);
    assert_eq!(c, 0.5);
    assert_eq!(proportional_multiplier::<(f64, f64)>(&[], 2.0), 0.0);
    assert_eq!(proportional_multiplier(&[(0.0, 1.0)], 2.0), 0.0);
    assert_eq!(proportional_multiplier(&pages, f64::INFINITY), 0.0);

    let mut url = fetched(MAY1);
    url.rate = Some(1.0 / (3.0 * 86_400.0)); // changes every 3 days
    // Uncalibrated: uniform is fixed (fixed_interval), proportional f = λ̂.
    let u = policy("uniform", Params::default()).unwrap();
    let p = policy("proportional", Params::default()).unwrap();
    assert_eq!(u.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(), MAY1 + D);
    assert_eq!(
        p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + 3 * D
    );
    assert_eq!(
        u.next_due(&url, &UNTRUSTED, ts(MAY1)).reason,
        Reason::Optimal
    );
    // Calibrated: uniform every 1/(B/N) whatever λ̂; proportional 1/(cλ̂).
    let params = |m: f64| Params {
        calibration: Calibration {
            multiplier: m,
            ..Calibration::default()
        },
        ..Params::default()
    };
    let u = policy("uniform", params(1.0 / (2.0 * 86_400.0))).unwrap();
    assert_eq!(
        u.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + 2 * D
    );
    url.rate = Some(1.0 / 3600.0);
    assert_eq!(
        u.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + 2 * D
    );
    let p = policy("proportional", params(0.25)).unwrap();
    assert_eq!(
        p.next_due(&url, &UNTRUSTED, ts(MAY1)).at.unix(),
        MAY1 + 4 * H
    );
    // The score is the rate policies' P(changed since the last fetch).
    let s = p.next_due(&url, &UNTRUSTED, ts(MAY1 + H)).score;
    assert!(close(s, 1.0 - (-1.0f64).exp(), 1e-12), "{s}");
    // The rules every policy shares come first.
    let new = UrlState {
        first_seen: ts(MAY1),
        ..UrlState::default()
    };
    assert_eq!(p.next_due(&new, &UNTRUSTED, ts(MAY1)).reason, Reason::New);
    assert_eq!(u.next_due(&new, &UNTRUSTED, ts(MAY1)).reason, Reason::New);
}

#[test]
fn discretiser() {
    let p = Params::default();
    assert_eq!(p.interval_for_rate(0.0), 365.0 * 86_400.0);
    assert_eq!(p.interval_for_rate(f64::NAN), 365.0 * 86_400.0);
    assert_eq!(p.interval_for_rate(f64::INFINITY), 3600.0);
    assert_eq!(p.interval_for_rate(1.0 / 7200.0), 7200.0);
    let broken = Params {
        min_interval: f64::NAN,
        max_interval: -1.0,
        ..Params::default()
    };
    assert_eq!(broken.bounds(), (1.0, 365.0 * 86_400.0));
    let inverted = Params {
        min_interval: 100.0,
        max_interval: 10.0,
        ..Params::default()
    };
    assert_eq!(inverted.bounds(), (100.0, 100.0));
    assert_eq!(add_secs(ts(i64::MAX - 1), 1e300), ts(i64::MAX));
    assert_eq!(add_secs(ts(5), f64::NAN), ts(5));
}

// ---- robustness ----

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        -1e7f64..1e7,
        Just(0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ]
}

fn any_outcome() -> impl Strategy<Value = Option<FetchOutcome>> {
    proptest::option::of(prop_oneof![
        Just(FetchOutcome::Changed),
        Just(FetchOutcome::NotModified),
        Just(FetchOutcome::Gone),
        Just(FetchOutcome::Error),
        Just(FetchOutcome::Redirected),
    ])
}

fn any_instant() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), MAY1 - 1000 * D..MAY1 + 1000 * D]
}

prop_compose! {
    fn any_url()(
        first_seen in any_instant(),
        last_fetch in proptest::option::of(any_instant()),
        last_attempt in proptest::option::of(any_instant()),
        last_outcome in any_outcome(),
        lastmod in proptest::option::of(any_instant()),
        precision in proptest::option::of(prop_oneof![
            Just(Precision::Year), Just(Precision::Month), Just(Precision::Day),
            Just(Precision::Minute), Just(Precision::Second), Just(Precision::Fraction),
        ]),
        changefreq in proptest::option::of(prop_oneof![
            Just(ChangeFreq::Always), Just(ChangeFreq::Hourly), Just(ChangeFreq::Daily),
            Just(ChangeFreq::Weekly), Just(ChangeFreq::Monthly), Just(ChangeFreq::Yearly),
            Just(ChangeFreq::Never),
        ]),
        priority in proptest::option::of(any::<f32>()),
        interval in proptest::option::of(any_f64()),
        rate in proptest::option::of(any_f64()),
        importance in any_f64(),
        errors_in_a_row in any::<u32>(),
        sample in 0.0..1.0f64,
    ) -> UrlState {
        UrlState {
            first_seen: ts(first_seen), last_fetch: last_fetch.map(ts),
            last_attempt: last_attempt.map(ts), last_outcome, lastmod: lastmod.map(ts),
            lastmod_precision: precision, lastmod_moved_after: last_attempt.map(ts),
            changefreq, priority, interval, rate,
            importance, errors_in_a_row, sample,
        }
    }
}

prop_compose! {
    fn any_params()(
        fixed_interval in any_f64(),
        min_interval in any_f64(),
        max_interval in any_f64(),
        adaptive_inc in any_f64(),
        adaptive_dec in any_f64(),
        initial_interval in any_f64(),
        retry_after_error in any_f64(),
        multiplier in any_f64(),
        safety_interval in any_f64(),
        validation_share in any_f64(),
        probe_interval in any_f64(),
    ) -> Params {
        Params {
            fixed_interval, min_interval, max_interval, adaptive_inc, adaptive_dec,
            initial_interval, retry_after_error, budget: 1.0, fallback: "adaptive".into(),
            safety_interval, validation_share, announced_share: 0.5, probe_interval,
            calibration: Calibration { multiplier, ..Calibration::default() },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn policies_never_panic(url in any_url(), params in any_params(), now in any_instant(), trusted in any::<bool>(), complete in any::<bool>()) {
        let host = HostState { lastmod_trusted: trusted || complete, lastmod_complete: complete, lastmod_probation: !trusted };
        for p in all_policies(&params) {
            let due = p.next_due(&url, &host, ts(now));
            prop_assert!(due.score.is_finite() && due.score >= 0.0, "{}: {:?}", p.name(), due);
            for o in [FetchOutcome::Changed, FetchOutcome::NotModified, FetchOutcome::Gone, FetchOutcome::Error, FetchOutcome::Redirected] {
                if let Some(i) = p.next_interval(&url, o)
                    && p.name() == "adaptive" && matches!(o, FetchOutcome::Changed | FetchOutcome::NotModified) {
                        let (min, max) = params.bounds();
                        prop_assert!(i >= min && i <= max);
                    }
            }
        }
    }

    #[test]
    fn math_never_panics_or_gives_nan(a in any_f64(), b in any_f64(), c in any_f64()) {
        prop_assert!(!optimal_rate(a, b, c).is_nan());
        prop_assert!(!lambda_crawl_rate(a, b, c).is_nan());
        prop_assert!(!freshness_fixed(a, b).is_nan());
        prop_assert!(!age_fixed(a, b).is_nan());
        prop_assert!(!harmonic_cost_poisson(a, b, c).is_nan());
        prop_assert!(!lambda_crawl_on_change_probability(a, b, c, 1.0).is_nan());
        let level = lambda_crawl_on_change_level(&[(a, b), (b, c)], c);
        prop_assert!(!level.is_nan() && level >= 0.0);
        let f = freshness_fixed(a, b);
        prop_assert!((0.0..=1.0).contains(&f));
    }

    #[test]
    fn multipliers_hit_the_budget(
        pages in proptest::collection::vec((1e-8f64..10.0, 1e-3f64..100.0), 1..12),
        budget in 1e-7f64..100.0,
        junk in proptest::collection::vec((any_f64(), any_f64()), 0..4),
    ) {
        let mut all = pages;
        all.extend(junk);
        // Crawl on change: the level spends the budget on changes, or
        // every change fits.
        let level = lambda_crawl_on_change_level(&all, budget);
        let usable = all
            .iter()
            .filter(|&&(d, m)| d.is_finite() && d > 0.0 && m.is_finite() && m > 0.0);
        let spent: f64 = usable
            .clone()
            .map(|&(d, m)| d * lambda_crawl_on_change_probability(m, d, 1.0, level))
            .sum();
        if level == f64::MAX {
            prop_assert!(usable.map(|(d, _)| d).sum::<f64>() <= budget);
        } else {
            prop_assert!(spent <= budget * (1.0 + 1e-9), "{} vs {}", spent, budget);
            // Unless the level is beyond f64 (subnormal importances).
            if level < f64::MAX / 2.0 {
                prop_assert!(spent >= budget * (1.0 - 1e-6), "{} vs {}", spent, budget);
            }
        }
        let mu = optimal_multiplier(&all, budget);
        let rates: Vec<f64> = all.iter().map(|&(l, w)| optimal_rate(l, w, mu)).collect();
        let sum: f64 = rates.iter().sum();
        prop_assert!(sum <= budget * (1.0 + 1e-12), "Σf = {} vs {}", sum, budget);
        // Exact, unless the marginal page is beyond f64 resolution (r ≳ 35,
        // see optimal_multiplier): then short by at most its λ/35.
        let edge = all
            .iter()
            .filter(|&&(l, w)| l.is_finite() && l > 0.0 && w.is_finite() && w > 0.0)
            .map(|&(l, _)| l / 30.0)
            .fold(0.0f64, f64::max);
        prop_assert!(
            (sum - budget).abs() <= 1e-6 * budget || budget - sum <= edge,
            "Σf = {} vs {}", sum, budget
        );
        let lagrange = lambda_crawl_multiplier(&all, budget);
        let sum: f64 = all.iter().map(|&(d, m)| lambda_crawl_rate(d, m, lagrange)).sum();
        prop_assert!((sum - budget).abs() <= 1e-9 * budget, "Σρ = {} vs {}", sum, budget);
    }
}

#[test]
fn tiny_budget_never_overspends() {
    // One page changing 10×/s, budget one fetch per 10^7 s: beyond f64
    // resolution of μ (see optimal_multiplier), so the rate is 0, not more.
    let mu = optimal_multiplier(&[(10.0, 1e-3)], 1e-7);
    assert_eq!(optimal_rate(10.0, 1e-3, mu), 0.0);
    // Where it is representable, it is exact.
    let mu = optimal_multiplier(&[(10.0, 1e-3)], 0.5);
    assert!(close(optimal_rate(10.0, 1e-3, mu), 0.5, 1e-9));
}

#[test]
fn extreme_pages_do_not_break_the_multipliers() {
    // Found by proptest: next to an ordinary page, one whose w/λ is ~1e233.
    // μ·λ/w rounded below 1 at μ = max w/λ, so that page kept ≈ λ/37 there
    // and the "upper bracket" overspent the budget 10^12-fold.
    let pages = [
        (1e-8, 0.001),
        (7_559_748.254_041_065, 1.651_171_103_970_138_3e240),
    ];
    let budget = 1e-7;
    let mu = optimal_multiplier(&pages, budget);
    let sum: f64 = pages.iter().map(|&(l, w)| optimal_rate(l, w, mu)).sum();
    assert!(sum <= budget, "Σf = {sum} vs {budget}");
    let (l, w) = pages[1];
    assert_eq!(optimal_rate(l, w, w / l), 0.0, "gives up exactly at w/λ");
    // The plain case of that input: exact.
    let mu = optimal_multiplier(&pages[..1], budget);
    assert!(close(optimal_rate(1e-8, 0.001, mu), budget, 1e-9));
    // w/λ overflows: unusable (rate 0), the others still meet the budget.
    let pages = [(1e-8, 0.001), (1.082_946_748_239_464e-308, 2.886e258)];
    let mu = optimal_multiplier(&pages, budget);
    assert_eq!(optimal_rate(pages[1].0, pages[1].1, mu), 0.0);
    assert!(close(optimal_rate(1e-8, 0.001, mu), budget, 1e-9));
    // c = μλ/w underflows: still f ≈ √(λw/(2μ)), not λ/(an arbitrary r).
    let f = optimal_rate(1e-200, 1e10, 1e-200);
    assert!(close(f, (1e10f64 / 2.0).sqrt(), 1e-9), "{f}");
    // Near c = 1 the tail form keeps r finite and accurate:
    // (1 + r)e^{−r} = 1 − c.
    let f = optimal_rate(1.0, 1.0, 1.0 - 1e-12);
    let r = 1.0 / f;
    assert!(close((1.0 + r) * (-r).exp(), 1e-12, 1e-3), "r = {r}");

    // Lambda-crawl: the answer is ~870 halvings below Σμ/B (the old bracket
    // search gave up after 800), and an importance near f64::MAX made 4μ
    // overflow into the Δ-small branch. (With that importance and B = 1e-7
    // the exact λ ≈ μ/B is above f64::MAX: not representable, not tested.)
    let cases = [
        (
            1.082_946_748_239_464e-308,
            2.886_523_175_429_273_4e258,
            1e-7,
        ),
        (
            1.082_946_748_239_464e-308,
            2.886_523_175_429_273_4e258,
            42.4,
        ),
        (
            4_611_257.365_649_02,
            7.926_198_847_118_082e307,
            42.384_357_516_884_11,
        ),
    ];
    for (d, m, budget) in cases {
        let pages = [(1e-8, 0.001), (d, m)];
        let l = lambda_crawl_multiplier(&pages, budget);
        let sum: f64 = pages.iter().map(|&(d, m)| lambda_crawl_rate(d, m, l)).sum();
        assert!(
            close(sum, budget, 1e-9),
            "{pages:?} B = {budget}: Σρ = {sum}"
        );
    }
}

#[test]
fn builtin_policies_are_the_policy_names() {
    let names: Vec<&str> = BuiltinPolicy::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(names, POLICY_NAMES);
    for p in BuiltinPolicy::ALL {
        assert_eq!(BuiltinPolicy::from_name(p.name()), Some(p));
        assert_eq!(
            policy(p.name(), Params::default()).unwrap().name(),
            p.name()
        );
    }
}

/// Past its cap, the multipliers a summary gives are those of every
/// page to well under 0.1%.
#[test]
fn a_merged_summary_calibrates_as_every_page_does() {
    let mut s = PageSummary::new();
    let mut all = Vec::new();
    let mut x = 7u64;
    for _ in 0..(SUMMARY_CELLS + SUMMARY_CELLS / 4) {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Rates from once an hour to once a year, importance 0.1 to 1.
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        let v = (x & 0xffff) as f64 / 65536.0;
        let rate = (1.0 / 3600.0) * (3600.0f64 / (365.0 * 86400.0)).powf(u);
        let importance = 0.1 + 0.9 * v;
        s.add(rate, importance);
        all.push((rate, importance));
    }
    assert!(!s.is_exact());
    let pages = s.pages();
    for budget in [0.01, 1.0, 30.0] {
        for (policy, exact, summed) in [
            (
                "optimal",
                optimal_multiplier(&all, budget),
                optimal_multiplier(&pages, budget),
            ),
            (
                "lambda-crawl",
                lambda_crawl_multiplier(&all, budget),
                lambda_crawl_multiplier(&pages, budget),
            ),
            (
                "proportional",
                proportional_multiplier(&all, budget),
                proportional_multiplier(&pages, budget),
            ),
        ] {
            assert!(
                (summed - exact).abs() / exact < 1e-3,
                "{policy} at {budget}: {summed} vs {exact}"
            );
        }
    }
}
