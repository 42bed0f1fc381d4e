#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

/// The generated protocol: messages ([`prost`]), the client
/// ([`proto::url_frontier_client::UrlFrontierClient`]) and the server trait
/// ([`proto::url_frontier_server::UrlFrontier`]) with its tonic service.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("urlfrontier");
}

pub mod service;
mod status;
pub use service::{ConnectionId, Frontier};

/// The protocol's rpcs, as their paths name them
/// (`/urlfrontier.URLFrontier/<rpc>`): a bounded set of labels for metrics.
pub const RPCS: [&str; 19] = [
    "ListNodes",
    "ListCrawls",
    "DeleteCrawl",
    "ListQueues",
    "GetURLs",
    "PutURLs",
    "PutDiscovered",
    "GetStats",
    "DeleteQueue",
    "BlockQueueUntil",
    "SetActive",
    "GetActive",
    "SetDelay",
    "SetLogLevel",
    "SetCrawlLimit",
    "GetURLStatus",
    "ListURLs",
    "CountURLs",
    "PurgeURLs",
];

/// The rpc a request path names, one of [`RPCS`]; `None` for any other path.
pub fn rpc_of(path: &str) -> Option<&'static str> {
    let method = path.strip_prefix("/urlfrontier.URLFrontier/")?;
    RPCS.iter().copied().find(|rpc| *rpc == method)
}

/// The crawl that `""` and `"DEFAULT"` both name; replies always say this.
pub const DEFAULT_CRAWL: &str = "DEFAULT";

/// The longest queue key the protocol accepts, in characters as the
/// reference service (Java) counts them: UTF-16 code units.
pub const MAX_KEY_CHARS: usize = 255;

/// A crawl id as the protocol names it: `""` is [`DEFAULT_CRAWL`], any
/// other id is itself.
pub fn crawl_id(id: &str) -> &str {
    if id.is_empty() { DEFAULT_CRAWL } else { id }
}

/// Why an item has no queue: the protocol acks it `SKIPPED` (do not resend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QueueKeyError {
    /// No key was sent and the URL has no host to take one from.
    #[error("no key sent and the URL has no host")]
    NoHost,
    /// The key is longer than [`MAX_KEY_CHARS`].
    #[error("the queue key is longer than {MAX_KEY_CHARS} characters")]
    TooLong,
    /// The key holds a control character (the store files hosts under a
    /// key followed by a 0 byte).
    #[error("the queue key holds a control character")]
    Control,
}

/// Whether `s` (a queue key, a crawl id) is longer than
/// [`MAX_KEY_CHARS`]: counted no further than the limit, since a client
/// may send megabytes.
pub fn too_long(s: &str) -> bool {
    s.encode_utf16().nth(MAX_KEY_CHARS).is_some()
}

/// The queue an item goes to: the `key` the client sent, or when it sent
/// none, the URL's host as the reference service derives it: the text after
/// `://` (the whole URL when there is none), cut at the first `:`, `/`, `?`
/// or `&` (so the port is dropped and the case kept).
pub fn queue_key<'a>(url: &'a str, key: &'a str) -> Result<&'a str, QueueKeyError> {
    let key = if key.is_empty() {
        let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
        let end = rest.find([':', '/', '?', '&']).unwrap_or(rest.len());
        &rest[..end]
    } else {
        key
    };
    if key.is_empty() {
        return Err(QueueKeyError::NoHost);
    }
    if too_long(key) {
        return Err(QueueKeyError::TooLong);
    }
    if key.chars().any(char::is_control) {
        return Err(QueueKeyError::Control);
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_ids_normalise_the_empty_one_only() {
        assert_eq!(crawl_id(""), "DEFAULT");
        assert_eq!(crawl_id("DEFAULT"), "DEFAULT");
        assert_eq!(crawl_id("news"), "news");
        // Case matters: another crawl.
        assert_eq!(crawl_id("default"), "default");
    }

    #[test]
    fn a_missing_key_is_the_host_as_the_reference_cuts_it() {
        for (url, host) in [
            ("https://example.org/a", "example.org"),
            ("http://Example.ORG:8080/", "Example.ORG"),
            ("https://example.org?q=1", "example.org"),
            ("https://example.org&x", "example.org"),
            ("https://user@example.org/", "user@example.org"),
            ("example.org/path", "example.org"),
            ("ftp://files.example/", "files.example"),
        ] {
            assert_eq!(queue_key(url, ""), Ok(host), "{url}");
        }
        for url in ["https:///x", "https://", "", "/path", ":80"] {
            assert_eq!(queue_key(url, ""), Err(QueueKeyError::NoHost), "{url:?}");
        }
    }

    #[test]
    fn a_sent_key_is_kept_up_to_255_utf16_units() {
        assert_eq!(queue_key("https://a.example/", "shard-7"), Ok("shard-7"));
        let long = "é".repeat(255);
        assert_eq!(queue_key("https://a.example/", &long), Ok(long.as_str()));
        let longer = "k".repeat(256);
        assert_eq!(
            queue_key("https://a.example/", &longer),
            Err(QueueKeyError::TooLong)
        );
        // Java counts a character outside the BMP twice: 128 of them are 256.
        let astral = "😀".repeat(128);
        assert_eq!(
            queue_key("https://a.example/", &astral),
            Err(QueueKeyError::TooLong)
        );
        assert_eq!(
            queue_key("https://a.example/", &astral[4..]),
            Ok(&astral[4..])
        );
        // A 0 byte would run into the store's key for the queue's hosts.
        assert_eq!(
            queue_key("https://a.example/", "a\0b"),
            Err(QueueKeyError::Control)
        );
    }
}
