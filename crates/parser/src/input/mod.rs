//! From raw bytes to decoded UTF-8 text with positions: gzip layers (C2), the
//! byte limit (C3), the encoding (C1), the position-tracking source.

pub mod encoding;
pub mod gzip;
pub mod limit;
pub mod source;
