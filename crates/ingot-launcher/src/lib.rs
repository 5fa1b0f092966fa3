//! The ingot launcher: a CPython interpreter (libpython linked in statically) that runs the
//! application in the ingot archive appended to its own executable, importing everything from
//! that archive. See README.md for the start-up phases and the exit rules.

use std::ffi::{c_char, CStr, CString, OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

use ingot_format::{chain, Archive, Namespace, Role};
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyList, PyString};

pub mod castore;
pub mod error;
pub mod exit;
pub mod interpose;
pub mod interpose_files;
pub mod selfcall;
pub use error::{ConfigError, ExecutableError, LaunchError};
use exit::{exit_code, finish, print_exception, Outcome};
/// `__ingot__/launch.json`, defined once, in the importer (the build writes it with the same
/// definition).
pub use ingot_importer::launch::{LaunchConfig, Run};
pub use selfcall::Mode;

/// The launch configuration's name in the archive (Files name space), and its version this
/// launcher reads.
pub use ingot_format::names::{LAUNCH_CONFIG, LAUNCH_CONFIG_VERSION};

/// The Python this launcher embeds, `major.minor` (from the build script).
pub const PYTHON_VERSION: &str = env!("INGOT_LAUNCHER_PYTHON_VERSION");
/// The release of that Python (`3.11.7`, `3.13.0rc1`): its standard library must be the same
/// release's.
pub const PYTHON_RELEASE: &str = env!("INGOT_LAUNCHER_PYTHON_RELEASE");
/// `importlib.util.MAGIC_NUMBER` of that Python, in hex.
pub const BYTECODE_MAGIC: &str = env!("INGOT_LAUNCHER_BYTECODE_MAGIC");
/// `static` or `shared`: how libpython is linked.
pub const LINKAGE: &str = env!("INGOT_LAUNCHER_LINKAGE");

/// What `ingot build` needs to know about this launcher, as JSON, in the ELF section
/// [`FACTS_SECTION`] of the executable, where it reads them without running the launcher:
/// `format` (of this object; a reader refuses a newer one), `python` (`major.minor`),
/// `python_release` (`3.11.7`), `bytecode_magic` (hex), `ingot` (the version of the launcher's crate, which is ingot's),
/// `launch_config` (the launch.json versions it reads) and `linkage`.
pub const FACTS: &str = concat!(
    r#"{"format": 1, "python": ""#,
    env!("INGOT_LAUNCHER_PYTHON_VERSION"),
    r#"", "python_release": ""#,
    env!("INGOT_LAUNCHER_PYTHON_RELEASE"),
    r#"", "bytecode_magic": ""#,
    env!("INGOT_LAUNCHER_BYTECODE_MAGIC"),
    r#"", "ingot": ""#,
    env!("CARGO_PKG_VERSION"),
    r#"", "launch_config": [1], "linkage": ""#,
    env!("INGOT_LAUNCHER_LINKAGE"),
    r#""}"#
);
/// The ELF section holding [`FACTS`] (the `link_section` below must spell the same name; the
/// tests check both, and the `format` and `launch_config` written in [`FACTS`]).
pub use ingot_format::names::LAUNCHER_FACTS_SECTION as FACTS_SECTION;

const fn facts_bytes<const N: usize>() -> [u8; N] {
    let bytes = FACTS.as_bytes();
    let mut out = [0u8; N];
    let mut index = 0;
    while index < N {
        out[index] = bytes[index];
        index += 1;
    }
    out
}

/// [`FACTS`] in its section (the name must be [`FACTS_SECTION`]); `main` reads it, so that the
/// linker keeps it.
#[used]
#[link_section = ".ingot.launcher"]
static FACTS_IN_SECTION: [u8; FACTS.len()] = facts_bytes();

/// `boot.py`, compiled by build.rs with the embedded interpreter (marshal format of that version).
const BOOT_CODE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/boot.marshal"));

extern "C" {
    // CPython 3.8+: the second phase of a two-phase initialization (`PyConfig._init_main = 0`).
    // 3.14 removed it (3.15 has it back): there, `main_phase` calls `Py_InitializeFromConfig`
    // again, which reconfigures the initialized core and runs the main phase.
    #[cfg(any(not(Py_3_14), Py_3_15))]
    fn _Py_InitializeMain() -> ffi::PyStatus;
}

/// Prints `ingot: <what>: <reason>` and exits 1.
fn fail(what: &str, reason: impl std::fmt::Display) -> ! {
    eprintln!("ingot: {what}: {reason}");
    std::process::exit(1)
}

/// Prints `ingot: <error>: <its causes>` and exits 1.
fn fail_with(error: &LaunchError) -> ! {
    eprintln!("ingot: {}", chain(error));
    std::process::exit(1)
}

