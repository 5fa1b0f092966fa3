//! Native code's `open`, `fopen`, `stat` and `access` of a path below the executable, answered
//! from the archive.
//!
//! Python computes paths from `__file__` (`cv2.data.haarcascades`, `kivy/data/...`) and hands
//! them to C or C++ code, which opens, stats or checks them with the C library. The system would
//! answer `ENOTDIR` (the executable is a file). As for `dlopen` (see [`crate::interpose`]), the
//! executable defines these entry points and exports them, so every object the loader binds
//! afterwards, and the interpreter linked into the executable, calls these first: a path below the
//! executable (one prefix comparison) that names a file of the archive is opened as a sealed,
//! read-only memory file holding its bytes; a directory of the archive stats as one (mode 555);
//! anything else there is `ENOENT`. A write gets the system's answer (`ENOTDIR`), as Python's
//! writes there do. Every other path goes to the C library's definition unchanged.
//!
//! Both names of each: glibc before 2.33 (the floor executables are built for is 2.17) has no
//! `stat`, `lstat` or `fstatat` symbols (its headers call `__xstat`, `__lxstat`, `__fxstatat`),
//! and large-file builds call the `64` names. Calls inside the C library (`fopen` opening its
//! file, `opendir`, `realpath`) do not pass through here: `fopen` is answered itself, while
//! `opendir`, `readdir`, `readlink`, `realpath` and `statx` of such paths still fail.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use ingot_importer::datapaths::{self, Found};
use ingot_importer::ArchiveView;

use crate::interpose::VIEW;

// `stat` and `stat64` are one layout on the 64-bit systems ingot builds for.
const _: () = assert!(size_of::<libc::stat>() == size_of::<libc::stat64>());

/// The C library's definition of `name` (the next after the executable's), looked up once.
fn next(cache: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let found = cache.load(Ordering::Relaxed);
    if !found.is_null() {
        return found;
    }
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    cache.store(found, Ordering::Relaxed);
    found
}

/// The C name of the entry point `$name` defined by one of the macros below.
macro_rules! named {
    ($name:ident) => {
        CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()).unwrap()
    };
}

/// Calls the C library's `$name` (of type `$ty`) with `$args`, or fails with ENOSYS (-1).
macro_rules! call_next {
    ($name:expr, $ty:ty, $($arg:expr),*) => {{
        static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
        let found = next(&CACHE, $name);
        if found.is_null() {
            fail(libc::ENOSYS)
        } else {
            // SAFETY: the C library's definition of this name, whose signature `$ty` is.
            let function = unsafe { std::mem::transmute::<*mut c_void, $ty>(found) };
            // SAFETY: the caller's arguments, passed on as the C library takes them.
            unsafe { function($($arg),*) }
        }
    }};
}

/// -1 with `errno` set to `error`.
fn fail(error: c_int) -> c_int {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = error };
    -1
}

/// The archive's answer for `path`: None when it is not below the executable (or no archive
/// is served yet).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn answer(path: *const c_char) -> Option<(&'static ArchiveView, String, Found)> {
    let view = VIEW.get()?;
    if path.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, as the caller guarantees.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    let (relative, found) = datapaths::look_up(view, bytes)?;
    Some((view, relative, found))
}

/// `open(path, flags)` answered from the archive: a descriptor, or -1 with errno; None when the
/// system answers.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn open_answer(path: *const c_char, flags: c_int) -> Option<c_int> {
    // SAFETY: as this function's.
    let (view, relative, found) = unsafe { answer(path) }?;
    if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & (libc::O_CREAT | libc::O_TRUNC) != 0 {
        // Refused as the system refuses it (ENOTDIR: the executable is a file), as Python's are.
        return None;
    }
    match found {
        Found::Missing => Some(fail(libc::ENOENT)),
        // A directory has no descriptor to give: the system's answer (ENOTDIR).
        Found::Directory => None,
        Found::File { .. } if flags & libc::O_DIRECTORY != 0 => Some(fail(libc::ENOTDIR)),
        Found::File { .. } => match datapaths::open_file(view, &relative) {
            Ok(fd) => {
                if flags & libc::O_CLOEXEC == 0 {
                    // SAFETY: fcntl on the descriptor just made.
                    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
                }
                Some(fd)
            }
            Err(error) => Some(fail(error.raw_os_error().unwrap_or(libc::EIO))),
        },
    }
}

/// The executable's own status: what a file of its archive shows besides its type and size.
fn executable_status(view: &ArchiveView) -> Option<&'static std::fs::Metadata> {
    static STATUS: OnceLock<Option<std::fs::Metadata>> = OnceLock::new();
    STATUS.get_or_init(|| std::fs::metadata(&view.path).ok()).as_ref()
}

