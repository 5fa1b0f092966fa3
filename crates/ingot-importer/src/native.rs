//! Native code from memory: extension modules and the shared libraries they need are copied into
//! anonymous memory files (`memfd_create`) and handed to the dynamic loader as
//! `/proc/self/fd/N`; nothing is written to a file system.
//!
//! Shared libraries are loaded before the extension module that needs them, dependencies first, so
//! that when the loader resolves the extension's `DT_NEEDED` names it finds them already loaded
//! under their SONAME (glibc matches a needed name against the SONAME of every loaded object).
//!
//! The memory files stay open for the life of the process: glibc also matches a path against the
//! names of loaded objects, so a closed `/proc/self/fd/N` whose number was reused for another
//! library would be mistaken for the first one. They are opened close-on-exec.

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

use ingot_format::{Archive, Blob, Kind, Namespace, Role};
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;

use crate::cache::{self, CacheError};
use crate::error::chain;

/// Sonames of the shared libraries loaded from archives by this process, across finders.
static LOADED_LIBRARIES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A failure to bring native code into memory, as an `ImportError` naming the module.
pub fn native_error(module: &str, what: impl std::fmt::Display) -> PyErr {
    PyImportError::new_err(format!("cannot load extension module `{module}`: {what}"))
}

/// The environment variable that chooses where native code is loaded from: `memory` (memory
/// files, the default) or `cache` (files in the extraction cache, as when memory files fail).
pub const NATIVE_VAR: &str = "INGOT_NATIVE";

/// `$INGOT_NATIVE` names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?} is not a native-code mode (expected `memory` or `cache`)", var = NATIVE_VAR)]
pub struct BadMode {
    pub value: String,
}

fn use_cache() -> Result<bool, BadMode> {
    static MODE: std::sync::OnceLock<Result<bool, BadMode>> = std::sync::OnceLock::new();
    MODE.get_or_init(|| {
        let value = cache::variable(NATIVE_VAR);
        match value.as_deref().map(|value| value.to_string_lossy()).as_deref() {
            None | Some("") | Some("memory") => Ok(false),
            Some("cache") => Ok(true),
            Some(other) => Err(BadMode { value: other.to_string() }),
        }
    })
    .clone()
}

/// A native image to bring into memory: a blob of the archive, copied from the archive's file
/// without passing through its map ([`Archive::copy_blob`]), or bytes already in memory (an image
/// patched before loading, see `drop_needed`).
#[derive(Clone, Copy)]
pub enum Image<'a> {
    Blob(Blob<'a>),
    Bytes(&'a [u8]),
}

impl Image<'_> {
    /// The key of a blob image of `archive` in [`PREPARED`]; bytes in memory are never prepared.
    fn key(&self, archive: &Archive) -> Option<PreparedKey> {
        match self {
            Image::Blob(blob) => Some(prepared_key(archive, blob)),
            Image::Bytes(_) => None,
        }
    }
}

/// An archive (its address, fixed while it is open) and a blob's number in it.
type PreparedKey = (usize, u32);

fn prepared_key(archive: &Archive, blob: &Blob<'_>) -> PreparedKey {
    (archive as *const Archive as usize, blob.index())
}

/// Memory files made ahead of use ([`prepare`]), by the archive and blob they copy.
enum Prepared {
    /// Being copied by the read-ahead thread of process `pid`.
    InProgress {
        pid: u32,
    },
    Ready(String),
    /// Taken by an import, or made by it: not to be prepared.
    Taken,
}

static PREPARED: Mutex<Option<HashMap<PreparedKey, Prepared>>> = Mutex::new(None);
static PREPARED_CHANGED: Condvar = Condvar::new();
/// The process whose read-ahead thread uses [`PREPARED`] (0: none). A child forked while that
/// thread ran has its table but not the thread: it must not wait for entries in progress.
static PREPARED_BY: AtomicU32 = AtomicU32::new(0);

/// Copies the image in `blob` into a memory file ahead of its import, on the read-ahead thread, so
/// that the import finds it ready ([`native_file`]). Nothing is done if the import has begun,
/// memory files are not in use, or this fails (the import then does it itself, and reports any
/// error).
pub fn prepare(archive: &Archive, label: &str, blob: Blob<'_>) {
    if use_cache() != Ok(false) || blob.size() == 0 {
        return;
    }
    let key = prepared_key(archive, &blob);
    let pid = std::process::id();
    match PREPARED_BY.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(owner) if owner == pid => {}
        Err(_) => return, // another process's table (this one was forked)
    }
    {
        let mut guard = PREPARED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let map = guard.get_or_insert_with(HashMap::new);
        if map.contains_key(&key) {
            return;
        }
        map.insert(key, Prepared::InProgress { pid });
    }
    let made = memory_file(archive, label, Image::Blob(blob), cache::privileged());
    let mut guard = PREPARED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    match made {
        Ok((_fd, path)) => map.insert(key, Prepared::Ready(path)),
        Err(_) => map.insert(key, Prepared::Taken),
    };
    PREPARED_CHANGED.notify_all();
}

