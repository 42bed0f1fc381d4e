//! Where a store's sled database lives in its directory, and how a
//! compaction switches to a fresh copy of it.
//!
//! A store never compacted keeps sled's files in its directory itself
//! (generation 0). A compaction writes the live data into a fresh database
//! in `generation-N` beside them, makes it durable, then names it in the
//! file `generation` (written to a temporary name, synced, renamed, and the
//! directory synced): the rename is the switch. A crash before it leaves
//! the old database named (the fresh one, unnamed, is removed when the store
//! is next opened); a crash after it, the new one complete. Never neither.
//! The files of a database no longer named are removed once nothing reads
//! them, or at the next open.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file that names the generation in use, with the bytes its files
/// took when it was written: `N BYTES`.
const POINTER: &str = "generation";
/// The prefix of a compacted generation's directory (`generation-N`).
const DIR_PREFIX: &str = "generation-";
/// The file in a database's directory that says it was closed cleanly:
/// the number its last close wrote under [`crate::keys::CLOSED`].
pub(crate) const CLOSED_FILE: &str = "closed";
/// What sled (and the close mark) keeps in a database's directory: the
/// files of generation 0, removed from the store's directory once a later
/// one is in use.
const DATABASE_FILES: &[&str] = &["conf", "db", "blobs", CLOSED_FILE];

/// The generation a store's directory names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Named {
    /// 0: the database in the store's directory itself.
    pub(super) number: u64,
    /// The bytes its files took when a compaction wrote it (none for
    /// generation 0).
    pub(super) written: Option<u64>,
}

/// The file every process that opens the store locks (`flock`) for as
/// long as it has it open: sled locks only the database of one generation,
/// and a compaction switches generations.
const LOCK: &str = "lock";

/// Why [`lock`] failed.
pub(super) enum LockError {
    /// Another process holds the store.
    InUse,
    Io(std::io::Error),
}

/// Locks the store in `root` (created if missing) for this process,
/// waiting 1.5 s for a process that just closed it; the lock holds while
/// the file returned is open.
pub(super) fn lock(root: &Path) -> Result<std::fs::File, LockError> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(root).map_err(LockError::Io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(LOCK))
        .map_err(LockError::Io)?;
    for _ in 0..30 {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return Err(LockError::Io(e));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(LockError::InUse)
}

/// Bytes free for this process on the file system of `root`.
pub(super) fn available(root: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(root.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a statvfs to fill.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // u64 on 64-bit Linux, narrower elsewhere.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)))
}

/// The directory of generation `number` of the store in `root`.
pub(super) fn dir(root: &Path, number: u64) -> PathBuf {
    if number == 0 {
        root.to_path_buf()
    } else {
        root.join(format!("{DIR_PREFIX}{number}"))
    }
}

/// The generation the store in `root` uses; an error says why the file
/// that names it cannot be believed (the store is then damaged: nothing
/// is removed).
pub(super) fn named(root: &Path) -> Result<Named, String> {
    let text = match std::fs::read_to_string(root.join(POINTER)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A compacted database with no file naming it (the file was
            // removed by hand): not taken for a leftover and removed.
            let orphan = numbered_dirs(root)
                .into_iter()
                .find(|n| dir(root, *n).join("db").is_file());
            if let Some(orphan) = orphan.filter(|_| !root.join("db").exists()) {
                return Err(format!(
                    "its database is in {DIR_PREFIX}{orphan}, but the file {POINTER} that names it is missing"
                ));
            }
            return Ok(Named {
                number: 0,
                written: None,
            });
        }
        Err(e) => return Err(format!("its file {POINTER} cannot be read: {e}")),
    };
    let mut words = text.split_whitespace();
    let parsed = (|| {
        let number = words.next()?.parse::<u64>().ok().filter(|n| *n > 0)?;
        let written = words.next()?.parse::<u64>().ok()?;
        words.next().is_none().then_some(Named {
            number,
            written: Some(written),
        })
    })();
    let named = parsed.ok_or_else(|| {
        format!("its file {POINTER} does not name a generation (`N BYTES`): {text:?}")
    })?;
    if !dir(root, named.number).join("db").is_file() {
        return Err(format!(
            "its file {POINTER} names generation {}, whose database is missing",
            named.number
        ));
    }
    Ok(named)
}

/// Removes from `root` every database but generation `keep`'s: a
/// compaction a crash cut short, or one whose files were still read when
/// it was replaced. Best effort: what cannot be removed now is removed at a
/// later open.
pub(super) fn remove_all_but(root: &Path, keep: u64) {
    if keep != 0 {
        remove(root, 0);
    }
    for number in numbered_dirs(root) {
        if number != keep {
            remove(root, number);
        }
    }
}

/// The numbers of the `generation-N` directories in `root`.
fn numbered_dirs(root: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            name.to_str()
                .and_then(|n| n.strip_prefix(DIR_PREFIX))
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| *n != 0)
        })
        .collect()
}

