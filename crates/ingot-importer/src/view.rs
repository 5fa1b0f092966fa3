//! The archive as a read-only file system: modules, files and native images under the archive's
//! path, with virtual paths for what the finders serve (`<archive>/pkg/mod.py`), directory
//! listings, and the `files` policy's trees. The finders, the read-ahead and the regular-expression
//! table work on this view; it knows none of them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use ingot_format::{Archive, Entry, Kind, Namespace, Role};
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;

use crate::decompressed::{Data, Decompressed};
use crate::error::archive_error;
use crate::files::FilesPolicy;
use crate::prefetched::Prefetched;

/// One archive, seen as the tree of files under its path; shared by a finder, its path-entry
/// finders and its background threads.
pub struct ArchiveView {
    pub archive: Archive,
    /// The archive's absolute path: the root of every virtual path.
    pub path: String,
    /// `path` followed by `/`.
    pub prefix: String,
    /// The bytecode blob matching `sys.flags.optimize`.
    pub bytecode_role: Role,
    /// `importlib.machinery.EXTENSION_SUFFIXES[0]`, for extension modules' virtual file names.
    pub extension_suffix: String,
    /// Top-level `*.dist-info` directories, computed on first use.
    pub dist_info_dirs: OnceLock<Vec<String>>,
    /// Packages under the `files` policy and their materialized trees.
    pub files: FilesPolicy,
    /// Files read before, decompressed.
    pub decompressed: Decompressed,
    /// The start's compressed bytecode, decompressed ahead of its imports.
    pub prefetched: Prefetched,
}

impl ArchiveView {
    pub fn error(&self, error: ingot_format::Error) -> PyErr {
        archive_error(&self.path, error)
    }

