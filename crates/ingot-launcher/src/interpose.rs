//! `dlopen` of a library by its path inside the executable, answered from the archive.
//!
//! Code that loads a shared library by path (`ctypes.CDLL(os.path.join(os.path.dirname(__file__),
//! "lib", "lib_x.so"))`, cffi's `ffi.dlopen`, a C extension's own `dlopen`) names a file below the
//! executable, which the system cannot open (the executable is a file: ENOTDIR). The executable
//! exports its symbols (`--export-dynamic`), so its `dlopen` comes before the C library's for every
//! object the loader binds afterwards, versioned references included (a definition without a
//! version satisfies them, as an `LD_PRELOAD` library's does). It answers a path below the
//! executable that names a library of the archive from memory, as extension modules are loaded
//! ([`ingot_importer::library_by_path`]), and hands everything else to the C library's `dlopen`
//! unchanged. Only the launcher defines it: the `_ingot` module of a normal Python does not.
//!
//! In a privileged start (`AT_SECURE`: set-user-ID, set-group-ID, file capabilities) it also
//! answers paths in the extraction cache ([`ingot_importer::cache_path`]): with file
//! capabilities or set-group-ID the cache is the caller's, who may change a `files` package's
//! tree after its check. A file of a tree that the archive holds is loaded from the archive's
//! copy, in memory; anything else there is refused, with a message on stderr, and the loader is
//! given a path below the executable instead, which it cannot open (`ENOTDIR`), for `dlerror`.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use ingot_importer::ArchiveView;

/// The archive the finder reads, once it is installed.
pub(crate) static VIEW: OnceLock<Arc<ArchiveView>> = OnceLock::new();

/// The C library's `dlopen`: the next definition after the executable's.
static NEXT: OnceLock<Option<DlopenFn>> = OnceLock::new();

type DlopenFn = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;

/// Answers `dlopen` of paths below the executable from `view`'s archive from now on.
pub fn serve(view: Arc<ArchiveView>) {
    let _ = VIEW.set(view);
}

fn next_dlopen() -> Option<DlopenFn> {
    *NEXT.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name; the result, when not null, is
        // the C library's dlopen, whose signature this is.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, c"dlopen".as_ptr()) };
        (!found.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, DlopenFn>(found) })
    })
}

/// The executable's `dlopen` (see the module's documentation).
///
/// # Safety
/// As the C library's: `file` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void {
    let mut file = file;
    let mut held = None;
    if !file.is_null() {
        if let Some(view) = VIEW.get() {
            // SAFETY: non-null and NUL-terminated, as the caller guarantees.
            let path = unsafe { CStr::from_ptr(file) }.to_bytes();
            let loadable = if path.starts_with(view.prefix.as_bytes()) {
                std::str::from_utf8(path)
                    .ok()
                    .and_then(|path| ingot_importer::library_by_path(view, path))
            } else if ingot_importer::privileged() {
                in_privileged_start(view, path)
            } else {
                None
            };
            if let Some(loadable) = loadable.and_then(|loadable| CString::new(loadable).ok()) {
                file = loadable.as_ptr();
                held = Some(loadable);
            }
        }
    }
    let handle = match next_dlopen() {
        // SAFETY: the C library's dlopen, with the caller's arguments or a path of ours.
        Some(next) => unsafe { next(file, mode) },
        None => std::ptr::null_mut(),
    };
    drop(held);
    handle
}

/// What the loader is given for `path` in a privileged start instead of `path` itself, if
/// anything (see the module's documentation).
fn in_privileged_start(view: &ArchiveView, path: &[u8]) -> Option<String> {
    // The cache's root and trees are UTF-8 (see `cache::root`): a path that is not, with its
    // bytes replaced, still begins with the root when the path does, and names no file of a tree.
    let path = String::from_utf8_lossy(path);
    match ingot_importer::cache_path(view, &path) {
        ingot_importer::CachePath::Elsewhere => None,
        ingot_importer::CachePath::Memory(loadable) => Some(loadable),
        ingot_importer::CachePath::Refused { message, instead } => {
            eprintln!("{message}");
            Some(instead)
        }
    }
}
