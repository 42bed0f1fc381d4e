//! A minimal HTTP/1.1 client for tests and benches that talk to a loopback
//! server (the daemon's API, say): one request per connection
//! (`Connection: close`), the whole response read, chunked bodies decoded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response: status and (de-chunked) body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// The head's fields, as sent.
    pub headers: Vec<(String, String)>,
}

impl Response {
    /// The value of the first field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one request to `addr` (with `Authorization: Bearer` when `token`
/// is given, and a JSON body when `body` is) and reads the whole response.
/// Errors are described in the message (connect, write, read, framing).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Result<Response, String> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("connect: {e}"))?;
    conn.set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body.unwrap_or_default());
    conn.write_all(&out).map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    parse_response(&raw)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let end = find(raw, b"\r\n\r\n").ok_or_else(|| {
        format!(
            "no complete response head in {} bytes: {:?}",
            raw.len(),
            String::from_utf8_lossy(&raw[..raw.len().min(200)])
        )
    })?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let (mut length, mut chunked) = (None, false);
    let mut headers = Vec::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim();
            headers.push((name.to_string(), value.trim().to_string()));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            }
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        if rest.len() < n {
            return Err(format!("body cut at {} of {n} bytes", rest.len()));
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response {
        status,
        body,
        headers,
    })
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let i = find(b, b"\r\n").ok_or("chunk size line missing")?;
        let line = String::from_utf8_lossy(&b[..i]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {line:?}"))?;
        b = &b[i + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err("chunked body cut".into());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Length, Reply, TestSite};

    #[test]
    fn reads_plain_and_chunked_bodies() {
        let site = TestSite::start();
        site.route("/a", Reply::ok("hello"));
        site.route("/c", Reply::ok("chunked body").length(Length::Chunked));
        let r = request(site.addr(), "GET", "/a", None, None).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "hello"));
        assert_eq!(r.header("Content-Length"), Some("5"));
        let r = request(site.addr(), "POST", "/c", Some("t"), Some(b"{}")).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "chunked body"));
        assert_eq!(site.requests()[1].header("authorization"), Some("Bearer t"));
        assert_eq!(
            request(site.addr(), "GET", "/none", None, None)
                .unwrap()
                .status,
            404
        );
    }
}