/// The memory file [`prepare`] made for `image`, waiting for it if it is being made; None if there
/// is none (and none will be made now).
fn take_prepared(archive: &Archive, image: &Image<'_>) -> Option<String> {
    let key = image.key(archive)?;
    if PREPARED_BY.load(Ordering::Acquire) != std::process::id() {
        return None; // nothing prepared, or prepared by the parent of this forked process
    }
    let mut guard = PREPARED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    loop {
        let map = guard.get_or_insert_with(HashMap::new);
        match map.get(&key) {
            Some(Prepared::Ready(path)) => {
                let path = path.clone();
                map.insert(key, Prepared::Taken);
                return Some(path);
            }
            // Only a thread of this process can finish it (a forked child has no such thread).
            Some(Prepared::InProgress { pid }) if *pid == std::process::id() => {
                guard =
                    PREPARED_CHANGED.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
            _ => {
                map.insert(key, Prepared::Taken);
                return None;
            }
        }
    }
}

/// Reads `INGOT_NATIVE` now, on the calling thread, so that [`prepare`] on another thread never
/// reads the environment (which the interpreter's thread may be changing).
pub fn resolve_mode() {
    let _ = use_cache();
}

/// A path the dynamic loader can open holding `image`: a sealed memory file (`/proc/self/fd/N`),
/// or, where memory files cannot be used (`memfd_create` refused, e.g. by `vm.memfd_noexec=2`; no
/// `/proc`) or `INGOT_NATIVE=cache` asks for it, a file in the extraction cache. A
/// [`cache::privileged`] start never uses the cache: its caller may be the cache's owner (file
/// capabilities, set-group-ID), who could change the file after its check; where memory files
/// fail, it is a [`NativeError::MemoryOnly`] error.
/// A damaged image is an [`NativeError::Archive`] error, reported as such: no other way is tried.
pub fn native_file(
    archive: &Archive,
    label: &str,
    image: Image<'_>,
) -> Result<String, NativeError> {
    // (`INGOT_NATIVE` is never read in a privileged start: see `cache::variable`.)
    if use_cache()? {
        return cached_file(archive, label, image);
    }
    if let Some(path) = take_prepared(archive, &image) {
        return Ok(path);
    }
    match memory_file(archive, label, image, cache::privileged()) {
        Ok((_fd, path)) => Ok(path),
        Err(NativeError::Archive(damaged)) => Err(NativeError::Archive(damaged)),
        Err(memory) if cache::privileged() => {
            Err(NativeError::MemoryOnly { memory: Box::new(memory) })
        }
        Err(memory) => cached_file(archive, label, image).map_err(|cache| NativeError::Nowhere {
            memory: Box::new(memory),
            cache: Box::new(cache),
        }),
    }
}

/// Libraries of the archive loaded by their path under the executable, by archive-relative path:
/// the path the loader was given (the same one each time, so that a second load of a library
/// finds the first, as glibc matches loaded objects by path).
static BY_PATH: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// Records that the extension module whose virtual file is `relative` (archive-relative:
/// `_tkinter.cpython-311-x86_64-linux-gnu.so`) was loaded from `loadable`: a later
/// `dlopen(<exe>/relative)` (matplotlib's `_tkagg` opens `_tkinter.__file__` to find Tcl/Tk's
/// functions) is given that path, and the loader returns the module already loaded.
pub fn record_extension(relative: String, loadable: &str) {
    let mut guard = BY_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.get_or_insert_with(HashMap::new).entry(relative).or_insert_with(|| loadable.to_string());
}

/// The path an extension module's virtual file (archive-relative) was loaded from by `dlopen`
/// of its path before its import: the import loads the same object.
pub fn loaded_by_path(relative: &str) -> Option<String> {
    let guard = BY_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.as_ref().and_then(|known| known.get(relative).cloned())
}

/// For `dlopen(path)` of a shared library the archive carries as a data file below its path
/// (`ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "lib_x.so"))`, cffi's
/// `ffi.dlopen`): a path the dynamic loader can open holding it, from memory as extension modules
/// are, after the libraries it needs that the archive carries. None when `path` is not such a
/// file (the system's loader then answers as it would; inside the executable: ENOTDIR) or it
/// cannot be brought into memory.
pub fn library_by_path(view: &crate::view::ArchiveView, path: &str) -> Option<String> {
    archive_library(view, view.relative(path)?).ok()
}

/// The library at `relative` in the archive's files, brought into memory after the libraries it
/// needs that the archive carries ([`library_by_path`]); why not, as a sentence about it.
fn archive_library(view: &crate::view::ArchiveView, relative: String) -> Result<String, String> {
    let known = || BY_PATH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(loaded) = known().get_or_insert_with(HashMap::new).get(&relative) {
        return Ok(loaded.clone());
    }
    // Not locked while loading: a library's constructor may load another by path.
    let archive = &view.archive;
    let not_held = || "it is not one of the archive's files".to_string();
    // A data file, or an extension module's virtual file not imported yet.
    let (entry, role) = view.file_raw(&relative).ok().flatten().ok_or_else(not_held)?;
    let blob = entry.blob(role).ok().flatten().ok_or_else(not_held)?;
    let image = archive.data(&blob).map_err(|error| chain(&error))?;
    let elf = goblin::elf::Elf::parse(&image)
        .map_err(|error| format!("it is not a shared library ({error})"))?;
    let needed: Vec<String> = elf.libraries.iter().map(|name| name.to_string()).collect();
    drop(elf);
    crate::pages::release(archive, &image);
    // Its needs first, as for extension modules; a need the archive does not carry is the
    // system's (glibc) and left to the loader.
    let label = relative.rsplit('/').next().unwrap_or(&relative).to_string();
    // (The error is Python's, which could only be read with the GIL.)
    load_needed(archive, &label, &needed)
        .map_err(|_| "a library it needs could not be loaded".to_string())?;
    let loadable =
        native_file(archive, &label, Image::Blob(blob)).map_err(|error| match error {
            NativeError::MemoryOnly { memory } => {
                format!("it could not be copied into memory ({})", chain(&memory))
            }
            other => chain(&other),
        })?;
    // Another thread may have loaded it meanwhile: the first path is the one kept and used.
    let mut guard = known();
    Ok(guard.get_or_insert_with(HashMap::new).entry(relative).or_insert(loadable).clone())
}

/// What a [`cache::privileged`] start does with `dlopen(path)` of a path in the extraction cache.
#[derive(Debug, PartialEq, Eq)]
pub enum CachePath {
    /// Not in the extraction cache: the loader answers as it would.
    Elsewhere,
    /// A file of a materialized `files` tree that the archive holds: the path of its memory
    /// file, for the loader to open instead.
    Memory(String),
    /// Anything else there: not to be loaded. `message` says what and why, with a `hint:`;
    /// `instead` is a path below the executable that the loader cannot open (`ENOTDIR`: the
    /// executable is a file), for the caller's `dlerror` to name.
    Refused { message: String, instead: String },
}

/// For `dlopen(path)` in a privileged start: the extraction cache is the effective user's, who
/// with file capabilities or set-group-ID is the caller, free to change any file in it after its
/// check. A library there is loaded from the archive's copy in memory, or not at all (see
/// [`CachePath`]). `path` is taken as the loader takes it: absolute, or relative to the working
/// directory when it has a slash; a bare name is searched in the system's directories.
pub fn cache_path(view: &crate::view::ArchiveView, path: &str) -> CachePath {
    static ROOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let Some(root) = ROOT.get_or_init(|| cache::root().to_str().map(str::to_string)) else {
        return CachePath::Elsewhere;
    };
    if !path.contains('/') {
        return CachePath::Elsewhere;
    }
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        match std::env::current_dir() {
            Ok(directory) => format!("{}/{path}", directory.to_string_lossy()),
            Err(_) => return CachePath::Elsewhere,
        }
    };
    let normal = normalize(&absolute);
    let inside = normal.strip_prefix(root.as_str()).is_some_and(|rest| rest.starts_with('/'));
    if !inside {
        return CachePath::Elsewhere;
    }
    let relative = view.files.relative(&normal);
    let why = match relative.clone() {
        Some(relative) => match archive_library(view, relative) {
            Ok(loadable) => return CachePath::Memory(loadable),
            Err(why) => why,
        },
        None => "it is not a file of this application's tree".to_string(),
    };
    let shown = relative.unwrap_or_else(|| normal.rsplit('/').next().unwrap_or("").to_string());
    CachePath::Refused {
        message: format!(
            "ingot: not loading `{path}`: {why}, and a privileged start (set-user-ID, set-group-ID or file capabilities) loads no native code from the extraction cache, which its caller may be able to change, only the archive's, from sealed memory files\nhint: ship the library in the application's package, or install the executable without the privilege"
        ),
        instead: format!("{}{shown}", view.prefix),
    }
}

