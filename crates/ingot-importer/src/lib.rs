//! The ingot importer: a PEP 451 meta-path finder and loader that serves modules, package data,
//! distribution metadata and native code from a memory-mapped ingot archive.
//!
//! Built twice: as the extension module `ingot._ingot` (for an ordinary Python, and for the
//! tests) and as a library the launcher links and registers as a built-in module.

mod cache;
mod elf;
mod error;
mod finder;
mod native;
mod writer;

use pyo3::prelude::*;

pub use finder::IngotFinder;

/// The module `ingot._ingot`.
#[pymodule(gil_used = true)]
pub fn _ingot(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("ArchiveError", py.get_type::<error::ArchiveError>())?;
    module.add_class::<finder::IngotFinder>()?;
    module.add_class::<finder::IngotPathEntryFinder>()?;
    module.add_class::<writer::ArchiveWriter>()?;
    module.add_function(wrap_pyfunction!(elf::elf_dynamic, module)?)?;
    module.add_function(wrap_pyfunction!(elf::loadable_image, module)?)?;
    module.add("FORMAT_VERSION", ingot_format::layout::VERSION)?;
    Ok(())
}
