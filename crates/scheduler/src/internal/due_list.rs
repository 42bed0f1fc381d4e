//! A due list's value ([`DueList`]): its entries as one compressed record
//! ([`encode_squeezed`]), and, in front of them when some entry is leased,
//! the leases: [`MARKED`] ‖ entries (varint) ‖ leases (varint) ‖ per
//! lease its entry's index, lease id and expiry (varints) ‖ the entries.
//!
//! So a lease that marks entries rewrites the front and copies the
//! compressed entries as they are ([`remark`]), and a scan passes over a
//! list whose every entry is leased without decompressing it
//! ([`all_leased`]). A list none of whose entries is leased is the
//! compressed record alone, as key layout 6 wrote it.

use std::sync::{Arc, Mutex};

use crate::error::StoreError;
use crate::hash::FastMap;
use crate::kv::Kv;
use crate::page::{Reader, put_varint};
use crate::record::{DueList, Listed, RecordError, encode_squeezed, lease_holds};

/// A lease: its id and when it runs out.
pub(crate) type Lease = (u64, i64);

/// Lists a cache holds at most before it starts over.
pub(crate) const CACHED_LISTS: usize = 256;

/// Due lists read once each: which URLs each holds, and their marks.
#[derive(Default)]
pub(crate) struct ListCache {
    lists: FastMap<Vec<u8>, FastMap<String, Option<Lease>>>,
}

impl ListCache {
    /// Whether the due list at `key` holds `url` (`None`: it does not, or
    /// the list does not decode), and its mark if so.
    pub(crate) fn entry(
        &mut self,
        kv: &Kv,
        key: &[u8],
        url: &str,
    ) -> Result<Option<Option<Lease>>, StoreError> {
        if !self.lists.contains_key(key) {
            if self.lists.len() >= CACHED_LISTS {
                self.lists.clear();
            }
            let entries = match kv.get(key)? {
                Some(value) => decode(&value)
                    .map(|l| l.entries.into_iter().map(|e| (e.url, e.lease)).collect())
                    .unwrap_or_default(),
                None => FastMap::default(),
            };
            self.lists.insert(key.to_vec(), entries);
        }
        Ok(self.lists.get(key).and_then(|l| l.get(url)).copied())
    }
}

/// Lists [`Decoded`] holds at most before it starts over.
pub(crate) const DECODED_LISTS: usize = 1024;

/// Bytes [`Decoded`] holds at most (values and entries) before it starts
/// over: a list of 32 typical URLs takes about 5 KiB, one of 32 URLs of
/// the longest a sitemap may give (2,048 characters) up to about 130 KiB
/// (its value and its entries).
pub(crate) const DECODED_BYTES: usize = 8 << 20;

/// Due lists decoded, by key, kept while their entries' bytes stay the
/// same. A lease marks a list by rewriting its front alone, and the next
/// lease scans the same lists (the most due hosts' heads, and the hosts a
/// lease looked at and did not choose): it decodes none of them again.
#[derive(Default)]
pub(crate) struct Decoded {
    lists: FastMap<Vec<u8>, KeptList>,
    /// What the kept lists take, as [`KeptList::size`] counts it.
    bytes: usize,
}

/// A due list's entries, each without its lease, as [`Decoded`] shares
/// them.
pub(crate) type Entries = Arc<Vec<Listed>>;

/// A list [`Decoded`] keeps: its value, where its entries' bytes start,
/// the entries, and the bytes all that takes.
struct KeptList {
    value: crate::kv::Bytes,
    body: usize,
    entries: Entries,
    size: usize,
}

impl Decoded {
    /// The entries of the list kept at `key`, if its entries' bytes are
    /// `body`.
    fn kept(&self, key: &[u8], body: &[u8]) -> Option<Entries> {
        let kept = self.lists.get(key)?;
        (kept.value.get(kept.body..) == Some(body)).then(|| Arc::clone(&kept.entries))
    }

    /// Keeps `entries`, decoded from the entries' bytes of `value` (from
    /// `body` on), at `key`; starts over first if they would not fit.
    fn keep(&mut self, key: &[u8], value: &crate::kv::Bytes, body: usize, entries: Entries) {
        let size = value.len()
            + entries
                .iter()
                .map(|e| e.url.len() + std::mem::size_of::<Listed>())
                .sum::<usize>();
        if size > DECODED_BYTES {
            return;
        }
        if let Some(old) = self.lists.remove(key) {
            self.bytes -= old.size;
        }
        if self.lists.len() >= DECODED_LISTS || self.bytes + size > DECODED_BYTES {
            self.lists.clear();
            self.bytes = 0;
        }
        self.bytes += size;
        let kept = KeptList {
            value: value.clone(),
            body,
            entries,
            size,
        };
        self.lists.insert(key.to_vec(), kept);
    }
}

