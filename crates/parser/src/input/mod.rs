//! From raw bytes to decoded UTF-8 text with positions: gzip layers (C2), the
//! byte limit (C3), the encoding (C1), the position-tracking source.

pub(crate) mod encoding;
pub(crate) mod gzip;
pub(crate) mod limit;
pub(crate) mod source;

use std::io;

use crate::diagnostic::Rule;

/// A rule and a message for a read error: the byte limit (C3), an over-long
/// token (C3), or a broken stream such as corrupt or truncated gzip (C8).
pub(crate) fn describe_io_error(err: &io::Error) -> (Rule, String) {
    if let Some(l) = limit::limit_exceeded(err) {
        let message = format!("document exceeds {} bytes: the rest is ignored", l.limit);
        return (Rule::C3, message);
    }
    if let Some(t) = source::token_too_long(err) {
        let message = format!("a single token exceeds {} bytes: reading stopped", t.limit);
        return (Rule::C3, message);
    }
    let what = if gzip::gzip_error(err) {
        format!("corrupt or truncated gzip ({err})")
    } else if err.kind() == io::ErrorKind::UnexpectedEof {
        "input ends early".to_string()
    } else {
        format!("read error: {err}")
    };
    (Rule::C8, format!("{what}; reading stopped"))
}
