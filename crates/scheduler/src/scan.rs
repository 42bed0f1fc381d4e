//! The queue order, read: due entries one after the other as a lease (or
//! a peek) takes them (docs/queue.md).
//!
//! Within one urgency class (or classes served together) the order is: due
//! time (the longest waiting first), queue, host, class, the policy's
//! score (highest first), the sitemap's rank, the URL. Each lane (a
//! queue's URLs of one host and class, [`keys::lane`]) holds its entries in
//! that order from the due time on, and its head ([`keys::head`]) says when
//! its first entry is due. A [`Scan`] merges the lanes: it opens a lane
//! when its head comes up,
//! reads its entries due at the time the merge has reached, then puts the
//! lane back at the due time of its next entry. A lane whose queue or host
//! can be given no more URLs is closed and read no further, so one busy
//! host costs a lease a run or two, not its whole backlog.
//!
//! What to take is the caller's ([`Taker`]): the scan offers each due
//! entry that no lease holds, in order, and stops when the taker says so.
//! Because the order does not depend on what is taken, and a taker decides
//! each entry from the entries before it, a lease of `k` URLs hands out the
//! first `k` of what a lease of `n ≥ k` would, under the same limits.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::due_list::{Entries, Leases};
use crate::error::StoreError;
use crate::keys;
use crate::kv::Iter;
use crate::partition::Partition;
use crate::policy::Urgency;
use crate::record::{Listed, lease_holds};

/// A due entry a scan offers: where it is, and what it holds.
pub(crate) struct Found<'a> {
    /// The partition it is in.
    pub partition: usize,
    /// Its class, queue and host (its lane).
    pub class: Urgency,
    pub queue: &'a str,
    pub host: &'a str,
    /// The run that holds it, as read (key and value), its entries, and
    /// its place among them.
    pub run: &'a crate::kv::Bytes,
    pub value: &'a crate::kv::Bytes,
    pub entries: &'a Entries,
    pub index: usize,
    /// A lease it held that ran out.
    pub lease: Option<crate::due_list::Lease>,
}

impl Found<'_> {
    /// The entry.
    pub(crate) fn entry(&self) -> &Listed {
        &self.entries[self.index]
    }
}

/// What a [`Taker`] makes of an entry offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go on with the lane.
    Next,
    /// The lane gives no more: its queue or host has its share.
    CloseLane,
    /// Nothing more is taken: the scan ends.
    Stop,
}

/// Decides, entry after entry, what a scan takes.
pub(crate) trait Taker {
    /// Whether the lane of `queue` and `host` (in partition `partition`)
    /// may give anything at all (asked before it is read).
    fn lane(&mut self, partition: usize, queue: &str, host: &str) -> Result<bool, StoreError>;
    /// The next due entry in the queue order.
    fn offer(&mut self, found: Found<'_>) -> Result<Verdict, StoreError>;
    /// The queues that may still be given URLs, once no other queue may
    /// (`None` while any may): the scan then reads their lanes only.
    fn only_queues(&self) -> Option<Vec<String>>;
}

/// Which lanes a scan reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lanes<'q> {
    /// Every lane with an entry due.
    All,
    /// The lanes of one queue.
    Queue(&'q str),
}

/// A lane being read: its runs from the first, and where it is.
struct Cursor<'s> {
    partition: usize,
    class: Urgency,
    queue: String,
    host: String,
    /// queue ‖ NUL ‖ host: what orders lanes due at the same time.
    order: Vec<u8>,
    runs: Iter<'s>,
    run: Option<OpenRun>,
}

/// A run being read.
struct OpenRun {
    key: crate::kv::Bytes,
    value: crate::kv::Bytes,
    entries: Entries,
    front: Leases,
    index: usize,
}

/// A lane's place in the merge: the due time of its next entry, then
/// queue ‖ NUL ‖ host, then its class; then the partition that holds it
/// (a host's lanes are in one partition: it orders nothing).
type LaneOrder = (i64, Vec<u8>, Urgency, usize);

/// A merge of lanes in the queue order, for one class (or several served
/// together) at `now`, over the partitions of a store.
pub(crate) struct Scan<'s, 'c> {
    parts: &'s [Partition],
    classes: &'c [Urgency],
    now: i64,
}

impl<'s, 'c> Scan<'s, 'c> {
    /// The entries of `classes` due at `now`, merged.
    pub(crate) fn new(parts: &'s [Partition], classes: &'c [Urgency], now: i64) -> Scan<'s, 'c> {
        Scan {
            parts,
            classes,
            now,
        }
    }

