//! Reading an archive in place.
//!
//! Opening checks the header and one checksum over the index bytes, and nothing per entry: no
//! table is built and nothing is parsed until a lookup touches it. Every offset that comes from the
//! archive is checked before use; malformed bytes give an [`Error`], never a panic or an
//! out-of-bounds read.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::layout::{self, blob as B, entry as E, header as H, trailer as T};
use crate::{names, Error, Kind, Namespace, Result, Role};

/// The fixed header, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub entry_count: u32,
    pub blob_count: u32,
    entries_offset: usize,
    blobs_offset: usize,
    names_offset: usize,
    names_size: usize,
    data_offset: usize,
    data_size: usize,
    /// `importlib.util.MAGIC_NUMBER` of the interpreter that compiled the bytecode.
    pub bytecode_magic: [u8; 4],
    /// (major, minor) of that interpreter.
    pub python_version: (u8, u8),
}

enum Backing {
    /// A file's map, with the file itself and its identity (device, inode) when opened: see
    /// [`Archive::copy_blob`].
    Mmap(memmap2::Mmap, File, (u64, u64)),
    Owned(Vec<u8>),
    Static(&'static [u8]),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mmap(map, ..) => map,
            Backing::Owned(vec) => vec,
            Backing::Static(bytes) => bytes,
        }
    }
}

/// An open archive.
pub struct Archive {
    backing: Backing,
    /// Where the archive starts within the backing bytes (non-zero when appended to a file).
    start: usize,
    /// The archive's size, header to trailer end.
    size: usize,
    header: Header,
    /// One bit per blob: set once the blob's checksum has been verified.
    verified: Box<[AtomicU64]>,
    /// The zstd dictionary ([`names::ZSTD_DICTIONARY`]), loaded on first use.
    dictionary:
        std::sync::OnceLock<std::result::Result<zstd::dict::DecoderDictionary<'static>, String>>,
}

/// One entry of the archive, borrowed from it.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    archive: &'a Archive,
    index: u32,
    kind_tag: u8,
    name: &'a str,
    first_blob: u32,
    blob_count: u32,
}

/// One blob record of an entry, as read (and range-checked) by the archive it came from.
///
/// The fields are private: a `Blob` can only be made by its archive, so reading it needs no new
/// check beyond "is this blob of this archive" (the archive's address, which cannot change while
/// the blob borrows it).
#[derive(Debug, Clone, Copy)]
pub struct Blob<'a> {
    archive: usize,
    index: u32,
    entry_name: &'a str,
    role: Role,
    compression: u8,
    offset: usize,
    stored_size: u64,
    size: u64,
    checksum: u64,
}

impl Blob<'_> {
    /// The blob's number in its archive: a key that tells blobs of one archive apart.
    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// `layout::compression::NONE` or `ZSTD`.
    pub fn compression(&self) -> u8 {
        self.compression
    }

    /// Bytes in the archive.
    pub fn stored_size(&self) -> u64 {
        self.stored_size
    }

    /// Bytes once decompressed.
    pub fn size(&self) -> u64 {
        self.size
    }
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    // Callers pass ranges they have checked; a short slice still cannot panic here.
    let mut word = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        word.copy_from_slice(src);
    }
    u32::from_le_bytes(word)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        word.copy_from_slice(src);
    }
    u64::from_le_bytes(word)
}

fn to_usize(value: u64, what: &str) -> Result<usize> {
    usize::try_from(value)
        .map_err(|_| Error::Malformed(format!("{what} {value} does not fit in memory")))
}

/// Checks that `offset..offset+len` lies within `0..size` and returns the end.
fn span(what: &str, offset: usize, len: usize, size: usize) -> Result<usize> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(end),
        end => Err(Error::Truncated {
            what: what.to_string(),
            start: offset as u64,
            end: end.map_or(u64::MAX, |end| end as u64),
            size: size as u64,
        }),
    }
}

