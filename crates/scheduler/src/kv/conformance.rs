//! The storage trait's conformance suite: random sequences of batches,
//! reads, scans, ids, sibling keyspaces and reopens, run against every
//! backend through [`Kv`] and checked step by step against an ordered map
//! (the model), in the manner of sled's own `fuzz_model`. A reopen drops
//! every handle and opens the store again from its directory (in memory,
//! where nothing outlives the handle, it keeps the handle); a compaction
//! rewrites the database into fresh files under the open handles.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::{Batch, Kv};

/// Key bytes: all above `~` (the store's own singletons, such as the id
/// counter, sort below every generated key and range), with `0xff` for
/// the prefix ends that have no successor.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0x7fu8, 0x80, 0xfe, 0xff]), 1..4)
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..6)
}

#[derive(Debug, Clone)]
enum Op {
    /// One batch (`None`: remove), in keyspace `space` (0: the store's own,
    /// 1 and 2: siblings).
    Apply(usize, Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
    Prefix(Vec<u8>),
    LastIn(Vec<u8>, Vec<u8>),
    /// An id taken; `true`: a batch applied after it (which writes the
    /// counter).
    TakeId(bool),
    DropSibling(usize),
    Reopen,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, prop::collection::vec((key(), prop::option::of(value())), 0..6))
            .prop_map(|(s, ops)| Op::Apply(s, ops)),
        2 => key().prop_map(Op::Get),
        2 => (key(), key()).prop_map(|(a, b)| Op::Range(a, b)),
        2 => key().prop_map(Op::Prefix),
        1 => (key(), key()).prop_map(|(a, b)| Op::LastIn(a, b)),
        1 => any::<bool>().prop_map(Op::TakeId),
        1 => (1..3usize).prop_map(Op::DropSibling),
        1 => Just(Op::Reopen),
        1 => Just(Op::Compact),
    ]
}

/// A backend under test.
trait Subject {
    fn kv(&self) -> &Kv;
    fn reopen(&mut self);
}

struct OnDisk {
    dir: tempfile::TempDir,
    kv: Option<Kv>,
}

impl Subject for OnDisk {
    fn kv(&self) -> &Kv {
        self.kv.as_ref().expect("open")
    }

    fn reopen(&mut self) {
        self.kv = None;
        self.kv = Some(Kv::open(self.dir.path(), 1 << 20).expect("reopens"));
    }
}

struct InMemory(Kv);

impl Subject for InMemory {
    fn kv(&self) -> &Kv {
        &self.0
    }

    fn reopen(&mut self) {}
}

const SIBLINGS: [&str; 3] = ["", "crawl:a", "crawl:b"];

/// The handle on sibling `i` (1 or 2), opened once and held across the
/// steps (a compaction moves it) until a reopen or a drop of the sibling.
fn sibling<'h>(held: &'h mut [Option<Kv>; 3], kv: &Kv, i: usize) -> &'h Kv {
    held[i].get_or_insert_with(|| kv.sibling(SIBLINGS[i]).expect("opens"))
}

fn collect(it: super::Iter<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| {
        let (k, v) = r.expect("reads");
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

fn run(subject: &mut dyn Subject, ops: Vec<Op>) {
    let mut model: [BTreeMap<Vec<u8>, Vec<u8>>; 3] = Default::default();
    let mut opened: BTreeSet<usize> = BTreeSet::new();
    let mut taken_ids: BTreeSet<u64> = BTreeSet::new();
    let mut held: [Option<Kv>; 3] = Default::default();
    for op in ops {
        let kv = subject.kv();
        match op {
            Op::Apply(s, writes) => {
                let mut batch = Batch::default();
                for (k, v) in writes {
                    match v {
                        Some(v) => {
                            model[s].insert(k.clone(), v.clone());
                            batch.insert(k, v);
                        }
                        None => {
                            model[s].remove(&k);
                            batch.remove(k);
                        }
                    }
                }
                if s == 0 {
                    kv.apply_batch(batch).expect("applies");
                } else {
                    opened.insert(s);
                    sibling(&mut held, kv, s)
                        .apply_batch(batch)
                        .expect("applies");
                }
            }
            Op::Get(k) => {
                let got = kv.get(&k).expect("reads").map(|v| v.to_vec());
                assert_eq!(got.as_ref(), model[0].get(&k), "get {k:?}");
                assert_eq!(
                    kv.contains_key(&k).expect("reads"),
                    model[0].contains_key(&k)
                );
            }
            Op::Range(a, b) => {
                let want: Vec<_> = if a < b {
                    model[0]
                        .range(a.clone()..b.clone())
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                } else {
                    Vec::new()
                };
                assert_eq!(
                    collect(kv.range(a.clone()..b.clone())),
                    want,
                    "range {a:?}..{b:?}"
                );
            }
            Op::Prefix(p) => {
                let want: Vec<_> = model[0]
                    .iter()
                    .filter(|(k, _)| k.starts_with(&p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(collect(kv.scan_prefix(&p)), want, "prefix {p:?}");
            }
            Op::LastIn(a, b) => {
                let want = if a < b {
                    model[0]
                        .range(a.clone()..b.clone())
                        .next_back()
                        .map(|(k, v)| (k.clone(), v.clone()))
                } else {
                    None
                };
                let got = kv
                    .last_in(a.clone()..b.clone())
                    .expect("reads")
                    .map(|(k, v)| (k.to_vec(), v.to_vec()));
                assert_eq!(got, want, "last in {a:?}..{b:?}");
            }
            Op::TakeId(write) => {
                // Never handed out before, written or not, across reopens.
                let id = kv.next_id();
                assert!(taken_ids.insert(id), "id {id} handed out twice");
                if write {
                    kv.apply_batch(Batch::default()).expect("applies");
                }
            }
            Op::DropSibling(s) => {
                held[s] = None;
                let was = kv.drop_sibling(SIBLINGS[s]).expect("drops");
                assert_eq!(was, opened.remove(&s), "drop {}", SIBLINGS[s]);
                model[s].clear();
            }
            Op::Reopen => {
                held = Default::default();
                subject.reopen();
            }
            Op::Compact => {
                kv.compact().expect("compacts");
            }
        }
        // Every sibling holds what the model says, and the names listed
        // are those opened and not dropped.
        let kv = subject.kv();
        let names: BTreeSet<String> = kv.sibling_names("crawl:").into_iter().collect();
        let want: BTreeSet<String> = opened.iter().map(|s| SIBLINGS[*s].to_string()).collect();
        assert_eq!(names, want, "sibling names");
        for s in opened.iter().copied() {
            let got: Vec<_> = collect(sibling(&mut held, kv, s).range(vec![0x7f]..vec![0xff; 4]));
            let want: Vec<_> = model[s]
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "sibling {}", SIBLINGS[s]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sled_keeps_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kv = Kv::open(dir.path(), 1 << 20).expect("opens");
        run(&mut OnDisk { dir, kv: Some(kv) }, ops);
    }

    #[test]
    fn memory_keeps_the_model(ops in prop::collection::vec(op(), 1..40)) {
        run(&mut InMemory(Kv::memory()), ops);
    }
}
