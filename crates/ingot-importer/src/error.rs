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
    use ingot_format::Error as E;
    let mut message = format!("ingot archive `{path}`: {}", chain(&error));
    if matches!(
        error,
        E::DataChecksum { .. }
            | E::IndexChecksum { .. }
            | E::Truncated { .. }
            | E::CutShort { .. }
            | E::Malformed(_)
            | E::Decompress { .. }
    ) {
        message.push_str("\nhint: the file is damaged: build or copy it again (`ingot inspect --verify FILE` checks a file)");
    }
    if matches!(error, E::Appended { .. }) {
        message.push_str("\nhint: ingot executables cannot carry anything after their archive: build or copy it again, and sign or stamp it some other way");
    }
    ArchiveError::new_err(message)
}

pub use ingot_format::chain;
