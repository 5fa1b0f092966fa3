//! The extraction cache: directories of real files materialized from an archive, for the packages
//! that need them (the `files` policy) and for native code where memory files cannot be used.
//!
//! Layout: `<root>/<section>/<id>/...`, where `<root>` is `$INGOT_CACHE_DIR`, else the first
//! usable of `$XDG_CACHE_HOME/ingot`, `$HOME/.cache/ingot`, `$XDG_RUNTIME_DIR/ingot`,
//! `/tmp/ingot-<uid>` (see [`root`]); `<section>` is `trees` (packages) or
//! `native` (extension modules and shared libraries); `<id>` is derived from the content, so a tree
//! is never updated in place: different content is a different directory.
//!
//! Rules that make the cache safe to share between processes and to survive crashes:
//! - A tree is written into a temporary directory (`<section>/.tmp-<id>-<pid>-<nanos>`) and renamed
//!   into place whole. Readers only ever look at `<section>/<id>`, so a half-written tree is never
//!   seen; temporary directories left by killed processes are removed by a later writer.
//! - Concurrent first starts each write their own temporary tree; the first rename wins, the others
//!   find the directory taken (`ENOTEMPTY`), drop their copy and use the winner's.
//! - Every tree is verified before use (each file: regular, the expected size, the expected XXH3);
//!   a tree that fails (tampered, partial after a power loss) is rebuilt and swapped in atomically
//!   (`renameat2(RENAME_EXCHANGE)`), never trusted.
//! - Directories are created `0700` and files `0600` (`0700` for ELF objects and `#!` scripts); an
//!   existing cache root owned by another user, or writable by group or others, is refused.
//!
//! Writes go in parallel over a few threads, each reusing its buffers, with file descriptors closed
//! by a separate thread so that slow closes stay off the writers' path. `INGOT_WRITE_STRATEGY`
//! selects `stream` (`write(2)`, the default) or `mmap` (size the file, copy into a shared map);
//! see docs/benchmarks.md for the measurement behind the default.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ffi::{CString, OsStr};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use xxhash_rust::xxh3::xxh3_64;

/// The environment variable that names the cache root, overriding the XDG default.
pub const CACHE_DIR_VAR: &str = "INGOT_CACHE_DIR";
/// The environment variable that selects the write strategy (`stream` or `mmap`).
pub const WRITE_STRATEGY_VAR: &str = "INGOT_WRITE_STRATEGY";

/// Files a writer thread hands to the closing thread at a time.
const CLOSE_BATCH: usize = 64;

/// What the name of a temporary tree starts with (`<section>/.tmp-<id>-<pid>-<nanos>`).
pub const TEMPORARY_PREFIX: &str = ".tmp-";

/// Temporary trees older than this are taken for leftovers of killed processes.
pub const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Temporary trees whose writing process is gone are removed once this old (a writer in another
/// PID namespace is not seen).
pub const WRITER_GONE_AFTER: Duration = Duration::from_secs(10);

/// Why the extraction cache cannot give a tree. Shown through [`ingot_format::chain`] (a cause
/// follows its error after `: `).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{var}={value:?} is not a write strategy (expected `stream` or `mmap`)", var = WRITE_STRATEGY_VAR)]
    BadStrategy { value: String },
    #[error("cannot create cache directory `{path}`")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot use cache directory `{path}`")]
    UseDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cache directory `{path}` is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("cache directory `{path}` belongs to user {owner}, not to this user ({uid}); set {var} to a directory of yours", var = CACHE_DIR_VAR)]
    NotOurs { path: PathBuf, owner: u32, uid: u32 },
    #[error("cache directory `{path}` is writable by other users (mode {mode:o}); make it private (chmod 700) or set {var}", var = CACHE_DIR_VAR)]
    NotPrivate {
        path: PathBuf,
        /// The permission bits (`mode & 0o777`).
        mode: u32,
    },
    #[error("cache directory `{path}` could be replaced by another user: `{ancestor}` {reason}; set {var} to a directory that only you (and root) can write, and whose parents too", var = CACHE_DIR_VAR)]
    UnsafeAncestor { path: PathBuf, ancestor: PathBuf, reason: String },
    #[error("unsafe path `{path}` in a cache tree manifest")]
    UnsafePath { path: String },
    #[error("path `{path}` contains NUL")]
    NulInPath { path: PathBuf },
    #[error("cache path `{path}` is not valid UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("cannot move cache tree into place at `{path}`")]
    MoveIntoPlace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot replace damaged cache tree `{path}`")]
    ReplaceDamaged {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cache tree `{path}` keeps changing under this process; is another program writing there?"
    )]
    KeepsChanging { path: PathBuf },
    #[error("cannot create cache file `{path}`")]
    CreateFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write cache file `{path}`")]
    WriteFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The bytes given for a file are not as long as the manifest says.
    #[error("{path}: the archive's bytes do not match the tree manifest")]
    SizeMismatch { path: String, expected: u64, found: u64 },
    /// No bytes were given for a file of the manifest.
    #[error("no bytes for `{path}`")]
    NoBytes { path: String },
    /// The caller's source of file contents failed.
    #[error(transparent)]
    Content(Box<dyn std::error::Error + Send + Sync>),
    #[error("a cache writer panicked")]
    WriterPanicked,
    /// The file opened after the tree's check is not the one checked (a swap, or a link put in
    /// its place).
    #[error("cache file `{path}` changed after it was checked; is another program writing there?")]
    ChangedAfterCheck { path: PathBuf },
}

/// One file of a tree: its path relative to the tree, its size and the XXH3-64 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub path: String,
    pub size: u64,
    pub hash: u64,
}

/// How files are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Stream,
    Mmap,
}

impl Strategy {
    /// `$INGOT_WRITE_STRATEGY`, `stream` when unset.
    pub fn from_env() -> Result<Strategy, CacheError> {
        match variable(WRITE_STRATEGY_VAR).map(|value| value.to_string_lossy().into_owned()) {
            None => Ok(Strategy::Stream),
            Some(value) => match value.as_str() {
                "" | "stream" => Ok(Strategy::Stream),
                "mmap" => Ok(Strategy::Mmap),
                other => Err(CacheError::BadStrategy { value: other.to_string() }),
            },
        }
    }
}

