//! The ingot importer: a PEP 451 meta-path finder and loader that serves modules, package data,
//! distribution metadata and native code from a memory-mapped ingot archive.
//!
//! Built twice: as the extension module `ingot._ingot` (for an ordinary Python, and for the
//! tests) and as a library the launcher links and registers as a built-in module.

#[cfg(feature = "writer")]
mod binstrings;
#[cfg(feature = "writer")]
mod buildcache;
mod cache;
/// Whether this process started privileged (set-user-ID, file capabilities; ids that differ): the
/// launcher trusts neither `argv[0]` nor the environment then.
pub use cache::privileged;
pub mod datapaths;
mod decompressed;
mod elf;
mod error;
pub mod files;
mod finder;
mod hooks;
pub mod launch;
#[cfg(feature = "writer")]
mod marshal;
mod native;
mod pages;
mod prefetched;
pub mod readahead;
mod regexes;
mod survey;
mod view;
#[cfg(feature = "writer")]
mod writer;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pub use finder::IngotFinder;
pub use native::{cache_path, library_by_path, provide_libgcc_s, CachePath};
pub use view::ArchiveView;

/// The module `ingot._ingot`.
#[pymodule(gil_used = true)]
pub fn _ingot(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("ArchiveError", py.get_type::<error::ArchiveError>())?;
    module.add_class::<IngotFinder>()?;
    module.add_class::<finder::IngotPathEntryFinder>()?;
    module.add_class::<finder::IngotAliasLoader>()?;
    #[cfg(feature = "writer")]
    module.add_class::<writer::ArchiveWriter>()?;
    #[cfg(feature = "writer")]
    module.add_class::<buildcache::BuildCache>()?;
    module.add_class::<regexes::PrecompiledRegexes>()?;
    // The build's tools (ELF readers, tree writing): the launcher's `_ingot` leaves them out.
    #[cfg(feature = "writer")]
    {
        module.add_function(wrap_pyfunction!(elf::elf_dynamic, module)?)?;
        module.add_function(wrap_pyfunction!(elf::loadable_image, module)?)?;
        module.add_function(wrap_pyfunction!(elf::elf_section, module)?)?;
        module.add_function(wrap_pyfunction!(elf::elf_class, module)?)?;
        module.add_function(wrap_pyfunction!(binstrings::binary_names, module)?)?;
        module.add_function(wrap_pyfunction!(binstrings::loose_binary_names, module)?)?;
        module.add_function(wrap_pyfunction!(binstrings::binary_path_names, module)?)?;
        module.add_function(wrap_pyfunction!(content_hash, module)?)?;
        module.add_function(wrap_pyfunction!(marshal::canonical_marshal, module)?)?;
        module.add_function(wrap_pyfunction!(write_tree, module)?)?;
        module.add_function(wrap_pyfunction!(regexes::regex_key, module)?)?;
        module.add_function(wrap_pyfunction!(regexes::regex_entry_name, module)?)?;
        module.add_function(wrap_pyfunction!(launch::launch_config_json, module)?)?;
        module.add_function(wrap_pyfunction!(files::files_manifest, module)?)?;
        // The smallest native image a start reads that a default build compresses (`ingot
        // inspect --sizes` says what a build would compress).
        module.add("NATIVE_BLOB_MIN", ingot_format::NATIVE_BLOB_MIN)?;
    }
    module.add_function(wrap_pyfunction!(elf::elf_version_needs, module)?)?;
    module.add_function(wrap_pyfunction!(cache_root, module)?)?;
    module.add_function(wrap_pyfunction!(make_cache_dirs, module)?)?;
    module.add_function(wrap_pyfunction!(archive_info, module)?)?;
    // The rule for what killed writers left in the extraction cache (`ingot cache prune`), and
    // for the temporaries a build leaves beside its output (`ingot.build.interrupt`).
    module.add_function(wrap_pyfunction!(writer_gone, module)?)?;
    module.add_function(wrap_pyfunction!(stale_temporary, module)?)?;
    module.add("TEMPORARY_PREFIX", cache::TEMPORARY_PREFIX)?;
    module.add("STALE_TEMPORARY_AFTER", cache::STALE_AFTER.as_secs_f64())?;
    module.add("WRITER_GONE_AFTER", cache::WRITER_GONE_AFTER.as_secs_f64())?;
    module.add("FORMAT_VERSION", ingot_format::layout::VERSION)?;
    module.add("TRAILER_MAGIC", PyBytes::new(py, &ingot_format::layout::TRAILER_MAGIC))?;
    // The entry kinds (`ingot_format::Kind`), for `ingot pack`: their labels in listing order,
    // and the name space of each.
    {
        use ingot_format::Kind;
        module.add("KINDS", pyo3::types::PyTuple::new(py, Kind::LISTED.map(Kind::label))?)?;
        let namespaces = PyDict::new(py);
        for kind in Kind::LISTED {
            namespaces.set_item(kind.label(), kind.namespace().label())?;
        }
        module.add("KIND_NAMESPACES", namespaces)?;
        // Those whose content is a native image (`Kind::is_native`), and the modules among them
        // (`Kind::is_extension`), in listing order.
        let labels = |keep: fn(Kind) -> bool| {
            Kind::LISTED.into_iter().filter(|&kind| keep(kind)).map(Kind::label).collect::<Vec<_>>()
        };
        module.add("NATIVE_KINDS", pyo3::types::PyTuple::new(py, labels(Kind::is_native))?)?;
        module
            .add("EXTENSION_KINDS", pyo3::types::PyTuple::new(py, labels(Kind::is_extension))?)?;
    }
    // The names writer and readers agree on (`ingot_format::names`), for `ingot pack`/`build`.
    {
        use ingot_format::names::*;
        module.add("RESERVED_PREFIX", RESERVED_PREFIX)?;
        module.add("LAUNCH_CONFIG", LAUNCH_CONFIG)?;
        module.add("LAUNCH_CONFIG_VERSION", LAUNCH_CONFIG_VERSION)?;
        module.add("FIRST_USE", FIRST_USE)?;
        let tag = |byte: u8| char::from(byte).to_string();
        module.add("FIRST_USE_MODULE", tag(FIRST_USE_MODULE))?;
        module.add("FIRST_USE_FILE", tag(FIRST_USE_FILE))?;
        module.add("FIRST_USE_LIBRARY", tag(FIRST_USE_LIBRARY))?;
        module.add("FILES_MANIFEST_DIR", FILES_MANIFEST_DIR)?;
        module.add("SYSTEM_FIRST", SYSTEM_FIRST)?;
        module.add("PREFIX_DATA", PREFIX_DATA)?;
        module.add("ZSTD_DICTIONARY", ZSTD_DICTIONARY)?;
        module.add("REGEX_DIR", REGEX_DIR)?;
        module.add("REGEX_MAGIC", REGEX_MAGIC)?;
        module.add("REGEX_MODULE", REGEX_MODULE)?;
        module.add("LAUNCHER_FACTS_SECTION", LAUNCHER_FACTS_SECTION)?;
        module.add("LAUNCHER_FACTS_FORMAT", LAUNCHER_FACTS_FORMAT)?;
    }
    // ingot's version (the crates', the Python package's and the launcher's are one).
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// `archive_info(path) -> dict`: what the file at `path` (an archive, or an executable with one
/// appended) is, read by the format's reader (which treats it as hostile): `file_size`,
/// `archive_size` (header to trailer), `launcher_size` (what comes before the archive),
/// `format_version`, `python` (`"3.11"`, whose bytecode it holds), `bytecode_magic`, and
/// `entries`. `ArchiveError` if it holds no readable archive.
#[pyfunction]
fn archive_info(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let shown = path.display().to_string();
    let archive = ingot_format::Archive::open_path(&path).map_err(|error| {
        error::ArchiveError::new_err(format!("ingot archive `{shown}`: {error}"))
    })?;
    let header = archive.header();
    let launcher = archive.start_offset();
    let size = archive.bytes().len() as u64;
    let info = PyDict::new(py);
    info.set_item("file_size", launcher + size)?;
    info.set_item("archive_size", size)?;
    info.set_item("launcher_size", launcher)?;
    info.set_item("format_version", header.version)?;
    let (major, minor) = header.python_version;
    info.set_item("python", format!("{major}.{minor}"))?;
    info.set_item("bytecode_magic", PyBytes::new(py, &header.bytecode_magic))?;
    info.set_item("entries", header.entry_count)?;
    Ok(info)
}

/// `make_cache_dirs(path, mode=0o700)`: makes `path` (and its missing parents) a directory of this
/// user that no other user can write or replace, each missing component created relative to a
/// checked descriptor of its parent (the rule of the extraction cache's root, for the build cache
/// and the runtime store); `ValueError` naming the directory and why when it cannot be.
#[pyfunction]
#[pyo3(signature = (path, mode = 0o700))]
fn make_cache_dirs(path: std::path::PathBuf, mode: u32) -> PyResult<()> {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    cache::make_dirs_checked(&path, uid, mode)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error::chain(&error)))
}

