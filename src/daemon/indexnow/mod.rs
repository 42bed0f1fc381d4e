//! The IndexNow intake (`indexnow.indexnow_listen`): sites push the URLs
//! that changed, as they do to Bing and Yandex. A listener of its own,
//! public by nature (no API token), with the daemon's connection caps and
//! head and body limits.
//!
//! A push is read and checked ([`request`]), counted against its client's
//! and its host's quotas ([`quotas`]), its host checked against the hosts
//! accepted, then its key looked up ([`keys`]): a key its host's key file
//! held is applied at once (200), the URLs notified in the store
//! ([`Store::push`]) and flushed before the answer; a new key is verified in
//! the background ([`verify`]), through the daemon's guarded fetcher, the
//! URLs held meanwhile (202) and then applied or dropped; a key whose file
//! did not hold it is refused (403). A verified key is verified again every
//! `indexnow_recheck_secs` (a file that stops holding it revokes it), and
//! each verification reads the host's robots.txt too, whose rules the
//! pushed URLs are kept under (a disallowed URL is accepted and stays
//! blocked). A push makes the daemon fetch nothing else.

mod keys;
mod quotas;
mod request;
mod verify;

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequest, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use sitemapd_discovery::Fetcher;
use sitemapd_parser::{HostKey, NormUrl};
use sitemapd_scheduler::{Clock, Store, StoreError};

use self::keys::{Admit, KeyId, Keys};
use self::quotas::{NewHosts, Quotas, Recent, RetryAfter};
use self::request::Push;
use super::metrics::{Metrics, label};
use crate::settings::IndexNowSettings;

/// Keys known at most (each under 3 KiB: a key file URL is 2,048
/// characters at most, a refusal's reason 300).
const MAX_KEYS: usize = 20_000;
/// Bytes of the URLs held for keys being verified, in all.
const MAX_HELD_BYTES: usize = 32 << 20;
/// Key verifications running at once.
const MAX_VERIFYING: usize = 64;
/// Hosts and client addresses whose quotas are tracked, each.
const MAX_TRACKED: usize = 50_000;
/// Key files of one host verified a day at most (re-checks of verified
/// keys aside): made-up keys cannot have a site fetched more.
const VERIFICATIONS_PER_HOST_PER_DAY: u64 = 24;
/// URL hashes remembered per generation for the duplicate window.
const MAX_RECENT: usize = 1 << 19;

/// An answer of the intake: a status and a JSON body, with `Retry-After`
/// for a 429.
#[derive(Debug)]
pub(super) struct Answer {
    status: StatusCode,
    body: serde_json::Value,
    retry_after: Option<u64>,
}

