//! Where a URL record is: in its page (`p`, [`crate::page`]), or in a key
//! of its own (`u`) that stands for the page's copy.
//!
//! An ingest reads and writes many URLs of a site at once, so it writes
//! pages: one sled key for up to [`PAGE_CAP`](crate::page::PAGE_CAP)
//! records ([`Pages`], through [`UrlWrites::paged`](crate::writes::UrlWrites::paged)).
//! A crawler's lease, completion or notification touches a few URLs spread
//! over many pages; rewriting a page of up to 64 records for each would
//! write up to 64 times the bytes, so those write the record under a key
//! of its own, which wins over the page's copy until the next ingest of
//! the URL folds it back into its page (and removes the key).
//!
//! Readers see one record per URL either way: [`record`] looks for the key
//! of its own first, and [`UrlEntries`] merges both in URL order.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::StoreError;
use crate::keys;
use crate::kv::{Batch, Iter, Kv};
use crate::page::{self, Entry, origin};
use crate::record::RecordError;

/// Whether `url` can be in a page: its origin ends in `/` (every
/// normalised URL's does), so that the origin's page keys are a range no
/// other origin's fall in. Any other is kept under a key of its own.
fn pageable(url: &str) -> bool {
    origin(url).ends_with('/')
}

/// The key of the last page of `url`'s origin: `p` ‖ origin ‖ 0xff.
fn last_page(url: &str) -> Vec<u8> {
    let mut key = keys::page(origin(url));
    key.push(0xff);
    key
}

/// The page that holds `url` (or would): the first page key from `url`'s
/// on within its origin ([`page`](crate::page) keys pages by their last
/// URL), with its bytes.
fn page_of(kv: &Kv, url: &str) -> Result<Option<(crate::kv::Bytes, crate::kv::Bytes)>, StoreError> {
    let mut end = last_page(url);
    end.push(0);
    kv.range(keys::page(url)..end).next().transpose()
}

/// The URL and record of a key of its own (`u` ‖ URL).
fn own_entry(key: &[u8], value: &[u8]) -> Entry {
    let url = String::from_utf8_lossy(key.get(1..).unwrap_or_default()).into_owned();
    (url, value.to_vec())
}

/// A page that does not decode, as a record error naming it.
fn corrupt_page(key: &[u8], e: page::PageError) -> StoreError {
    StoreError::Record {
        key: format!(
            "page {}",
            String::from_utf8_lossy(key.get(1..).unwrap_or_default())
        ),
        source: RecordError::Page(e).into(),
    }
}

/// The encoded record of `url`: its own key's, else its page's.
pub(crate) fn record(kv: &Kv, url: &str) -> Result<Option<Vec<u8>>, StoreError> {
    if let Some(own) = kv.get(keys::url(url))? {
        return Ok(Some(own.to_vec()));
    }
    if !pageable(url) {
        return Ok(None);
    }
    let Some((key, bytes)) = page_of(kv, url)? else {
        return Ok(None);
    };
    match page::find(&bytes, url) {
        Ok(found) => Ok(found),
        Err(e) => Err(corrupt_page(&key, e)),
    }
}

/// The URL records (encoded) from URL `from` (included) to `to`
/// (excluded), in URL order, from keys of their own and pages merged (a
/// key of its own wins). A page that does not decode is an error
/// ([`StoreError::Record`]) and the scan goes on after it.
pub(crate) struct UrlEntries<'k> {
    from: Vec<u8>,
    to: Vec<u8>,
    own: Iter<'k>,
    pages: Iter<'k>,
    page: std::vec::IntoIter<Entry>,
    pages_done: bool,
    own_done: bool,
    /// The page read last was keyed at or after `to`: none after it holds
    /// a URL before `to`.
    past: bool,
    next_own: Option<Entry>,
    next_paged: Option<Entry>,
}

/// [`UrlEntries`] of `kv` from `from` to `to` (URL bytes).
pub(crate) fn entries<'k>(kv: &'k Kv, from: &[u8], to: &[u8]) -> UrlEntries<'k> {
    let with = |prefix: u8, url: &[u8]| {
        let mut k = vec![prefix];
        k.extend_from_slice(url);
        k
    };
    // Pages are keyed by their last URL: the first key from `from` on is
    // the page that holds it.
    let mut all = vec![keys::PAGE];
    all.push(0xff);
    UrlEntries {
        from: from.to_vec(),
        to: to.to_vec(),
        own: kv.range(with(keys::URL, from)..with(keys::URL, to)),
        pages: kv.range(with(keys::PAGE, from)..all),
        page: Vec::new().into_iter(),
        pages_done: false,
        own_done: false,
        past: false,
        next_own: None,
        next_paged: None,
    }
}

