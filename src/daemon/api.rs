//! The HTTP API (axum, JSON). Every route but `/healthz` needs the bearer
//! token when one is configured. Shapes are documented in docs/daemon.md:
//! every error is `{"error": …}`, every time in Unix seconds has its RFC
//! 3339 twin (`due` and `due_rfc3339`), 64-bit ids are strings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sitemapd_parser::{HostKey, NormUrl};
use sitemapd_scheduler::{Clock, SitemapView, Store, StoreError};
use subtle::ConstantTimeEq;
use tokio::sync::Notify;

use super::metrics::{Metrics, label};
use super::routing::route;
use crate::outcome_report::Reported;
use crate::output::leased_json;
use crate::settings::site_key;
use crate::times::add_rfc3339;

/// A JSON answer, each time field with its RFC 3339 twin.
fn answer(mut value: Value) -> Json<Value> {
    add_rfc3339(&mut value);
    Json(value)
}

/// The host of a site key or a stored URL (`None`: not an http(s) URL).
fn host_key(url: &str) -> Option<HostKey> {
    NormUrl::parse(url).ok().map(|u| u.host_key())
}

/// What every handler shares.
pub(super) struct ApiState {
    /// The store.
    pub store: Arc<Store>,
    /// Where "now" comes from for every store call.
    pub clock: Arc<dyn Clock>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// The bearer token, if any.
    pub token: Option<String>,
    /// Wakes the refresh loop (a site was added).
    pub wake: Arc<Notify>,
    /// Set at shutdown: no more leases.
    pub stopping: Arc<AtomicBool>,
    /// Lease time to live when a request gives none.
    pub lease_ttl: i64,
    /// URLs of one host per lease at most.
    pub per_host: usize,
    /// URLs per lease request at most.
    pub max_lease: usize,
    /// How long a client may take to send a body.
    pub body_timeout: std::time::Duration,
    /// In cluster mode, the node's view of the cluster (for `/metrics`)
    /// and its clients to the other nodes.
    pub cluster: Option<super::routing::Peers>,
}

type Shared = Arc<ApiState>;

/// The longest lease a request may ask for: the scheduler's bound.
const MAX_TTL_SECS: i64 = sitemapd_scheduler::LeaseRequest::MAX_TTL.as_secs() as i64;

/// The router, with auth, the browser checks ([`super::access`]) and the
/// body limit.
pub(super) fn router(state: ApiState, max_body: usize, access: super::access::Access) -> Router {
    let state = Arc::new(state);
    let v1 = Router::new()
        .route("/v1/lease", post(lease))
        .route("/v1/complete", post(complete))
        .route("/v1/notify", post(notify))
        .route(
            "/v1/sites",
            get(list_sites).post(add_sites).delete(remove_sites),
        )
        .route("/v1/urls", get(url_record))
        .route("/v1/sitemaps", get(sitemaps))
        .route("/v1/stats", get(stats))
        .route("/metrics", get(metrics))
        // The last layer runs first: the token, then Host, Origin and Content-Type.
        .route_layer(middleware::from_fn_with_state(
            Arc::new(access),
            super::access::guard,
        ))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(v1)
        .method_not_allowed_fallback(|req: Request| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} is not allowed on {}", req.method(), req.uri().path()),
            )
        })
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such route") })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// An error answer: `{"error": message}` with a status.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// The status of a store error: a damaged store or a failed write is the
/// service being unavailable (503, as `/healthz` then says), anything else
/// an internal error.
pub(super) fn store_error_status(e: &StoreError) -> StatusCode {
    if e.is_damage() || e.is_write_failure() || e.is_log_refusal() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store error");
        Self::new(store_error_status(&e), e.to_string())
    }
}

/// A JSON body of any content type, with errors as [`ApiError`]s (400 for
/// bad JSON, 413 over the body limit, 408 when it does not arrive in time).
pub(super) struct JsonBody<T>(T);

