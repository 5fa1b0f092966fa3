//! What native code's `open`, `fopen`, `stat` and `access` of a path below the executable are
//! answered with (the launcher interposes them: `ingot-launcher/src/interpose_files.rs`). Python
//! computes such paths from `__file__` (`os.path.join(os.path.dirname(cv2.__file__), "data",
//! ...)`) and hands them to C or C++ code, which the system would answer with `ENOTDIR` (the
//! executable is a file). A file of the archive is opened as a sealed, read-only memory file
//! holding its bytes, as Python's `open()` of such a path is ([`crate::native`]'s
//! `data_memory_file`); a directory of the archive (a package, or a prefix of its files) stats
//! as one.

use crate::view::ArchiveView;

/// What a path below the executable names in the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A file of `size` bytes (decompressed); `serial` tells files apart (`st_ino`).
    File {
        size: u64,
        serial: u64,
    },
    Directory,
    /// Nothing: `ENOENT`.
    Missing,
}

/// The archive-relative path of `path` when it is below the executable's path (`<exe>/...`,
/// normalized), and what the archive holds there; None for every other path (the system
/// answers those), after one prefix comparison.
pub fn look_up(view: &ArchiveView, path: &[u8]) -> Option<(String, Found)> {
    if !path.starts_with(view.prefix.as_bytes()) {
        return None;
    }
    let relative = view.relative(std::str::from_utf8(path).ok()?)?;
    let found = match view.file_raw(&relative) {
        Ok(Some((entry, role))) => match entry.blob(role) {
            Ok(Some(blob)) => Found::File { size: blob.size(), serial: serial(&relative) },
            _ => Found::Missing,
        },
        _ if view.is_dir(&relative).unwrap_or(false) => Found::Directory,
        _ => Found::Missing,
    };
    Some((relative, found))
}

/// A close-on-exec descriptor of a sealed memory file holding the bytes of the archive's file at
/// `relative` (see [`look_up`]), positioned at its start.
pub fn open_file(view: &ArchiveView, relative: &str) -> std::io::Result<i32> {
    let bytes = view
        .read(relative)
        .ok()
        .flatten()
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    let label = relative.rsplit('/').next().unwrap_or("ingot");
    crate::native::data_memory_file(label, &bytes)
}

/// A number for `st_ino` that differs between the archive's files (FNV-1a of the path), never 0.
fn serial(relative: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in relative.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}
