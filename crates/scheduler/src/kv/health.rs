//! What the key-value layer has seen go wrong ([`Health`], reported as
//! [`StoreHealth`]), and [`guard`], which turns a backend's panic into an
//! error.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

thread_local! {
    /// Set while [`guard`] runs backend code on this thread: the panic hook
    /// stays quiet and keeps the message here instead.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that is silent on a thread inside
/// [`guard`] and the previous hook everywhere else.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{at}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` (backend code; `backend` names it), a panic caught: `Err`
/// with what it said. sled panics on some damaged files (an index out of
/// bounds in its segment code when the `db` file is cut short).
pub(crate) fn guard<T>(backend: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    let was = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|_| {
        let said = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "a panic".to_string());
        format!("{backend} panicked: {said}")
    })
}

/// What the store's key-value layer has seen go wrong, shared by every
/// keyspace of one store.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Damage seen (a panic or corrupt data while reading).
    pub(super) damaged: Mutex<Option<String>>,
    /// Why the last write of each keyspace whose last write failed failed,
    /// by keyspace name: a keyspace's next write that succeeds clears its
    /// own, not another's (the partitions of a store write side by side).
    pub(super) write_failures: Mutex<BTreeMap<String, String>>,
    /// The backend failed a write and refuses every write until reopened.
    pub(super) wedged: AtomicBool,
    /// Records passed over because they do not decode: how many, and the
    /// key of the first.
    pub(super) unreadable: Mutex<(u64, Option<String>)>,
}

/// What [`Store::health`](crate::Store::health) reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreHealth {
    /// Damage seen while reading (it does not heal: rebuild the store).
    pub damaged: Option<String>,
    /// Why the last write failed (`None`: it succeeded, or none was made).
    pub write_failure: Option<String>,
    /// A write failed on disk and the store refuses every read and write
    /// until it is reopened (sled's behaviour after an I/O error).
    pub needs_reopen: bool,
    /// Records read and passed over because they do not decode (each read
    /// counts: one record read twice counts twice). The store works
    /// without them; `stats --check` names them all.
    pub unreadable_records: u64,
    /// The key of the first record passed over.
    pub first_unreadable: Option<String>,
}

impl StoreHealth {
    /// Reads and writes work, as far as the store has seen.
    pub fn is_ok(&self) -> bool {
        self.damaged.is_none() && self.write_failure.is_none() && !self.needs_reopen
    }

    /// What is wrong, in a sentence (`None` when all is well).
    pub fn reason(&self) -> Option<String> {
        if let Some(d) = &self.damaged {
            Some(format!("the store is damaged: {d}"))
        } else {
            self.write_failure.as_ref().map(|w| {
                if self.needs_reopen {
                    format!("a write to the store failed ({w}); it refuses writes until reopened")
                } else {
                    format!("the last write to the store failed: {w}")
                }
            })
        }
    }
}

/// Locks `m`, a poisoned lock taken as it is (the values it guards are
/// whole at every step).
pub(super) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
