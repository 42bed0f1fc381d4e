//! The key layout and the record encoding: public for the fuzz targets
//! only, not part of the interface (no stability promised), hidden from
//! the docs. Everything else goes through [`Store`](crate::Store) and its
//! views.

pub mod due_list;
pub mod keys;
pub mod page;
pub mod record;
pub mod squeeze;
