//! Which partition a host's keys live in: the one its registrable domain
//! (the Public Suffix List's "eTLD+1": `example.co.uk` for
//! `www.example.co.uk`) hashes to, so that one site's hosts, robots rules,
//! politeness and sitemaps share a partition and its write lock.
//!
//! The list is compiled in (`psl`, pinned to one version); a store records
//! that version when it is partitioned ([`PSL_VERSION`]), and a build with
//! another list refuses to open it rather than look for a host's keys in
//! another partition than the one holding them.

use std::borrow::Cow;

use crate::hash::fnv1a;

/// The version of the Public Suffix List crate this build routes with (the
/// workspace pins `psl` to it exactly).
pub(crate) const PSL_VERSION: &str = "2.1.247";

/// Partitions a new store gets when its options do not say
/// ([`StoreOptions::partitions`](crate::StoreOptions::partitions)): one.
/// On sled, several partitions write side by side only through batches
/// written twice (see the crate's README, "Partitions"), which costs half
/// as much disk again; a daemon serving crawlers from several cores gains
/// more than that, and asks for them (`--partitions 16`).
pub const DEFAULT_PARTITIONS: u16 = 1;

/// The most partitions a store may have.
pub const MAX_PARTITIONS: u16 = 1024;

/// The site a host belongs to: its registrable domain, lowercased. A host
/// with none (an IP literal, a name of one label such as `localhost`, a
/// public suffix itself) is its own site. A port is not part of it.
pub(crate) fn site_of(host: &str) -> Cow<'_, str> {
    let name = strip_port(host);
    let name: Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    };
    let name_ref: &str = &name;
    let is_literal = name_ref.starts_with('[') || name_ref.parse::<std::net::Ipv4Addr>().is_ok();
    if is_literal || !name_ref.contains('.') {
        return name;
    }
    let trimmed = name_ref.trim_end_matches('.');
    // The domain is a suffix of the name: where it starts.
    let start = match psl::domain_str(trimmed) {
        Some(domain) if domain.len() < name_ref.len() => trimmed.len() - domain.len(),
        _ => return name,
    };
    let end = trimmed.len();
    match name {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..end]),
        Cow::Owned(o) => Cow::Owned(o[start..end].to_string()),
    }
}

/// `host` without its `:port`, if it has one (an IPv6 literal keeps its
/// brackets).
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rfind(':') {
        Some(at) if host[at + 1..].bytes().all(|b| b.is_ascii_digit()) => &host[..at],
        _ => host,
    }
}

/// How a store's hosts map to its partitions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routes {
    count: u16,
}

impl Routes {
    /// Routes over `count` partitions (at least one).
    pub(crate) fn new(count: u16) -> Routes {
        Routes {
            count: count.clamp(1, MAX_PARTITIONS),
        }
    }

    /// How many partitions there are.
    pub(crate) fn count(self) -> usize {
        usize::from(self.count)
    }

    /// The partition of `host` (`host[:port]`, as keys hold it).
    pub(crate) fn of_host(self, host: &str) -> usize {
        if self.count == 1 {
            return 0;
        }
        (fnv1a(site_of(host).as_bytes()) % u64::from(self.count)) as usize
    }

    /// The partition of `url`'s host.
    pub(crate) fn of_url(self, url: &str) -> usize {
        self.of_host(crate::keys::host_of(url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_its_registrable_domain() {
        for (host, site) in [
            ("www.example.com", "example.com"),
            ("a.b.example.co.uk", "example.co.uk"),
            ("example.com", "example.com"),
            ("WWW.Example.COM", "example.com"),
            ("www.example.com:8080", "example.com"),
            ("www.example.com.", "example.com"),
            ("127.0.0.1:9000", "127.0.0.1"),
            ("[::1]:8080", "[::1]"),
            ("localhost", "localhost"),
            ("co.uk", "co.uk"),
            ("user.github.io", "user.github.io"),
            ("x.user.github.io", "user.github.io"),
        ] {
            assert_eq!(site_of(host), site, "{host}");
        }
    }

    #[test]
    fn one_site_is_one_partition() {
        let routes = Routes::new(16);
        let p = routes.of_host("example.co.uk");
        for host in [
            "www.example.co.uk",
            "cdn.example.co.uk:443",
            "EXAMPLE.CO.UK",
        ] {
            assert_eq!(routes.of_host(host), p, "{host}");
        }
        assert_eq!(routes.of_url("https://img.example.co.uk/a?b"), p);
        assert_eq!(Routes::new(1).of_host("anything.example"), 0);
        // Sites spread: 1,000 of them reach every one of 16 partitions.
        let mut seen = [false; 16];
        for i in 0..1000 {
            seen[routes.of_host(&format!("site{i}.example"))] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn the_routing_is_the_same_on_every_build() {
        // A store's keys stay where they were put: these values are fixed.
        let routes = Routes::new(16);
        let got: Vec<usize> = ["example.com", "example.org", "a.example.net"]
            .iter()
            .map(|h| routes.of_host(h))
            .collect();
        assert_eq!(got, [6, 1, 0]);
        // The sites the daemon's protocol tests put URLs of, in two
        // partitions of sixteen.
        assert_ne!(routes.of_host("a.example"), routes.of_host("b.example"));
    }

    /// Hosts no normal URL has (what a key or a queue name may hold) route
    /// to a partition like any other, without a panic.
    #[test]
    fn any_string_routes() {
        let routes = Routes::new(16);
        for host in [
            "",
            ".",
            "..",
            ":",
            ":80",
            "[",
            "[::1",
            "]",
            "a..b",
            "é.example",
            "x:y:z",
            "-.-",
            "\u{0}",
            "co.uk.",
            "a.b.c.d.e.f.g.h.example.co.uk:99999",
        ] {
            assert!(routes.of_host(host) < 16, "{host:?}");
        }
    }

    #[test]
    fn the_pinned_list_is_the_one_recorded() {
        let manifest = include_str!("../../../Cargo.toml");
        assert!(
            manifest.contains(&format!("psl = \"={PSL_VERSION}\"")),
            "the workspace pins psl to PSL_VERSION"
        );
    }
}
