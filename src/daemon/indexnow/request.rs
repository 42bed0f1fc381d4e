//! An IndexNow request read and checked against the protocol: the single
//! URL form (`GET /indexnow?url=…&key=…[&keyLocation=…]`) and the many URL
//! form (`POST /indexnow`, a JSON body `{host, key, keyLocation, urlList}`).
//! What does not hold is an [`Answer`] with the protocol's status: 400 for
//! a request that is not one, 422 for a key outside the schema or a URL the
//! key cannot vouch for (another host, outside the key file's folder).

use axum::http::StatusCode;
use serde::Deserialize;
use sitemapd_parser::{HostKey, NormUrl};

use super::Answer;

/// URLs one request may name at most (the protocol's limit).
pub(super) const MAX_URLS: usize = 10_000;

/// A request's push, checked: every URL on `host` and under the folder of
/// the key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Push {
    /// The host the URLs are on (`host[:port]`, as the store keys hosts).
    pub host: HostKey,
    /// The key the key file must hold.
    pub key: String,
    /// Where the key file is: the request's `keyLocation`, else `KEY.txt`
    /// at the root of the URLs' origin.
    pub location: NormUrl,
    /// The URLs, normalised, in the order given.
    pub urls: Vec<String>,
}

/// The single URL form's query.
#[derive(Debug, Deserialize)]
pub(super) struct Query {
    url: Option<String>,
    key: Option<String>,
    #[serde(rename = "keyLocation")]
    key_location: Option<String>,
}

/// The many URL form's body (unknown fields are left alone: engines'
/// clients send extras).
#[derive(Debug, Deserialize)]
struct Body {
    host: Option<String>,
    key: Option<String>,
    #[serde(rename = "keyLocation")]
    key_location: Option<String>,
    #[serde(rename = "urlList", default, deserialize_with = "bounded_list")]
    url_list: Option<Vec<String>>,
}

/// `urlList`, refused as soon as it has more than [`MAX_URLS`] items: a
/// body of many tiny items would otherwise become far more memory than its
/// bytes before it is counted.
fn bounded_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    struct Bounded;
    impl<'de> serde::de::Visitor<'de> for Bounded {
        type Value = Option<Vec<String>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a list of at most {MAX_URLS} URLs")
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut list = Vec::new();
            while let Some(url) = seq.next_element::<String>()? {
                if list.len() == MAX_URLS {
                    return Err(serde::de::Error::custom(format!(
                        "urlList has more than {MAX_URLS} URLs: at most {MAX_URLS} per request"
                    )));
                }
                list.push(url);
            }
            Ok(Some(list))
        }
    }
    d.deserialize_any(Bounded)
}

fn bad(message: impl Into<String>) -> Answer {
    Answer::new(StatusCode::BAD_REQUEST, message)
}

fn unprocessable(message: impl Into<String>) -> Answer {
    Answer::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// The start of `s` for a message: at most 100 characters.
fn shown(s: &str) -> String {
    s.chars().take(100).collect()
}

impl Query {
    /// The push of a `GET /indexnow`.
    pub(super) fn push(self) -> Result<Push, Answer> {
        let url = self
            .url
            .ok_or_else(|| bad("the url parameter is missing"))?;
        let key = self
            .key
            .ok_or_else(|| bad("the key parameter is missing"))?;
        let url = parse_url(&url, "url")?;
        let host = url.host_key();
        Push::checked(host, key, self.key_location, vec![url])
    }
}

/// The push of a `POST /indexnow` body.
pub(super) fn body_push(bytes: &[u8]) -> Result<Push, Answer> {
    let body: Body = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("the body is not an IndexNow JSON object: {e}")))?;
    let host = body.host.ok_or_else(|| bad("host is missing"))?;
    let key = body.key.ok_or_else(|| bad("key is missing"))?;
    let list = body.url_list.ok_or_else(|| bad("urlList is missing"))?;
    if list.is_empty() {
        return Err(bad("urlList is empty"));
    }
    let host = crate::settings::host_key(&host)
        .ok_or_else(|| bad(format!("host {:?} is not a host name", shown(&host))))?;
    let urls = list
        .iter()
        .enumerate()
        .map(|(i, u)| parse_url(u, &format!("urlList[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Push::checked(host, key, body.key_location, urls)
}

/// An absolute http(s) URL, normalised; else 400.
fn parse_url(url: &str, field: &str) -> Result<NormUrl, Answer> {
    NormUrl::parse_limited(url.trim()).map_err(|e| {
        bad(format!(
            "{field}: {:?} is not an http(s) URL: {e}",
            shown(url)
        ))
    })
}

/// Whether `path` could name another folder than it reads as: a `.` or
/// `..` segment once percent-decoded (as often as it decodes: servers that
/// decode twice exist) and cut at a `;` parameter (which some servers drop),
/// an encoded slash or a backslash.
fn escapes_its_folder(path: &str) -> bool {
    let mut decoded = path.to_string();
    for _ in 0..4 {
        let next = percent_decode(&decoded);
        if next == decoded {
            break;
        }
        decoded = next;
    }
    decoded.contains('\\')
        || decoded.split('/').count() != path.split('/').count()
        || decoded
            .split('/')
            .map(|segment| segment.split(';').next().unwrap_or(""))
            .any(|segment| segment == "." || segment == "..")
}

/// `s` with its `%XX` escapes decoded (as Latin-1 bytes: only `.`, `/`,
/// `\`, `;` and `%` matter here).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push(char::from((hi * 16 + lo) as u8));
                i += 3;
            }
            (b, _, _) => {
                out.push(char::from(b));
                i += 1;
            }
        }
    }
    out
}

