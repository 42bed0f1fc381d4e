//! The native module of the `sitemapd` Python package, `sitemapd._native`.
//!
//! Python code imports `sitemapd`, whose typed façade (`python/sitemapd`)
//! re-exports what this module defines: the parser's entries and tables,
//! robots.txt rules, the crawl store and discovery. Every call that parses,
//! fetches or touches the store runs with the GIL released.

mod columns;
mod discover;
mod entries;
mod errors;
mod options;
mod parse;
mod robots;
mod scrapy_sitemap;
mod simulate;
mod source;
mod store;
mod store_tables;
mod table;
mod time;
// The walk-to-store glue the `sitemapd` binary runs too.
#[path = "../../scheduler/examples/walk_into_store/glue.rs"]
#[allow(dead_code)]
mod glue;

use pyo3::prelude::*;

// The binary's allocator: the store's writes (sled copies a tree node per
// write) run at the binary's speed.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings (its `malloc_conf`, read once at start): freed pages
/// go back to the system after a second instead of ten, so that a table of
/// millions of rows, built a batch at a time, holds no more than its rows
/// (a 2.5M-URL discovery peaked 15 MiB lower, at the same speed).
#[repr(transparent)]
struct MallocConf(*const std::ffi::c_char);

// SAFETY: a pointer to a static, NUL-terminated string that nothing writes.
unsafe impl Sync for MallocConf {}

#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: MallocConf = MallocConf(c"dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

/// `sitemapd._native`: what the `sitemapd` package re-exports.
#[pymodule]
fn _native(py: Python<'_>, module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(py, module)?;
    module.add_class::<entries::UrlEntry>()?;
    module.add_class::<entries::SitemapRef>()?;
    module.add_class::<entries::Diagnostic>()?;
    module.add_class::<entries::Summary>()?;
    module.add_class::<table::Table>()?;
    module.add_class::<table::BatchReader>()?;
    module.add_class::<parse::Parsed>()?;
    module.add_class::<parse::EntryIterator>()?;
    module.add_class::<robots::Robots>()?;
    module.add_class::<store::Store>()?;
    module.add_class::<store::Lease>()?;
    module.add_class::<discover::Discovered>()?;
    module.add_class::<discover::DiscoverIterator>()?;
    module.add_class::<simulate::Simulation>()?;
    module.add_class::<scrapy_sitemap::ReadSitemap>()?;
    module.add_class::<scrapy_sitemap::SitemapDicts>()?;
    module.add_function(wrap_pyfunction!(parse::parse, module)?)?;
    module.add_function(wrap_pyfunction!(parse::iter_entries, module)?)?;
    module.add_function(wrap_pyfunction!(parse::iter_batches, module)?)?;
    module.add_function(wrap_pyfunction!(robots::parse_robots, module)?)?;
    module.add_function(wrap_pyfunction!(discover::discover, module)?)?;
    module.add_function(wrap_pyfunction!(discover::iter_discover, module)?)?;
    module.add_function(wrap_pyfunction!(simulate::simulate, module)?)?;
    module.add_function(wrap_pyfunction!(scrapy_sitemap::read_sitemap, module)?)?;
    Ok(())
}