/// `stat(path, status)` answered from the archive (0, or -1 with errno); None when the system
/// answers.
///
/// # Safety
/// `path` is null or a NUL-terminated string; `status` points to a `struct stat`.
unsafe fn stat_answer(path: *const c_char, status: *mut libc::stat64) -> Option<c_int> {
    // SAFETY: as this function's.
    let (view, _relative, found) = unsafe { answer(path) }?;
    let (mode, size, serial, links) = match found {
        Found::Missing => return Some(fail(libc::ENOENT)),
        Found::File { size, serial } => (libc::S_IFREG | 0o444, size, serial, 1),
        Found::Directory => (libc::S_IFDIR | 0o555, 4096, 1, 2),
    };
    // SAFETY: all-zero is a valid `struct stat`.
    let mut filled: libc::stat64 = unsafe { std::mem::zeroed() };
    if let Some(exe) = executable_status(view) {
        filled.st_dev = exe.dev();
        filled.st_uid = exe.uid();
        filled.st_gid = exe.gid();
        filled.st_atime = exe.atime();
        filled.st_atime_nsec = exe.atime_nsec();
        filled.st_mtime = exe.mtime();
        filled.st_mtime_nsec = exe.mtime_nsec();
        filled.st_ctime = exe.ctime();
        filled.st_ctime_nsec = exe.ctime_nsec();
    }
    filled.st_mode = mode;
    filled.st_size = size as i64;
    filled.st_blocks = size.div_ceil(512) as i64;
    filled.st_blksize = 4096;
    filled.st_ino = serial;
    filled.st_nlink = links;
    // SAFETY: the caller's buffer, a `struct stat`.
    unsafe { status.write(filled) };
    Some(0)
}

/// `access(path, mode)` answered from the archive; None when the system answers.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn access_answer(path: *const c_char, mode: c_int) -> Option<c_int> {
    // SAFETY: as this function's.
    let (_view, _relative, found) = unsafe { answer(path) }?;
    if mode & libc::W_OK != 0 {
        return None; // the system's answer, as for writes (ENOTDIR)
    }
    Some(match found {
        Found::Missing => fail(libc::ENOENT),
        Found::File { .. } if mode & libc::X_OK != 0 => fail(libc::EACCES),
        _ => 0,
    })
}

/// `path` for a call relative to `dirfd`: the archive answers absolute paths only.
fn absolute(path: *const c_char) -> *const c_char {
    // SAFETY: a null check and one byte of a NUL-terminated string.
    if !path.is_null() && unsafe { *path } == b'/' as c_char {
        path
    } else {
        std::ptr::null()
    }
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, libc::mode_t) -> c_int;
type OpenAtFn = unsafe extern "C" fn(c_int, *const c_char, c_int, libc::mode_t) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type OpenAt2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut libc::FILE;
type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat64) -> c_int;
type XstatFn = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat64) -> c_int;
type StatAtFn = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat64, c_int) -> c_int;
type XstatAtFn =
    unsafe extern "C" fn(c_int, c_int, *const c_char, *mut libc::stat64, c_int) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type AccessAtFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;

/// Defines `open`-like entry points: `$name(path, flags, mode)` (the mode is read whether or not
/// the caller passed it, as the C library's variadic definition does, and passed on).
macro_rules! open_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
            // SAFETY: the caller's path, as the C library takes it.
            if let Some(answered) = unsafe { open_answer(path, flags) } {
                return answered;
            }
            call_next!(
                named!($name),
                OpenFn, path, flags, mode
            )
        }
    )*};
}
open_like!(open, open64);

/// Defines `openat`-like entry points.
macro_rules! openat_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: c_int, path: *const c_char, flags: c_int, mode: libc::mode_t,
        ) -> c_int {
            // SAFETY: the caller's path, as the C library takes it.
            if let Some(answered) = unsafe { open_answer(absolute(path), flags) } {
                return answered;
            }
            call_next!(
                named!($name),
                OpenAtFn, dirfd, path, flags, mode
            )
        }
    )*};
}
openat_like!(openat, openat64);

/// Defines the fortified `__open_2`-like entry points (`open` without a mode).
macro_rules! open2_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int) -> c_int {
            // SAFETY: the caller's path, as the C library takes it.
            if let Some(answered) = unsafe { open_answer(path, flags) } {
                return answered;
            }
            call_next!(
                named!($name),
                Open2Fn, path, flags
            )
        }
    )*};
}
open2_like!(__open_2, __open64_2);

/// Defines the fortified `__openat_2`-like entry points.
macro_rules! openat2_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
            // SAFETY: the caller's path, as the C library takes it.
            if let Some(answered) = unsafe { open_answer(absolute(path), flags) } {
                return answered;
            }
            call_next!(
                named!($name),
                OpenAt2Fn, dirfd, path, flags
            )
        }
    )*};
}
openat2_like!(__openat_2, __openat64_2);

