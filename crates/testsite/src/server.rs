//! The hand-written HTTP/1.1 responder: one task per connection, keep-alive, no panics on
//! anything a client sends; an I/O error just ends the connection's task.

use std::io::{self, Write as _};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{Body, Length, Reply, Request, Shared};

/// The largest request head (request line, headers and blank line) read; larger gets 431.
const MAX_HEAD: usize = 64 * 1024;
/// Bodies up to this size go out in the same write as the head.
const SMALL_BODY: usize = 16 * 1024;
/// About how many bytes one write of a [`Body::Repeat`] carries.
const BATCH: usize = 64 * 1024;
/// How long a closing connection drains what the client still sends (see [`close`]).
const LINGER: Duration = Duration::from_secs(2);
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let shared = Arc::clone(&shared);
                // An error is the client going away, which is normal.
                tokio::spawn(async move { serve(stream, &shared).await });
            }
            // Out of descriptors and the like: retry a little later instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// What to do with the connection once a response is written.
enum After {
    KeepAlive,
    Close,
    Reset,
}

/// The request body framing, which decides whether the connection can carry another request.
enum RequestBody {
    Length(u64),
    /// `Transfer-Encoding` (chunked): not read, so the connection closes after the response.
    Unframed,
}

async fn serve(mut stream: TcpStream, shared: &Shared) {
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let mut buf = Vec::with_capacity(4096);
    loop {
        let end = match read_head(&mut stream, &mut buf).await {
            Ok(Some(end)) if end <= MAX_HEAD => end,
            Ok(Some(_)) => return reject(stream, 431).await,
            Ok(None) | Err(_) => return,
        };
        let Some((request, mut client_close, request_body)) = parse(&buf[..end]) else {
            return reject(stream, 400).await;
        };
        buf.drain(..end);
        match request_body {
            RequestBody::Length(n) => {
                // Ignore the body, but consume it to find the next request.
                let from_buf = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
                buf.drain(..from_buf);
                let rest = n - from_buf as u64;
                let mut body = (&mut stream).take(rest);
                match tokio::io::copy(&mut body, &mut tokio::io::sink()).await {
                    Ok(copied) if copied == rest => {}
                    _ => return,
                }
            }
            RequestBody::Unframed => client_close = true,
        }
        let head_only = request.method.eq_ignore_ascii_case("HEAD");
        let reply = shared.answer(&request);
        match respond(&mut stream, reply, head_only, client_close).await {
            Ok(After::KeepAlive) => {}
            Ok(After::Close) => return close(stream).await,
            Ok(After::Reset) => {
                // Dropping a socket with SO_LINGER 0 sends RST instead of FIN.
                let _ = stream.set_zero_linger();
                return;
            }
            Err(_) => return,
        }
    }
}

/// Reads until `buf` holds a complete request head and returns its length (which may exceed
/// [`MAX_HEAD`]: the caller rejects it); `None` at end of stream.
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let mut from = 0;
    loop {
        // Empty lines before a request line are ignored (RFC 9112, 2.2).
        let blank = buf
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        buf.drain(..blank);
        if let Some(end) = head_end(buf, from) {
            return Ok(Some(end));
        }
        if buf.len() > MAX_HEAD {
            return Ok(Some(buf.len()));
        }
        // A terminator completed by new bytes starts at most 2 bytes before them.
        from = buf.len().saturating_sub(2);
        buf.reserve(4096);
        if stream.read_buf(buf).await? == 0 {
            return Ok(None);
        }
    }
}

/// The end of the first `\n\r\n` or `\n\n` whose newline is at or after `from`.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(p) = buf.get(i..)?.iter().position(|&b| b == b'\n') {
        let nl = i + p;
        let rest = &buf[nl + 1..];
        if rest.starts_with(b"\n") {
            return Some(nl + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(nl + 3);
        }
        i = nl + 1;
    }
    None
}