    /// Looks up a module entry.
    pub fn module(&self, name: &str) -> PyResult<Option<Entry<'_>>> {
        self.archive.find(Namespace::Modules, name).map_err(|error| self.error(error))
    }

    /// The virtual file a module entry stands for, relative to the archive root.
    pub fn module_file(&self, name: &str, kind: Kind) -> Option<String> {
        let stem = name.replace('.', "/");
        match kind {
            Kind::Module => Some(format!("{stem}.py")),
            Kind::Package => Some(format!("{stem}/__init__.py")),
            Kind::ExtensionModule => Some(format!("{stem}{}", self.extension_suffix)),
            Kind::ExtensionPackage => Some(format!("{stem}/__init__{}", self.extension_suffix)),
            _ => None,
        }
    }

    /// Maps a path relative to the archive root to the entry and blob that hold its bytes: a data
    /// or dist-info file, the source of a module (`a/b.py`, `a/__init__.py`), or the image of an
    /// extension module (`a/b<extension suffix>`).
    pub(crate) fn file_raw(
        &self,
        relative: &str,
    ) -> ingot_format::Result<Option<(Entry<'_>, Role)>> {
        if let Some(entry) = self.archive.find(Namespace::Files, relative)? {
            return Ok(Some((entry, Role::Content)));
        }
        let (module, wanted, role) = if let Some(stem) = relative.strip_suffix(".py") {
            match stem.strip_suffix("/__init__") {
                Some(package) => (package, Kind::Package, Role::Source),
                None => (stem, Kind::Module, Role::Source),
            }
        } else if let Some(stem) = relative.strip_suffix(self.extension_suffix.as_str()) {
            match stem.strip_suffix("/__init__") {
                Some(package) => (package, Kind::ExtensionPackage, Role::Content),
                None => (stem, Kind::ExtensionModule, Role::Content),
            }
        } else {
            return Ok(None);
        };
        if module.is_empty() || module.contains('.') {
            return Ok(None);
        }
        if let Some(entry) = self.archive.find(Namespace::Modules, &module.replace('/', "."))? {
            if entry.kind() == Some(wanted) && entry.blob(role)?.is_some() {
                return Ok(Some((entry, role)));
            }
        }
        Ok(None)
    }

    pub fn file(&self, relative: &str) -> PyResult<Option<(Entry<'_>, Role)>> {
        self.file_raw(relative).map_err(|error| self.error(error))
    }

    /// The bytes of a file relative to the archive root, decompressed once for all its reads
    /// (see [`Decompressed`]).
    pub fn read(&self, relative: &str) -> PyResult<Option<Data<'_>>> {
        let found = self.file(relative)?;
        let Some((entry, role)) = found else { return Ok(None) };
        let Some(blob) = entry.blob(role).map_err(|error| self.error(error))? else {
            return Ok(None);
        };
        self.decompressed.data(&self.archive, &blob).map(Some).map_err(|error| self.error(error))
    }

    fn read_raw(&self, relative: &str) -> ingot_format::Result<Option<Cow<'_, [u8]>>> {
        match self.file_raw(relative)? {
            Some((entry, role)) => entry.data(role),
            None => Ok(None),
        }
    }

    /// For a module whose package is under the `files` policy: the root of its materialized tree
    /// in the extraction cache (written or verified on the package's first import). `None` for
    /// modules served from memory.
    pub fn tree_root(&self, py: Python<'_>, module: &str) -> PyResult<Option<String>> {
        if !self.files.covers(module) {
            return Ok(None);
        }
        let package = module.split('.').next().unwrap_or(module);
        if let Some(root) = self.files.materialized(package) {
            return Ok(Some(root));
        }
        // Without the GIL: the writers are threads, and other Python threads may go on meanwhile.
        // The policy's lock is only ever waited for without the GIL held.
        let result = py
            .detach(|| self.files.tree(&self.archive, package, |relative| self.read_raw(relative)));
        result.map(Some).map_err(|why| {
            PyImportError::new_err(format!(
                "ingot archive `{}`: cannot materialize package `{package}` (files policy) in the extraction cache: {}\nhint: set {} to a private directory of yours (`ingot cache dir` shows the one in use)",
                self.path,
                crate::error::chain(&why),
                crate::cache::CACHE_DIR_VAR
            ))
        })
    }

    /// The path relative to the archive root of `path`: a virtual path under the archive path, or
    /// a real path inside a materialized tree.
    pub fn relative_any(&self, path: &str) -> Option<String> {
        self.relative(path).or_else(|| {
            if self.files.is_empty() {
                None
            } else {
                self.files.relative(path)
            }
        })
    }

    /// The children of a directory relative to the archive root (`""` is the root): name → is_dir.
    pub fn list_dir(&self, relative: &str) -> PyResult<BTreeMap<String, bool>> {
        let mut children = BTreeMap::new();
        let file_prefix = if relative.is_empty() { String::new() } else { format!("{relative}/") };
        for entry in
            self.archive.find_prefix(Namespace::Files, &file_prefix).map_err(|e| self.error(e))?
        {
            let entry = entry.map_err(|error| self.error(error))?;
            let rest = &entry.name()[file_prefix.len()..];
            match rest.split_once('/') {
                Some((directory, _)) => {
                    children.insert(directory.to_string(), true);
                }
                None => {
                    children.entry(rest.to_string()).or_insert(false);
                }
            }
        }
        // A path with a dot in it cannot name a package: no modules below it.
        if relative.contains('.') {
            return Ok(children);
        }
        let module_prefix = if relative.is_empty() {
            String::new()
        } else {
            format!("{}.", relative.replace('/', "."))
        };
        for entry in self
            .archive
            .find_prefix(Namespace::Modules, &module_prefix)
            .map_err(|e| self.error(e))?
        {
            let entry = entry.map_err(|error| self.error(error))?;
            let rest = &entry.name()[module_prefix.len()..];
            if let Some((package, _)) = rest.split_once('.') {
                children.insert(package.to_string(), true);
                continue;
            }
            match entry.kind() {
                Some(Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage) => {
                    children.insert(rest.to_string(), true);
                }
                Some(Kind::Module)
                    if entry.blob(Role::Source).map_err(|e| self.error(e))?.is_some() =>
                {
                    children.entry(format!("{rest}.py")).or_insert(false);
                }
                Some(Kind::ExtensionModule) => {
                    children.entry(format!("{rest}{}", self.extension_suffix)).or_insert(false);
                }
                _ => {}
            }
        }
        if !relative.is_empty() {
            if let Some(entry) = self.module(&relative.replace('/', "."))? {
                if entry.kind() == Some(Kind::Package)
                    && entry.blob(Role::Source).map_err(|e| self.error(e))?.is_some()
                {
                    children.entry("__init__.py".to_string()).or_insert(false);
                }
                if entry.kind() == Some(Kind::ExtensionPackage) {
                    children.entry(format!("__init__{}", self.extension_suffix)).or_insert(false);
                }
            }
        }
        Ok(children)
    }

    /// Whether a path relative to the archive root is a directory: a package, or a prefix of files.
    pub fn is_dir(&self, relative: &str) -> PyResult<bool> {
        if relative.is_empty() {
            return Ok(true);
        }
        if !relative.contains('.') {
            if let Some(entry) = self.module(&relative.replace('/', "."))? {
                if matches!(
                    entry.kind(),
                    Some(Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage)
                ) {
                    return Ok(true);
                }
            }
        }
        let prefix = format!("{relative}/");
        let mut files =
            self.archive.find_prefix(Namespace::Files, &prefix).map_err(|e| self.error(e))?;
        Ok(files.next().is_some())
    }

    /// The immediate submodules of the package directory `relative` (`""`: top level), for
    /// `pkgutil.iter_modules`: (name, is_package).
    pub fn submodules(&self, relative: &str) -> PyResult<Vec<(String, bool)>> {
        let prefix = if relative.is_empty() {
            String::new()
        } else {
            format!("{}.", relative.replace('/', "."))
        };
        let mut found = Vec::new();
        for entry in
            self.archive.find_prefix(Namespace::Modules, &prefix).map_err(|e| self.error(e))?
        {
            let entry = entry.map_err(|error| self.error(error))?;
            let rest = &entry.name()[prefix.len()..];
            if rest.contains('.') {
                continue;
            }
            let is_package = matches!(
                entry.kind(),
                Some(Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage)
            );
            if entry.kind().is_some() {
                found.push((rest.to_string(), is_package));
            }
        }
        Ok(found)
    }

    /// The normalized path relative to the archive root of `path`, a path under the archive
    /// path (`/opt/app.ingot/pkg/../pkg/x`); `None` when it is not under it or climbs out of it.
    pub fn relative(&self, path: &str) -> Option<String> {
        let rest = if path == self.path { "" } else { path.strip_prefix(&self.prefix)? };
        let mut parts: Vec<&str> = Vec::new();
        for part in rest.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                part => parts.push(part),
            }
        }
        Some(parts.join("/"))
    }
}