/// When Python cannot start: if the cause is a damaged archive (a module the start imports, such
/// as `codecs`, fails its checksum), says so first, with what to do, and exits. Reads the whole
/// archive, which only this failure path can afford.
fn report_damage() {
    let Ok(exe) = std::env::current_exe() else { return };
    let damage = match Archive::open_path(&exe) {
        Ok(archive) => archive.verify_all().err(),
        Err(error) => Some(error),
    };
    if let Some(error) = damage {
        eprintln!("ingot: {}: the executable is damaged: {}", exe.display(), chain(&error));
        eprintln!("hint: build or copy it again (`ingot inspect --verify FILE` checks a file without running it)");
        std::process::exit(1);
    }
}

/// The archive `read_archive` opened, kept for the finder so that it is mapped and checked once.
static OPENED: std::sync::Mutex<Option<Archive>> = std::sync::Mutex::new(None);

/// Opens the archive appended to `exe`, checks it was built for this Python, and reads its
/// launch configuration.
pub fn read_archive(exe: &Path) -> Result<LaunchConfig, LaunchError> {
    let failed = |source| LaunchError::Archive { exe: exe.to_path_buf(), source };
    let archive = match Archive::open_path(exe) {
        Ok(archive) => archive,
        Err(ingot_format::Error::NotAnArchive) => {
            return Err(LaunchError::NotAnArchive { exe: exe.to_path_buf() })
        }
        Err(error) => return Err(failed(error)),
    };
    let header = archive.header();
    let magic: String = header.bytecode_magic.iter().map(|byte| format!("{byte:02x}")).collect();
    let version = format!("{}.{}", header.python_version.0, header.python_version.1);
    if version != PYTHON_VERSION || magic != BYTECODE_MAGIC {
        return Err(LaunchError::OtherPython { exe: exe.to_path_buf(), version, magic });
    }
    let config = {
        let entry = archive
            .find(Namespace::Files, LAUNCH_CONFIG)
            .map_err(failed)?
            .ok_or_else(|| LaunchError::NoConfig { exe: exe.to_path_buf() })?;
        let bytes = entry
            .data(Role::Content)
            .map_err(failed)?
            .ok_or_else(|| LaunchError::EmptyConfig { exe: exe.to_path_buf() })?;
        LaunchConfig::parse(&bytes)
            .map_err(|source| LaunchError::Config { exe: exe.to_path_buf(), source })?
    };
    if let Ok(Some(_)) = archive.find(Namespace::Files, ingot_format::names::PREFIX_DATA) {
        PREFIX_IS_EXECUTABLE.store(true, Ordering::Relaxed);
    }
    if let Ok(mut slot) = OPENED.lock() {
        *slot = Some(archive);
    }
    Ok(config)
}

/// Whether the archive carries files installed outside packages (`__ingot__/prefix-data.json`):
/// then `sys.prefix` is the executable itself, where they are answered (`<exe>/share/...`),
/// not its directory.
static PREFIX_IS_EXECUTABLE: AtomicBool = AtomicBool::new(false);

/// `sys.prefix`, `exec_prefix` and their `base_` forms: the executable, whose archive answers
/// `<exe>/share/...` (set after the initialization, which would derive paths from them).
fn set_prefixes(py: Python<'_>, exe: &str) -> PyResult<()> {
    let sys = py.import("sys")?;
    for name in ["prefix", "exec_prefix", "base_prefix", "base_exec_prefix"] {
        sys.setattr(name, exe)?;
    }
    Ok(())
}

/// The executable file this process runs: `/proc/self/exe`, or, where /proc is not mounted (a
/// chroot, a container without procfs), the file `argv[0]` names as a shell would have found it
/// (see [`find_executable`]). The error names both attempts. A privileged start (`AT_SECURE`:
/// set-user-ID, set-group-ID, file capabilities; or real and effective ids that differ) never
/// falls back: whoever starts it chooses `argv[0]` and `PATH`, and would choose the archive run
/// with the executable's privileges.
pub fn own_executable() -> Result<PathBuf, LaunchError> {
    let proc = match std::fs::read_link("/proc/self/exe") {
        Ok(exe) => return Ok(exe),
        Err(error) => error,
    };
    if ingot_importer::privileged() {
        return Err(LaunchError::PrivilegedWithoutProc { proc });
    }
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let cwd = std::env::current_dir().ok();
    match find_executable(&argv0, std::env::var_os("PATH").as_deref(), cwd.as_deref()) {
        Ok(exe) => Ok(exe),
        Err(argv0_error) => Err(LaunchError::OwnExecutable { proc, argv0, argv0_error }),
    }
}