impl Archive {
    /// Maps `path` read-only and opens the archive in it: a whole archive file, or a file (such as
    /// an executable) with an archive appended.
    pub fn open_path(path: &Path) -> Result<Archive> {
        let io_error = |source| Error::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_error)?;
        let metadata = file.metadata().map_err(io_error)?;
        if metadata.is_dir() {
            return Err(io_error(std::io::Error::other("it is a directory, not an archive file")));
        }
        let length = metadata.len();
        if length == 0 {
            return Err(Error::NotAnArchive);
        }
        // SAFETY: the map is read-only and private. Another process truncating the file while it
        // is mapped would raise SIGBUS on access; that is the documented limit of every mmap-based
        // reader (zipimport reads instead, and pays for it on every import).
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(io_error)?;
        let identity = (
            std::os::unix::fs::MetadataExt::dev(&metadata),
            std::os::unix::fs::MetadataExt::ino(&metadata),
        );
        Archive::from_backing(Backing::Mmap(map, file, identity))
    }

    /// Opens an archive held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Result<Archive> {
        Archive::from_backing(Backing::Owned(bytes))
    }

    /// Opens an archive in static memory (e.g. linked into a binary).
    pub fn from_static(bytes: &'static [u8]) -> Result<Archive> {
        Archive::from_backing(Backing::Static(bytes))
    }

    fn from_backing(backing: Backing) -> Result<Archive> {
        let bytes = backing.bytes();
        let (start, size) = locate(bytes)?;
        let archive_bytes = &bytes[start..start + size];
        let header = parse_header(archive_bytes)?;
        let words = (header.blob_count as usize).div_ceil(64);
        let verified = (0..words).map(|_| AtomicU64::new(0)).collect();
        Ok(Archive {
            backing,
            start,
            size,
            header,
            verified,
            dictionary: std::sync::OnceLock::new(),
        })
    }

    /// The archive's bytes, header to trailer.
    pub fn bytes(&self) -> &[u8] {
        &self.backing.bytes()[self.start..self.start + self.size]
    }

    /// Offset of the archive within the file or buffer it was opened from.
    pub fn start_offset(&self) -> u64 {
        self.start as u64
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn len(&self) -> usize {
        self.header.entry_count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.header.entry_count == 0
    }

    /// The raw sort key of entry `index`: its name space tag and its name bytes.
    fn key(&self, index: u32) -> Result<(u8, &[u8])> {
        let record = self.record(index)?;
        let kind_tag = record[E::KIND];
        let name = self.name_bytes(index, record)?;
        Ok((namespace_of(kind_tag), name))
    }

    fn record(&self, index: u32) -> Result<&[u8]> {
        let at = self.header.entries_offset + index as usize * layout::ENTRY_SIZE;
        // In range: parse_header checked the whole entry table.
        self.bytes()
            .get(at..at + layout::ENTRY_SIZE)
            .ok_or_else(|| Error::Malformed(format!("entry {index} is outside the entry table")))
    }

    fn name_bytes(&self, index: u32, record: &[u8]) -> Result<&[u8]> {
        let offset = read_u32(record, E::NAME_OFFSET) as usize;
        let len = read_u32(record, E::NAME_SIZE) as usize;
        let end = offset.checked_add(len).filter(|end| *end <= self.header.names_size).ok_or_else(
            || {
                Error::Malformed(format!(
                "entry {index}: name bytes {offset}+{len} lie outside the name region of {} bytes",
                self.header.names_size
            ))
            },
        )?;
        let start = self.header.names_offset + offset;
        Ok(&self.bytes()[start..self.header.names_offset + end])
    }

    /// Entry `index` of the table.
    pub fn entry(&self, index: u32) -> Result<Entry<'_>> {
        if index >= self.header.entry_count {
            return Err(Error::Malformed(format!("entry {index} does not exist")));
        }
        let record = self.record(index)?;
        let name_bytes = self.name_bytes(index, record)?;
        let name = std::str::from_utf8(name_bytes)
            .map_err(|_| Error::Malformed(format!("entry {index}: name is not UTF-8")))?;
        if record[E::FLAGS] != 0
            || record[E::RESERVED..E::FIRST_BLOB] != [0, 0]
            || read_u32(record, E::RESERVED2) != 0
        {
            return Err(Error::Malformed(format!(
                "entry `{name}`: flags or reserved bytes are not zero in version 1"
            )));
        }
        let first_blob = read_u32(record, E::FIRST_BLOB);
        let blob_count = read_u32(record, E::BLOB_COUNT);
        match first_blob.checked_add(blob_count) {
            Some(end) if end <= self.header.blob_count => {}
            _ => {
                return Err(Error::Malformed(format!(
                "entry `{name}`: blobs {first_blob}+{blob_count} lie outside the blob table of {}",
                self.header.blob_count
            )))
            }
        }
        Ok(Entry { archive: self, index, kind_tag: record[E::KIND], name, first_blob, blob_count })
    }

    /// First index whose key is not less than (`namespace`, `name`).
    fn lower_bound(&self, namespace: u8, name: &[u8]) -> Result<u32> {
        let (mut low, mut high) = (0u32, self.header.entry_count);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.key(middle)? < (namespace, name) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }

    /// Looks up one entry by name space and name: a binary search over the mapped entry table.
    pub fn find(&self, namespace: Namespace, name: &str) -> Result<Option<Entry<'_>>> {
        let index = self.lower_bound(namespace.tag(), name.as_bytes())?;
        if index < self.header.entry_count && self.key(index)? == (namespace.tag(), name.as_bytes())
        {
            return self.entry(index).map(Some);
        }
        Ok(None)
    }

    /// The entries of `namespace` whose names start with `prefix`, in name order.
    pub fn find_prefix<'a>(
        &'a self,
        namespace: Namespace,
        prefix: &'a str,
    ) -> Result<impl Iterator<Item = Result<Entry<'a>>> + 'a> {
        let start = self.lower_bound(namespace.tag(), prefix.as_bytes())?;
        let tag = namespace.tag();
        Ok((start..self.header.entry_count)
            .map(move |index| -> Result<Option<Entry<'a>>> {
                let (entry_namespace, name) = self.key(index)?;
                if entry_namespace != tag || !name.starts_with(prefix.as_bytes()) {
                    return Ok(None);
                }
                self.entry(index).map(Some)
            })
            .map_while(|item| item.transpose()))
    }

    /// Every entry, in table order.
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry<'_>>> + '_ {
        (0..self.header.entry_count).map(move |index| self.entry(index))
    }

    /// Reads blob record `index` of the table.
    fn blob<'a>(&'a self, index: u32, entry_name: &'a str) -> Result<Blob<'a>> {
        let at = self.header.blobs_offset + index as usize * layout::BLOB_SIZE;
        let record = self
            .bytes()
            .get(at..at + layout::BLOB_SIZE)
            .ok_or_else(|| Error::Malformed(format!("blob {index} is outside the blob table")))?;
        let role = Role::from_tag(record[B::ROLE]).ok_or_else(|| {
            Error::Malformed(format!("entry `{entry_name}`: unknown blob role {}", record[B::ROLE]))
        })?;
        if record[B::RESERVED..B::OFFSET].iter().any(|byte| *byte != 0) {
            return Err(Error::Malformed(format!(
                "entry `{entry_name}`: reserved bytes of its {} blob record are not zero",
                role.label()
            )));
        }
        let compression = record[B::COMPRESSION];
        if !matches!(
            compression,
            layout::compression::NONE
                | layout::compression::ZSTD
                | layout::compression::ZSTD_DICTIONARY
        ) {
            return Err(Error::Malformed(format!(
                "entry `{entry_name}`: unknown compression {compression} for its {} blob",
                role.label()
            )));
        }
        let offset = read_u64(record, B::OFFSET);
        let stored_size = read_u64(record, B::STORED_SIZE);
        let size = read_u64(record, B::SIZE);
        let checksum = read_u64(record, B::CHECKSUM);
        let in_data =
            offset.checked_add(stored_size).is_some_and(|end| end <= self.header.data_size as u64);
        if !in_data {
            return Err(Error::Malformed(format!(
                "entry `{entry_name}`: {} bytes {offset}+{stored_size} lie outside the data region of {} bytes",
                role.label(),
                self.header.data_size
            )));
        }
        if compression == layout::compression::NONE && size != stored_size {
            return Err(Error::Malformed(format!(
                "entry `{entry_name}`: uncompressed {} blob has stored size {stored_size} but size {size}",
                role.label()
            )));
        }
        Ok(Blob {
            archive: self as *const Archive as usize,
            index,
            entry_name,
            role,
            compression,
            offset: self.header.data_offset + offset as usize,
            stored_size,
            size,
            checksum,
        })
    }

    /// Checks `blob`'s stored bytes against its checksum now, as its first read would (once per
    /// blob: later reads skip the check). Reading ahead of use, on another thread, this takes the
    /// check and the page faults off the reader's path.
    pub fn verify_blob(&self, blob: &Blob<'_>) -> Result<()> {
        self.stored(blob).map(|_| ())
    }

    /// The stored bytes of `blob`, checked against its checksum the first time they are read.
    fn stored<'a>(&'a self, blob: &Blob<'_>) -> Result<&'a [u8]> {
        let stored = self.stored_unchecked(blob)?;
        if !self.is_verified(blob) {
            let found = xxh3_64(stored);
            if found != blob.checksum {
                return Err(Error::DataChecksum {
                    entry: blob.entry_name.to_string(),
                    role: blob.role.label(),
                    found,
                    expected: blob.checksum,
                });
            }
            self.mark_verified(blob);
        }
        Ok(stored)
    }

    /// The stored bytes of `blob` in the map, not checked against its checksum: only for a blob of
    /// this archive (an error otherwise).
    fn stored_unchecked<'a>(&'a self, blob: &Blob<'_>) -> Result<&'a [u8]> {
        // Only this archive's `Archive::blob` makes blobs carrying its address, and it checked
        // their range; a blob of another archive is refused.
        if blob.archive != self as *const Archive as usize {
            return Err(Error::Malformed(format!(
                "entry `{}`: {} blob {} is not a blob of this archive",
                blob.entry_name,
                blob.role.label(),
                blob.index
            )));
        }
        self.bytes()
            .get(blob.offset..blob.offset.saturating_add(blob.stored_size as usize))
            .ok_or_else(|| {
                Error::Malformed(format!(
                    "entry `{}`: blob {} out of range",
                    blob.entry_name, blob.index
                ))
            })
    }

    fn is_verified(&self, blob: &Blob<'_>) -> bool {
        self.verified
            .get(blob.index as usize / 64)
            .is_some_and(|word| word.load(Ordering::Acquire) & (1u64 << (blob.index % 64)) != 0)
    }

    fn mark_verified(&self, blob: &Blob<'_>) {
        if let Some(word) = self.verified.get(blob.index as usize / 64) {
            word.fetch_or(1u64 << (blob.index % 64), Ordering::AcqRel);
        }
    }

    /// Where the stored bytes of `blob` lie in [`Archive::bytes`], without reading or checking them.
    pub fn stored_range(&self, blob: &Blob<'_>) -> Option<std::ops::Range<usize>> {
        let stored = self.stored_unchecked(blob).ok()?;
        let start = stored.as_ptr() as usize - self.bytes().as_ptr() as usize;
        Some(start..start + stored.len())
    }

    /// The bytes of `blob` as stored (compressed or not), checked against its checksum.
    pub fn stored_bytes<'a>(&'a self, blob: &Blob<'_>) -> Result<&'a [u8]> {
        self.stored(blob)
    }

    /// The bytes of `blob`: borrowed from the map when stored uncompressed, decompressed
    /// otherwise.
    ///
    /// The stored bytes of a compressed blob are read from the file when the archive was opened
    /// from one, not through the map (see [`Archive::copy_blob`]): they are read once, to be
    /// decompressed, and a fault in the map would bring in the whole page-cache folio around them
    /// (megabytes of other blobs, counted in the process's memory).
    ///
    /// So are small uncompressed blobs (up to [`SMALL_BLOB`]) that nothing has read yet: a blob
    /// the first-use read-ahead has checked is already mapped and is borrowed from the map, but the
    /// ELF metadata of an extension module imported later would fault in its whole folio.
    pub fn data<'a>(&'a self, blob: &Blob<'_>) -> Result<Cow<'a, [u8]>> {
        if blob.compression == layout::compression::NONE {
            if blob.stored_size <= SMALL_BLOB && !self.is_verified(blob) {
                if let Some(bytes) = self.stored_from_file(blob) {
                    return Ok(Cow::Owned(bytes));
                }
            }
            return self.stored(blob).map(Cow::Borrowed);
        }
        let read = self.stored_from_file(blob);
        let stored: &[u8] = match &read {
            Some(bytes) => bytes,
            None => self.stored(blob)?,
        };
        let decompress_error = |source| Error::Decompress {
            entry: blob.entry_name.to_string(),
            role: blob.role.label(),
            source,
        };
        let size = to_usize(blob.size, "decompressed size")?;
        let dictionary = match blob.compression {
            layout::compression::ZSTD_DICTIONARY => Some(self.dictionary(blob)?),
            _ => None,
        };
        if size <= ONE_SHOT_MAX {
            // In one call. A failure (more bytes than declared, a damaged frame) is read again
            // below, which says which.
            let mut out = Vec::with_capacity(size);
            if decompress_once(&mut out, stored, dictionary).is_ok() {
                return self.checked_size(blob, out);
            }
        }
        // The declared size comes from the archive: never trust it for a large allocation up
        // front, and never read past it.
        let mut out = Vec::with_capacity(size.min(16 << 20));
        if let Some(dictionary) = dictionary {
            let decoder = zstd::stream::read::Decoder::with_prepared_dictionary(stored, dictionary)
                .map_err(decompress_error)?;
            decoder
                .take(blob.size.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(decompress_error)?;
        } else {
            let decoder =
                zstd::stream::read::Decoder::with_buffer(stored).map_err(decompress_error)?;
            decoder
                .take(blob.size.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(decompress_error)?;
        }
        self.checked_size(blob, out)
    }

    /// `out`, if it holds as many bytes as `blob` declares.
    fn checked_size<'a>(&self, blob: &Blob<'_>, out: Vec<u8>) -> Result<Cow<'a, [u8]>> {
        if out.len() as u64 != blob.size {
            return Err(Error::Malformed(format!(
                "entry `{}`: {} blob decompressed to {} bytes, expected {}",
                blob.entry_name,
                blob.role.label(),
                out.len(),
                blob.size
            )));
        }
        Ok(Cow::Owned(out))
    }

    /// Decompresses `blob` (compressed) into `out`, which holds as many bytes as it declares, in
    /// one call. Nothing of its size comes from the allocator: its stored bytes are read from the
    /// archive's file into a map of their own (else taken from the archive's map), and a
    /// streaming decoder's window is not needed. (glibc raises its threshold for mapping an
    /// allocation to the size of the largest mapped one freed: a native image of megabytes
    /// decompressed through `malloc` left a threaded server's arenas megabytes larger.)
    pub fn decompress_into(&self, blob: &Blob<'_>, out: &mut [u8]) -> Result<()> {
        if blob.compression == layout::compression::NONE || out.len() as u64 != blob.size {
            return Err(Error::Malformed(format!(
                "entry `{}`: {} blob: not a compressed blob of {} bytes",
                blob.entry_name,
                blob.role.label(),
                out.len()
            )));
        }
        let mapped = self.stored_from_file_mapped(blob);
        let stored: &[u8] = match &mapped {
            Some(map) => map,
            None => self.stored(blob)?,
        };
        let dictionary = match blob.compression {
            layout::compression::ZSTD_DICTIONARY => Some(self.dictionary(blob)?),
            _ => None,
        };
        match decompress_once(out, stored, dictionary) {
            Ok(size) if size == out.len() => Ok(()),
            Ok(size) => Err(Error::Malformed(format!(
                "entry `{}`: {} blob decompressed to {size} bytes, expected {}",
                blob.entry_name,
                blob.role.label(),
                blob.size
            ))),
            Err(code) => Err(Error::Decompress {
                entry: blob.entry_name.to_string(),
                role: blob.role.label(),
                source: std::io::Error::other(zstd::zstd_safe::get_error_name(code)),
            }),
        }
    }

    /// Writes the bytes of `blob` (decompressed) to `out` and returns how many there were, checking
    /// the stored bytes against the blob's checksum on the way.
    ///
    /// When the archive was opened from a file ([`Archive::open_path`]), the stored bytes are read
    /// from the file through a small buffer rather than through the map, so that none of their
    /// pages becomes resident in this process: copying a large blob (a native library into a
    /// memory file) through the map would leave megabytes of it counted in the process's memory.
    /// The map stays the reference: if the file can no longer be read as the one mapped (its
    /// descriptor closed or reused by the program), or its bytes do not match, the copy starts
    /// over from the map, which `out` must then accept from its start again (it is told so by a
    /// call to `restart`).
    ///
    /// On error, `out` may hold part of the bytes: discard them.
    pub fn copy_blob<W: std::io::Write>(
        &self,
        blob: &Blob<'_>,
        out: &mut W,
        mut restart: impl FnMut(&mut W) -> std::io::Result<()>,
    ) -> Result<u64> {
        let in_map = self.stored_unchecked(blob)?;
        if let Backing::Mmap(_, file, identity) = &self.backing {
            let same_file = file.metadata().is_ok_and(|now| {
                (
                    std::os::unix::fs::MetadataExt::dev(&now),
                    std::os::unix::fs::MetadataExt::ino(&now),
                ) == *identity
            });
            if same_file {
                let source = StoredReader::File { file, at: (self.start + blob.offset) as u64 };
                match self.copy_from(blob, source, out) {
                    Ok(size) => return Ok(size),
                    // Bytes from the file that fail a check, or a failed read: the map decides.
                    Err(
                        Error::DataChecksum { .. }
                        | Error::Decompress { .. }
                        | Error::Malformed(_)
                        | Error::Copy { reading: true, .. },
                    ) => {
                        restart(out).map_err(|source| copy_error(blob, false, source))?;
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        self.copy_from(blob, StoredReader::Bytes(in_map), out)
    }

    fn copy_from(
        &self,
        blob: &Blob<'_>,
        source: StoredReader<'_>,
        out: &mut impl std::io::Write,
    ) -> Result<u64> {
        let mut stored =
            Checked { source, left: blob.stored_size, hasher: Xxh3::new(), failed: None };
        let decompress_error = |source| Error::Decompress {
            entry: blob.entry_name.to_string(),
            role: blob.role.label(),
            source,
        };
        let written = match blob.compression {
            layout::compression::NONE => pump(&mut stored, out, blob)?,
            compression => {
                let buffered = std::io::BufReader::with_capacity(COPY_BUFFER, &mut stored);
                let copied = if compression == layout::compression::ZSTD_DICTIONARY {
                    let dictionary = self.dictionary(blob)?;
                    let decoder =
                        zstd::stream::read::Decoder::with_prepared_dictionary(buffered, dictionary)
                            .map_err(decompress_error)?;
                    pump(&mut decoder.take(blob.size.saturating_add(1)), out, blob)
                } else {
                    let decoder = zstd::stream::read::Decoder::with_buffer(buffered)
                        .map_err(decompress_error)?;
                    pump(&mut decoder.take(blob.size.saturating_add(1)), out, blob)
                };
                let copied = match copied {
                    // A failure to read the stored bytes shows up as one to decompress them.
                    Err(Error::Copy { reading: true, source, .. }) => match stored.failed.take() {
                        Some(failed) => return Err(copy_error(blob, true, failed)),
                        None => return Err(decompress_error(source)),
                    },
                    other => other?,
                };
                // The checksum covers every stored byte, also any after the frame's end.
                std::io::copy(&mut stored, &mut std::io::sink())
                    .map_err(|source| copy_error(blob, true, source))?;
                copied
            }
        };
        if let Some(failed) = stored.failed.take() {
            return Err(copy_error(blob, true, failed));
        }
        let found = stored.hasher.digest();
        if found != blob.checksum {
            return Err(Error::DataChecksum {
                entry: blob.entry_name.to_string(),
                role: blob.role.label(),
                found,
                expected: blob.checksum,
            });
        }
        if written != blob.size {
            return Err(Error::Malformed(format!(
                "entry `{}`: {} blob holds {written} bytes, expected {}",
                blob.entry_name,
                blob.role.label(),
                blob.size
            )));
        }
        self.mark_verified(blob);
        Ok(written)
    }

    /// The stored bytes of `blob` read from the archive's file, checked against the blob's
    /// checksum; None when the archive is not a file's, or the read fails or does not match (the
    /// map then decides: the file's descriptor may have been closed, or reused, by the program).
    fn stored_from_file(&self, blob: &Blob<'_>) -> Option<Vec<u8>> {
        let Backing::Mmap(_, file, _) = &self.backing else { return None };
        self.stored_unchecked(blob).ok()?; // a blob of this archive, in range
        let size = usize::try_from(blob.stored_size).ok()?;
        let bytes = read_exact_at(file, size, (self.start + blob.offset) as u64).ok()?;
        if xxh3_64(&bytes) != blob.checksum {
            return None;
        }
        self.mark_verified(blob);
        Some(bytes)
    }

    /// [`Self::stored_from_file`], into an anonymous map rather than an allocation.
    fn stored_from_file_mapped(&self, blob: &Blob<'_>) -> Option<memmap2::MmapMut> {
        let Backing::Mmap(_, file, _) = &self.backing else { return None };
        self.stored_unchecked(blob).ok()?; // a blob of this archive, in range
        let size = usize::try_from(blob.stored_size).ok().filter(|&size| size > 0)?;
        let mut map = memmap2::MmapMut::map_anon(size).ok()?;
        std::os::unix::fs::FileExt::read_exact_at(
            file,
            &mut map,
            (self.start + blob.offset) as u64,
        )
        .ok()?;
        if xxh3_64(&map) != blob.checksum {
            return None;
        }
        self.mark_verified(blob);
        Some(map)
    }

    /// The archive's zstd dictionary, for `blob` (named in errors).
    fn dictionary(&self, blob: &Blob<'_>) -> Result<&zstd::dict::DecoderDictionary<'static>> {
        let loaded = self.dictionary.get_or_init(|| {
            let entry = match self.find(Namespace::Files, names::ZSTD_DICTIONARY) {
                Ok(Some(entry)) => entry,
                Ok(None) => return Err(format!("the archive has no `{}`", names::ZSTD_DICTIONARY)),
                Err(error) => return Err(error.to_string()),
            };
            let blob = match entry.blob(Role::Content) {
                Ok(Some(blob)) if blob.compression != layout::compression::ZSTD_DICTIONARY => blob,
                Ok(_) => {
                    return Err(format!(
                        "`{}` has no content readable without itself",
                        names::ZSTD_DICTIONARY
                    ))
                }
                Err(error) => return Err(error.to_string()),
            };
            match self.data(&blob) {
                Ok(bytes) => Ok(zstd::dict::DecoderDictionary::copy(&bytes)),
                Err(error) => Err(error.to_string()),
            }
        });
        loaded.as_ref().map_err(|why| {
            Error::Malformed(format!(
                "entry `{}`: {} blob needs the archive's zstd dictionary: {why}",
                blob.entry_name,
                blob.role.label()
            ))
        })
    }

    /// Reads and checks every blob of the archive.
    pub fn verify_all(&self) -> Result<()> {
        for entry in self.entries() {
            let entry = entry?;
            for blob in entry.blobs() {
                self.data(&blob?)?;
            }
        }
        Ok(())
    }
}

impl<'a> Entry<'a> {
    /// The entry's kind, or `None` for a kind this reader does not know (left for later versions).
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_tag(self.kind_tag)
    }

    pub fn kind_tag(&self) -> u8 {
        self.kind_tag
    }

    pub fn name(&self) -> &'a str {
        self.name
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    /// The entry's blobs, in role order.
    pub fn blobs(&self) -> impl Iterator<Item = Result<Blob<'a>>> + 'a {
        let (archive, name) = (self.archive, self.name);
        (self.first_blob..self.first_blob + self.blob_count)
            .map(move |index| archive.blob(index, name))
    }

    /// The entry's blob of `role`, if it has one.
    pub fn blob(&self, role: Role) -> Result<Option<Blob<'a>>> {
        for blob in self.blobs() {
            let blob = blob?;
            if blob.role == role {
                return Ok(Some(blob));
            }
        }
        Ok(None)
    }

    /// The bytes of the entry's blob of `role`, if it has one.
    pub fn data(&self, role: Role) -> Result<Option<Cow<'a, [u8]>>> {
        match self.blob(role)? {
            Some(blob) => self.archive.data(&blob).map(Some),
            None => Ok(None),
        }
    }
}

impl std::fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("index", &self.index)
            .field("kind", &self.kind())
            .field("name", &self.name)
            .field("blob_count", &self.blob_count)
            .finish()
    }
}

