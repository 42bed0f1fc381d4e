//! Dates as sitemaps and feeds write them: W3C Datetime for `<lastmod>` (SPEC
//! X7, all six levels, precision kept) and RFC 822/2822 for RSS `pubDate`
//! (SPEC F1). Both are parsed by hand because the common crates accept only
//! the strict forms, while real feeds need two-digit years, named zones and
//! missing seconds repaired (and flagged).

use std::fmt;

use serde::Serialize;

/// How precisely a date was written (SPEC X7 keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// `YYYY`
    Year,
    /// `YYYY-MM`
    Month,
    /// `YYYY-MM-DD`
    Day,
    /// `YYYY-MM-DDThh:mmTZD`
    Minute,
    /// `YYYY-MM-DDThh:mm:ssTZD`
    Second,
    /// `YYYY-MM-DDThh:mm:ss.sTZD`
    Fraction,
}

impl Precision {
    /// The name used in the JSON output (`"day"`, `"second"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Year => "year",
            Precision::Month => "month",
            Precision::Day => "day",
            Precision::Minute => "minute",
            Precision::Second => "second",
            Precision::Fraction => "fraction",
        }
    }
}

/// An instant in UTC with the precision it was given in. Its `Display` is
/// RFC 3339 in UTC, e.g. `2004-12-23T18:00:15Z` (fraction digits only for
/// `Fraction` precision, trailing zeros trimmed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lastmod {
    /// Seconds since 1970-01-01T00:00:00Z (the start of the period for coarse precisions).
    pub unix_seconds: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
    /// How precisely the source wrote it.
    pub precision: Precision,
}