/// Whether `key` is a key as the protocol defines them: 8 to 128 of
/// `a-z A-Z 0-9 -`.
pub(super) fn valid_key(key: &str) -> bool {
    (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The folder a key file vouches for: its path up to the last `/`.
fn folder(location: &NormUrl) -> &str {
    let path = location.path();
    &path[..path.rfind('/').map_or(0, |i| i + 1)]
}

impl Push {
    /// The push, once the key, the key file's location and every URL hold.
    fn checked(
        host: HostKey,
        key: String,
        location: Option<String>,
        urls: Vec<NormUrl>,
    ) -> Result<Push, Answer> {
        if !valid_key(&key) {
            return Err(unprocessable(format!(
                "the key {:?} is not 8 to 128 characters of a-z, A-Z, 0-9 and -",
                shown(&key)
            )));
        }
        let location = match location {
            Some(given) => {
                let at = NormUrl::parse_limited(given.trim()).map_err(|e| {
                    bad(format!(
                        "keyLocation {:?} is not an http(s) URL: {e}",
                        shown(&given)
                    ))
                })?;
                if at.host_key() != host {
                    return Err(unprocessable(format!(
                        "keyLocation {} is not on {host}",
                        at.as_str()
                    )));
                }
                // A key file is a .txt file named by its path: the daemon
                // fetches nothing else for a push.
                let path = at.path_and_query();
                if !path.ends_with(".txt") || path.contains(['?', ';']) || escapes_its_folder(path)
                {
                    return Err(unprocessable(format!(
                        "keyLocation {} is not a key file: a .txt file, no query, no dot segment",
                        at.as_str()
                    )));
                }
                at
            }
            None => {
                let scheme = urls.first().map_or("https", NormUrl::scheme);
                NormUrl::parse(&format!("{scheme}://{host}/{key}.txt"))
                    .map_err(|e| bad(format!("no key file URL for {host}: {e}")))?
            }
        };
        let folder = folder(&location);
        let mut norms = Vec::with_capacity(urls.len());
        for url in urls {
            if url.host_key() != host {
                return Err(unprocessable(format!(
                    "{} is not on {host}, the host of the request",
                    url.as_str()
                )));
            }
            if folder != "/" && (!url.path().starts_with(folder) || escapes_its_folder(url.path()))
            {
                return Err(unprocessable(format!(
                    "{} is outside {folder}, the folder of the key file {}",
                    url.as_str(),
                    location.as_str()
                )));
            }
            norms.push(url.into_string());
        }
        Ok(Push {
            host,
            key,
            location,
            urls: norms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef";

    fn post(body: serde_json::Value) -> Result<Push, Answer> {
        body_push(body.to_string().as_bytes())
    }

    fn status(r: Result<Push, Answer>) -> u16 {
        r.map_or_else(|a| a.status.as_u16(), |_| 200)
    }

    #[test]
    fn the_many_url_form_is_read_and_its_urls_normalised() {
        let push = post(serde_json::json!({
            "host": "www.example.org",
            "key": KEY,
            "urlList": ["https://www.example.org/a", "HTTPS://WWW.example.org:443/b?x"],
            "extra": 1,
        }))
        .unwrap();
        assert_eq!(push.host.as_str(), "www.example.org");
        assert_eq!(
            push.location.as_str(),
            format!("https://www.example.org/{KEY}.txt")
        );
        assert_eq!(
            push.urls,
            ["https://www.example.org/a", "https://www.example.org/b?x"]
        );
    }

    #[test]
    fn each_rule_has_its_status() {
        let base = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v = serde_json::json!({
                "host": "a.example:8080",
                "key": KEY,
                "keyLocation": "http://a.example:8080/keys/k.txt",
                "urlList": ["http://a.example:8080/keys/page"],
            });
            f(&mut v);
            status(post(v))
        };
        assert_eq!(base(&|_| {}), 200);
        assert_eq!(status(body_push(b"not json")), 400);
        assert_eq!(base(&|v| v["urlList"] = serde_json::json!([])), 400);
        assert_eq!(
            base(&|v| v["urlList"] = serde_json::json!(["ftp://x/"])),
            400
        );
        assert_eq!(base(&|v| v["host"] = serde_json::json!("a example")), 400);
        assert_eq!(base(&|v| v["host"] = serde_json::json!("a.example/x")), 400);
        assert_eq!(
            base(&|v| {
                v.as_object_mut().unwrap().remove("key");
            }),
            400
        );
        let many: Vec<String> = (0..=MAX_URLS)
            .map(|i| format!("http://a.example:8080/keys/{i}"))
            .collect();
        assert_eq!(base(&|v| v["urlList"] = serde_json::json!(many)), 400);
        // Counted as it is read: a body of tiny items stops at the cap.
        let tiny = format!(
            "{{\"host\":\"a.example\",\"key\":\"{KEY}\",\"urlList\":[{}\"a\"]}}",
            "\"a\",".repeat(500_000)
        );
        let e = body_push(tiny.as_bytes()).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.body.to_string().contains("more than 10000"), "{}", e.body);
        // An IDN host is its punycode.
        let idn = post(serde_json::json!({
            "host": "bücher.example",
            "key": KEY,
            "urlList": ["https://xn--bcher-kva.example/a"],
        }))
        .unwrap();
        assert_eq!(idn.host.as_str(), "xn--bcher-kva.example");
        // The key's schema, the host, the folder: 422.
        assert_eq!(base(&|v| v["key"] = serde_json::json!("short")), 422);
        assert_eq!(
            base(&|v| v["key"] = serde_json::json!("0123456789_abcdef")),
            422
        );
        assert_eq!(
            base(&|v| v["key"] = serde_json::json!("a".repeat(129))),
            422
        );
        assert_eq!(
            base(&|v| v["urlList"] = serde_json::json!(["http://b.example:8080/keys/x"])),
            422
        );
        assert_eq!(
            base(&|v| v["urlList"] = serde_json::json!(["http://a.example/keys/x"])),
            422,
            "another port is another host"
        );
        assert_eq!(
            base(&|v| v["urlList"] = serde_json::json!(["http://a.example:8080/other/x"])),
            422
        );
        assert_eq!(
            base(&|v| v["keyLocation"] = serde_json::json!("http://b.example/k.txt")),
            422
        );
        // The folder cannot be left through dot segments, encoded or not.
        for escape in [
            "/keys/../admin",
            "/keys/%2e%2e/admin",
            "/keys/%2E./admin",
            "/keys/..%2fadmin",
            "/keys/.%2E/admin",
            "/keys/x%5c..%5cadmin",
            "/keys/..;/admin",
            "/keys/%2e%2e;x/admin",
            "/keys/%252e%252e/admin",
            "/keys/x%252fadmin",
        ] {
            let url = format!("http://a.example:8080{escape}");
            assert_eq!(
                base(&|v| v["urlList"] = serde_json::json!([url])),
                422,
                "{escape}"
            );
        }
        // A key file is a .txt file, with no query and no dot segment.
        for location in [
            "/keys/k.html",
            "/keys/k.txt?x=1",
            "/keys/../k.txt",
            "/admin?k.txt",
            "/admin;x.txt",
        ] {
            let at = format!("http://a.example:8080{location}");
            assert_eq!(
                base(&|v| v["keyLocation"] = serde_json::json!(at)),
                422,
                "{location}"
            );
        }
    }

    #[test]
    fn the_single_url_form_takes_its_host_from_the_url() {
        let q = |url: Option<&str>, key: Option<&str>| Query {
            url: url.map(Into::into),
            key: key.map(Into::into),
            key_location: None,
        };
        let push = q(Some("https://a.example/x"), Some(KEY)).push().unwrap();
        assert_eq!(push.host.as_str(), "a.example");
        assert_eq!(push.urls, ["https://a.example/x"]);
        assert_eq!(
            push.location.as_str(),
            format!("https://a.example/{KEY}.txt")
        );
        // An http site's key file is on its own origin.
        let push = q(Some("http://a.example/x"), Some(KEY)).push().unwrap();
        assert_eq!(
            push.location.as_str(),
            format!("http://a.example/{KEY}.txt")
        );
        assert_eq!(status(q(None, Some(KEY)).push()), 400);
        assert_eq!(status(q(Some("https://a.example/x"), None).push()), 400);
        assert_eq!(
            status(q(Some("https://a.example/x"), Some("bad key!")).push()),
            422
        );
    }
}
