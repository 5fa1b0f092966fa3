//! Every wire value of the ingot archive, written down once.
//!
//! `docs/format.md` is the specification; this file is its only transcription into code. The
//! reader and the writer both take offsets, sizes, tags and magic numbers from here.
//!
//! All integers are little-endian.
//!
//! Version log (one line per change, newest last):
//! - 1: first version: header, entry table, blob table, name region, data region, trailer.
//! - 2: entry kind 8, `extension-package` (a package whose `__init__` is an extension module).
//!   A version 1 reader would sort such entries into name space 255 and misread the table order,
//!   so the version changes.

/// The format version this code reads and writes.
pub const VERSION: u32 = 2;

/// First 8 bytes of an archive.
pub const HEADER_MAGIC: [u8; 8] = *b"\x89INGOT\r\n";
/// Last 8 bytes of an archive.
pub const TRAILER_MAGIC: [u8; 8] = *b"INGOTEND";

/// Size of the fixed header at the start of an archive.
pub const HEADER_SIZE: usize = 96;
/// Size of the trailer at the end of an archive.
pub const TRAILER_SIZE: usize = 16;
/// Size of one record of the entry table.
pub const ENTRY_SIZE: usize = 24;
/// Size of one record of the blob table.
pub const BLOB_SIZE: usize = 40;
/// Alignment of every blob's bytes, relative to the archive start.
pub const DATA_ALIGN: u64 = 16;

/// Header fields: (offset, width).
pub mod header {
    pub const MAGIC: usize = 0; // [u8; 8]
    pub const VERSION: usize = 8; // u32
    pub const FLAGS: usize = 12; // u32, zero in versions 1 and 2
    pub const ENTRY_COUNT: usize = 16; // u32
    pub const BLOB_COUNT: usize = 20; // u32
    pub const ENTRIES_OFFSET: usize = 24; // u64
    pub const BLOBS_OFFSET: usize = 32; // u64
    pub const NAMES_OFFSET: usize = 40; // u64
    pub const NAMES_SIZE: usize = 48; // u64
    pub const DATA_OFFSET: usize = 56; // u64
    pub const DATA_SIZE: usize = 64; // u64
    pub const BYTECODE_MAGIC: usize = 72; // [u8; 4]
    pub const PYTHON_MAJOR: usize = 76; // u8
    pub const PYTHON_MINOR: usize = 77; // u8
    pub const RESERVED: usize = 78; // [u8; 10], zero
    pub const INDEX_CHECKSUM: usize = 88; // u64: xxh3-64 of header[0..88] ++ archive[96..data_offset]
}

/// Trailer fields, relative to the trailer start.
pub mod trailer {
    pub const ARCHIVE_SIZE: usize = 0; // u64: bytes from header start to trailer end
    pub const MAGIC: usize = 8; // [u8; 8]
}

/// Entry record fields, relative to the record start.
pub mod entry {
    pub const NAME_OFFSET: usize = 0; // u32, into the name region
    pub const NAME_SIZE: usize = 4; // u32
    pub const KIND: usize = 8; // u8
    pub const FLAGS: usize = 9; // u8, zero in versions 1 and 2
    pub const RESERVED: usize = 10; // u16, zero
    pub const FIRST_BLOB: usize = 12; // u32, index into the blob table
    pub const BLOB_COUNT: usize = 16; // u32
    pub const RESERVED2: usize = 20; // u32, zero
}

/// Blob record fields, relative to the record start.
pub mod blob {
    pub const ROLE: usize = 0; // u8
    pub const COMPRESSION: usize = 1; // u8
    pub const RESERVED: usize = 2; // [u8; 6], zero
    pub const OFFSET: usize = 8; // u64, relative to the data region
    pub const STORED_SIZE: usize = 16; // u64: bytes in the archive
    pub const SIZE: usize = 24; // u64: bytes once decompressed
    pub const CHECKSUM: usize = 32; // u64: xxh3-64 of the stored bytes
}

/// Entry kind tags.
pub mod kind {
    pub const MODULE: u8 = 1;
    pub const PACKAGE: u8 = 2;
    pub const NAMESPACE_PACKAGE: u8 = 3;
    pub const EXTENSION_MODULE: u8 = 4;
    pub const DATA_FILE: u8 = 5;
    pub const DIST_INFO_FILE: u8 = 6;
    pub const SHARED_LIBRARY: u8 = 7;
    pub const EXTENSION_PACKAGE: u8 = 8;
}

/// Blob role tags.
pub mod role {
    pub const SOURCE: u8 = 1;
    pub const BYTECODE_OPT0: u8 = 2;
    pub const BYTECODE_OPT1: u8 = 3;
    pub const BYTECODE_OPT2: u8 = 4;
    pub const CONTENT: u8 = 5;
    pub const SONAME: u8 = 6;
    pub const NEEDED: u8 = 7;
}

/// Compression tags.
pub mod compression {
    pub const NONE: u8 = 0;
    pub const ZSTD: u8 = 1;
    /// zstd with the archive's dictionary, the content of [`crate::names::ZSTD_DICTIONARY`].
    pub const ZSTD_DICTIONARY: u8 = 2;
}

/// Entry name spaces: an entry is looked up by (name space, name), and the entry table is sorted
/// by that pair. The name space follows from the kind.
pub mod namespace {
    pub const MODULES: u8 = 0;
    pub const FILES: u8 = 1;
    pub const LIBRARIES: u8 = 2;
}
