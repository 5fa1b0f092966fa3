//! What an archive holds, read for tools rather than for imports: `ingot inspect`'s listings
//! and sizes, the build's check of the symbol versions native code needs, and the check of
//! every blob. [`crate::IngotFinder`] exposes each as a method (`entries`, `entry_sizes`,
//! `bytecode_in_place`, `version_needs`, `verify`); the importer protocol uses none of them.

use std::sync::Arc;

use ingot_format::{layout::compression, Kind, Role};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::view::ArchiveView;

/// A native entry's (kind, name, [(library, symbol version), ...]).
pub type VersionNeeds = (String, String, Vec<(String, String)>);

/// Every entry as (kind, name, size of its blobs once decompressed, size stored in the archive).
pub fn entry_sizes(view: &ArchiveView) -> PyResult<Vec<(&'static str, String, u64, u64)>> {
    let mut sizes = Vec::new();
    for entry in view.archive.entries() {
        let entry = entry.map_err(|error| view.error(error))?;
        let (mut size, mut stored) = (0u64, 0u64);
        for blob in entry.blobs() {
            let blob = blob.map_err(|error| view.error(error))?;
            size += blob.size();
            stored += blob.stored_size();
        }
        let kind = entry.kind().map_or("unknown", Kind::label);
        sizes.push((kind, entry.name().to_string(), size, stored));
    }
    Ok(sizes)
}

/// The modules whose bytecode (optimization level 0) is stored as is, with its size: what a
/// start hands `marshal` in place, when it imports them.
pub fn bytecode_in_place(view: &ArchiveView) -> PyResult<Vec<(String, u64)>> {
    let mut found = Vec::new();
    for entry in view.archive.entries() {
        let entry = entry.map_err(|error| view.error(error))?;
        if let Some(blob) = entry.blob(Role::Bytecode(0)).map_err(|error| view.error(error))? {
            if blob.compression() == compression::NONE {
                found.push((entry.name().to_string(), blob.stored_size()));
            }
        }
    }
    Ok(found)
}

/// Every entry as (kind, name, size in bytes of its blobs once decompressed).
pub fn entries<'py>(py: Python<'py>, view: &ArchiveView) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for entry in view.archive.entries() {
        let entry = entry.map_err(|error| view.error(error))?;
        let mut size = 0u64;
        for blob in entry.blobs() {
            size += blob.map_err(|error| view.error(error))?.size();
        }
        let kind = entry.kind().map_or("unknown", Kind::label);
        list.append(PyTuple::new(
            py,
            [
                kind.into_pyobject(py)?.into_any(),
                entry.name().into_pyobject(py)?.into_any(),
                size.into_pyobject(py)?.into_any(),
            ],
        )?)?;
    }
    Ok(list)
}

/// The symbol versions each native entry (extension module, extension package, shared library,
/// and a data file that is a shared object, loaded by path: `ctypes.CDLL`) needs, from its
/// `DT_VERNEED`.
pub fn version_needs(view: &ArchiveView) -> PyResult<Vec<VersionNeeds>> {
    let mut needs = Vec::new();
    for entry in view.archive.entries() {
        let entry = entry.map_err(|error| view.error(error))?;
        let Some(kind) = entry.kind() else {
            continue;
        };
        let library_file = kind == Kind::DataFile && {
            let file = entry.name().rsplit('/').next().unwrap_or_default();
            file.ends_with(".so") || file.contains(".so.")
        };
        if !kind.is_native() && !library_file {
            continue;
        }
        let Some(image) = entry.data(Role::Content).map_err(|error| view.error(error))? else {
            continue;
        };
        if library_file && !image.starts_with(b"\x7fELF") {
            continue;
        }
        let versions = crate::elf::elf_version_needs(&image)
            .map_err(|error| PyValueError::new_err(format!("{}: {error}", entry.name())))?;
        needs.push((kind.label().to_string(), entry.name().to_string(), versions));
    }
    Ok(needs)
}

/// Reads every blob and checks its checksum, without the GIL; `ArchiveError` on the first bad
/// one.
pub fn verify(py: Python<'_>, view: &Arc<ArchiveView>) -> PyResult<()> {
    let shared = Arc::clone(view);
    py.detach(|| shared.archive.verify_all()).map_err(|error| view.error(error))
}