/// `path` (absolute) without `.`, `..` and repeated slashes, as the kernel walks it when no link
/// is on it (`..` at the root stays there).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Why native code could not be brought into memory. Shown through [`chain`].
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The archive's bytes for it are damaged (or cannot be read).
    #[error(transparent)]
    Archive(ingot_format::Error),
    #[error(transparent)]
    Mode(#[from] BadMode),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error("`{label}` cannot name a cache file")]
    BadLabel { label: String },
    #[error("name contains NUL")]
    NulInName,
    #[error("memfd_create failed")]
    MemfdCreate(#[source] std::io::Error),
    #[error("writing to a memory file failed")]
    WriteMemoryFile(#[source] std::io::Error),
    /// The memory file refused the bytes copied from the archive.
    #[error("writing to a memory file failed")]
    CopyToMemoryFile(#[source] ingot_format::Error),
    #[error("`{path}` does not exist (is /proc mounted?)")]
    NoProc { path: String },
    #[error("sealing a memory file failed")]
    SealMemoryFile(#[source] std::io::Error),
    /// A privileged start, where memory files failed: the extraction cache is not tried.
    #[error("not from memory ({}), and a privileged start (set-user-ID, set-group-ID or file capabilities) loads native code from nowhere else: the extraction cache may be its caller's to change\nhint: allow memory files here (`vm.memfd_noexec` below 2, no seccomp filter refusing `memfd_create`, /proc mounted), or install the executable without the privilege", chain(.memory))]
    MemoryOnly { memory: Box<NativeError> },
    /// Neither way worked: each error with its causes.
    #[error("not from memory ({}), and not through the extraction cache either ({})", chain(.memory), chain(.cache))]
    Nowhere { memory: Box<NativeError>, cache: Box<NativeError> },
}

/// `image` as `<cache>/native/<xxh3>-<size>/<label>`, written once and verified on each use.
fn cached_file(archive: &Archive, label: &str, image: Image<'_>) -> Result<String, NativeError> {
    if label.is_empty() || label.contains('/') || label.starts_with('.') {
        return Err(NativeError::BadLabel { label: label.to_string() });
    }
    let bytes = match image {
        Image::Bytes(bytes) => std::borrow::Cow::Borrowed(bytes),
        Image::Blob(blob) => archive.data(&blob).map_err(NativeError::Archive)?,
    };
    let made = cached_bytes(label, &bytes).map_err(NativeError::Cache);
    // Read through the map: its pages are not read again.
    crate::pages::release(archive, &bytes);
    if let Image::Blob(blob) = image {
        crate::pages::release_blob(archive, &blob);
    }
    made
}

fn cached_bytes(label: &str, image: &[u8]) -> Result<String, CacheError> {
    let root = cache::root();
    let hash = xxhash_rust::xxh3::xxh3_64(image);
    let id = format!("{hash:016x}-{:x}", image.len());
    let file = cache::TreeFile { path: label.to_string(), size: image.len() as u64, hash };
    let tree = cache::ensure_tree(&root, "native", &id, &[file], |_| {
        Ok::<_, std::convert::Infallible>(std::borrow::Cow::Borrowed(image))
    })?;
    let path = tree.join(label);
    let Some(text) = path.to_str() else {
        return Err(CacheError::NotUtf8 { path });
    };
    // The loader gets the descriptor that was checked, not the path: a swap after the check
    // changes nothing. Kept open for the life of the process, as memory files are. Without
    // /proc, only the path can be given (its directories were checked: see cache::root).
    let file = cache::open_checked(&path, image)?;
    let held = format!("/proc/self/fd/{}", std::os::fd::IntoRawFd::into_raw_fd(file));
    if std::path::Path::new(&held).exists() {
        Ok(held)
    } else {
        Ok(text.to_string())
    }
}

/// A new close-on-exec memory file named `label` holding `bytes`, positioned at its start (a data
/// file, not executable), sealed against writes: what it answers (`open(<exe>/path)`) reads as a
/// file of the archive does, and cannot be changed through it. By system call, as for images;
/// where the kernel has no memory files (before 3.17, e.g. RHEL 7's 3.10), an unlinked file in
/// `/dev/shm`, which is memory too (and cannot be sealed).
pub(crate) fn data_memory_file(label: &str, bytes: &[u8]) -> std::io::Result<i32> {
    use std::io::{Seek, Write};
    use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};

    let name = CString::new(format!("ingot:{label}")).unwrap_or_else(|_| c"ingot".to_owned());
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), flags) };
    let mut file = if fd >= 0 {
        // SAFETY: `fd` is the memory file just created, owned by this File from here on.
        unsafe { std::fs::File::from_raw_fd(fd as libc::c_int) }
    } else if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        shm_file()?
    } else {
        return Err(std::io::Error::last_os_error());
    };
    file.write_all(bytes)?;
    file.rewind()?;
    if fd >= 0 {
        let seals =
            libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on the memory file this function owns.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(file.into_raw_fd())
}

