//! Atomic batches on sled without its batch lock.
//!
//! sled 0.34 applies every `Tree::apply_batch` (and every transaction)
//! under one lock for the whole process (`concurrency_control::write`), and
//! once a batch has been applied, every read and write takes the read side
//! of that lock: batches of different trees never run at the same time,
//! and a store's partitions could not write side by side. So a batch of
//! more than one write is applied here as single writes, which sled runs
//! concurrently, made atomic by a record of the whole batch: written first
//! (`~batch` ‖ number, one insert), then each write, then the record is
//! removed. sled recovers a prefix of its log after a crash, so a store
//! opened after one holds, for a batch cut short, its record and some of its
//! writes; [`replay`] applies every record it finds again, in order, before
//! anything reads the tree. Writes are idempotent (a value set, a key
//! removed), and a tree is written by one writer at a time (its partition's
//! lock), so nothing written after the batch was cut short is undone.
//!
//! The price: each such batch is written twice into sled's log (its record
//! and its writes), and single writes cost more than one batch. A store of
//! one partition keeps sled's own batches; a store of several asks for
//! these ([`super::Kv::batches_side_by_side`]).

use std::sync::atomic::{AtomicU64, Ordering};

use super::backend::Ops;

/// The prefix of the keys of batch records (after every keyspace prefix of
/// the key layout, which are lowercase letters; beside the `~` keys).
pub(crate) const PREFIX: &[u8] = b"~batch";

/// The key of batch record `n`.
fn key(n: u64) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// A batch as one value: for each write, the key's length (u32, big
/// endian), the key, then 0 for a removal or 1, the value's length and the
/// value.
pub(super) fn encode(ops: &Ops) -> Vec<u8> {
    let size: usize = ops
        .iter()
        .map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let mut out = Vec::with_capacity(size);
    for (k, v) in ops {
        out.extend_from_slice(&(k.len() as u32).to_be_bytes());
        out.extend_from_slice(k);
        match v {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                out.extend_from_slice(v);
            }
        }
    }
    out
}

/// The writes of a batch record; `None` if it does not decode.
pub(super) fn decode(mut bytes: &[u8]) -> Option<Ops> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (bytes.get(..n)?, bytes.get(n..)?);
        *bytes = rest;
        Some(head)
    }
    fn len(bytes: &mut &[u8]) -> Option<usize> {
        let b = take(bytes, 4)?;
        Some(u32::from_be_bytes(b.try_into().ok()?) as usize)
    }
    let mut ops = Vec::new();
    while !bytes.is_empty() {
        let n = len(&mut bytes)?;
        let k = take(&mut bytes, n)?.to_vec();
        let v = match take(&mut bytes, 1)?[0] {
            0 => None,
            1 => {
                let n = len(&mut bytes)?;
                Some(take(&mut bytes, n)?.to_vec())
            }
            _ => return None,
        };
        ops.push((k, v));
    }
    Some(ops)
}

/// Applies `ops` to `tree` atomically (see the module docs); `next`
/// numbers the batch records of the tree.
pub(crate) fn apply(tree: &sled::Tree, next: &AtomicU64, ops: Ops) -> sled::Result<()> {
    if let [(k, v)] = ops.as_slice() {
        // One write is atomic by itself.
        match v {
            Some(v) => tree.insert(k.as_slice(), v.as_slice())?,
            None => tree.remove(k.as_slice())?,
        };
        return Ok(());
    }
    if ops.is_empty() {
        return Ok(());
    }
    let record = key(next.fetch_add(1, Ordering::Relaxed));
    tree.insert(record.as_slice(), encode(&ops))?;
    write_all(tree, ops)?;
    tree.remove(record)?;
    Ok(())
}

fn write_all(tree: &sled::Tree, ops: Ops) -> sled::Result<()> {
    for (k, v) in ops {
        match v {
            Some(v) => tree.insert(k, v)?,
            None => tree.remove(k)?,
        };
    }
    Ok(())
}

/// Applies again, in order, every batch record `tree` holds (batches a
/// crash cut short) and removes it; the number the tree's next record
/// takes. A record that does not decode is a damaged store.
pub(crate) fn replay(tree: &sled::Tree) -> sled::Result<u64> {
    let mut next = 0;
    for item in tree.scan_prefix(PREFIX) {
        let (record, value) = item?;
        let Some(ops) = decode(&value) else {
            return Err(sled::Error::Corruption { at: None, bt: () });
        };
        tracing::info!(
            writes = ops.len(),
            "a batch a crash cut short applied again"
        );
        write_all(tree, ops)?;
        tree.remove(&record)?;
        if let Some(n) = record
            .get(PREFIX.len()..)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
        {
            next = next.max(u64::from_be_bytes(n).wrapping_add(1));
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(items: &[(&str, Option<&str>)]) -> Ops {
        items
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.map(|v| v.as_bytes().to_vec())))
            .collect()
    }

    #[test]
    fn a_record_decodes_to_its_writes() {
        let batch = ops(&[("a", Some("1")), ("b", None), ("", Some(""))]);
        assert_eq!(decode(&encode(&batch)), Some(batch));
        assert_eq!(decode(&[]), Some(Vec::new()));
        for cut in 1..encode(&ops(&[("key", Some("value"))])).len() {
            let bytes = encode(&ops(&[("key", Some("value"))]));
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn a_batch_cut_short_is_applied_again_on_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path()).unwrap();
            let tree = db.open_tree("t").unwrap();
            tree.insert("c", "old").unwrap();
            // A crash after the record and the first of three writes.
            let batch = ops(&[("a", Some("1")), ("b", Some("2")), ("c", None)]);
            tree.insert(key(7), encode(&batch)).unwrap();
            tree.insert("a", "1").unwrap();
            db.flush().unwrap();
        }
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("t").unwrap();
        assert_eq!(replay(&tree).unwrap(), 8);
        assert_eq!(tree.get("a").unwrap().unwrap(), "1".as_bytes());
        assert_eq!(tree.get("b").unwrap().unwrap(), "2".as_bytes());
        assert_eq!(tree.get("c").unwrap(), None);
        assert_eq!(tree.scan_prefix(PREFIX).count(), 0, "the record is gone");
        assert_eq!(replay(&tree).unwrap(), 0, "nothing left to replay");
    }

    #[test]
    fn a_batch_leaves_no_record_behind() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("t").unwrap();
        let next = AtomicU64::new(0);
        apply(&tree, &next, ops(&[("a", Some("1")), ("b", Some("2"))])).unwrap();
        apply(&tree, &next, ops(&[("a", None)])).unwrap();
        assert_eq!(tree.get("a").unwrap(), None);
        assert_eq!(tree.get("b").unwrap().unwrap(), "2".as_bytes());
        assert_eq!(tree.scan_prefix(PREFIX).count(), 0);
        assert_eq!(
            next.load(Ordering::Relaxed),
            1,
            "one record for the two-write batch"
        );
    }
}
