//! Small field values: changefreq (X9), priority (X10) and the video
//! extension's numbers and yes/no flags (E2).

use crate::event::{ChangeFreq, Relationship};

/// A value read, possibly after a repair worth flagging.
pub(super) type Read<T> = Result<(T, Option<&'static str>), &'static str>;

/// `<changefreq>`: exact keyword; lenient also accepts other case (flagged).
pub(super) fn changefreq(text: &str, strict: bool) -> Read<ChangeFreq> {
    let t = text.trim();
    if let Some(c) = ChangeFreq::from_keyword(t) {
        return Ok((c, None));
    }
    match ChangeFreq::from_keyword(&t.to_ascii_lowercase()) {
        Some(c) if !strict => Ok((c, Some("changefreq in the wrong case"))),
        Some(_) => Err("changefreq in the wrong case"),
        None => Err("not one of always, hourly, daily, weekly, monthly, yearly, never"),
    }
}

/// `<priority>`: a decimal in [0.0, 1.0] (`1`, `0.5`, `.5`, `1.0000`).
pub(super) fn priority(text: &str) -> Read<f32> {
    // The common spelling, `0.D`: the value the general path computes.
    if let [b'0', b'.', d @ b'0'..=b'9'] = *text.as_bytes() {
        return Ok((f32::from(d - b'0') / 10.0, None));
    }
    let t = text.trim();
    let digits_and_point = !t.is_empty()
        && t.bytes().filter(|&b| b == b'.').count() <= 1
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t != ".";
    if !digits_and_point {
        return Err("not a decimal number");
    }
    // Decided on the digits, not on the rounded float: 1.0000000001 is above 1.
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let int = int.trim_start_matches('0');
    let in_range = int.is_empty() || (int == "1" && frac.bytes().all(|b| b == b'0'));
    if !in_range {
        return Err("outside 0.0..=1.0");
    }
    // Up to 7 fraction digits, numerator and 10^k are exact in f32 and the
    // division is correctly rounded: the same value as parsing, much cheaper.
    if frac.len() <= 7 {
        let numerator = frac
            .bytes()
            .fold(u32::from(int == "1"), |n, d| n * 10 + u32::from(d - b'0'));
        let scale = 10u32.pow(frac.len() as u32);
        return Ok((numerator as f32 / scale as f32, None));
    }
    let v: f32 = t.parse().map_err(|_| "not a decimal number")?;
    Ok((v, None))
}

/// `yes` / `no` (case-insensitive).
pub(super) fn yes_no(text: &str) -> Read<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" => Ok((true, None)),
        "no" | "false" => Ok((false, None)),
        _ => Err("expected yes or no"),
    }
}

/// A non-negative integer within `range`.
pub(super) fn integer(text: &str, range: std::ops::RangeInclusive<u64>) -> Read<u64> {
    let v: u64 = text.trim().parse().map_err(|_| "not a whole number")?;
    if range.contains(&v) {
        Ok((v, None))
    } else {
        Err("out of range")
    }
}

/// A decimal within `range`.
pub(super) fn decimal(text: &str, range: std::ops::RangeInclusive<f32>) -> Read<f32> {
    let v: f32 = text.trim().parse().map_err(|_| "not a number")?;
    if v.is_finite() && range.contains(&v) {
        Ok((v, None))
    } else {
        Err("out of range")
    }
}

/// `relationship="allow|deny"`.
pub(super) fn relationship(text: &str) -> Option<Relationship> {
    match text.trim().to_ascii_lowercase().as_str() {
        "allow" => Some(Relationship::Allow),
        "deny" => Some(Relationship::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x9_changefreq() {
        assert_eq!(
            changefreq(" weekly\n", false),
            Ok((ChangeFreq::Weekly, None))
        );
        assert!(matches!(
            changefreq("Daily", false),
            Ok((ChangeFreq::Daily, Some(_)))
        ));
        assert!(changefreq("Daily", true).is_err());
        assert!(changefreq("sometimes", false).is_err());
    }

    #[test]
    fn x10_priority() {
        assert_eq!(priority("0.3"), Ok((0.3, None)));
        assert_eq!(priority("1"), Ok((1.0, None)));
        assert_eq!(priority("1.0000"), Ok((1.0, None)));
        assert_eq!(priority(".5"), Ok((0.5, None)));
        assert_eq!(priority("0.0"), Ok((0.0, None)));
        for bad in [
            "1.5", "-0.1", "high", "NaN", "inf", "1e-1", "", ".", "0.5.1",
        ] {
            assert!(priority(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn e2_video_values() {
        assert_eq!(yes_no("Yes"), Ok((true, None)));
        assert!(yes_no("maybe").is_err());
        assert_eq!(integer("600", 1..=28_800), Ok((600, None)));
        assert!(integer("28801", 1..=28_800).is_err());
        assert!(decimal("5.1", 0.0..=5.0).is_err());
        assert_eq!(relationship(" Deny "), Some(Relationship::Deny));
    }
}
