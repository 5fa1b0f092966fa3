//! Reading the dynamic section of an ELF object: what the writer needs to know about extension
//! modules and shared libraries (their SONAME, the names they need, where they search).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
#[cfg(feature = "writer")]
use pyo3::types::PyDict;

#[cfg(feature = "writer")]
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

#[cfg(feature = "writer")]
/// `elf_class(path) -> tuple[bool, int] | None`: `(is_64, e_machine)` from the ELF header of the
/// file at `path`, read by goblin; None if it cannot be read or is not an ELF file. The one ELF
/// header reader of ingot's Python code (`ingot.elf.elf_class`, `elf_machine`).
#[pyfunction]
pub fn elf_class(path: std::path::PathBuf) -> Option<(bool, u16)> {
    use std::io::Read;
    let mut header = Vec::with_capacity(64);
    std::fs::File::open(path).ok()?.take(64).read_to_end(&mut header).ok()?;
    let parsed = goblin::elf::Elf::parse_header(&header).ok()?;
    Some((
        parsed.e_ident[goblin::elf::header::EI_CLASS] == goblin::elf::header::ELFCLASS64,
        parsed.e_machine,
    ))
}

/// `elf_version_needs(image: bytes) -> list[tuple[str, str]]`: the symbol versions an ELF object
/// needs, as `(library, version)` pairs (`("libc.so.6", "GLIBC_2.17")`), from its `DT_VERNEED`
/// table: read through the dynamic segment, so that it works on images whose section headers
/// were dropped (see `loadable_image`). Empty for an object without versioned needs.
#[pyfunction]
pub fn elf_version_needs(image: &[u8]) -> PyResult<Vec<(String, String)>> {
    let elf = goblin::elf::Elf::parse(image)
        .map_err(|error| PyValueError::new_err(format!("not a readable ELF object: {error}")))?;
    let bad = |what: &str| PyValueError::new_err(format!("malformed version needs: {what}"));
    let Some(dynamic) = &elf.dynamic else {
        return Ok(Vec::new());
    };
    let tag = |wanted: u64| {
        dynamic.dyns.iter().find(|entry| entry.d_tag == wanted).map(|entry| entry.d_val)
    };
    let (Some(address), Some(count)) =
        (tag(goblin::elf::dynamic::DT_VERNEED), tag(goblin::elf::dynamic::DT_VERNEEDNUM))
    else {
        return Ok(Vec::new());
    };
    // The table's file offset: the loadable segment that maps its address.
    let offset = elf
        .program_headers
        .iter()
        .filter(|header| header.p_type == goblin::elf::program_header::PT_LOAD)
        .find(|header| {
            header.p_vaddr <= address && address < header.p_vaddr.saturating_add(header.p_filesz)
        })
        .map(|header| address - header.p_vaddr + header.p_offset)
        .ok_or_else(|| bad("DT_VERNEED is outside every loaded segment"))?;
    let read_u16 = |at: u64| -> PyResult<u16> {
        let at = usize::try_from(at).map_err(|_| bad("offset"))?;
        let bytes = image
            .get(at..at.checked_add(2).ok_or_else(|| bad("offset"))?)
            .ok_or_else(|| bad("truncated"))?;
        Ok(if elf.little_endian {
            u16::from_le_bytes([bytes[0], bytes[1]])
        } else {
            u16::from_be_bytes([bytes[0], bytes[1]])
        })
    };
    let read_u32 = |at: u64| -> PyResult<u32> {
        let at = usize::try_from(at).map_err(|_| bad("offset"))?;
        let bytes = image
            .get(at..at.checked_add(4).ok_or_else(|| bad("offset"))?)
            .ok_or_else(|| bad("truncated"))?;
        let array = [bytes[0], bytes[1], bytes[2], bytes[3]];
        Ok(if elf.little_endian { u32::from_le_bytes(array) } else { u32::from_be_bytes(array) })
    };
    let name = |index: u32| -> PyResult<String> {
        elf.dynstrtab
            .get_at(index as usize)
            .map(str::to_string)
            .ok_or_else(|| bad("a name outside the string table"))
    };
    let mut needs = Vec::new();
    let mut entry = offset;
    for _ in 0..count.min(4096) {
        // Elfxx_Verneed: vn_version u16, vn_cnt u16, vn_file u32, vn_aux u32, vn_next u32.
        let (auxiliaries, file, first, next) = (
            read_u16(entry + 2)?,
            read_u32(entry + 4)?,
            read_u32(entry + 8)?,
            read_u32(entry + 12)?,
        );
        let library = name(file)?;
        let mut auxiliary = entry + u64::from(first);
        for _ in 0..auxiliaries {
            // Elfxx_Vernaux: vna_hash u32, vna_flags u16, vna_other u16, vna_name u32, vna_next u32.
            needs.push((library.clone(), name(read_u32(auxiliary + 8)?)?));
            let step = read_u32(auxiliary + 12)?;
            if step == 0 {
                break;
            }
            auxiliary += u64::from(step);
        }
        if next == 0 {
            break;
        }
        entry += u64::from(next);
    }
    Ok(needs)
}

