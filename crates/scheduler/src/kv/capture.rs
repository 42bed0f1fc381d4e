//! The writes made while a compaction copies the database: appended to a
//! file in the copy's directory as they are applied to the files in use,
//! then applied to the copy, in order, once the copy is done (writers wait
//! only for that). Memory stays flat: the writes go to the file through a
//! buffer. A write the copy also saw is applied again, which changes
//! nothing (a value set, a key removed).

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::backend::Ops;
use super::sled_atomic;

/// A batch applied to a tree.
const BATCH: u8 = 0;
/// A tree dropped.
const DROPPED: u8 = 1;

/// The capture of one compaction.
pub(super) struct Capture {
    path: PathBuf,
    out: BufWriter<std::fs::File>,
    /// The first write to the file that failed: the compaction is given up.
    failed: Option<std::io::Error>,
}

impl Capture {
    /// A capture into a new file at `path`.
    pub(super) fn create(path: &Path) -> std::io::Result<Capture> {
        Ok(Capture {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(64 << 10, std::fs::File::create(path)?),
            failed: None,
        })
    }

    /// `ops` (their [`sled_atomic::encode`]d form) applied to tree `tree`.
    pub(super) fn batch(&mut self, tree: &[u8], encoded: &[u8]) {
        self.record(BATCH, tree, encoded);
    }

    /// Tree `tree` dropped.
    pub(super) fn dropped(&mut self, tree: &[u8]) {
        self.record(DROPPED, tree, &[]);
    }

    /// A record: its kind, the tree's name (u16 length, big endian) and
    /// the payload (u32 length, big endian).
    fn record(&mut self, kind: u8, tree: &[u8], payload: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        let (Ok(name_len), Ok(len)) = (u16::try_from(tree.len()), u32::try_from(payload.len()))
        else {
            self.failed = Some(std::io::Error::other("a write too big to capture"));
            return;
        };
        let written = self
            .out
            .write_all(&[kind])
            .and_then(|()| self.out.write_all(&name_len.to_be_bytes()))
            .and_then(|()| self.out.write_all(tree))
            .and_then(|()| self.out.write_all(&len.to_be_bytes()))
            .and_then(|()| self.out.write_all(payload));
        if let Err(e) = written {
            self.failed = Some(e);
        }
    }

    /// The file, every record in it; the first failure if any write to it
    /// failed.
    pub(super) fn finish(mut self) -> std::io::Result<PathBuf> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.path)
    }
}

/// Applies every record of the capture at `path` to `db`, in order; how
/// many.
pub(super) fn replay(path: &Path, db: &sled::Db) -> Result<u64, String> {
    let mut input = BufReader::with_capacity(
        64 << 10,
        std::fs::File::open(path).map_err(|e| e.to_string())?,
    );
    let mut n = 0;
    loop {
        let mut kind = [0u8; 1];
        match input.read_exact(&mut kind) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(n),
            Err(e) => return Err(e.to_string()),
        }
        let tree = read_part(&mut input, 2)?;
        let payload = read_part(&mut input, 4)?;
        match kind[0] {
            BATCH => {
                let ops: Ops = sled_atomic::decode(&payload)
                    .ok_or_else(|| format!("capture record {n} does not decode"))?;
                let tree = db.open_tree(&tree).map_err(|e| e.to_string())?;
                for (k, v) in ops {
                    match v {
                        Some(v) => tree.insert(k, v).map(drop),
                        None => tree.remove(k).map(drop),
                    }
                    .map_err(|e| e.to_string())?;
                }
            }
            DROPPED => {
                db.drop_tree(&tree).map_err(|e| e.to_string())?;
            }
            other => return Err(format!("capture record {n} of unknown kind {other}")),
        }
        n += 1;
    }
}

/// A length-prefixed part (`width`: 2 or 4 bytes of big-endian length).
fn read_part(input: &mut BufReader<std::fs::File>, width: usize) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 4];
    input
        .read_exact(&mut len[4 - width..])
        .map_err(|e| e.to_string())?;
    // Read as it comes, not allocated from the length first: a damaged
    // length cannot ask for 4 GiB up front.
    let len = u64::from(u32::from_be_bytes(len));
    let mut part = Vec::new();
    input
        .take(len)
        .read_to_end(&mut part)
        .map_err(|e| e.to_string())?;
    if part.len() as u64 != len {
        return Err("a capture record cut short".to_string());
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_captured_is_replayed_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capture");
        let mut capture = Capture::create(&path).unwrap();
        let first: Ops = vec![
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"b".to_vec(), Some(b"2".to_vec())),
        ];
        let second: Ops = vec![(b"a".to_vec(), None), (b"b".to_vec(), Some(b"3".to_vec()))];
        capture.batch(b"t", &sled_atomic::encode(&first));
        capture.batch(b"t", &sled_atomic::encode(&second));
        capture.batch(b"gone", &sled_atomic::encode(&first));
        capture.dropped(b"gone");
        let path = capture.finish().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        assert_eq!(replay(&path, &db).unwrap(), 4);
        let t = db.open_tree("t").unwrap();
        assert_eq!(t.get(b"a").unwrap(), None);
        assert_eq!(t.get(b"b").unwrap().as_deref(), Some(&b"3"[..]));
        assert!(!db.tree_names().iter().any(|n| n.as_ref() == b"gone"));
        // A file cut short is an error, not a partial success taken for whole.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(replay(&path, &db).is_err());
    }
}