fn namespace_of(kind_tag: u8) -> u8 {
    match Kind::from_tag(kind_tag) {
        Some(kind) => kind.namespace().tag(),
        // Unknown kinds sort after every known name space and are never found by a lookup.
        None => u8::MAX,
    }
}

/// Where a 64-bit little-endian ELF file's image ends (its section header table or its last
/// segment, whichever is later), or None if `bytes` is not one.
fn elf_image_end(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 64 || bytes[..4] != *b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let u64_at = |at: usize| {
        bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    };
    let (phoff, shoff) = (u64_at(0x20)?, u64_at(0x28)?);
    let (phentsize, phnum, shentsize, shnum) =
        (u16_at(0x36), u16_at(0x38), u16_at(0x3A), u16_at(0x3C));
    let mut end = 64usize.max(shoff.checked_add(shentsize.checked_mul(shnum)?)?);
    for index in 0..phnum {
        let header = phoff.checked_add(index.checked_mul(phentsize)?)?;
        let (offset, size) = (u64_at(header + 8)?, u64_at(header + 0x20)?);
        end = end.max(offset.checked_add(size)?);
    }
    Some(end)
}

/// Where the archive that starts at `start` ends, by its header (its data region is last, then
/// the trailer), if a trailer naming an archive of that size is there.
fn archive_end(bytes: &[u8], start: usize) -> Option<usize> {
    let header = bytes.get(start..start.checked_add(layout::HEADER_SIZE)?)?;
    let data_end = read_u64(header, H::DATA_OFFSET).checked_add(read_u64(header, H::DATA_SIZE))?;
    let size = usize::try_from(data_end).ok()?.checked_add(layout::TRAILER_SIZE)?;
    let end = start.checked_add(size)?;
    let trailer = bytes.get(end - layout::TRAILER_SIZE..end)?;
    let named = read_u64(trailer, T::ARCHIVE_SIZE) == size as u64;
    (named && trailer[layout::TRAILER_SIZE - 8..] == layout::TRAILER_MAGIC).then_some(end)
}