    /// The heads of the lanes to read, in order.
    fn heads(&self, lanes: Lanes<'_>) -> Result<HeadSource<'s>, StoreError> {
        match lanes {
            Lanes::All => Ok(HeadSource::Index(
                self.classes
                    .iter()
                    .flat_map(|&class| {
                        let c = class as u8;
                        self.parts
                            .iter()
                            .enumerate()
                            .filter(|(_, part)| part.serving())
                            .map(move |(p, part)| {
                                let it = part
                                    .kv
                                    .range(keys::heads_of(c)..keys::heads_due(c, self.now));
                                (class, p, it, None)
                            })
                    })
                    .collect(),
            )),
            Lanes::Queue(queue) => {
                let mut found = Vec::new();
                for &class in self.classes {
                    found.extend(self.queue_heads(queue, class)?);
                }
                found.sort();
                Ok(HeadSource::Listed(found.into_iter()))
            }
        }
    }

    /// The heads of the lanes of `queue` in `class` due at `now`, read
    /// from the lanes themselves (two seeks a host of the queue), in every
    /// partition.
    fn queue_heads(&self, queue: &str, class: Urgency) -> Result<Vec<LaneOrder>, StoreError> {
        let mut found = Vec::new();
        for partition in 0..self.parts.len() {
            if self.parts[partition].serving() {
                found.extend(self.queue_heads_in(partition, queue, class)?);
            }
        }
        Ok(found)
    }

    /// [`Scan::queue_heads`] in one partition.
    fn queue_heads_in(
        &self,
        partition: usize,
        queue: &str,
        class: Urgency,
    ) -> Result<Vec<LaneOrder>, StoreError> {
        let kv = &self.parts[partition].kv;
        // `d` ‖ queue ‖ NUL: the prefix of every lane of the queue.
        let mut members = keys::lane(queue, "", 0);
        members.truncate(members.len() - 2);
        let mut end = members.clone();
        end.push(0xff);
        let mut found = Vec::new();
        let mut from = members;
        while let Some((key, _)) = kv.range(from.clone()..end.clone()).next().transpose()? {
            let Some(run) = keys::parse_run(&key) else {
                break;
            };
            let host = run.host.to_string();
            let lane = keys::lane(queue, &host, class as u8);
            if let Some(item) = kv
                .range(lane.clone()..keys::lane_due(&lane, self.now))
                .next()
            {
                let (key, _) = item?;
                if let Some(run) = keys::parse_run(&key) {
                    let mut order = queue.as_bytes().to_vec();
                    order.push(0);
                    order.extend_from_slice(host.as_bytes());
                    found.push((run.first.due, order, class, partition));
                }
            }
            // Past every lane of this host in the queue: `d` ‖ queue ‖ NUL
            // ‖ host ‖ 1.
            from = keys::lane(queue, &host, 0);
            from.truncate(from.len() - 2);
            from.push(1);
        }
        Ok(found)
    }

    /// The heads of the lanes of `queues` from `from` on (none when `from`
    /// is `None`: every head was read).
    fn narrowed(
        &self,
        queues: &[String],
        from: Option<LaneOrder>,
    ) -> Result<HeadSource<'s>, StoreError> {
        let mut found = Vec::new();
        if let Some(from) = from {
            for queue in queues {
                for &class in self.classes {
                    let heads = self.queue_heads(queue, class)?;
                    found.extend(heads.into_iter().filter(|head| *head >= from));
                }
            }
        }
        found.sort();
        Ok(HeadSource::Listed(found.into_iter()))
    }

    /// Offers `taker` every due entry of the lanes `lanes` that no lease
    /// holds, in the queue order, until it says stop or none is left.
    pub(crate) fn run(&self, lanes: Lanes<'_>, taker: &mut impl Taker) -> Result<(), StoreError> {
        let mut heads = self.heads(lanes)?;
        let mut next_head = heads.next()?;
        let mut cursors: Vec<Option<Cursor<'s>>> = Vec::new();
        let mut heap: BinaryHeap<Reverse<(LaneOrder, usize)>> = BinaryHeap::new();
        let mut narrowed = matches!(lanes, Lanes::Queue(_));
        loop {
            // Once the taker can give URLs to a few queues only, the other
            // lanes' heads are not read: those of its queues from the next
            // head on are the heads it would have been offered.
            if !narrowed && let Some(queues) = taker.only_queues() {
                narrowed = true;
                heads = self.narrowed(&queues, next_head.take())?;
                next_head = heads.next()?;
            }
            // Open every lane whose head comes before the lane on top.
            while let Some(head) = next_head.take() {
                if let Some(Reverse((top, _))) = heap.peek()
                    && head > *top
                {
                    next_head = Some(head);
                    break;
                }
                let (_, order, class, partition) = head;
                next_head = heads.next()?;
                let Some((queue, host)) = split_order(&order) else {
                    continue;
                };
                if !taker.lane(partition, queue, host)? {
                    continue;
                }
                let lane = keys::lane(queue, host, class as u8);
                let mut cursor = Cursor {
                    partition,
                    class,
                    queue: queue.to_string(),
                    host: host.to_string(),
                    order,
                    runs: self.parts[partition]
                        .kv
                        .range(lane.clone()..keys::lane_due(&lane, self.now)),
                    run: None,
                };
                if let Some(due) = self.current(&mut cursor)? {
                    let at = (due, cursor.order.clone(), class, partition);
                    heap.push(Reverse((at, cursors.len())));
                    cursors.push(Some(cursor));
                }
            }
            let Some(Reverse(((due, _, _, _), at))) = heap.pop() else {
                return Ok(());
            };
            let Some(mut cursor) = cursors[at].take() else {
                continue;
            };
            // The lane's entries due then, until nothing more is due in it.
            while let Some(entry_due) = self.current(&mut cursor)? {
                if entry_due != due {
                    let next = (
                        entry_due,
                        cursor.order.clone(),
                        cursor.class,
                        cursor.partition,
                    );
                    heap.push(Reverse((next, at)));
                    cursors[at] = Some(cursor);
                    break;
                }
                let run = cursor.run.as_ref().expect("current");
                let found = Found {
                    partition: cursor.partition,
                    class: cursor.class,
                    queue: &cursor.queue,
                    host: &cursor.host,
                    run: &run.key,
                    value: &run.value,
                    entries: &run.entries,
                    index: run.index,
                    lease: run.front.of(run.index),
                };
                let verdict = taker.offer(found)?;
                if let Some(run) = cursor.run.as_mut() {
                    run.index += 1;
                }
                match verdict {
                    Verdict::Next => {}
                    Verdict::CloseLane => break,
                    Verdict::Stop => return Ok(()),
                }
            }
        }
    }

