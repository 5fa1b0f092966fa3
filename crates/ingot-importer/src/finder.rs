//! `IngotFinder`: the meta-path finder and loader, and `IngotPathEntryFinder`, its path-entry
//! counterpart for `sys.path_hooks` (which `pkgutil` and the path finder use).
//!
//! The methods mirror CPython's `zipimport.zipimporter` and `importlib._bootstrap_external`
//! `SourceLoader`/`ExtensionFileLoader`; where ingot differs, `docs/importer.md` says so.

use std::ffi::c_char;
use std::sync::{Arc, OnceLock};

use ingot_format::{Archive, Entry, Kind, Namespace, Role};
use pyo3::exceptions::{PyFileNotFoundError, PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyModule, PyString};
use pyo3::{ffi, intern};

use crate::decompressed::Decompressed;
use crate::error::{archive_error, ArchiveError};
use crate::files::{self, FilesPolicy};
use crate::hooks::{self, AfterExec};
use crate::native;
use crate::survey::{self, VersionNeeds};
use crate::view::ArchiveView;

/// A meta-path finder and loader over one ingot archive.
///
/// `IngotFinder(path)` maps the archive at `path` (a `.ingot` file or an executable with an
/// archive appended) and raises `ArchiveError` if it is not a usable archive for this Python.
#[pyclass(module = "ingot._ingot", frozen)]
pub struct IngotFinder {
    pub view: Arc<ArchiveView>,
    /// What the archive's tables run after a module's code ([`crate::hooks`]).
    after_exec: Vec<AfterExec>,
    module_spec: Py<PyAny>,
    fix_co_filename: Py<PyAny>,
    create_dynamic: Py<PyAny>,
    exec_dynamic: Py<PyAny>,
    support: OnceLock<Py<PyModule>>,
}