impl UrlEntries<'_> {
    /// The next entry of a page within the range.
    fn paged(&mut self) -> Option<Result<Entry, StoreError>> {
        loop {
            if self.pages_done {
                return None;
            }
            for e in self.page.by_ref() {
                if e.0.as_bytes() < self.from.as_slice() {
                    continue;
                }
                if e.0.as_bytes() >= self.to.as_slice() {
                    self.pages_done = true;
                    return None;
                }
                return Some(Ok(e));
            }
            if self.past {
                self.pages_done = true;
                return None;
            }
            match self.pages.next()? {
                Ok((key, bytes)) => {
                    self.past = key.get(1..).is_some_and(|k| k >= self.to.as_slice());
                    match page::decode(&bytes) {
                        Ok(es) => self.page = es.into_iter(),
                        Err(e) => return Some(Err(corrupt_page(&key, e))),
                    }
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl Iterator for UrlEntries<'_> {
    type Item = Result<Entry, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next_own.is_none() && !self.own_done {
            // (sled's iterator is not fused: polled after its end, it
            // would look again and find keys written since.)
            match self.own.next() {
                Some(Ok((k, v))) => self.next_own = Some(own_entry(&k, &v)),
                Some(Err(e)) => return Some(Err(e)),
                None => self.own_done = true,
            }
        }
        if self.next_paged.is_none() {
            match self.paged() {
                Some(Ok(e)) => self.next_paged = Some(e),
                Some(Err(e)) => return Some(Err(e)),
                None => {}
            }
        }
        let order = match (&self.next_own, &self.next_paged) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(o), Some(p)) => o.0.cmp(&p.0),
        };
        if order.is_eq() {
            self.next_paged = None; // the page's copy is stale
        }
        let own_first = order.is_le();
        let next = if own_first {
            self.next_own.take()
        } else {
            self.next_paged.take()
        };
        next.map(Ok)
    }
}

/// Pages a thread encodes at least ([`crate::parallel::map`]): a page of up
/// to 64 records takes tens of microseconds.
const PAGES_PER_THREAD: usize = 16;

/// A page read for writing.
#[derive(Debug)]
struct Loaded {
    /// Its key (`p` ‖ its last URL, or [`last_page`] of an origin with no
    /// page yet).
    key: Vec<u8>,
    /// The smallest page key (`p` ‖ URL) known to belong in this page: its
    /// first URL's, or a smaller one a seek found no page key between.
    covered_from: Vec<u8>,
    entries: BTreeMap<String, Vec<u8>>,
    /// Keys of their own in this page's range, as one scan read them.
    own: OwnWindow,
    dirty: bool,
    /// It did not decode: left as it is for `stats --repair`, and the
    /// records of its range go under keys of their own.
    corrupt: bool,
}

impl Loaded {
    /// Whether `url` belongs in this page: its page key lies from
    /// `covered_from` to the page's key, where no other page key lies.
    fn covers(&self, url: &str) -> bool {
        let at = url.as_bytes();
        self.covered_from[1..] <= *at && *at <= self.key[1..]
    }
}

/// Keys of their own a window reads at most: what a batch holds of them
/// per page, whatever a page's range has (a layout-5 store has all of an
/// origin's records under keys of their own, in the range of one page).
pub(crate) const OWN_WINDOW: usize = 128;

/// The records under keys of their own (`u`) of part of a page's range:
/// from `lo` (included) to `hi` (excluded), both `u` keys, read with one
/// range scan, not a point read per URL. A URL outside it moves it: a new
/// scan from the URL, up to [`OWN_WINDOW`] keys or the end of the page's
/// range. What it holds is what the store holds (a batch writes nothing
/// before it is applied), so a window that moves forgets the last.
#[derive(Debug)]
struct OwnWindow {
    lo: Vec<u8>,
    hi: Vec<u8>,
    /// Where the page's range ends: `u` ‖ the page key's URL ‖ 0.
    end: Vec<u8>,
    records: BTreeMap<String, Vec<u8>>,
}

impl OwnWindow {
    /// An empty window of the page keyed `page` (`p` ‖ URL).
    fn of_page(page: &[u8]) -> OwnWindow {
        let mut end = vec![keys::URL];
        end.extend_from_slice(&page[1..]);
        end.push(0);
        OwnWindow {
            lo: end.clone(),
            hi: end.clone(),
            end,
            records: BTreeMap::new(),
        }
    }