/// Parses a request head; `None` if malformed. Also says whether the client asked to close.
fn parse(head: &[u8]) -> Option<(Request, bool, RequestBody)> {
    let at = Instant::now();
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut parts = lines.next()?.split_ascii_whitespace();
    let (method, path, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut headers = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let request = Request {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        at,
    };
    let connection = request.header("connection").unwrap_or("");
    let close = has_token(connection, "close")
        || (version == "HTTP/1.0" && !has_token(connection, "keep-alive"));
    let body = if request.header("transfer-encoding").is_some() {
        RequestBody::Unframed
    } else {
        match request.header("content-length") {
            Some(v) => RequestBody::Length(v.parse().ok()?),
            None => RequestBody::Length(0),
        }
    };
    Some((request, close, body))
}

fn has_token(list: &str, token: &str) -> bool {
    list.split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Writes `reply` and says what becomes of the connection.
async fn respond(
    stream: &mut TcpStream,
    reply: Reply,
    head_only: bool,
    client_close: bool,
) -> io::Result<After> {
    let Reply {
        status,
        headers,
        body,
        length,
    } = reply;
    let chunked = length == Length::Chunked;
    let raw = length == Length::Raw;
    let (content_length, mut close) = match length {
        Length::Exact => match body_len(&body) {
            Some(n) => (Some(n), false),
            None => (None, true),
        },
        Length::Chunked => (None, false),
        Length::Lie(n) => (Some(n), true),
        Length::None | Length::Raw => (None, true),
    };
    let own_connection = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("connection"));
    close |= client_close || own_connection.is_some_and(|(_, v)| has_token(v, "close"));

    let mut head = Vec::with_capacity(256);
    if !raw {
        let _ = write!(head, "HTTP/1.1 {status} {}\r\n", reason(status));
        for (name, value) in &headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        if let Some(n) = content_length {
            let _ = write!(head, "content-length: {n}\r\n");
        }
        if chunked {
            head.extend_from_slice(b"transfer-encoding: chunked\r\n");
        }
        if close && own_connection.is_none() {
            head.extend_from_slice(b"connection: close\r\n");
        }
        head.extend_from_slice(b"\r\n");
    }

    let after = match (resets(&body), close) {
        (true, _) => After::Reset,
        (false, true) => After::Close,
        (false, false) => After::KeepAlive,
    };
    if head_only && !raw {
        stream.write_all(&head).await?;
        return Ok(after);
    }
    match body {
        Body::Bytes(b) if chunked => {
            head.extend_from_slice(&frame(&b, true));
            head.extend_from_slice(LAST_CHUNK);
            stream.write_all(&head).await?;
        }
        Body::Bytes(b) if b.len() <= SMALL_BODY => {
            head.extend_from_slice(&b);
            stream.write_all(&head).await?;
        }
        Body::ResetAfter(b) => {
            head.extend_from_slice(&frame(&b, chunked));
            stream.write_all(&head).await?;
        }
        body => {
            stream.write_all(&head).await?;
            let mut parts = Vec::new();
            flatten(body, &mut parts);
            for part in parts {
                if !write_part(stream, part, chunked).await? {
                    // A reset: nothing may follow.
                    return Ok(after);
                }
            }
            if chunked {
                stream.write_all(LAST_CHUNK).await?;
            }
        }
    }
    Ok(after)
}

/// The parts of a body in order, nested [`Body::Chain`]s flattened.
fn flatten(body: Body, out: &mut Vec<Body>) {
    match body {
        Body::Chain(parts) => {
            for part in parts {
                flatten(part, out);
            }
        }
        other => out.push(other),
    }
}

/// Whether the connection is reset after this body.
fn resets(body: &Body) -> bool {
    match body {
        Body::ResetAfter(_) => true,
        Body::Chain(parts) => parts.iter().any(resets),
        _ => false,
    }
}

/// Writes one part of a body (a whole body that is not a chain, or one part of a flattened
/// chain); `false` after a [`Body::ResetAfter`]: nothing may follow it. A part without an
/// end only returns with the write error that ends it.
async fn write_part(stream: &mut TcpStream, part: Body, chunked: bool) -> io::Result<bool> {
    match part {
        Body::Bytes(b) => {
            stream.write_all(&frame(&b, chunked)).await?;
        }
        Body::ResetAfter(b) => {
            stream.write_all(&frame(&b, chunked)).await?;
            return Ok(false);
        }
        Body::Drip {
            chunk,
            every,
            count,
        } => {
            let piece = frame(&chunk, chunked);
            if piece.is_empty() && count.is_none() {
                // Nothing to send, ever: stall until the client goes away or the site stops.
                std::future::pending::<()>().await;
            }
            let mut sent = 0u64;
            while count.is_none_or(|c| sent < c) {
                if sent > 0 {
                    tokio::time::sleep(every).await;
                }
                stream.write_all(&piece).await?;
                sent += 1;
            }
        }
        Body::Repeat { chunk, count } => {
            let piece = frame(&chunk, chunked);
            if !piece.is_empty() {
                let per = (BATCH / piece.len()).max(1);
                let batch = piece.repeat(per);
                let mut left = count;
                loop {
                    let k = match left {
                        Some(0) => break,
                        Some(c) => c.min(per as u64) as usize,
                        None => per,
                    };
                    stream.write_all(&batch[..k * piece.len()]).await?;
                    if let Some(c) = &mut left {
                        *c -= k as u64;
                    }
                }
            }
        }
        // Flattened by the caller.
        Body::Chain(_) => {}
    }
    Ok(true)
}

/// The real length of a body, `None` if it has no end.
fn body_len(body: &Body) -> Option<u64> {
    match body {
        Body::Bytes(b) => Some(b.len() as u64),
        Body::Drip { chunk, count, .. } | Body::Repeat { chunk, count } => match count {
            Some(n) => Some((chunk.len() as u64).saturating_mul(*n)),
            None if chunk.is_empty() && matches!(body, Body::Repeat { .. }) => Some(0),
            None => None,
        },
        // One byte more than is sent: the reset always comes mid-body.
        Body::ResetAfter(b) => Some(b.len() as u64 + 1),
        // The parts up to a reset (nothing after one is sent).
        Body::Chain(parts) => {
            let mut sum = 0u64;
            for part in parts {
                sum = sum.saturating_add(body_len(part)?);
                if resets(part) {
                    break;
                }
            }
            Some(sum)
        }
    }
}

/// `data` as it goes on the wire: a chunk of chunked encoding (nothing if empty, as a
/// zero-size chunk would end the body), or as is.
fn frame(data: &Bytes, chunked: bool) -> Bytes {
    if !chunked {
        return data.clone();
    }
    if data.is_empty() {
        return Bytes::new();
    }
    let mut out = Vec::with_capacity(data.len() + 20);
    let _ = write!(out, "{:x}\r\n", data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out.into()
}

/// Answers a request that cannot be served (400, 431) and closes.
async fn reject(mut stream: TcpStream, status: u16) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        reason(status)
    );
    if stream.write_all(head.as_bytes()).await.is_ok() {
        close(stream).await;
    }
}