/// An unlinked, close-on-exec file in `/dev/shm` (a tmpfs), for kernels without `memfd_create`.
fn shm_file() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;

    for attempt in 0..16u32 {
        let path = format!(
            "/dev/shm/.ingot-{}-{}-{attempt}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.subsec_nanos())
        );
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::EEXIST))
}

/// Decompresses compressed `blob` straight into the memory file `file` (sized, then mapped), so
/// that no buffer of the image's size is allocated ([`Archive::decompress_into`]). False, with
/// the file emptied, if the blob is stored as is or this fails (the copy then says why).
fn decompressed_in_place(archive: &Archive, blob: &Blob<'_>, file: &std::fs::File) -> bool {
    if blob.compression() == ingot_format::layout::compression::NONE || blob.size() == 0 {
        return false;
    }
    let done = file.set_len(blob.size()).is_ok() && {
        // SAFETY: the memory file was made by this process a moment ago and is not yet shared:
        // nothing else maps or truncates it while the map lives (it is dropped before sealing).
        match unsafe { memmap2::MmapMut::map_mut(file) } {
            Ok(mut map) => archive.decompress_into(blob, &mut map).is_ok(),
            Err(_) => false,
        }
    };
    if !done {
        let _ = file.set_len(0);
    }
    done
}

/// Copies `image` into a new close-on-exec memory file and returns the path the loader can open.
/// With `seal` (a [`cache::privileged`] start, whose memory files may belong to the caller, who
/// could open one through `/proc/PID/fd` and write into it), the file is sealed against writing,
/// growing and shrinking (`F_SEAL_*`) before the loader sees it. Other starts leave it unsealed:
/// only their own user could write it, who can change the process anyway, and the write seal
/// costs about 3% of the copy (the kernel checks every page: 30 µs per MiB, docs/security.md).
fn memory_file(
    archive: &Archive,
    label: &str,
    image: Image<'_>,
    seal: bool,
) -> Result<(i32, String), NativeError> {
    let name = CString::new(format!("ingot:{label}")).map_err(|_| NativeError::NulInName)?;
    // MFD_EXEC (Linux 6.3+) asks for an executable memory file where `vm.memfd_noexec` would
    // otherwise make it non-executable; older kernels reject the flag with EINVAL.
    const MFD_EXEC: libc::c_uint = 0x10;
    // The system call, not glibc's wrapper (glibc 2.27+): executables built for glibc 2.17 run
    // where the kernel has memfd_create (3.17+) whatever the glibc.
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    let memfd_create = |flags: libc::c_uint| unsafe {
        libc::syscall(libc::SYS_memfd_create, name.as_ptr(), flags) as libc::c_int
    };
    let flags = if seal { libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING } else { libc::MFD_CLOEXEC };
    let mut fd = memfd_create(flags | MFD_EXEC);
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        fd = memfd_create(flags);
    }
    if fd < 0 {
        return Err(NativeError::MemfdCreate(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is the memory file just created, owned here until it is handed on below.
    let mut file = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd)
    });
    let written = match image {
        Image::Bytes(bytes) => {
            std::io::Write::write_all(&mut *file, bytes).map_err(NativeError::WriteMemoryFile)
        }
        Image::Blob(blob) if decompressed_in_place(archive, &blob, &file) => Ok(()),
        Image::Blob(blob) => archive
            .copy_blob(&blob, &mut *file, |file| {
                // Starting over from the archive's map: empty the memory file.
                file.set_len(0)?;
                std::io::Seek::rewind(file)
            })
            .map(|_| ())
            .map_err(|error| match error {
                // The memory file refused the bytes (no memory left?): the cache may take them.
                ingot_format::Error::Copy { reading: false, .. } => {
                    NativeError::CopyToMemoryFile(error)
                }
                damaged => NativeError::Archive(damaged),
            }),
    };
    let sealed = written.and_then(|()| {
        if !seal {
            return Ok(());
        }
        let seals =
            libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on the memory file this function owns (written, not mapped).
        if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
            return Err(NativeError::SealMemoryFile(std::io::Error::last_os_error()));
        }
        Ok(())
    });
    if let Err(why) = sealed {
        // SAFETY: closing the descriptor we opened (the File is never dropped).
        unsafe { libc::close(fd) };
        return Err(why);
    }
    let path = format!("/proc/self/fd/{fd}");
    // Checked once per process: a stat of a /proc path per image costs more than it tells.
    static PROC_MOUNTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC_MOUNTED.get_or_init(|| std::path::Path::new(&path).exists()) {
        // SAFETY: closing the descriptor we opened.
        unsafe { libc::close(fd) };
        return Err(NativeError::NoProc { path });
    }
    Ok((fd, path))
}