const SUPPORT_SOURCE: &str = include_str!("../../../python/ingot/boot/support.py");

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
        let view = ArchiveView {
            archive,
            prefix: format!("{path}/"),
            path,
            bytecode_role,
            extension_suffix,
            dist_info_dirs: OnceLock::new(),
            files,
            decompressed: Decompressed::default(),
            prefetched: Default::default(),
        };
        Ok(IngotFinder {
            after_exec: hooks::after_exec(&view),
            view: Arc::new(view),
            module_spec: bootstrap.getattr("ModuleSpec")?.unbind(),
            fix_co_filename: imp.getattr("_fix_co_filename")?.unbind(),
            create_dynamic: imp.getattr("create_dynamic")?.unbind(),
            exec_dynamic: imp.getattr("exec_dynamic")?.unbind(),
            support: OnceLock::new(),
        })
    }

    /// A spec named `fullname` for the archive's module `stored`: the same name, or the module a
    /// directory inside the archive on `sys.path` gives that name (then its loader is an
    /// [`IngotAliasLoader`]); `None` if the archive holds no such module.
    fn spec_for<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
        stored: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let finder = slf.get();
        let Some(entry) = finder.view.module(stored)? else {
            return Ok(None);
        };
        let Some(kind) = entry.kind() else {
            return Ok(None);
        };
        let spec_class = finder.module_spec.bind(py);
        let kwargs = PyDict::new(py);
        let is_package =
            matches!(kind, Kind::Package | Kind::NamespacePackage | Kind::ExtensionPackage);
        let tree = finder.view.tree_root(py, stored)?;
        let origin = finder.origin(stored, kind, tree.as_deref());
        if let Some(origin) = &origin {
            kwargs.set_item(intern!(py, "origin"), origin)?;
        }
        if is_package {
            kwargs.set_item(intern!(py, "is_package"), true)?;
        }
        let spec = if stored == fullname {
            spec_class.call((fullname, slf), Some(&kwargs))?
        } else {
            let loader = IngotAliasLoader { finder: slf.clone().unbind(), stored: stored.into() };
            spec_class.call((fullname, Bound::new(py, loader)?), Some(&kwargs))?
        };
        if is_package {
            let directory = match &tree {
                Some(root) => files::package_dir(root, stored),
                None => format!("{}{}", finder.view.prefix, stored.replace('.', "/")),
            };
            spec.setattr(intern!(py, "submodule_search_locations"), PyList::new(py, [directory])?)?;
        }
        // `has_location` stays false, as for frozen modules: the origin is not a file a path-based
        // loader could read, `__cached__` would name a file that cannot exist, and importlib's
        // `__file__`/`__cached__` step costs more per module than the rest of this finder.
        // `exec_module` sets `__file__` itself.
        Ok(Some(spec))
    }

    /// `create_module` for the archive's module `stored` (the spec's name, or the module an alias
    /// stands for).
    fn create_stored<'py>(
        slf: &Bound<'py, Self>,
        spec: &Bound<'py, PyAny>,
        stored: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let finder = slf.get();
        let entry = finder.entry(py, stored)?;
        if entry.kind().is_some_and(Kind::is_extension) {
            return finder.create_extension(py, slf, spec, &entry).map(Some);
        }
        Ok(None)
    }

    /// `exec_module` for the archive's module `stored`.
    fn exec_stored<'py>(
        slf: &Bound<'py, Self>,
        module: &Bound<'py, PyAny>,
        stored: &str,
    ) -> PyResult<()> {
        let py = slf.py();
        let finder = slf.get();
        let name = stored;
        let entry = finder.entry(py, name)?;
        let kind = entry.kind();
        match kind {
            Some(Kind::Module | Kind::Package) => {
                let tree = finder.view.tree_root(py, name)?;
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
                if result.is_ok() {
                    for hook in finder.after_exec.iter().filter(|hook| hook.module == name) {
                        (hook.run)(py, &finder.view, &globals);
                    }
                }
                result.map(|_| ())
            }
            Some(kind) if kind.is_extension() => {
                finder.exec_dynamic.bind(py).call1((module,)).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    fn error(&self, error: ingot_format::Error) -> PyErr {
        self.view.error(error)
    }

    /// `ImportError(name=..., path=...)` for a module this archive does not hold.
    fn not_ours(&self, py: Python<'_>, name: &str) -> PyErr {
        let error = PyImportError::new_err(format!(
            "no module named `{name}` in ingot archive `{}`",
            self.view.path
        ));
        let value = error.value(py);
        let _ = value.setattr("name", name);
        let _ = value.setattr("path", &self.view.path);
        error
    }

    fn entry<'a>(&'a self, py: Python<'_>, name: &str) -> PyResult<Entry<'a>> {
        self.view.module(name)?.ok_or_else(|| self.not_ours(py, name))
    }

    /// The support module (resources, metadata): Python code compiled on first use only.
    fn support<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyModule>> {
        if let Some(module) = self.support.get() {
            return Ok(module.bind(py).clone());
        }
        let module = match py.import("ingot.boot.support") {
            Ok(module) => module,
            Err(_) => {
                let code =
                    std::ffi::CString::new(SUPPORT_SOURCE).expect("support source has no NUL");
                PyModule::from_code(py, &code, c"ingot/boot/support.py", c"ingot.boot.support")?
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
        let blob = entry.blob(self.view.bytecode_role).map_err(|error| self.error(error))?;
        if let Some(blob) = blob {
            let bytes = match self.view.prefetched.take(&blob) {
                Some(bytes) => std::borrow::Cow::Owned(bytes),
                None => self.view.archive.data(&blob).map_err(|error| self.error(error))?,
            };
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
            crate::pages::release_blob(&self.view.archive, &blob);
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
            self.view.path,
            match self.view.bytecode_role {
                Role::Bytecode(level) => level,
                _ => 0,
            }
        )))
    }

    fn bad_bytecode(&self, name: &str, why: &str) -> PyErr {
        ArchiveError::new_err(format!(
            "ingot archive `{}`: module `{name}`: invalid bytecode: {why}",
            self.view.path
        ))
    }

    /// The module's `__file__`: under the archive path, or in its materialized tree (`tree`).
    fn origin(&self, name: &str, kind: Kind, tree: Option<&str>) -> Option<String> {
        let file = self.view.module_file(name, kind)?;
        Some(match tree {
            Some(root) => format!("{root}/{file}"),
            None => format!("{}{file}", self.view.prefix),
        })
    }

    /// Loads an extension module's image from memory: first the shared libraries it needs that the
    /// archive carries, then the module itself through `_imp.create_dynamic`. The module of a
    /// materialized (`files`) package is loaded from its file in the tree, as the file-system
    /// importer would, except in a privileged start: its tree may be the caller's to change
    /// after its check (file capabilities, set-group-ID), so it is loaded from memory too, and
    /// only its `__file__` names the tree.
    fn create_extension<'py>(
        &self,
        py: Python<'py>,
        slf: &Bound<'py, Self>,
        spec: &Bound<'py, PyAny>,
        entry: &Entry<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = entry.name();
        if let Some(needed) = entry.data(Role::Needed).map_err(|error| self.error(error))? {
            native::load_needed(&self.view.archive, name, &native::needed_names(&needed))?;
        }
        if self.view.tree_root(py, name)?.is_some() && !crate::cache::privileged() {
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
                    self.view.path
                ))
            })?;
        let label = format!("{name}{}", self.view.extension_suffix);
        let origin: Option<String> = spec.getattr(intern!(py, "origin"))?.extract().ok();
        let relative = origin.and_then(|origin| self.view.relative(&origin));
        // Loaded by its path already (`dlopen(<exe>/x.so)` before the import): the same object.
        let earlier = relative.as_deref().and_then(native::loaded_by_path);
        let memory_path = match earlier {
            Some(path) => path,
            None => native::native_file(&self.view.archive, &label, native::Image::Blob(image))
                .map_err(|error| match error {
                    native::NativeError::Archive(damaged) => self.error(damaged),
                    other => native::native_error(name, crate::error::chain(&other)),
                })?,
        };
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "origin"), &memory_path)?;
        // The spec's name, which names the init function: an alias's differs from the entry's.
        let loading_spec = self
            .module_spec
            .bind(py)
            .call((spec.getattr(intern!(py, "name"))?, slf), Some(&kwargs))?;
        let module = self
            .create_dynamic
            .bind(py)
            .call1((loading_spec,))
            .map_err(|error| with_load_hint(py, error, &memory_path))?;
        // The loader named the module after the memory file; it is the virtual path to the user.
        if let Some(relative) = relative {
            native::record_extension(relative, &memory_path);
        }
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
        &self.view.path
    }

    fn __repr__(&self) -> String {
        format!("<IngotFinder {:?}>", self.view.path)
    }

    // --- importlib.abc.MetaPathFinder -------------------------------------------------------

    /// Mirrors `zipimporter.find_spec`: a spec for a module the archive holds, `None` otherwise.
    ///
    /// Directories inside the archive on `sys.path` (or in a package's `__path__`) are searched
    /// in their order with the file finder's rule (the module's last name, in that directory): a
    /// package that puts its own directory first on `sys.path` and imports its name again gets
    /// the extension module in that directory (OpenCV's loader), not its `__init__` again. The
    /// archive's root answers by full name, as before; with no such directory on the path, the
    /// search costs one string comparison per entry before the root.
    #[pyo3(signature = (fullname, path = None, target = None))]
    fn find_spec<'py>(
        slf: &Bound<'py, Self>,
        fullname: &str,
        path: Option<&Bound<'py, PyAny>>,
        target: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = target;
        let py = slf.py();
        let finder = slf.get();
        match path {
            None => {
                let mut root_seen = false;
                // SAFETY: a borrowed reference (or NULL) to `sys.path`, used with the GIL held.
                let entries = unsafe { ffi::PySys_GetObject(c"path".as_ptr()) };
                if !entries.is_null() {
                    // SAFETY: not NULL; borrowed from the sys module, which outlives this call.
                    let entries = unsafe { Bound::from_borrowed_ptr(py, entries) };
                    if let Ok(entries) = entries.cast::<PyList>() {
                        for entry in entries.iter() {
                            let Ok(entry) = entry.cast::<PyString>() else { continue };
                            let entry = entry.to_str()?;
                            if entry == finder.view.path {
                                root_seen = true;
                                if let Some(spec) = IngotFinder::spec_for(slf, fullname, fullname)?
                                {
                                    return Ok(Some(spec));
                                }
                            } else if let Some(relative) = finder.view.relative_any(entry) {
                                let stored = stored_name(&relative, fullname);
                                if let Some(spec) = IngotFinder::spec_for(slf, fullname, &stored)? {
                                    return Ok(Some(spec));
                                }
                            }
                        }
                    }
                }
                if root_seen {
                    return Ok(None);
                }
                IngotFinder::spec_for(slf, fullname, fullname)
            }
            Some(path) => {
                let mut inside = false;
                if let Ok(entries) = path.try_iter() {
                    for entry in entries {
                        let entry = entry?;
                        let Ok(entry) = entry.cast::<PyString>() else { continue };
                        let Some(relative) = finder.view.relative_any(entry.to_str()?) else {
                            continue;
                        };
                        inside = true;
                        let stored = stored_name(&relative, fullname);
                        if let Some(spec) = IngotFinder::spec_for(slf, fullname, &stored)? {
                            return Ok(Some(spec));
                        }
                    }
                }
                if inside {
                    return Ok(None);
                }
                IngotFinder::spec_for(slf, fullname, fullname)
            }
        }
    }

    fn invalidate_caches(&self) {}

    // --- importlib.abc.Loader ---------------------------------------------------------------

    /// `None` (the default module) except for extension modules, which are loaded from memory.
    fn create_module<'py>(
        slf: &Bound<'py, Self>,
        spec: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let name = spec.getattr(intern!(slf.py(), "name"))?;
        IngotFinder::create_stored(slf, spec, name.cast::<PyString>()?.to_str()?)
    }

    /// Runs the module's code in its namespace (`SourceLoader.exec_module`), or executes a
    /// multi-phase extension module (`ExtensionFileLoader.exec_module`).
    fn exec_module<'py>(slf: &Bound<'py, Self>, module: &Bound<'py, PyAny>) -> PyResult<()> {
        let py = slf.py();
        // The spec's name, not `__name__`: an extension module can name itself otherwise
        // (`_decimal` creates a module called `decimal`), and `decimal` is another entry.
        let name = match module.getattr(intern!(py, "__spec__")) {
            Ok(spec) if !spec.is_none() => spec.getattr(intern!(py, "name"))?,
            _ => module.getattr(intern!(py, "__name__"))?,
        };
        IngotFinder::exec_stored(slf, module, name.cast::<PyString>()?.to_str()?)
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
                let tree = finder.view.tree_root(py, fullname)?;
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
        let tree = self.view.tree_root(py, fullname)?;
        entry
            .kind()
            .and_then(|kind| self.origin(fullname, kind, tree.as_deref()))
            .ok_or_else(|| self.not_ours(py, fullname))
    }

    // --- importlib.abc.ResourceLoader -------------------------------------------------------

    /// The bytes of a file under the archive path (a data file, a dist-info file or a module's
    /// source), as `zipimporter.get_data` gives them; `FileNotFoundError` otherwise.
    fn get_data<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let relative = self.view.relative_any(path).unwrap_or_else(|| path.to_string());
        match self.view.read(&relative)? {
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
        if let Some(root) = finder.view.tree_root(py, fullname)? {
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
        let items = self.view.submodules("")?;
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
            .view
            .relative_any(path)
            .ok_or_else(|| PyImportError::new_err(format!("not an ingot archive path: {path}")))?;
        if !finder.view.is_dir(&relative)? {
            return Err(PyImportError::new_err(format!(
                "not a directory in ingot archive: {path}"
            )));
        }
        Ok(IngotPathEntryFinder { finder: slf.clone().unbind(), relative })
    }

    // --- for the support module ------------------------------------------------------------------

    /// `read(relative) -> bytes`: the bytes of the archive's file at `relative` (under the
    /// archive's path: `pkg/data.txt`, `__ingot__/launch.json`); `FileNotFoundError` if there
    /// is none.
    fn read<'py>(&self, py: Python<'py>, relative: &str) -> PyResult<Bound<'py, PyBytes>> {
        self._read(py, relative)
    }

    fn _read<'py>(&self, py: Python<'py>, relative: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.view.read(relative)? {
            Some(bytes) => Ok(PyBytes::new(py, &bytes)),
            None => Err(PyFileNotFoundError::new_err((
                libc::ENOENT,
                "No such file in ingot archive",
                format!("{}{relative}", self.view.prefix),
            ))),
        }
    }

    /// A descriptor of a close-on-exec memory file holding the bytes of the archive's file at
    /// `relative` (under the archive's path), positioned at its start: what `open()` of a path
    /// next to a module gets in an executable (`ingot/boot/archive_paths.py`). Made by system
    /// call, not through `os.memfd_create`, which a CPython configured for glibc 2.17 lacks.
    fn _memory_file(&self, relative: &str) -> PyResult<i32> {
        let Some(bytes) = self.view.read(relative)? else {
            return Err(PyFileNotFoundError::new_err((
                libc::ENOENT,
                "No such file in ingot archive",
                format!("{}{relative}", self.view.prefix),
            )));
        };
        let label = relative.rsplit('/').next().unwrap_or("ingot");
        Ok(native::data_memory_file(label, &bytes)?)
    }

    /// How many files, and bytes, the finder keeps decompressed (see `decompressed.rs`).
    fn _decompressed_held(&self) -> (usize, usize) {
        self.view.decompressed.held()
    }

    /// How many modules' bytecode the read-ahead thread decompressed for their imports, and how
    /// many blobs and bytes it holds for imports to come (see `prefetched.rs`).
    fn _prefetched(&self) -> (usize, usize, usize) {
        self.view.prefetched.counts()
    }

    fn _listdir(&self, relative: &str) -> PyResult<Vec<(String, bool)>> {
        Ok(self.view.list_dir(relative)?.into_iter().collect())
    }

    fn _isdir(&self, relative: &str) -> PyResult<bool> {
        self.view.is_dir(relative)
    }

    fn _isfile(&self, relative: &str) -> PyResult<bool> {
        Ok(self.view.file(relative)?.is_some())
    }

    /// The top-level packages under the `files` policy, sorted.
    fn files_packages(&self) -> Vec<String> {
        self.view.files.packages()
    }

    /// The root of `package`'s tree in the extraction cache, materializing it if needed.
    fn _tree(&self, py: Python<'_>, package: &str) -> PyResult<String> {
        self.view.tree_root(py, package)?.ok_or_else(|| {
            PyValueError::new_err(format!("package `{package}` is not under the files policy"))
        })
    }

    fn _dist_info_dirs(&self) -> PyResult<Vec<String>> {
        if let Some(dirs) = self.view.dist_info_dirs.get() {
            return Ok(dirs.clone());
        }
        let mut dirs: Vec<String> = Vec::new();
        for entry in self
            .view
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
        let _ = self.view.dist_info_dirs.set(dirs.clone());
        Ok(dirs)
    }

    // --- for tools (crate::survey) ---------------------------------------------------------------

    /// Every entry as (kind, name, size of its blobs once decompressed, size stored in the archive).
    fn entry_sizes(&self) -> PyResult<Vec<(&'static str, String, u64, u64)>> {
        survey::entry_sizes(&self.view)
    }

    /// The modules whose bytecode (optimization level 0) is stored as is, with its size: what a
    /// start hands `marshal` in place, when it imports them.
    fn bytecode_in_place(&self) -> PyResult<Vec<(String, u64)>> {
        survey::bytecode_in_place(&self.view)
    }

    /// Every entry as (kind, name, size in bytes of its blobs once decompressed).
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        survey::entries(py, &self.view)
    }

    /// `[(kind, name, [(library, version), ...]), ...]`: the symbol versions each native entry
    /// (extension module, extension package, shared library) needs, from its `DT_VERNEED`.
    fn version_needs(&self) -> PyResult<Vec<VersionNeeds>> {
        survey::version_needs(&self.view)
    }

    /// Reads every blob and checks its checksum; raises `ArchiveError` on the first bad one.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        survey::verify(py, &self.view)
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
    /// `importlib.abc.PathEntryFinder.find_spec`: a spec for a module directly in this directory,
    /// by the file finder's rule (its last name), whatever package the name is in.
    #[pyo3(signature = (fullname, target = None))]
    fn find_spec<'py>(
        &self,
        py: Python<'py>,
        fullname: &str,
        target: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = target;
        IngotFinder::spec_for(
            self.finder.bind(py),
            fullname,
            &stored_name(&self.relative, fullname),
        )
    }

    #[pyo3(signature = (prefix = ""))]
    fn iter_modules<'py>(&self, py: Python<'py>, prefix: &str) -> PyResult<Bound<'py, PyList>> {
        let items = self.finder.get().view.submodules(&self.relative)?;
        PyList::new(
            py,
            items.into_iter().map(|(name, is_package)| (format!("{prefix}{name}"), is_package)),
        )
    }

    fn invalidate_caches(&self) {}

    #[getter]
    fn path(&self) -> String {
        let shared = &self.finder.get().view;
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

/// The loader of a module found under another name than the archive's: `sys.path` (or a
/// package's `__path__`) held a directory inside the archive, and the module's last name was
/// found there (`cv2` from `<exe>/cv2` is the archive's `cv2.cv2`). Everything is the
/// [`IngotFinder`]'s, asked for the stored module.
#[pyclass(module = "ingot._ingot", frozen)]
pub struct IngotAliasLoader {
    finder: Py<IngotFinder>,
    stored: String,
}

#[pymethods]
impl IngotAliasLoader {
    fn create_module<'py>(&self, spec: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        IngotFinder::create_stored(self.finder.bind(spec.py()), spec, &self.stored)
    }

    fn exec_module<'py>(&self, module: &Bound<'py, PyAny>) -> PyResult<()> {
        IngotFinder::exec_stored(self.finder.bind(module.py()), module, &self.stored)
    }

    /// The stored module's, whatever name it is asked by (linecache asks by `__name__`).
    fn get_code<'py>(
        &self,
        py: Python<'py>,
        fullname: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = fullname;
        IngotFinder::get_code(self.finder.bind(py), &self.stored)
    }

    fn get_source<'py>(
        &self,
        py: Python<'py>,
        fullname: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = fullname;
        IngotFinder::get_source(self.finder.bind(py), &self.stored)
    }

    fn is_package(&self, py: Python<'_>, fullname: &str) -> PyResult<bool> {
        let _ = fullname;
        self.finder.get().is_package(py, &self.stored)
    }

    fn get_filename(&self, py: Python<'_>, fullname: &str) -> PyResult<String> {
        let _ = fullname;
        self.finder.get().get_filename(py, &self.stored)
    }

    fn get_data<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        self.finder.get().get_data(py, path)
    }

    fn get_resource_reader<'py>(
        &self,
        py: Python<'py>,
        fullname: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = fullname;
        IngotFinder::get_resource_reader(self.finder.bind(py), &self.stored)
    }

    fn __repr__(&self) -> String {
        format!("<IngotAliasLoader {:?} in {:?}>", self.stored, self.finder.get().view.path)
    }
}

/// The archive's name for the module `fullname` in the archive directory `relative` (`""`, the
/// root), by the file finder's rule: its last name, in that directory.
fn stored_name(relative: &str, fullname: &str) -> String {
    let last = fullname.rsplit('.').next().unwrap_or(fullname);
    if relative.is_empty() {
        last.to_string()
    } else {
        format!("{}.{last}", relative.replace('/', "."))
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