/// `writer_gone(name: str) -> bool`: whether the process that wrote the temporary `name`
/// (`<anything>-<pid>-<random>`: its pid second from the end) is gone; false when the name holds
/// no pid, or the process exists or cannot be asked about.
#[pyfunction]
fn writer_gone(name: std::ffi::OsString) -> bool {
    cache::writer_is_gone(name.as_encoded_bytes())
}

/// `stale_temporary(name: str, age: float) -> bool`: whether the temporary `name`, last modified
/// `age` seconds ago, is what a killed writer left, as the importer decides it for the cache's
/// `.tmp-*` trees: over `STALE_TEMPORARY_AFTER` seconds old, or over `WRITER_GONE_AFTER` with its
/// writer gone ([`writer_gone`]).
#[pyfunction]
fn stale_temporary(name: std::ffi::OsString, age: f64) -> bool {
    // (A negative age, a time in the future, is no age.)
    let age = std::time::Duration::try_from_secs_f64(age).unwrap_or_default();
    cache::is_stale_temporary(name.as_encoded_bytes(), age)
}

/// `cache_root() -> str`: the extraction cache's root as the importer resolves it
/// (`$INGOT_CACHE_DIR`, else `$XDG_CACHE_HOME/ingot`, else `$HOME/.cache/ingot`); ValueError if
/// none is usable. Nothing is created.
#[pyfunction]
fn cache_root() -> PyResult<String> {
    Ok(cache::root().to_string_lossy().into_owned())
}

