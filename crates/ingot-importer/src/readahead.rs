//! Work done ahead of the interpreter, on threads of their own: the first-use entries' checksums,
//! pages, native images and compressed bytecode (from the list `ingot build` writes), and the
//! check of a `files` package tree already in the extraction cache. Nothing here is needed for
//! correctness: every error is left for the read that needs the data to report.

use std::sync::Arc;

use ingot_format::layout::compression;
use ingot_format::names::{FIRST_USE, FIRST_USE_FILE, FIRST_USE_LIBRARY, FIRST_USE_MODULE};
use ingot_format::{Kind, Namespace, Role};

use crate::native;
use crate::view::ArchiveView;

/// Starts reading the archive's first-use entries ([`FIRST_USE`]) on a thread of its own: their
/// blobs are checked against their checksums and their pages mapped ahead of the interpreter,
/// which then finds them verified and resident (on a cold start, the file is read while the
/// interpreter works). Nothing happens without the list.
pub fn first_use(view: &Arc<ArchiveView>) {
    if !matches!(view.archive.find(Namespace::Files, FIRST_USE), Ok(Some(_))) {
        return;
    }
    native::resolve_mode();
    let view = Arc::clone(view);
    let _ = std::thread::Builder::new().name("ingot-read-ahead".into()).spawn(move || {
        crate::pages::fence_native_images(&view.archive);
        let Ok(Some(list)) = view.archive.find(Namespace::Files, FIRST_USE) else { return };
        let Ok(Some(list)) = list.data(Role::Content) else { return };
        for line in list.split(|&byte| byte == b'\n') {
            let (namespace, name) = match line {
                [tag, b' ', name @ ..] if *tag == FIRST_USE_MODULE => (Namespace::Modules, name),
                [tag, b' ', name @ ..] if *tag == FIRST_USE_FILE => (Namespace::Files, name),
                [tag, b' ', name @ ..] if *tag == FIRST_USE_LIBRARY => (Namespace::Libraries, name),
                _ => continue,
            };
            let Ok(name) = std::str::from_utf8(name) else { continue };
            let Ok(Some(entry)) = view.archive.find(namespace, name) else { continue };
            let native = entry.kind().is_some_and(Kind::is_native);
            for blob in entry.blobs().flatten() {
                // Compressed bytecode (`--compress-start`) is decompressed for its import, and
                // checked on the way.
                if blob.role() == view.bytecode_role && blob.compression() != compression::NONE {
                    view.prefetched.fill(&view.archive, &blob);
                    continue;
                }
                // A native image is checked as it is copied into its memory file, from the file
                // rather than the map; reading it here would only make its pages resident.
                let skip =
                    matches!(blob.role(), Role::Source | Role::Bytecode(1) | Role::Bytecode(2))
                        || (native && blob.role() == Role::Content);
                if !skip {
                    let _ = view.archive.verify_blob(&blob);
                }
            }
            // Native code: its memory file, made here rather than by the import.
            let label = match entry.kind() {
                // (A `files` package's extension modules are loaded from its tree instead, but
                // in a privileged start.)
                Some(kind)
                    if kind.is_extension()
                        && (!view.files.covers(name) || crate::cache::privileged()) =>
                {
                    format!("{name}{}", view.extension_suffix)
                }
                Some(Kind::SharedLibrary) if !native::already_in_process(name) => name.to_string(),
                _ => continue,
            };
            if let Ok(Some(blob)) = entry.blob(Role::Content) {
                native::prepare(&view.archive, &label, blob);
            }
        }
    });
}

/// Starts verifying the archive's `files` tree in the extraction cache on a thread of its own, so
/// that the first import of a `files` package finds it checked (or waits for the rest of the
/// check) instead of doing all of it then. Only an existing tree is verified: a missing or damaged
/// one is left to that import, which writes or repairs it as usual. The cache directory is
/// resolved here, on the caller's thread (the environment is not read from another thread).
pub fn files_tree(view: &Arc<ArchiveView>) {
    if view.files.is_empty() {
        return;
    }
    let root = crate::cache::root();
    let owner = Arc::clone(view);
    let spawned = std::thread::Builder::new()
        .name("ingot-verify".into())
        .spawn(move || owner.files.existing_tree(&owner.archive, &root));
    if let Ok(handle) = spawned {
        view.files.verifying(handle);
    }
}
