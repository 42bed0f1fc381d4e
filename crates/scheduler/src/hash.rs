//! Hashes: one that is the same on every build and platform (jitter,
//! fingerprints), unlike `DefaultHasher`, and fast seeded maps.

/// 64-bit FNV-1a: a hash that is the same on every build and platform
/// (jitter, fingerprints), unlike `DefaultHasher`.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    Fnv1a::default().write(bytes).finish()
}

/// [`fnv1a`] fed piece by piece: the hash of the concatenation, without
/// building it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds `bytes`.
    pub(crate) fn write(mut self, bytes: &[u8]) -> Self {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// The hash so far.
    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

/// A hash as a number in [0, 1): its top 53 bits.
pub(crate) fn unit(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// A hash map for the store's hot paths (a lease's hosts, lists and URLs):
/// foldhash, several times faster than the standard SipHash on short keys,
/// and seeded per process, so that colliding hosts and URLs cannot simply
/// be written into a sitemap in advance (it is only minimally
/// DoS-resistant beyond that; these maps live for one batch of writes or
/// one lease).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A hash set with [`FastMap`]'s hasher.
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
