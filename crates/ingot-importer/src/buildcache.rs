//! `BuildCache`: the store of `ingot build`'s cache, shared by the archive writer (compressed
//! blobs, dictionaries: [`ingot_format::WriterCache`]) and the build's Python code (bytecode,
//! what a module imports and compiles).
//!
//! Entries are appended to segment files, one per process that writes (the builder, each of its
//! pool's processes): `<root>/<16 hex digits of the nanoseconds it was made at>-<pid>.seg`, the
//! names sorting by age. A segment is [`SEGMENT_MAGIC`] then records: the key (16 bytes), the
//! value's size and XXH3-64 (8 bytes each, little-endian), and the value. One file per entry had
//! cost 0.4 ms of system time per entry on this machine's ext4 (16,000 entries for httpie: about
//! 6 s of CPU in a first build); a segment costs one file per process.
//!
//! A store indexes the segments when first read, and again (only what was appended since) at
//! most every [`RESCAN_EVERY`] on a miss, and on [`Store::refresh`]: so the builder finds what its
//! pool writes meanwhile. A key's newest record wins. A reader checks the value's size and
//! checksum: a damaged value is counted and never returned, and a tombstone (a record without
//! a value) is appended for its key, so that no later build finds it again (the value computed
//! again is appended, and wins from then on); a record cut short at a segment's end (a writer still at work, or one
//! that died) is not indexed. Segments are read with `pread`, not mapped: one cut short by another
//! process cannot fault this one. A segment a hit comes from has its time set again when it is
//! older than a day, which is what `ingot cache prune` goes by.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

/// The first bytes of a segment file.
pub const SEGMENT_MAGIC: &[u8; 8] = b"ingotsg1";
/// A record's header: key, size, checksum.
const RECORD_HEADER: usize = 32;
/// The size of a record that has no value, and drops its key's earlier ones: written where a
/// damaged value was found, so that later builds do not find (and report) it again.
const TOMBSTONE: u64 = 1 << 63;
/// A hit whose segment is older than this touches it, so that pruning by age spares it.
const TOUCH_AFTER: Duration = Duration::from_secs(86_400);
/// How often a miss looks for what other processes appended since.
const RESCAN_EVERY: Duration = Duration::from_millis(50);
/// What the writing thread buffers before it appends.
const WRITE_BUFFER: usize = 256 * 1024;

#[derive(Default)]
struct Counts {
    hits: AtomicU64,
    /// Hits on entries written since the build began (by its processes).
    fresh: AtomicU64,
    misses: AtomicU64,
    damaged: AtomicU64,
    written: AtomicU64,
    failed: AtomicU64,
}

/// A segment as indexed: how far, and whether a hit has set its time.
struct Segment {
    file: fs::File,
    indexed: u64,
    /// Made since the build began (its name's time is later).
    fresh: bool,
    touched: bool,
}

/// Where a key's newest record's value is.
#[derive(Clone, Copy)]
struct Location {
    segment: usize,
    offset: u64,
    size: u64,
    checksum: u64,
}

#[derive(Default)]
struct Index {
    segments: Vec<Segment>,
    by_name: HashMap<PathBuf, usize>,
    keys: HashMap<u128, Location>,
    scanned: Option<Instant>,
}

pub struct Store {
    root: PathBuf,
    /// When the build began (nanoseconds since the epoch): later segments are this build's.
    since: u64,
    /// The segment this process appends to.
    own: PathBuf,
    counts: Counts,
    index: Mutex<Index>,
    /// Entries on their way to the writing thread, which appends them off the build's path;
    /// [`Store::flush`] waits for it.
    pending: Mutex<Option<Writing>>,
}

struct Writing {
    sender: std::sync::mpsc::Sender<(u128, Option<Vec<u8>>)>,
    thread: std::thread::JoinHandle<()>,
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64)
}