/// The default `PATH` of glibc's `execvp` (`confstr(_CS_PATH)`), when `PATH` is not set.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The file a shell runs for the command `argv0`: a name with a `/` is a path (relative to `cwd`),
/// any other name is searched in `path` (`PATH`; an empty entry is the current directory) for an
/// executable regular file, as `execvp` does. The result has its symbolic links resolved, as
/// `/proc/self/exe` has.
pub fn find_executable(
    argv0: &OsStr,
    path: Option<&OsStr>,
    cwd: Option<&Path>,
) -> Result<PathBuf, ExecutableError> {
    let absolute = |candidate: &Path| -> Option<PathBuf> {
        if candidate.is_absolute() {
            Some(candidate.to_path_buf())
        } else {
            cwd.map(|cwd| cwd.join(candidate))
        }
    };
    let is_executable = |candidate: &Path| {
        std::fs::metadata(candidate)
            .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    };
    let bytes = argv0.as_bytes();
    if bytes.is_empty() {
        return Err(ExecutableError::Empty);
    }
    let found = if bytes.contains(&b'/') {
        let candidate = absolute(Path::new(argv0)).ok_or(ExecutableError::NoCurrentDirectory)?;
        if !is_executable(&candidate) {
            return Err(ExecutableError::NotExecutable { path: candidate });
        }
        candidate
    } else {
        let path = path.unwrap_or(OsStr::new(DEFAULT_PATH));
        path.as_bytes()
            .split(|&byte| byte == b':')
            .map(|entry| {
                if entry.is_empty() {
                    Path::new(".")
                } else {
                    Path::new(OsStr::from_bytes(entry))
                }
            })
            .filter_map(|directory| absolute(&directory.join(argv0)))
            .find(|candidate| is_executable(candidate))
            .ok_or_else(|| ExecutableError::NotOnPath { search_path: path.to_os_string() })?
    };
    Ok(std::fs::canonicalize(&found).unwrap_or(found))
}

/// The launcher's entry point.
pub fn main() -> ! {
    // SAFETY: a plain read of a static; volatile, so that the section is referenced and kept.
    let _ = unsafe { std::ptr::read_volatile(&FACTS_IN_SECTION[0]) };
    let exe = own_executable().unwrap_or_else(|error| fail_with(&error));
    let config = read_archive(&exe).unwrap_or_else(|error| fail_with(&error));
    let argv: Vec<OsString> = std::env::args_os().collect();
    let exe_str = exe
        .to_str()
        .unwrap_or_else(|| fail(&exe.display().to_string(), "the path is not UTF-8"))
        .to_string();
    let this = selfcall::ThisProcess::new(&exe);
    let call = selfcall::self_call(&this);
    let depth = call.map_or(0, |call| call.depth);
    if depth > selfcall::MAX_DEPTH {
        too_deep(&exe_str, &argv, depth);
    }

    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    // The secret the processes this one starts get, and the listener that proves it gave it.
    let secret = selfcall::new_secret();
    if let (Some(identity), Some(secret)) = (this.identity(), secret) {
        PROOF.offer(identity, depth, secret);
    }
    let variable = selfcall::Variable {
        pid: std::process::id(),
        depth,
        uid,
        secret: secret.unwrap_or_default(),
    };
    // The parent's variable is not the application's business: out of the environment the
    // interpreter copies into os.environ (ours is set for the children in `prepare`).
    // SAFETY: no other thread exists yet (the read-ahead threads start with the interpreter).
    std::env::remove_var(selfcall::PARENT_VARIABLE);
    let names_this = |name: &OsStr| names_executable(name, &exe);
    let mode = match call.map(|call| call.started) {
        Some(selfcall::Started::Child | selfcall::Started::Descendant) => {
            selfcall::read_command_line(&argv, names_this)
        }
        Some(selfcall::Started::Replaced) => selfcall::read_restart(&argv, names_this),
        None => Mode::App { argv: argv.clone() },
    };
    // Built with --no-python-mode (a privilege boundary): every start runs the application.
    let mode = match mode {
        Mode::Python | Mode::FrozenFork if !config.python_mode() => {
            Mode::App { argv: argv.clone() }
        }
        mode => mode,
    };
    // SAFETY: called once, on the main thread, before anything else touches Python.
    unsafe { initialize(&exe, &argv, &mode) };
    // SAFETY: the interpreter is initialized and this thread holds the GIL.
    let py = unsafe { Python::assume_attached() };
    let boot = boot(py).unwrap_or_else(|error| {
        error.print(py);
        fail(&exe_str, "cannot load the launcher's Python code")
    });
    if PREFIX_IS_EXECUTABLE.load(Ordering::Relaxed) {
        set_prefixes(py, &exe_str).unwrap_or_else(|error| {
            error.print(py);
            fail(&exe_str, "cannot set sys.prefix")
        });
    }
    if mode == Mode::Python {
        run_python(py, boot, &exe_str, &argv, variable);
    }
    let outcome =
        run(py, &boot, &exe_str, &config, &mode, &argv, variable).unwrap_or_else(|error| {
            // A failure of the launcher's own Python code, not of the application.
            error.print(py);
            Outcome::Code(1)
        });
    finish(py, boot, outcome, config.fast_exit())
}

