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

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use ingot_importer::ArchiveView;

/// The archive the finder reads, once it is installed.
static VIEW: OnceLock<Arc<ArchiveView>> = OnceLock::new();

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
            if path.starts_with(view.prefix.as_bytes()) {
                let loadable = std::str::from_utf8(path)
                    .ok()
                    .and_then(|path| ingot_importer::library_by_path(view, path))
                    .and_then(|loadable| CString::new(loadable).ok());
                if let Some(loadable) = loadable {
                    file = loadable.as_ptr();
                    held = Some(loadable);
                }
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