/// Finds the archive in `bytes`: through the trailer at the end, the way it is found when appended
/// to an executable. Returns (start, size).
fn locate(bytes: &[u8]) -> Result<(usize, usize)> {
    let length = bytes.len();
    let has_trailer =
        length >= layout::TRAILER_SIZE && bytes[length - 8..] == layout::TRAILER_MAGIC;
    if !has_trailer {
        if bytes.starts_with(&layout::HEADER_MAGIC) {
            return Err(Error::Truncated {
                what: "archive trailer".to_string(),
                start: length as u64,
                end: length as u64 + layout::TRAILER_SIZE as u64,
                size: length as u64,
            });
        }
        // An archive starts right after the ELF image, but the file does not end with its
        // trailer: bytes appended after it (its header says where it ends, and a trailer is
        // there), or an executable cut short.
        if let Some(start) = elf_image_end(bytes).filter(|&end| {
            bytes.get(end..).is_some_and(|rest| rest.starts_with(&layout::HEADER_MAGIC))
        }) {
            if let Some(end) = archive_end(bytes, start).filter(|&end| end < length) {
                return Err(Error::Appended { end: end as u64, size: length as u64 });
            }
            return Err(Error::CutShort { start: start as u64, size: length as u64 });
        }
        return Err(Error::NotAnArchive);
    }
    let trailer = &bytes[length - layout::TRAILER_SIZE..];
    let size = read_u64(trailer, T::ARCHIVE_SIZE);
    let minimum = (layout::HEADER_SIZE + layout::TRAILER_SIZE) as u64;
    if size < minimum || size > length as u64 {
        return Err(Error::Truncated {
            what: format!("archive of {size} bytes named by the trailer"),
            start: (length as u64).saturating_sub(size),
            end: length as u64,
            size: length as u64,
        });
    }
    Ok((length - size as usize, size as usize))
}