/// This process's proof for the processes it starts ([`selfcall::offer`]): the listener, and
/// what renews it in a forked child.
struct Proof {
    listener: AtomicI32,
    depth: AtomicU32,
    made: OnceLock<(u64, u64)>,
}

static PROOF: Proof =
    Proof { listener: AtomicI32::new(-1), depth: AtomicU32::new(0), made: OnceLock::new() };

impl Proof {
    fn offer(&self, identity: (u64, u64), depth: u32, secret: selfcall::Secret) {
        let _ = self.made.set(identity);
        self.depth.store(depth, Ordering::Relaxed);
        let fd = selfcall::offer(identity, depth, &secret).unwrap_or(-1);
        self.listener.store(fd, Ordering::Relaxed);
    }

    /// In a forked child: the parent's listener closed here (the parent keeps it), and one of
    /// this process's own (its pid is another), with a new secret, which it returns (`None`
    /// when there is no listener to renew, or the kernel gives no random bytes: then none).
    /// The parent's secret, which the child knows, would make the child's listener's name
    /// predictable to anyone who learns it.
    fn renew(&self) -> Option<selfcall::Secret> {
        let old = self.listener.swap(-1, Ordering::Relaxed);
        if old >= 0 {
            // SAFETY: the inherited copy of the parent's listener, which nothing else uses.
            unsafe { libc::close(old) };
        }
        let identity = self.made.get()?;
        let secret = selfcall::new_secret()?;
        let depth = self.depth.load(Ordering::Relaxed);
        let fd = selfcall::offer(*identity, depth, &secret).unwrap_or(-1);
        self.listener.store(fd, Ordering::Relaxed);
        Some(secret)
    }

    fn drain(&self) {
        let fd = self.listener.load(Ordering::Relaxed);
        if fd >= 0 {
            selfcall::drain(fd);
        }
    }
}

/// Whether the command `name` (a path, or a name `PATH` finds) is the executable `exe`.
fn names_executable(name: &OsStr, exe: &Path) -> bool {
    let cwd = std::env::current_dir().ok();
    let Ok(found) = find_executable(name, std::env::var_os("PATH").as_deref(), cwd.as_deref())
    else {
        return false;
    };
    match (std::fs::metadata(&found), std::fs::metadata(exe)) {
        (Ok(found), Ok(exe)) => (found.dev(), found.ino()) == (exe.dev(), exe.ino()),
        _ => false,
    }
}

/// Stops a chain of self-calls deeper than [`selfcall::MAX_DEPTH`].
fn too_deep(exe: &str, argv: &[OsString], depth: u32) -> ! {
    let shown: Vec<String> =
        argv.iter().map(|arg| format!("{:?}", arg.to_string_lossy())).collect();
    eprintln!(
        "ingot: {exe}: too many nested self-calls: this process is {depth} deep in a chain of processes the \
         application started from its own executable (the limit is {}); its command line: [{}]",
        selfcall::MAX_DEPTH,
        shown.join(", ")
    );
    eprintln!(
        "hint: the application starts sys.executable with a command line that runs the application again, \
         every time; a python command line (-c CODE, -m MODULE, SCRIPT.py) runs Python instead (see \
         \"Self-calls\" in the launcher's README)"
    );
    std::process::exit(1)
}

/// boot.py's namespace.
fn boot(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let boot = PyDict::new(py);
    boot.set_item("__name__", "_ingot_boot")?;
    boot.set_item("__builtins__", py.import("builtins")?)?;
    let length = ffi::Py_ssize_t::try_from(BOOT_CODE.len()).expect("boot code is small");
    // SAFETY: BOOT_CODE is a static byte string; marshal copies what it keeps.
    let code = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyMarshal_ReadObjectFromString(BOOT_CODE.as_ptr().cast(), length),
        )?
    };
    // SAFETY: `code` is the code object build.rs marshalled; `boot` is a dict.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyEval_EvalCode(code.as_ptr(), boot.as_ptr(), boot.as_ptr()),
        )?
    };
    Ok(boot)
}

fn status_error(status: &ffi::PyStatus) -> String {
    let text = |pointer: *const c_char| {
        if pointer.is_null() {
            String::new()
        } else {
            // SAFETY: PyStatus strings are static NUL-terminated C strings.
            unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned()
        }
    };
    match (text(status.func), text(status.err_msg)) {
        (func, message) if func.is_empty() => message,
        (func, message) => format!("{func}: {message}"),
    }
}