#[cfg(feature = "writer")]
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
    let header_end =
        elf.header.e_phoff + u64::from(elf.header.e_phnum) * u64::from(elf.header.e_phentsize);
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
    let (shoff, shoff_width, shnum, shstrndx) =
        if elf.is_64 { (0x28, 8, 0x3c, 0x3e) } else { (0x20, 4, 0x30, 0x32) };
    cut[shoff..shoff + shoff_width].fill(0);
    cut[shnum..shnum + 2].fill(0);
    cut[shstrndx..shstrndx + 2].fill(0);
    Ok(std::borrow::Cow::Owned(cut))
}

#[cfg(feature = "writer")]
/// `elf_section(path: str, name: str) -> bytes | None`: the contents of the section `name` of the
/// ELF file at `path`, found through its section header table; None when it has no such section.
/// ValueError (with the reason: "it is not an ELF file", "it is truncated ...", "its ... section
/// is empty") when the file is not a whole ELF file; OSError when it cannot be read.
#[pyfunction]
pub fn elf_section(path: std::path::PathBuf, name: &str) -> PyResult<Option<Vec<u8>>> {
    let file = std::fs::File::open(&path)?;
    // SAFETY: the map is read here and dropped before returning; a file changed meanwhile gives
    // wrong bytes or a parse error, not undefined behaviour in safe code reading a byte slice.
    let map = unsafe { memmap2::Mmap::map(&file) }?;
    let image: &[u8] = &map;
    if image.len() < 16 || &image[..4] != b"\x7fELF" || !matches!(image[4], 1 | 2) {
        return Err(PyValueError::new_err("it is not an ELF file"));
    }
    let elf = goblin::elf::Elf::parse(image).map_err(|error| {
        PyValueError::new_err(format!("it is truncated or malformed ({error})"))
    })?;
    if elf.section_headers.is_empty() {
        return Err(PyValueError::new_err("it has no section header table"));
    }
    for header in &elf.section_headers {
        if elf.shdr_strtab.get_at(header.sh_name) != Some(name) {
            continue;
        }
        if header.sh_type == goblin::elf::section_header::SHT_NOBITS {
            return Err(PyValueError::new_err(format!("its {name} section is empty")));
        }
        let range = header.file_range().ok_or_else(|| {
            PyValueError::new_err(format!("its {name} section has no bytes in the file"))
        })?;
        let bytes = image.get(range.clone()).ok_or_else(|| {
            PyValueError::new_err(format!(
                "it is truncated (its {name} section needs bytes {}-{}, the file has {})",
                range.start,
                range.end,
                image.len()
            ))
        })?;
        return Ok(Some(bytes.to_vec()));
    }
    Ok(None)
}