/// The time a segment's name says it was made at.
fn segment_time(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".seg")?;
    u64::from_str_radix(stem.split('-').next()?, 16).ok()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Store {
    fn new(root: PathBuf, since: Option<u64>) -> Arc<Store> {
        let opened = now_nanos();
        let own = root.join(format!("{opened:016x}-{}.seg", std::process::id()));
        Arc::new(Store {
            root,
            since: since.unwrap_or(opened),
            own,
            counts: Counts::default(),
            index: Mutex::new(Index::default()),
            pending: Mutex::new(None),
        })
    }

    fn read(self: &Arc<Self>, key: u128) -> Option<Vec<u8>> {
        let mut index = lock(&self.index);
        let due = index.scanned.is_none_or(|at| at.elapsed() >= RESCAN_EVERY);
        if due && !index.keys.contains_key(&key) {
            self.scan(&mut index);
        }
        let Some(location) = index.keys.get(&key).copied() else {
            self.counts.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let segment = &mut index.segments[location.segment];
        let mut value = vec![0u8; location.size as usize];
        let read = segment.file.read_exact_at(&mut value, location.offset);
        if read.is_err() || xxh3_64(&value) != location.checksum {
            self.counts.damaged.fetch_add(1, Ordering::Relaxed);
            index.keys.remove(&key);
            self.send(key, None);
            return None;
        }
        self.counts.hits.fetch_add(1, Ordering::Relaxed);
        if segment.fresh {
            self.counts.fresh.fetch_add(1, Ordering::Relaxed);
        } else if !segment.touched {
            segment.touched = true;
            touch_if_old(&segment.file);
        }
        Some(value)
    }

    /// Indexes the segments made, and the records appended, since the last scan.
    fn scan(&self, index: &mut Index) {
        index.scanned = Some(Instant::now());
        let Ok(listing) = fs::read_dir(&self.root) else { return };
        let mut names: Vec<(String, PathBuf)> = listing
            .filter_map(|entry| entry.ok())
            .map(|entry| (entry.file_name().to_string_lossy().into_owned(), entry.path()))
            .filter(|(name, _)| segment_time(name).is_some())
            .collect();
        names.sort();
        for (name, path) in names {
            let number = match index.by_name.get(&path) {
                Some(&number) => number,
                None => {
                    let Ok(file) = fs::File::open(&path) else { continue };
                    let fresh = segment_time(&name).is_some_and(|made| made >= self.since);
                    let segment = Segment { file, indexed: 0, fresh, touched: false };
                    index.segments.push(segment);
                    index.by_name.insert(path, index.segments.len() - 1);
                    index.segments.len() - 1
                }
            };
            index_records(index, number);
        }
    }

    /// Indexes again everything appended so far (by this process's pool too).
    fn refresh(&self) {
        let mut index = lock(&self.index);
        self.scan(&mut index);
    }

    /// Hands `value` to the writing thread (started on first use).
    fn put(self: &Arc<Self>, key: u128, value: Vec<u8>) {
        self.send(key, Some(value));
    }

    /// Hands a record to the writing thread: `value`, or a tombstone (None).
    fn send(self: &Arc<Self>, key: u128, value: Option<Vec<u8>>) {
        let mut pending = lock(&self.pending);
        let writing = pending.get_or_insert_with(|| {
            let (sender, receiver) = std::sync::mpsc::channel::<(u128, Option<Vec<u8>>)>();
            let store = Arc::downgrade(self);
            let thread = std::thread::spawn(move || {
                let mut appender: Option<Option<std::io::BufWriter<fs::File>>> = None;
                loop {
                    // Whatever waits is appended; when nothing does, what was appended is
                    // written out, for other processes to see (the builder, of its pool's).
                    let next = match receiver.try_recv() {
                        Ok(next) => next,
                        Err(std::sync::mpsc::TryRecvError::Empty) => {
                            if let Some(Some(appender)) = appender.as_mut() {
                                let _ = appender.flush();
                            }
                            match receiver.recv() {
                                Ok(next) => next,
                                Err(_) => break,
                            }
                        }
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                    };
                    let Some(store) = store.upgrade() else { break };
                    store.append(&mut appender, next.0, next.1.as_deref());
                }
                if let Some(Some(mut appender)) = appender.take() {
                    let _ = appender.flush();
                }
            });
            Writing { sender, thread }
        });
        if let Err(unsent) = writing.sender.send((key, value)) {
            let (key, value) = unsent.0;
            let mut appender = None;
            self.append(&mut appender, key, value.as_deref());
            if let Some(Some(mut appender)) = appender {
                let _ = appender.flush();
            }
        }
    }

    /// Appends a record to this process's segment (opened on first use: `appender` holds it,
    /// `Some(None)` once it could not be): `value`, or a tombstone.
    fn append(
        &self,
        appender: &mut Option<Option<std::io::BufWriter<fs::File>>>,
        key: u128,
        value: Option<&[u8]>,
    ) {
        let writer = appender.get_or_insert_with(|| self.open_own().ok());
        let mut header = [0u8; RECORD_HEADER];
        header[..16].copy_from_slice(&key.to_le_bytes());
        let size = value.map_or(TOMBSTONE, |value| value.len() as u64);
        header[16..24].copy_from_slice(&size.to_le_bytes());
        header[24..].copy_from_slice(&xxh3_64(value.unwrap_or_default()).to_le_bytes());
        let value = value.unwrap_or_default();
        let written = match writer {
            Some(writer) => writer.write_all(&header).and_then(|()| writer.write_all(value)),
            None => Err(std::io::Error::other("no segment")),
        };
        let count = if written.is_ok() { &self.counts.written } else { &self.counts.failed };
        count.fetch_add(1, Ordering::Relaxed);
    }

    /// This process's segment, for appending (made, with the store's directory, if missing).
    fn open_own(&self) -> std::io::Result<std::io::BufWriter<fs::File>> {
        use std::os::unix::fs::OpenOptionsExt;
        create_private_dir(&self.root)?;
        let mut file = fs::File::options().append(true).create(true).mode(0o600).open(&self.own)?;
        if file.metadata()?.len() == 0 {
            file.write_all(SEGMENT_MAGIC)?;
        }
        Ok(std::io::BufWriter::with_capacity(WRITE_BUFFER, file))
    }

    /// Waits until every entry put so far is written (and lets the next miss see them).
    fn flush(&self) {
        let writing = lock(&self.pending).take();
        if let Some(Writing { sender, thread }) = writing {
            drop(sender);
            let _ = thread.join();
        }
        lock(&self.index).scanned = None;
    }
}

/// Indexes segment `number`'s whole records from where its indexing stopped.
fn index_records(index: &mut Index, number: usize) {
    let segment = &mut index.segments[number];
    let Ok(length) = segment.file.metadata().map(|metadata| metadata.len()) else { return };
    if segment.indexed == 0 {
        let mut magic = [0u8; 8];
        if segment.file.read_exact_at(&mut magic, 0).is_err() || &magic != SEGMENT_MAGIC {
            return; // (not yet written, or not a segment: left alone)
        }
        segment.indexed = SEGMENT_MAGIC.len() as u64;
    }
    let mut header = [0u8; RECORD_HEADER];
    while segment.indexed + RECORD_HEADER as u64 <= length {
        if segment.file.read_exact_at(&mut header, segment.indexed).is_err() {
            break;
        }
        let key = u128::from_le_bytes(header[..16].try_into().expect("16 bytes"));
        let size = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
        let checksum = u64::from_le_bytes(header[24..].try_into().expect("8 bytes"));
        let offset = segment.indexed + RECORD_HEADER as u64;
        if size == TOMBSTONE {
            index.keys.remove(&key);
            segment.indexed = offset;
            continue;
        }
        if size > length - offset {
            break; // cut short, or still being written
        }
        index.keys.insert(key, Location { segment: number, offset, size, checksum });
        segment.indexed = offset + size;
    }
}

fn touch_if_old(file: &fs::File) {
    let old = file.metadata().and_then(|metadata| metadata.modified()).is_ok_and(|modified| {
        SystemTime::now().duration_since(modified).unwrap_or_default() > TOUCH_AFTER
    });
    if old {
        // (futimens to now needs the owner, not a writable descriptor)
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
/// keys of 32 hexadecimal digits; `stats()` counts hits, misses, damaged entries,
/// entries written and writes that failed (a build goes on without them).
#[pyclass(module = "ingot._ingot", frozen)]
pub struct BuildCache {
    pub(crate) store: Arc<Store>,
}

#[pymethods]
impl BuildCache {
    #[new]
    #[pyo3(signature = (root, since = None))]
    fn new(root: PathBuf, since: Option<u64>) -> BuildCache {
        BuildCache { store: Store::new(root, since) }
    }

    /// The value put under `key`, or None (never there, or damaged: then counted).
    fn get(&self, py: Python<'_>, key: &str) -> PyResult<Option<std::borrow::Cow<'static, [u8]>>> {
        let key = parse_key(key)?;
        Ok(py.detach(|| self.store.read(key)).map(std::borrow::Cow::Owned))
    }

    /// Keeps `value` under `key` (best effort: a failed write is counted, not raised). A thread
    /// of the store's appends it to this process's segment: `flush()` waits for it.
    fn put(&self, key: &str, value: Vec<u8>) -> PyResult<()> {
        self.store.put(parse_key(key)?, value);
        Ok(())
    }

    /// Waits until every entry put so far is written.
    fn flush(&self, py: Python<'_>) {
        py.detach(|| self.store.flush());
    }

    /// Indexes what other processes (a build's pool) appended since the last look.
    fn refresh(&self, py: Python<'_>) {
        py.detach(|| self.store.refresh());
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

    /// When the build began (nanoseconds since the epoch): hits on entries written since are
    /// `fresh`. A build's other processes are given their builder's.
    #[getter]
    fn since(&self) -> u64 {
        self.store.since
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("ingot-bc-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        path
    }

    fn count(store: &Store, which: fn(&Counts) -> &AtomicU64) -> u64 {
        which(&store.counts).load(Ordering::Relaxed)
    }

    #[test]
    fn a_value_put_is_got_back_by_this_store_and_the_next() {
        let root = scratch("roundtrip");
        let store = Store::new(root.clone(), None);
        assert_eq!(store.read(7), None);
        store.put(7, b"compressed bytes".to_vec());
        store.put(8, Vec::new());
        store.flush();
        assert_eq!(store.read(7).as_deref(), Some(&b"compressed bytes"[..]));
        assert_eq!((count(&store, |c| &c.hits), count(&store, |c| &c.fresh)), (1, 1));
        assert_eq!(count(&store, |c| &c.misses), 1);
        let next = Store::new(root.clone(), None);
        assert_eq!(next.read(8).as_deref(), Some(&b""[..]));
        assert_eq!(next.read(7).as_deref(), Some(&b"compressed bytes"[..]));
        assert_eq!(count(&next, |c| &c.fresh), 0, "an earlier store's entries are reused");
        let segments = fs::read_dir(&root).unwrap().count();
        assert_eq!(segments, 1, "one segment per process");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn what_another_store_appends_is_seen_on_refresh() {
        let root = scratch("refresh");
        let reader = Store::new(root.clone(), None);
        assert_eq!(reader.read(1), None);
        let writer = Store::new(root.clone(), None);
        writer.put(1, b"one".to_vec());
        writer.flush();
        reader.refresh();
        assert_eq!(reader.read(1).as_deref(), Some(&b"one"[..]));
        assert_eq!(count(&reader, |c| &c.fresh), 1, "written since the reader opened");
        let _ = fs::remove_dir_all(&root);
    }

    /// The path of the only segment under `root`.
    fn segment(root: &Path) -> PathBuf {
        let mut found: Vec<PathBuf> =
            fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(found.len(), 1);
        found.pop().unwrap()
    }

    #[test]
    fn a_damaged_value_is_counted_not_returned_and_its_new_value_wins() {
        let root = scratch("damaged");
        let store = Store::new(root.clone(), None);
        for key in 1..=3u128 {
            store.put(key, format!("value number {key} of some length").into_bytes());
        }
        store.flush();
        let path = segment(&root);
        let mut bytes = fs::read(&path).unwrap();
        let second = SEGMENT_MAGIC.len() + 2 * RECORD_HEADER + 29 + 5; // in the second value
        bytes[second] ^= 0x55;
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap(); // and the third cut short
        let reader = Store::new(root.clone(), None);
        assert_eq!(reader.read(1).as_deref(), Some(&b"value number 1 of some length"[..]));
        assert_eq!(reader.read(2), None);
        assert_eq!(reader.read(3), None);
        assert_eq!(count(&reader, |c| &c.damaged), 1);
        assert_eq!(count(&reader, |c| &c.misses), 1, "a record cut short is not indexed");
        reader.flush();
        let again = Store::new(root.clone(), None);
        assert_eq!(again.read(2), None);
        assert_eq!(count(&again, |c| &c.damaged), 0, "found once: a tombstone follows it");
        reader.put(2, b"value number 2, again".to_vec());
        reader.flush();
        let next = Store::new(root.clone(), None);
        assert_eq!(next.read(2).as_deref(), Some(&b"value number 2, again"[..]));
        assert_eq!(count(&next, |c| &c.damaged), 0);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn files_that_are_not_segments_are_left_alone() {
        let root = scratch("foreign");
        create_private_dir(&root.join("ab")).unwrap();
        fs::write(root.join("0000000000000001-1.seg"), b"not a segment at all").unwrap();
        fs::write(root.join("notes.txt"), b"x").unwrap();
        let store = Store::new(root.clone(), None);
        assert_eq!(store.read(5), None);
        assert_eq!(count(&store, |c| &c.damaged), 0);
        let _ = fs::remove_dir_all(&root);
    }
}
