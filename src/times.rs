//! How times are shown: Unix seconds (the store's, and the default), or
//! RFC 3339 in UTC for people. `queue` and `export` print one or the other
//! (`--time`); the daemon's answers carry both, each time field `F` of Unix
//! seconds with a string `F_rfc3339` beside it.

use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;
use sitemapd_parser::date::{Lastmod, Precision};
use sitemapd_scheduler::Timestamp;

/// The fields of the JSON answers and lines that hold a time in Unix
/// seconds: those of a lease or a peek (`Leased`), a URL (`UrlView`), a
/// site (`SiteView`), a sitemap (`SitemapView`) and its refresh schedule
/// (`RefreshView`).
pub(crate) const TIME_FIELDS: [&str; 14] = [
    "due",
    "expires",
    "not_before",
    "first_seen",
    "last_seen",
    "lastmod",
    "last_fetch",
    "last_success",
    "last_change",
    "leased_until",
    "added_at",
    "next_walk",
    "last_walk",
    "next_at",
];

/// The suffix of a time's RFC 3339 twin in the daemon's answers.
pub(crate) const RFC3339_SUFFIX: &str = "_rfc3339";

/// `--time`: how `queue` and `export` print times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum TimeFormat {
    /// Seconds since the Unix epoch, a number.
    #[default]
    Unix,
    /// RFC 3339 in UTC (`2024-05-01T12:00:00Z`), a string.
    Rfc3339,
}

/// A time as printed: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(crate) enum TimeValue {
    /// Unix seconds.
    Unix(i64),
    /// RFC 3339.
    Text(String),
}

impl TimeFormat {
    /// `t` as this format prints it.
    pub(crate) fn value(self, t: Timestamp) -> TimeValue {
        match self {
            TimeFormat::Unix => TimeValue::Unix(t.unix()),
            TimeFormat::Rfc3339 => TimeValue::Text(rfc3339(t)),
        }
    }

    /// Rewrites the time fields ([`TIME_FIELDS`]) of `value`, at any depth,
    /// into this format.
    pub(crate) fn rewrite(self, value: &mut Value) {
        if self == TimeFormat::Rfc3339 {
            visit(value, &mut |map| {
                for field in TIME_FIELDS {
                    if let Some(v) = map.get_mut(field)
                        && let Some(secs) = v.as_i64()
                    {
                        *v = Value::String(rfc3339(Timestamp::from_unix(secs)));
                    }
                }
            });
        }
    }
}

/// Adds beside each time field `F` of `value` ([`TIME_FIELDS`], at any
/// depth) its RFC 3339 string `F_rfc3339` (null beside a null).
pub(crate) fn add_rfc3339(value: &mut Value) {
    visit(value, &mut |map| {
        for field in TIME_FIELDS {
            let twin = match map.get(field) {
                Some(Value::Null) => Value::Null,
                Some(v) => match v.as_i64() {
                    Some(secs) => Value::String(rfc3339(Timestamp::from_unix(secs))),
                    None => continue,
                },
                None => continue,
            };
            map.insert(format!("{field}{RFC3339_SUFFIX}"), twin);
        }
    });
}

/// Calls `f` on every object in `value`, depth first.
fn visit(value: &mut Value, f: &mut impl FnMut(&mut serde_json::Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            f(map);
            for v in map.values_mut() {
                visit(v, f);
            }
        }
        Value::Array(items) => {
            for v in items {
                visit(v, f);
            }
        }
        _ => {}
    }
}

/// `t` in RFC 3339, UTC, whole seconds: `2024-05-01T12:00:00Z` (the
/// parser's own rendering of a lastmod). Times outside years 0 to 9999,
/// which RFC 3339 cannot write, are clamped to them.
pub(crate) fn rfc3339(t: Timestamp) -> String {
    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    const RANGE: (i64, i64) = (-62_167_219_200, 253_402_300_799);
    Lastmod {
        unix_seconds: t.unix().clamp(RANGE.0, RANGE.1),
        nanos: 0,
        precision: Precision::Second,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_utc_seconds() {
        assert_eq!(rfc3339(Timestamp::EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(Timestamp::from_unix(1_714_564_800)),
            "2024-05-01T12:00:00Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_unix(i64::MAX)),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_unix(i64::MIN)),
            "0000-01-01T00:00:00Z"
        );
    }

    #[test]
    fn twins_and_rewrites() {
        let mut v =
            json!({"urls": [{"url": "http://a/", "due": 0, "lastmod": null, "score": 1.5}]});
        add_rfc3339(&mut v);
        assert_eq!(v["urls"][0]["due_rfc3339"], "1970-01-01T00:00:00Z");
        assert_eq!(v["urls"][0]["due"], 0);
        assert!(v["urls"][0]["lastmod_rfc3339"].is_null());
        assert!(v["urls"][0].get("score_rfc3339").is_none());
        let mut v = json!({"due": 60, "url": "http://a/"});
        TimeFormat::Rfc3339.rewrite(&mut v);
        assert_eq!(
            v,
            json!({"due": "1970-01-01T00:01:00Z", "url": "http://a/"})
        );
    }
}