fn parse_header(bytes: &[u8]) -> Result<Header> {
    // `locate` guarantees HEADER_SIZE + TRAILER_SIZE bytes.
    let magic = &bytes[H::MAGIC..H::MAGIC + 8];
    if magic != layout::HEADER_MAGIC {
        return Err(Error::BadMagic { offset: 0, found: magic.to_vec() });
    }
    let version = read_u32(bytes, H::VERSION);
    if version != layout::VERSION {
        return Err(Error::UnsupportedVersion { found: version, expected: layout::VERSION });
    }
    let flags = read_u32(bytes, H::FLAGS);
    if flags != 0 {
        return Err(Error::Malformed(format!(
            "header flags {flags:#x} are not defined in version 1"
        )));
    }
    if bytes[H::RESERVED..H::INDEX_CHECKSUM].iter().any(|byte| *byte != 0) {
        return Err(Error::Malformed("reserved header bytes 78..88 are not zero".to_string()));
    }
    let entry_count = read_u32(bytes, H::ENTRY_COUNT);
    let blob_count = read_u32(bytes, H::BLOB_COUNT);
    let entries_offset = to_usize(read_u64(bytes, H::ENTRIES_OFFSET), "entry table offset")?;
    let blobs_offset = to_usize(read_u64(bytes, H::BLOBS_OFFSET), "blob table offset")?;
    let names_offset = to_usize(read_u64(bytes, H::NAMES_OFFSET), "name region offset")?;
    let names_size = to_usize(read_u64(bytes, H::NAMES_SIZE), "name region size")?;
    let data_offset = to_usize(read_u64(bytes, H::DATA_OFFSET), "data region offset")?;
    let data_size = to_usize(read_u64(bytes, H::DATA_SIZE), "data region size")?;

    // The index (entry table, blob table, names) lies between the header and the data region, so
    // that the index checksum covers all of it; the data region ends before the trailer.
    let body_end = bytes.len() - layout::TRAILER_SIZE;
    let data_end = span("data region", data_offset, data_size, body_end)?;
    let _ = data_end;
    let index_end = data_offset;
    for (what, offset, len) in [
        ("entry table", entries_offset, (entry_count as usize).checked_mul(layout::ENTRY_SIZE)),
        ("blob table", blobs_offset, (blob_count as usize).checked_mul(layout::BLOB_SIZE)),
        ("name region", names_offset, Some(names_size)),
    ] {
        let len = len.ok_or(Error::TooLarge("table size overflows"))?;
        if offset < layout::HEADER_SIZE {
            return Err(Error::Malformed(format!("{what} at offset {offset} overlaps the header")));
        }
        span(what, offset, len, index_end)?;
    }

    let mut hasher = Xxh3::new();
    hasher.update(&bytes[..H::INDEX_CHECKSUM]);
    hasher.update(&bytes[layout::HEADER_SIZE..index_end.max(layout::HEADER_SIZE)]);
    let found = hasher.digest();
    let expected = read_u64(bytes, H::INDEX_CHECKSUM);
    if found != expected {
        return Err(Error::IndexChecksum { found, expected });
    }

    let mut bytecode_magic = [0u8; 4];
    bytecode_magic.copy_from_slice(&bytes[H::BYTECODE_MAGIC..H::BYTECODE_MAGIC + 4]);
    Ok(Header {
        version,
        entry_count,
        blob_count,
        entries_offset,
        blobs_offset,
        names_offset,
        names_size,
        data_offset,
        data_size,
        bytecode_magic,
        python_version: (bytes[H::PYTHON_MAJOR], bytes[H::PYTHON_MINOR]),
    })
}

