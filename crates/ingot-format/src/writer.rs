//! Writing an archive. The same entries give the same bytes, whatever order they were added in.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use xxhash_rust::xxh3::{xxh3_128, xxh3_64, Xxh3};

use crate::layout::{self, blob as B, entry as E, header as H, trailer as T};
use crate::{names, Error, Kind, Namespace, Result, Role};

/// What the writer records in the header, and how it stores blobs.
#[derive(Debug, Clone, Default)]
pub struct WriterOptions {
    /// `importlib.util.MAGIC_NUMBER` of the interpreter that compiled the bytecode.
    pub bytecode_magic: [u8; 4],
    /// (major, minor) of that interpreter.
    pub python_version: (u8, u8),
    /// Compress blobs with zstd at this level; a blob is stored compressed only when that makes it
    /// smaller, and never when a start reads it (a first-use entry's bytecode at level 0, ELF
    /// metadata, contents; see [`ArchiveWriter::set_first_use`]): those stay zero-copy. `None`
    /// stores everything as is (and bytecode is then read without a copy).
    pub zstd_level: Option<i32>,
    /// The zstd level of blobs larger than [`LARGE_BLOB`] (native code, data files, large
    /// modules), when compressing; `None`: `zstd_level`. A lower level builds faster, for a few
    /// percent of size (docs/benchmarks.md).
    pub large_zstd_level: Option<i32>,
    /// The zstd level of the native images a start reads (the content of a first-use extension
    /// module or shared library), when compressing; `None`: stored as is, like the rest of what a
    /// start reads. Native images are copied into memory files before the loader maps them, so
    /// storing them compressed costs a start their decompression (done ahead of the import, on
    /// the read-ahead thread), not a copy: see [`NATIVE_BLOB_MIN`].
    pub native_zstd_level: Option<i32>,
    /// Compress the bytecode a start reads too (at the levels above, when compressing): a
    /// smaller archive, whose start decompresses that bytecode instead of handing `marshal` the
    /// map's bytes (`ingot build --compress-start`; issue 42: a scipy app's 13.7 MiB of bytecode
    /// read by its start stored in 4). ELF metadata stays as is.
    pub compress_start_bytecode: bool,
}

/// The smallest native image a start reads that [`WriterOptions::native_zstd_level`] compresses by
/// default: smaller ones save little and cost a decompression each. Measured (issue 42, 2 CPUs,
/// farm-bench, 40 runs): an import of 455 stdlib modules with every native image compressed took
/// the same wall time as with none (median ratio 1.00; 16% more CPU, on the read-ahead thread);
/// on one CPU it was 18% slower (an earlier measurement), which is why small images stayed raw
/// before.
pub const NATIVE_BLOB_MIN: usize = LARGE_BLOB;

/// Blobs above this size are "large" ([`WriterOptions::large_zstd_level`]): those the dictionary
/// does not serve.
pub const LARGE_BLOB: usize = DICTIONARY_BLOB_LIMIT;

/// Where a writer keeps what it computed, for a later writer to take instead of computing it
/// again (`ingot build`'s build cache): compressed blobs and trained dictionaries, each under a
/// 128-bit key that covers everything its value depends on (the zstd version, the level, the
/// dictionary, the input). A store returns only what was put under a key, or nothing: it
/// checks its entries, since a damaged one would be written into archives.
pub trait WriterCache: Send + Sync {
    fn get(&self, key: u128) -> Option<Vec<u8>>;
    fn put(&self, key: u128, value: &[u8]);
}

/// Changes when the writer's way of compressing changes (parameters beyond the level): keys made
/// by another recipe miss.
const CACHE_RECIPE: &[u8] = b"ingot-writer-cache-1\0";

fn zstd_version() -> u32 {
    zstd::zstd_safe::version_number()
}

