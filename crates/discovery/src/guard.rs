//! The address guard: which IP addresses a fetch may connect to.
//!
//! A sitemap, a robots.txt or a redirect can name any host, so an
//! unguarded fetcher is a way into the network it runs in (SSRF: cloud
//! metadata at 169.254.169.254, admin consoles on 10.x, the daemon's own API
//! on 127.0.0.1). The guard refuses every non-public address:
//!
//! - literal IP hosts are checked before any connection is attempted;
//! - names are resolved by [`GuardedResolver`], which drops forbidden
//!   addresses from the answer, so the connector can only ever dial an
//!   allowed one (and a name with no allowed address fails without a
//!   connection);
//! - the fetcher checks the address the response actually came from again.
//!
//! `allow_private` lifts it, for tests on loopback and for intranets.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address may not be fetched, or `None` if it is public.
///
/// ```
/// use sitemapd_discovery::guard::forbidden;
/// assert_eq!(forbidden("169.254.169.254".parse().unwrap()), Some("link-local"));
/// assert_eq!(forbidden("::ffff:10.0.0.1".parse().unwrap()), Some("private"));
/// assert_eq!(forbidden("93.184.216.34".parse().unwrap()), None);
/// ```
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (172, 16..=31) | (192, 168) => "private",
        (169, 254) => "link-local",
        (100, 64..=127) => "shared (CGNAT)",
        (192, 0) if c == 0 => "IETF protocol assignments",
        (192, 0) if c == 2 => "documentation",
        (198, 51) if c == 100 => "documentation",
        (203, 0) if c == 113 => "documentation",
        (198, 18..=19) => "benchmarking",
        (224..=239, _) => "multicast",
        (240..=255, _) => "reserved or broadcast",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = embedded_v4(ip) {
        return forbidden_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only",
        // Teredo hides an IPv4 address (obfuscated) in its last 32 bits.
        0x2001 if s[1] == 0 => "Teredo tunnel",
        0x2001 if s[1] == 0x0db8 => "documentation",
        // 2001::/23: benchmarking, ORCHID and other protocol assignments.
        0x2001 if s[1] < 0x0200 => "IETF protocol assignments",
        0x3fff if s[1] < 0x1000 => "documentation",
        0xfc00..=0xfdff => "private (unique local)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        _ => return None,
    })
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-
/// translated (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`, and the local-use `64:ff9b:1::/48`) or 6to4
/// (`2002:AABB:CCDD::`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] => Some(tail()),
        [0, 0, 0, 0, 0, 0, _, _] => Some(tail()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => Some(tail()),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// The guard's policy: refuse non-public addresses unless `allow_private`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddressGuard {
    /// Lift the guard (tests on loopback, intranets).
    pub allow_private: bool,
}

impl AddressGuard {
    /// `Err(reason)` when `ip` may not be connected to.
    pub fn check(&self, ip: IpAddr) -> Result<(), &'static str> {
        match forbidden(ip) {
            Some(reason) if !self.allow_private => Err(reason),
            _ => Ok(()),
        }
    }
}

/// Why the guard refuses `proxy` (a proxy URL, `scheme://host:port`, the
/// scheme `http://` if none is given), if it does: its host is a literal
/// address the guard refuses and `allowed` does not list, `localhost` (or a
/// name under `.localhost`), or a name `overrides` answers with such an
/// address. Behind a proxy, names resolve at the proxy, out of the guard's
/// sight, so a proxy inside the network would reach what the guard keeps
/// out (`localhost`, internal names, redirects to them). Other names are
/// resolved through the [`GuardedResolver`] when the proxy is connected to.
/// `None` when the guard is lifted, or the URL has no host to judge.
pub fn proxy_refusal(
    guard: AddressGuard,
    proxy: &str,
    overrides: &HashMap<String, Vec<IpAddr>>,
    allowed: &[IpAddr],
) -> Option<String> {
    if guard.allow_private {
        return None;
    }
    // Parsed as http whatever the scheme (socks5h too), so that every
    // spelling of an IPv4 address (0x7f.1, 2130706433) is read as one.
    let rest = proxy.split_once("://").map_or(proxy, |(_, rest)| rest);
    let url = reqwest::Url::parse(&format!("http://{rest}")).ok()?;
    let host = url.host_str()?;
    let refused = |ip: IpAddr| forbidden(ip).filter(|_| !allowed.contains(&ip));
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return refused(ip).map(|why| format!("{ip} is {why}"));
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Some(format!("{name} is loopback"));
    }
    overrides
        .get(&name)
        .into_iter()
        .flatten()
        .find_map(|ip| refused(*ip).map(|why| format!("{name} resolves to {ip}, {why}")))
}

/// Name resolution for the fetcher: a fixed table of overrides (like curl's
/// `--resolve`), then the system resolver, then the [`AddressGuard`] on
/// every address returned.
#[derive(Debug, Clone, Default)]
pub struct GuardedResolver {
    guard: AddressGuard,
    overrides: Arc<HashMap<String, Vec<IpAddr>>>,
    /// Addresses let through although the guard would refuse them.
    allowed: Arc<Vec<IpAddr>>,
}

/// A name whose every address is forbidden.
#[derive(Debug, thiserror::Error)]
#[error("address guard: {name} resolves only to refused addresses ({addresses})")]
pub struct GuardRefused {
    name: String,
    addresses: String,
}

impl GuardRefused {
    /// The name and its refused addresses, for
    /// [`FetchError::Refused`](crate::FetchError::Refused).
    pub fn describe(&self) -> String {
        format!("{} (it resolves only to {})", self.name, self.addresses)
    }
}

