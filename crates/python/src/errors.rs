//! The package's exceptions: one base class, and a subclass per layer.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    sitemapd,
    SitemapdError,
    PyException,
    "Base class of every error sitemapd raises."
);
create_exception!(
    sitemapd,
    StoreError,
    SitemapdError,
    "The crawl store could not be opened, read or written."
);
create_exception!(
    sitemapd,
    DiscoveryError,
    SitemapdError,
    "A site could not be walked (bad seed, no runtime)."
);

pub(crate) fn register(py: Python<'_>, module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("SitemapdError", py.get_type::<SitemapdError>())?;
    module.add("StoreError", py.get_type::<StoreError>())?;
    module.add("DiscoveryError", py.get_type::<DiscoveryError>())?;
    Ok(())
}