/// Whether this process started privileged: set-user-ID, set-group-ID or file capabilities
/// (`AT_SECURE`), or real and effective ids that differ. Its environment is the caller's, who
/// may be another user: [`variable`] reads none of it.
///
/// Worked out at the first call (the launcher's, before Python runs) and kept: a start asks it
/// for every native module, and a process that drops its ids later stays privileged here.
pub fn privileged() -> bool {
    static PRIVILEGED: OnceLock<bool> = OnceLock::new();
    // SAFETY: getauxval reads the auxiliary vector; the id getters cannot fail.
    *PRIVILEGED.get_or_init(|| unsafe {
        libc::getauxval(libc::AT_SECURE) != 0
            || libc::getuid() != libc::geteuid()
            || libc::getgid() != libc::getegid()
    })
}

/// The environment variable `name`, as glibc's `secure_getenv` reads it: never in a
/// [`privileged`] process (where `INGOT_CACHE_DIR`, `INGOT_NATIVE`, `HOME`, ... are the caller's
/// to choose, and would make the owner write where the caller says).
pub fn variable(name: &str) -> Option<std::ffi::OsString> {
    if privileged() {
        return None;
    }
    std::env::var_os(name)
}

/// The cache root: `$INGOT_CACHE_DIR` if set (to an absolute path: an empty or relative value is
/// ignored, as the XDG specification says of its variables); else the first usable of
/// `$XDG_CACHE_HOME/ingot`, `$HOME/.cache/ingot`, `$XDG_RUNTIME_DIR/ingot` and
/// `/tmp/ingot-<uid>` (a read-only home falls back to the others). Usable: a private directory of
/// this user that it can write, or one it can create, with no other user able to replace it. With
/// none usable, the last place tried, `/tmp/ingot-<uid>` (whose use then fails with a message that
/// names it and why: another user's directory squatting the name, say).
pub fn root() -> PathBuf {
    let absolute = |name: &str| variable(name).map(PathBuf::from).filter(|path| path.is_absolute());
    if let Some(path) = absolute(CACHE_DIR_VAR) {
        return path;
    }
    // SAFETY: no preconditions.
    let uid = unsafe { libc::geteuid() };
    let candidates: Vec<PathBuf> = [
        absolute("XDG_CACHE_HOME").map(|path| path.join("ingot")),
        absolute("HOME").map(|path| path.join(".cache").join("ingot")),
        absolute("XDG_RUNTIME_DIR").map(|path| path.join("ingot")),
        Some(PathBuf::from(format!("/tmp/ingot-{uid}"))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let last = candidates.last().expect("the /tmp candidate is always there");
    candidates.iter().find(|path| usable(path, uid)).unwrap_or(last).clone()
}

/// Checks that no other user can replace `path` or what it holds: every directory above it,
/// symbolic links resolved, is owned by root or `uid` and not writable by
/// group or others unless sticky (`/tmp`), as OpenSSH's StrictModes asks of `~/.ssh`. Without
/// it, a user who can write a parent could rename the cache away after its check and put
/// another tree, with its own extension modules, where this process loads them.
pub fn safe_ancestors(path: &Path, uid: u32) -> Result<(), CacheError> {
    let Some(existing) = path.ancestors().find(|ancestor| ancestor.exists()) else {
        return Ok(());
    };
    let resolved = fs::canonicalize(existing)
        .map_err(|source| CacheError::UseDir { path: existing.to_path_buf(), source })?;
    // `path` itself, when it exists, is checked by `make_dirs_checked` (and `usable`).
    let skip = usize::from(existing == path);
    for ancestor in resolved.ancestors().skip(skip) {
        let metadata = fs::symlink_metadata(ancestor)
            .map_err(|source| CacheError::UseDir { path: ancestor.to_path_buf(), source })?;
        let Some(reason) = ancestor_problem(&metadata, uid) else {
            continue;
        };
        return Err(CacheError::UnsafeAncestor {
            path: path.to_path_buf(),
            ancestor: ancestor.to_path_buf(),
            reason,
        });
    }
    Ok(())
}

/// Makes `path` a directory of user `uid` that no other user can write or replace, creating it
/// (`mode`, `0700` for the cache root) and its missing parents (`0755` at most) one component at a
/// time, each relative to a held descriptor of its parent that was checked first (`mkdirat`, then
/// `openat` with `O_NOFOLLOW|O_DIRECTORY`, then `fstat` before descending). A directory that
/// another user makes at a missing component's name in between, say in `/tmp`, is seen as theirs
/// and refused; the check is never of a path that was still missing. Every directory above `path`
/// must be owned by root or `uid` and not writable by group or others unless sticky (as
/// [`safe_ancestors`] asks); `path` itself must be `uid`'s and writable by no one else.
///
/// The walk starts at the deepest directory that exists, its links resolved: the directories above
/// it are checked by path, which is enough since none of them can be replaced by another user once
/// it passes (its owner is root or `uid`, and a sticky one keeps its entries to their owners), and
/// it is then opened and checked through its descriptor. Starting there rather than at `/` also
/// keeps qemu-user's path prefix (`-L`, `QEMU_LD_PREFIX`, which runs an emulated process with
/// absolute paths that exist under the prefix redirected there) from moving the walk into the
/// prefix: `/` always exists there, a cache's deepest existing directory seldom does.
pub fn make_dirs_checked(path: &Path, uid: u32, mode: u32) -> Result<(), CacheError> {
    use std::path::Component;

    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|source| CacheError::UseDir { path: path.to_path_buf(), source })?
            .join(path)
    };
    if fs::symlink_metadata(&absolute).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(CacheError::NotADirectory { path: path.to_path_buf() });
    }
    for _round in 0..8 {
        // The part that exists, its links resolved (a home under a linked /home), and the names
        // missing below it, made without following any link.
        let (existing, missing) = resolve_existing(&absolute)?;
        let mut steps: Vec<&OsStr> = Vec::new();
        for component in missing.components() {
            match component {
                Component::Normal(name) => steps.push(name),
                _ => return Err(CacheError::UnsafePath { path: absolute.display().to_string() }),
            }
        }
        for ancestor in existing.ancestors().skip(1) {
            let metadata = fs::symlink_metadata(ancestor)
                .map_err(|source| CacheError::UseDir { path: ancestor.to_path_buf(), source })?;
            if let Some(reason) = ancestor_problem(&metadata, uid) {
                return Err(CacheError::UnsafeAncestor {
                    path: path.to_path_buf(),
                    ancestor: ancestor.to_path_buf(),
                    reason,
                });
            }
        }
        let held = match open_directory(&existing) {
            Ok(held) => held,
            // (removed since it was resolved: a new round)
            Err(source) if source.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(source) if matches!(source.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Err(if steps.is_empty() {
                    CacheError::NotADirectory { path: path.to_path_buf() }
                } else {
                    CacheError::UnsafeAncestor {
                        path: path.to_path_buf(),
                        ancestor: existing.clone(),
                        reason: "is not a directory, or was replaced by a link".to_string(),
                    }
                });
            }
            Err(source) => return Err(CacheError::UseDir { path: existing.clone(), source }),
        };
        return walk_down(held, existing, steps, path, uid, mode);
    }
    let source = std::io::Error::from_raw_os_error(libc::ENOENT);
    Err(CacheError::UseDir { path: path.to_path_buf(), source })
}