/// Exits on a failed status, as `Py_ExitStatusException` would but with an `ingot:` message.
///
/// # Safety
///
/// `status` comes from a CPython initialization call; on an exception status the caller's
/// thread may touch Python's error state (`PyErr_Print`).
unsafe fn check(status: ffi::PyStatus, phase: &str) {
    unsafe {
        if ffi::PyStatus_IsExit(status) != 0 {
            std::process::exit(status.exitcode);
        }
        if ffi::PyStatus_Exception(status) != 0 {
            report_damage();
            if ffi::PyErr_Occurred().is_null() {
                fail(&format!("cannot initialize Python ({phase})"), status_error(&status));
            }
            ffi::PyErr_Print();
            fail(&format!("cannot initialize Python ({phase})"), status_error(&status));
        }
    }
}

/// Initializes CPython in two phases, with the archive's finder installed between them (see
/// README.md, "Start-up"): in isolated mode with `sys.argv` given for the application; for a
/// Python-mode self-call, from the command line as python reads it (but still ignoring the
/// environment and with no `site`).
///
/// # Safety
///
/// Called once, on the main thread, before anything else in the process uses Python.
unsafe fn initialize(exe: &Path, argv: &[OsString], mode: &Mode) {
    unsafe {
        // The importer, as the built-in module `_ingot`.
        use ingot_importer::_ingot;
        pyo3::append_to_inittab!(_ingot);
        let python_mode = *mode == Mode::Python;
        let args = c_strings(argv);
        let mut pointers: Vec<*mut c_char> =
            args.iter().map(|arg| arg.as_ptr().cast_mut()).collect();
        pre_initialize(python_mode, &mut pointers);

        // Lives until the main phase, which (on 3.14) initializes from it again.
        let mut config = MaybeUninit::<ffi::PyConfig>::uninit();
        let config = config.as_mut_ptr();
        init_config(config, python_mode);
        set_argv(config, mode, &mut pointers);
        set_paths(config, exe);

        let status = ffi::Py_InitializeFromConfig(config);
        #[cfg(any(not(Py_3_14), Py_3_15))]
        ffi::PyConfig_Clear(config);
        check(status, "core");

        // Core phase done: builtin and frozen modules only. The archive's finder goes first on
        // sys.meta_path so that the main phase (encodings, io, ...) imports from the archive.
        let py = Python::assume_attached();
        if let Err(error) = install_finder(py, exe) {
            error.print(py);
            fail(&exe.display().to_string(), "cannot install the archive's finder");
        }
        check(main_phase(config), "main");
    }
}

/// The arguments as C strings (exits if one contains NUL).
fn c_strings(list: &[OsString]) -> Vec<CString> {
    list.iter()
        .map(|arg| {
            CString::new(arg.as_bytes())
                .unwrap_or_else(|_| fail("argv", "an argument contains NUL"))
        })
        .collect()
}

/// Pre-initialization: `python -I` (locale configured and C locale coerced as python does, the
/// environment ignored); in Python mode, with `-X utf8`, `-X dev`, ... read from the command line
/// (`pointers`: the process's arguments). Called first, before anything else touches Python.
///
/// # Safety
///
/// Python is not initialized yet; each of `pointers` is a NUL-terminated string that stays
/// alive during the call.
unsafe fn pre_initialize(python_mode: bool, pointers: &mut [*mut c_char]) {
    unsafe {
        let mut preconfig = MaybeUninit::<ffi::PyPreConfig>::uninit();
        ffi::PyPreConfig_InitPythonConfig(preconfig.as_mut_ptr());
        let mut preconfig = preconfig.assume_init();
        preconfig.isolated = i32::from(!python_mode);
        preconfig.use_environment = 0;
        preconfig.parse_argv = i32::from(python_mode);
        if python_mode {
            check(
                ffi::Py_PreInitializeFromBytesArgs(
                    &preconfig,
                    pointers.len() as ffi::Py_ssize_t,
                    pointers.as_mut_ptr(),
                ),
                "pre-initialization",
            );
        } else {
            check(ffi::Py_PreInitialize(&preconfig), "pre-initialization");
        }
    }
}

/// Initializes `config` (uninitialized storage) for the core phase: python's configuration in
/// Python mode, else the isolated one; no `site`, the environment ignored, no path computed
/// (the archive is the library), and the main phase left for later (`_init_main = 0`).
///
/// # Safety
///
/// `config` points to writable storage for a `PyConfig`, after the pre-initialization.
unsafe fn init_config(config: *mut ffi::PyConfig, python_mode: bool) {
    unsafe {
        if python_mode {
            ffi::PyConfig_InitPythonConfig(config);
        } else {
            ffi::PyConfig_InitIsolatedConfig(config);
        }
        (*config).site_import = 0;
        (*config).user_site_directory = 0;
        (*config).use_environment = 0;
        #[cfg(Py_3_11)]
        if !python_mode {
            (*config).safe_path = 1;
        }
        (*config).module_search_paths_set = 1;
        (*config).pathconfig_warnings = 0;
        (*config).parse_argv = i32::from(python_mode);
        // As python does (the isolated defaults are for embedding in another program): SIGINT raises
        // KeyboardInterrupt, SIGPIPE is ignored, and the C stdio is set up.
        (*config).install_signal_handlers = 1;
        (*config).configure_c_stdio = 1;
        (*config)._init_main = 0;
    }
}

