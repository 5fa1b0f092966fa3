//! `ArchiveWriter`: writing archives from Python.

use std::path::PathBuf;

use ingot_format::{Kind, Namespace, Role, WriterOptions};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn value_error(error: ingot_format::Error) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Collects entries and writes an ingot archive.
///
/// `ArchiveWriter(*, bytecode_magic: bytes, python_version: tuple[int, int],
/// compression_level: int | None = None, large_compression_level: int | None = None)`: blobs
/// over 64 KiB that no dictionary serves are compressed at `large_compression_level` (default:
/// `compression_level`).
#[pyclass(module = "ingot._ingot")]
pub struct ArchiveWriter {
    inner: ingot_format::ArchiveWriter,
}

impl ArchiveWriter {
    fn add(&mut self, kind: Kind, name: &str, blobs: Vec<(Role, Vec<u8>)>) -> PyResult<()> {
        self.inner.add(kind, name, blobs).map_err(value_error)
    }
}

#[pymethods]
impl ArchiveWriter {
    #[new]
    #[pyo3(signature = (
        *, bytecode_magic, python_version, compression_level = None, large_compression_level = None,
        native_compression_level = None, compress_start = false
    ))]
    fn new(
        bytecode_magic: &[u8],
        python_version: (u8, u8),
        compression_level: Option<i32>,
        large_compression_level: Option<i32>,
        native_compression_level: Option<i32>,
        compress_start: bool,
    ) -> PyResult<Self> {
        let bytecode_magic: [u8; 4] = bytecode_magic.try_into().map_err(|_| {
            PyValueError::new_err("bytecode_magic is 4 bytes (importlib.util.MAGIC_NUMBER)")
        })?;
        let options = WriterOptions {
            bytecode_magic,
            python_version,
            zstd_level: compression_level,
            large_zstd_level: large_compression_level,
            native_zstd_level: native_compression_level,
            compress_start_bytecode: compress_start,
        };
        Ok(ArchiveWriter { inner: ingot_format::ArchiveWriter::new(options) })
    }

    /// Adds a module, or a regular package's `__init__` when `is_package`. `bytecode` maps an
    /// optimization level (0, 1, 2) to `marshal.dumps(code)`.
    #[pyo3(signature = (name, *, source = None, bytecode = None, is_package = false))]
    fn add_module(
        &mut self,
        name: &str,
        source: Option<Vec<u8>>,
        bytecode: Option<std::collections::BTreeMap<u8, Vec<u8>>>,
        is_package: bool,
    ) -> PyResult<()> {
        let mut blobs = Vec::new();
        if let Some(source) = source {
            blobs.push((Role::Source, source));
        }
        for (level, code) in bytecode.unwrap_or_default() {
            if level > 2 {
                return Err(PyValueError::new_err(format!(
                    "optimization level {level} is not 0, 1 or 2"
                )));
            }
            blobs.push((Role::Bytecode(level), code));
        }
        if blobs.is_empty() {
            return Err(PyValueError::new_err(format!(
                "module `{name}` has neither source nor bytecode"
            )));
        }
        let kind = if is_package { Kind::Package } else { Kind::Module };
        self.add(kind, name, blobs)
    }

    /// Adds a namespace package.
    fn add_namespace_package(&mut self, name: &str) -> PyResult<()> {
        self.add(Kind::NamespacePackage, name, Vec::new())
    }

    /// Adds an extension module: its ELF image and the DT_NEEDED names it links; with
    /// `is_package`, a package whose `__init__` is that extension module.
    #[pyo3(signature = (name, image, needed = Vec::new(), is_package = false))]
    fn add_extension_module(
        &mut self,
        name: &str,
        image: Vec<u8>,
        needed: Vec<String>,
        is_package: bool,
    ) -> PyResult<()> {
        let kind = if is_package { Kind::ExtensionPackage } else { Kind::ExtensionModule };
        self.add(kind, name, vec![(Role::Content, image), (Role::Needed, join_names(&needed)?)])
    }

    /// Adds a package data file by its `/`-separated path relative to the import root
    /// (`"jinja2/templates/base.html"`).
    fn add_data_file(&mut self, path: &str, content: Vec<u8>) -> PyResult<()> {
        self.add(Kind::DataFile, path, vec![(Role::Content, content)])
    }

    /// Adds a file of a dist-info directory (`"rich-13.7.1.dist-info/METADATA"`).
    fn add_dist_info_file(&mut self, path: &str, content: Vec<u8>) -> PyResult<()> {
        self.add(Kind::DistInfoFile, path, vec![(Role::Content, content)])
    }

    /// Adds a shared library by file name, with its SONAME and DT_NEEDED names.
    #[pyo3(signature = (name, image, soname = None, needed = Vec::new()))]
    fn add_shared_library(
        &mut self,
        name: &str,
        image: Vec<u8>,
        soname: Option<String>,
        needed: Vec<String>,
    ) -> PyResult<()> {
        let soname = soname.unwrap_or_else(|| name.to_string());
        self.add(
            Kind::SharedLibrary,
            name,
            vec![
                (Role::Content, image),
                (Role::Soname, soname.into_bytes()),
                (Role::Needed, join_names(&needed)?),
            ],
        )
    }

    /// Whether a module (`namespace="modules"`), file (`"files"`) or shared library
    /// (`"libraries"`) of that name was added.
    #[pyo3(signature = (name, namespace = "modules"))]
    fn contains(&self, name: &str, namespace: &str) -> PyResult<bool> {
        let kind = match namespace {
            "modules" => Kind::Module,
            "files" => Kind::DataFile,
            "libraries" => Kind::SharedLibrary,
            other => return Err(PyValueError::new_err(format!("unknown name space `{other}`"))),
        };
        Ok(self.inner.contains(kind, name))
    }

    /// Declares the entries a start is expected to read, in that order: `(name space, name)`
    /// pairs, the name space being `"modules"`, `"files"` or `"libraries"`. Their blobs go first
    /// in the data region (see `ingot_format::ArchiveWriter::set_first_use`).
    fn set_first_use(&mut self, order: Vec<(String, String)>) -> PyResult<()> {
        self.inner.set_first_use(namespaced(order)?);
        Ok(())
    }

    /// Takes compressed blobs and the dictionary from `cache` (an `ingot._ingot.BuildCache`)
    /// when it has them, and keeps there those computed; the archive is the same either way.
    fn set_cache(&mut self, cache: &crate::buildcache::BuildCache) {
        self.inner
            .set_cache(std::sync::Arc::new(crate::buildcache::WriterStore(cache.store.clone())));
    }

    /// Leaves these entries (`(name space, name)` pairs) out of the dictionary's training: the
    /// application's own modules, which change between builds (they are compressed with it all
    /// the same).
    fn set_untrained(&mut self, entries: Vec<(String, String)>) -> PyResult<()> {
        self.inner.set_untrained(namespaced(entries)?);
        Ok(())
    }

    /// Trains a zstd dictionary of at most `max_size` bytes on the small module blobs that will
    /// be compressed, adds it as `__ingot__/zstd-dictionary` and compresses them with it; returns
    /// its size, or None (compression off, too few such blobs). Call after `set_first_use`.
    fn train_dictionary(&mut self, py: Python<'_>, max_size: usize) -> PyResult<Option<usize>> {
        py.detach(|| self.inner.train_dictionary(max_size)).map_err(value_error)
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Writes the archive to `path` atomically and returns its size in bytes.
    fn write(&self, py: Python<'_>, path: PathBuf) -> PyResult<u64> {
        py.detach(|| self.inner.write_file(&path))
            .map_err(|error| PyRuntimeError::new_err(format!("{error}: {}", error_chain(&error))))
    }

    /// The archive as bytes.
    fn to_bytes(&self) -> PyResult<std::borrow::Cow<'static, [u8]>> {
        self.inner.to_vec().map(std::borrow::Cow::Owned).map_err(value_error)
    }
}

/// `(name space, name)` pairs with the name space by its label.
fn namespaced(pairs: Vec<(String, String)>) -> PyResult<Vec<(Namespace, String)>> {
    pairs
        .into_iter()
        .map(|(namespace, name)| {
            let namespace = match namespace.as_str() {
                "modules" => Namespace::Modules,
                "files" => Namespace::Files,
                "libraries" => Namespace::Libraries,
                other => {
                    return Err(PyValueError::new_err(format!("unknown name space `{other}`")))
                }
            };
            Ok((namespace, name))
        })
        .collect()
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    parts.join(": ")
}

fn join_names(names: &[String]) -> PyResult<Vec<u8>> {
    let mut joined = Vec::new();
    for name in names {
        if name.is_empty() || name.contains('\0') {
            return Err(PyValueError::new_err(format!("invalid library name {name:?}")));
        }
        joined.extend_from_slice(name.as_bytes());
        joined.push(0);
    }
    Ok(joined)
}