/// Why the dynamic loader did not load a file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("path contains NUL")]
    NulInPath,
    /// The loader's message, with the hint [`explain_load_error`] gives for it.
    #[error("{}", explain_load_error(.message.clone(), .path))]
    Loader { message: String, path: String },
}

fn dlopen_with(path: &str, flags: libc::c_int) -> Result<(), LoadError> {
    let c_path = CString::new(path).map_err(|_| LoadError::NulInPath)?;
    // SAFETY: `c_path` is NUL-terminated; the handle is kept for the life of the process.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), flags) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local string or NULL.
        let message = unsafe { libc::dlerror() };
        let message = if message.is_null() {
            "unknown dlopen error".to_string()
        } else {
            // SAFETY: non-null dlerror results are NUL-terminated strings.
            unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
        };
        return Err(LoadError::Loader { message, path: path.to_string() });
    }
    Ok(())
}

/// The loader's message, with a hint when native code in the extraction cache cannot be mapped
/// executable: the cache is on a file system mounted `noexec`.
pub fn explain_load_error(message: String, path: &str) -> String {
    if !message.contains("failed to map segment from shared object") {
        return message;
    }
    // A cache file is given to the loader through its descriptor: name the file it holds.
    let path = match path.strip_prefix("/proc/self/fd/") {
        Some(_) => match std::fs::read_link(path) {
            Ok(target) => target.to_string_lossy().into_owned(),
            Err(_) => return message,
        },
        None => path.to_string(),
    };
    if path.starts_with("/proc/") || path.starts_with("/memfd:") {
        return message;
    }
    let directory = std::path::Path::new(&path)
        .parent()
        .map_or_else(String::new, |dir| dir.display().to_string());
    format!(
        "{message}\nhint: {directory} is on a file system mounted noexec, where native code cannot run; set {} to a directory on one that allows it",
        cache::CACHE_DIR_VAR
    )
}

/// Whether a shared object with this SONAME is loaded in the process (`RTLD_NOLOAD`: nothing is
/// loaded by asking).
pub fn already_in_process(soname: &str) -> bool {
    let Ok(name) = CString::new(soname) else { return false };
    // SAFETY: `name` is NUL-terminated; with RTLD_NOLOAD nothing is loaded, and the reference the
    // call takes on an already-loaded object is kept for the life of the process.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    !handle.is_null()
}

/// Libraries met in a cycle of `DT_NEEDED` names: loaded lazily and globally.
static CYCLE_MEMBERS: Mutex<Vec<String>> = Mutex::new(Vec::new());

const DT_NEEDED: u64 = 1;
const DT_FLAGS: u64 = 30;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
const DF_BIND_NOW: u64 = 0x8;
const DF_1_NOW: u64 = 0x1;

/// A copy of a 64-bit little-endian ELF image whose `DT_NEEDED` entries naming `dropped` name
/// another of its needed libraries instead (a duplicate, which the loader ignores): the library
/// can then be loaded before the ones of its cycle, whose symbols it binds lazily, at first call,
/// once they are loaded. Refused (the reason returned) when that cannot work: the image binds
/// every symbol at load (`BIND_NOW`), or has no other needed name to point at.
pub fn drop_needed(image: &[u8], dropped: &[String]) -> Result<Vec<u8>, Unpatchable> {
    let elf = goblin::elf::Elf::parse(image).map_err(Unpatchable::Headers)?;
    if !elf.is_64 || !elf.little_endian {
        return Err(Unpatchable::NotElf64Le);
    }
    let dynamic = elf
        .program_headers
        .iter()
        .find(|header| header.p_type == goblin::elf::program_header::PT_DYNAMIC)
        .ok_or(Unpatchable::NoDynamic)?;
    let dyns = elf.dynamic.as_ref().map(|dynamic| dynamic.dyns.clone()).unwrap_or_default();
    for entry in &dyns {
        if (entry.d_tag == DT_FLAGS && entry.d_val & DF_BIND_NOW != 0)
            || (entry.d_tag == DT_FLAGS_1 && entry.d_val & DF_1_NOW != 0)
        {
            return Err(Unpatchable::BindNow);
        }
    }
    let name_of = |offset: u64| elf.dynstrtab.get_at(offset as usize).unwrap_or("");
    let keep = dyns
        .iter()
        .find(|entry| {
            entry.d_tag == DT_NEEDED && !dropped.iter().any(|name| name == name_of(entry.d_val))
        })
        .map(|entry| entry.d_val)
        .ok_or(Unpatchable::NoStandIn)?;
    let mut patched = image.to_vec();
    for (index, entry) in dyns.iter().enumerate() {
        if entry.d_tag == DT_NEEDED && dropped.iter().any(|name| name == name_of(entry.d_val)) {
            let at = dynamic.p_offset as usize + index * 16 + 8;
            let slot = patched.get_mut(at..at + 8).ok_or(Unpatchable::DynamicOutside)?;
            slot.copy_from_slice(&keep.to_le_bytes());
        }
    }
    Ok(patched)
}

/// Why [`drop_needed`] cannot patch an image (said of the image: "it ...").
#[derive(Debug, thiserror::Error)]
pub enum Unpatchable {
    /// Not a source: goblin's message already ends with its cause's.
    #[error("its ELF headers cannot be read: {0}")]
    Headers(goblin::error::Error),
    #[error("it is not a 64-bit little-endian object")]
    NotElf64Le,
    #[error("it has no dynamic segment")]
    NoDynamic,
    #[error("it was linked to bind its symbols at load (BIND_NOW)")]
    BindNow,
    #[error("it needs no other library to stand in")]
    NoStandIn,
    #[error("its dynamic segment lies outside the file")]
    DynamicOutside,
}