/// The key of `bytes` compressed at `level` with the dictionary whose hash is `dictionary`.
fn compressed_key(level: i32, dictionary: Option<u128>, bytes: &[u8]) -> u128 {
    let mut hasher = Xxh3::new();
    hasher.update(CACHE_RECIPE);
    hasher.update(b"blob\0");
    hasher.update(&zstd_version().to_le_bytes());
    hasher.update(&level.to_le_bytes());
    hasher.update(&dictionary.unwrap_or(0).to_le_bytes());
    hasher.update(&[u8::from(dictionary.is_some())]);
    hasher.update(bytes);
    hasher.digest128()
}

struct PendingEntry {
    kind: Kind,
    blobs: Vec<(Role, Vec<u8>)>,
}

/// Collects entries, then writes them as one archive.
pub struct ArchiveWriter {
    options: WriterOptions,
    entries: BTreeMap<(Namespace, String), PendingEntry>,
    /// Entries expected to be read at start-up, in the order they are expected to be read.
    first_use: BTreeMap<(Namespace, String), u32>,
    /// The zstd dictionary of small module blobs ([`ArchiveWriter::train_dictionary`]).
    dictionary: Option<Vec<u8>>,
    /// Entries whose blobs the dictionary is not trained on (they are still compressed with it).
    untrained: std::collections::BTreeSet<(Namespace, String)>,
    /// Where compressed blobs and dictionaries are looked up first, and kept.
    cache: Option<std::sync::Arc<dyn WriterCache>>,
}

/// The largest blob compressed with the dictionary: past this size a blob's own history
/// compresses it as well as a dictionary would.
const DICTIONARY_BLOB_LIMIT: usize = 64 << 10;

/// The samples a dictionary is trained on: at most this many times its size (zstd's advice).
const SAMPLES_PER_DICTIONARY_BYTE: usize = 100;

/// Whether a blob of an entry of `kind` is compressed with the archive's dictionary (when there
/// is one and it is compressed at all): the sources and bytecode of modules, which share most of
/// their vocabulary, and which are small.
fn uses_dictionary(kind: Kind, role: Role, size: usize) -> bool {
    matches!(kind, Kind::Module | Kind::Package)
        && matches!(role, Role::Source | Role::Bytecode(_))
        && size <= DICTIONARY_BLOB_LIMIT
}

/// Whether a start reads this blob of a first-use entry: not sources, nor the bytecode of
/// optimization levels the interpreter was not asked for.
fn read_at_start(role: Role) -> bool {
    !matches!(role, Role::Source | Role::Bytecode(1) | Role::Bytecode(2))
}

/// Whether a blob is the image of an extension module or a shared library.
fn is_native_image(kind: Kind, role: Role) -> bool {
    kind.is_native() && role == Role::Content
}

fn allowed_roles(kind: Kind) -> &'static [Role] {
    match kind {
        Kind::Module | Kind::Package => {
            &[Role::Source, Role::Bytecode(0), Role::Bytecode(1), Role::Bytecode(2)]
        }
        Kind::NamespacePackage => &[],
        Kind::ExtensionModule | Kind::ExtensionPackage => &[Role::Content, Role::Needed],
        Kind::DataFile | Kind::DistInfoFile => &[Role::Content],
        Kind::SharedLibrary => &[Role::Content, Role::Soname, Role::Needed],
    }
}

fn check_name(kind: Kind, name: &str) -> Result<()> {
    let invalid = |reason| Err(Error::InvalidName { name: name.to_string(), reason });
    if name.is_empty() {
        return invalid("empty");
    }
    if name.len() > u32::MAX as usize {
        return invalid("longer than 4 GiB");
    }
    if name.contains('\0') {
        return invalid("contains a NUL byte");
    }
    match kind.namespace() {
        Namespace::Modules => {
            if name.split('.').any(|part| part.is_empty()) {
                return invalid("a module name is dot-separated non-empty parts");
            }
            if name.contains(['/', '\\']) {
                return invalid("a module name has no path separators");
            }
        }
        Namespace::Files => {
            if name.starts_with('/') || name.contains('\\') {
                return invalid("a file name is a relative `/`-separated path");
            }
            if name.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
                return invalid("a file path has no empty, `.` or `..` parts");
            }
        }
        Namespace::Libraries => {
            if name.contains(['/', '\\']) || name == "." || name == ".." {
                return invalid("a shared library name is a file name without directories");
            }
        }
    }
    Ok(())
}

