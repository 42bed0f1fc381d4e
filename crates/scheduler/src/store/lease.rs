//! Leases over the partitions: their queues merged in the one queue order
//! ([`crate::scan`]), under every partition's lock.

use super::Store;
use crate::error::StoreError;
use crate::lease::{lease_in, peek_in};
use crate::queue::{LeaseRequest, Leased};
use crate::time::Timestamp;

impl Store {
    /// Up to `n` URLs due at `now`, in the order a lease hands them out,
    /// without leasing them and without a lease's per-host and politeness
    /// limits: the pushed URLs, the validation samples the lease credit
    /// pays for, then every other urgency class in order, then the other
    /// validation samples (a lease gives those their share only). URLs
    /// robots.txt disallows are passed over.
    pub fn peek(&self, n: usize, now: Timestamp) -> Result<Vec<Leased>, StoreError> {
        peek_in(self.parts(), &self.credits, n, now)
    }

    /// Leases up to `request.n` due URLs for `request.ttl`, in the queue
    /// order (docs/queue.md): at most `request.per_host` per host, of at
    /// most `request.max_hosts` hosts, no host faster than its politeness
    /// delay, no URL its robots.txt disallows (those are marked `blocked`).
    /// Validation samples get their share of the fetches only
    /// ([`Params::validation_share`](crate::policy::Params::validation_share)):
    /// each URL leased earns that share of a sample, and the samples a
    /// lease's credit pays for come right after the pushed URLs. A lease of
    /// `k` URLs hands out the first `k` of what a lease of `n ≥ k` would.
    pub fn lease(&self, request: &LeaseRequest, now: Timestamp) -> Result<Vec<Leased>, StoreError> {
        self.lease_admitting(request, None, now, |_| usize::MAX)
    }

    /// [`Store::lease`] of the URLs of queue `queue` only (`None`: every
    /// queue), where `admit` says how many URLs each queue (by name) may be
    /// given at most (0: none), on top of the request's limits. It is asked
    /// once per queue the lease looks at, in the queue order, under the
    /// store's write lock: what a URL frontier client's per-queue rules
    /// decide ([`crate::frontier`]).
    pub fn lease_admitting(
        &self,
        request: &LeaseRequest,
        queue: Option<&str>,
        now: Timestamp,
        admit: impl FnMut(&str) -> usize,
    ) -> Result<Vec<Leased>, StoreError> {
        lease_in(self.parts(), &self.credits, request, queue, now, admit)
    }
}