/// Removes the files of generation `number` of the store in `root`.
pub(super) fn remove(root: &Path, number: u64) {
    let result = if number == 0 {
        remove_generation_zero(root)
    } else {
        std::fs::remove_dir_all(dir(root, number))
    };
    if let Err(e) = result.or_else(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Ok(()),
        _ => Err(e),
    }) {
        tracing::warn!(generation = number, error = %e, "the files of a replaced database were not all removed (they are at the next open)");
    }
}

fn remove_generation_zero(root: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let sled_file = DATABASE_FILES.contains(&name)
            || name.starts_with("snap.")
            || name == format!("{CLOSED_FILE}.tmp");
        if !sled_file {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(path)?;
        } else {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

/// Syncs every file of directory `dir` and the directory itself (sled
/// syncs what it writes, but not the directory entries of a database it
/// creates).
pub(super) fn sync_all(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_all(&entry.path())?;
        } else {
            std::fs::File::open(entry.path())?.sync_all()?;
        }
    }
    std::fs::File::open(dir)?.sync_all()
}

/// Names generation `named` as the one in use: the switch.
pub(super) fn name(root: &Path, named: Named) -> std::io::Result<()> {
    let temp = root.join(format!("{POINTER}.tmp"));
    let mut file = std::fs::File::create(&temp)?;
    writeln!(
        file,
        "{} {}",
        named.number,
        named.written.unwrap_or_default()
    )?;
    file.sync_all()?;
    drop(file);
    // The new generation's directory entry is durable before the switch.
    std::fs::File::open(root)?.sync_all()?;
    std::fs::rename(&temp, root.join(POINTER))?;
    std::fs::File::open(root)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_the_file_uses_generation_zero() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(
            named(root.path()).unwrap(),
            Named {
                number: 0,
                written: None
            }
        );
    }

    #[test]
    fn the_file_names_a_generation_whose_database_is_there() {
        let root = tempfile::tempdir().unwrap();
        let named_3 = Named {
            number: 3,
            written: Some(1234),
        };
        name(root.path(), named_3).unwrap();
        let err = named(root.path()).unwrap_err();
        assert!(
            err.contains("generation 3, whose database is missing"),
            "{err}"
        );
        std::fs::create_dir(dir(root.path(), 3)).unwrap();
        std::fs::write(dir(root.path(), 3).join("db"), b"x").unwrap();
        assert_eq!(named(root.path()).unwrap(), named_3);
        for garbage in ["", "3", "0 5", "x 5", "3 5 7", "-1 5"] {
            std::fs::write(root.path().join(POINTER), garbage).unwrap();
            assert!(named(root.path()).is_err(), "{garbage:?} believed");
        }
        std::fs::remove_file(root.path().join(POINTER)).unwrap();
        let err = named(root.path()).unwrap_err();
        assert!(
            err.contains("generation-3, but the file generation"),
            "{err}"
        );
    }

    #[test]
    fn every_database_but_the_one_named_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for f in [
            "conf",
            "db",
            "closed",
            "snap.0000000000001234",
            "closed.tmp",
        ] {
            std::fs::write(r.join(f), b"x").unwrap();
        }
        std::fs::create_dir_all(r.join("blobs")).unwrap();
        for n in [1, 2, 7] {
            std::fs::create_dir_all(dir(r, n).join("blobs")).unwrap();
            std::fs::write(dir(r, n).join("db"), b"x").unwrap();
        }
        std::fs::write(r.join("not-ours"), b"x").unwrap();
        std::fs::create_dir(r.join("generation-x")).unwrap();
        remove_all_but(r, 2);
        let mut left: Vec<String> = std::fs::read_dir(r)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["generation-2", "generation-x", "not-ours"]);
        remove_all_but(r, 0);
        assert!(!dir(r, 2).exists());
    }
}