/// Blobs up to this size are decompressed in one call into a buffer of their declared size
/// ([`Archive::data`]); larger ones are streamed, their buffer grown as they come.
const ONE_SHOT_MAX: usize = 16 << 20;

thread_local! {
    /// This thread's decompression context, made at its first blob and kept rather than made and
    /// freed for each one. (Measured alone, it changed a threaded server's memory by nothing
    /// measurable: what did was [`Archive::decompress_into`].)
    static CONTEXT: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses the frame `stored` into `out` in one call, with this thread's context: the
/// number of bytes written, or zstd's error code.
fn decompress_once<C: zstd::zstd_safe::WriteBuf + ?Sized>(
    out: &mut C,
    stored: &[u8],
    dictionary: Option<&zstd::dict::DecoderDictionary<'static>>,
) -> std::result::Result<usize, usize> {
    with_context(|context| match dictionary {
        Some(dictionary) => context.decompress_using_ddict(out, stored, dictionary.as_ddict()),
        None => context.decompress(out, stored),
    })
}

/// Runs `work` with this thread's decompression context (a fresh one if it is in use).
fn with_context<T>(work: impl FnOnce(&mut zstd::zstd_safe::DCtx<'static>) -> T) -> T {
    let mut work = Some(work);
    let kept = CONTEXT.try_with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let context = slot.get_or_insert_with(zstd::zstd_safe::DCtx::create);
        work.take().map(|work| work(context))
    });
    match kept {
        Ok(Some(done)) => done,
        _ => work.map(|work| work(&mut zstd::zstd_safe::DCtx::create())).expect("not run"),
    }
}