/// `config`'s argv: the application's `sys.argv` in App mode; else the process's arguments
/// (`pointers`), which a Python-mode configuration parses as python does.
///
/// # Safety
///
/// `config` was initialized by [`init_config`] and not cleared; each of `pointers` is a
/// NUL-terminated string that stays alive during the call.
unsafe fn set_argv(config: *mut ffi::PyConfig, mode: &Mode, pointers: &mut [*mut c_char]) {
    unsafe {
        match mode {
            Mode::App { argv: app_argv } => {
                let app_args = c_strings(app_argv);
                let mut app_pointers: Vec<*const c_char> =
                    app_args.iter().map(|arg| arg.as_ptr()).collect();
                check(
                    ffi::PyConfig_SetBytesArgv(
                        config,
                        app_pointers.len() as ffi::Py_ssize_t,
                        app_pointers.as_mut_ptr(),
                    ),
                    "argv",
                );
            }
            _ => check(
                ffi::PyConfig_SetBytesArgv(
                    config,
                    pointers.len() as ffi::Py_ssize_t,
                    pointers.as_mut_ptr().cast(),
                ),
                "argv",
            ),
        }
    }
}

/// `config`'s executable and paths: `exe`, and its directory as home and every prefix.
///
/// # Safety
///
/// `config` was initialized by [`init_config`] and not cleared.
unsafe fn set_paths(config: *mut ffi::PyConfig, exe: &Path) {
    unsafe {
        let set = |status: ffi::PyStatus, what: &str| check(status, what);
        let exe_c = CString::new(exe.as_os_str().as_bytes())
            .unwrap_or_else(|_| fail(&exe.display().to_string(), "path contains NUL"));
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).executable, exe_c.as_ptr()),
            "executable",
        );
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).program_name, exe_c.as_ptr()),
            "program_name",
        );
        // prefix, exec_prefix and home: the executable's directory, so that the path configuration
        // searches for no standard library or virtual environment on disk.
        let home = exe
            .parent()
            .map(|dir| dir.as_os_str().as_bytes().to_vec())
            .unwrap_or_else(|| b"/".to_vec());
        let home = CString::new(home).unwrap_or_else(|_| fail("home", "path contains NUL"));
        set(ffi::PyConfig_SetBytesString(config, &mut (*config).home, home.as_ptr()), "home");
        // The prefixes too, and the base executable: with all of them given, the path configuration
        // computes nothing (3.10's C getpath otherwise reads `<dir>/pyvenv.cfg` and
        // `<dir>/../pyvenv.cfg` and resolves the executable's links, even with `home` set).
        set(ffi::PyConfig_SetBytesString(config, &mut (*config).prefix, home.as_ptr()), "prefix");
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).base_prefix, home.as_ptr()),
            "base_prefix",
        );
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).exec_prefix, home.as_ptr()),
            "exec_prefix",
        );
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).base_exec_prefix, home.as_ptr()),
            "base_exec_prefix",
        );
        set(
            ffi::PyConfig_SetBytesString(config, &mut (*config).base_executable, exe_c.as_ptr()),
            "base_executable",
        );
    }
}

/// The main phase of the initialization, after the core phase `Py_InitializeFromConfig(config)`
/// ran with `config._init_main = 0`.
///
/// # Safety
///
/// The core phase ran from `config` (`_init_main = 0`) on this thread, which holds the
/// GIL; `config` is the one it ran from (3.14 clears it here).
#[cfg(any(not(Py_3_14), Py_3_15))]
unsafe fn main_phase(_config: *mut ffi::PyConfig) -> ffi::PyStatus {
    unsafe { _Py_InitializeMain() }
}

/// 3.14 has no `_Py_InitializeMain`: a second `Py_InitializeFromConfig` of the same configuration
/// with `_init_main = 1` finds the core initialized, copies the configuration into the
/// interpreter again (`pyinit_core_reconfigure`) and runs the main phase.
///
/// # Safety
///
/// The core phase ran from `config` (`_init_main = 0`) on this thread, which holds the
/// GIL; `config` is the one it ran from (3.14 clears it here).
#[cfg(all(Py_3_14, not(Py_3_15)))]
unsafe fn main_phase(config: *mut ffi::PyConfig) -> ffi::PyStatus {
    (*config)._init_main = 1;
    let status = ffi::Py_InitializeFromConfig(config);
    ffi::PyConfig_Clear(config);
    status
}