impl GuardedResolver {
    /// A resolver applying `guard`, answering names in `overrides` (lower
    /// case host names) from the table instead of DNS.
    pub fn new(guard: AddressGuard, overrides: HashMap<String, Vec<IpAddr>>) -> Self {
        Self {
            guard,
            overrides: Arc::new(overrides),
            allowed: Arc::default(),
        }
    }

    /// Lets these exact addresses through although the guard would refuse
    /// them (see `FetchConfig::allow_addresses`).
    pub fn allowing(mut self, addresses: Vec<IpAddr>) -> Self {
        self.allowed = Arc::new(addresses);
        self
    }

    fn permits(&self, ip: IpAddr) -> bool {
        self.allowed.contains(&ip) || self.guard.check(ip).is_ok()
    }

    /// Resolves `name` and keeps the allowed addresses; an error when none
    /// is left.
    pub async fn lookup(
        &self,
        name: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let all: Vec<SocketAddr> = match self.overrides.get(&name.to_ascii_lowercase()) {
            Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
            None => tokio::net::lookup_host((name, 0)).await?.collect(),
        };
        let (allowed, refused): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|a| self.permits(a.ip()));
        if allowed.is_empty() && !refused.is_empty() {
            let addresses = refused
                .iter()
                .map(|a| format!("{}: {}", a.ip(), forbidden(a.ip()).unwrap_or("refused")))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(Box::new(GuardRefused {
                name: name.to_string(),
                addresses,
            }));
        }
        Ok(allowed)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_proxy_inside_the_network_is_refused() {
        let on = AddressGuard::default();
        let none = HashMap::new();
        let refused = |p: &str| proxy_refusal(on, p, &none, &[]);
        for p in [
            "http://127.0.0.1:3128",
            "127.0.0.1:3128",
            "http://0x7f.1:3128",
            "socks5h://2130706433:1080",
            "http://[::1]:3128",
            "http://[::ffff:10.0.0.1]:3128",
            "http://10.0.0.1:3128",
            "http://192.168.1.1",
            "http://169.254.169.254",
            "http://localhost:3128",
            "http://LOCALHOST.:3128",
            "http://proxy.localhost:3128",
        ] {
            assert!(refused(p).is_some(), "{p}");
        }
        for p in [
            "http://93.184.216.34:3128",
            "http://proxy.example:3128",
            "::",
        ] {
            assert_eq!(refused(p), None, "{p}");
        }
        // A name answered from --resolve is judged by its address.
        let table = HashMap::from([("proxy.test".to_string(), vec![ip("10.1.1.1")])]);
        assert_eq!(
            proxy_refusal(on, "http://proxy.test:3128", &table, &[]).as_deref(),
            Some("proxy.test resolves to 10.1.1.1, private")
        );
        // Lifted by allow_private, or for an address let through.
        let off = AddressGuard {
            allow_private: true,
        };
        assert_eq!(proxy_refusal(off, "http://127.0.0.1:1", &none, &[]), None);
        assert_eq!(
            proxy_refusal(on, "http://10.1.1.1:1", &none, &[ip("10.1.1.1")]),
            None
        );
    }

    #[test]
    fn refuses_every_non_public_range() {
        for a in [
            "0.0.0.0",
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::127.0.0.1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "192.0.2.1",
            "203.0.113.9",
            "2002:0a00:0001::1",
            "::ffff:0:10.0.0.1",
            "::ffff:0:127.0.0.1",
            "::2",
            "::7f00:1",
            "100::1",
            "2001:2::1",
            "2001:10::1",
            "3fff::1",
            "3fff:fff::1",
        ] {
            assert!(forbidden(ip(a)).is_some(), "{a} must be refused");
        }
    }

    #[test]
    fn allows_public_addresses() {
        for a in [
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::1",
            "::ffff:0:8.8.8.8",
            "100:0:0:1::1",
            "2001:200::1",
            "3fff:1000::1",
        ] {
            assert_eq!(forbidden(ip(a)), None, "{a} is public");
        }
    }

    #[tokio::test]
    async fn resolver_drops_refused_addresses() {
        let overrides = HashMap::from([
            ("evil.test".to_string(), vec![ip("127.0.0.1")]),
            (
                "mixed.test".to_string(),
                vec![ip("10.0.0.1"), ip("8.8.8.8")],
            ),
        ]);
        let r = GuardedResolver::new(AddressGuard::default(), overrides.clone());
        let err = r.lookup("evil.test").await.unwrap_err().to_string();
        assert!(err.contains("127.0.0.1: loopback"), "{err}");
        let ok = r.lookup("MIXED.test").await.unwrap();
        assert_eq!(ok, [SocketAddr::new(ip("8.8.8.8"), 0)]);
        let open = GuardedResolver::new(
            AddressGuard {
                allow_private: true,
            },
            overrides.clone(),
        );
        assert_eq!(open.lookup("evil.test").await.unwrap().len(), 1);
        // One address let through: that one only.
        let one =
            GuardedResolver::new(AddressGuard::default(), overrides).allowing(vec![ip("10.0.0.1")]);
        assert_eq!(
            one.lookup("mixed.test").await.unwrap(),
            [
                SocketAddr::new(ip("10.0.0.1"), 0),
                SocketAddr::new(ip("8.8.8.8"), 0)
            ]
        );
        assert!(one.lookup("evil.test").await.is_err());
    }
}