/// Uncompressed blobs up to this size that nothing has read yet are read from the archive's file,
/// not through its map ([`Archive::data`]).
pub const SMALL_BLOB: u64 = 64 << 10;

/// The buffer through which [`Archive::copy_blob`] reads and writes.
const COPY_BUFFER: usize = 256 << 10;

/// Where [`Archive::copy_blob`] reads stored bytes from.
enum StoredReader<'a> {
    Bytes(&'a [u8]),
    File { file: &'a File, at: u64 },
}

/// A blob's stored bytes, read once, hashed on the way; at most `left` more bytes.
struct Checked<'a> {
    source: StoredReader<'a>,
    left: u64,
    hasher: Xxh3,
    /// The error a read of the file failed with (a decoder reading through this reports its own).
    failed: Option<std::io::Error>,
}

impl Read for Checked<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let want = buffer.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let count = match &mut self.source {
            StoredReader::Bytes(bytes) => {
                let count = want.min(bytes.len());
                buffer[..count].copy_from_slice(&bytes[..count]);
                *bytes = &bytes[count..];
                count
            }
            StoredReader::File { file, at } => {
                let count =
                    match std::os::unix::fs::FileExt::read_at(*file, &mut buffer[..want], *at) {
                        Ok(0) => Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
                        other => other,
                    }
                    .inspect_err(|error| {
                        self.failed = Some(std::io::Error::new(error.kind(), error.to_string()))
                    })?;
                *at += count as u64;
                count
            }
        };
        if count == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        self.hasher.update(&buffer[..count]);
        self.left -= count as u64;
        Ok(count)
    }
}