fn install_finder(py: Python<'_>, exe: &Path) -> PyResult<()> {
    let opened = OPENED.lock().map(|mut slot| slot.take()).unwrap_or(None);
    let finder = match opened {
        Some(archive) => {
            let finder =
                Bound::new(py, ingot_importer::IngotFinder::from_archive(py, exe, archive)?)?;
            // Libraries loaded by their path inside the executable: from the archive.
            interpose::serve(finder.get().view.clone());
            // GCC's support library for glibc's own lookup, on a system with glibc alone
            // (before any thread the application starts can end with pthread_exit).
            ingot_importer::provide_libgcc_s(&finder.get().view.archive);
            // Read what a start reads, and check the files tree (if the archive has one), while
            // the interpreter starts: on another CPU, if the process may use more than one (on
            // one, the threads would only take turns with the interpreter).
            if std::thread::available_parallelism().is_ok_and(|cpus| cpus.get() > 1) {
                ingot_importer::readahead::first_use(&finder.get().view);
                ingot_importer::readahead::files_tree(&finder.get().view);
            }
            finder.into_any()
        }
        // A str: a PathBuf would convert to pathlib.Path, not importable yet.
        None => py
            .import("_ingot")?
            .getattr("IngotFinder")?
            .call1((exe.as_os_str().to_string_lossy(),))?,
    };
    let meta_path = py.import("sys")?.getattr("meta_path")?.cast_into::<PyList>()?;
    meta_path.insert(0, finder)?;
    Ok(())
}

/// The archive's finder, from `sys.meta_path`.
fn archive_finder<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    py.import("sys")?
        .getattr("meta_path")?
        .try_iter()?
        .find(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.get_type().name().is_ok_and(|name| name == "IngotFinder"))
        })
        .transpose()?
        .ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err("the archive's finder left sys.meta_path")
        })
}

/// What every mode does once the interpreter is up: the import system sealed, `sys.executable`
/// the executable, and forked children told apart from their parent for their own self-calls.
fn prepare<'py>(
    py: Python<'py>,
    boot: &Bound<'py, PyDict>,
    exe: &str,
    filesystem_imports: bool,
    variable: selfcall::Variable,
) -> PyResult<()> {
    let finder = archive_finder(py)?;
    boot.get_item("seal_import_system")?.expect("boot.py").call1((&finder, filesystem_imports))?;
    boot.get_item("serve_archive_paths")?.expect("boot.py").call1((&finder,))?;
    // A forked child makes its own proof (its pid is another) and names itself in the variable;
    // the listener's queue is drained before the application starts a process, and a process
    // started from this executable with an environment of the application's making gets the
    // variable too.
    let renew = PyCFunction::new_closure(py, Some(c"renew_proof"), None, move |_, _| {
        let secret = PROOF.renew().unwrap_or(variable.secret);
        selfcall::variable_value(&selfcall::Variable {
            pid: std::process::id(),
            secret,
            ..variable
        })
    })?;
    let drain = PyCFunction::new_closure(py, Some(c"drain_proof"), None, |_, _| PROOF.drain())?;
    let current = PyCFunction::new_closure(py, Some(c"parent_variable"), None, |_, _| {
        std::env::var(selfcall::PARENT_VARIABLE).unwrap_or_default()
    })?;
    boot.get_item("mark_forked_children")?.expect("boot.py").call1((
        selfcall::PARENT_VARIABLE,
        renew,
        &current,
        exe,
    ))?;
    boot.get_item("prepare_spawns")?.expect("boot.py").call1((
        selfcall::PARENT_VARIABLE,
        drain,
        current,
    ))?;
    py.import("sys")?.setattr("executable", exe)?;
    // For the children, in the C environment they inherit, after `posix.environ` (hence
    // os.environ) was copied from it: the application sees the environment it was given.
    // SAFETY: the other threads (read-ahead) read the environment only through Rust's std, which
    // serializes with this.
    std::env::set_var(selfcall::PARENT_VARIABLE, selfcall::variable_value(&variable));
    castore::point_openssl_at_the_systems_bundle();
    Ok(())
}

/// A Python-mode self-call: the command line CPython parsed, run by `Py_RunMain` (which also
/// finalizes the interpreter and exits as python does), with the archive as the library and
/// importlib's path finder after it (a script's directory, `-c`'s current directory).
fn run_python(
    py: Python<'_>,
    boot: Bound<'_, PyDict>,
    exe: &str,
    argv: &[OsString],
    variable: selfcall::Variable,
) -> ! {
    if let Err(error) = prepare(py, &boot, exe, true, variable) {
        error.print(py);
        fail(exe, "cannot prepare the interpreter for a python command line");
    }
    // `-m MODULE` of a module that is nowhere: python's message, and what to do about it.
    if let Some(module) = selfcall::python_module(argv) {
        let missing =
            boot.get_item("module_is_missing").ok().flatten().map(|check| check.call1((&module,)));
        if let Some(Ok(missing)) = missing {
            if missing.is_truthy().unwrap_or(false) {
                eprintln!("{exe}: No module named {module}");
                eprintln!(
                    "hint: `-m` runs the modules of the application's archive (and of the current directory): \
                     build the application with the package that holds {module} among its dependencies, or, \
                     for a standard-library module the build left out, with `--include {module}`"
                );
                std::process::exit(1);
            }
        }
    }
    drop(boot);
    // SAFETY: the interpreter is initialized (both phases) and no Python object is held here.
    let code = unsafe { ffi::Py_RunMain() };
    std::process::exit(code)
}

