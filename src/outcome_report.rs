//! Fetch outcomes as crawlers report them (`sitemapd complete`, the
//! daemon's `POST /v1/complete`), both ways: a reported JSON item to the
//! store's [`Completion`] ([`Reported::completion`]), and an [`Outcome`]
//! back to its reported name ([`Outcome::name`], the scheduler's, also the
//! daemon's metric label).

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sitemapd_parser::options::MAX_LOC_CHARS;
use sitemapd_scheduler::queue::{MAX_ETAG_BYTES, MAX_LAST_MODIFIED_BYTES};
use sitemapd_scheduler::{Completion, Outcome};

/// One fetch outcome as a crawler reports it: a line of `sitemapd complete`'s
/// input, an item of `POST /v1/complete`. Other fields (such as those a
/// lease returns) are ignored.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct Reported {
    url: String,
    outcome: String,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    last_modified: Option<String>,
}

impl Reported {
    /// The normalised URL and the store's completion.
    pub(crate) fn completion(self) -> Result<(String, Completion)> {
        let outcome = match self.outcome.as_str() {
            "changed" => Outcome::Changed,
            "not-modified" => Outcome::NotModified,
            // Without a status, a 404: retired after repeats, not at once.
            "gone" => Outcome::Gone(self.status.unwrap_or(404)),
            // A crawler passing HTTP statuses through: 404 and 410 are gone.
            "error" => match self.status.unwrap_or(0) {
                status @ (404 | 410) => Outcome::Gone(status),
                status => Outcome::Error(status),
            },
            "redirected" => Outcome::Redirected {
                to: self.to.context("\"redirected\" needs \"to\"")?,
                // Without a status, temporary: never retired for it.
                status: self.status.unwrap_or(0),
            },
            other => {
                bail!("unknown outcome {other:?} (changed, not-modified, gone, error, redirected)")
            }
        };
        let url = sitemapd_parser::NormUrl::parse_limited(&self.url)
            .with_context(|| format!("{:?} is not an http(s) URL", short(&self.url)))?
            .into_string();
        // The store keeps none of these beyond its bounds: say so rather
        // than drop them quietly.
        check_len("etag", &self.etag, MAX_ETAG_BYTES)?;
        check_len(
            "last_modified",
            &self.last_modified,
            MAX_LAST_MODIFIED_BYTES,
        )?;
        if let Outcome::Redirected { to, .. } = &outcome {
            check_len("to", &Some(to.clone()), MAX_LOC_CHARS)?;
        }
        Ok((
            url,
            Completion {
                outcome,
                status: self.status,
                etag: self.etag,
                last_modified: self.last_modified,
            },
        ))
    }
}

/// An error unless `value` is at most `max` bytes.
fn check_len(field: &str, value: &Option<String>, max: usize) -> Result<()> {
    match value {
        Some(v) if v.len() > max => bail!("{field} is {} bytes long; at most {max}", v.len()),
        _ => Ok(()),
    }
}

/// The start of a (maybe huge) value, for a message.
fn short(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two directions agree on every outcome's name.
    #[test]
    fn names_round_trip() {
        for (json, outcome) in [
            (
                r#"{"url":"http://a/","outcome":"changed"}"#,
                Outcome::Changed,
            ),
            (
                r#"{"url":"http://a/","outcome":"not-modified"}"#,
                Outcome::NotModified,
            ),
            (
                r#"{"url":"http://a/","outcome":"gone"}"#,
                Outcome::Gone(404),
            ),
            (
                r#"{"url":"http://a/","outcome":"gone","status":410}"#,
                Outcome::Gone(410),
            ),
            (
                r#"{"url":"http://a/","outcome":"error","status":503}"#,
                Outcome::Error(503),
            ),
            (
                r#"{"url":"http://a/","outcome":"redirected","to":"http://b/"}"#,
                Outcome::Redirected {
                    to: "http://b/".into(),
                    status: 0,
                },
            ),
            (
                r#"{"url":"http://a/","outcome":"redirected","to":"http://b/","status":301}"#,
                Outcome::Redirected {
                    to: "http://b/".into(),
                    status: 301,
                },
            ),
        ] {
            let reported: Reported = serde_json::from_str(json).unwrap();
            let name = reported.outcome.clone();
            let (url, c) = reported.completion().unwrap();
            assert_eq!(url, "http://a/");
            assert_eq!(c.outcome, outcome);
            assert_eq!(c.outcome.name(), name);
        }
    }

    /// Values the store would not keep are refused, naming the field.
    #[test]
    fn overlong_fields_are_refused() {
        let long = |n: usize| "x".repeat(n);
        for (json, field) in [
            (
                format!(
                    r#"{{"url":"http://a/","outcome":"changed","etag":"{}"}}"#,
                    long(2000)
                ),
                "etag",
            ),
            (
                format!(
                    r#"{{"url":"http://a/","outcome":"changed","last_modified":"{}"}}"#,
                    long(200)
                ),
                "last_modified",
            ),
            (
                format!(
                    r#"{{"url":"http://a/","outcome":"redirected","to":"/{}"}}"#,
                    long(3000)
                ),
                "to",
            ),
            (
                format!(r#"{{"url":"http://a/{}","outcome":"changed"}}"#, long(3000)),
                "not an http(s) URL",
            ),
        ] {
            let reported: Reported = serde_json::from_str(&json).unwrap();
            let e = format!("{:#}", reported.completion().unwrap_err());
            assert!(e.contains(field), "{e}");
            assert!(e.len() < 400, "short message: {e}");
        }
    }

    /// An HTTP 404 or 410 reported as an error is a gone page.
    #[test]
    fn error_404_and_410_are_gone() {
        for status in [404, 410] {
            let json = format!(r#"{{"url":"http://a/","outcome":"error","status":{status}}}"#);
            let reported: Reported = serde_json::from_str(&json).unwrap();
            assert_eq!(
                reported.completion().unwrap().1.outcome,
                Outcome::Gone(status)
            );
        }
    }
}