/// The entries of the due list `value` at `key`, each without its lease
/// (`front`: the leases in front of them, [`leases`]), from `cache` if it
/// kept them, else decoded (outside its lock) and kept.
pub(crate) fn decoded(
    cache: &Mutex<Decoded>,
    key: &[u8],
    value: &crate::kv::Bytes,
    front: &Leases,
) -> Result<Entries, RecordError> {
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    // `front` is read from `value`; one from other bytes is an error, not
    // a slice out of bounds.
    let body = value.get(front.body..).ok_or(RecordError::ListLeases)?;
    let hit = lock().kept(key, body);
    let entries = match hit {
        Some(entries) => entries,
        None => {
            let entries = Arc::new(decode_body(body)?.entries);
            lock().keep(key, value, front.body, Arc::clone(&entries));
            entries
        }
    };
    front.counts(entries.len())?;
    Ok(entries)
}

/// The first byte of a due list value whose entries hold leases.
pub const MARKED: u8 = 0xc6;

/// The leases in front of a due list's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leases {
    /// How many entries the list holds.
    pub entries: usize,
    /// Each lease, by its entry's index.
    pub leases: Vec<(usize, Lease)>,
    /// Where the entries' bytes start.
    body: usize,
}

/// The value of `list`.
pub fn encode(list: &DueList) -> Vec<u8> {
    let leases: Vec<(usize, Lease)> = list
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.lease.map(|l| (i, l)))
        .collect();
    let body = encode_squeezed(list);
    if leases.is_empty() {
        return body;
    }
    with_leases(list.entries.len(), &leases, &body)
}

/// `body` (the entries' bytes) with `leases` in front, if any.
fn with_leases(entries: usize, leases: &[(usize, Lease)], body: &[u8]) -> Vec<u8> {
    if leases.is_empty() {
        return body.to_vec();
    }
    let mut out = Vec::with_capacity(4 + leases.len() * 14 + body.len());
    out.push(MARKED);
    put_varint(&mut out, entries);
    put_varint(&mut out, leases.len());
    for &(i, (id, until)) in leases {
        put_varint(&mut out, i);
        put_varint(&mut out, id as usize);
        put_varint(&mut out, until as u64 as usize);
    }
    out.extend_from_slice(body);
    out
}

/// The leases in front of a due list value (none if it has no front).
pub fn leases(bytes: &[u8]) -> Result<Leases, RecordError> {
    if bytes.first() != Some(&MARKED) {
        return Ok(Leases {
            entries: 0,
            leases: Vec::new(),
            body: 0,
        });
    }
    let mut r = Reader { bytes, at: 1 };
    let entries = r.varint()?;
    let n = r.varint()?;
    if n > entries {
        return Err(RecordError::ListLeases);
    }
    let mut leases = Vec::with_capacity(n.min(64));
    let mut last = None;
    for _ in 0..n {
        let i = r.varint()?;
        let id = r.varint()? as u64;
        let until = r.varint()? as u64 as i64;
        if i >= entries || last.is_some_and(|l| i <= l) {
            return Err(RecordError::ListLeases);
        }
        last = Some(i);
        leases.push((i, (id, until)));
    }
    Ok(Leases {
        entries,
        leases,
        body: r.at,
    })
}

/// The due list a value holds, each entry with its lease.
pub fn decode(bytes: &[u8]) -> Result<DueList, RecordError> {
    let front = leases(bytes)?;
    let mut list = decode_body(&bytes[front.body..])?;
    front.counts(list.entries.len())?;
    for (i, lease) in front.leases {
        list.entries[i].lease = Some(lease);
    }
    Ok(list)
}

fn decode_body(body: &[u8]) -> Result<DueList, RecordError> {
    if body.first() == Some(&MARKED) {
        return Err(RecordError::ListLeases);
    }
    crate::record::decode(body)
}

/// Whether every entry of the list `bytes` holds is leased at `now`
/// (read from the front alone).
pub fn all_leased(bytes: &[u8], now: i64) -> bool {
    leases(bytes).is_ok_and(|f| f.all_leased(now))
}

impl Leases {
    /// Whether a list of `entries` entries may stand behind them: as many
    /// as they count, if there are any.
    fn counts(&self, entries: usize) -> Result<(), RecordError> {
        if self.body > 0 && entries != self.entries {
            return Err(RecordError::ListLeases);
        }
        Ok(())
    }

