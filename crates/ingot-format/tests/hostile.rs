//! Hand-made bad bytes: every one must give an `Err`, never a panic, an out-of-bounds read or a
//! huge allocation. Field patches are followed by a recomputed index checksum, so the range checks
//! behind the checksum are what is tested, not the checksum.

mod common;

use common::*;
use ingot_format::layout::{self, blob as B, entry as E, header as H, trailer as T};
use ingot_format::{Archive, Error, Kind, Namespace, Result, Role};

/// Every read the API offers, on every entry and blob, plus lookups. Returns the first error.
fn walk(archive: &Archive) -> Result<()> {
    let mut first_error = None;
    let mut note = |result: Result<()>| {
        if let Err(error) = result {
            first_error.get_or_insert(error);
        }
    };
    let mut names = Vec::new();
    for index in 0..archive.len() as u32 {
        note(
            archive.entry(index).map(|entry| names.push((entry.kind(), entry.name().to_string()))),
        );
    }
    for index in [archive.len() as u32, archive.len() as u32 + 1, u32::MAX] {
        assert!(archive.entry(index).is_err(), "entry {index} of {}", archive.len());
    }
    for entry in archive.entries() {
        note((|| {
            let entry = entry?;
            let _ = (entry.kind(), entry.kind_tag(), entry.name(), entry.index());
            for blob in entry.blobs() {
                let blob = blob?;
                archive.data(&blob)?;
                entry.data(blob.role())?;
            }
            Ok(())
        })());
    }
    for namespace in [Namespace::Modules, Namespace::Files, Namespace::Libraries] {
        for name in names.iter().map(|(_, name)| name.as_str()).chain(["", "a", "zzz"]) {
            note(archive.find(namespace, name).map(drop));
            note((|| {
                for entry in archive.find_prefix(namespace, name)? {
                    entry?;
                }
                Ok(())
            })());
        }
    }
    note(archive.verify_all());
    first_error.map_or(Ok(()), Err)
}

/// Opening `bytes` fails, or some read of the opened archive does.
fn assert_rejected(bytes: Vec<u8>, what: &str) -> Error {
    match Archive::from_vec(bytes) {
        Err(error) => error,
        Ok(archive) => match walk(&archive) {
            Err(error) => error,
            Ok(()) => panic!("{what}: accepted"),
        },
    }
}

/// Patches `bytes` with `patch`, recomputes the index checksum, and expects an error.
fn patched(base: &[u8], patch: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = base.to_vec();
    patch(&mut bytes);
    fix_index_checksum(&mut bytes);
    bytes
}

fn data_offset(bytes: &[u8]) -> usize {
    get_u64(bytes, H::DATA_OFFSET) as usize
}

/// (index of the blob record, entry name, role) of every blob, from a valid archive.
fn blobs_of(bytes: &[u8]) -> Vec<(usize, String, Role, u8)> {
    let archive = Archive::from_vec(bytes.to_vec()).unwrap();
    let mut out = Vec::new();
    let mut index = 0;
    for entry in archive.entries() {
        let entry = entry.unwrap();
        for blob in entry.blobs() {
            let blob = blob.unwrap();
            out.push((index, entry.name().to_string(), blob.role(), blob.compression()));
            index += 1;
        }
    }
    out
}

#[test]
fn empty_input_is_not_an_archive() {
    assert!(matches!(Archive::from_vec(Vec::new()), Err(Error::NotAnArchive)));
    assert!(matches!(Archive::from_static(b""), Err(Error::NotAnArchive)));
}

#[test]
fn random_bytes_are_rejected() {
    let mut rng = Rng(0x1234_5678);
    for len in (0..600).chain([4096, 65536]) {
        let bytes = rng.bytes(len);
        assert!(Archive::from_vec(bytes).is_err(), "{len} random bytes");
    }
    // Random bytes behind a plausible trailer, and behind a header magic too.
    for len in [112usize, 113, 200, 1000, 5000] {
        for round in 0..50 {
            let mut bytes = rng.bytes(len);
            let claimed = if round % 2 == 0 { len as u64 } else { rng.next() % (len as u64 + 10) };
            set_u64(&mut bytes, len - 16, claimed);
            bytes[len - 8..].copy_from_slice(&layout::TRAILER_MAGIC);
            if round % 3 == 0 {
                bytes[..8].copy_from_slice(&layout::HEADER_MAGIC);
                set_u32(&mut bytes, H::VERSION, layout::VERSION);
            }
            assert!(Archive::from_vec(bytes).is_err(), "{len} random bytes, round {round}");
        }
    }
}