/// The descriptor-relative part of [`make_dirs_checked`]: checks `held` (the directory at
/// `walked`), then opens or makes each of `steps` below it, checking each before descending.
fn walk_down(
    mut held: std::os::fd::OwnedFd,
    mut walked: PathBuf,
    steps: Vec<&OsStr>,
    path: &Path,
    uid: u32,
    mode: u32,
) -> Result<(), CacheError> {
    check_directory(&held, &walked, path, uid, steps.is_empty())?;
    let count = steps.len();
    for (index, name) in steps.into_iter().enumerate() {
        walked.push(name);
        let last = index + 1 == count;
        held = open_or_make(&held, name, &walked, if last { mode } else { 0o755 }).map_err(
            |error| match error {
                CacheError::NotADirectory { .. } if !last => CacheError::UnsafeAncestor {
                    path: path.to_path_buf(),
                    ancestor: walked.clone(),
                    reason: "is not a directory, or was replaced by a link".to_string(),
                },
                CacheError::NotADirectory { .. } => {
                    CacheError::NotADirectory { path: path.to_path_buf() }
                }
                other => other,
            },
        )?;
        check_directory(&held, &walked, path, uid, last)?;
    }
    Ok(())
}

/// `path` (absolute, its links resolved) opened as a directory descriptor, without following a
/// link at its last component.
fn open_directory(path: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{FromRawFd, OwnedFd};

    let text = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(text.as_ptr(), DIRECTORY_FLAGS) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `open(2)` flags for a directory walked by [`make_dirs_checked`]: a path descriptor (which
/// `fstat`, `openat` and `mkdirat` take), so that a directory this user may not list (another
/// user's, refused with its owner named) is still looked at.
const DIRECTORY_FLAGS: libc::c_int =
    libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// `absolute`'s nearest existing ancestor (or itself), canonicalized, and the part of `absolute`
/// missing below it. Another process removing that ancestor meanwhile is a new round.
fn resolve_existing(absolute: &Path) -> Result<(PathBuf, PathBuf), CacheError> {
    let mut last_error = None;
    for _round in 0..8 {
        let existing =
            absolute.ancestors().find(|ancestor| ancestor.exists()).unwrap_or(Path::new("/"));
        match fs::canonicalize(existing) {
            Ok(resolved) => {
                let missing = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
                return Ok((resolved, missing.to_path_buf()));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => last_error = Some(error),
            Err(source) => return Err(CacheError::UseDir { path: existing.to_path_buf(), source }),
        }
    }
    let source = last_error.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT));
    Err(CacheError::UseDir { path: absolute.to_path_buf(), source })
}

/// The directory `name` of the open directory `parent`, opened without following a link; made
/// first (`mode`) when it is missing. `walked` is its path, for messages.
fn open_or_make(
    parent: &std::os::fd::OwnedFd,
    name: &OsStr,
    walked: &Path,
    mode: u32,
) -> Result<std::os::fd::OwnedFd, CacheError> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    let text = CString::new(name.as_encoded_bytes())
        .map_err(|_| CacheError::NulInPath { path: walked.to_path_buf() })?;
    for _round in 0..8 {
        // SAFETY: `parent` is an open directory and `text` a NUL-terminated name.
        let fd = unsafe { libc::openat(parent.as_raw_fd(), text.as_ptr(), DIRECTORY_FLAGS) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned here.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let source = std::io::Error::last_os_error();
        match source.raw_os_error() {
            Some(libc::ENOENT) => {}
            Some(libc::ELOOP | libc::ENOTDIR) => {
                return Err(CacheError::NotADirectory { path: walked.to_path_buf() })
            }
            _ => return Err(CacheError::UseDir { path: walked.to_path_buf(), source }),
        }
        // SAFETY: as above.
        if unsafe { libc::mkdirat(parent.as_raw_fd(), text.as_ptr(), mode as libc::mode_t) } != 0 {
            let source = std::io::Error::last_os_error();
            if source.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(CacheError::CreateDir { path: walked.to_path_buf(), source });
            }
        }
        // (made, or made by someone else meanwhile: opened and checked next round)
    }
    Err(CacheError::KeepsChanging { path: walked.to_path_buf() })
}

/// The checks of [`make_dirs_checked`] on one directory, through its descriptor: `target` (the
/// directory asked for) must be `uid`'s and private; an ancestor, root's or `uid`'s and not
/// writable by others unless sticky.
fn check_directory(
    directory: &std::os::fd::OwnedFd,
    walked: &Path,
    path: &Path,
    uid: u32,
    target: bool,
) -> Result<(), CacheError> {
    let metadata = File::from(
        directory
            .try_clone()
            .map_err(|source| CacheError::UseDir { path: walked.to_path_buf(), source })?,
    )
    .metadata()
    .map_err(|source| CacheError::UseDir { path: walked.to_path_buf(), source })?;
    if target {
        if metadata.uid() != uid {
            return Err(CacheError::NotOurs {
                path: path.to_path_buf(),
                owner: metadata.uid(),
                uid,
            });
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(CacheError::NotPrivate {
                path: path.to_path_buf(),
                mode: metadata.mode() & 0o777,
            });
        }
        return Ok(());
    }
    let Some(reason) = ancestor_problem(&metadata, uid) else {
        return Ok(());
    };
    Err(CacheError::UnsafeAncestor {
        path: path.to_path_buf(),
        ancestor: walked.to_path_buf(),
        reason,
    })
}

