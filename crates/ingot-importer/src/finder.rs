//! `IngotFinder`: the meta-path finder and loader, and `IngotPathEntryFinder`, its path-entry
//! counterpart for `sys.path_hooks` (which `pkgutil` and the path finder use).
//!
//! The methods mirror CPython's `zipimport.zipimporter` and `importlib._bootstrap_external`
//! `SourceLoader`/`ExtensionFileLoader`; where ingot differs, `docs/importer.md` says so.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::c_char;
use std::sync::{Arc, OnceLock};

/// A native entry's (kind, name, [(library, symbol version), ...]).
type VersionNeeds = (String, String, Vec<(String, String)>);

use ingot_format::{Archive, Entry, Kind, Namespace, Role};
use pyo3::exceptions::{PyFileNotFoundError, PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyModule, PyString, PyTuple};
use pyo3::{ffi, intern};

use crate::decompressed::{Data, Decompressed};
use crate::error::{archive_error, ArchiveError};
use crate::files::{self, FilesPolicy};
use crate::native;
use crate::regexes;

/// Everything a finder and its path-entry finders share.
pub struct Shared {
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
}

/// The list of entries a start is expected to read, in order, written by `ingot build`: one per
/// line, `m <module>`, `f <file path>` or `l <library>` (see docs/format.md, "Files ingot reserves").
pub const FIRST_USE: &str = "__ingot__/first-use";

impl Shared {
    /// Starts reading the archive's first-use entries ([`FIRST_USE`]) on a thread of its own:
    /// their blobs are checked against their checksums and their pages mapped ahead of the
    /// interpreter, which then finds them verified and resident (on a cold start, the file is read
    /// while the interpreter works). Nothing happens without the list. Errors are left for the
    /// reads that need the blobs to report.
    pub fn read_ahead(self: &Arc<Self>) {
        if !matches!(self.archive.find(Namespace::Files, FIRST_USE), Ok(Some(_))) {
            return;
        }
        native::resolve_mode();
        let shared = Arc::clone(self);
        let _ = std::thread::Builder::new().name("ingot-read-ahead".into()).spawn(move || {
            crate::pages::fence_native_images(&shared.archive);
            let Ok(Some(list)) = shared.archive.find(Namespace::Files, FIRST_USE) else { return };
            let Ok(Some(list)) = list.data(Role::Content) else { return };
            for line in list.split(|&byte| byte == b'\n') {
                let (namespace, name) = match line {
                    [b'm', b' ', name @ ..] => (Namespace::Modules, name),
                    [b'f', b' ', name @ ..] => (Namespace::Files, name),
                    [b'l', b' ', name @ ..] => (Namespace::Libraries, name),
                    _ => continue,
                };
                let Ok(name) = std::str::from_utf8(name) else { continue };
                let Ok(Some(entry)) = shared.archive.find(namespace, name) else { continue };
                let native = matches!(
                    entry.kind(),
                    Some(Kind::ExtensionModule | Kind::ExtensionPackage | Kind::SharedLibrary)
                );
                for blob in entry.blobs().flatten() {
                    // A native image is checked as it is copied into its memory file, from the
                    // file rather than the map; reading it here would only make its pages resident.
                    let skip =
                        matches!(blob.role(), Role::Source | Role::Bytecode(1) | Role::Bytecode(2))
                            || (native && blob.role() == Role::Content);
                    if !skip {
                        let _ = shared.archive.verify_blob(&blob);
                    }
                }
                // Native code: its memory file, made here rather than by the import.
                let label = match entry.kind() {
                    // (A `files` package's extension modules are loaded from its tree instead.)
                    Some(Kind::ExtensionModule | Kind::ExtensionPackage)
                        if !shared.files.covers(name) =>
                    {
                        format!("{name}{}", shared.extension_suffix)
                    }
                    Some(Kind::SharedLibrary) if !native::already_in_process(name) => {
                        name.to_string()
                    }
                    _ => continue,
                };
                if let Ok(Some(blob)) = entry.blob(Role::Content) {
                    native::prepare(&shared.archive, &label, blob);
                }
            }
        });
    }

    fn error(&self, error: ingot_format::Error) -> PyErr {
        archive_error(&self.path, error)
    }