impl<T: DeserializeOwned> FromRequest<Shared> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Shared) -> Result<Self, ApiError> {
        let bytes = body_bytes(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// [`JsonBody`] for a request whose every field is optional: no body (or
/// one of only white space) is `T::default()`, as `{}` is.
pub(super) struct OptionalJsonBody<T>(T);

impl<T: DeserializeOwned + Default> FromRequest<Shared> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Shared) -> Result<Self, ApiError> {
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse_json(&bytes).map(OptionalJsonBody)
    }
}

/// The body, within the time limit.
async fn body_bytes(req: Request, state: &Shared) -> Result<Bytes, ApiError> {
    // A client that stalls mid-body does not hold a connection forever.
    tokio::time::timeout(state.body_timeout, Bytes::from_request(req, state))
        .await
        .map_err(|_| ApiError::new(StatusCode::REQUEST_TIMEOUT, "request body too slow"))?
        .map_err(|e| ApiError::new(e.status(), e.body_text()))
}

fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

/// A query string, with its errors (a missing or malformed field) as
/// [`ApiError`]s.
pub(super) struct JsonQuery<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for JsonQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| JsonQuery(q))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// Runs store work off the async workers.
async fn blocking<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&Store) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || work(&store))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// [`blocking`] for a write the answer acknowledges: the store is flushed
/// before the response, so that a lease, a completion or a notification
/// the client was told about survives the process being killed
/// (`tests/crash_recovery.rs` kills it with `kill -9`). sled writes its
/// log buffer and waits for it with `sync_file_range` on Linux; that is not
/// a full `fsync` (file metadata, the drive's cache), so a power loss may
/// still lose the last writes. A request whose writes fall in a buffer
/// another request is already writing waits for that write instead of
/// starting its own.
async fn durable<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&Store) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    blocking(state, move |store| {
        let out = work(store)?;
        store.flush()?;
        Ok(out)
    })
    .await
}

/// Whether an `Authorization` value is `Bearer <token>`: constant time
/// over the token's bytes (a length mismatch fails without comparing).
pub(crate) fn bearer_matches(authorization: Option<&[u8]>, token: &str) -> bool {
    let given = authorization
        .and_then(|v| v.strip_prefix(b"Bearer "))
        .unwrap_or_default();
    bool::from(given.ct_eq(token.as_bytes()))
}

async fn auth(State(state): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        if !bearer_matches(given, token) {
            return ApiError::new(StatusCode::UNAUTHORIZED, "a valid bearer token is required")
                .into_response();
        }
    }
    next.run(req).await
}

/// Liveness: `ok`, or 503 with the reason as JSON while stopping or once
/// the store has failed (damaged; a write failed and sled refuses more
/// until the store is reopened; the last write failed). Costs no I/O.
async fn healthz(State(state): State<Shared>) -> Response {
    if state.stopping.load(Ordering::Relaxed) {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "stopping").into_response();
    }
    match state.store.health().reason() {
        Some(reason) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, reason).into_response(),
        None => (StatusCode::OK, "ok\n").into_response(),
    }
}

/// How long `/readyz` waits for its store probe: past it, the threads the
/// store's calls run on are all taken, and the daemon is not ready.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Readiness: the store reads now, and writes (after a failed write, a
/// probe write; it turns green again once one succeeds), within
/// [`READY_WAIT`]. 200 `ready`, or 503 with the reason as JSON.
async fn readyz(State(state): State<Shared>) -> Response {
    if state.stopping.load(Ordering::Relaxed) {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "stopping").into_response();
    }
    let store = state.store.clone();
    let probe = tokio::task::spawn_blocking(move || {
        store.probe_read()?;
        if store.health().write_failure.is_some() {
            store.probe_write()?;
        }
        Ok::<_, StoreError>(store.health())
    });
    let Ok(checked) = tokio::time::timeout(READY_WAIT, probe).await else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the store did not answer within {READY_WAIT:?}: every thread its calls run on is busy"
            ),
        )
        .into_response();
    };
    match checked {
        Ok(Ok(health)) => match health.reason() {
            None => (StatusCode::OK, "ready\n").into_response(),
            Some(reason) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, reason).into_response(),
        },
        Ok(Err(e)) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A lease request; every field optional (no body at all is all defaults).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseRequest {
    n: Option<usize>,
    ttl_secs: Option<i64>,
    per_host: Option<usize>,
    /// URLs of this many hosts at most (default: any number).
    max_hosts: Option<usize>,
}

