//! Helpers shared by the integration tests: sample archives and a patcher that edits a field of
//! an archive and then makes its index checksum valid again, so that the checks behind the
//! checksum are the ones exercised.

#![allow(dead_code)]

use ingot_format::layout::{self, header as H};
use ingot_format::{ArchiveWriter, Kind, Role, WriterOptions};

pub const MAGIC: [u8; 4] = [0xa7, 0x0d, 0x0d, 0x0a];

pub fn options(zstd_level: Option<i32>) -> WriterOptions {
    WriterOptions {
        bytecode_magic: MAGIC,
        python_version: (3, 11),
        zstd_level,
        large_zstd_level: None,
        native_zstd_level: None,
        compress_start_bytecode: false,
    }
}

/// Bytes that zstd shrinks well, distinct per seed.
pub fn compressible(seed: &str, len: usize) -> Vec<u8> {
    seed.bytes().cycle().take(len).collect()
}

/// One entry of every kind, each blob big enough to be stored compressed when zstd is on.
/// One entry to write: kind, name, blobs.
pub type Spec = (Kind, &'static str, Vec<(Role, Vec<u8>)>);

/// A change made to archive bytes by a test.
pub type Patch = Box<dyn Fn(&mut Vec<u8>)>;

pub fn every_kind() -> Vec<Spec> {
    vec![
        (
            Kind::Module,
            "pkg.mod",
            vec![
                (Role::Source, compressible("x = 1\n", 600)),
                (Role::Bytecode(0), compressible("opt0", 500)),
                (Role::Bytecode(1), compressible("opt1", 501)),
                (Role::Bytecode(2), compressible("opt2", 502)),
            ],
        ),
        (
            Kind::Package,
            "pkg",
            vec![
                (Role::Source, compressible("# init\n", 400)),
                (Role::Bytecode(0), compressible("init", 300)),
            ],
        ),
        (Kind::NamespacePackage, "nspkg", vec![]),
        (
            Kind::ExtensionModule,
            "pkg._speedups",
            vec![
                (Role::Content, compressible("\x7fELF", 2000)),
                (Role::Needed, b"libfoo.so.1\0libc.so.6\0".to_vec()),
            ],
        ),
        (Kind::DataFile, "pkg/data/table.csv", vec![(Role::Content, compressible("a,b\n", 300))]),
        (
            Kind::DistInfoFile,
            "pkg-1.0.dist-info/METADATA",
            vec![(Role::Content, compressible("Name: pkg\n", 300))],
        ),
        (
            Kind::SharedLibrary,
            "libfoo.so.1",
            vec![
                (Role::Content, compressible("\x7fELFlib", 3000)),
                (Role::Soname, b"libfoo.so.1".to_vec()),
                (Role::Needed, b"libc.so.6\0".to_vec()),
            ],
        ),
    ]
}

pub fn write(entries: &[Spec], zstd_level: Option<i32>) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(options(zstd_level));
    for (kind, name, blobs) in entries {
        writer.add(*kind, name, blobs.clone()).unwrap();
    }
    writer.to_vec().unwrap()
}

/// A small archive: a package, two modules, a data file, with source and bytecode.
pub fn small(zstd_level: Option<i32>) -> Vec<u8> {
    write(
        &[
            (Kind::Package, "a", vec![(Role::Source, b"".to_vec())]),
            (
                Kind::Module,
                "a.b",
                vec![
                    (Role::Source, compressible("y = 2\n", 64)),
                    (Role::Bytecode(0), b"\xe3code".to_vec()),
                ],
            ),
            (Kind::Module, "c", vec![(Role::Source, b"x=1\n".to_vec())]),
            (Kind::DataFile, "a/d.txt", vec![(Role::Content, b"hello".to_vec())]),
        ],
        zstd_level,
    )
}

pub fn get_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

pub fn get_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

pub fn set_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

pub fn set_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Recomputes the index checksum of an archive that starts at offset 0, per
/// `layout::header::INDEX_CHECKSUM`: xxh3-64 of header[0..88] ++ archive[96..data_offset].
/// A data offset past the end is clamped (such an archive is rejected before the checksum).
pub fn fix_index_checksum(archive: &mut [u8]) {
    let data_offset =
        (get_u64(archive, H::DATA_OFFSET) as usize).clamp(layout::HEADER_SIZE, archive.len());
    let mut covered = archive[..H::INDEX_CHECKSUM].to_vec();
    covered.extend_from_slice(&archive[layout::HEADER_SIZE..data_offset]);
    let checksum = xxhash_rust::xxh3::xxh3_64(&covered);
    set_u64(archive, H::INDEX_CHECKSUM, checksum);
}

/// Offset of entry record `index`.
pub fn entry_record(archive: &[u8], index: usize) -> usize {
    get_u64(archive, H::ENTRIES_OFFSET) as usize + index * layout::ENTRY_SIZE
}

/// Offset of blob record `index`.
pub fn blob_record(archive: &[u8], index: usize) -> usize {
    get_u64(archive, H::BLOBS_OFFSET) as usize + index * layout::BLOB_SIZE
}

/// A small deterministic generator (xorshift64*), so that "random" inputs are reproducible.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}