/// `size` bytes of `file` from `offset`, read with `pread` into memory not zeroed first (a
/// zeroed buffer cost 3.5 % of the instructions of an import of 449 modules: 20 million of them
/// in `memset` for the bytecode read this way).
fn read_exact_at(file: &File, size: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut bytes: Vec<u8> = Vec::with_capacity(size);
    let mut done = 0usize;
    while done < size {
        let at = libc::off_t::try_from(offset + done as u64)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: the kernel writes at most `size - done` bytes into the vector's unused
        // capacity past the `done` bytes it wrote before; only those it reports are counted.
        let count = unsafe {
            libc::pread(
                file.as_raw_fd(),
                bytes.as_mut_ptr().add(done).cast::<libc::c_void>(),
                size - done,
                at,
            )
        };
        match count {
            0 => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
            count if count < 0 => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
            count => done += count as usize,
        }
    }
    // SAFETY: the kernel wrote all `size` bytes (counted in `done`).
    unsafe { bytes.set_len(size) };
    Ok(bytes)
}

/// Copies `from` to `out` until `from` ends; read errors are `Copy { reading: true }`, write
/// errors `Copy { reading: false }`.
fn pump(from: &mut impl Read, out: &mut impl std::io::Write, blob: &Blob<'_>) -> Result<u64> {
    // No larger than the blob: the buffer is zeroed first (64 buffers of 256 KiB, for the
    // native images of an import of 449 modules, were 2 % of its instructions).
    let size = usize::try_from(blob.size).unwrap_or(usize::MAX).clamp(1, COPY_BUFFER);
    let mut buffer = vec![0u8; size];
    let mut written = 0u64;
    loop {
        let count = match from.read(&mut buffer) {
            Ok(0) => return Ok(written),
            Ok(count) => count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(copy_error(blob, true, error)),
        };
        out.write_all(&buffer[..count]).map_err(|error| copy_error(blob, false, error))?;
        written += count as u64;
    }
}

fn copy_error(blob: &Blob<'_>, reading: bool, source: std::io::Error) -> Error {
    Error::Copy { entry: blob.entry_name.to_string(), role: blob.role.label(), reading, source }
}