fn run<'py>(
    py: Python<'py>,
    boot: &Bound<'py, PyDict>,
    exe: &str,
    config: &LaunchConfig,
    mode: &Mode,
    argv: &[OsString],
    variable: selfcall::Variable,
) -> PyResult<Outcome> {
    prepare(py, boot, exe, config.filesystem_imports(), variable)?;
    let sys = py.import("sys")?;
    // The process's command line, whatever part of it became sys.argv.
    sys.setattr("orig_argv", PyList::new(py, argv)?)?;
    let call = |name: &str, args: Vec<Bound<'py, PyAny>>| -> PyResult<Bound<'py, PyAny>> {
        let function = boot.get_item(name)?.expect("boot.py");
        function.call1(pyo3::types::PyTuple::new(py, args)?)
    };
    let result = match (mode, &config.run) {
        (Mode::FrozenFork, _) => call("run_frozen_fork", vec![sys.getattr("argv")?]),
        (Mode::Python, _) => unreachable!("Python mode runs in run_python"),
        // Called from here, not from boot.py: no launcher frame in the application's tracebacks.
        (Mode::App { .. }, Run::Function { module, function }) => {
            py.import(module.as_str()).and_then(|module| module.call_method0(function.as_str()))
        }
        (Mode::App { .. }, Run::Module { module }) => {
            call("run_module", vec![PyString::new(py, module).into_any()])
        }
    };
    Ok(match result {
        Ok(value) => Outcome::Code(exit_code(py, &value)),
        Err(error) if error.is_instance_of::<PySystemExit>(py) => {
            let code = error.value(py).getattr("code")?;
            Outcome::Code(exit_code(py, &code))
        }
        Err(error) if error.is_instance_of::<PyKeyboardInterrupt>(py) => {
            print_exception(py, error);
            Outcome::Interrupted
        }
        Err(error) => {
            print_exception(py, error);
            Outcome::Code(1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts() {
        let facts: serde_json::Value = serde_json::from_str(FACTS).unwrap();
        assert_eq!(facts["format"], ingot_format::names::LAUNCHER_FACTS_FORMAT);
        assert_eq!(facts["python"], PYTHON_VERSION);
        assert_eq!(facts["python_release"], PYTHON_RELEASE);
        assert!(PYTHON_RELEASE.starts_with(&format!("{PYTHON_VERSION}.")), "{PYTHON_RELEASE}");
        assert_eq!(facts["bytecode_magic"], BYTECODE_MAGIC);
        assert_eq!(facts["launch_config"], serde_json::json!([LAUNCH_CONFIG_VERSION]));
        assert_eq!(&FACTS_IN_SECTION[..], FACTS.as_bytes());
    }

    #[test]
    fn executable_from_argv0() {
        let root = std::env::temp_dir().join(format!("ingot-launcher-test-{}", std::process::id()));
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let app = bin.join("app");
        std::fs::write(&app, b"").unwrap();
        std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(bin.join("data"), b"").unwrap();
        std::os::unix::fs::symlink(&app, root.join("link")).unwrap();
        let app = std::fs::canonicalize(&app).unwrap();
        let find = |argv0: &str, path: Option<&str>, cwd: &Path| {
            find_executable(OsStr::new(argv0), path.map(OsStr::new), Some(cwd))
        };
        assert_eq!(find(app.to_str().unwrap(), None, Path::new("/")).unwrap(), app);
        assert_eq!(find("bin/app", None, &root).unwrap(), app);
        assert_eq!(find("./link", None, &root).unwrap(), app); // links resolved, as /proc/self/exe
        let path = format!("/nonexistent::{}", bin.display());
        assert_eq!(find("app", Some(&path), &root).unwrap(), app);
        assert_eq!(find("app", Some("/nonexistent:"), &bin).unwrap(), app); // "" is the cwd
        assert!(matches!(
            find("app", Some("/nonexistent"), &bin),
            Err(ExecutableError::NotOnPath { search_path }) if search_path == "/nonexistent"
        ));
        assert!(find("data", Some(bin.to_str().unwrap()), &root).is_err()); // not executable
        assert!(matches!(
            find("bin/data", None, &root),
            Err(ExecutableError::NotExecutable { path }) if path == root.join("bin/data")
        ));
        assert!(find("bin", Some(root.to_str().unwrap()), &root).is_err()); // a directory
        assert!(find("", None, &root).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