/// The NUL-separated names of a `needed` blob.
pub fn needed_names(blob: &[u8]) -> Vec<String> {
    blob.split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// Loads, from the archive, every shared library in `needed` (and what those need) that the
/// archive carries and this process has not loaded yet. Names the archive does not carry are left
/// to the system loader.
pub fn load_needed(archive: &Archive, module: &str, needed: &[String]) -> PyResult<()> {
    let mut guard = LOADED_LIBRARIES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let loaded = guard.get_or_insert_with(HashSet::new);
    let mut visiting = Vec::new();
    for name in needed {
        load_library(archive, module, name, loaded, &mut visiting)?;
    }
    Ok(())
}

fn load_library(
    archive: &Archive,
    module: &str,
    name: &str,
    loaded: &mut HashSet<String>,
    visiting: &mut Vec<String>,
) -> PyResult<()> {
    if loaded.contains(name) || visiting.iter().any(|seen| seen == name) {
        return Ok(());
    }
    if already_in_process(name) {
        // The process has it already (the launcher links libgcc_s, an earlier import loaded it
        // from the system): a second copy from the archive would only duplicate its state.
        loaded.insert(name.to_string());
        return Ok(());
    }
    // The archive's error without its causes, as it has always been reported here.
    let archive_error = |error: ingot_format::Error| native_error(module, error);
    if let Some(path) = system_first(archive, name) {
        // The system's copy defines every version the archive's code needs of it: loaded by
        // its path, so that later needs of its SONAME find it (see `system_copy`).
        if dlopen_with(&path, libc::RTLD_NOW | libc::RTLD_LOCAL).is_ok() {
            loaded.insert(name.to_string());
            return Ok(());
        }
    }
    let Some(entry) = archive.find(Namespace::Libraries, name).map_err(archive_error)? else {
        return Ok(());
    };
    if entry.kind() != Some(Kind::SharedLibrary) {
        return Ok(());
    }
    visiting.push(name.to_string());
    // Dependencies this library shares a cycle with (each needs the other, as Pillow's bundled
    // libfreetype and libharfbuzz do): they are on the stack, not loaded, so the loader could not
    // find them by SONAME. See `drop_needed`.
    let mut cyclic = Vec::new();
    if let Some(needed) = entry.data(Role::Needed).map_err(archive_error)? {
        for dependency in needed_names(&needed) {
            if visiting.contains(&dependency) {
                cyclic.push(dependency);
                continue;
            }
            load_library(archive, module, &dependency, loaded, visiting)?;
        }
    }
    visiting.pop();
    let blob = entry
        .blob(Role::Content)
        .map_err(archive_error)?
        .ok_or_else(|| native_error(module, format!("shared library `{name}` has no content")))?;
    let in_cycle = !cyclic.is_empty()
        || CYCLE_MEMBERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|member| member == name);
    let path = if cyclic.is_empty() {
        native_file(archive, name, Image::Blob(blob))
    } else {
        CYCLE_MEMBERS.lock().unwrap_or_else(|p| p.into_inner()).extend(cyclic.iter().cloned());
        let image = archive.data(&blob).map_err(archive_error)?;
        let patched = drop_needed(&image, &cyclic).map_err(|why| {
            native_error(
                module,
                format_args!(
                    "shared library `{name}` needs {} which need it in turn, and {}",
                    cyclic.join(", "),
                    chain(&why)
                ),
            )
        })?;
        crate::pages::release(archive, &image);
        crate::pages::release_blob(archive, &blob);
        native_file(archive, name, Image::Bytes(&patched))
    }
    .map_err(|error| native_error(module, chain(&error)))?;
    let flags = if in_cycle {
        // Lazy: the calls into the cycle's other members bind when first made, once those are
        // loaded; global: so that those calls find them.
        libc::RTLD_LAZY | libc::RTLD_GLOBAL
    } else {
        libc::RTLD_NOW | libc::RTLD_LOCAL
    };
    dlopen_with(&path, flags).map_err(|error| {
        native_error(module, format_args!("loading shared library `{name}`: {}", chain(&error)))
    })?;
    loaded.insert(name.to_string());
    if let Some(soname) = entry.data(Role::Soname).map_err(archive_error)? {
        loaded.insert(String::from_utf8_lossy(&soname).into_owned());
    }
    Ok(())
}

/// GCC's support library, which glibc loads by this SONAME when a thread ends with
/// `pthread_exit` or is cancelled, and at the first `backtrace`.
pub const LIBGCC_S: &str = "libgcc_s.so.1";

/// Makes sure glibc's own lookup of `libgcc_s.so.1` (`pthread_exit`, `pthread_cancel`,
/// `backtrace`: without it the process aborts, "libgcc_s.so.1 must be installed for pthread_exit
/// to work") finds a copy, on a system with glibc alone: when the process has none loaded and
/// none is in the system's library directories, the archive's copy (every build carries one,
/// `ingot.build.archive.libgcc`) is loaded from memory now, and glibc's later lookup by SONAME
/// finds it. Where the system has one (nearly always) this costs one `stat` and loads nothing:
/// glibc loads the system's copy itself, when it needs it. Returns whether the archive's copy
/// was loaded.
pub fn provide_libgcc_s(archive: &Archive) -> bool {
    if already_in_process(LIBGCC_S)
        || library_directories().iter().any(|directory| directory.join(LIBGCC_S).exists())
    {
        return false;
    }
    let Ok(Some(entry)) = archive.find(Namespace::Libraries, LIBGCC_S) else {
        return false;
    };
    // Not in the default directories: one the ld.so cache names elsewhere (ld.so.conf's
    // directories) is still the system's, loaded by the loader's own search.
    if dlopen_with(LIBGCC_S, libc::RTLD_NOW | libc::RTLD_LOCAL).is_ok() {
        return false;
    }
    let Ok(Some(blob)) = entry.blob(Role::Content) else {
        return false;
    };
    // (a failure here is left to glibc's own message, at the moment it needs the library)
    let Ok(path) = native_file(archive, LIBGCC_S, Image::Blob(blob)) else {
        return false;
    };
    if dlopen_with(&path, libc::RTLD_NOW | libc::RTLD_LOCAL).is_err() {
        return false;
    }
    let mut guard = LOADED_LIBRARIES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.get_or_insert_with(HashSet::new).insert(LIBGCC_S.to_string());
    true
}

