//! Python-facing errors.

use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;

pyo3::create_exception!(
    _ingot,
    ArchiveError,
    PyImportError,
    "An ingot archive is missing, truncated, corrupted or was built for another Python."
);

/// Converts an archive error into an `ArchiveError` whose message starts with the archive path.
pub fn archive_error(path: &str, error: ingot_format::Error) -> PyErr {
    let mut message = format!("ingot archive `{path}`: {error}");
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ArchiveError::new_err(message)
}
