//! Between the protocol and the store: a client's metadata, items and
//! reports read into the store's types (with the protocol's bounds: a
//! queue key, a refetch date, a delay), and a stored URL shown as the
//! protocol's item.

use std::collections::HashMap;

use sitemapd_scheduler::{
    Completion, DiscoveredUrl, KnownUrl, Metadata, Outcome, Timestamp, UrlStatus, UrlView,
};
use tonic::Status;

use crate::proto;
use crate::{crawl_id, queue_key};

/// `delay_requestable` (GetURLs' time in transit, SetDelay's time between
/// servings) at most, in seconds: 7 days, as the HTTP lease's `ttl_secs`.
pub const MAX_DELAY_SECS: u32 = sitemapd_scheduler::LeaseRequest::MAX_TTL.as_secs() as u32;
/// The latest refetch date a known item may carry (9999-12-31T23:59:59Z,
/// the last second RFC 3339 writes): a later one is SKIPPED.
pub const MAX_REFETCH_DATE: u64 = 253_402_300_799;

/// Status codes as a client reports them in metadata (StormCrawler's
/// `fetch.statusCode`), the content signature it computed (`signature`)
/// and a redirect's target (`_redirTo`).
pub const STATUS_KEY: &str = "fetch.statusCode";
/// See [`STATUS_KEY`].
pub const SIGNATURE_KEY: &str = "signature";
/// See [`STATUS_KEY`].
pub const REDIRECT_KEY: &str = "_redirTo";

/// A client's metadata in key order, cut as the store keeps it.
pub(super) fn metadata_of(map: HashMap<String, proto::StringList>) -> Metadata {
    let mut m: Metadata = map.into_iter().map(|(k, v)| (k, v.values)).collect();
    m.sort_by(|a, b| a.0.cmp(&b.0));
    sitemapd_scheduler::bounded_metadata(m)
}

/// Metadata as the protocol sends it.
pub(super) fn metadata_map(m: &Metadata) -> HashMap<String, proto::StringList> {
    m.iter()
        .map(|(k, v)| (k.clone(), proto::StringList { values: v.clone() }))
        .collect()
}

/// The first value of `key`.
fn first<'m>(m: &'m Metadata, key: &str) -> Option<&'m str> {
    m.iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.first())
        .map(String::as_str)
}

/// How the fetch went, from the metadata a client sends (`previous`: what
/// was stored before, for the signature): none when it sends no status.
pub fn completion_of(metadata: &Metadata, previous: &Metadata) -> Option<Completion> {
    let status: u16 = first(metadata, STATUS_KEY)?.trim().parse().ok()?;
    let outcome = match status {
        304 => Outcome::NotModified,
        200..=299 => {
            let now = first(metadata, SIGNATURE_KEY);
            let before = first(previous, SIGNATURE_KEY);
            match (now, before) {
                (Some(a), Some(b)) if a == b => Outcome::NotModified,
                _ => Outcome::Changed,
            }
        }
        404 | 410 => Outcome::Gone(status),
        301 | 302 | 303 | 307 | 308 => match first(metadata, REDIRECT_KEY) {
            Some(to) => Outcome::Redirected {
                to: to.to_string(),
                status,
            },
            None => Outcome::Error(status),
        },
        _ => Outcome::Error(status),
    };
    Some(Completion {
        status: Some(status),
        ..Completion::from(outcome)
    })
}

/// A stored URL as the protocol shows it, in its queue.
pub(super) fn url_item(view: &UrlView, crawl: &str) -> proto::UrlItem {
    let info = proto::UrlInfo {
        url: view.url.clone(),
        key: view.queue.clone(),
        metadata: metadata_map(&view.metadata),
        crawl_id: crawl_id(crawl).to_string(),
    };
    let refetch = if view.status == UrlStatus::Completed {
        0
    } else {
        // A scheduled URL's date is above 0 (one due "at 0" would read as
        // completed).
        view.due.unix().max(1).unsigned_abs()
    };
    proto::UrlItem {
        item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
            info: Some(info),
            refetchable_from_date: refetch,
        })),
        id: String::new(),
        creation_date: view.first_seen.unix().max(1).unsigned_abs(),
    }
}