#[test]
fn random_bytes_with_a_valid_index_checksum_never_panic() {
    // A plausible header with random fields and a correct checksum: gets past the checksum to the
    // range checks, and, when those pass, to the lazy per-entry checks.
    let mut rng = Rng(99);
    let mut opened = 0;
    for round in 0..3000 {
        let len = 112 + (rng.next() % 400) as usize;
        let mut bytes = rng.bytes(len);
        bytes[..8].copy_from_slice(&layout::HEADER_MAGIC);
        set_u32(&mut bytes, H::VERSION, layout::VERSION);
        set_u32(&mut bytes, H::FLAGS, 0);
        set_u32(&mut bytes, H::ENTRY_COUNT, (rng.next() % 6) as u32);
        set_u32(&mut bytes, H::BLOB_COUNT, (rng.next() % 6) as u32);
        let body = (len - 16) as u64;
        let offset = |rng: &mut Rng| 96 + rng.next() % (body - 95);
        set_u64(&mut bytes, H::ENTRIES_OFFSET, offset(&mut rng));
        set_u64(&mut bytes, H::BLOBS_OFFSET, offset(&mut rng));
        set_u64(&mut bytes, H::NAMES_OFFSET, offset(&mut rng));
        set_u64(&mut bytes, H::NAMES_SIZE, rng.next() % 64);
        let data = offset(&mut rng);
        set_u64(&mut bytes, H::DATA_OFFSET, data);
        set_u64(&mut bytes, H::DATA_SIZE, rng.next() % (body - data + 1));
        bytes[H::RESERVED..H::INDEX_CHECKSUM].fill(0);
        set_u64(&mut bytes, len - 16 + T::ARCHIVE_SIZE, len as u64);
        bytes[len - 8..].copy_from_slice(&layout::TRAILER_MAGIC);
        fix_index_checksum(&mut bytes);
        if let Ok(archive) = Archive::from_vec(bytes) {
            opened += 1;
            let _ = walk(&archive);
        }
        let _ = round;
    }
    assert!(opened > 100, "only {opened} inputs got past open; the test exercises too little");
}

#[test]
fn truncated_at_every_length_is_an_error() {
    for zstd_level in [None, Some(3)] {
        let bytes = small(zstd_level);
        for len in 0..bytes.len() {
            assert!(
                Archive::from_vec(bytes[..len].to_vec()).is_err(),
                "first {len} of {} bytes",
                bytes.len()
            );
        }
        for start in 1..bytes.len() {
            assert!(
                Archive::from_vec(bytes[start..].to_vec()).is_err(),
                "bytes {start}.. of {}",
                bytes.len()
            );
        }
        Archive::from_vec(bytes).unwrap();
    }
}

#[test]
fn truncated_header_only_file_reports_a_missing_trailer() {
    let bytes = small(None);
    assert!(matches!(Archive::from_vec(bytes[..200].to_vec()), Err(Error::Truncated { .. })));
}

#[test]
fn wrong_header_magic_is_bad_magic() {
    let base = small(None);
    for at in 0..8 {
        let bytes = patched(&base, |bytes| bytes[at] ^= 0x20);
        match Archive::from_vec(bytes) {
            Err(Error::BadMagic { offset: 0, found }) => assert_ne!(found, layout::HEADER_MAGIC),
            other => panic!("byte {at}: expected BadMagic, got {:?}", other.err()),
        }
    }
}

