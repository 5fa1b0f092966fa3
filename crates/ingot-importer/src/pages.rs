//! Giving back the archive's pages once they have been used.

use ingot_format::{Archive, Blob};

/// Gives back the pages of `bytes` once they have been used, when they lie in `archive` (the
/// importer maps archives from their file, `Archive::open_path`, never from a buffer): reading
/// them faulted every page in, and they would stay resident, counted in the process's RSS
/// (numpy's native images: 32 MiB of peak RSS; the bytecode and compressed blobs a numpy app
/// reads: 20 MiB more), though never read again. The map is a
/// read-only file mapping, never written, so `MADV_DONTNEED` loses nothing: a later read faults
/// the page in again from the page cache. Only the pages wholly inside the image (neighbouring
/// blobs may be in use). Bytes outside the archive (a decompressed `Vec`) are left alone.
pub fn release(archive: &Archive, bytes: &[u8]) {
    let mapped = archive.bytes().as_ptr_range();
    if !(mapped.start <= bytes.as_ptr() && bytes.as_ptr_range().end <= mapped.end) {
        return;
    }
    static PAGE_SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: no preconditions.
    let page = *PAGE_SIZE.get_or_init(|| usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0));
    if !page.is_power_of_two() {
        return;
    }
    let start = (bytes.as_ptr() as usize).next_multiple_of(page);
    let end = (bytes.as_ptr() as usize + bytes.len()) & !(page - 1);
    if start < end {
        // SAFETY: whole pages inside `bytes`, which lie in a read-only file mapping that
        // outlives this call; other readers of them see the same bytes, faulted in again.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    }
}

/// [`release`] for the stored bytes of `blob` (compressed or not), once they have been used.
pub fn release_blob(archive: &Archive, blob: &Blob<'_>) {
    if let Ok(stored) = archive.stored_bytes(blob) {
        release(archive, stored);
    }
}
