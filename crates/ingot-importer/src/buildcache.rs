//! `BuildCache`: the store of `ingot build`'s cache, shared by the archive writer (compressed
//! blobs, dictionaries: [`ingot_format::WriterCache`]) and the build's Python code (bytecode,
//! what a module imports and compiles), one file per entry.
//!
//! An entry is `<root>/<first 2 hex digits of the key>/<other 30>`: a header (magic, the
//! XXH3-64 of the value, its size) and the value. A reader checks all three; a damaged entry is
//! removed and counted, never returned. A writer writes a temporary file beside it and renames
//! it into place, so a reader sees a whole entry or none. A hit older than a day has its time
//! set again, which is what `ingot cache prune` goes by.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"ingotbc1";
const HEADER: usize = 24;
/// A hit whose entry is older than this is touched, so that pruning by age spares it.
const TOUCH_AFTER: Duration = Duration::from_secs(86_400);

#[derive(Default)]
struct Counts {
    hits: AtomicU64,
    /// Hits on entries written since the store was opened (by this build's processes).
    fresh: AtomicU64,
    misses: AtomicU64,
    damaged: AtomicU64,
    written: AtomicU64,
    failed: AtomicU64,
}

pub struct Store {
    root: PathBuf,
    /// When this store was opened: entries written later are this build's.
    opened: SystemTime,
    counts: Counts,
    sequence: AtomicU64,
    /// Entries on their way to the writing thread, which creates the files off the build's
    /// path (a file's creation cost 50 to 100 us on ext4 here: 10,000 entries, a second of a
    /// cold build); [`Store::flush`] waits for it.
    pending: std::sync::Mutex<Option<Writing>>,
}

struct Writing {
    sender: std::sync::mpsc::Sender<(u128, Vec<u8>)>,
    thread: std::thread::JoinHandle<()>,
}

impl Store {
    fn path(&self, key: u128) -> PathBuf {
        let hex = format!("{key:032x}");
        self.root.join(&hex[..2]).join(&hex[2..])
    }

