//! What a browser page can make the API do, when the daemon has no token
//! (the default on loopback): every route but `/healthz` goes through
//! [`guard`], after the token check.
//!
//! - `Host`, and the request target's authority when it has one (absolute
//!   form), must be an IP address, `localhost` (when the API listens on
//!   loopback), or a name of `api.allowed_hosts`, else 421: a DNS-rebinding
//!   page reaches the API under the attacker's own name, which it sends as
//!   `Host` (an IP address cannot be rebound).
//! - `Origin`, when present, must be one of `api.allowed_origins` (default
//!   none), else 403: browsers send it with every cross-origin request and
//!   every POST, so a page on another site is refused, whatever it sends.
//! - A request with a body must be `Content-Type: application/json`, else
//!   415: a page may send `text/plain`, form and multipart bodies to any
//!   site without a CORS preflight, but not JSON.
//!
//! The daemon sends no CORS headers, so a browser never lets another
//! site's page read an answer.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The names and origins the API answers to.
#[derive(Debug, Clone)]
pub(super) struct Access {
    /// `api.allowed_origins`, lower case.
    origins: Vec<String>,
    /// `api.allowed_hosts`: a name, and its port if one is given.
    hosts: Vec<(String, Option<u16>)>,
    /// Whether `localhost` is a name of the API (it listens on loopback, or
    /// on every address).
    localhost: bool,
}

impl Access {
    /// The access rules of an API listening on `listen`.
    pub(super) fn new(origins: &[String], hosts: &[String], listen: SocketAddr) -> Self {
        Self {
            origins: origins.iter().map(|o| o.to_ascii_lowercase()).collect(),
            hosts: hosts
                .iter()
                .filter_map(|h| split_host(h))
                .map(|(name, port)| (name.to_string(), port))
                .collect(),
            localhost: listen.ip().is_loopback() || listen.ip().is_unspecified(),
        }
    }

    /// Whether a `Host` (`host[:port]`) is a name of the API.
    fn host_allowed(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        if name.parse::<IpAddr>().is_ok() || (self.localhost && name == "localhost") {
            return true;
        }
        self.hosts
            .iter()
            .any(|(allowed, p)| *allowed == name && (p.is_none() || *p == port))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        self.origins.contains(&origin)
    }
}

/// `host[:port]` (`[v6]:port` for IPv6) as the lower-case name (without
/// brackets or a final dot) and the port.
fn split_host(host: &str) -> Option<(String, Option<u16>)> {
    let host = host.trim();
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        match after {
            "" => (v6, None),
            _ => (v6, Some(after.strip_prefix(':')?)),
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    (!name.is_empty()).then_some((name, port))
}

/// The `api.allowed_origins` and `api.allowed_hosts` settings checked at
/// start: an error names the key and the entry.
pub(super) fn check_settings(origins: &[String], hosts: &[String]) -> anyhow::Result<()> {
    if let Some(bad) = origins.iter().find(|o| !is_origin(o)) {
        anyhow::bail!(
            "api.allowed_origins: expected origins like https://host or http://host:port, not {bad:?}"
        );
    }
    if let Some(bad) = hosts.iter().find(|h| !is_host(h)) {
        anyhow::bail!("api.allowed_hosts: expected names like host or host:port, not {bad:?}");
    }
    Ok(())
}

/// Whether `value` is an origin `api.allowed_origins` can list:
/// `http(s)://host[:port]`, nothing after.
pub(super) fn is_origin(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@'])
        && !rest.contains(char::is_whitespace)
        && split_host(rest).is_some()
}

/// Whether `value` is a name `api.allowed_hosts` can list: `host` or
/// `host:port`.
pub(super) fn is_host(value: &str) -> bool {
    !value.contains(['/', '?', '#', '@']) && split_host(value).is_some()
}

fn refuse(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// Whether a request carries a body (a non-zero length, or chunked).
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0")
}

/// Whether the media type is `application/json` (parameters such as
/// `charset` allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The middleware: Host, then Origin, then the body's media type.
pub(super) async fn guard(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    // The request target's authority (absolute form, `POST http://name/…`)
    // is the name the request is for (RFC 9112 §3.2.2), whatever `Host`
    // says: both are checked. No name at all (HTTP/1.0) is no browser's.
    let names = [
        req.uri().authority().map(|a| a.to_string()),
        headers
            .get(header::HOST)
            .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned()),
    ];
    if let Some(host) = names
        .into_iter()
        .flatten()
        .find(|h| !access.host_allowed(h))
    {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host {host:?} is not a name of this API (a DNS-rebinding page sends its own): \
                 it answers to IP addresses, localhost when it listens on loopback, and the names \
                 in api.allowed_hosts"
            ),
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !access.origin_allowed(&origin) {
            return refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "requests from browser pages are refused (Origin: {origin}): \
                     api.allowed_origins lists the origins allowed (none by default)"
                ),
            );
        }
    }
    let writes = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if writes && has_body(headers) && !is_json(headers) {
        let given = headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "a request body must be JSON, sent with Content-Type: application/json ({})",
                match given {
                    Some(t) => format!("not {t}"),
                    None => "none was given".to_string(),
                }
            ),
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let listen: SocketAddr = "127.0.0.1:8710".parse().unwrap();
        let a = Access::new(
            &[],
            &["api.example".into(), "other.example:8443".into()],
            listen,
        );
        for ok in [
            "127.0.0.1:8710",
            "127.0.0.1",
            "[::1]:8710",
            "10.0.0.1:9000",
            "localhost:8710",
            "LocalHost.:8710",
            "localhost",
            "api.example",
            "api.example:1",
            "other.example:8443",
        ] {
            assert!(a.host_allowed(ok), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:8710",
            "other.example",
            "other.example:8444",
            "localhost.evil.example",
            "api.example.evil",
            "",
            "[::1",
            "api.example:port",
        ] {
            assert!(!a.host_allowed(refused), "{refused}");
        }
        let public = Access::new(&[], &[], "10.1.2.3:8710".parse().unwrap());
        assert!(!public.host_allowed("localhost:8710"));
        assert!(public.host_allowed("10.1.2.3:8710"));
    }

    #[test]
    fn origins() {
        assert!(is_origin("https://ui.example"));
        assert!(is_origin("http://127.0.0.1:3000"));
        assert!(is_origin("http://[::1]:3000"));
        for bad in [
            "ui.example",
            "https://ui.example/",
            "https://",
            "null",
            "ftp://x",
            "https://a@b",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
        let a = Access::new(
            &["https://UI.example".into()],
            &[],
            "127.0.0.1:1".parse().unwrap(),
        );
        assert!(a.origin_allowed("https://ui.example"));
        assert!(!a.origin_allowed("https://ui.example:443"));
        assert!(!a.origin_allowed("null"));
    }

    #[test]
    fn media_types() {
        let mut h = HeaderMap::new();
        assert!(!is_json(&h));
        h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(is_json(&h));
        h.insert(
            header::CONTENT_TYPE,
            "Application/JSON ; charset=utf-8".parse().unwrap(),
        );
        assert!(is_json(&h));
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(!is_json(&h));
        h.insert(
            header::CONTENT_TYPE,
            "application/json-seq".parse().unwrap(),
        );
        assert!(!is_json(&h));
    }
}