    /// Moves the window to hold `url`, if it does not (`url` is in the
    /// page's range).
    fn cover(&mut self, kv: &Kv, url: &str) -> Result<(), StoreError> {
        let at = url.as_bytes();
        if self.lo[1..] <= *at && *at < self.hi[1..] {
            return Ok(());
        }
        let from = keys::url(url);
        self.records.clear();
        self.hi = self.end.clone();
        for item in kv.range(from.clone()..self.end.clone()) {
            let (k, v) = item?;
            if self.records.len() == OWN_WINDOW {
                self.hi = k.to_vec();
                break;
            }
            let (url, record) = own_entry(&k, &v);
            self.records.insert(url, record);
        }
        self.lo = from;
        Ok(())
    }
}

/// Where [`Pages::set`] put a record.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Placed {
    /// In its page. `own`: the URL has a key of its own, which the caller
    /// removes so that the page's copy stands.
    Page { own: bool },
    /// Not in a page (its page does not decode, or the URL cannot be in
    /// one): the record given back goes under a key of its own.
    OwnKey(Option<Vec<u8>>),
}

/// The pages one batch reads and changes, by key: each read once, changed
/// in memory, and written (cut when they grew past a page's size) by
/// [`Pages::write`]. The caller holds the store's write lock throughout.
#[derive(Debug, Default)]
pub(crate) struct Pages {
    /// The loaded pages, in the order they were read.
    loaded: Vec<Loaded>,
    /// Their places in `loaded`, by key.
    index: BTreeMap<Vec<u8>, usize>,
    /// The place of the page located last. A batch goes in URL order, so
    /// the next URL is most often in the same page: found without a
    /// search.
    last: Option<usize>,
}

impl Pages {
    /// The page `url` belongs in, read if it was not yet.
    fn locate(&mut self, kv: &Kv, url: &str) -> Result<&mut Loaded, StoreError> {
        let at = match self.last.filter(|&i| self.loaded[i].covers(url)) {
            Some(i) => i,
            None => self.find(kv, url)?,
        };
        self.last = Some(at);
        let page = &mut self.loaded[at];
        page.own.cover(kv, url)?;
        Ok(page)
    }

    /// The place in `loaded` of the page `url` belongs in, read if it was
    /// not yet.
    fn find(&mut self, kv: &Kv, url: &str) -> Result<usize, StoreError> {
        let key = keys::page(url);
        // A loaded page covers `url` if it is the first from `url` on and
        // covers it: no page key lies between.
        let hit = self
            .index
            .range(key.clone()..)
            .next()
            .map(|(_, &i)| i)
            .filter(|&i| key >= self.loaded[i].covered_from);
        if let Some(i) = hit {
            return Ok(i);
        }
        let (k, bytes) = match page_of(kv, url)? {
            Some((k, bytes)) => (k.to_vec(), Some(bytes)),
            None => (last_page(url), None),
        };
        if let Some(&i) = self.index.get(&k) {
            let l = &mut self.loaded[i];
            l.covered_from = l.covered_from.clone().min(key);
            return Ok(i);
        }
        let mut corrupt = false;
        let entries: BTreeMap<String, Vec<u8>> = match bytes.map(|b| page::decode(&b)) {
            Some(Ok(entries)) => entries.into_iter().collect(),
            Some(Err(e)) => {
                tracing::warn!(error = %corrupt_page(&k, e), "corrupt page left for stats --repair");
                corrupt = true;
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        };
        let first = entries.keys().next().map(|u| keys::page(u));
        let covered_from = first.map_or(key.clone(), |f| f.min(key));
        let i = self.loaded.len();
        self.index.insert(k.clone(), i);
        self.loaded.push(Loaded {
            own: OwnWindow::of_page(&k),
            key: k,
            covered_from,
            entries,
            dirty: false,
            corrupt,
        });
        Ok(i)
    }

    /// The encoded record of `url`: its own key's, else its page's.
    pub(crate) fn read(&mut self, kv: &Kv, url: &str) -> Result<Option<Cow<'_, [u8]>>, StoreError> {
        if !pageable(url) {
            return Ok(kv.get(keys::url(url))?.map(|own| Cow::Owned(own.to_vec())));
        }
        let page = self.locate(kv, url)?;
        Ok(page
            .own
            .records
            .get(url)
            .or_else(|| page.entries.get(url))
            .map(|r| Cow::Borrowed(r.as_slice())))
    }

    /// Whether the record of `url` is under a key of its own that its
    /// page could take back (a completion wrote it there).
    pub(crate) fn under_own_key(&mut self, kv: &Kv, url: &str) -> Result<bool, StoreError> {
        if !pageable(url) {
            return Ok(false);
        }
        let page = self.locate(kv, url)?;
        Ok(!page.corrupt && page.own.records.contains_key(url))
    }

