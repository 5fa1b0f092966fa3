//! Giving back the archive's pages once they have been used.

use ingot_format::{Archive, Blob, Kind, Role};

/// Gives back the pages of `bytes` once they have been used, when they lie in `archive` (the
/// importer maps archives from their file, `Archive::open_path`, never from a buffer): reading
/// them faulted every page in, and they would stay resident, counted in the process's RSS
/// (numpy's native images: 32 MiB of peak RSS; the bytecode and compressed blobs a numpy app
/// reads: 20 MiB more), though never read again. The map is a
/// read-only file mapping, never written, so `MADV_DONTNEED` loses nothing: a later read faults
/// the page in again from the page cache. Only the pages wholly inside the image (neighbouring
/// blobs may be in use). Bytes outside the archive (a decompressed `Vec`) are left alone.
pub fn release(archive: &Archive, bytes: &[u8]) {
    advise(archive, bytes, libc::MADV_DONTNEED);
}

/// Calls `madvise(advice)` on the whole pages inside `bytes`, when they lie in `archive`'s map.
fn advise(archive: &Archive, bytes: &[u8], advice: libc::c_int) {
    let mapped = archive.bytes().as_ptr_range();
    if !(mapped.start <= bytes.as_ptr() && bytes.as_ptr_range().end <= mapped.end) {
        return;
    }
    static PAGE_SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: no preconditions.
    let page = *PAGE_SIZE
        .get_or_init(|| usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0));
    if !page.is_power_of_two() {
        return;
    }
    let start = (bytes.as_ptr() as usize).next_multiple_of(page);
    let end = (bytes.as_ptr() as usize + bytes.len()) & !(page - 1);
    if start < end {
        // SAFETY: whole pages inside `bytes`, which lie in a read-only file mapping that
        // outlives this call. `MADV_DONTNEED`: other readers of them see the same bytes, faulted
        // in again; `MADV_RANDOM` changes no byte.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) };
    }
}

/// Native images of at least this size are fenced off by [`fence_native_images`].
const FENCED_IMAGE: u64 = 64 << 10;

/// Keeps the pages of large native images out of the process's memory. They are read from the
/// archive's file, never through its map (`Archive::copy_blob`), but the kernel, when a
/// neighbouring page of the map faults in, maps every page of the same page-cache folio that lies
/// in the same mapping (folios of large files run to megabytes): the images' pages would then
/// count in the process's RSS without being read. Advice on a range of a mapping makes it a
/// mapping of its own, which a neighbour's fault does not reach; `MADV_RANDOM`, as the map is
/// never read there in order, is the one whose meaning fits.
pub fn fence_native_images(archive: &Archive) {
    for entry in archive.entries().flatten() {
        if !entry.kind().is_some_and(Kind::is_native) {
            continue;
        }
        let Ok(Some(blob)) = entry.blob(Role::Content) else { continue };
        if blob.stored_size() < FENCED_IMAGE {
            continue;
        }
        if let Some(range) = archive.stored_range(&blob) {
            advise(archive, &archive.bytes()[range], libc::MADV_RANDOM);
        }
    }
}

/// [`release`] for the stored bytes of `blob` (compressed or not), once they have been used.
pub fn release_blob(archive: &Archive, blob: &Blob<'_>) {
    // The range, not `stored_bytes`: that would check the checksum of a blob not read yet.
    if let Some(range) = archive.stored_range(blob) {
        release(archive, &archive.bytes()[range]);
    }
}