/// Closes gracefully: FIN, then drain what the client still sends for a while, since closing
/// a socket with unread input sends RST, which can destroy the response still in flight.
async fn close(mut stream: TcpStream) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        413 => "Content Too Large",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_end_finds_crlf_and_lf_terminators() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nrest", 0), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\nA: b\n\nrest", 0), Some(21));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n", 0), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\n", 14), Some(18));
        assert_eq!(head_end(b"", 5), None);
    }

    #[test]
    fn parse_rejects_malformed_heads() {
        assert!(parse(b"GET /\r\n\r\n").is_none());
        assert!(parse(b"GET / HTTP/2\r\n\r\n").is_none());
        assert!(parse(b"GET / HTTP/1.1\r\nno colon\r\n\r\n").is_none());
        assert!(parse(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n").is_none());
        let (req, close, _) = parse(b"GET /a?b HTTP/1.0\r\nX-Y:  z \r\n\r\n").unwrap();
        assert_eq!((req.path.as_str(), req.header("x-y")), ("/a?b", Some("z")));
        assert!(close, "HTTP/1.0 closes by default");
    }

    #[test]
    fn chunk_framing() {
        assert_eq!(&frame(&Bytes::from_static(&[7; 26]), true)[..4], b"1a\r\n");
        assert!(frame(&Bytes::new(), true).is_empty());
        assert_eq!(reason(418), "Status");
    }
}