    /// Looks up a module entry.
    pub fn module(&self, name: &str) -> PyResult<Option<Entry<'_>>> {
        self.archive.find(Namespace::Modules, name).map_err(|error| self.error(error))
    }

    /// The virtual file a module entry stands for, relative to the archive root.
    fn module_file(&self, name: &str, kind: Kind) -> Option<String> {
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
    fn file_raw(&self, relative: &str) -> ingot_format::Result<Option<(Entry<'_>, Role)>> {
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

    fn file(&self, relative: &str) -> PyResult<Option<(Entry<'_>, Role)>> {
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
        let result = py.detach(|| {
            self.files.tree(&self.archive, package, |relative| {
                self.read_raw(relative).map_err(|error| error.to_string())
            })
        });
        result.map(Some).map_err(|why| {
            PyImportError::new_err(format!(
                "ingot archive `{}`: cannot materialize package `{package}` (files policy) in the extraction cache: {why}\nhint: set {} to a private directory of yours (`ingot cache dir` shows the one in use)",
                self.path,
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

/// A meta-path finder and loader over one ingot archive.
///
/// `IngotFinder(path)` maps the archive at `path` (a `.ingot` file or an executable with an
/// archive appended) and raises `ArchiveError` if it is not a usable archive for this Python.
#[pyclass(module = "ingot._ingot", frozen)]
pub struct IngotFinder {
    pub shared: Arc<Shared>,
    module_spec: Py<PyAny>,
    fix_co_filename: Py<PyAny>,
    create_dynamic: Py<PyAny>,
    exec_dynamic: Py<PyAny>,
    support: OnceLock<Py<PyModule>>,
}

const SUPPORT_SOURCE: &str = include_str!("../../../python/ingot/_support.py");

impl IngotFinder {
    pub fn open(py: Python<'_>, path: &str, any_python: bool) -> PyResult<IngotFinder> {
        let absolute = std::path::absolute(path)
            .map_err(|error| ArchiveError::new_err(format!("ingot archive `{path}`: {error}")))?;
        let shown = absolute.to_string_lossy().trim_end_matches('/').to_string();
        let archive =
            Archive::open_path(&absolute).map_err(|error| archive_error(&shown, error))?;
        IngotFinder::from_archive_for(py, &absolute, archive, any_python)
    }

    /// A finder over an archive already opened from `path` (the launcher opens it once, to read
    /// its launch configuration, and hands it over).
    pub fn from_archive(
        py: Python<'_>,
        path: &std::path::Path,
        archive: Archive,
    ) -> PyResult<IngotFinder> {
        IngotFinder::from_archive_for(py, path, archive, false)
    }

    /// `any_python`: an archive of another Python version is accepted too, for inspection (its
    /// entries, files and native code's needs); such a finder must not import from it.
    fn from_archive_for(
        py: Python<'_>,
        path: &std::path::Path,
        archive: Archive,
        any_python: bool,
    ) -> PyResult<IngotFinder> {
        let absolute = std::path::absolute(path).map_err(|error| {
            ArchiveError::new_err(format!("ingot archive `{}`: {error}", path.display()))
        })?;
        let path = absolute.to_string_lossy().trim_end_matches('/').to_string();
        if !any_python {
            check_interpreter(py, &path, &archive)?;
        }

        let sys = py.import(intern!(py, "sys"))?;
        let optimize: u8 =
            sys.getattr(intern!(py, "flags"))?.getattr(intern!(py, "optimize"))?.extract()?;
        let bytecode_role = Role::Bytecode(optimize.min(2));

        // `_imp`, not `_frozen_importlib_external.EXTENSION_SUFFIXES` (the same list): the
        // launcher opens the finder before the interpreter's main initialization phase, before
        // the external importers are installed.
        let imp = py.import("_imp")?;
        let suffixes = imp.call_method0("extension_suffixes")?;
        let extension_suffix: String = suffixes.get_item(0)?.extract()?;
        let bootstrap = py.import("_frozen_importlib")?;
        let files = FilesPolicy::load(&archive).map_err(|error| archive_error(&path, error))?;
        let shared = Shared {
            archive,
            prefix: format!("{path}/"),
            path,
            bytecode_role,
            extension_suffix,
            dist_info_dirs: OnceLock::new(),
            files,
            decompressed: Decompressed::default(),
        };
        Ok(IngotFinder {
            shared: Arc::new(shared),
            module_spec: bootstrap.getattr("ModuleSpec")?.unbind(),
            fix_co_filename: imp.getattr("_fix_co_filename")?.unbind(),
            create_dynamic: imp.getattr("create_dynamic")?.unbind(),
            exec_dynamic: imp.getattr("exec_dynamic")?.unbind(),
            support: OnceLock::new(),
        })
    }

    fn error(&self, error: ingot_format::Error) -> PyErr {
        self.shared.error(error)
    }

    /// `ImportError(name=..., path=...)` for a module this archive does not hold.
    fn not_ours(&self, py: Python<'_>, name: &str) -> PyErr {
        let error = PyImportError::new_err(format!(
            "no module named `{name}` in ingot archive `{}`",
            self.shared.path
        ));
        let value = error.value(py);
        let _ = value.setattr("name", name);
        let _ = value.setattr("path", &self.shared.path);
        error
    }

    fn entry<'a>(&'a self, py: Python<'_>, name: &str) -> PyResult<Entry<'a>> {
        self.shared.module(name)?.ok_or_else(|| self.not_ours(py, name))
    }

    /// The support module (resources, metadata): Python code compiled on first use only.
    fn support<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyModule>> {
        if let Some(module) = self.support.get() {
            return Ok(module.bind(py).clone());
        }
        let module = match py.import("ingot._support") {
            Ok(module) => module,
            Err(_) => {
                let code =
                    std::ffi::CString::new(SUPPORT_SOURCE).expect("support source has no NUL");
                PyModule::from_code(py, &code, c"ingot/_support.py", c"ingot._support")?
            }
        };
        let _ = self.support.set(module.clone().unbind());
        Ok(module)
    }

    /// The module's code object: its bytecode handed to `marshal` straight from the map, or its
    /// source compiled when the archive has no bytecode for this optimization level.
    fn code<'py>(
        &self,
        py: Python<'py>,
        entry: &Entry<'_>,
        origin: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = entry.name();
        let blob = entry.blob(self.shared.bytecode_role).map_err(|error| self.error(error))?;
        if let Some(blob) = blob {
            let bytes = self.shared.archive.data(&blob).map_err(|error| self.error(error))?;
            let length = ffi::Py_ssize_t::try_from(bytes.len())
                .map_err(|_| self.bad_bytecode(name, "too large"))?;
            // SAFETY: `bytes` stays alive (borrowed from the map or owned) for the duration of the
            // call; marshal copies what it keeps.
            let code = unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    ffi::PyMarshal_ReadObjectFromString(bytes.as_ptr() as *const c_char, length),
                )
            }
            .map_err(|error| self.bad_bytecode(name, &error.to_string()))?;
            drop(bytes);
            // Marshal made its own objects: the blob's pages are not read again.
            crate::pages::release_blob(&self.shared.archive, &blob);
            // SAFETY: `code` is a valid object pointer.
            if unsafe { ffi::PyCode_Check(code.as_ptr()) } == 0 {
                return Err(self.bad_bytecode(name, "not a code object"));
            }
            // Bytecode was compiled with an archive-relative file name; give it the virtual path,
            // as zipimport does (`_imp._fix_co_filename`).
            self.fix_co_filename.bind(py).call1((&code, origin))?;
            return Ok(code);
        }
        if let Some(source) = entry.data(Role::Source).map_err(|error| self.error(error))? {
            let builtins = py.import(intern!(py, "builtins"))?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("dont_inherit", true)?;
            return builtins
                .getattr(intern!(py, "compile"))?
                .call((PyBytes::new(py, &source), origin, "exec"), Some(&kwargs));
        }
        Err(ArchiveError::new_err(format!(
            "ingot archive `{}`: module `{name}` has neither bytecode for optimization level {} nor source",
            self.shared.path,
            match self.shared.bytecode_role {
                Role::Bytecode(level) => level,
                _ => 0,
            }
        )))
    }

    fn bad_bytecode(&self, name: &str, why: &str) -> PyErr {
        ArchiveError::new_err(format!(
            "ingot archive `{}`: module `{name}`: invalid bytecode: {why}",
            self.shared.path
        ))
    }

    /// The module's `__file__`: under the archive path, or in its materialized tree (`tree`).
    fn origin(&self, name: &str, kind: Kind, tree: Option<&str>) -> Option<String> {
        let file = self.shared.module_file(name, kind)?;
        Some(match tree {
            Some(root) => format!("{root}/{file}"),
            None => format!("{}{file}", self.shared.prefix),
        })
    }

    /// Loads an extension module's image from memory: first the shared libraries it needs that the
    /// archive carries, then the module itself through `_imp.create_dynamic`.
    fn create_extension<'py>(
        &self,
        py: Python<'py>,
        slf: &Bound<'py, Self>,
        spec: &Bound<'py, PyAny>,
        entry: &Entry<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = entry.name();
        if let Some(needed) = entry.data(Role::Needed).map_err(|error| self.error(error))? {
            native::load_needed(&self.shared.archive, name, &native::needed_names(&needed))?;
        }
        if self.shared.tree_root(py, name)?.is_some() {
            // Its package is materialized: load the real file, as the file-system importer would.
            let origin: String = spec.getattr(intern!(py, "origin"))?.extract()?;
            let module = self
                .create_dynamic
                .bind(py)
                .call1((spec,))
                .map_err(|error| with_load_hint(py, error, &origin))?;
            let _ = module.setattr(intern!(py, "__file__"), spec.getattr(intern!(py, "origin"))?);
            return Ok(module);
        }
        let image =
            entry.blob(Role::Content).map_err(|error| self.error(error))?.ok_or_else(|| {
                ArchiveError::new_err(format!(
                    "ingot archive `{}`: extension module `{name}` has no image",
                    self.shared.path
                ))
            })?;
        let label = format!("{name}{}", self.shared.extension_suffix);
        let memory_path =
            native::native_file(&self.shared.archive, &label, native::Image::Blob(image)).map_err(
                |error| match error {
                    native::NativeError::Archive(damaged) => self.error(damaged),
                    native::NativeError::Other(what) => PyImportError::new_err(format!(
                        "cannot load extension module `{name}`: {what}"
                    )),
                },
            )?;
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "origin"), &memory_path)?;
        let loading_spec = self.module_spec.bind(py).call((name, slf), Some(&kwargs))?;
        let module = self
            .create_dynamic
            .bind(py)
            .call1((loading_spec,))
            .map_err(|error| with_load_hint(py, error, &memory_path))?;
        // The loader named the module after the memory file; it is the virtual path to the user.
        let origin = spec.getattr(intern!(py, "origin"))?;
        let _ = module.setattr(intern!(py, "__file__"), origin);
        Ok(module)
    }
}

/// Refuses an archive whose bytecode (and extension modules) belong to another interpreter.
fn check_interpreter(py: Python<'_>, path: &str, archive: &Archive) -> PyResult<()> {
    let header = archive.header();
    // SAFETY: no preconditions.
    let magic = unsafe { ffi::PyImport_GetMagicNumber() };
    let version = py.version_info();
    if magic == -1 {
        // Before the main initialization phase (the launcher), CPython (3.11 at least) cannot tell
        // its magic number yet (it reads `_bootstrap_external`, not installed yet). The launcher
        // checks the magic itself before it starts the interpreter; the version is checked here.
        let _ = PyErr::take(py);
        if header.python_version == (version.major, version.minor) {
            return Ok(());
        }
    }
    let running = (magic as u32).to_le_bytes();
    if header.bytecode_magic != running || header.python_version != (version.major, version.minor) {
        return Err(ArchiveError::new_err(format!(
            "ingot archive `{path}` was built for Python {}.{} (bytecode magic {}), but this is Python {}.{} \
             (bytecode magic {}); rebuild it with this Python",
            header.python_version.0,
            header.python_version.1,
            hex(&header.bytecode_magic),
            version.major,
            version.minor,
            hex(&running),
        )));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[pymethods]
impl IngotFinder {
    /// `IngotFinder(path, *, any_python=False)`: with `any_python`, an archive built for another
    /// Python is opened too, for inspection only (`ingot inspect`): it must not be installed.
    #[new]
    #[pyo3(signature = (path, *, any_python = false))]
    fn new(py: Python<'_>, path: std::path::PathBuf, any_python: bool) -> PyResult<Self> {
        let path = path
            .to_str()
            .ok_or_else(|| ArchiveError::new_err("archive path is not valid UTF-8"))?
            .to_string();
        IngotFinder::open(py, &path, any_python)
    }

    /// The archive's absolute path, the root of every `__file__` and `__path__` it serves.
    #[getter]
    fn path(&self) -> &str {
        &self.shared.path
    }

    fn __repr__(&self) -> String {
        format!("<IngotFinder {:?}>", self.shared.path)
    }

    // --- importlib.abc.MetaPathFinder -------------------------------------------------------

    /// Mirrors `zipimporter.find_spec`: a spec for a module the archive holds, `None` otherwise.
    #[pyo3(signature = (fullname, path = None, target = None))]
    fn find_spec<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
        path: Option<&Bound<'py, PyAny>>,
        target: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = (path, target);
        let py = slf.py();
        let finder = slf.get();
        let Some(entry) = finder.shared.module(fullname)? else {
            return Ok(None);
        };
        let Some(kind) = entry.kind() else {
            return Ok(None);
        };
        let spec_class = finder.module_spec.bind(py);
        let kwargs = PyDict::new(py);
        let is_package =
            matches!(kind, Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage);
        let tree = finder.shared.tree_root(py, fullname)?;
        let origin = finder.origin(fullname, kind, tree.as_deref());
        if let Some(origin) = &origin {
            kwargs.set_item(intern!(py, "origin"), origin)?;
        }
        if is_package {
            kwargs.set_item(intern!(py, "is_package"), true)?;
        }
        let spec = spec_class.call((fullname, slf), Some(&kwargs))?;
        if is_package {
            let directory = match &tree {
                Some(root) => files::package_dir(root, fullname),
                None => format!("{}{}", finder.shared.prefix, fullname.replace('.', "/")),
            };
            spec.setattr(intern!(py, "submodule_search_locations"), PyList::new(py, [directory])?)?;
        }
        // `has_location` stays false, as for frozen modules: the origin is not a file a path-based
        // loader could read, `__cached__` would name a file that cannot exist, and importlib's
        // `__file__`/`__cached__` step costs more per module than the rest of this finder.
        // `exec_module` sets `__file__` itself.
        Ok(Some(spec))
    }

    fn invalidate_caches(&self) {}

    // --- importlib.abc.Loader ---------------------------------------------------------------

    /// `None` (the default module) except for extension modules, which are loaded from memory.
    fn create_module<'py>(
        slf: &Bound<'py, Self>,
        spec: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let finder = slf.get();
        let name = spec.getattr(intern!(py, "name"))?;
        let name = name.cast::<PyString>()?.to_str()?;
        let entry = finder.entry(py, name)?;
        if matches!(entry.kind(), Some(Kind::ExtensionModule | Kind::ExtensionPackage)) {
            return finder.create_extension(py, slf, spec, &entry).map(Some);
        }
        Ok(None)
    }

    /// Runs the module's code in its namespace (`SourceLoader.exec_module`), or executes a
    /// multi-phase extension module (`ExtensionFileLoader.exec_module`).
    fn exec_module<'py>(slf: &Bound<'py, Self>, module: &Bound<'py, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let finder = slf.get();
        // The spec's name, not `__name__`: an extension module can name itself otherwise
        // (`_decimal` creates a module called `decimal`), and `decimal` is another entry.
        let name = match module.getattr(intern!(py, "__spec__")) {
            Ok(spec) if !spec.is_none() => spec.getattr(intern!(py, "name"))?,
            _ => module.getattr(intern!(py, "__name__"))?,
        };
        let name = name.cast::<PyString>()?.to_str()?;
        let entry = finder.entry(py, name)?;
        let kind = entry.kind();
        match kind {
            Some(Kind::Module | Kind::Package) => {
                let tree = finder.shared.tree_root(py, name)?;
                let origin = finder
                    .origin(name, kind.unwrap_or(Kind::Module), tree.as_deref())
                    .unwrap_or_default();
                let origin = PyString::new(py, &origin);
                let globals = match module.cast::<PyModule>() {
                    Ok(module) => module.dict(),
                    Err(_) => module.getattr(intern!(py, "__dict__"))?.cast_into::<PyDict>()?,
                };
                globals.set_item(intern!(py, "__file__"), &origin)?;
                // As for a module python imports without a `.pyc` to write (`python -m inspect
                // MODULE --details` reads it): there is no cache file.
                if !globals.contains(intern!(py, "__cached__"))? {
                    globals.set_item(intern!(py, "__cached__"), py.None())?;
                }
                let code = finder.code(py, &entry, &origin)?;
                if !globals.contains(intern!(py, "__builtins__"))? {
                    // As `exec()` does.
                    // SAFETY: returns a borrowed reference to the current builtins dict.
                    let builtins =
                        unsafe { Bound::from_borrowed_ptr(py, ffi::PyEval_GetBuiltins()) };
                    globals.set_item(intern!(py, "__builtins__"), builtins)?;
                }
                // SAFETY: `code` is a code object (checked in `code`) and `globals` a dict.
                let result = unsafe {
                    Bound::from_owned_ptr_or_err(
                        py,
                        ffi::PyEval_EvalCode(code.as_ptr(), globals.as_ptr(), globals.as_ptr()),
                    )
                };
                // (Two string comparisons per module; the version is asked only for these names.)
                if result.is_ok()
                    && matches!(name, "re._compiler" | "sre_compile")
                    && name == regexes::compiler_module(py)
                {
                    regexes::install(py, &finder.shared, &globals);
                }
                result.map(|_| ())
            }
            Some(Kind::ExtensionModule | Kind::ExtensionPackage) => {
                finder.exec_dynamic.bind(py).call1((module,)).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    // --- importlib.abc.InspectLoader / ExecutionLoader --------------------------------------

    fn get_code<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let finder = slf.get();
        let entry = finder.entry(py, fullname)?;
        match entry.kind() {
            Some(kind @ (Kind::Module | Kind::Package)) => {
                let tree = finder.shared.tree_root(py, fullname)?;
                let origin = PyString::new(
                    py,
                    &finder.origin(fullname, kind, tree.as_deref()).unwrap_or_default(),
                );
                finder.code(py, &entry, &origin).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The module's source, decoded per PEP 263 (`importlib.util.decode_source`); `None` when the
    /// archive has no source for it.
    fn get_source<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let this = slf.get();
        // `__main__`, when it is one of ours run as a script or with -m: linecache asks for the
        // source by `__name__` before Python 3.13 (tracebacks and warnings of the main module).
        let main_name = if fullname == "__main__" { main_module_name(slf)? } else { None };
        let fullname = main_name.as_deref().unwrap_or(fullname);
        let entry = this.entry(py, fullname)?;
        let Some(source) = entry.data(Role::Source).map_err(|error| this.error(error))? else {
            return Ok(None);
        };
        let decode = py.import("_frozen_importlib_external")?.getattr("decode_source")?;
        decode.call1((PyBytes::new(py, &source),)).map(Some)
    }

    fn is_package(&self, py: Python<'_>, fullname: &str) -> PyResult<bool> {
        let entry = self.entry(py, fullname)?;
        Ok(matches!(
            entry.kind(),
            Some(Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage)
        ))
    }

    fn get_filename(&self, py: Python<'_>, fullname: &str) -> PyResult<String> {
        let entry = self.entry(py, fullname)?;
        let tree = self.shared.tree_root(py, fullname)?;
        entry
            .kind()
            .and_then(|kind| self.origin(fullname, kind, tree.as_deref()))
            .ok_or_else(|| self.not_ours(py, fullname))
    }

    // --- importlib.abc.ResourceLoader -------------------------------------------------------

    /// The bytes of a file under the archive path (a data file, a dist-info file or a module's
    /// source), as `zipimporter.get_data` gives them; `FileNotFoundError` otherwise.
    fn get_data<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let relative = self.shared.relative_any(path).unwrap_or_else(|| path.to_string());
        match self.shared.read(&relative)? {
            Some(bytes) => Ok(PyBytes::new(py, &bytes)),
            None => Err(PyFileNotFoundError::new_err((
                libc::ENOENT,
                "No such file in ingot archive",
                path.to_string(),
            ))),
        }
    }

    // --- importlib.resources ----------------------------------------------------------------

    /// A `TraversableResources` reader over the package's directory in the archive.
    fn get_resource_reader<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let finder = slf.get();
        let entry = finder.entry(py, fullname)?;
        let directory = match entry.kind() {
            Some(Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage) => {
                fullname.replace('.', "/")
            }
            _ => fullname
                .rsplit_once('.')
                .map(|(parent, _)| parent.replace('.', "/"))
                .unwrap_or_default(),
        };
        if let Some(root) = finder.shared.tree_root(py, fullname)? {
            // A materialized package: its resources are real files (`as_file` needs no copy).
            return finder
                .support(py)?
                .getattr("FileTreeReader")?
                .call1((format!("{root}/{directory}"),));
        }
        finder.support(py)?.getattr("IngotResourceReader")?.call1((slf, directory))
    }

    // --- importlib.metadata ----------------------------------------------------------------

    /// `importlib.metadata.DistributionFinder.find_distributions`: the archive's `*.dist-info`.
    #[pyo3(signature = (context = None))]
    fn find_distributions<'py>(
        slf: &Bound<'py, Self>,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        slf.get().support(py)?.getattr("find_distributions")?.call1((slf, context))
    }

    // --- pkgutil -----------------------------------------------------------------------------

    /// `pkgutil.iter_modules` support: the archive's top-level modules as (name, is_package).
    #[pyo3(signature = (prefix = ""))]
    fn iter_modules<'py>(&self, py: Python<'py>, prefix: &str) -> PyResult<Bound<'py, PyList>> {
        let items = self.shared.submodules("")?;
        PyList::new(
            py,
            items.into_iter().map(|(name, is_package)| (format!("{prefix}{name}"), is_package)),
        )
    }

    /// A `sys.path_hooks` entry: a path-entry finder for the archive path or a package directory
    /// inside it; `ImportError` for any other path.
    fn path_hook(slf: &Bound<'_, Self>, path: &str) -> PyResult<IngotPathEntryFinder> {
        let finder = slf.get();
        let relative = finder
            .shared
            .relative_any(path)
            .ok_or_else(|| PyImportError::new_err(format!("not an ingot archive path: {path}")))?;
        if !finder.shared.is_dir(&relative)? {
            return Err(PyImportError::new_err(format!(
                "not a directory in ingot archive: {path}"
            )));
        }
        Ok(IngotPathEntryFinder { finder: slf.clone().unbind(), relative })
    }

    // --- for the support module and tools ----------------------------------------------------

    fn _read<'py>(&self, py: Python<'py>, relative: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.shared.read(relative)? {
            Some(bytes) => Ok(PyBytes::new(py, &bytes)),
            None => Err(PyFileNotFoundError::new_err((
                libc::ENOENT,
                "No such file in ingot archive",
                format!("{}{relative}", self.shared.prefix),
            ))),
        }
    }

    /// How many files, and bytes, the finder keeps decompressed (see `decompressed.rs`).
    fn _decompressed_held(&self) -> (usize, usize) {
        self.shared.decompressed.held()
    }

    fn _listdir(&self, relative: &str) -> PyResult<Vec<(String, bool)>> {
        Ok(self.shared.list_dir(relative)?.into_iter().collect())
    }

    fn _isdir(&self, relative: &str) -> PyResult<bool> {
        self.shared.is_dir(relative)
    }

    fn _isfile(&self, relative: &str) -> PyResult<bool> {
        Ok(self.shared.file(relative)?.is_some())
    }

    /// The top-level packages under the `files` policy, sorted.
    fn _files_packages(&self) -> Vec<String> {
        self.shared.files.packages()
    }

    /// The root of `package`'s tree in the extraction cache, materializing it if needed.
    fn _tree(&self, py: Python<'_>, package: &str) -> PyResult<String> {
        self.shared.tree_root(py, package)?.ok_or_else(|| {
            PyValueError::new_err(format!("package `{package}` is not under the files policy"))
        })
    }

    fn _dist_info_dirs(&self) -> PyResult<Vec<String>> {
        if let Some(dirs) = self.shared.dist_info_dirs.get() {
            return Ok(dirs.clone());
        }
        let mut dirs: Vec<String> = Vec::new();
        for entry in self
            .shared
            .archive
            .find_prefix(Namespace::Files, "")
            .map_err(|error| self.error(error))?
        {
            let entry = entry.map_err(|error| self.error(error))?;
            if entry.kind() != Some(Kind::DistInfoFile) {
                continue;
            }
            if let Some((directory, _)) = entry.name().split_once('/') {
                if directory.ends_with(".dist-info")
                    && dirs.last().map(String::as_str) != Some(directory)
                {
                    dirs.push(directory.to_string());
                }
            }
        }
        let _ = self.shared.dist_info_dirs.set(dirs.clone());
        Ok(dirs)
    }

    /// Every entry as (kind, name, size of its blobs once decompressed, size stored in the archive).
    fn _entry_sizes(&self) -> PyResult<Vec<(&'static str, String, u64, u64)>> {
        let mut sizes = Vec::new();
        for entry in self.shared.archive.entries() {
            let entry = entry.map_err(|error| self.error(error))?;
            let (mut size, mut stored) = (0u64, 0u64);
            for blob in entry.blobs() {
                let blob = blob.map_err(|error| self.error(error))?;
                size += blob.size();
                stored += blob.stored_size();
            }
            sizes.push((
                entry.kind().map_or("unknown", Kind::label),
                entry.name().to_string(),
                size,
                stored,
            ));
        }
        Ok(sizes)
    }

    /// Every entry as (kind, name, size in bytes of its blobs once decompressed).
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for entry in self.shared.archive.entries() {
            let entry = entry.map_err(|error| self.error(error))?;
            let mut size = 0u64;
            for blob in entry.blobs() {
                size += blob.map_err(|error| self.error(error))?.size();
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

    /// `[(kind, name, [(library, version), ...]), ...]`: the symbol versions each native entry
    /// (extension module, extension package, shared library) needs, from its `DT_VERNEED`.
    fn _version_needs(&self) -> PyResult<Vec<VersionNeeds>> {
        let mut needs = Vec::new();
        for entry in self.shared.archive.entries() {
            let entry = entry.map_err(|error| self.error(error))?;
            let Some(kind @ (Kind::ExtensionModule | Kind::ExtensionPackage | Kind::SharedLibrary)) =
                entry.kind()
            else {
                continue;
            };
            let Some(image) = entry.data(Role::Content).map_err(|error| self.error(error))? else {
                continue;
            };
            let versions = crate::elf::elf_version_needs(&image).map_err(|error| {
                PyValueError::new_err(format!("{}: {error}", entry.name()))
            })?;
            needs.push((kind.label().to_string(), entry.name().to_string(), versions));
        }
        Ok(needs)
    }

    /// Reads every blob and checks its checksum; raises `ArchiveError` on the first bad one.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let shared = self.shared.clone();
        py.detach(|| shared.archive.verify_all()).map_err(|error| self.error(error))
    }
}