    /// The lease of the entry at `index`, if it holds one.
    pub fn of(&self, index: usize) -> Option<Lease> {
        self.leases
            .binary_search_by_key(&index, |(i, _)| *i)
            .ok()
            .map(|at| self.leases[at].1)
    }

    /// Whether they cover every entry of their list, none run out at `now`.
    pub fn all_leased(&self, now: i64) -> bool {
        self.body > 0
            && self.leases.len() == self.entries
            && self.leases.iter().all(|(_, l)| lease_holds(Some(*l), now))
    }
}

/// The value `bytes` with the entries at the given indices taking the
/// given leases (the others keeping theirs), its entries' bytes copied
/// as they are. `entries`: how many entries it holds, if the caller
/// decoded it (else a value without leases is decoded to count them). An
/// index past the list's end, or a count its front does not hold, is an
/// error.
pub fn remark(
    bytes: &[u8],
    entries: Option<usize>,
    marks: &[(usize, Lease)],
) -> Result<Vec<u8>, RecordError> {
    let front = leases(bytes)?;
    let entries = match (front.body > 0, entries) {
        (true, Some(n)) if n != front.entries => return Err(RecordError::ListLeases),
        (true, _) => front.entries,
        (false, Some(n)) => n,
        (false, None) => decode_body(bytes)?.entries.len(),
    };
    let mut all: std::collections::BTreeMap<usize, Lease> = front.leases.into_iter().collect();
    for &(i, lease) in marks {
        if i >= entries {
            return Err(RecordError::ListLeases);
        }
        all.insert(i, lease);
    }
    let all: Vec<(usize, Lease)> = all.into_iter().collect();
    Ok(with_leases(entries, &all, &bytes[front.body..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;
    use crate::record::{Listed, SQUEEZED, StoredReason};

    fn list(n: usize) -> DueList {
        DueList {
            entries: (0..n)
                .map(|i| Listed {
                    score: 0.5,
                    rank: [1; keys::RANK_BYTES],
                    url: format!("https://a.example/catalog/item-{i}.html"),
                    reason: StoredReason::New,
                    meta: false,
                    due: 1_700_000_000,
                    lease: None,
                    legacy: false,
                })
                .collect(),
        }
    }

    #[test]
    fn leases_go_in_front_of_the_compressed_entries_and_round_trip() {
        let plain = list(32);
        let bare = encode(&plain);
        assert_eq!(bare[0], SQUEEZED, "no lease: the layout-6 value");
        assert_eq!(decode(&bare).unwrap(), plain);
        assert!(!all_leased(&bare, 0));

        let mut leased = plain.clone();
        leased.entries[0].lease = Some((7, 1_000));
        leased.entries[31].lease = Some((u64::MAX, -5));
        let bytes = encode(&leased);
        assert_eq!(bytes[0], MARKED);
        assert!(bytes.ends_with(&bare), "the entries' bytes as they were");
        assert_eq!(decode(&bytes).unwrap(), leased);
        let front = leases(&bytes).unwrap();
        assert_eq!(front.entries, 32);
        assert_eq!(front.leases, [(0, (7, 1_000)), (31, (u64::MAX, -5))]);
    }

    #[test]
    fn a_lease_rewrites_the_front_only_and_a_list_wholly_leased_is_known_from_it() {
        let bare = encode(&list(3));
        let once = remark(&bare, None, &[(1, (1, 500))]).unwrap();
        // The count a caller read saves decoding the entries; one the front
        // does not hold is an error.
        assert_eq!(remark(&bare, Some(3), &[(1, (1, 500))]).unwrap(), once);
        assert!(matches!(
            remark(&once, Some(4), &[(0, (2, 600))]),
            Err(RecordError::ListLeases)
        ));
        assert!(once.ends_with(&bare));
        assert!(!all_leased(&once, 0));
        let all = remark(&once, None, &[(0, (2, 600)), (2, (3, 700))]).unwrap();
        assert!(all.ends_with(&bare));
        let back = decode(&all).unwrap();
        let got: Vec<_> = back.entries.iter().map(|e| e.lease).collect();
        assert_eq!(got, [Some((2, 600)), Some((1, 500)), Some((3, 700))]);
        assert!(all_leased(&all, 499));
        assert!(!all_leased(&all, 500), "one ran out");
        // Marked again: the newer lease replaces the one that ran out.
        let again = remark(&all, None, &[(1, (4, 900))]).unwrap();
        assert_eq!(decode(&again).unwrap().entries[1].lease, Some((4, 900)));
        assert!(matches!(
            remark(&bare, None, &[(3, (1, 1))]),
            Err(RecordError::ListLeases)
        ));
    }

    /// The bytes of a marked list, as the fuzz corpus seed
    /// `fuzz/corpus/record/due-list-marked` holds them: the format stays
    /// readable.
    #[test]
    fn a_marked_list_of_format_7_reads_as_legacy_entries() {
        let hex = "c602010105900107020000003f01010101010101010101011468747470733a2f2f612e6578616d706c652f783001000000003f01010101010101010101011468747470733a2f2f612e6578616d706c652f78310100";
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let list = decode(&bytes).unwrap();
        let got: Vec<_> = list
            .entries
            .iter()
            .map(|e| (e.url.as_str(), e.reason, e.meta, e.lease))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "https://a.example/x0",
                    StoredReason::LastmodNewer,
                    false,
                    None
                ),
                (
                    "https://a.example/x1",
                    StoredReason::LastmodNewer,
                    false,
                    Some((5, 144))
                ),
            ]
        );
        // A legacy list (only the layout migration reads them): its
        // entries' due time is not known.
        assert!(list.entries.iter().all(|e| e.legacy && e.due == i64::MIN));
    }

    #[test]
    fn a_decoded_list_is_kept_while_its_entries_bytes_stay_the_same() {
        let cache = Mutex::new(Decoded::default());
        let get = |key: &[u8], value: &[u8]| {
            let value = crate::kv::Bytes::copy_from_slice(value);
            let front = leases(&value)?;
            Ok::<_, RecordError>((decoded(&cache, key, &value, &front)?, front))
        };
        let bare = encode(&list(3));
        let (first, front) = get(b"k", &bare).unwrap();
        assert_eq!(*first, list(3).entries);
        assert!(front.leases.is_empty());
        // Marked: the same entries, not decoded again, with the new front.
        let marked = remark(&bare, Some(3), &[(1, (4, 900))]).unwrap();
        let (again, front) = get(b"k", &marked).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!((front.of(0), front.of(1)), (None, Some((4, 900))));
        // A front read from other, longer bytes: an error, not a panic.
        let short = crate::kv::Bytes::copy_from_slice(&marked[..front.body - 1]);
        assert!(decoded(&cache, b"s", &short, &front).is_err());
        // Other entries under the same key, or the same under another key:
        // decoded.
        let (other, _) = get(b"k", &encode(&list(4))).unwrap();
        assert_eq!(*other, list(4).entries);
        let (elsewhere, _) = get(b"j", &bare).unwrap();
        assert!(!Arc::ptr_eq(&first, &elsewhere));
        // A front that counts other entries than the body holds: an error,
        // cached body or not.
        let mut wrong = vec![MARKED, 5, 1, 0, 1, 1];
        wrong.extend(encode(&list(4)));
        assert!(get(b"k", &wrong).is_err());
        // Bounded in lists, and in bytes: it starts over when full.
        for i in 0..DECODED_LISTS + 10 {
            get(&i.to_be_bytes(), &bare).unwrap();
        }
        assert!(cache.lock().unwrap().lists.len() <= DECODED_LISTS);
        let mut long = list(32);
        for e in &mut long.entries {
            e.url.push_str(&"x".repeat(2_000));
        }
        let long = encode(&long);
        for i in 0..200u32 {
            get(&i.to_be_bytes(), &long).unwrap();
            let cache = cache.lock().unwrap();
            let sizes: usize = cache.lists.values().map(|l| l.size).sum();
            assert_eq!(cache.bytes, sizes);
            assert!(cache.bytes <= DECODED_BYTES);
        }
    }

    #[test]
    fn a_corrupt_front_is_an_error_never_a_panic() {
        let mut leased = list(4);
        leased.entries[2].lease = Some((9, 99));
        let bytes = encode(&leased);
        for cut in 0..bytes.len() {
            let _ = decode(&bytes[..cut]);
            let _ = all_leased(&bytes[..cut], 0);
            let _ = remark(&bytes[..cut], None, &[(0, (1, 1))]);
        }
        // A lease of an entry the list does not hold, more leases than
        // entries, and a front in front of a front.
        for bad in [
            vec![MARKED, 4, 1, 4, 9, 99],
            vec![MARKED, 1, 2, 0, 1, 1, 0, 1, 1],
            vec![MARKED, 0, 0, MARKED, 0, 0],
        ] {
            let mut value = bad.clone();
            value.extend(encode(&list(4)));
            assert!(decode(&value).is_err(), "{bad:?}");
        }
        // A front that counts other entries than the list holds.
        let mut value = vec![MARKED, 5, 1, 0, 1, 1];
        value.extend(encode(&list(4)));
        assert!(matches!(decode(&value), Err(RecordError::ListLeases)));
    }
}