    /// The due time of the entry `cursor` is at, moving it past entries a
    /// lease holds (and runs all of whose entries one holds); `None` when
    /// the lane has nothing more due. A run that does not decode is
    /// passed over (logged; `stats --check` names it).
    fn current(&self, cursor: &mut Cursor<'s>) -> Result<Option<i64>, StoreError> {
        loop {
            if let Some(run) = cursor.run.as_mut() {
                while run.index < run.entries.len() {
                    let entry = &run.entries[run.index];
                    if entry.due > self.now {
                        return Ok(None);
                    }
                    if lease_holds(run.front.of(run.index), self.now) {
                        run.index += 1;
                        continue;
                    }
                    return Ok(Some(entry.due));
                }
            }
            cursor.run = None;
            let Some(item) = cursor.runs.next() else {
                return Ok(None);
            };
            let (key, value) = item?;
            let read = crate::due_list::leases(&value).and_then(|front| {
                if front.all_leased(self.now) {
                    return Ok(None);
                }
                let entries = self.parts[cursor.partition].decoded_list(&key, &value, &front)?;
                Ok(Some((entries, front)))
            });
            match read {
                Ok(Some((entries, front))) => {
                    cursor.run = Some(OpenRun {
                        key,
                        value,
                        entries,
                        front,
                        index: 0,
                    });
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, "corrupt run skipped (stats --check names its URLs)");
                }
            }
        }
    }
}

/// queue ‖ NUL ‖ host, split.
fn split_order(order: &[u8]) -> Option<(&str, &str)> {
    let at = order.iter().position(|&b| b == 0)?;
    Some((
        std::str::from_utf8(&order[..at]).ok()?,
        std::str::from_utf8(&order[at + 1..]).ok()?,
    ))
}

/// The heads a scan merges, in order.
enum HeadSource<'s> {
    /// The head index of each class in each partition, up to the heads
    /// due at `now`, each with the head it read next.
    Index(Vec<(Urgency, usize, Iter<'s>, Option<LaneOrder>)>),
    /// The lanes of one queue, sorted.
    Listed(std::vec::IntoIter<LaneOrder>),
}

impl HeadSource<'_> {
    /// The next head in the merge order.
    fn next(&mut self) -> Result<Option<LaneOrder>, StoreError> {
        let sources = match self {
            HeadSource::Listed(it) => return Ok(it.next()),
            HeadSource::Index(sources) => sources,
        };
        for (class, partition, it, next) in sources.iter_mut() {
            if next.is_none() {
                *next = read_head(*class, *partition, it)?;
            }
        }
        let first = sources
            .iter_mut()
            .filter(|(_, _, _, next)| next.is_some())
            .min_by(|a, b| a.3.cmp(&b.3));
        Ok(first.and_then(|(_, _, _, next)| next.take()))
    }
}

/// The next head an index iterator of `class` gives; one that does not
/// parse is skipped (logged; `stats --check` names it).
fn read_head(
    class: Urgency,
    partition: usize,
    it: &mut Iter<'_>,
) -> Result<Option<LaneOrder>, StoreError> {
    for item in it {
        let (key, _) = item?;
        let Some(head) = keys::parse_head(&key) else {
            tracing::warn!("a head that does not parse skipped (stats --check names it)");
            continue;
        };
        return Ok(Some((
            head.due,
            keys::Head::lane_order(&key).to_vec(),
            class,
            partition,
        )));
    }
    Ok(None)
}