impl Answer {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Answer {
            status,
            body: json!({ "error": message.into() }),
            retry_after: None,
        }
    }

    fn retry(RetryAfter(secs): RetryAfter, message: impl Into<String>) -> Self {
        Answer {
            retry_after: Some(secs),
            ..Answer::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }

    fn ok(status: StatusCode, body: serde_json::Value) -> Self {
        Answer {
            status,
            body,
            retry_after: None,
        }
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<StoreError> for Answer {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store error (IndexNow)");
        Answer::new(
            super::api::store_error_status(&e),
            "the push could not be stored: try again later",
        )
    }
}

/// Which hosts' pushes are accepted.
#[derive(Debug, Clone)]
enum Hosts {
    /// Hosts the store holds URLs of, and those of followed sites.
    Followed,
    /// Any host; a host new to the store counts against a daily cap.
    Any,
    /// These hosts.
    Listed(HashSet<HostKey>),
}

/// The hosts of the followed sites, read again from the store when older
/// than [`FOLLOWED_TTL`].
#[derive(Default)]
struct Followed {
    read: Option<std::time::Instant>,
    hosts: HashSet<HostKey>,
}

/// How long the followed sites' hosts are taken as read.
const FOLLOWED_TTL: Duration = Duration::from_secs(30);

/// The tables a push reads and updates, under one lock (held for
/// in-memory work only, never across a fetch or a store write).
struct Tables {
    keys: Keys,
    by_host: Quotas<HostKey>,
    /// Key verifications started per host (counted as its "URLs").
    verifications: Quotas<HostKey>,
    by_client: Quotas<IpAddr>,
    new_hosts: NewHosts,
    recent: Recent,
}

/// The intake's shared state.
pub(super) struct Intake {
    store: Arc<Store>,
    /// The daemon's fetcher (its address guard, its politeness), for the
    /// hosts' robots.txt.
    fetcher: Fetcher,
    /// The same, following no redirect: for key files, which must be where
    /// they are named.
    key_fetcher: Fetcher,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    hosts: Hosts,
    followed: Mutex<Followed>,
    trusted_proxies: Vec<IpAddr>,
    body_timeout: Duration,
    tables: Mutex<Tables>,
    /// Held while a verification's outcome is written to the store, so
    /// that the last write says what the keys table says.
    noting: tokio::sync::Mutex<()>,
}

type Shared = Arc<Intake>;

impl Intake {
    pub(super) fn new(
        settings: &IndexNowSettings,
        store: Arc<Store>,
        fetcher: Fetcher,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        body_timeout: Duration,
    ) -> anyhow::Result<Intake> {
        let hosts = match settings.indexnow_hosts.first().map(String::as_str) {
            Some("followed") => Hosts::Followed,
            Some("any") => Hosts::Any,
            _ => Hosts::Listed(
                settings
                    .indexnow_hosts
                    .iter()
                    .filter_map(|h| crate::settings::host_key(h))
                    .collect(),
            ),
        };
        // One attempt: a file that cannot be read now is tried again by a
        // later push, not by the fetcher at once.
        let key_fetcher = Fetcher::new(sitemapd_discovery::FetchConfig {
            max_redirects: 0,
            attempts: 1,
            ..fetcher.config().clone()
        })?;
        Ok(Intake {
            store,
            fetcher,
            key_fetcher,
            clock,
            metrics,
            hosts,
            followed: Mutex::new(Followed::default()),
            trusted_proxies: settings
                .indexnow_trusted_proxies
                .iter()
                .map(IpAddr::to_canonical)
                .collect(),
            body_timeout,
            noting: tokio::sync::Mutex::new(()),
            tables: Mutex::new(Tables {
                keys: Keys::new(
                    MAX_KEYS,
                    MAX_HELD_BYTES,
                    MAX_VERIFYING,
                    settings.indexnow_recheck_secs,
                    settings.indexnow_refused_secs,
                ),
                by_host: Quotas::new(
                    settings.indexnow_host_requests_per_minute,
                    settings.indexnow_host_urls_per_day,
                    MAX_TRACKED,
                ),
                verifications: Quotas::new(u32::MAX, VERIFICATIONS_PER_HOST_PER_DAY, MAX_TRACKED),
                by_client: Quotas::new(
                    settings.indexnow_client_requests_per_minute,
                    settings.indexnow_client_urls_per_day,
                    MAX_TRACKED,
                ),
                new_hosts: NewHosts::new(settings.indexnow_new_hosts_per_day),
                recent: Recent::new(settings.indexnow_dedup_secs, MAX_RECENT),
            }),
        })
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> i64 {
        self.clock.now().unix()
    }
}

/// The client of a request from `peer`: the peer, or for a peer among
/// `trusted_proxies` the last address of X-Forwarded-For (the one that
/// proxy added); as the quotas count it (an IPv6 /64 as one).
fn client_address(peer: SocketAddr, headers: &HeaderMap, trusted_proxies: &[IpAddr]) -> IpAddr {
    let ip = peer.ip().to_canonical();
    let forwarded = || {
        let last = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .next_back()?;
        last.trim().parse::<IpAddr>().ok()
    };
    let client = match trusted_proxies.contains(&ip) {
        true => forwarded().unwrap_or(ip),
        false => ip,
    };
    super::conns::peer_of(client)
}

/// The intake's routes.
pub(super) fn router(intake: Shared, max_body: usize) -> Router {
    Router::new()
        .route("/indexnow", get(single).post(many))
        .fallback(|| async {
            Answer::new(
                StatusCode::NOT_FOUND,
                "this is an IndexNow intake: GET /indexnow?url=…&key=… or POST /indexnow",
            )
        })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(intake)
}

/// `GET /indexnow?url=…&key=…[&keyLocation=…]`.
async fn single(State(intake): State<Shared>, req: Request) -> Answer {
    let client = client_of(&intake, &req);
    if let Err(answer) = count_request(&intake, client) {
        return answer;
    }
    let push = Query::<request::Query>::try_from_uri(req.uri())
        .map_err(|e| Answer::new(StatusCode::BAD_REQUEST, e.body_text()))
        .and_then(|Query(q)| q.push());
    answered(&intake, handle(&intake, client, push).await)
}

/// `POST /indexnow`, a JSON body.
async fn many(State(intake): State<Shared>, req: Request) -> Answer {
    let client = client_of(&intake, &req);
    if let Err(answer) = count_request(&intake, client) {
        return answer;
    }
    let timeout = intake.body_timeout;
    let body = match tokio::time::timeout(timeout, Bytes::from_request(req, &())).await {
        Err(_) => Err(Answer::new(
            StatusCode::REQUEST_TIMEOUT,
            "request body too slow",
        )),
        Ok(Err(e)) => Err(Answer::new(e.status(), e.body_text())),
        Ok(Ok(bytes)) => Ok(bytes),
    };
    let push = body.and_then(|bytes| request::body_push(&bytes));
    answered(&intake, handle(&intake, client, push).await)
}

fn client_of(intake: &Intake, req: &Request) -> IpAddr {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
    client_address(peer, req.headers(), &intake.trusted_proxies)
}

/// Counts a request against its client's quota, before it is read.
fn count_request(intake: &Intake, client: IpAddr) -> Result<(), Answer> {
    let now = intake.now();
    let counted = intake.tables().by_client.take(&client, 1, 0, now);
    counted.map_err(|retry| {
        answered(
            intake,
            Answer::retry(retry, "too many requests from this address"),
        )
    })
}

/// Counts the answer in the metrics.
fn answered(intake: &Intake, answer: Answer) -> Answer {
    intake
        .metrics
        .indexnow_requests
        .get_or_create(&label(answer.status.as_u16().to_string()))
        .inc();
    answer
}

/// A push read (or not), answered.
async fn handle(intake: &Shared, client: IpAddr, push: Result<Push, Answer>) -> Answer {
    let push = match push {
        Ok(push) => push,
        Err(answer) => return answer,
    };
    let new_host = match accepted(intake, &push.host).await {
        Ok(new) => new,
        Err(answer) => return answer,
    };
    let n = push.urls.len() as u64;
    let now = intake.now();
    let id = KeyId {
        host: push.host.clone(),
        key: push.key.clone(),
        location: push.location.to_string(),
    };
    let admitted = {
        let mut tables = intake.tables();
        // A client's URLs count whatever becomes of them; a host's only
        // under a key its file holds (nobody else can spend them).
        if let Err(retry) = tables.by_client.take(&client, 0, n, now) {
            return Answer::retry(retry, "too many URLs from this address today");
        }
        if tables.keys.is_verified(&id)
            && let Err(retry) = tables.by_host.take(&push.host, 1, n, now)
        {
            return Answer::retry(retry, format!("too many pushes for {}", push.host));
        }
        // A verification about to start: a host new to the store takes a
        // place of the day's (given back if it does not verify), and the
        // host one of its verifications of the day.
        let mut place = None;
        if tables.keys.would_verify(&id, now) {
            if new_host {
                match tables.new_hosts.take(now) {
                    Ok(day) => place = Some(day),
                    Err(retry) => return Answer::retry(retry, "no more new hosts today"),
                }
            }
            if let Err(retry) = tables.verifications.take(&push.host, 0, 1, now) {
                if let Some(day) = place {
                    tables.new_hosts.give_back(day);
                }
                return Answer::retry(
                    retry,
                    format!("too many key files of {} verified today", push.host),
                );
            }
        }
        let admit = tables.keys.admit(&id, &push.urls, now, place);
        if let Some(day) = place
            && admit != Admit::Verify
        {
            tables.new_hosts.give_back(day);
        }
        admit
    };
    let answer = match admitted {
        Admit::Apply => apply(intake, &push.host, push.urls).await,
        Admit::ApplyAndRecheck => {
            tokio::spawn(verify::verify(intake.clone(), id));
            apply(intake, &push.host, push.urls).await
        }
        Admit::Verify => {
            intake.update_gauge();
            tokio::spawn(verify::verify(intake.clone(), id));
            pending(n)
        }
        Admit::Held => pending(n),
        Admit::Refused(why) => Answer::new(StatusCode::FORBIDDEN, why),
        Admit::Later(secs, why) => Answer::retry(
            RetryAfter(secs.max(1)),
            format!("the key file could not be read lately ({why}): try again later"),
        ),
        Admit::Busy => Answer::retry(RetryAfter(1), "key verifications are busy"),
    };
    if answer.status.is_success() {
        intake.metrics.indexnow_received.inc_by(n);
    }
    answer
}

/// 202: received, the key's verification running.
fn pending(urls: u64) -> Answer {
    Answer::ok(
        StatusCode::ACCEPTED,
        json!({ "urls": urls, "status": "received; the key is being verified" }),
    )
}

/// Whether pushes for `host` are accepted (403 if not), and whether it is
/// new to the store (no URL of it held).
async fn accepted(intake: &Shared, host: &HostKey) -> Result<bool, Answer> {
    let refused = || {
        Answer::new(
            StatusCode::FORBIDDEN,
            format!(
                "pushes for {host} are not accepted here: it is not a host this daemon follows"
            ),
        )
    };
    if let Hosts::Listed(hosts) = &intake.hosts {
        return if hosts.contains(host) {
            Ok(false)
        } else {
            Err(refused())
        };
    }
    let store = intake.store.clone();
    let key = host.clone();
    let held = tokio::task::spawn_blocking(move || store.host(&key).map(|h| h.urls > 0))
        .await
        .map_err(|e| Answer::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    if held {
        return Ok(false);
    }
    if intake.is_followed(host).await? {
        return Ok(false);
    }
    match intake.hosts {
        Hosts::Any => Ok(true),
        _ => Err(refused()),
    }
}

impl Intake {
    /// Whether `host` is the host of a followed site (a seed's host); the
    /// hosts are read from the store at most every [`FOLLOWED_TTL`].
    async fn is_followed(self: &Arc<Self>, host: &HostKey) -> Result<bool, Answer> {
        {
            let followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
            if followed.read.is_some_and(|at| at.elapsed() < FOLLOWED_TTL) {
                return Ok(followed.hosts.contains(host));
            }
        }
        let store = self.store.clone();
        let hosts = tokio::task::spawn_blocking(move || -> Result<HashSet<HostKey>, StoreError> {
            let mut hosts = HashSet::new();
            for site in store.sites() {
                if let Ok(seed) = NormUrl::parse(&site?.site) {
                    hosts.insert(seed.host_key());
                }
            }
            Ok(hosts)
        })
        .await
        .map_err(|e| Answer::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
        let followed = hosts.contains(host);
        *self.followed.lock().unwrap_or_else(|e| e.into_inner()) = Followed {
            read: Some(std::time::Instant::now()),
            hosts,
        };
        Ok(followed)
    }

    /// Sets the `indexnow_hosts` gauge.
    fn update_gauge(&self) {
        let hosts = self.tables().keys.verified_hosts();
        self.metrics.indexnow_hosts.set(hosts as i64);
    }
}

/// Notifies `urls` of `host` in the store (those pushed within the
/// duplicate window left out) and flushes it: 200 once they are durable.
async fn apply(intake: &Shared, host: &HostKey, urls: Vec<String>) -> Answer {
    let n = urls.len();
    let now = intake.now();
    let mut fresh: Vec<String> = {
        let mut tables = intake.tables();
        urls.into_iter()
            .filter(|u| !tables.recent.holds(u, now))
            .collect()
    };
    // A URL listed twice in the push is stored once.
    fresh.sort_unstable();
    fresh.dedup();
    let duplicates = (n - fresh.len()) as u64;
    let metrics = &intake.metrics;
    metrics
        .indexnow_urls
        .get_or_create(&label("duplicate"))
        .inc_by(duplicates);
    let applied = fresh.len() as u64;
    if !fresh.is_empty() {
        let store = intake.store.clone();
        let host = host.clone();
        let clock = intake.clock.clone();
        let stored = tokio::task::spawn_blocking(move || {
            let pushed = store.push(&host, fresh.iter().map(String::as_str), clock.now())?;
            store.flush()?;
            Ok::<_, StoreError>((pushed.urgent, fresh))
        })
        .await;
        match stored {
            Ok(Ok((urgent, fresh))) => {
                tracing::debug!(urls = applied, urgent, "IndexNow push applied");
                // Counted in the window once stored: a push that failed
                // may be sent again.
                let mut tables = intake.tables();
                for url in &fresh {
                    tables.recent.insert(url, now);
                }
            }
            Ok(Err(e)) => return e.into(),
            Err(e) => return Answer::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
        metrics
            .indexnow_urls
            .get_or_create(&label("applied"))
            .inc_by(applied);
    }
    Answer::ok(
        StatusCode::OK,
        json!({ "urls": n, "applied": applied, "duplicates": duplicates }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_peer_unless_the_peer_is_a_trusted_proxy() {
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let from = |peer: &str, forwarded: &[&str], trusted: &[IpAddr]| {
            let mut headers = HeaderMap::new();
            for f in forwarded {
                headers.append("x-forwarded-for", f.parse().unwrap());
            }
            let peer = SocketAddr::new(peer.parse().unwrap(), 1234);
            client_address(peer, &headers, trusted).to_string()
        };
        // The last hop the proxy added counts, not what the client wrote.
        assert_eq!(
            from("127.0.0.1", &["6.6.6.6, 203.0.113.9"], &[proxy]),
            "203.0.113.9"
        );
        assert_eq!(
            from("127.0.0.1", &["6.6.6.6", "203.0.113.9"], &[proxy]),
            "203.0.113.9"
        );
        // From anyone else the header is ignored.
        assert_eq!(
            from("198.51.100.7", &["203.0.113.9"], &[proxy]),
            "198.51.100.7"
        );
        assert_eq!(from("127.0.0.1", &["203.0.113.9"], &[]), "127.0.0.1");
        // A proxy that sent no usable address: the proxy itself.
        assert_eq!(
            from("127.0.0.1", &["not an address"], &[proxy]),
            "127.0.0.1"
        );
        // An IPv6 client counts as its /64.
        assert_eq!(from("2001:db8:0:7:1:2:3:4", &[], &[]), "2001:db8:0:7::");
    }
}