/// `fopen(path, mode)` answered from the archive; None when the system answers.
///
/// # Safety
/// `path` and `mode` are null or NUL-terminated strings.
unsafe fn fopen_answer(path: *const c_char, mode: *const c_char) -> Option<*mut libc::FILE> {
    if mode.is_null() || VIEW.get().is_none() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, as the caller guarantees.
    let mode = unsafe { CStr::from_ptr(mode) }.to_bytes();
    let writes = !mode.starts_with(b"r") || mode.contains(&b'+');
    let flags = if writes { libc::O_WRONLY } else { libc::O_RDONLY };
    let cloexec = if mode.contains(&b'e') { libc::O_CLOEXEC } else { 0 };
    // SAFETY: as this function's.
    let fd = unsafe { open_answer(path, flags | cloexec) }?;
    if fd < 0 {
        return Some(std::ptr::null_mut());
    }
    // SAFETY: a descriptor of ours, handed to a new stream that owns it.
    let stream = unsafe { libc::fdopen(fd, c"r".as_ptr()) };
    if stream.is_null() {
        // SAFETY: the descriptor just made, which no stream owns.
        unsafe { libc::close(fd) };
    }
    Some(stream)
}

/// Defines `fopen`-like entry points.
macro_rules! fopen_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
            // SAFETY: the caller's arguments, as the C library takes them.
            if let Some(answered) = unsafe { fopen_answer(path, mode) } {
                return answered;
            }
            static CACHE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let found = next(&CACHE, named!($name));
            if found.is_null() {
                fail(libc::ENOSYS);
                return std::ptr::null_mut();
            }
            // SAFETY: the C library's fopen, whose signature this is.
            let function = unsafe { std::mem::transmute::<*mut c_void, FopenFn>(found) };
            // SAFETY: the caller's arguments.
            unsafe { function(path, mode) }
        }
    )*};
}
fopen_like!(fopen, fopen64);

/// Defines `stat`-like entry points (`stat`, `lstat`: the archive holds no links).
macro_rules! stat_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, status: *mut libc::stat64) -> c_int {
            // SAFETY: the caller's arguments, as the C library takes them.
            if let Some(answered) = unsafe { stat_answer(path, status) } {
                return answered;
            }
            call_next!(
                named!($name),
                StatFn, path, status
            )
        }
    )*};
}
stat_like!(stat, stat64, lstat, lstat64);

/// Defines glibc's `__xstat`-like entry points (before 2.33, what `stat` calls).
macro_rules! xstat_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            version: c_int, path: *const c_char, status: *mut libc::stat64,
        ) -> c_int {
            // SAFETY: the caller's arguments, as the C library takes them.
            if let Some(answered) = unsafe { stat_answer(path, status) } {
                return answered;
            }
            call_next!(
                named!($name),
                XstatFn, version, path, status
            )
        }
    )*};
}
xstat_like!(__xstat, __xstat64, __lxstat, __lxstat64);

/// Defines `fstatat`-like entry points.
macro_rules! statat_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: c_int, path: *const c_char, status: *mut libc::stat64, flags: c_int,
        ) -> c_int {
            // SAFETY: the caller's arguments, as the C library takes them.
            if let Some(answered) = unsafe { stat_answer(absolute(path), status) } {
                return answered;
            }
            call_next!(
                named!($name),
                StatAtFn, dirfd, path, status, flags
            )
        }
    )*};
}
statat_like!(fstatat, fstatat64);

/// Defines glibc's `__fxstatat`-like entry points.
macro_rules! xstatat_like {
    ($($name:ident),*) => {$(
        /// The executable's definition (see the module's documentation).
        ///
        /// # Safety
        /// As the C library's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            version: c_int, dirfd: c_int, path: *const c_char, status: *mut libc::stat64,
            flags: c_int,
        ) -> c_int {
            // SAFETY: the caller's arguments, as the C library takes them.
            if let Some(answered) = unsafe { stat_answer(absolute(path), status) } {
                return answered;
            }
            call_next!(
                named!($name),
                XstatAtFn, version, dirfd, path, status, flags
            )
        }
    )*};
}
xstatat_like!(__fxstatat, __fxstatat64);

/// The executable's `access` (see the module's documentation).
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: the caller's arguments, as the C library takes them.
    if let Some(answered) = unsafe { access_answer(path, mode) } {
        return answered;
    }
    call_next!(c"access", AccessFn, path, mode)
}

/// The executable's `faccessat` (see the module's documentation).
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's arguments, as the C library takes them.
    if let Some(answered) = unsafe { access_answer(absolute(path), mode) } {
        return answered;
    }
    call_next!(c"faccessat", AccessAtFn, dirfd, path, mode, flags)
}
