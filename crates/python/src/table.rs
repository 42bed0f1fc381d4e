//! Arrow tables handed to Python through the Arrow PyCapsule interface
//! (`__arrow_c_stream__`): pyarrow, polars and pandas take them without a
//! copy, and the package itself needs none of them.

use std::sync::Mutex;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyImportError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A table: a schema and the record batches that hold its rows.
#[pyclass(frozen, module = "sitemapd._native")]
pub(crate) struct Table {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl Table {
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let batches = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
        Self { schema, batches }
    }
}

/// The names of `schema`'s columns, in order.
fn names(schema: &SchemaRef) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// Imports an optional package, or says how to install it.
pub(crate) fn import_optional<'py>(
    py: Python<'py>,
    module: &str,
    extra: &str,
) -> PyResult<Bound<'py, PyModule>> {
    py.import(module).map_err(|e| {
        PyImportError::new_err(format!(
            "{module} is needed for this (pip install {module}, or pip install 'sitemapd[{extra}]'): {e}"
        ))
    })
}

fn stream_capsule(
    py: Python<'_>,
    reader: Box<dyn RecordBatchReader + Send>,
) -> PyResult<Bound<'_, PyCapsule>> {
    // The consumer moves the stream out and marks ours released; dropping
    // the capsule's copy then releases nothing twice.
    PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), c"arrow_array_stream")
}

fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let schema = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    PyCapsule::new_with_value(py, schema, c"arrow_schema")
}

#[pymethods]
impl Table {
    /// Rows in the table.
    #[getter]
    pub(crate) fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The columns' names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        names(&self.schema)
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "<sitemapd.Table {} rows: {}>",
            self.num_rows(),
            self.column_names().join(", ")
        )
    }

    /// The Arrow PyCapsule stream interface: the table's batches, shared,
    /// not copied. Callable any number of times.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The interface lets a producer keep its own schema.
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        stream_capsule(py, Box::new(reader))
    }

    /// The Arrow PyCapsule schema interface.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// The table as a `pyarrow.Table` (needs pyarrow).
    fn to_pyarrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        import_optional(slf.py(), "pyarrow", "arrow")?.call_method1("table", (slf,))
    }

    /// The table as a `pandas.DataFrame` (needs pandas and pyarrow): nullable
    /// columns stay nullable, timestamps are UTC.
    fn to_pandas<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        import_optional(slf.py(), "pandas", "pandas")?;
        Self::to_pyarrow(slf)?.call_method0("to_pandas")
    }

    /// The table as a `polars.DataFrame` (needs polars), without a copy.
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        import_optional(slf.py(), "polars", "polars")?.call_method1("DataFrame", (slf,))
    }

    /// The rows as a list of dicts (needs pyarrow).
    fn to_pylist<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::to_pyarrow(slf)?.call_method0("to_pylist")
    }
}

/// Record batches made as they are read: a stream that can be consumed
/// once, through `__arrow_c_stream__` or by iterating it (each item a
/// one-batch [`Table`]).
#[pyclass(module = "sitemapd._native")]
pub(crate) struct BatchReader {
    schema: SchemaRef,
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
}

impl BatchReader {
    pub(crate) fn new(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        Self {
            schema: reader.schema(),
            reader: Mutex::new(Some(reader)),
        }
    }

    fn take(&self) -> PyResult<Box<dyn RecordBatchReader + Send>> {
        self.reader
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the batch reader failed earlier"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the batch stream was already consumed"))
    }
}

fn arrow_error(e: ArrowError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

#[pymethods]
impl BatchReader {
    /// The columns' names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        names(&self.schema)
    }

    /// The Arrow PyCapsule stream interface; the stream moves to the caller.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        stream_capsule(py, self.take()?)
    }

    /// The Arrow PyCapsule schema interface.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Table>> {
        let mut guard = self
            .reader
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the batch reader failed earlier"))?;
        let Some(reader) = guard.as_mut() else {
            return Ok(None);
        };
        match py.detach(|| reader.next()) {
            Some(batch) => Ok(Some(Table::new(
                self.schema.clone(),
                vec![batch.map_err(arrow_error)?],
            ))),
            None => {
                *guard = None;
                Ok(None)
            }
        }
    }
}