/// URLs per lease when a request gives no `n` (fewer if `api.max_lease` is lower).
const DEFAULT_N: usize = 100;

async fn lease(
    State(state): State<Shared>,
    OptionalJsonBody(req): OptionalJsonBody<LeaseRequest>,
) -> Result<Json<Value>, ApiError> {
    if state.stopping.load(Ordering::Relaxed) {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting down: no more leases",
        ));
    }
    // Out of range is refused with the range, never clamped.
    let n = req.n.unwrap_or(DEFAULT_N.min(state.max_lease));
    if !(1..=state.max_lease).contains(&n) {
        return Err(ApiError::bad_request(format!(
            "n must be between 1 and {} (api.max_lease), not {n}",
            state.max_lease
        )));
    }
    let ttl = req.ttl_secs.unwrap_or(state.lease_ttl);
    if !(1..=MAX_TTL_SECS).contains(&ttl) {
        return Err(ApiError::bad_request(format!(
            "ttl_secs must be between 1 and {MAX_TTL_SECS} (7 days), not {ttl}"
        )));
    }
    let per_host = req.per_host.unwrap_or(state.per_host);
    if !(1..=state.per_host).contains(&per_host) {
        return Err(ApiError::bad_request(format!(
            "per_host must be between 1 and {} (scheduler.per_host), not {per_host}",
            state.per_host
        )));
    }
    if req.max_hosts == Some(0) {
        return Err(ApiError::bad_request(
            "max_hosts must be at least 1 (leave it out for any number)",
        ));
    }
    let max_hosts = req.max_hosts.unwrap_or(usize::MAX);
    let clock = state.clock.clone();
    let leased = durable(&state, move |store| {
        let request = sitemapd_scheduler::LeaseRequest::new(n)
            .per_host(per_host)
            .max_hosts(max_hosts)
            .ttl(std::time::Duration::from_secs(ttl.unsigned_abs()));
        Ok(store.lease(&request, clock.now())?)
    })
    .await?;
    state.metrics.leased.inc_by(leased.len() as u64);
    let urls: Vec<Value> = leased.iter().map(leased_json).collect();
    Ok(answer(json!({ "urls": urls })))
}

async fn complete(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(items): JsonBody<Vec<Reported>>,
) -> Result<Json<Value>, ApiError> {
    too_many("items", items.len())?;
    // Every item is checked before any is applied.
    // In a cluster, each item as it came too: it may be sent on.
    let keep = state.cluster.is_some();
    let mut checked = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let raw = keep.then(|| item.clone());
        let c = item
            .completion()
            .map_err(|e| ApiError::bad_request(format!("item {i}: {e:#}")))?;
        checked.push((raw, c));
    }
    // In a cluster, the items of other nodes' partitions are theirs.
    let routed = route(
        &state.store,
        state.cluster.as_ref(),
        &headers,
        checked,
        |(_, c)| &c.0,
    );
    let mut failed: Vec<String> = routed.nowhere.into_iter().map(|(_, c)| c.0).collect();
    let mut theirs = (0u64, Vec::new());
    for (addr, items) in routed.nodes {
        let body = Value::Array(items.iter().map(|(raw, _)| json!(raw)).collect());
        match sent_on(&state, &addr, "/v1/complete", &body).await {
            Some(answer) => {
                theirs.0 += answer["completed"].as_u64().unwrap_or(0);
                theirs.1.extend(strings(&answer["unknown"]));
                failed.extend(strings(&answer["failed"]));
            }
            None => failed.extend(items.into_iter().map(|(_, c)| c.0)),
        }
    }
    let completions: Vec<_> = routed.here.into_iter().map(|(_, c)| c).collect();
    let metrics = state.metrics.clone();
    let clock = state.clock.clone();
    durable(&state, move |store| {
        let unknown = store.complete_all(
            completions.iter().map(|(url, c)| (url.as_str(), c)),
            clock.now(),
        )?;
        // A set: a 4 MiB body holds tens of thousands of items.
        let unknown_set: HashSet<&String> = unknown.iter().collect();
        for (url, c) in &completions {
            if !unknown_set.contains(url) {
                metrics
                    .completions
                    .get_or_create(&label(c.outcome.name()))
                    .inc();
            }
        }
        let done = (completions.len() - unknown.len()) as u64 + theirs.0;
        let mut unknown = unknown;
        unknown.extend(theirs.1);
        let mut answer = json!({ "completed": done, "unknown": unknown });
        if !failed.is_empty() {
            answer["failed"] = json!(failed);
        }
        Ok(Json(answer))
    })
    .await
}