/// Why a directory above a cache root would let another user than `uid` replace what it holds:
/// it is not root's or `uid`'s, or it is writable by group or others and not sticky (`/tmp`).
fn ancestor_problem(metadata: &fs::Metadata, uid: u32) -> Option<String> {
    let sticky = metadata.mode() & 0o1000 != 0;
    if metadata.uid() != 0 && metadata.uid() != uid {
        Some(format!("belongs to user {}", metadata.uid()))
    } else if metadata.mode() & 0o022 != 0 && !sticky {
        Some(format!("is writable by other users (mode {:o})", metadata.mode() & 0o777))
    } else {
        None
    }
}

/// Whether `path` is, or could be created as, a private cache directory of user `uid`.
fn usable(path: &Path, uid: u32) -> bool {
    if safe_ancestors(path, uid).is_err() {
        return false;
    }
    let writable = |path: &Path| {
        let Ok(text) = CString::new(path.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: `text` is a NUL-terminated path.
        unsafe { libc::access(text.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
    };
    match fs::symlink_metadata(path) {
        Ok(metadata) => {
            metadata.is_dir()
                && metadata.uid() == uid
                && metadata.mode() & 0o022 == 0
                && writable(path)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            // The nearest existing ancestor must let this user create what is missing.
            path.ancestors()
                .skip(1)
                .find(|ancestor| ancestor.exists())
                .is_some_and(|ancestor| ancestor.is_dir() && writable(ancestor))
        }
        Err(_) => false,
    }
}

/// `path`, a file of a checked tree, opened without following a link and checked again through
/// the descriptor: a regular file of this user holding exactly `expected`. What is then used
/// through the descriptor (`/proc/self/fd/N`) is what was checked, whatever is renamed or linked
/// into the path afterwards.
pub fn open_checked(path: &Path, expected: &[u8]) -> Result<File, CacheError> {
    let changed = || CacheError::ChangedAfterCheck { path: path.to_path_buf() };
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => changed(),
            _ => CacheError::UseDir { path: path.to_path_buf(), source },
        })?;
    let metadata = file
        .metadata()
        .map_err(|source| CacheError::UseDir { path: path.to_path_buf(), source })?;
    // SAFETY: no preconditions.
    let uid = unsafe { libc::geteuid() };
    if !metadata.is_file() || metadata.uid() != uid || metadata.len() != expected.len() as u64 {
        return Err(changed());
    }
    let mut held = Vec::with_capacity(expected.len());
    file.read_to_end(&mut held)
        .map_err(|source| CacheError::UseDir { path: path.to_path_buf(), source })?;
    if held != expected {
        return Err(changed());
    }
    Ok(file)
}

/// Checks a tree-relative path from an archive: relative, no `.`/`..`/empty components, no NUL.
fn check_relative(path: &str) -> Result<(), CacheError> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\0')
        || path.split('/').any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(CacheError::UnsafePath { path: path.to_string() });
    }
    Ok(())
}

/// Why a tree on disk cannot be used (not reported: such a tree is written again).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// There is nothing at the tree's path.
    #[error("there is no tree")]
    Missing,
    /// Something is there but it is not the expected tree.
    #[error("cannot examine the tree")]
    Unreadable(#[source] std::io::Error),
    #[error("not a private directory of ours")]
    NotPrivate,
    #[error("{path}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: expected a file of {size} bytes")]
    WrongSize { path: String, size: u64 },
    #[error("{path}: content differs from the archive")]
    Differs { path: String },
    #[error("verifier panicked")]
    Panicked,
}

/// Returns `<root>/<section>/<id>`, a directory holding exactly the bytes `content` gives for each
/// of `files`, writing it first if it is missing and rewriting it if it does not verify.
pub fn ensure_tree<'a, F, E>(
    root: &Path,
    section: &str,
    id: &str,
    files: &[TreeFile],
    content: F,
) -> Result<PathBuf, CacheError>
where
    F: Fn(&TreeFile) -> Result<Cow<'a, [u8]>, E> + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    for file in files {
        check_relative(&file.path)?;
    }
    check_relative(id)?;
    let strategy = Strategy::from_env()?;
    // SAFETY: no preconditions.
    let uid = unsafe { libc::geteuid() };
    make_dirs_checked(root, uid, 0o700)?;
    let parent = root.join(section);
    make_dirs_checked(&parent, uid, 0o700)?;
    let tree = parent.join(id);
    // Three rounds at most: a lost race is followed by a verification of the winner's tree.
    for _ in 0..3 {
        match verify(&tree, files) {
            Ok(()) => return Ok(tree),
            Err(Unusable::Missing) => {
                let temporary = write_temporary(&parent, id, files, &content, strategy)?;
                match fs::rename(&temporary, &tree) {
                    Ok(()) => return Ok(tree),
                    Err(error)
                        if matches!(error.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) =>
                    {
                        // Another process got there first: use its tree (verified next round).
                        let _ = fs::remove_dir_all(&temporary);
                    }
                    Err(source) => {
                        let _ = fs::remove_dir_all(&temporary);
                        return Err(CacheError::MoveIntoPlace { path: tree, source });
                    }
                }
            }
            Err(_unusable) => {
                let temporary = write_temporary(&parent, id, files, &content, strategy)?;
                replace(&temporary, &tree)?;
                return Ok(tree);
            }
        }
    }
    Err(CacheError::KeepsChanging { path: tree })
}

/// The tree `<root>/<section>/<id>` if it exists and verifies, found without creating, writing or
/// repairing anything, on this thread only: for checking a tree ahead of its first use, off the
/// main thread. `None` (missing, damaged, an unusable cache): the caller goes through
/// [`ensure_tree`], which says why and repairs.
pub fn existing_tree(root: &Path, section: &str, id: &str, files: &[TreeFile]) -> Option<PathBuf> {
    if check_relative(id).is_err() || files.iter().any(|file| check_relative(&file.path).is_err()) {
        return None;
    }
    // SAFETY: no preconditions.
    let uid = unsafe { libc::geteuid() };
    safe_ancestors(root, uid).ok()?;
    for directory in [root.to_path_buf(), root.join(section)] {
        let metadata = fs::symlink_metadata(&directory).ok()?;
        if !metadata.is_dir() || metadata.uid() != uid || metadata.mode() & 0o022 != 0 {
            return None;
        }
    }
    let tree = root.join(section).join(id);
    verify_in(&tree, files, 1).ok()?;
    Some(tree)
}