fn put_u32(buffer: &mut [u8], at: usize, value: u32) {
    buffer[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(buffer: &mut [u8], at: usize, value: u64) {
    buffer[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Where a blob of `role` goes in the data region: lower ranks first.
fn data_rank(role: Role) -> u8 {
    match role {
        Role::Bytecode(level) => level,
        Role::Soname | Role::Needed => 3,
        Role::Source => 4,
        Role::Content => 5,
    }
}

fn align(value: u64) -> u64 {
    value.div_ceil(layout::DATA_ALIGN) * layout::DATA_ALIGN
}

/// A blob as the archive stores it: its role, its compression, its stored bytes and its size once
/// decompressed; with the first-use rank and the kind of its entry.
struct StoredBlob<'a> {
    role: Role,
    compression: u8,
    bytes: Cow<'a, [u8]>,
    size: u64,
    rank: Option<u32>,
    kind: Kind,
}

/// How [`compress_blobs`] compresses: the zstd levels of blobs in general, of large ones and of
/// the native images a start reads (`None`: stored as is), the smallest native image a start
/// reads that is compressed, and whether the bytecode a start reads is compressed too.
#[derive(Clone, Copy)]
struct Levels {
    level: i32,
    large: i32,
    native: Option<i32>,
    native_min: usize,
    start_bytecode: bool,
}

/// Compresses `blobs` with zstd at `level`, each only if that makes it smaller, with the
/// archive's dictionary where it applies ([`uses_dictionary`]), and not one that a start reads
/// ([`read_at_start`] of a first-use entry), which stays zero-copy, unless [`is_compressed`] says
/// otherwise (large native images; bytecode when asked). `dictionary` comes with its hash; a
/// blob's compressed bytes come from `cache` when it has them.
fn compress_blobs<'b, 'a: 'b>(
    blobs: impl IntoIterator<Item = &'b mut StoredBlob<'a>>,
    levels: Levels,
    dictionary: Option<(&[u8], u128)>,
    cache: Option<&dyn WriterCache>,
) -> Result<()> {
    let Levels { level, large: large_level, native: native_level, .. } = levels;
    let mut plain = zstd::bulk::Compressor::new(level).map_err(Error::Write)?;
    let mut large = zstd::bulk::Compressor::new(large_level).map_err(Error::Write)?;
    let mut with_dictionary = match dictionary {
        Some((dictionary, _)) => {
            Some(zstd::bulk::Compressor::with_dictionary(level, dictionary).map_err(Error::Write)?)
        }
        None => None,
    };
    let mut native = match native_level {
        Some(native_level) => {
            Some(zstd::bulk::Compressor::new(native_level).map_err(Error::Write)?)
        }
        None => None,
    };
    for blob in blobs {
        let native_at_start = is_native_at_start(blob, levels);
        if !is_compressed(blob, levels) {
            // Read by a start: stays zero-copy (bytecode, ELF metadata, small native images).
            continue;
        }
        let dictionary_used =
            with_dictionary.is_some() && uses_dictionary(blob.kind, blob.role, blob.bytes.len());
        let tag = if dictionary_used {
            layout::compression::ZSTD_DICTIONARY
        } else {
            layout::compression::ZSTD
        };
        let is_large = !dictionary_used && blob.bytes.len() > LARGE_BLOB;
        let blob_level = match native_level {
            Some(native_level) if native_at_start => native_level,
            _ if is_large => large_level,
            _ => level,
        };
        let key = cache.map(|_| {
            let dictionary = dictionary.filter(|_| dictionary_used).map(|d| d.1);
            compressed_key(blob_level, dictionary, &blob.bytes)
        });
        // A cached blob is taken only if it gives back these bytes: a wrong one would be written
        // into the archive.
        let cached = cache
            .zip(key)
            .and_then(|(cache, key)| cache.get(key))
            .filter(|packed| decompresses_to(packed, &blob.bytes, dictionary_used, dictionary));
        let packed = match cached {
            Some(packed) => packed,
            None => {
                let packed = match (with_dictionary.as_mut(), native.as_mut()) {
                    (Some(compressor), _) if dictionary_used => compressor.compress(&blob.bytes),
                    (_, Some(compressor)) if native_at_start => compressor.compress(&blob.bytes),
                    _ if is_large => large.compress(&blob.bytes),
                    _ => plain.compress(&blob.bytes),
                }
                .map_err(Error::Write)?;
                if let Some((cache, key)) = cache.zip(key) {
                    cache.put(key, &packed);
                }
                packed
            }
        };
        if packed.len() < blob.bytes.len() {
            blob.compression = tag;
            blob.bytes = Cow::Owned(packed);
        }
    }
    Ok(())
}

/// Whether `blob` is a native image a start reads that is compressed anyway (large enough, and
/// a level asked for).
fn is_native_at_start(blob: &StoredBlob<'_>, levels: Levels) -> bool {
    blob.rank.is_some()
        && levels.native.is_some()
        && is_native_image(blob.kind, blob.role)
        && blob.bytes.len() >= levels.native_min
}

/// Whether the writer tries to compress `blob`: not when a start reads it in place (unless
/// asked to compress the bytecode a start reads).
fn is_compressed(blob: &StoredBlob<'_>, levels: Levels) -> bool {
    !(blob.rank.is_some() && read_at_start(blob.role))
        || is_native_at_start(blob, levels)
        || (levels.start_bytecode && matches!(blob.role, Role::Bytecode(_)))
}

/// Whether `packed` decompresses to `bytes` (with the dictionary when `dictionary_used`).
fn decompresses_to(
    packed: &[u8],
    bytes: &[u8],
    dictionary_used: bool,
    dictionary: Option<(&[u8], u128)>,
) -> bool {
    let decompressor = match dictionary.filter(|_| dictionary_used) {
        Some((dictionary, _)) => zstd::bulk::Decompressor::with_dictionary(dictionary),
        None => zstd::bulk::Decompressor::new(),
    };
    decompressor
        .and_then(|mut decompressor| decompressor.decompress(packed, bytes.len()))
        .is_ok_and(|unpacked| unpacked == bytes)
}

/// Where the header says the index's regions are.
struct Regions {
    entry_count: u32,
    blob_count: u32,
    entries_offset: u64,
    blobs_offset: u64,
    names_offset: u64,
    names_size: u64,
    data_offset: u64,
}

/// The data region: the order the blobs are written in, each blob's offset in the region (by blob
/// number) and the region's size.
struct DataLayout {
    order: Vec<usize>,
    offsets: Vec<u64>,
    size: u64,
}

impl DataLayout {
    /// Lays the data region out in two parts. First the blobs of the first-use entries that a
    /// start reads (bytecode at level 0, ELF metadata, contents), in first-use order. Then
    /// everything else by role, then entry order: all bytecode first, so the pages an importer
    /// touches are contiguous (fault-around and readahead then bring in bytecode, not sources),
    /// then the small ELF metadata, then sources, then file contents. Each blob is aligned.
    fn of(blobs: &[StoredBlob<'_>]) -> DataLayout {
        let mut order: Vec<usize> = (0..blobs.len()).collect();
        order.sort_by_key(|&number| {
            let blob = &blobs[number];
            match blob.rank {
                Some(rank) if read_at_start(blob.role) => (0, rank, data_rank(blob.role), number),
                _ => (1, 0, data_rank(blob.role), number),
            }
        });
        let mut offsets = vec![0u64; blobs.len()];
        let mut cursor = 0u64;
        for &number in &order {
            offsets[number] = cursor;
            cursor = align(cursor + blobs[number].bytes.len() as u64);
        }
        DataLayout { order, offsets, size: cursor }
    }
}

/// Writes the data region: the blobs in `order`, each padded to the alignment.
fn write_data(out: &mut impl Write, blobs: &[StoredBlob<'_>], order: &[usize]) -> Result<()> {
    let padding = [0u8; layout::DATA_ALIGN as usize];
    let mut written = 0u64;
    for &number in order {
        let bytes = &blobs[number].bytes;
        out.write_all(bytes).map_err(Error::Write)?;
        written += bytes.len() as u64;
        let aligned = align(written);
        out.write_all(&padding[..(aligned - written) as usize]).map_err(Error::Write)?;
        written = aligned;
    }
    Ok(())
}

impl ArchiveWriter {
    pub fn new(options: WriterOptions) -> ArchiveWriter {
        ArchiveWriter {
            options,
            entries: BTreeMap::new(),
            first_use: BTreeMap::new(),
            dictionary: None,
            untrained: std::collections::BTreeSet::new(),
            cache: None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether an entry of `kind`'s name space named `name` was added.
    pub fn contains(&self, kind: Kind, name: &str) -> bool {
        self.entries.contains_key(&(kind.namespace(), name.to_string()))
    }

    /// Adds one entry. A name is unique within its name space; each role at most once per entry.
    pub fn add(&mut self, kind: Kind, name: &str, mut blobs: Vec<(Role, Vec<u8>)>) -> Result<()> {
        check_name(kind, name)?;
        for (role, _) in &blobs {
            if !allowed_roles(kind).contains(role) {
                return Err(Error::InvalidRole {
                    kind: kind.label(),
                    name: name.to_string(),
                    role: role.label(),
                });
            }
        }
        blobs.sort_by_key(|(role, _)| role.tag());
        if blobs.windows(2).any(|pair| pair[0].0.tag() == pair[1].0.tag()) {
            return Err(Error::Malformed(format!("entry `{name}` has the same blob role twice")));
        }
        let key = (kind.namespace(), name.to_string());
        if let Some(existing) = self.entries.get(&key) {
            return Err(Error::Duplicate { kind: existing.kind.label(), name: name.to_string() });
        }
        self.entries.insert(key, PendingEntry { kind, blobs });
        Ok(())
    }

    /// Declares the entries a program is expected to read when it starts, in the order it is
    /// expected to read them (names not added are ignored; a name listed twice keeps its first
    /// place). Their bytecode (optimization level 0), ELF metadata and file contents go first in
    /// the data region, in that order, so that a cold start reads one contiguous stretch of the
    /// file instead of pages scattered over all of it. It changes where blobs are, not what an
    /// archive holds: readers follow the blob offsets either way.
    pub fn set_first_use(&mut self, order: impl IntoIterator<Item = (Namespace, String)>) {
        self.first_use.clear();
        for (rank, key) in order.into_iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            self.first_use.entry(key).or_insert(rank);
        }
    }

    /// Takes compressed blobs and dictionaries from `cache` when it has them, and puts there
    /// those computed ([`WriterCache`]). The archive is the same bytes either way.
    pub fn set_cache(&mut self, cache: std::sync::Arc<dyn WriterCache>) {
        self.cache = Some(cache);
    }

    /// Leaves these entries' blobs out of the dictionary's training samples (they are compressed
    /// with it all the same): an application's own modules, which change from one build to the
    /// next, so that the dictionary, and every blob compressed with it, stays the same.
    pub fn set_untrained(&mut self, entries: impl IntoIterator<Item = (Namespace, String)>) {
        self.untrained = entries.into_iter().collect();
    }

    /// Trains a zstd dictionary of at most `max_size` bytes on the module blobs that will be
    /// compressed (not those a start reads, see [`ArchiveWriter::set_first_use`], nor those of
    /// [`ArchiveWriter::set_untrained`]), adds it as the
    /// data file [`names::ZSTD_DICTIONARY`], and compresses those blobs with it. Returns the
    /// dictionary's size, or `None` when compression is off or there are too few such blobs for a
    /// dictionary to pay for itself (it is then not added). Call it after `set_first_use`.
    pub fn train_dictionary(&mut self, max_size: usize) -> Result<Option<usize>> {
        if self.options.zstd_level.is_none() || self.dictionary.is_some() {
            return Ok(self.dictionary.as_ref().map(Vec::len));
        }
        let mut samples: Vec<&[u8]> = Vec::new();
        for (key, entry) in &self.entries {
            if self.untrained.contains(key) {
                continue;
            }
            let first = self.first_use.contains_key(key);
            for (role, bytes) in &entry.blobs {
                if uses_dictionary(entry.kind, *role, bytes.len())
                    && !(first && read_at_start(*role))
                    && !bytes.is_empty()
                {
                    samples.push(bytes);
                }
            }
        }
        let total: usize = samples.iter().map(|sample| sample.len()).sum();
        // Too few samples, or too little of them, for a dictionary to pay for itself.
        if samples.len() < 64 || total < max_size.saturating_mul(8) {
            return Ok(None);
        }
        // More than that slows the trainer without a better dictionary: httpie's 33 MB of
        // samples trained in 2.1 s, every sixth of them (5.5 MB) in 0.4 s, for an archive 0.14%
        // larger. Every n-th sample, in entry order: the same inputs give the same dictionary.
        let enough = max_size.saturating_mul(SAMPLES_PER_DICTIONARY_BYTE);
        if total > enough {
            samples = samples.into_iter().step_by(total.div_ceil(enough)).collect();
        }
        let mut hasher = Xxh3::new();
        hasher.update(CACHE_RECIPE);
        hasher.update(b"dictionary\0");
        hasher.update(&zstd_version().to_le_bytes());
        hasher.update(&(max_size as u64).to_le_bytes());
        for sample in &samples {
            hasher.update(&(sample.len() as u64).to_le_bytes());
            hasher.update(sample);
        }
        let key = hasher.digest128();
        let cached = self.cache.as_ref().and_then(|cache| cache.get(key));
        let dictionary = match cached {
            Some(dictionary) if !dictionary.is_empty() && dictionary.len() <= max_size => {
                dictionary
            }
            _ => {
                let dictionary = zstd::dict::from_continuous(
                    &samples.concat(),
                    &samples.iter().map(|sample| sample.len()).collect::<Vec<_>>(),
                    max_size,
                )
                .map_err(Error::Write)?;
                if let Some(cache) = &self.cache {
                    cache.put(key, &dictionary);
                }
                dictionary
            }
        };
        let size = dictionary.len();
        self.add(
            Kind::DataFile,
            names::ZSTD_DICTIONARY,
            vec![(Role::Content, dictionary.clone())],
        )?;
        self.dictionary = Some(dictionary);
        Ok(Some(size))
    }

    /// Writes the archive to `out` and returns its size.
    pub fn write_to(&self, out: &mut impl Write) -> Result<u64> {
        let (entry_count, blob_count) = self.counts()?;
        let mut blobs = self.stored_blobs();
        if let Some(level) = self.options.zstd_level {
            let large = self.options.large_zstd_level.unwrap_or(level);
            let levels = Levels {
                level,
                large,
                native: self.options.native_zstd_level,
                native_min: NATIVE_BLOB_MIN,
                start_bytecode: self.options.compress_start_bytecode,
            };
            self.compress(&mut blobs, levels)?;
        }
        let regions = self.regions(entry_count, blob_count)?;
        let data = DataLayout::of(&blobs);
        let mut index = vec![0u8; regions.data_offset as usize];
        self.put_records(&mut index, &regions, &blobs, &data.offsets);
        self.put_header(&mut index, &regions, data.size);
        out.write_all(&index).map_err(Error::Write)?;
        write_data(out, &blobs, &data.order)?;
        let archive_size = regions.data_offset + data.size + layout::TRAILER_SIZE as u64;
        let mut trailer = [0u8; layout::TRAILER_SIZE];
        put_u64(&mut trailer, T::ARCHIVE_SIZE, archive_size);
        trailer[T::MAGIC..T::MAGIC + 8].copy_from_slice(&layout::TRAILER_MAGIC);
        out.write_all(&trailer).map_err(Error::Write)?;
        Ok(archive_size)
    }

    /// The number of entries and of blobs, as the header records them (u32).
    fn counts(&self) -> Result<(u32, u32)> {
        let entry_count =
            u32::try_from(self.entries.len()).map_err(|_| Error::TooLarge("too many entries"))?;
        let blob_total: usize = self.entries.values().map(|entry| entry.blobs.len()).sum();
        let blob_count =
            u32::try_from(blob_total).map_err(|_| Error::TooLarge("too many blobs"))?;
        Ok((entry_count, blob_count))
    }

    /// Every blob, in entry order then the entry's own order, as it is before compression, with
    /// the first-use rank and the kind of its entry.
    fn stored_blobs(&self) -> Vec<StoredBlob<'_>> {
        self.entries
            .iter()
            .flat_map(|(key, entry)| {
                let rank = self.first_use.get(key).copied();
                entry.blobs.iter().map(move |(role, bytes)| StoredBlob {
                    role: *role,
                    compression: layout::compression::NONE,
                    bytes: Cow::Borrowed(&bytes[..]),
                    size: bytes.len() as u64,
                    rank,
                    kind: entry.kind,
                })
            })
            .collect()
    }

    /// Compresses the blobs with zstd at `level` where that pays (see [`compress_blobs`]). Blobs
    /// are compressed independently: spread over the CPUs.
    fn compress(&self, blobs: &mut [StoredBlob<'_>], levels: Levels) -> Result<()> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
        let dictionary = self.dictionary.as_deref().map(|bytes| (bytes, xxh3_128(bytes)));
        let cache = self.cache.as_deref();
        // Shared out by size, the largest first, each to the least loaded thread so far: one
        // large native image (a scipy app's 34 MiB of OpenBLAS) does not leave the others idle.
        let mut sorted: Vec<&mut StoredBlob<'_>> =
            blobs.iter_mut().filter(|blob| is_compressed(blob, levels)).collect();
        sorted.sort_by_key(|blob| std::cmp::Reverse(blob.bytes.len()));
        let mut groups: Vec<(usize, Vec<&mut StoredBlob<'_>>)> =
            (0..threads).map(|_| (0, Vec::new())).collect();
        for blob in sorted {
            let least = groups.iter_mut().min_by_key(|(load, _)| *load).expect("a thread");
            least.0 += blob.bytes.len();
            least.1.push(blob);
        }
        std::thread::scope(|scope| -> Result<()> {
            let workers: Vec<_> = groups
                .into_iter()
                .filter(|(_, group)| !group.is_empty())
                .map(|(_, group)| {
                    scope.spawn(move || compress_blobs(group, levels, dictionary, cache))
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    /// Where the index's regions go: the header, the entry records, the blob records, the names,
    /// then (aligned) the data. An error if the names are too large for the u32 offsets of the
    /// entry records.
    fn regions(&self, entry_count: u32, blob_count: u32) -> Result<Regions> {
        let entries_offset = layout::HEADER_SIZE as u64;
        let blobs_offset = entries_offset + entry_count as u64 * layout::ENTRY_SIZE as u64;
        let names_offset = blobs_offset + blob_count as u64 * layout::BLOB_SIZE as u64;
        let names_size: u64 = self.entries.keys().map(|(_, name)| name.len() as u64).sum();
        // Entry records address the name region with u32 offsets.
        if names_size > u32::MAX as u64 {
            return Err(Error::TooLarge("entry names total more than 4 GiB"));
        }
        Ok(Regions {
            entry_count,
            blob_count,
            entries_offset,
            blobs_offset,
            names_offset,
            names_size,
            data_offset: align(names_offset + names_size),
        })
    }

    /// Writes the entry records, the names and the blob records (`blobs` in entry order, each at
    /// its offset in the data region) into `index`.
    fn put_records(
        &self,
        index: &mut [u8],
        regions: &Regions,
        blobs: &[StoredBlob<'_>],
        offsets: &[u64],
    ) {
        let mut name_cursor = 0u64;
        let mut blob_cursor = 0u32;
        for (number, ((_, name), entry)) in self.entries.iter().enumerate() {
            let record = layout::HEADER_SIZE + number * layout::ENTRY_SIZE;
            put_u32(index, record + E::NAME_OFFSET, name_cursor as u32);
            put_u32(index, record + E::NAME_SIZE, name.len() as u32);
            index[record + E::KIND] = entry.kind.tag();
            put_u32(index, record + E::FIRST_BLOB, blob_cursor);
            put_u32(index, record + E::BLOB_COUNT, entry.blobs.len() as u32);
            let name_at = (regions.names_offset + name_cursor) as usize;
            index[name_at..name_at + name.len()].copy_from_slice(name.as_bytes());
            name_cursor += name.len() as u64;
            for _ in &entry.blobs {
                let blob = &blobs[blob_cursor as usize];
                let record =
                    (regions.blobs_offset as usize) + blob_cursor as usize * layout::BLOB_SIZE;
                index[record + B::ROLE] = blob.role.tag();
                index[record + B::COMPRESSION] = blob.compression;
                put_u64(index, record + B::OFFSET, offsets[blob_cursor as usize]);
                put_u64(index, record + B::STORED_SIZE, blob.bytes.len() as u64);
                put_u64(index, record + B::SIZE, blob.size);
                put_u64(index, record + B::CHECKSUM, xxh3_64(&blob.bytes));
                blob_cursor += 1;
            }
        }
    }

    /// Writes the header into `index` (whose records are written): the regions, the
    /// interpreter's facts, and last the checksum of the whole index.
    fn put_header(&self, index: &mut [u8], regions: &Regions, data_size: u64) {
        index[H::MAGIC..H::MAGIC + 8].copy_from_slice(&layout::HEADER_MAGIC);
        put_u32(index, H::VERSION, layout::VERSION);
        put_u32(index, H::ENTRY_COUNT, regions.entry_count);
        put_u32(index, H::BLOB_COUNT, regions.blob_count);
        put_u64(index, H::ENTRIES_OFFSET, regions.entries_offset);
        put_u64(index, H::BLOBS_OFFSET, regions.blobs_offset);
        put_u64(index, H::NAMES_OFFSET, regions.names_offset);
        put_u64(index, H::NAMES_SIZE, regions.names_size);
        put_u64(index, H::DATA_OFFSET, regions.data_offset);
        put_u64(index, H::DATA_SIZE, data_size);
        index[H::BYTECODE_MAGIC..H::BYTECODE_MAGIC + 4]
            .copy_from_slice(&self.options.bytecode_magic);
        index[H::PYTHON_MAJOR] = self.options.python_version.0;
        index[H::PYTHON_MINOR] = self.options.python_version.1;
        let mut hasher = Xxh3::new();
        hasher.update(&index[..H::INDEX_CHECKSUM]);
        hasher.update(&index[layout::HEADER_SIZE..]);
        put_u64(index, H::INDEX_CHECKSUM, hasher.digest());
    }

    /// The whole archive in memory.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the archive to `path` through a temporary file in the same directory, renamed into
    /// place once complete, so that a reader never sees half an archive.
    pub fn write_file(&self, path: &Path) -> Result<u64> {
        let io_error = |source| Error::Io { path: path.to_path_buf(), source };
        let directory =
            path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file_name = path.file_name().ok_or_else(|| {
            io_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))
        })?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(file_name);
        temporary_name.push(format!(".{}.tmp", std::process::id()));
        let temporary = directory.join(temporary_name);
        let result = (|| {
            let file = std::fs::File::create(&temporary).map_err(io_error)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let size = self.write_to(&mut out)?;
            let file = out.into_inner().map_err(|error| io_error(error.into_error()))?;
            file.sync_all().map_err(io_error)?;
            std::fs::rename(&temporary, path).map_err(io_error)?;
            Ok(size)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result
    }
}