/// What one put item asks, once read, with the queue it goes in.
pub(super) enum Item {
    Discovered(DiscoveredUrl),
    Known(KnownUrl),
}

impl Item {
    /// About the bytes it holds.
    pub(super) fn bytes(&self) -> usize {
        let (url, metadata, queue) = match self {
            Item::Discovered(d) => (&d.url, &d.metadata, &d.queue),
            Item::Known(k) => (&k.url, &k.metadata, &k.queue),
        };
        let metadata: usize = metadata
            .iter()
            .map(|(k, v)| k.len() + v.iter().map(String::len).sum::<usize>())
            .sum();
        url.len() + queue.as_ref().map_or(0, String::len) + metadata
    }
}

/// `delay_requestable` within [`MAX_DELAY_SECS`], or INVALID_ARGUMENT
/// naming the bound.
pub(super) fn check_delay(secs: u32) -> Result<(), Status> {
    if secs > MAX_DELAY_SECS {
        return Err(Status::invalid_argument(format!(
            "delay_requestable must be at most {MAX_DELAY_SECS} seconds (7 days), not {secs}"
        )));
    }
    Ok(())
}

/// An item's id (its URL when it has none), crawl and what it asks; `Err`
/// with the id when it is to be SKIPPED (no URL, no queue, a key too
/// long).
pub(super) fn read_item(item: proto::UrlItem) -> Result<(String, String, Item), String> {
    let id = ack_id(&item);
    let (info, refetch) = match item.item {
        Some(proto::url_item::Item::Discovered(d)) => (d.info, None),
        Some(proto::url_item::Item::Known(k)) => (k.info, Some(k.refetchable_from_date)),
        None => (None, None),
    };
    let Some(info) = info else {
        return Err(id);
    };
    match item_of(info, refetch) {
        Some((crawl, what)) => Ok((id, crawl, what)),
        None => Err(id),
    }
}

/// What a PutURLs item says of its URL, if it says anything.
pub(super) fn item_info(item: &proto::UrlItem) -> Option<&proto::UrlInfo> {
    match &item.item {
        Some(proto::url_item::Item::Discovered(d)) => d.info.as_ref(),
        Some(proto::url_item::Item::Known(k)) => k.info.as_ref(),
        None => None,
    }
}

/// The id a PutURLs item is acked with: its own, or its URL when it has
/// none.
pub(super) fn ack_id(item: &proto::UrlItem) -> String {
    match item_info(item) {
        Some(info) if item.id.is_empty() => info.url.clone(),
        _ => item.id.clone(),
    }
}