/// Swaps a freshly written tree in for a bad one, then removes the bad one.
fn replace(fresh: &Path, tree: &Path) -> Result<(), CacheError> {
    let c = |path: &Path| {
        CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| CacheError::NulInPath { path: path.to_path_buf() })
    };
    let (from, to) = (c(fresh)?, c(tree)?);
    // The system call, not glibc's wrapper (glibc 2.28+), for executables built for glibc 2.17.
    // SAFETY: both are valid NUL-terminated paths.
    let swapped = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) as libc::c_int
    };
    if swapped == 0 {
        // `fresh` now names the bad tree.
        let _ = remove_any(fresh);
        return Ok(());
    }
    // No RENAME_EXCHANGE on this file system (or the bad tree vanished): move the bad one aside,
    // then rename. A reader in between sees no tree and waits for ours or writes its own.
    let aside = fresh.with_extension("old");
    match fs::rename(tree, &aside) {
        Ok(()) => {
            let _ = remove_any(&aside);
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            let _ = fs::remove_dir_all(fresh);
            return Err(CacheError::ReplaceDamaged { path: tree.to_path_buf(), source });
        }
    }
    match fs::rename(fresh, tree) {
        Ok(()) => Ok(()),
        Err(error) if matches!(error.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) => {
            // Someone else repaired it first; theirs is as good as ours.
            let _ = fs::remove_dir_all(fresh);
            Ok(())
        }
        Err(source) => {
            let _ = fs::remove_dir_all(fresh);
            Err(CacheError::MoveIntoPlace { path: tree.to_path_buf(), source })
        }
    }
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(error) => Err(error),
    }
}

/// Files at least this large are verified through a mapping rather than read into a buffer.
const MAP_AT_LEAST: u64 = 256 * 1024;

/// How many threads to spread `count` files over.
fn threads_for(count: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.min(8).min(count.div_ceil(32)).max(1)
}

/// Splits `files` into `parts` groups of about equal byte size, each a run of consecutive paths:
/// a directory's files mostly go to one writer, which then does not contend with the others for
/// that directory's lock when it creates them.
fn partition(files: &[TreeFile], parts: usize) -> Vec<Vec<&TreeFile>> {
    let mut order: Vec<&TreeFile> = files.iter().collect();
    order.sort_by(|a, b| a.path.cmp(&b.path));
    let weight = |file: &TreeFile| file.size.max(4096);
    let total: u64 = order.iter().map(|file| weight(file)).sum();
    let share = total.div_ceil(parts.max(1) as u64).max(1);
    let mut groups: Vec<Vec<&TreeFile>> = vec![Vec::new()];
    let mut bytes = 0u64;
    for file in order {
        if bytes >= share && groups.len() < parts {
            groups.push(Vec::new());
            bytes = 0;
        }
        bytes += weight(file);
        groups.last_mut().expect("at least one group").push(file);
    }
    groups
}

/// Checks the tree at `tree` against `files`.
fn verify(tree: &Path, files: &[TreeFile]) -> Result<(), Unusable> {
    verify_in(tree, files, threads_for(files.len()))
}

/// [`verify`] with the files spread over `threads` threads (this one included).
fn verify_in(tree: &Path, files: &[TreeFile], threads: usize) -> Result<(), Unusable> {
    let metadata = match fs::symlink_metadata(tree) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unusable::Missing)
        }
        Err(error) => return Err(Unusable::Unreadable(error)),
    };
    // SAFETY: no preconditions.
    if !metadata.is_dir()
        || metadata.uid() != unsafe { libc::geteuid() }
        || metadata.mode() & 0o022 != 0
    {
        return Err(Unusable::NotPrivate);
    }
    let groups = partition(files, threads.max(1));
    let results: Vec<Result<(), Unusable>> = std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .iter()
            .skip(1)
            .map(|group| scope.spawn(move || verify_group(tree, group)))
            .collect();
        let mut results = vec![groups.first().map_or(Ok(()), |group| verify_group(tree, group))];
        results.extend(
            handles.into_iter().map(|handle| handle.join().unwrap_or(Err(Unusable::Panicked))),
        );
        results
    });
    results.into_iter().collect()
}

fn verify_group(tree: &Path, files: &[&TreeFile]) -> Result<(), Unusable> {
    let failed = |file: &TreeFile| {
        let path = file.path.clone();
        move |source| Unusable::File { path, source }
    };
    let mut buffer = Vec::new();
    for file in files {
        let path = tree.join(&file.path);
        let mut handle = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(failed(file))?;
        let metadata = handle.metadata().map_err(failed(file))?;
        if !metadata.is_file() || metadata.len() != file.size {
            return Err(Unusable::WrongSize { path: file.path.clone(), size: file.size });
        }
        // Small files: one read (the size is known, no probe for the end of the file). Large
        // ones: hashed through a read-only mapping of the page cache, not copied out of it.
        let hash = if file.size >= MAP_AT_LEAST {
            // SAFETY: a read-only private mapping; the file is ours (0600, in our 0700 tree). If
            // it is truncated meanwhile, reading the mapping could fault: the size was just checked
            // on this descriptor, and a tree is only ever replaced by renaming, never shortened.
            let map = unsafe { memmap2::Mmap::map(&handle) }.map_err(failed(file))?;
            xxh3_64(&map)
        } else {
            buffer.resize(file.size as usize, 0);
            handle.read_exact(&mut buffer).map_err(failed(file))?;
            xxh3_64(&buffer)
        };
        if hash != file.hash {
            return Err(Unusable::Differs { path: file.path.clone() });
        }
    }
    Ok(())
}