#[test]
fn wrong_version_is_unsupported_version_naming_both_versions() {
    let base = small(None);
    for version in [0u32, 1, 3, 7, u32::MAX] {
        let bytes = patched(&base, |bytes| set_u32(bytes, H::VERSION, version));
        match Archive::from_vec(bytes) {
            Err(error @ Error::UnsupportedVersion { .. }) => {
                let Error::UnsupportedVersion { found, expected } = error else { unreachable!() };
                assert_eq!((found, expected), (version, layout::VERSION));
                let message = error.to_string();
                assert!(message.contains(&version.to_string()), "{message}");
                assert!(message.contains(&layout::VERSION.to_string()), "{message}");
            }
            other => {
                panic!("version {version}: expected UnsupportedVersion, got {:?}", other.err())
            }
        }
    }
}

#[test]
fn flipped_byte_in_the_index_is_an_index_checksum_error() {
    for zstd_level in [None, Some(3)] {
        let base = small(zstd_level);
        // Tables, names and the padding before the data region, and the checksum itself.
        for at in
            (layout::HEADER_SIZE..data_offset(&base)).chain(H::INDEX_CHECKSUM..layout::HEADER_SIZE)
        {
            for mask in [0x01, 0x80, 0xff] {
                let mut bytes = base.clone();
                bytes[at] ^= mask;
                match Archive::from_vec(bytes) {
                    Err(Error::IndexChecksum { found, expected }) => assert_ne!(found, expected),
                    other => panic!(
                        "byte {at} ^ {mask:#x}: expected IndexChecksum, got {:?}",
                        other.err()
                    ),
                }
            }
        }
        // Header fields also count: a change that passes the field checks fails the checksum.
        for field in [H::BYTECODE_MAGIC, H::PYTHON_MAJOR, H::PYTHON_MINOR, H::ENTRY_COUNT] {
            let mut bytes = base.clone();
            bytes[field] ^= 0x01;
            assert!(
                matches!(Archive::from_vec(bytes), Err(Error::IndexChecksum { .. })),
                "header byte {field}"
            );
        }
    }
}