/// Sends a request on to the node at `addr` ([`super::routing::send_on`]):
/// its answer, or `None` (logged) when it gave none.
async fn sent_on(state: &ApiState, addr: &str, path: &str, body: &Value) -> Option<Value> {
    let peers = state.cluster.as_ref()?;
    match super::routing::send_on(peers, addr, path, state.token.as_deref(), body).await {
        Ok(answer) => Some(answer),
        Err(e) => {
            tracing::warn!(node = addr, path, error = %e, "a request sent on to another node failed: its URLs are answered as failed");
            None
        }
    }
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Value) -> impl Iterator<Item = String> + '_ {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyRequest {
    urls: Vec<String>,
}

/// Items one write request may carry: each request is one atomic batch
/// under the store's write lock, and a lease waits for it, so a bigger one
/// would stall every other client (215,000 URLs held leases up to 7 s).
pub(super) const MAX_WRITE_ITEMS: usize = 10_000;

/// 400 when a write request carries more than [`MAX_WRITE_ITEMS`].
fn too_many(what: &str, n: usize) -> Result<(), ApiError> {
    if n > MAX_WRITE_ITEMS {
        return Err(ApiError::bad_request(format!(
            "{n} {what}: at most {MAX_WRITE_ITEMS} per request (send the rest in more requests)"
        )));
    }
    Ok(())
}