/// The path of the system's copy of `name` when the archive lists it in its
/// `__ingot__/system-first.json` (the build wrote there the symbol versions its code needs of
/// that library) and a copy in the system's library directories defines them all. Carried C++
/// runtimes come from the build machine and need its glibc; the system's, where new enough, keep
/// the executable's floor at the one its own code sets (manylinux expects libstdc++ from the
/// system). None: load the archive's copy.
fn system_first(archive: &Archive, name: &str) -> Option<String> {
    let table = archive
        .find(Namespace::Files, ingot_format::names::SYSTEM_FIRST)
        .ok()??
        .data(Role::Content)
        .ok()??;
    let table: HashMap<String, Vec<String>> = serde_json::from_slice(&table).ok()?;
    system_copy(name, table.get(name)?, &library_directories())
}

/// Where the system's shared libraries are, in the loader's order of preference:
/// `LD_LIBRARY_PATH`, then the multiarch and lib64 directories (Debian, RHEL, SUSE, Alpine).
pub fn library_directories() -> Vec<std::path::PathBuf> {
    #[cfg(target_arch = "aarch64")]
    const MULTIARCH: &str = "aarch64-linux-gnu";
    #[cfg(not(target_arch = "aarch64"))]
    const MULTIARCH: &str = "x86_64-linux-gnu";
    // (ignored in a privileged start, as the loader ignores it)
    let mut directories: Vec<std::path::PathBuf> = cache::variable("LD_LIBRARY_PATH")
        .map(|paths| std::env::split_paths(&paths).filter(|p| p.is_absolute()).collect())
        .unwrap_or_default();
    for directory in [
        format!("/lib/{MULTIARCH}"),
        format!("/usr/lib/{MULTIARCH}"),
        "/lib64".to_string(),
        "/usr/lib64".to_string(),
        "/lib".to_string(),
        "/usr/lib".to_string(),
    ] {
        directories.push(directory.into());
    }
    directories
}

/// The first file named `name` in `directories` that is an ELF object for this machine and
/// defines every version in `versions` (`GLIBCXX_3.4.19`, `CXXABI_1.3`, ...).
pub fn system_copy(
    name: &str,
    versions: &[String],
    directories: &[std::path::PathBuf],
) -> Option<String> {
    directories.iter().find_map(|directory| {
        let path = directory.join(name);
        let image = std::fs::read(&path).ok()?;
        let defined = defined_versions(&image)?;
        versions
            .iter()
            .all(|version| defined.contains(version))
            .then(|| path.to_string_lossy().into_owned())
    })
}

