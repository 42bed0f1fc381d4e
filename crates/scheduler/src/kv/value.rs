//! [`Bytes`]: a key or value read from the store, owned and cheap to clone,
//! in whatever buffer its backend holds it (sled's own, shared without a
//! copy or an allocation per read, or a shared buffer of the memory map).

use std::ops::Deref;

/// A key or value read from the store: owned (it stays valid whatever is
/// written after), derefs to its bytes.
#[derive(Clone)]
pub(crate) struct Bytes(Repr);

#[derive(Clone)]
enum Repr {
    Sled(sled::IVec),
    Shared(bytes::Bytes),
}

impl Bytes {
    /// A copy of `bytes`.
    #[cfg(test)]
    pub(crate) fn copy_from_slice(bytes: &[u8]) -> Bytes {
        Bytes(Repr::Shared(bytes::Bytes::copy_from_slice(bytes)))
    }

    /// What sled read.
    pub(super) fn sled(value: sled::IVec) -> Bytes {
        Bytes(Repr::Sled(value))
    }

    /// A shared buffer (the memory map's).
    pub(super) fn shared(value: bytes::Bytes) -> Bytes {
        Bytes(Repr::Shared(value))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Sled(v) => v,
            Repr::Shared(v) => v,
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Bytes {}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        bytes::Bytes::copy_from_slice(self).fmt(f)
    }
}

impl From<Bytes> for Vec<u8> {
    fn from(value: Bytes) -> Vec<u8> {
        value.to_vec()
    }
}