/// A path-entry finder for one directory of an archive (`sys.path_hooks`, `pkgutil`).
#[pyclass(module = "ingot._ingot", frozen)]
pub struct IngotPathEntryFinder {
    finder: Py<IngotFinder>,
    relative: String,
}

#[pymethods]
impl IngotPathEntryFinder {
    /// `importlib.abc.PathEntryFinder.find_spec`: a spec for a module directly in this directory.
    #[pyo3(signature = (fullname, target = None))]
    fn find_spec<'py>(
        &self,
        py: Python<'py>,
        fullname: &str,
        target: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let parent = fullname
            .rsplit_once('.')
            .map(|(parent, _)| parent.replace('.', "/"))
            .unwrap_or_default();
        if parent != self.relative {
            return Ok(None);
        }
        IngotFinder::find_spec(self.finder.bind(py), fullname, None, target)
    }

    #[pyo3(signature = (prefix = ""))]
    fn iter_modules<'py>(&self, py: Python<'py>, prefix: &str) -> PyResult<Bound<'py, PyList>> {
        let items = self.finder.get().shared.submodules(&self.relative)?;
        PyList::new(
            py,
            items.into_iter().map(|(name, is_package)| (format!("{prefix}{name}"), is_package)),
        )
    }

    fn invalidate_caches(&self) {}

    #[getter]
    fn path(&self) -> String {
        let shared = &self.finder.get().shared;
        if self.relative.is_empty() {
            shared.path.clone()
        } else {
            format!("{}{}", shared.prefix, self.relative)
        }
    }

    fn __repr__(&self) -> String {
        format!("<IngotPathEntryFinder {:?}>", self.path())
    }
}

/// The name under which the archive holds the module running as `__main__` (its spec's name), if
/// `__main__` was loaded by `finder`.
fn main_module_name(finder: &Bound<'_, IngotFinder>) -> PyResult<Option<String>> {
    let py = finder.py();
    let Ok(main) = py.import("sys")?.getattr("modules")?.get_item("__main__") else {
        return Ok(None);
    };
    let spec = match main.getattr("__spec__") {
        Ok(spec) if !spec.is_none() => spec,
        _ => return Ok(None),
    };
    if !spec.getattr("loader")?.is(finder) {
        return Ok(None);
    }
    Ok(spec.getattr("name")?.extract::<String>().ok().filter(|name| name != "__main__"))
}

/// `error` (of loading native code from `path`), with the hint `native::explain_load_error` adds.
fn with_load_hint(py: Python<'_>, error: PyErr, path: &str) -> PyErr {
    let message = error.value(py).to_string();
    let explained = native::explain_load_error(message.clone(), path);
    if explained == message {
        error
    } else {
        PyImportError::new_err(explained)
    }
}