    fn read(&self, key: u128) -> Option<Vec<u8>> {
        use std::io::Read;
        let path = self.path(key);
        let mut bytes = Vec::new();
        let read = fs::File::open(&path).and_then(|mut file| {
            file.read_to_end(&mut bytes)?;
            file.metadata()?.modified()
        });
        let Ok(modified) = read else {
            self.counts.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        match checked_value(&bytes) {
            Some(value) => {
                self.counts.hits.fetch_add(1, Ordering::Relaxed);
                if modified >= self.opened {
                    // Written since this store was opened: by this build, not reused.
                    self.counts.fresh.fetch_add(1, Ordering::Relaxed);
                }
                let age = SystemTime::now().duration_since(modified).unwrap_or_default();
                if age > TOUCH_AFTER {
                    touch(&path);
                }
                Some(value.to_vec())
            }
            None => {
                self.counts.damaged.fetch_add(1, Ordering::Relaxed);
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    fn new(root: PathBuf) -> Arc<Store> {
        let counts = Counts::default();
        let pending = std::sync::Mutex::new(None);
        let opened = SystemTime::now();
        Arc::new(Store { root, opened, counts, sequence: AtomicU64::new(0), pending })
    }

    /// Hands `value` to the writing thread (started on first use).
    fn put(self: &Arc<Self>, key: u128, value: Vec<u8>) {
        let mut pending = self.pending.lock().unwrap_or_else(|poison| poison.into_inner());
        let writing = pending.get_or_insert_with(|| {
            let (sender, receiver) = std::sync::mpsc::channel::<(u128, Vec<u8>)>();
            let store = Arc::downgrade(self);
            let thread = std::thread::spawn(move || {
                for (key, value) in receiver {
                    match store.upgrade() {
                        Some(store) => store.write(key, &value),
                        None => break,
                    }
                }
            });
            Writing { sender, thread }
        });
        if let Err(unsent) = writing.sender.send((key, value)) {
            let (key, value) = unsent.0;
            self.write(key, &value);
        }
    }

    /// Waits until every entry put so far is written.
    fn flush(&self) {
        let writing = self.pending.lock().unwrap_or_else(|poison| poison.into_inner()).take();
        if let Some(Writing { sender, thread }) = writing {
            drop(sender);
            let _ = thread.join();
        }
    }

    fn write(&self, key: u128, value: &[u8]) {
        let path = self.path(key);
        let directory = path.parent().expect("an entry's path has a directory");
        let temporary = directory.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            self.sequence.fetch_add(1, Ordering::Relaxed)
        ));
        let written =
            write_entry(&temporary, directory, value).and_then(|()| fs::rename(&temporary, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        let count = if written.is_ok() { &self.counts.written } else { &self.counts.failed };
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes an entry holding `value` at `temporary` (its directory made when missing).
fn write_entry(temporary: &Path, directory: &Path, value: &[u8]) -> std::io::Result<()> {
    let mut file = match fs::File::create(temporary) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(directory)?;
            fs::File::create(temporary)?
        }
        other => other?,
    };
    let mut entry = Vec::with_capacity(HEADER + value.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&xxh3_64(value).to_le_bytes());
    entry.extend_from_slice(&(value.len() as u64).to_le_bytes());
    entry.extend_from_slice(value);
    file.write_all(&entry)
}

/// The value of an entry's bytes, if its header holds and its checksum matches.
fn checked_value(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let checksum = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
    let size = u64::from_le_bytes(bytes[16..24].try_into().ok()?);
    let value = &bytes[HEADER..];
    (value.len() as u64 == size && xxh3_64(value) == checksum).then_some(value)
}

fn touch(path: &Path) {
    if let Ok(file) = fs::File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(path) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => Err(error),
        _ => Ok(()),
    }
}

/// The archive writer's view of the store.
pub struct WriterStore(pub(crate) Arc<Store>);

impl ingot_format::WriterCache for WriterStore {
    fn get(&self, key: u128) -> Option<Vec<u8>> {
        self.0.read(key)
    }

    fn put(&self, key: u128, value: &[u8]) {
        self.0.put(key, value.to_vec())
    }
}

fn parse_key(key: &str) -> PyResult<u128> {
    if key.len() != 32 || !key.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(PyValueError::new_err(format!(
            "a build cache key is 32 hexadecimal digits, not {key:?}"
        )));
    }
    u128::from_str_radix(key, 16).map_err(|error| PyValueError::new_err(error.to_string()))
}

/// `BuildCache(root: str)`: the build cache's entries under `root` (a private directory the
/// caller has checked; created as entries are written). `get(key)` and `put(key, value)` take
/// keys of 32 hexadecimal digits; `stats()` counts hits, misses, damaged entries (removed),
/// entries written and writes that failed (a build goes on without them).
#[pyclass(module = "ingot._ingot", frozen)]
pub struct BuildCache {
    pub(crate) store: Arc<Store>,
}

#[pymethods]
impl BuildCache {
    #[new]
    fn new(root: PathBuf) -> BuildCache {
        BuildCache { store: Store::new(root) }
    }

    /// The value put under `key`, or None (never there, or damaged: then removed).
    fn get(&self, py: Python<'_>, key: &str) -> PyResult<Option<std::borrow::Cow<'static, [u8]>>> {
        let key = parse_key(key)?;
        Ok(py.detach(|| self.store.read(key)).map(std::borrow::Cow::Owned))
    }

    /// Keeps `value` under `key` (best effort: a failed write is counted, not raised). The file
    /// is written by a thread of the store's: `flush()` waits for them all.
    fn put(&self, key: &str, value: Vec<u8>) -> PyResult<()> {
        self.store.put(parse_key(key)?, value);
        Ok(())
    }

    /// Waits until every entry put so far is written.
    fn flush(&self, py: Python<'_>) {
        py.detach(|| self.store.flush());
    }

    /// `{"hits": n, "fresh": n, "misses": n, "damaged": n, "written": n, "failed": n}` so far
    /// (`fresh`: the hits on entries written since this store was made).
    fn stats(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let counts = &self.store.counts;
        [
            ("hits", &counts.hits),
            ("fresh", &counts.fresh),
            ("misses", &counts.misses),
            ("damaged", &counts.damaged),
            ("written", &counts.written),
            ("failed", &counts.failed),
        ]
        .into_iter()
        .map(|(name, count)| (name, count.load(Ordering::Relaxed)))
        .collect()
    }

    #[getter]
    fn root(&self) -> PathBuf {
        self.store.root.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(root: &Path) -> Arc<Store> {
        Store::new(root.to_path_buf())
    }

    fn scratch(name: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("ingot-bc-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        path
    }

    #[test]
    fn a_value_put_is_got_back() {
        let root = scratch("roundtrip");
        let store = store(&root);
        assert_eq!(store.read(7), None);
        store.put(7, b"compressed bytes".to_vec());
        store.flush();
        assert_eq!(store.read(7).as_deref(), Some(&b"compressed bytes"[..]));
        assert_eq!(store.counts.hits.load(Ordering::Relaxed), 1);
        assert_eq!(store.counts.misses.load(Ordering::Relaxed), 1);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_damaged_entry_is_removed_not_returned() {
        let root = scratch("damaged");
        let store = store(&root);
        for (key, damage) in [(1u128, 30usize), (2, 3), (3, 18)] {
            store.write(key, b"a value of some length");
            let path = store.path(key);
            let mut bytes = fs::read(&path).unwrap();
            bytes[damage] ^= 0x55;
            fs::write(&path, &bytes).unwrap();
            assert_eq!(store.read(key), None, "damage at byte {damage}");
            assert!(!path.exists());
        }
        store.write(4, b"short");
        let path = store.path(4);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap(); // cut short
        assert_eq!(store.read(4), None);
        assert_eq!(store.counts.damaged.load(Ordering::Relaxed), 4);
        let _ = fs::remove_dir_all(&root);
    }
}