impl fmt::Display for Lastmod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((text, len)) = self.w3c_bytes() {
            return f.write_str(std::str::from_utf8(&text[..len]).unwrap_or_default());
        }
        // Only a Lastmod built by hand: a parsed one is checked to be in 0001-9999.
        let days = self.unix_seconds.div_euclid(86_400);
        let secs = self.unix_seconds.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        if self.precision == Precision::Fraction && self.nanos > 0 {
            let digits = format!("{:09}", self.nanos);
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

/// Longest W3C form written: `YYYY-MM-DDThh:mm:ss.nnnnnnnnnZ`.
const W3C_MAX: usize = 30;

impl Lastmod {
    /// Writes the same text as `Display` (W3C Datetime in UTC) to `out`,
    /// without the formatting machinery: for writers of many entries.
    ///
    /// ```
    /// use sitemapd_parser::date::parse_w3c;
    /// let lastmod = parse_w3c("2024-05-06T07:08:09.5+02:00").unwrap().value;
    /// let mut out = Vec::new();
    /// lastmod.write_w3c(&mut out).unwrap();
    /// assert_eq!(out, b"2024-05-06T05:08:09.5Z");
    /// assert_eq!(lastmod.to_string().as_bytes(), out);
    /// ```
    pub fn write_w3c<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        match self.w3c_bytes() {
            Some((text, len)) => out.write_all(&text[..len]),
            None => write!(out, "{self}"),
        }
    }

    /// The W3C form, digits written directly, for the years 0000-9999.
    fn w3c_bytes(&self) -> Option<([u8; W3C_MAX], usize)> {
        let days = self.unix_seconds.div_euclid(86_400);
        let secs = self.unix_seconds.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        if !(0..=9999).contains(&y) || self.nanos >= 1_000_000_000 {
            return None;
        }
        let mut text = [0u8; W3C_MAX];
        text[..19].copy_from_slice(b"0000-00-00T00:00:00");
        let mut put = |at: usize, width: usize, mut value: u64| {
            for i in (at..at + width).rev() {
                text[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, y as u64);
        put(5, 2, u64::from(m));
        put(8, 2, u64::from(d));
        put(11, 2, (secs / 3600) as u64);
        put(14, 2, (secs / 60 % 60) as u64);
        put(17, 2, (secs % 60) as u64);
        let mut len = 19;
        if self.precision == Precision::Fraction && self.nanos > 0 {
            put(20, 9, u64::from(self.nanos));
            text[19] = b'.';
            len = 29;
            while text[len - 1] == b'0' {
                len -= 1;
            }
        }
        text[len] = b'Z';
        Some((text, len + 1))
    }
}

impl Lastmod {
    /// The last second of the period this lastmod names: `2024-05-01`
    /// (day precision) stands for the whole day, so its latest instant is
    /// 2024-05-01T23:59:59Z.
    pub fn latest(&self) -> i64 {
        self.unix_seconds
            .saturating_add(precision_span(self.unix_seconds, self.precision) - 1)
    }
}

/// Seconds covered by a date starting at `start` (unix seconds) written with
/// `precision`: 1 for second and fraction, 60 for minute, 86,400 for day,
/// the length of that calendar month or year (UTC) for month and year.
pub fn precision_span(start: i64, precision: Precision) -> i64 {
    const DAY: i64 = 86_400;
    match precision {
        Precision::Fraction | Precision::Second => 1,
        Precision::Minute => 60,
        Precision::Day => DAY,
        Precision::Month => {
            let (y, m, _) = civil_from_days(start.div_euclid(DAY));
            DAY * i64::from(days_in_month(y, m))
        }
        Precision::Year => {
            let (y, _, _) = civil_from_days(start.div_euclid(DAY));
            DAY * if is_leap(y) { 366 } else { 365 }
        }
    }
}

impl Serialize for Lastmod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A date that could be read, and what had to be repaired to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedDate {
    /// The instant.
    pub value: Lastmod,
    /// `Some(what)` when the text was not in the expected form but could be
    /// repaired (lenient mode keeps it and flags `what`; strict mode drops it).
    pub repair: Option<&'static str>,
}

/// Why a date could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DateError(pub &'static str);

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn digits(&mut self, n: usize) -> Option<u32> {
        let s = self.b.get(self.i..self.i + n)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(s.iter().fold(0, |acc, &c| acc * 10 + u32::from(c - b'0')))
    }
    fn done(&self) -> bool {
        self.i >= self.b.len()
    }
}

/// Parses a W3C Datetime (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `…Thh:mmTZD`,
/// `…Thh:mm:ssTZD`, `…Thh:mm:ss.sTZD`).
///
/// Repaired (and reported in [`ParsedDate::repair`]): no zone (taken as UTC),
/// `+0800` or `+08` zones, a space or lowercase `t` before the time, leap second 60.
/// A value in RFC 2822 form is read as such, also as a repair.
///
/// ```
/// use sitemapd_parser::date::{parse_w3c, Precision};
/// let d = parse_w3c("2004-12-23T18:00:15+01:00").unwrap();
/// assert_eq!(d.value.to_string(), "2004-12-23T17:00:15Z");
/// assert_eq!(d.value.precision, Precision::Second);
/// assert_eq!(parse_w3c("2005-01").unwrap().value.precision, Precision::Month);
/// ```
pub fn parse_w3c(input: &str) -> Result<ParsedDate, DateError> {
    match fixed_layout(input.as_bytes()) {
        Some(date) => Ok(date),
        None => parse_w3c_general(input),
    }
}

/// [`parse_w3c`] for every form.
fn parse_w3c_general(input: &str) -> Result<ParsedDate, DateError> {
    let s = input.trim();
    match parse_w3c_exact(s) {
        Ok(d) => Ok(d),
        Err(e) => match parse_rfc2822_exact(s) {
            Ok(d) => Ok(ParsedDate {
                value: d.value,
                repair: Some("RFC 2822 date where W3C Datetime was expected"),
            }),
            Err(_) => Err(e),
        },
    }
}

/// The layouts nearly every sitemap writes, read at fixed positions:
/// `YYYY-MM-DD`, and `YYYY-MM-DDThh:mm:ss` followed by `Z` or `±hh:mm`.
/// `None` for anything else, and for any value the general parser would
/// refuse or repair: it decides those, with its own message.
fn fixed_layout(b: &[u8]) -> Option<ParsedDate> {
    let digits = |from: usize, n: usize| {
        b[from..from + n].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (time, offset, precision) = match b.len() {
        10 => ((0, 0, 0), 0, Precision::Day),
        20 | 25 => {
            if b[10] != b'T' || b[13] != b':' || b[16] != b':' {
                return None;
            }
            let time = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
            let offset = match (b.len(), b[19]) {
                (20, b'Z') => 0,
                (25, sign @ (b'+' | b'-')) if b[22] == b':' => {
                    let (h, m) = (digits(20, 2)?, digits(23, 2)?);
                    if h > 23 || m > 59 {
                        return None;
                    }
                    let off = i64::from(h * 3600 + m * 60);
                    if sign == b'-' { -off } else { off }
                }
                _ => return None,
            };
            (time, offset, Precision::Second)
        }
        _ => return None,
    };
    let (hour, minute, second) = time;
    if second == 60 {
        return None;
    }
    let date = finish(
        i64::from(year),
        month,
        day,
        hour,
        minute,
        second,
        0,
        offset,
        precision,
        None,
    );
    date.ok()
}

fn parse_w3c_exact(s: &str) -> Result<ParsedDate, DateError> {
    let mut c = Cursor {
        b: s.as_bytes(),
        i: 0,
    };
    let mut repair = None;
    let year = c.digits(4).ok_or(DateError("expected a four-digit year"))? as i64;
    if c.done() {
        return finish(year, 1, 1, 0, 0, 0, 0, 0, Precision::Year, repair);
    }
    if !c.eat(b'-') {
        return Err(DateError("expected '-' after the year"));
    }
    let month = c.digits(2).ok_or(DateError("expected a two-digit month"))?;
    if c.done() {
        return finish(year, month, 1, 0, 0, 0, 0, 0, Precision::Month, repair);
    }
    if !c.eat(b'-') {
        return Err(DateError("expected '-' after the month"));
    }
    let day = c.digits(2).ok_or(DateError("expected a two-digit day"))?;
    if c.done() {
        return finish(year, month, day, 0, 0, 0, 0, 0, Precision::Day, repair);
    }
    match c.peek() {
        Some(b'T') => c.i += 1,
        Some(b't') => {
            c.i += 1;
            repair = Some("lowercase 't' before the time");
        }
        Some(b' ') => {
            c.i += 1;
            repair = Some("space instead of 'T' before the time");
        }
        _ => return Err(DateError("expected 'T' before the time")),
    }
    let hour = c.digits(2).ok_or(DateError("expected a two-digit hour"))?;
    if !c.eat(b':') {
        return Err(DateError("expected ':' after the hour"));
    }
    let minute = c.digits(2).ok_or(DateError("expected two-digit minutes"))?;
    let mut precision = Precision::Minute;
    let mut second = 0;
    let mut nanos = 0;
    if c.eat(b':') {
        second = c.digits(2).ok_or(DateError("expected two-digit seconds"))?;
        precision = Precision::Second;
        if c.eat(b'.') || c.eat(b',') {
            let start = c.i;
            while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                if c.i - start < 9 {
                    nanos = nanos * 10 + u32::from(c.b[c.i] - b'0');
                }
                c.i += 1;
            }
            let n = c.i - start;
            if n == 0 {
                return Err(DateError("expected digits after the decimal point"));
            }
            for _ in n..9 {
                nanos *= 10;
            }
            precision = Precision::Fraction;
        }
    }
    let offset = match c.peek() {
        None => {
            repair = Some("time without zone, taken as UTC");
            0
        }
        Some(b'Z') => {
            c.i += 1;
            0
        }
        Some(b'z') => {
            c.i += 1;
            repair = Some("lowercase 'z' zone");
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            c.i += 1;
            let h = c
                .digits(2)
                .ok_or(DateError("expected a two-digit zone hour"))?;
            let m = if c.eat(b':') {
                c.digits(2)
                    .ok_or(DateError("expected two-digit zone minutes"))?
            } else if let Some(m) = c.digits(2) {
                repair = Some("zone offset without ':'");
                m
            } else {
                repair = Some("zone offset without minutes");
                0
            };
            if h > 23 || m > 59 {
                return Err(DateError("zone offset out of range"));
            }
            let off = (h * 3600 + m * 60) as i64;
            if sign == b'-' { -off } else { off }
        }
        Some(_) => return Err(DateError("unexpected text after the time")),
    };
    if !c.done() {
        return Err(DateError("unexpected text after the zone"));
    }
    if second == 60 {
        second = 59;
        repair = Some("leap second 60 read as 59");
    }
    finish(
        year, month, day, hour, minute, second, nanos, offset, precision, repair,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    offset_seconds: i64,
    precision: Precision,
    repair: Option<&'static str>,
) -> Result<ParsedDate, DateError> {
    if !(1..=12).contains(&month) {
        return Err(DateError("month out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(DateError("day out of range"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(DateError("time out of range"));
    }
    let days = days_from_civil(year, month, day);
    let unix_seconds =
        days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_seconds;
    // In UTC the instant must still be writable as a four-digit year.
    if !(MIN_UNIX..=MAX_UNIX).contains(&unix_seconds) {
        return Err(DateError("outside the years 0001 to 9999 once in UTC"));
    }
    Ok(ParsedDate {
        value: Lastmod {
            unix_seconds,
            nanos,
            precision,
        },
        repair,
    })
}

/// 0001-01-01T00:00:00Z
const MIN_UNIX: i64 = -62_135_596_800;
/// 9999-12-31T23:59:59Z
const MAX_UNIX: i64 = 253_402_300_799;

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    // Far beyond any calendar date, but no overflow for any i64 input.
    let z = z.clamp(-(1 << 40), 1 << 40) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Parses an RFC 822/2822 date as RSS `pubDate` writes it
/// (`Sat, 07 Sep 2002 00:00:01 GMT`).
///
/// Repaired (and reported): two- and three-digit years (RFC 2822 section 4.3),
/// full month names, missing seconds are fine, missing or unknown zones (UTC),
/// `+hh:mm` zones. A W3C Datetime in a feed date field is read as such, also
/// as a repair.
///
/// ```
/// use sitemapd_parser::date::parse_rfc2822;
/// let d = parse_rfc2822("Sat, 07 Sep 2002 00:00:01 GMT").unwrap();
/// assert_eq!(d.value.to_string(), "2002-09-07T00:00:01Z");
/// let d = parse_rfc2822("Mon, 1 Jan 07 10:00 -0500").unwrap();
/// assert_eq!(d.value.to_string(), "2007-01-01T15:00:00Z");
/// assert!(d.repair.is_some());
/// ```
pub fn parse_rfc2822(input: &str) -> Result<ParsedDate, DateError> {
    let s = input.trim();
    match parse_rfc2822_exact(s) {
        Ok(d) => Ok(d),
        Err(e) => match parse_w3c_exact(s) {
            Ok(d) => Ok(ParsedDate {
                value: d.value,
                repair: Some("W3C Datetime where RFC 2822 was expected"),
            }),
            Err(_) => Err(e),
        },
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const FULL_MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

fn parse_rfc2822_exact(s: &str) -> Result<ParsedDate, DateError> {
    // Drop a trailing comment such as "(CEST)".
    let s = match s.find('(') {
        Some(i) => s[..i].trim_end(),
        None => s,
    };
    let mut tokens = s
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .peekable();
    let mut repair = None;
    if let Some(first) = tokens.peek() {
        let lower = first.to_ascii_lowercase();
        if first.bytes().all(|b| b.is_ascii_alphabetic())
            && DAYS.iter().any(|d| lower.starts_with(d))
        {
            tokens.next();
        }
    }
    let day: u32 = tokens
        .next()
        .filter(|t| t.len() <= 2)
        .and_then(|t| t.parse().ok())
        .ok_or(DateError("expected the day of the month"))?;
    let month_token = tokens
        .next()
        .ok_or(DateError("expected a month name"))?
        .to_ascii_lowercase();
    let month = if let Some(i) = MONTHS.iter().position(|m| *m == month_token) {
        i as u32 + 1
    } else if let Some(i) = FULL_MONTHS.iter().position(|m| *m == month_token) {
        repair = Some("full month name");
        i as u32 + 1
    } else {
        return Err(DateError("unknown month name"));
    };
    let year_token = tokens.next().ok_or(DateError("expected a year"))?;
    if !year_token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DateError("expected a numeric year"));
    }
    let mut year: i64 = year_token
        .parse()
        .map_err(|_| DateError("expected a numeric year"))?;
    match year_token.len() {
        4 => {}
        2 => {
            year += if year < 50 { 2000 } else { 1900 };
            repair = Some("two-digit year");
        }
        3 => {
            year += 1900;
            repair = Some("three-digit year");
        }
        _ => return Err(DateError("year out of range")),
    }
    let time = tokens.next().ok_or(DateError("expected a time"))?;
    let mut parts = time.split(':');
    let mut num = |what| -> Result<u32, DateError> {
        parts
            .next()
            .filter(|p| (1..=2).contains(&p.len()))
            .and_then(|p| p.parse().ok())
            .ok_or(DateError(what))
    };
    let hour = num("expected hh:mm")?;
    let minute = num("expected hh:mm")?;
    let (second, precision) = match parts.next() {
        Some(p) => (
            p.parse().map_err(|_| DateError("bad seconds"))?,
            Precision::Second,
        ),
        None => (0, Precision::Minute),
    };
    if parts.next().is_some() {
        return Err(DateError("bad time"));
    }
    let offset = match tokens.next() {
        None => {
            repair = Some("no zone, taken as UTC");
            0
        }
        Some(z) => match zone_offset(z) {
            Some((off, zone_repair)) => {
                if zone_repair.is_some() {
                    repair = zone_repair;
                }
                off
            }
            None => return Err(DateError("unknown zone")),
        },
    };
    if tokens.next().is_some() {
        return Err(DateError("unexpected text after the zone"));
    }
    let second = if second == 60 { 59 } else { second };
    finish(
        year, month, day, hour, minute, second, 0, offset, precision, repair,
    )
}

fn zone_offset(z: &str) -> Option<(i64, Option<&'static str>)> {
    if let Some(rest) = z.strip_prefix('+').or_else(|| z.strip_prefix('-')) {
        let negative = z.starts_with('-');
        let (digits, repair) = match rest.as_bytes() {
            [h1, h2, m1, m2] => ([*h1, *h2, *m1, *m2], None),
            [h1, h2, b':', m1, m2] => ([*h1, *h2, *m1, *m2], Some("zone offset with ':'")),
            [h1, h2] => ([*h1, *h2, b'0', b'0'], Some("zone offset without minutes")),
            _ => return None,
        };
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let h = i64::from((digits[0] - b'0') * 10 + (digits[1] - b'0'));
        let m = i64::from((digits[2] - b'0') * 10 + (digits[3] - b'0'));
        if h > 23 || m > 59 {
            return None;
        }
        let off = h * 3600 + m * 60;
        return Some((if negative { -off } else { off }, repair));
    }
    let hours = match z.to_ascii_uppercase().as_str() {
        "UT" | "GMT" | "UTC" | "Z" => 0,
        "EST" => -5,
        "EDT" => -4,
        "CST" => -6,
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        "CET" => return Some((3600, Some("non-RFC zone name"))),
        "CEST" => return Some((7200, Some("non-RFC zone name"))),
        "BST" => return Some((3600, Some("non-RFC zone name"))),
        // RFC 2822 4.3: military zones are to be read as -0000.
        m if m.len() == 1 && m.as_bytes()[0].is_ascii_alphabetic() => {
            return Some((0, Some("military zone read as UTC")));
        }
        _ => return Some((0, Some("unknown zone name, taken as UTC"))),
    };
    Some((hours * 3600, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_fixed_layouts_read_as_the_general_parser_reads_them(
            digits in prop::collection::vec(0u8..10, 16),
            high in prop::collection::vec(0u32..100, 6),
            layout in 0usize..4,
            sign in prop::sample::select(vec!['+', '-', 'Z', 'z', ' ']),
        ) {
            let d = |i: usize| char::from(b'0' + digits[i]);
            let year: String = (0..4).map(d).collect();
            // Values in and out of range: month, day, hour, minute, second, zone hour.
            let [mo, da, h, mi, se, zh] = [high[0] % 14, high[1] % 33, high[2] % 26, high[3] % 62, high[4] % 62, high[5] % 26];
            let date = format!("{year}-{mo:02}-{da:02}");
            let text = match layout {
                0 => date,
                1 => format!("{date}T{h:02}:{mi:02}:{se:02}Z"),
                2 => format!("{date}T{h:02}:{mi:02}:{se:02}{sign}{zh:02}:{:02}", high[3] % 61),
                _ => format!("{date}T{h:02}:{mi:02}:{se:02}{sign}{zh:02}{:02}", high[3] % 61),
            };
            if let Some(fast) = fixed_layout(text.as_bytes()) {
                prop_assert_eq!(Ok(fast), parse_w3c_exact(&text), "{}", text);
            }
            prop_assert_eq!(parse_w3c(&text), parse_w3c_general(&text), "{}", text);
        }
    }

    #[test]
    fn the_fixed_layouts_are_taken() {
        for text in [
            "2024-05-06",
            "2024-05-06T07:08:09Z",
            "2024-05-06T07:08:09+02:00",
            "2024-05-06T07:08:09-11:30",
        ] {
            assert!(fixed_layout(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            "2024-05-06T07:08:60Z",
            "2024-13-06",
            "2024-05-06T07:08:09+24:00",
            " 2024-05-06",
            "2024-05-06t07:08:09Z",
        ] {
            assert!(fixed_layout(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[test]
    fn display_writes_what_the_format_macro_writes() {
        let reference = |l: &Lastmod| {
            let days = l.unix_seconds.div_euclid(86_400);
            let secs = l.unix_seconds.rem_euclid(86_400);
            let (y, m, d) = civil_from_days(days);
            let mut s = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
            if l.precision == Precision::Fraction && l.nanos > 0 {
                s.push_str(&format!(
                    ".{}",
                    format!("{:09}", l.nanos).trim_end_matches('0')
                ));
            }
            s + "Z"
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut seconds = vec![
            MIN_UNIX,
            MAX_UNIX,
            0,
            -1,
            86_399,
            86_400,
            MIN_UNIX - 1,
            MAX_UNIX + 1,
        ];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = (MAX_UNIX - MIN_UNIX + 1) as u64 + 2 * 86_400 * 366;
            seconds.push(MIN_UNIX - 86_400 * 366 + (x % span) as i64);
        }
        for (i, unix_seconds) in seconds.into_iter().enumerate() {
            let precision = if i % 2 == 0 {
                Precision::Fraction
            } else {
                Precision::Second
            };
            let l = Lastmod {
                unix_seconds,
                nanos: if i % 101 == 0 {
                    1_000_000_000 + i as u32
                } else {
                    (i as u32 * 7_919) % 1_000_000_000
                },
                precision,
            };
            assert_eq!(l.to_string(), reference(&l), "{l:?}");
            let mut written = Vec::new();
            l.write_w3c(&mut written).unwrap();
            assert_eq!(written, reference(&l).as_bytes(), "{l:?}");
        }
    }

    fn w3c(s: &str) -> (String, Precision, bool) {
        let d = parse_w3c(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (d.value.to_string(), d.value.precision, d.repair.is_some())
    }

    #[test]
    fn x7_all_six_w3c_levels_keep_their_precision() {
        assert_eq!(
            w3c("1997"),
            ("1997-01-01T00:00:00Z".into(), Precision::Year, false)
        );
        assert_eq!(
            w3c("1997-07"),
            ("1997-07-01T00:00:00Z".into(), Precision::Month, false)
        );
        assert_eq!(
            w3c("1997-07-16"),
            ("1997-07-16T00:00:00Z".into(), Precision::Day, false)
        );
        assert_eq!(
            w3c("1997-07-16T19:20+01:00"),
            ("1997-07-16T18:20:00Z".into(), Precision::Minute, false)
        );
        assert_eq!(
            w3c("1997-07-16T19:20:30+01:00"),
            ("1997-07-16T18:20:30Z".into(), Precision::Second, false)
        );
        assert_eq!(
            w3c("1997-07-16T19:20:30.45+01:00"),
            ("1997-07-16T18:20:30.45Z".into(), Precision::Fraction, false)
        );
        assert_eq!(
            w3c("2023-01-05T10:11:12.123Z"),
            (
                "2023-01-05T10:11:12.123Z".into(),
                Precision::Fraction,
                false
            )
        );
    }

    #[test]
    fn x7_lenient_repairs_are_reported() {
        assert_eq!(
            w3c("2013-04-02T10:20:30+0800"),
            ("2013-04-02T02:20:30Z".into(), Precision::Second, true)
        );
        assert_eq!(
            w3c("2013-04-02T10:20:30"),
            ("2013-04-02T10:20:30Z".into(), Precision::Second, true)
        );
        assert_eq!(
            w3c("2013-04-02 10:20:30Z"),
            ("2013-04-02T10:20:30Z".into(), Precision::Second, true)
        );
        assert_eq!(
            w3c("2013-04-02T10:20:30+05"),
            ("2013-04-02T05:20:30Z".into(), Precision::Second, true)
        );
        assert_eq!(
            w3c("Sat, 07 Sep 2002 00:00:01 GMT").0,
            "2002-09-07T00:00:01Z"
        );
        assert_eq!(w3c("  2024-02-29  ").0, "2024-02-29T00:00:00Z");
    }

    #[test]
    fn x7_garbage_is_an_error() {
        for bad in [
            "",
            "yesterday",
            "2023-13-01",
            "2023-02-30",
            "2023-1-5",
            "2023-01-05T25:00Z",
            "{{ site.time | date_to_xmlschema }}",
            "2005-01-01<",
            "20230105",
            "2023-01-05T10:00+2400",
        ] {
            assert!(parse_w3c(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn f1_rfc2822_dates_and_repairs() {
        let p = |s: &str| parse_rfc2822(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(
            p("Wed, 02 Oct 2002 13:00:00 GMT").value.to_string(),
            "2002-10-02T13:00:00Z"
        );
        assert_eq!(
            p("Wed, 02 Oct 2002 15:00:00 +0200").value.to_string(),
            "2002-10-02T13:00:00Z"
        );
        assert_eq!(
            p("Wed, 02 Oct 2002 08:00:00 EST").value.to_string(),
            "2002-10-02T13:00:00Z"
        );
        assert_eq!(
            p("02 Oct 2002 13:00 GMT").value.precision,
            Precision::Minute
        );
        let two = p("Sun, 19 May 02 15:21:36 GMT");
        assert_eq!(
            (two.value.to_string().as_str(), two.repair.is_some()),
            ("2002-05-19T15:21:36Z", true)
        );
        assert_eq!(
            p("Thu, 01 Jan 98 00:00:00 GMT").value.to_string(),
            "1998-01-01T00:00:00Z"
        );
        assert_eq!(
            p("Tue, 10 June 2003 04:00:00 GMT").value.to_string(),
            "2003-06-10T04:00:00Z"
        );
        assert_eq!(
            p("Wed, 22 Oct 2008 10:55:00 +0200 (CEST)")
                .value
                .to_string(),
            "2008-10-22T08:55:00Z"
        );
        assert!(p("2008-10-22T10:55:00+02:00").repair.is_some());
        assert!(parse_rfc2822("not a date").is_err());
        assert!(parse_rfc2822("Wed, 32 Oct 2002 13:00:00 GMT").is_err());
    }

    #[test]
    fn hostile_zones_and_extreme_dates_are_errors_not_panics() {
        for bad in [
            "Sat, 07 Sep 2002 10:00:01 МСК",
            "Sat, 07 Sep 2002 10:00:01 \u{FFFD}+0000",
            "1 Jan 2000 00:00 é+0530",
            "1 Jan 2000 00:00 +:::::",
            "1 Jan 2000 00:00 +1::::",
            "1 Jan 2000 00:00 +1:2",
            "0000-01-01T00:00+23:59",
            "9999-12-31T23:59:59-23:59",
        ] {
            // Non-ASCII zone names are unknown zones (UTC, flagged); malformed offsets and out-of-range instants fail.
            if let Ok(d) = parse_w3c(bad).or_else(|_| parse_rfc2822(bad)) {
                assert!(d.repair.is_some(), "{bad:?}");
            }
        }
        assert!(parse_w3c("9999-12-31T23:59:59-23:59").is_err());
        assert!(parse_w3c("0000-01-01T00:00+23:59").is_err());
        assert_eq!(
            parse_w3c("9999-12-31T23:59:59Z").unwrap().value.to_string(),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(
            parse_w3c("0001-01-01").unwrap().value.to_string(),
            "0001-01-01T00:00:00Z"
        );
    }

    #[test]
    fn civil_round_trip() {
        for days in [-800_000i64, -1, 0, 1, 11_016, 19_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