#[test]
fn flipped_byte_in_blob_data_is_a_data_checksum_error_naming_the_entry() {
    for zstd_level in [None, Some(3)] {
        let base = small(zstd_level);
        let archive = Archive::from_vec(base.clone()).unwrap();
        for (blob_index, name, role, _) in blobs_of(&base) {
            let record = blob_record(&base, blob_index);
            let start = data_offset(&base) + get_u64(&base, record + B::OFFSET) as usize;
            let stored = get_u64(&base, record + B::STORED_SIZE) as usize;
            for at in start..start + stored {
                let mut bytes = base.clone();
                bytes[at] ^= 0x04;
                // The index is intact: open and lookups work; only this blob's read fails.
                let damaged = Archive::from_vec(bytes).unwrap();
                let namespace = archive
                    .entries()
                    .map(Result::unwrap)
                    .find(|entry| entry.name() == name)
                    .unwrap()
                    .kind()
                    .unwrap()
                    .namespace();
                let entry = damaged.find(namespace, &name).unwrap().unwrap();
                for _ in 0..2 {
                    match entry.data(role) {
                        Err(error @ Error::DataChecksum { .. }) => {
                            let message = error.to_string();
                            let Error::DataChecksum { entry, role: label, found, expected } = error
                            else {
                                unreachable!()
                            };
                            assert_eq!(entry, name);
                            assert_eq!(label, role.label());
                            assert_ne!(found, expected);
                            assert!(message.contains(&name), "{message}");
                        }
                        other => panic!(
                            "{name} {} byte {at}: expected DataChecksum, got {other:?}",
                            role.label()
                        ),
                    }
                }
                assert!(matches!(damaged.verify_all(), Err(Error::DataChecksum { .. })));
                // The other blobs still read.
                for (_, other_name, other_role, _) in blobs_of(&base) {
                    if (other_name.as_str(), other_role) != (name.as_str(), role) {
                        let other = damaged
                            .entries()
                            .map(Result::unwrap)
                            .find(|entry| entry.name() == other_name)
                            .unwrap();
                        other.data(other_role).unwrap().unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn every_single_byte_flip_outside_data_padding_is_detected() {
    for zstd_level in [None, Some(3)] {
        let base = small(zstd_level);
        let data_start = data_offset(&base);
        let mut covered = vec![false; base.len()];
        covered[..data_start].fill(true);
        covered[base.len() - layout::TRAILER_SIZE..].fill(true);
        for (blob_index, ..) in blobs_of(&base) {
            let record = blob_record(&base, blob_index);
            let start = data_start + get_u64(&base, record + B::OFFSET) as usize;
            let stored = get_u64(&base, record + B::STORED_SIZE) as usize;
            covered[start..start + stored].fill(true);
        }
        for (at, covered) in covered.iter().enumerate() {
            let mut bytes = base.clone();
            bytes[at] ^= 0x10;
            if *covered {
                assert_rejected(bytes, &format!("flip at {at}"));
            } else {
                // Alignment padding between blobs is covered by no checksum, and holds nothing.
                let archive = Archive::from_vec(bytes).unwrap();
                walk(&archive).unwrap();
            }
        }
    }
}

#[test]
fn out_of_range_header_fields_with_a_valid_checksum_are_rejected() {
    let base = small(None);
    let len = base.len() as u64;
    let cases: Vec<(&str, Patch)> = vec![
        ("entry count past the table", Box::new(|b| set_u32(b, H::ENTRY_COUNT, 1000))),
        ("entry count u32::MAX", Box::new(|b| set_u32(b, H::ENTRY_COUNT, u32::MAX))),
        ("blob count past the table", Box::new(|b| set_u32(b, H::BLOB_COUNT, 1000))),
        ("blob count u32::MAX", Box::new(|b| set_u32(b, H::BLOB_COUNT, u32::MAX))),
        ("entry table in the header", Box::new(|b| set_u64(b, H::ENTRIES_OFFSET, 0))),
        ("entry table at 95", Box::new(|b| set_u64(b, H::ENTRIES_OFFSET, 95))),
        ("entry table past the end", Box::new(move |b| set_u64(b, H::ENTRIES_OFFSET, len))),
        ("entry table at u64::MAX", Box::new(|b| set_u64(b, H::ENTRIES_OFFSET, u64::MAX))),
        ("blob table in the header", Box::new(|b| set_u64(b, H::BLOBS_OFFSET, 8))),
        ("blob table at u64::MAX", Box::new(|b| set_u64(b, H::BLOBS_OFFSET, u64::MAX - 8))),
        (
            "blob table in the data region",
            Box::new(|b| {
                let data = get_u64(b, H::DATA_OFFSET);
                set_u64(b, H::BLOBS_OFFSET, data)
            }),
        ),
        ("name region too large", Box::new(move |b| set_u64(b, H::NAMES_SIZE, len))),
        ("name region size u64::MAX", Box::new(|b| set_u64(b, H::NAMES_SIZE, u64::MAX))),
        ("name region at u64::MAX", Box::new(|b| set_u64(b, H::NAMES_OFFSET, u64::MAX))),
        ("name region in the header", Box::new(|b| set_u64(b, H::NAMES_OFFSET, 40))),
        (
            "data region past the trailer",
            Box::new(|b| {
                let size = get_u64(b, H::DATA_SIZE);
                set_u64(b, H::DATA_SIZE, size + 1)
            }),
        ),
        ("data size u64::MAX", Box::new(|b| set_u64(b, H::DATA_SIZE, u64::MAX))),
        ("data offset u64::MAX", Box::new(|b| set_u64(b, H::DATA_OFFSET, u64::MAX))),
        ("data offset 0", Box::new(|b| set_u64(b, H::DATA_OFFSET, 0))),
        ("data offset 16", Box::new(|b| set_u64(b, H::DATA_OFFSET, 16))),
        ("data offset inside the entry table", Box::new(|b| set_u64(b, H::DATA_OFFSET, 100))),
        ("header flags", Box::new(|b| set_u32(b, H::FLAGS, 1))),
        ("reserved header byte", Box::new(|b| b[H::RESERVED + 3] = 1)),
    ];
    for (what, patch) in cases {
        let error = match Archive::from_vec(patched(&base, patch)) {
            Err(error) => error,
            Ok(_) => panic!("{what}: opened"),
        };
        assert!(
            matches!(error, Error::Truncated { .. } | Error::Malformed(_) | Error::TooLarge(_)),
            "{what}: expected a range error, got {error:?}"
        );
    }
}

#[test]
fn out_of_range_trailer_sizes_are_rejected() {
    let base = small(None);
    let trailer = base.len() - layout::TRAILER_SIZE;
    for size in [0, 1, 111, base.len() as u64 + 1, u64::MAX, 1 << 63] {
        let mut bytes = base.clone();
        set_u64(&mut bytes, trailer + T::ARCHIVE_SIZE, size);
        assert!(
            matches!(Archive::from_vec(bytes), Err(Error::Truncated { .. })),
            "trailer size {size}"
        );
    }
    // A plausible but wrong size points at a header that is not there.
    for delta in [16u64, 32, 48] {
        let mut bytes = base.clone();
        set_u64(&mut bytes, trailer + T::ARCHIVE_SIZE, base.len() as u64 - delta);
        assert!(matches!(Archive::from_vec(bytes), Err(Error::BadMagic { .. })), "size - {delta}");
    }
    let mut bytes = base.clone();
    bytes[trailer + T::MAGIC] ^= 1;
    assert!(
        matches!(Archive::from_vec(bytes), Err(Error::Truncated { .. })),
        "header magic but no trailer"
    );
    let mut bytes = base.clone();
    bytes[trailer + T::MAGIC] ^= 1;
    bytes[0] ^= 1;
    assert!(matches!(Archive::from_vec(bytes), Err(Error::NotAnArchive)));
}

/// Opens a patched archive (which must open: only entry or blob records were changed) and
/// expects a `Malformed` error from reading it.
fn assert_record_rejected(base: &[u8], what: &str, patch: impl FnOnce(&mut Vec<u8>)) {
    let archive =
        Archive::from_vec(patched(base, patch)).unwrap_or_else(|error| panic!("{what}: {error}"));
    match walk(&archive) {
        Err(Error::Malformed(message)) => assert!(!message.is_empty()),
        other => panic!("{what}: expected Malformed, got {other:?}"),
    }
}

#[test]
fn out_of_range_entry_records_with_a_valid_checksum_are_rejected() {
    let base = small(None);
    let names_size = get_u64(&base, H::NAMES_SIZE) as u32;
    let blob_count = get_u32(&base, H::BLOB_COUNT);
    let entry_count = get_u32(&base, H::ENTRY_COUNT) as usize;
    for index in 0..entry_count {
        let record = entry_record(&base, index);
        let cases: Vec<(&str, Patch)> = vec![
            (
                "name offset past the name region",
                Box::new(move |b| set_u32(b, record + E::NAME_OFFSET, names_size)),
            ),
            (
                "name offset u32::MAX",
                Box::new(move |b| set_u32(b, record + E::NAME_OFFSET, u32::MAX)),
            ),
            (
                "name size past the name region",
                Box::new(move |b| set_u32(b, record + E::NAME_SIZE, names_size + 1)),
            ),
            ("name size u32::MAX", Box::new(move |b| set_u32(b, record + E::NAME_SIZE, u32::MAX))),
            (
                "first blob past the blob table",
                Box::new(move |b| set_u32(b, record + E::FIRST_BLOB, blob_count)),
            ),
            (
                "first blob u32::MAX",
                Box::new(move |b| {
                    set_u32(b, record + E::FIRST_BLOB, u32::MAX);
                    set_u32(b, record + E::BLOB_COUNT, 2);
                }),
            ),
            (
                "blob count past the blob table",
                Box::new(move |b| set_u32(b, record + E::BLOB_COUNT, blob_count + 1)),
            ),
            (
                "blob count u32::MAX",
                Box::new(move |b| set_u32(b, record + E::BLOB_COUNT, u32::MAX)),
            ),
            ("entry flags", Box::new(move |b| b[record + E::FLAGS] = 1)),
            ("entry reserved", Box::new(move |b| b[record + E::RESERVED + 1] = 1)),
            ("entry reserved2", Box::new(move |b| b[record + E::RESERVED2] = 1)),
            (
                "name not UTF-8",
                Box::new(move |b| {
                    let names = get_u64(b, H::NAMES_OFFSET) as usize;
                    let at = names + get_u32(b, record + E::NAME_OFFSET) as usize;
                    b[at] = 0xff;
                }),
            ),
        ];
        for (what, patch) in cases {
            assert_record_rejected(&base, &format!("entry {index}: {what}"), patch);
        }
    }
}

#[test]
fn unknown_entry_kind_is_reported_as_none_and_never_panics() {
    let base = small(None);
    for tag in [0u8, 9, 200, 255] {
        let bytes = patched(&base, |b| {
            let record = entry_record(b, 1);
            b[record + E::KIND] = tag;
        });
        let archive = Archive::from_vec(bytes).unwrap();
        let entry = archive.entry(1).unwrap();
        assert_eq!(entry.kind(), None);
        assert_eq!(entry.kind_tag(), tag);
        // Its table slot is now out of order; lookups may miss it but must not fail or panic.
        assert!(archive.find(Namespace::Modules, entry.name()).unwrap().is_none());
        let _ = walk(&archive);
    }
}

#[test]
fn unsorted_entry_table_gives_wrong_lookups_but_no_panic() {
    let base = small(None);
    // Swap the first two entry records.
    let bytes = patched(&base, |b| {
        let (first, second) = (entry_record(b, 0), entry_record(b, 1));
        let one = b[first..first + layout::ENTRY_SIZE].to_vec();
        let two = b[second..second + layout::ENTRY_SIZE].to_vec();
        b[first..first + layout::ENTRY_SIZE].copy_from_slice(&two);
        b[second..second + layout::ENTRY_SIZE].copy_from_slice(&one);
    });
    let archive = Archive::from_vec(bytes).unwrap();
    walk(&archive).unwrap();
}

#[test]
fn out_of_range_blob_records_with_a_valid_checksum_are_rejected() {
    for zstd_level in [None, Some(3)] {
        let base = small(zstd_level);
        let data_size = get_u64(&base, H::DATA_SIZE);
        for (index, name, role, compression) in blobs_of(&base) {
            let record = blob_record(&base, index);
            let stored = get_u64(&base, record + B::STORED_SIZE);
            let mut cases: Vec<(&str, Patch)> = vec![
                (
                    "offset past the data region",
                    Box::new(move |b| set_u64(b, record + B::OFFSET, data_size + 1)),
                ),
                (
                    "offset + size one past the data region",
                    Box::new(move |b| set_u64(b, record + B::OFFSET, data_size - stored + 1)),
                ),
                ("offset u64::MAX", Box::new(move |b| set_u64(b, record + B::OFFSET, u64::MAX))),
                (
                    "stored size u64::MAX",
                    Box::new(move |b| set_u64(b, record + B::STORED_SIZE, u64::MAX)),
                ),
                (
                    "stored size past the data region",
                    Box::new(move |b| set_u64(b, record + B::STORED_SIZE, data_size + 1)),
                ),
                ("unknown role 0", Box::new(move |b| b[record + B::ROLE] = 0)),
                ("unknown role 8", Box::new(move |b| b[record + B::ROLE] = 8)),
                ("unknown compression", Box::new(move |b| b[record + B::COMPRESSION] = 2)),
                ("reserved byte", Box::new(move |b| b[record + B::RESERVED + 5] = 1)),
            ];
            if compression == layout::compression::NONE {
                cases.push((
                    "uncompressed size differs from stored size",
                    Box::new(move |b| set_u64(b, record + B::SIZE, stored + 1)),
                ));
            }
            for (what, patch) in cases {
                assert_record_rejected(&base, &format!("{name} {}: {what}", role.label()), patch);
            }
        }
    }
}

/// The archive with one big compressible data file stored with zstd, and that blob's record.
fn zstd_archive(content: &[u8]) -> (Vec<u8>, usize) {
    let bytes =
        write(&[(Kind::DataFile, "big.bin", vec![(Role::Content, content.to_vec())])], Some(3));
    let record = blob_record(&bytes, 0);
    assert_eq!(bytes[record + B::COMPRESSION], layout::compression::ZSTD);
    (bytes, record)
}

fn read_big(bytes: Vec<u8>) -> Result<Vec<u8>> {
    let archive = Archive::from_vec(bytes).unwrap();
    let entry = archive.find(Namespace::Files, "big.bin").unwrap().unwrap();
    entry.data(Role::Content).map(|data| data.unwrap().into_owned())
}

#[test]
fn zstd_blob_whose_declared_size_lies_is_rejected() {
    let content = compressible("lying size ", 10_000);
    let (base, record) = zstd_archive(&content);
    assert_eq!(read_big(base.clone()).unwrap(), content);
    for size in [0u64, 1, 9_999, 10_001, 20_000, 1 << 40, u64::MAX] {
        let bytes = patched(&base, |b| set_u64(b, record + B::SIZE, size));
        match read_big(bytes) {
            Err(Error::Malformed(message)) => assert!(message.contains("big.bin"), "{message}"),
            other => panic!(
                "declared size {size}: expected Malformed, got {:?}",
                other.map(|data| data.len())
            ),
        }
    }
}

#[test]
fn zstd_bomb_stops_at_the_declared_size() {
    // 64 MiB of zeros compresses to a few KiB; declared as 100 bytes, reading must stop early.
    let content = vec![0u8; 64 << 20];
    let (base, record) = zstd_archive(&content);
    drop(content);
    let bytes = patched(&base, |b| set_u64(b, record + B::SIZE, 100));
    let started = std::time::Instant::now();
    assert!(matches!(read_big(bytes), Err(Error::Malformed(_))));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "decompressed past the declared size"
    );
}

#[test]
fn zstd_blob_that_is_not_zstd_is_a_decompress_error() {
    let content = compressible("garbage ", 5_000);
    let (base, record) = zstd_archive(&content);
    let bytes = patched(&base, |b| {
        let start = get_u64(b, H::DATA_OFFSET) as usize + get_u64(b, record + B::OFFSET) as usize;
        let stored = get_u64(b, record + B::STORED_SIZE) as usize;
        let garbage = Rng(5).bytes(stored);
        b[start..start + stored].copy_from_slice(&garbage);
        // A correct checksum for the garbage, so that decompression is what fails.
        set_u64(b, record + B::CHECKSUM, xxhash_rust::xxh3::xxh3_64(&garbage));
    });
    match read_big(bytes) {
        Err(Error::Decompress { entry, role, .. }) => {
            assert_eq!((entry.as_str(), role), ("big.bin", "content"))
        }
        other => panic!("expected Decompress, got {:?}", other.map(|data| data.len())),
    }
}

#[test]
fn zstd_blob_truncated_with_a_matching_checksum_is_rejected() {
    let content = compressible("cut short ", 5_000);
    let (base, record) = zstd_archive(&content);
    let stored = get_u64(&base, record + B::STORED_SIZE);
    for keep in [0, 1, 4, stored / 2, stored - 1] {
        let bytes = patched(&base, |b| {
            let start =
                get_u64(b, H::DATA_OFFSET) as usize + get_u64(b, record + B::OFFSET) as usize;
            set_u64(b, record + B::STORED_SIZE, keep);
            let checksum = xxhash_rust::xxh3::xxh3_64(&b[start..start + keep as usize]);
            set_u64(b, record + B::CHECKSUM, checksum);
        });
        assert!(read_big(bytes).is_err(), "kept {keep} of {stored} stored bytes");
    }
}

#[test]
fn blob_from_another_archive_is_an_error_not_a_panic() {
    let big = Archive::from_vec(write(&every_kind(), None)).unwrap();
    let tiny = Archive::from_vec(small(None)).unwrap();
    for entry in big.entries() {
        for blob in entry.unwrap().blobs() {
            let blob = blob.unwrap();
            // Whatever the result, no panic; a blob past the tiny archive's data must be an error.
            let _ = tiny.data(&blob);
        }
    }
    let library = big.find(Namespace::Libraries, "libfoo.so.1").unwrap().unwrap();
    let content = library.blob(Role::Content).unwrap().unwrap();
    assert!(tiny.data(&content).is_err());

    // The archive's own blobs still read.
    let entry = tiny.find(Namespace::Modules, "c").unwrap().unwrap();
    let genuine = entry.blob(Role::Source).unwrap().unwrap();
    assert_eq!(&tiny.data(&genuine).unwrap()[..], b"x=1\n");
}

/// A 64-bit ELF header with no program or section headers: an image of 64 bytes.
fn tiny_elf() -> Vec<u8> {
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2; // 64-bit
    elf[5] = 1; // little-endian
    elf
}

#[test]
fn an_executable_cut_short_says_so() {
    let archive = small(None);
    let mut whole = tiny_elf();
    whole.extend_from_slice(&archive);
    assert!(Archive::from_vec(whole.clone()).is_ok());
    for cut in [1, layout::TRAILER_SIZE, archive.len() / 2, archive.len() - 8] {
        let bytes = whole[..whole.len() - cut].to_vec();
        match Archive::from_vec(bytes) {
            Err(Error::CutShort { start, .. }) => assert_eq!(start, 64, "cut {cut}"),
            Err(other) => panic!("cut {cut}: expected CutShort, got {other:?}"),
            Ok(_) => panic!("cut {cut}: opened"),
        }
    }
    // An ELF file with nothing appended is no archive at all.
    assert!(matches!(Archive::from_vec(tiny_elf()), Err(Error::NotAnArchive)));
    let message = match Archive::from_vec(whole[..whole.len() - 100].to_vec()) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("opened"),
    };
    assert!(message.starts_with("the file is cut short"), "{message}");
}

#[test]
fn bytes_appended_to_an_executable_are_told_from_a_cut() {
    // A whole executable with bytes after its archive (a signature tool, a careless `cat >>`):
    // not "cut short", which would send the user after a download that was fine.
    let archive = small(None);
    let mut whole = tiny_elf();
    whole.extend_from_slice(&archive);
    let end = whole.len() as u64;
    for junk in [&b"x"[..], b"some junk appended", &[0u8; 4096]] {
        let mut bytes = whole.clone();
        bytes.extend_from_slice(junk);
        match Archive::from_vec(bytes) {
            Err(error @ Error::Appended { .. }) => {
                let Error::Appended { end: found, size } = error else { unreachable!() };
                assert_eq!((found, size), (end, end + junk.len() as u64));
                assert!(error.to_string().starts_with(&format!(
                    "the file has {} bytes after its archive, which ends at byte {end}",
                    junk.len()
                )));
            }
            Err(other) => panic!("{} appended: expected Appended, got {other:?}", junk.len()),
            Ok(_) => panic!("{} appended: opened", junk.len()),
        }
    }
}

#[test]
fn decompress_into_fills_the_buffer_or_says_what_is_wrong() {
    let content = compressible("in place ", 10_000);
    let (base, record) = zstd_archive(&content);
    let directory = std::env::temp_dir().join(format!("ingot-into-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    // From memory, and from a file (whose stored bytes are read into a map of their own).
    let into = |bytes: Vec<u8>, size: usize, from_file: bool| -> Result<Vec<u8>> {
        let archive = if from_file {
            let path = directory.join("a.ingot");
            std::fs::write(&path, &bytes).unwrap();
            Archive::open_path(&path).unwrap()
        } else {
            Archive::from_vec(bytes).unwrap()
        };
        let entry = archive.find(Namespace::Files, "big.bin").unwrap().unwrap();
        let blob = entry.blob(Role::Content).unwrap().unwrap();
        let mut out = vec![0u8; size];
        archive.decompress_into(&blob, &mut out).map(|()| out)
    };
    for from_file in [false, true] {
        assert_eq!(into(base.clone(), content.len(), from_file).unwrap(), content);
        // A buffer of another size than the blob declares.
        let short = into(base.clone(), content.len() - 1, from_file);
        assert!(matches!(short, Err(Error::Malformed(_))));
        // A declared size that lies: more, or fewer, bytes than the frame holds.
        for size in [9_999u64, 10_001] {
            let bytes = patched(&base, |b| set_u64(b, record + B::SIZE, size));
            assert!(into(bytes, size as usize, from_file).is_err(), "declared size {size}");
        }
        // Damaged stored bytes: the checksum says so before anything is decompressed.
        let at = data_offset(&base) + get_u64(&base, record + B::OFFSET) as usize + 20;
        let damaged = patched(&base, |b| b[at] ^= 0xff);
        let found = into(damaged, content.len(), from_file);
        assert!(matches!(found, Err(Error::DataChecksum { .. })), "{from_file}: {found:?}");
    }
    std::fs::remove_dir_all(&directory).unwrap();
}