async fn notify(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<NotifyRequest>,
) -> Result<Json<Value>, ApiError> {
    too_many("urls", req.urls.len())?;
    let mut urls = Vec::with_capacity(req.urls.len());
    for (i, u) in req.urls.iter().enumerate() {
        let url = sitemapd_parser::NormUrl::parse_limited(u).map_err(|e| {
            let shown: String = u.chars().take(80).collect();
            ApiError::bad_request(format!("urls[{i}]: {shown:?} is not an http(s) URL: {e}"))
        })?;
        urls.push(url.into_string());
    }
    // In a cluster, the URLs of other nodes' partitions are theirs.
    let routed = route(&state.store, state.cluster.as_ref(), &headers, urls, |u| u);
    let mut failed = routed.nowhere;
    let (mut known, mut added) = (0u64, 0u64);
    for (addr, urls) in routed.nodes {
        match sent_on(&state, &addr, "/v1/notify", &json!({ "urls": urls })).await {
            Some(answer) => {
                known += answer["known"].as_u64().unwrap_or(0);
                added += answer["added"].as_u64().unwrap_or(0);
                failed.extend(strings(&answer["failed"]));
            }
            None => failed.extend(urls),
        }
    }
    let urls = routed.here;
    let metrics = state.metrics.clone();
    let clock = state.clock.clone();
    durable(&state, move |store| {
        // All or nothing: one atomic batch (a failed write leaves the store
        // as it was, and the answer is an error).
        let found = store.notify_all(urls.iter().map(String::as_str), clock.now())?;
        let here_added = found
            .iter()
            .filter(|f| **f == sitemapd_scheduler::Notified::Added)
            .count() as u64;
        let here_known = found.len() as u64 - here_added;
        metrics.notified.inc_by(here_known + here_added);
        let mut answer = json!({ "known": known + here_known, "added": added + here_added });
        if !failed.is_empty() {
            answer["failed"] = json!(failed);
        }
        Ok(Json(answer))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SitesRequest {
    sites: Vec<String>,
}

/// A page of a list route: at most `limit` items (default
/// [`DEFAULT_PAGE`], at most [`MAX_PAGE`]) after the cursor `after` (the
/// last item of the previous page, as its `next` gave it).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    limit: Option<usize>,
    after: Option<String>,
    /// `/v1/stats` only: include the per-host counts (a page of them).
    hosts: Option<bool>,
}

/// Items per page when a request does not say.
const DEFAULT_PAGE: usize = 1_000;
/// Items per page at most.
const MAX_PAGE: usize = 10_000;

impl PageQuery {
    fn limit(&self) -> Result<usize, ApiError> {
        match self.limit {
            None => Ok(DEFAULT_PAGE),
            Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            Some(_) => Err(ApiError::bad_request(format!(
                "limit must be between 1 and {MAX_PAGE}"
            ))),
        }
    }
}

/// The first `limit` of `items` and the cursor of the next page (the key
/// of the last item given, when more follow).
fn page<T>(
    items: impl Iterator<Item = Result<T, StoreError>>,
    limit: usize,
    key: impl Fn(&T) -> String,
) -> Result<(Vec<T>, Option<String>), StoreError> {
    let mut out = Vec::new();
    for item in items {
        if out.len() == limit {
            let next = out.last().map(&key);
            return Ok((out, next));
        }
        out.push(item?);
    }
    Ok((out, None))
}

async fn list_sites(
    State(state): State<Shared>,
    JsonQuery(q): JsonQuery<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit()?;
    blocking(&state, move |store| {
        let (sites, next) = page(store.sites_after(q.after.as_deref()), limit, |s| {
            s.site.clone()
        })?;
        Ok(answer(json!({ "sites": sites, "next": next })))
    })
    .await
}

/// The normalised keys of the sites in a request; 400 on any that is not a
/// site or sitemap URL.
fn site_keys(req: &SitesRequest) -> Result<Vec<String>, ApiError> {
    if req.sites.is_empty() {
        return Err(ApiError::bad_request("sites must list at least one site"));
    }
    req.sites
        .iter()
        .enumerate()
        .map(|(i, s)| site_key(s).map_err(|e| ApiError::bad_request(format!("sites[{i}]: {e:#}"))))
        .collect()
}

async fn add_sites(
    State(state): State<Shared>,
    JsonBody(req): JsonBody<SitesRequest>,
) -> Result<Json<Value>, ApiError> {
    let keys = site_keys(&req)?;
    let clock = state.clock.clone();
    let result = durable(&state, move |store| {
        let (mut added, mut known) = (Vec::new(), Vec::new());
        for key in keys {
            if store.add_site(&key, clock.now())? {
                added.push(key);
            } else {
                known.push(key);
            }
        }
        Ok(json!({ "added": added, "known": known }))
    })
    .await?;
    state.wake.notify_one();
    Ok(Json(result))
}

async fn remove_sites(
    State(state): State<Shared>,
    JsonBody(req): JsonBody<SitesRequest>,
) -> Result<Json<Value>, ApiError> {
    let keys = site_keys(&req)?;
    durable(&state, move |store| {
        let (mut removed, mut unknown, mut retired) = (Vec::new(), Vec::new(), 0u64);
        for key in keys {
            if store.remove_site(&key)? {
                // Its URLs leave the queue (records kept), unless another
                // site followed is on the same host.
                let host = host_key(&key);
                let shared = store
                    .sites()
                    .filter_map(Result::ok)
                    .any(|other| host_key(&other.site) == host);
                if let (Some(host), false) = (&host, shared) {
                    retired += store.retire_host(host)?;
                }
                removed.push(key);
            } else {
                unknown.push(key);
            }
        }
        Ok(Json(
            json!({ "removed": removed, "unknown": unknown, "retired_urls": retired }),
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
struct UrlQuery {
    url: String,
}

async fn url_record(
    State(state): State<Shared>,
    JsonQuery(q): JsonQuery<UrlQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = sitemapd_parser::NormUrl::parse(&q.url)
        .map_err(|e| ApiError::bad_request(format!("{:?} is not an http(s) URL: {e}", q.url)))?
        .into_string();
    blocking(&state, move |store| match store.url(&url)? {
        Some(record) => {
            // The sitemaps listing it, by URL (the record keeps internal ids).
            let mut record = json!(record);
            record["sitemaps"] = json!(store.url_sitemaps(&url)?);
            Ok(answer(json!({ "url": url, "record": record })))
        }
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("{url} is not in the store"),
        )),
    })
    .await
}

#[derive(Debug, Deserialize)]
struct SiteQuery {
    site: String,
    /// A page of the site's sitemaps, flat, in URL order (each names its
    /// `parent`), instead of the tree.
    limit: Option<usize>,
    after: Option<String>,
}

/// One sitemap of the tree (a cut read has a 2xx status and no error to
/// show for it: `last_read_complete` says so).
#[derive(Serialize)]
struct SitemapNode {
    #[serde(flatten)]
    sitemap: SitemapView,
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh: Option<sitemapd_scheduler::RefreshView>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    children: Vec<SitemapNode>,
}

/// Deepest nesting shown (the walk follows 3 by default).
const MAX_TREE_DEPTH: usize = 8;

async fn sitemaps(
    State(state): State<Shared>,
    JsonQuery(q): JsonQuery<SiteQuery>,
) -> Result<Json<Value>, ApiError> {
    let site = site_key(&q.site).map_err(|e| ApiError::bad_request(format!("{e:#}")))?;
    blocking(&state, move |store| {
        let host = host_key(&site);
        // The site's sitemaps: those its robots.txt (or an index it
        // vouched for) authorised, and those on its host.
        let mut records = BTreeMap::new();
        for item in store.sitemaps() {
            let sitemap = item?;
            if sitemap.authorised_by.as_deref() == Some(site.as_str())
                || (host.is_some() && host_key(&sitemap.url) == host)
            {
                records.insert(sitemap.url.clone(), sitemap);
            }
        }
        if records.is_empty() && store.site(&site)?.is_none() {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "{site} is not a site this daemon follows: `GET /v1/sites` lists them, \
                     `POST /v1/sites` adds one"
                ),
            ));
        }
        if q.limit.is_some() || q.after.is_some() {
            let page_query = PageQuery {
                limit: q.limit,
                ..PageQuery::default()
            };
            let limit = page_query.limit()?;
            let rest = records
                .into_values()
                .filter(|r| q.after.as_ref().is_none_or(|a| r.url > *a))
                .map(|sitemap| {
                    Ok(SitemapNode {
                        refresh: store.refresh_state(&sitemap.url).ok().flatten(),
                        sitemap,
                        children: Vec::new(),
                    })
                });
            let (nodes, next) = page(rest, limit, |n| n.sitemap.url.clone())?;
            return Ok(answer(
                json!({ "site": site, "sitemaps": nodes, "next": next }),
            ));
        }
        if records.len() > MAX_PAGE {
            return Err(ApiError::bad_request(format!(
                "{site} has {} sitemaps, more than one answer holds ({MAX_PAGE}): ask for them \
                 in pages (limit, after)",
                records.len()
            )));
        }
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        let mut roots = Vec::new();
        for (url, record) in &records {
            match record
                .parent
                .as_ref()
                .filter(|p| records.contains_key(*p) && *p != url)
            {
                Some(parent) => children
                    .entry(parent.clone())
                    .or_default()
                    .push(url.clone()),
                None => roots.push(url.clone()),
            }
        }
        let mut placed = HashSet::new();
        let tree = roots
            .into_iter()
            .filter_map(|url| node(store, &url, &records, &children, &mut placed, 0))
            .collect::<Vec<_>>();
        Ok(answer(json!({ "site": site, "sitemaps": tree })))
    })
    .await
}

/// The node of `url` and its children, each placed once, at most
/// [`MAX_TREE_DEPTH`] deep.
fn node(
    store: &Store,
    url: &str,
    records: &BTreeMap<String, SitemapView>,
    children: &HashMap<String, Vec<String>>,
    placed: &mut HashSet<String>,
    depth: usize,
) -> Option<SitemapNode> {
    if depth > MAX_TREE_DEPTH || !placed.insert(url.to_string()) {
        return None;
    }
    let sitemap = records.get(url)?.clone();
    let kids = children
        .get(url)
        .map(|list| {
            list.iter()
                .filter_map(|c| node(store, c, records, children, placed, depth + 1))
                .collect()
        })
        .unwrap_or_default();
    Some(SitemapNode {
        refresh: store.refresh_state(url).ok().flatten(),
        sitemap,
        children: kids,
    })
}

async fn stats(
    State(state): State<Shared>,
    JsonQuery(q): JsonQuery<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit()?;
    let clock = state.clock.clone();
    blocking(&state, move |store| {
        let mut stats = store.stats(clock.now())?;
        let sites = store.sites().count();
        // Per host only on request, a page at a time: a store of many
        // hosts would answer megabytes.
        let all_hosts = std::mem::take(&mut stats.hosts);
        // One record per host that pushed (one that does not decode is
        // named by `stats --check`).
        let mut pushes = sitemapd_scheduler::PushTotals::default();
        for p in store.pushes().filter_map(Result::ok) {
            pushes.add(&p);
        }
        let mut body = json!({
            "policy": store.policy().name(),
            "sites": sites,
            "hosts": all_hosts.len(),
            "stats": stats,
            "pushes": pushes,
        });
        if let Some(fields) = body["stats"].as_object_mut() {
            fields.remove("hosts");
        }
        if q.hosts == Some(true) {
            let after = q.after.clone().unwrap_or_default();
            let rest = all_hosts
                .into_iter()
                .filter(|(name, _)| q.after.is_none() || *name > after)
                .map(Ok);
            let (hosts, next) = page(rest, limit, |(name, _)| name.clone())?;
            let hosts: serde_json::Map<String, Value> = hosts
                .into_iter()
                .map(|(name, h)| (name, json!(h)))
                .collect();
            body["stats"]["hosts"] = Value::Object(hosts);
            body["next"] = json!(next);
        }
        Ok(answer(body))
    })
    .await
}

async fn metrics(State(state): State<Shared>) -> Result<Response, ApiError> {
    let metrics = state.metrics.clone();
    if let Some(peers) = &state.cluster {
        metrics.cluster(&peers.view.borrow());
    }
    let clock = state.clock.clone();
    let text = blocking(&state, move |store| {
        metrics
            .queue_depth
            .set(store.queue_depth(clock.now())? as i64);
        metrics.sites.set(store.sites().count() as i64);
        let unreadable = store.health().unreadable_records;
        metrics
            .unreadable_records
            .set(i64::try_from(unreadable).unwrap_or(i64::MAX));
        Ok(metrics.encode())
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/readyz` says 503 when the store's calls find no thread to run on
    /// (the blocking pool taken), and 200 once one is free.
    #[test]
    fn readyz_is_503_while_the_blocking_pool_is_taken() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(ApiState {
            store: Arc::new(Store::in_memory(sitemapd_scheduler::StoreOptions::default()).unwrap()),
            clock: Arc::new(sitemapd_scheduler::SystemClock),
            metrics: Arc::new(Metrics::new()),
            token: None,
            wake: Arc::new(Notify::new()),
            stopping: Arc::new(AtomicBool::new(false)),
            lease_ttl: 60,
            per_host: 10,
            max_lease: 100,
            body_timeout: std::time::Duration::from_secs(5),
            cluster: None,
        });
        runtime.block_on(async {
            let (release, held) = std::sync::mpsc::channel::<()>();
            let taken = tokio::task::spawn_blocking(move || held.recv());
            let answer = readyz(State(state.clone())).await;
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
            release.send(()).unwrap();
            taken.await.unwrap().unwrap();
            let answer = readyz(State(state)).await;
            assert_eq!(answer.status(), StatusCode::OK);
        });
    }
}