/// Whether the process that names a temporary (`<anything>-<pid>-<random>`: its pid second from
/// the end, as in `.tmp-<id>-<pid>-<nanos>`) is gone; false when the name holds no pid, or the
/// process exists or cannot be asked about.
pub fn writer_is_gone(name: &[u8]) -> bool {
    let mut parts = name.rsplit(|&byte| byte == b'-');
    let (_nanos, pid) = (parts.next(), parts.next());
    let Some(pid) = pid
        .and_then(|pid| std::str::from_utf8(pid).ok()?.parse::<i32>().ok())
        .filter(|&pid| pid > 0)
    else {
        return false;
    };
    // SAFETY: signal 0 only checks whether the process exists.
    unsafe { libc::kill(pid, 0) != 0 && *libc::__errno_location() == libc::ESRCH }
}

/// Whether a temporary named `name` (see [`writer_is_gone`]), last modified `age` ago, is what a
/// killed process left: over [`STALE_AFTER`] old, or over [`WRITER_GONE_AFTER`] with its writer
/// gone. `ingot cache prune` goes by it too (`ingot._ingot.stale_temporary`).
pub fn is_stale_temporary(name: &[u8], age: Duration) -> bool {
    age > STALE_AFTER || (age > WRITER_GONE_AFTER && writer_is_gone(name))
}

/// Removes the temporary trees that killed processes left in `parent` ([`is_stale_temporary`]).
fn remove_stale(parent: &Path) {
    let Ok(listing) = fs::read_dir(parent) else { return };
    let now = SystemTime::now();
    for child in listing.flatten() {
        let name = child.file_name();
        if !name.as_encoded_bytes().starts_with(TEMPORARY_PREFIX.as_bytes()) {
            continue;
        }
        let age = child
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok());
        if age.is_some_and(|age| is_stale_temporary(name.as_encoded_bytes(), age)) {
            let _ = fs::remove_dir_all(child.path());
        }
    }
}

/// Writes `files` into a new temporary directory of `parent` and returns its path.
fn write_temporary<'a, F, E>(
    parent: &Path,
    id: &str,
    files: &[TreeFile],
    content: &F,
    strategy: Strategy,
) -> Result<PathBuf, CacheError>
where
    F: Fn(&TreeFile) -> Result<Cow<'a, [u8]>, E> + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    remove_stale(parent);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |time| time.subsec_nanos());
    let temporary = parent.join(format!("{TEMPORARY_PREFIX}{id}-{}-{nanos}", std::process::id()));
    let mut builder = fs::DirBuilder::new();
    builder.mode(0o700);
    if let Err(source) = builder.create(&temporary) {
        return Err(CacheError::CreateDir { path: temporary, source });
    }
    // Every file of a tree gets the same modification time, so that code comparing the times of
    // two of its files (black compares a grammar pickle with Grammar.txt) sees them written
    // together, whatever order the parallel writers took.
    let written_at = SystemTime::now();
    let result = write_files(&temporary, files, content, strategy, &builder, written_at);
    if let Err(error) = result {
        let _ = fs::remove_dir_all(&temporary);
        return Err(error);
    }
    Ok(temporary)
}

fn write_files<'a, F, E>(
    tree: &Path,
    files: &[TreeFile],
    content: &F,
    strategy: Strategy,
    builder: &fs::DirBuilder,
    written_at: SystemTime,
) -> Result<(), CacheError>
where
    F: Fn(&TreeFile) -> Result<Cow<'a, [u8]>, E> + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    let directories: BTreeSet<&str> = files
        .iter()
        .flat_map(|file| file.path.match_indices('/').map(move |(at, _)| &file.path[..at]))
        .collect();
    for directory in directories {
        let path = tree.join(directory);
        match builder.create(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(source) => return Err(CacheError::CreateDir { path, source }),
        }
    }
    let groups = partition(files, threads_for(files.len()));
    let (closer, closing) = mpsc::channel::<Vec<File>>();
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<CacheError>> = Mutex::new(None);
    // One group on this thread, the others on their own; each hands its files, in batches, to a
    // thread that closes them, off the writers' path (a close can be slow on some file systems).
    let write_group = |group: &[&TreeFile], closer: mpsc::Sender<Vec<File>>| {
        let mut open = Vec::with_capacity(CLOSE_BATCH);
        for file in group {
            if failed.load(Ordering::Relaxed) {
                break;
            }
            match write_one(tree, file, content, strategy, written_at) {
                Ok(handle) => {
                    open.push(handle);
                    if open.len() == CLOSE_BATCH {
                        let _ = closer
                            .send(std::mem::replace(&mut open, Vec::with_capacity(CLOSE_BATCH)));
                    }
                }
                Err(error) => {
                    failed.store(true, Ordering::Relaxed);
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(error);
                    }
                    break;
                }
            }
        }
        let _ = closer.send(open);
    };
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for batch in closing {
                drop(batch)
            }
        });
        let write_group = &write_group;
        for group in groups.iter().skip(1) {
            let closer = closer.clone();
            scope.spawn(move || write_group(group, closer));
        }
        if let Some(group) = groups.first() {
            write_group(group, closer);
        } else {
            drop(closer);
        }
    });
    match first_error.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(error)) => Err(error),
        Err(_) => Err(CacheError::WriterPanicked),
    }
}