    /// Sets (or with `None` removes) the record of `url` in its page, or
    /// says where it goes instead.
    pub(crate) fn set(
        &mut self,
        kv: &Kv,
        url: &str,
        record: Option<Vec<u8>>,
    ) -> Result<Placed, StoreError> {
        if !pageable(url) {
            return Ok(Placed::OwnKey(record));
        }
        let page = self.locate(kv, url)?;
        if page.corrupt {
            return Ok(Placed::OwnKey(record));
        }
        let own = page.own.records.contains_key(url);
        let changed = match record {
            Some(r) => {
                page.entries.insert(url.to_string(), r);
                true
            }
            None => page.entries.remove(url).is_some(),
        };
        page.dirty |= changed;
        Ok(Placed::Page { own })
    }

    /// The most records under keys of their own one loaded page holds.
    #[cfg(test)]
    pub(crate) fn most_own_held(&self) -> usize {
        let held = self.loaded.iter().map(|l| l.own.records.len());
        held.max().unwrap_or(0)
    }

    /// Adds the changed pages to `batch`: an emptied page removed, one
    /// grown too big cut into pages keyed by their last URLs (the last
    /// keeps the page's key).
    pub(crate) fn write(self, batch: &mut Batch) {
        let dirty: Vec<Loaded> = self
            .loaded
            .into_iter()
            .filter(|page| page.dirty && !page.corrupt)
            .collect();
        // Encoding (zstd) is the work, spread over the cores; an emptied
        // page comes back with no parts.
        let written = crate::parallel::map(dirty, PAGES_PER_THREAD, |page| {
            let key = page.key;
            if page.entries.is_empty() {
                // Emptied: removed.
                return (key, Vec::new());
            }
            let entries: Vec<Entry> = page.entries.into_iter().collect();
            let parts = page::split(&entries);
            let n = parts.len();
            let parts: Vec<(Vec<u8>, Vec<u8>)> = parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| {
                    let at = if i + 1 == n {
                        key.clone()
                    } else {
                        keys::page(&part[part.len() - 1].0)
                    };
                    (at, page::encode(part))
                })
                .collect();
            (key, parts)
        });
        for (key, parts) in written {
            if parts.is_empty() {
                batch.remove(key);
            }
            for (at, value) in parts {
                batch.insert(at, value);
            }
        }
    }
}

/// Moves up to `most` records under keys of their own, from URL `from`
/// on, back into their pages, in one batch: each record as it is (the page
/// takes the key's copy, and the key goes), so that no reader sees a
/// change (applied write by write, as on a store of several partitions, a
/// reader between two writes sees both copies, the same record). A record
/// whose page does not decode, or that cannot be in a page, keeps its key.
/// Returns how many moved, and the URL to go on from (`None`: none is left
/// past them). The caller holds the store's write lock.
pub(crate) fn fold_own_keys(
    kv: &Kv,
    from: &[u8],
    most: usize,
) -> Result<(u64, Option<Vec<u8>>), StoreError> {
    let mut own = Vec::with_capacity(most.min(4096));
    let mut next = None;
    for item in kv.range([&[keys::URL][..], from].concat()..vec![keys::URL + 1]) {
        let (k, v) = item?;
        if own.len() == most {
            next = Some(k[1..].to_vec());
            break;
        }
        own.push(own_entry(&k, &v));
    }
    let mut pages = Pages::default();
    let mut folded = Vec::new();
    for (url, record) in own {
        if let Placed::Page { own: true } = pages.set(kv, &url, Some(record))? {
            folded.push(url);
        }
    }
    // The pages first, then the keys: a store of several partitions
    // applies a batch write by write, and a reader between two of them
    // finds both copies (the key's wins), never neither.
    let mut batch = Batch::default();
    pages.write(&mut batch);
    for url in &folded {
        batch.remove(keys::url(url));
    }
    kv.apply_batch(batch)?;
    Ok((folded.len() as u64, next))
}

/// Removes every page that does not decode (what `stats --check` named);
/// how many. The records it held are lost (they could not be read); the
/// due entries and counts that named them are rebuilt after this by
/// [`Store::repair`](crate::Store::repair).
pub(crate) fn remove_corrupt(kv: &Kv) -> Result<u64, StoreError> {
    let mut batch = Batch::default();
    let mut removed = 0;
    for item in kv.scan_prefix([keys::PAGE]) {
        let (key, bytes) = item?;
        if let Err(e) = page::decode(&bytes) {
            tracing::warn!(error = %corrupt_page(&key, e), "corrupt page removed");
            batch.remove(key);
            removed += 1;
        }
    }
    kv.apply_batch(batch)?;
    Ok(removed)
}
