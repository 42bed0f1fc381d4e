//! What `parse(src)` accepts: a path, bytes, or a binary file object.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// A document's bytes, readable without the GIL (a file object takes it
/// back for each read).
pub(crate) type Input = Box<dyn Read + Send>;

/// Opens `src`: `bytes`/`bytearray`/`memoryview` are read in place (a
/// `bytearray` or `memoryview` is copied first, since Python code may change
/// it while the parser reads), a `str` or `os.PathLike` is a file path, and
/// an object with `read` is a binary file.
pub(crate) fn open(src: &Bound<'_, PyAny>) -> PyResult<Input> {
    if src.is_instance_of::<PyBytes>() || src.is_instance_of::<PyByteArray>() {
        let bytes: PyBackedBytes = src.extract()?;
        return Ok(Box::new(Cursor::new(bytes)));
    }
    if src.is_instance_of::<PyMemoryView>() {
        let bytes = src.call_method0("tobytes")?;
        let bytes: PyBackedBytes = bytes.extract()?;
        return Ok(Box::new(Cursor::new(bytes)));
    }
    let text_io = src.py().import("io")?.getattr("TextIOBase")?;
    if src.is_instance(&text_io)? {
        return Err(PyTypeError::new_err(
            "src is a text file: open it in binary mode ('rb'); the parser finds the encoding",
        ));
    }
    if !src.is_instance_of::<PyString>() && src.hasattr("read")? {
        return Ok(Box::new(PyFileReader {
            file: src.clone().unbind(),
        }));
    }
    let path: PathBuf = src.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "src must be a path (str or os.PathLike), bytes, or a binary file, not {}",
            src.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        ))
    })?;
    let file = File::open(&path).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err((
            e.raw_os_error().unwrap_or(0),
            e.to_string(),
            path.display().to_string(),
        ))
    })?;
    Ok(Box::new(file))
}

/// A Python binary file, read through its `read(n)`; each call takes the
/// GIL for the length of the call.
struct PyFileReader {
    file: Py<PyAny>,
}

impl Read for PyFileReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let file = self.file.bind(py);
            let chunk = file
                .call_method1("read", (buf.len(),))
                .map_err(|e| io::Error::other(e.to_string()))?;
            if chunk.is_none() {
                // A non-blocking file with nothing ready: no bytes now.
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            let bytes: PyBackedBytes = chunk.extract().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the file's read() returned text, not bytes: open it in binary mode ('rb')",
                )
            })?;
            // More than asked for would have to be kept for the next read;
            // a file that does it is broken, and dropping the rest would
            // corrupt the document silently.
            let n = bytes.len();
            if n > buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the file's read({}) returned {n} bytes", buf.len()),
                ));
            }
            buf[..n].copy_from_slice(&bytes);
            Ok(n)
        })
    }
}