fn write_one<'a, F, E>(
    tree: &Path,
    file: &TreeFile,
    content: &F,
    strategy: Strategy,
    written_at: SystemTime,
) -> Result<File, CacheError>
where
    F: Fn(&TreeFile) -> Result<Cow<'a, [u8]>, E> + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    let bytes = content(file).map_err(|error| CacheError::Content(Box::new(error)))?;
    // The archive's checksums already cover these bytes (and the manifest); a size check catches a
    // manifest that does not describe them without hashing everything a second time. A tree
    // written from bytes that hash differently would fail its next verification and be rewritten.
    if bytes.len() as u64 != file.size {
        return Err(CacheError::SizeMismatch {
            path: file.path.clone(),
            expected: file.size,
            found: bytes.len() as u64,
        });
    }
    let path = tree.join(&file.path);
    let executable = bytes.starts_with(b"\x7fELF") || bytes.starts_with(b"#!");
    let handle = OpenOptions::new()
        .read(strategy == Strategy::Mmap)
        .write(true)
        .create_new(true)
        .mode(if executable { 0o700 } else { 0o600 })
        .custom_flags(libc::O_CLOEXEC)
        .open(&path);
    let mut handle = match handle {
        Ok(handle) => handle,
        Err(source) => return Err(CacheError::CreateFile { path, source }),
    };
    let written = match strategy {
        Strategy::Stream => handle.write_all(&bytes),
        Strategy::Mmap if bytes.is_empty() => Ok(()),
        Strategy::Mmap => handle.set_len(bytes.len() as u64).and_then(|()| {
            // SAFETY: the file was just created by this process and is not mapped elsewhere.
            let mut map = unsafe { memmap2::MmapMut::map_mut(&handle)? };
            map.copy_from_slice(&bytes);
            Ok(())
        }),
    };
    match written.and_then(|()| handle.set_modified(written_at)) {
        Ok(()) => Ok(handle),
        Err(source) => Err(CacheError::WriteFile { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_files(contents: &[(&str, &[u8])]) -> Vec<TreeFile> {
        contents
            .iter()
            .map(|(path, bytes)| TreeFile {
                path: path.to_string(),
                size: bytes.len() as u64,
                hash: xxh3_64(bytes),
            })
            .collect()
    }

    fn source<'a>(
        contents: &'a [(&'a str, &'a [u8])],
    ) -> impl Fn(&TreeFile) -> Result<Cow<'a, [u8]>, CacheError> + Sync + 'a {
        move |file: &TreeFile| {
            contents
                .iter()
                .find(|(path, _)| *path == file.path)
                .map(|(_, bytes)| Cow::Borrowed(*bytes))
                .ok_or_else(|| CacheError::NoBytes { path: file.path.clone() })
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ingot-cache-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        dir
    }

    const CONTENTS: &[(&str, &[u8])] =
        &[("pkg/__init__.py", b"x = 1\n"), ("pkg/data/a.txt", b"alpha"), ("pkg/empty", b"")];

    #[test]
    fn a_checked_file_is_held_only_when_it_is_the_bytes_expected() {
        let dir = scratch("open-checked");
        let file = dir.join("lib.so");
        fs::write(&file, b"image").unwrap();
        let mut held = open_checked(&file, b"image").unwrap();
        // What the descriptor holds stays what was checked when the path is swapped.
        fs::rename(&file, dir.join("moved")).unwrap();
        fs::write(&file, b"other").unwrap();
        let mut read = Vec::new();
        std::io::Seek::rewind(&mut held).unwrap();
        held.read_to_end(&mut read).unwrap();
        assert_eq!(read, b"image");
        let changed = |result: Result<File, CacheError>| {
            matches!(result, Err(CacheError::ChangedAfterCheck { .. }))
        };
        assert!(changed(open_checked(&file, b"image")), "other bytes, same size");
        assert!(changed(open_checked(&file, b"longer image")), "another size");
        fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(dir.join("moved"), &file).unwrap();
        assert!(changed(open_checked(&file, b"image")), "a link is not followed");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_a_missing_tree_then_reuses_it() {
        let root = scratch("reuse");
        let files = tree_files(CONTENTS);
        let tree = ensure_tree(&root, "trees", "t1", &files, source(CONTENTS)).unwrap();
        assert_eq!(fs::read(tree.join("pkg/data/a.txt")).unwrap(), b"alpha");
        let inode = fs::metadata(tree.join("pkg/__init__.py")).unwrap().ino();
        let again = ensure_tree(&root, "trees", "t1", &files, |file| {
            Err(CacheError::NoBytes { path: file.path.clone() })
        })
        .unwrap();
        assert_eq!(again, tree);
        assert_eq!(fs::metadata(tree.join("pkg/__init__.py")).unwrap().ino(), inode);
        let mode = fs::metadata(&tree).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn files_of_a_tree_share_one_modification_time() {
        let many: Vec<(String, Vec<u8>)> =
            (0..300).map(|i| (format!("pkg/f{i:03}.txt"), vec![b'x'; i])).collect();
        let contents: Vec<(&str, &[u8])> =
            many.iter().map(|(path, bytes)| (path.as_str(), bytes.as_slice())).collect();
        for strategy in [Strategy::Stream, Strategy::Mmap] {
            let root = scratch(&format!("mtime-{strategy:?}"));
            let files = tree_files(&contents);
            // Writes that straddle clock ticks (a slow source), so that a tree without a common
            // time would show several.
            let plain = source(&contents);
            let slow = |file: &TreeFile| {
                if file.path.ends_with('0') {
                    std::thread::sleep(Duration::from_millis(2));
                }
                plain(file)
            };
            let tree = write_temporary(&root, "t", &files, &slow, strategy).unwrap();
            let times: BTreeSet<i128> = contents
                .iter()
                .map(|(path, _)| {
                    let metadata = fs::metadata(tree.join(path)).unwrap();
                    i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec())
                })
                .collect();
            assert_eq!(
                times.len(),
                1,
                "{strategy:?}: {} different modification times",
                times.len()
            );
            fs::remove_dir_all(root).unwrap();
        }
    }

    #[test]
    fn repairs_an_altered_file() {
        let root = scratch("repair");
        let files = tree_files(CONTENTS);
        let tree = ensure_tree(&root, "trees", "t1", &files, source(CONTENTS)).unwrap();
        fs::write(tree.join("pkg/data/a.txt"), b"alphA").unwrap();
        ensure_tree(&root, "trees", "t1", &files, source(CONTENTS)).unwrap();
        assert_eq!(fs::read(tree.join("pkg/data/a.txt")).unwrap(), b"alpha");
        fs::remove_file(tree.join("pkg/empty")).unwrap();
        ensure_tree(&root, "trees", "t1", &files, source(CONTENTS)).unwrap();
        assert!(tree.join("pkg/empty").is_file());
        let leftovers: Vec<_> =
            fs::read_dir(root.join("trees")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("t1")]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn refuses_manifest_paths_that_leave_the_tree() {
        let root = scratch("unsafe");
        for bad in ["../x", "/etc/passwd", "a//b", "a/./b", ""] {
            let files = vec![TreeFile { path: bad.to_string(), size: 0, hash: xxh3_64(b"") }];
            let error = ensure_tree(&root, "trees", "t", &files, |_| {
                Ok::<_, CacheError>(Cow::Borrowed(b""))
            })
            .unwrap_err();
            assert_eq!(error.to_string(), format!("unsafe path `{bad}` in a cache tree manifest"));
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn messages_keep_their_wording() {
        let io = || std::io::Error::from_raw_os_error(libc::EACCES);
        let path = PathBuf::from("/c/trees");
        let cases: Vec<(CacheError, &str)> = vec![
            (
                CacheError::BadStrategy { value: "fast".into() },
                "INGOT_WRITE_STRATEGY=\"fast\" is not a write strategy (expected `stream` or `mmap`)",
            ),
            (
                CacheError::CreateDir { path: path.clone(), source: io() },
                "cannot create cache directory `/c/trees`: Permission denied (os error 13)",
            ),
            (
                CacheError::UseDir { path: path.clone(), source: io() },
                "cannot use cache directory `/c/trees`: Permission denied (os error 13)",
            ),
            (
                CacheError::NotADirectory { path: path.clone() },
                "cache directory `/c/trees` is not a directory",
            ),
            (
                CacheError::NotOurs { path: path.clone(), owner: 0, uid: 1000 },
                "cache directory `/c/trees` belongs to user 0, not to this user (1000); set INGOT_CACHE_DIR to a directory of yours",
            ),
            (
                CacheError::NotPrivate { path: path.clone(), mode: 0o777 },
                "cache directory `/c/trees` is writable by other users (mode 777); make it private (chmod 700) or set INGOT_CACHE_DIR",
            ),
            (
                CacheError::UnsafePath { path: "../x".into() },
                "unsafe path `../x` in a cache tree manifest",
            ),
            (CacheError::NulInPath { path: path.clone() }, "path `/c/trees` contains NUL"),
            (CacheError::NotUtf8 { path: path.clone() }, "cache path `/c/trees` is not valid UTF-8"),
            (
                CacheError::MoveIntoPlace { path: path.clone(), source: io() },
                "cannot move cache tree into place at `/c/trees`: Permission denied (os error 13)",
            ),
            (
                CacheError::ReplaceDamaged { path: path.clone(), source: io() },
                "cannot replace damaged cache tree `/c/trees`: Permission denied (os error 13)",
            ),
            (
                CacheError::KeepsChanging { path: path.clone() },
                "cache tree `/c/trees` keeps changing under this process; is another program writing there?",
            ),
            (
                CacheError::CreateFile { path: path.join("a"), source: io() },
                "cannot create cache file `/c/trees/a`: Permission denied (os error 13)",
            ),
            (
                CacheError::WriteFile { path: path.join("a"), source: io() },
                "cannot write cache file `/c/trees/a`: Permission denied (os error 13)",
            ),
            (
                CacheError::SizeMismatch { path: "p/a".into(), expected: 1, found: 2 },
                "p/a: the archive's bytes do not match the tree manifest",
            ),
            (CacheError::NoBytes { path: "p/a".into() }, "no bytes for `p/a`"),
            (
                CacheError::Content(Box::new(CacheError::CreateFile {
                    path: path.join("b"),
                    source: io(),
                })),
                "cannot create cache file `/c/trees/b`: Permission denied (os error 13)",
            ),
            (CacheError::WriterPanicked, "a cache writer panicked"),
        ];
        for (error, expected) in cases {
            assert_eq!(ingot_format::chain(&error), expected);
        }
    }

    #[test]
    fn refuses_a_root_writable_by_others() {
        let root = scratch("shared");
        fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let files = tree_files(CONTENTS);
        let error = ensure_tree(&root, "trees", "t1", &files, source(CONTENTS)).unwrap_err();
        assert_eq!(
            ingot_format::chain(&error),
            format!(
                "cache directory `{}` is writable by other users (mode 777); make it private (chmod 700) or set INGOT_CACHE_DIR",
                root.display()
            )
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn content_that_does_not_match_the_manifest_is_not_kept() {
        let root = scratch("mismatch");
        let files = tree_files(CONTENTS);
        let error = ensure_tree(&root, "trees", "t1", &files, |_| {
            Ok::<_, CacheError>(Cow::Borrowed(b"other"))
        })
        .unwrap_err();
        assert!(error
            .to_string()
            .ends_with(": the archive's bytes do not match the tree manifest"));
        assert_eq!(fs::read_dir(root.join("trees")).unwrap().count(), 0);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn both_strategies_write_the_same_bytes() {
        let root = scratch("strategies");
        let big = vec![7u8; 100_000];
        let contents: Vec<(String, Vec<u8>)> =
            (0..100).map(|i| (format!("p/f{i}"), big[..i * 997].to_vec())).collect();
        let files: Vec<TreeFile> = contents
            .iter()
            .map(|(path, bytes)| TreeFile {
                path: path.clone(),
                size: bytes.len() as u64,
                hash: xxh3_64(bytes),
            })
            .collect();
        let lookup = |file: &TreeFile| {
            Ok::<_, CacheError>(Cow::Owned(
                contents.iter().find(|(p, _)| *p == file.path).unwrap().1.clone(),
            ))
        };
        for (strategy, id) in [(Strategy::Stream, "s"), (Strategy::Mmap, "m")] {
            let parent = root.join("trees");
            // SAFETY: no preconditions.
            make_dirs_checked(&parent, unsafe { libc::geteuid() }, 0o700).unwrap();
            let temporary = write_temporary(&parent, id, &files, &lookup, strategy).unwrap();
            assert!(verify(&temporary, &files).is_ok(), "{strategy:?}");
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_temporary_is_stale_when_its_writer_is_gone_or_after_an_hour() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let gone = format!("{TEMPORARY_PREFIX}{}-{dead}-12", "a".repeat(32));
        let alive = format!("{TEMPORARY_PREFIX}{}-{}-34", "b".repeat(32), std::process::id());
        let seconds = Duration::from_secs;
        assert!(writer_is_gone(gone.as_bytes()) && !writer_is_gone(alive.as_bytes()));
        assert!(!is_stale_temporary(gone.as_bytes(), seconds(5)));
        assert!(is_stale_temporary(gone.as_bytes(), seconds(11)));
        assert!(!is_stale_temporary(alive.as_bytes(), seconds(3599)));
        assert!(is_stale_temporary(alive.as_bytes(), seconds(3601)));
        for no_pid in [&b".tmp-x"[..], b".tmp-x-0-1", b".tmp-x--1", b".tmp-x-99999999999-1"] {
            assert!(!writer_is_gone(no_pid) && !is_stale_temporary(no_pid, seconds(60)));
        }
    }
}
