//! Reading the dynamic section of an ELF object: what the writer needs to know about extension
//! modules and shared libraries (their SONAME, the names they need, where they search).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `elf_dynamic(image: bytes) -> dict`: `soname` (str or None), `needed`, `rpath` and `runpath`
/// (lists of str), `machine` (int) and `is_64` (bool) of an ELF shared object.
#[pyfunction]
pub fn elf_dynamic<'py>(py: Python<'py>, image: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let elf = goblin::elf::Elf::parse(image)
        .map_err(|error| PyValueError::new_err(format!("not a readable ELF object: {error}")))?;
    let result = PyDict::new(py);
    result.set_item("soname", elf.soname)?;
    result.set_item("needed", elf.libraries.clone())?;
    result.set_item("rpath", elf.rpaths.clone())?;
    result.set_item("runpath", elf.runpaths.clone())?;
    result.set_item("machine", elf.header.e_machine)?;
    result.set_item("is_64", elf.is_64)?;
    Ok(result)
}