/// The symbol versions an ELF object for this machine defines (its `DT_VERDEF` table, as goblin
/// reads it from the section headers); None if it is not one.
pub fn defined_versions(image: &[u8]) -> Option<HashSet<String>> {
    #[cfg(target_arch = "aarch64")]
    const MACHINE: u16 = goblin::elf::header::EM_AARCH64;
    #[cfg(not(target_arch = "aarch64"))]
    const MACHINE: u16 = goblin::elf::header::EM_X86_64;
    let elf = goblin::elf::Elf::parse(image).ok()?;
    if !elf.is_64 || elf.header.e_machine != MACHINE {
        return None;
    }
    let mut defined = HashSet::new();
    for definition in elf.verdef.as_ref()?.iter() {
        for auxiliary in definition.iter() {
            if let Some(name) = elf.dynstrtab.get_at(auxiliary.vda_name) {
                defined.insert(name.to_string());
            }
        }
    }
    Some(defined)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C++ runtime of the machine running the tests (every machine that builds the launcher
    /// has one: rustc's linker driver needs it).
    fn host_libstdcxx() -> Option<std::path::PathBuf> {
        library_directories()
            .into_iter()
            .map(|directory| directory.join("libstdc++.so.6"))
            .find(|path| path.is_file())
    }

    #[test]
    fn the_systems_copy_is_chosen_only_when_it_defines_every_needed_version() {
        let host = host_libstdcxx().expect("a libstdc++.so.6 in the library directories");
        let directory = host.parent().expect("a file in a directory").to_path_buf();
        let defined = defined_versions(&std::fs::read(&host).expect("readable")).expect("ELF");
        assert!(defined.contains("GLIBCXX_3.4.19") && defined.contains("CXXABI_1.3"));
        let old = ["GLIBCXX_3.4".to_string(), "GLIBCXX_3.4.19".to_string()];
        let found = system_copy("libstdc++.so.6", &old, std::slice::from_ref(&directory));
        assert_eq!(found.as_deref(), Some(host.to_str().expect("UTF-8")));
        // A version the system's copy lacks (a newer compiler's): the carried copy is loaded.
        let newer = ["GLIBCXX_3.4".to_string(), "GLIBCXX_9.9".to_string()];
        assert_eq!(system_copy("libstdc++.so.6", &newer, std::slice::from_ref(&directory)), None);
        // A file by that name that is not an ELF object for this machine is passed over.
        let decoy = std::env::temp_dir().join(format!("ingot-decoy-{}", std::process::id()));
        std::fs::create_dir_all(&decoy).expect("temp dir");
        std::fs::write(decoy.join("libstdc++.so.6"), b"not ELF").expect("write");
        let found = system_copy("libstdc++.so.6", &old, &[decoy.clone(), directory]);
        std::fs::remove_dir_all(&decoy).expect("cleanup");
        assert_eq!(found.as_deref(), Some(host.to_str().expect("UTF-8")));
    }

    #[test]
    fn paths_are_normalized_as_the_kernel_walks_them() {
        assert_eq!(
            normalize("/tmp/ingot-1/trees/t/pkg/../pkg/./lib//x.so"),
            "/tmp/ingot-1/trees/t/pkg/lib/x.so"
        );
        assert_eq!(normalize("/../tmp/x"), "/tmp/x");
        assert_eq!(normalize("/"), "/");
    }

    #[test]
    fn memory_files_are_sealed() {
        use ingot_format::{ArchiveWriter, WriterOptions};
        let mut writer = ArchiveWriter::new(WriterOptions {
            bytecode_magic: *b"\xa7\x0d\x0d\x0a",
            python_version: (3, 11),
            zstd_level: Some(3),
            large_zstd_level: None,
            native_zstd_level: None,
            compress_start_bytecode: false,
        });
        let image = b"\x7fELF not really".repeat(1000);
        writer.add(Kind::SharedLibrary, "libx.so.1", vec![(Role::Content, image.clone())]).unwrap();
        let archive = Archive::from_vec(writer.to_vec().unwrap()).unwrap();
        let entry = archive.find(Namespace::Libraries, "libx.so.1").unwrap().unwrap();
        let blob = entry.blob(Role::Content).unwrap().unwrap();
        for made in [Image::Blob(blob), Image::Bytes(&image)] {
            let (fd, path) = memory_file(&archive, "libx.so.1", made, true).expect("a memory file");
            // SAFETY: F_GET_SEALS on a descriptor this test owns.
            let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
            let all =
                libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
            assert_eq!(seals & all, all);
            assert_eq!(std::fs::read(&path).unwrap(), image);
            // Not even through a new descriptor, as another process would open it.
            let writable = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            let written = std::io::Write::write(&mut &writable, b"x").unwrap_err();
            assert_eq!(written.raw_os_error(), Some(libc::EPERM));
            drop(writable);
            // SAFETY: closing the descriptor this test owns.
            unsafe { libc::close(fd) };
        }
    }

    #[test]
    fn messages_keep_their_wording() {
        let io = || std::io::Error::from_raw_os_error(libc::ENOMEM);
        let copy = || ingot_format::Error::Copy {
            entry: "libz.so.1".into(),
            role: "content",
            reading: false,
            source: io(),
        };
        let cases: Vec<(NativeError, &str)> = vec![
            (
                BadMode { value: "disk".into() }.into(),
                "INGOT_NATIVE=\"disk\" is not a native-code mode (expected `memory` or `cache`)",
            ),
            (
                CacheError::NotUtf8 { path: "/c/native/x".into() }.into(),
                "cache path `/c/native/x` is not valid UTF-8",
            ),
            (NativeError::BadLabel { label: ".x".into() }, "`.x` cannot name a cache file"),
            (NativeError::NulInName, "name contains NUL"),
            (
                NativeError::MemfdCreate(io()),
                "memfd_create failed: Cannot allocate memory (os error 12)",
            ),
            (
                NativeError::WriteMemoryFile(io()),
                "writing to a memory file failed: Cannot allocate memory (os error 12)",
            ),
            (
                NativeError::CopyToMemoryFile(copy()),
                "writing to a memory file failed: entry `libz.so.1`: writing out its content data failed: Cannot allocate memory (os error 12)",
            ),
            (
                NativeError::Archive(copy()),
                "entry `libz.so.1`: writing out its content data failed: Cannot allocate memory (os error 12)",
            ),
            (
                NativeError::NoProc { path: "/proc/self/fd/3".into() },
                "`/proc/self/fd/3` does not exist (is /proc mounted?)",
            ),
            (
                NativeError::SealMemoryFile(io()),
                "sealing a memory file failed: Cannot allocate memory (os error 12)",
            ),
            (
                NativeError::MemoryOnly { memory: Box::new(NativeError::MemfdCreate(io())) },
                "not from memory (memfd_create failed: Cannot allocate memory (os error 12)), and a privileged start (set-user-ID, set-group-ID or file capabilities) loads native code from nowhere else: the extraction cache may be its caller's to change\nhint: allow memory files here (`vm.memfd_noexec` below 2, no seccomp filter refusing `memfd_create`, /proc mounted), or install the executable without the privilege",
            ),
            (
                NativeError::Nowhere {
                    memory: Box::new(NativeError::MemfdCreate(io())),
                    cache: Box::new(NativeError::Cache(CacheError::CreateDir {
                        path: "/c".into(),
                        source: std::io::Error::from_raw_os_error(libc::EACCES),
                    })),
                },
                "not from memory (memfd_create failed: Cannot allocate memory (os error 12)), and not through the extraction cache either (cannot create cache directory `/c`: Permission denied (os error 13))",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(chain(&error), expected);
        }
        let load = LoadError::Loader {
            message: "/c/native/x/libz.so.1: failed to map segment from shared object".into(),
            path: "/c/native/x/libz.so.1".into(),
        };
        assert_eq!(
            chain(&load),
            "/c/native/x/libz.so.1: failed to map segment from shared object\nhint: /c/native/x is on a file system mounted noexec, where native code cannot run; set INGOT_CACHE_DIR to a directory on one that allows it"
        );
        assert_eq!(chain(&LoadError::NulInPath), "path contains NUL");
        let goblin = goblin::elf::Elf::parse(b"\x7fELF").map(|_| ()).unwrap_err().to_string();
        let unpatchable = drop_needed(b"\x7fELF", &[]).unwrap_err();
        assert_eq!(chain(&unpatchable), format!("its ELF headers cannot be read: {goblin}"));
        assert_eq!(
            Unpatchable::BindNow.to_string(),
            "it was linked to bind its symbols at load (BIND_NOW)"
        );
    }
}