/// What `info` asks, with its crawl: discovered, or known with its
/// `refetch` date (0: completed). None when it has no queue (no host, a
/// key over the limit) or its date is past [`MAX_REFETCH_DATE`]: SKIPPED.
pub(super) fn item_of(info: proto::UrlInfo, refetch: Option<u64>) -> Option<(String, Item)> {
    let queue = Some(queue_key(&info.url, &info.key).ok()?.to_string());
    let metadata = metadata_of(info.metadata);
    let what = match refetch {
        None => Item::Discovered(DiscoveredUrl {
            url: info.url,
            metadata,
            queue,
        }),
        Some(date) if date > MAX_REFETCH_DATE => return None,
        Some(date) => Item::Known(KnownUrl {
            url: info.url,
            refetch: (date > 0).then(|| Timestamp::from_unix(date as i64)),
            metadata,
            queue,
        }),
    };
    Some((info.crawl_id, what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sitemapd_scheduler::{Store, StoreOptions};

    fn meta(pairs: &[(&str, &str)]) -> Metadata {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
            .collect()
    }

    fn info(url: &str, key: &str, crawl: &str) -> proto::UrlInfo {
        proto::UrlInfo {
            url: url.into(),
            key: key.into(),
            metadata: HashMap::new(),
            crawl_id: crawl.into(),
        }
    }

    fn known(id: &str, info: proto::UrlInfo, refetch: u64) -> proto::UrlItem {
        proto::UrlItem {
            item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
                info: Some(info),
                refetchable_from_date: refetch,
            })),
            id: id.into(),
            creation_date: 0,
        }
    }

    fn discovered(id: &str, info: proto::UrlInfo) -> proto::UrlItem {
        proto::UrlItem {
            item: Some(proto::url_item::Item::Discovered(
                proto::DiscoveredUrlItem { info: Some(info) },
            )),
            id: id.into(),
            creation_date: 0,
        }
    }

    #[test]
    fn metadata_is_read_in_key_order_and_sent_back_whole() {
        let sent: HashMap<String, proto::StringList> =
            [("b", vec!["2"]), ("a", vec!["1", "1bis"]), ("c", vec![])]
                .into_iter()
                .map(|(k, v)| {
                    let values = v.into_iter().map(String::from).collect();
                    (k.to_string(), proto::StringList { values })
                })
                .collect();
        let read = metadata_of(sent.clone());
        let keys: Vec<&str> = read.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(metadata_map(&read), sent);
    }

    #[test]
    fn metadata_over_the_store_s_bound_is_cut() {
        let huge = "x".repeat(sitemapd_scheduler::frontier::MAX_METADATA_BYTES + 1);
        let sent = HashMap::from([
            ("huge".to_string(), proto::StringList { values: vec![huge] }),
            (
                "small".to_string(),
                proto::StringList {
                    values: vec!["s".into()],
                },
            ),
        ]);
        let read = metadata_of(sent);
        assert!(read.iter().all(|(k, _)| k != "huge"), "{read:?}");
    }

    #[test]
    fn a_reported_status_is_a_completion() {
        let outcome = |m: &[(&str, &str)], before: &[(&str, &str)]| {
            completion_of(&meta(m), &meta(before)).map(|c| (c.status, c.outcome))
        };
        assert_eq!(outcome(&[], &[]), None, "no status: no completion");
        assert_eq!(outcome(&[(STATUS_KEY, "abc")], &[]), None);
        assert_eq!(
            outcome(&[(STATUS_KEY, " 304 ")], &[]),
            Some((Some(304), Outcome::NotModified))
        );
        assert_eq!(
            outcome(&[(STATUS_KEY, "200")], &[]),
            Some((Some(200), Outcome::Changed))
        );
        // The same signature as stored: not modified; another: changed.
        let signed = [(STATUS_KEY, "200"), (SIGNATURE_KEY, "s1")];
        assert_eq!(
            outcome(&signed, &[(SIGNATURE_KEY, "s1")]),
            Some((Some(200), Outcome::NotModified))
        );
        assert_eq!(
            outcome(&signed, &[(SIGNATURE_KEY, "s0")]),
            Some((Some(200), Outcome::Changed))
        );
        assert_eq!(
            outcome(&[(STATUS_KEY, "410")], &[]),
            Some((Some(410), Outcome::Gone(410)))
        );
        assert_eq!(
            outcome(
                &[(STATUS_KEY, "301"), (REDIRECT_KEY, "https://b.example/")],
                &[]
            ),
            Some((
                Some(301),
                Outcome::Redirected {
                    to: "https://b.example/".into(),
                    status: 301
                }
            ))
        );
        // A redirect without its target, or any other status: an error.
        assert_eq!(
            outcome(&[(STATUS_KEY, "302")], &[]),
            Some((Some(302), Outcome::Error(302)))
        );
        assert_eq!(
            outcome(&[(STATUS_KEY, "503")], &[]),
            Some((Some(503), Outcome::Error(503)))
        );
    }

    #[test]
    fn a_delay_is_at_most_seven_days() {
        assert!(check_delay(0).is_ok());
        assert!(check_delay(MAX_DELAY_SECS).is_ok());
        let refused = check_delay(MAX_DELAY_SECS + 1).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(
            refused.message().contains("604800"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn an_item_is_read_with_its_id_crawl_and_queue() {
        // No id: the URL is the id; no key: the host's queue.
        let (id, crawl, what) =
            read_item(discovered("", info("https://a.example/x", "", "news"))).unwrap();
        assert_eq!(
            (id.as_str(), crawl.as_str()),
            ("https://a.example/x", "news")
        );
        let Item::Discovered(d) = what else {
            panic!("discovered")
        };
        assert_eq!(d.queue.as_deref(), Some("a.example"));
        // A known item: its date, 0 for completed.
        let (id, _, what) =
            read_item(known("k1", info("https://a.example/y", "q", ""), 1_000)).unwrap();
        assert_eq!(id, "k1");
        let Item::Known(k) = what else {
            panic!("known")
        };
        assert_eq!(k.refetch, Some(Timestamp::from_unix(1_000)));
        assert_eq!(k.queue.as_deref(), Some("q"));
        let (_, _, what) = read_item(known("", info("https://a.example/z", "", ""), 0)).unwrap();
        assert!(matches!(what, Item::Known(KnownUrl { refetch: None, .. })));
    }

    #[test]
    fn an_item_with_no_queue_or_a_date_past_the_bound_is_skipped_by_its_id() {
        let no_info = proto::UrlItem {
            item: None,
            id: "empty".into(),
            creation_date: 0,
        };
        assert_eq!(read_item(no_info).err().as_deref(), Some("empty"));
        let no_host = discovered("", info("https:///x", "", ""));
        assert_eq!(read_item(no_host).err().as_deref(), Some("https:///x"));
        let long_key = discovered("i", info("https://a.example/", &"k".repeat(256), ""));
        assert_eq!(read_item(long_key).err().as_deref(), Some("i"));
        let far = known(
            "f",
            info("https://a.example/", "", ""),
            MAX_REFETCH_DATE + 1,
        );
        assert_eq!(read_item(far).err().as_deref(), Some("f"));
        let last = known("l", info("https://a.example/", "", ""), MAX_REFETCH_DATE);
        assert!(read_item(last).is_ok());
    }

    #[test]
    fn an_item_s_bytes_count_its_url_queue_and_metadata() {
        let mut i = info("https://a.example/", "key", "");
        i.metadata.insert(
            "ab".into(),
            proto::StringList {
                values: vec!["cde".into(), "f".into()],
            },
        );
        let (_, what) = item_of(i, None).unwrap();
        assert_eq!(what.bytes(), "https://a.example/".len() + 3 + 2 + 4);
    }

    #[test]
    fn a_stored_url_shows_its_date_and_crawl() {
        let store = Store::in_memory(StoreOptions::default()).unwrap();
        let at = Timestamp::from_unix(1_700_000_000);
        let url = "https://a.example/p";
        let new = DiscoveredUrl {
            url: url.into(),
            metadata: meta(&[("m", "v")]),
            queue: Some("q".into()),
        };
        store.discover([new], at).unwrap();
        let view = store.url(url).unwrap().unwrap();
        let item = url_item(&view, "");
        assert_eq!(item.creation_date, 1_700_000_000);
        let Some(proto::url_item::Item::Known(k)) = item.item else {
            panic!("known")
        };
        assert!(k.refetchable_from_date > 0, "scheduled: a date above 0");
        let info = k.info.unwrap();
        assert_eq!(
            (info.url.as_str(), info.key.as_str(), info.crawl_id.as_str()),
            (url, "q", "DEFAULT")
        );
        assert_eq!(info.metadata["m"].values, ["v"]);
        // Completed: date 0.
        let done = KnownUrl {
            url: url.into(),
            refetch: None,
            metadata: Metadata::new(),
            queue: Some("q".into()),
        };
        store.put_known(vec![done], at, |_, _| None).unwrap();
        let view = store.url(url).unwrap().unwrap();
        let Some(proto::url_item::Item::Known(k)) = url_item(&view, "news").item else {
            panic!("known")
        };
        assert_eq!(k.refetchable_from_date, 0);
        assert_eq!(k.info.unwrap().crawl_id, "news");
    }
}
