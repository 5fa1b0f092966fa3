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

/// `loadable_image(image: bytes) -> bytes`: the image cut after the last byte any program header
/// refers to, with the section header table dropped (`e_shoff`, `e_shnum`, `e_shstrndx` zeroed).
///
/// The dynamic loader reads only the ELF header, the program headers and the segments; what
/// follows them in a typical shared object is debug information, the static symbol table and the
/// section headers, often three quarters of an unstripped extension module. Copying less into
/// memory at import time is the point. Returns the image unchanged when nothing can be cut.
#[pyfunction]
pub fn loadable_image<'py>(py: Python<'py>, image: &[u8]) -> PyResult<std::borrow::Cow<'py, [u8]>> {
    let _ = py;
    let elf = goblin::elf::Elf::parse(image)
        .map_err(|error| PyValueError::new_err(format!("not a readable ELF object: {error}")))?;
    let header_end = elf.header.e_phoff + u64::from(elf.header.e_phnum) * u64::from(elf.header.e_phentsize);
    let mut end = header_end.max(u64::from(elf.header.e_ehsize));
    for program_header in &elf.program_headers {
        end = end.max(program_header.p_offset.saturating_add(program_header.p_filesz));
    }
    let end = usize::try_from(end).unwrap_or(usize::MAX);
    if end >= image.len() || elf.program_headers.is_empty() {
        return Ok(std::borrow::Cow::Owned(image.to_vec()));
    }
    let mut cut = image[..end].to_vec();
    // Zero the section header fields of the ELF header (offsets differ between ELF32 and ELF64).
    let (shoff, shoff_width, shnum, shstrndx) = if elf.is_64 { (0x28, 8, 0x3c, 0x3e) } else { (0x20, 4, 0x30, 0x32) };
    cut[shoff..shoff + shoff_width].fill(0);
    cut[shnum..shnum + 2].fill(0);
    cut[shstrndx..shstrndx + 2].fill(0);
    Ok(std::borrow::Cow::Owned(cut))
}