#[cfg(feature = "writer")]
/// `content_hash(data: bytes) -> int`: the XXH3-64 of `data`, as tree manifests record it.
#[pyfunction]
fn content_hash(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}

#[cfg(feature = "writer")]
/// `write_tree(root: str, id: str, files: list[tuple[str, bytes]]) -> str`: materializes `files`
/// (tree-relative path, bytes) as the cache tree `<root>/trees/<id>` the way the importer does it
/// for a `files` package (verify, or write a temporary tree and rename it into place); returns the
/// tree's path. For tools and benchmarks; raises OSError on failure.
#[pyfunction]
fn write_tree(
    py: Python<'_>,
    root: std::path::PathBuf,
    id: &str,
    files: Vec<(String, Vec<u8>)>,
) -> PyResult<String> {
    let manifest: Vec<cache::TreeFile> = files
        .iter()
        .map(|(path, bytes)| cache::TreeFile {
            path: path.clone(),
            size: bytes.len() as u64,
            hash: xxhash_rust::xxh3::xxh3_64(bytes),
        })
        .collect();
    let by_path: std::collections::HashMap<&str, &[u8]> =
        files.iter().map(|(path, bytes)| (path.as_str(), bytes.as_slice())).collect();
    let result = py.detach(|| {
        cache::ensure_tree(&root, "trees", id, &manifest, |file| {
            by_path
                .get(file.path.as_str())
                .map(|bytes| std::borrow::Cow::Borrowed(*bytes))
                .ok_or_else(|| cache::CacheError::NoBytes { path: file.path.clone() })
        })
    });
    let tree =
        result.map_err(|error| pyo3::exceptions::PyOSError::new_err(error::chain(&error)))?;
    Ok(tree.to_string_lossy().into_owned())
}
