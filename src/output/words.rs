//! Counts and sizes in words: `1 sitemap`, `2 sitemaps`, `2.5 MiB`.

/// `s` after a count other than 1.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `n` and `noun`, pluralised by adding `s`: `1 sitemap`, `0 sitemaps`.
pub(crate) fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n))
}

/// A size in binary units, one decimal: `144 B`, `2.0 KiB`, `2.5 MiB`,
/// `1.2 GiB`.
pub(crate) fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} B")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else if f < KIB * KIB * KIB {
        format!("{:.1} MiB", f / KIB / KIB)
    } else {
        format!("{:.1} GiB", f / KIB / KIB / KIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sizes() {
        assert_eq!(count(1, "sitemap"), "1 sitemap");
        assert_eq!(count(0, "sitemap"), "0 sitemaps");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(2_621_439), "2.5 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }
}
