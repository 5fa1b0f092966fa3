//! Opens arbitrary bytes as an archive and, when that succeeds, reads everything the API offers.
//!
//! Each input is tried twice: as it is (which mostly exercises the trailer, header and index
//! checksum checks), and with its checksums made right again (which lets mutations reach the range
//! checks, the lookups and zstd behind them). Any panic, out-of-bounds read or sanitizer report is
//! a bug; so is a broken invariant asserted below.

#![no_main]

use ingot_format::layout::{self, blob as B, header as H, trailer as T};
use ingot_format::{Archive, Namespace, Role};
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Blobs that declare more bytes than this are not read (an honest but huge declared size would
/// only measure the allocator); lying declared sizes below it are still read.
const MAX_READ: u64 = 16 << 20;

const NAMESPACES: [Namespace; 3] = [Namespace::Modules, Namespace::Files, Namespace::Libraries];
const ROLES: [Role; 7] = [
    Role::Source,
    Role::Bytecode(0),
    Role::Bytecode(1),
    Role::Bytecode(2),
    Role::Content,
    Role::Soname,
    Role::Needed,
];

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) -> Option<()> {
    bytes.get_mut(at..at.checked_add(8)?)?.copy_from_slice(&value.to_le_bytes());
    Some(())
}

/// Recomputes every blob checksum whose record and bytes can be found, then the index checksum
/// (xxh3-64 of header[0..88] ++ archive[96..data_offset]). `None` when there is no archive shape
/// to fix.
fn fix_checksums(bytes: &mut [u8]) -> Option<()> {
    let len = bytes.len();
    let size =
        usize::try_from(u64_at(bytes, len.checked_sub(layout::TRAILER_SIZE)? + T::ARCHIVE_SIZE)?)
            .ok()?;
    let archive = &mut bytes[len.checked_sub(size)?..];
    if archive.len() < layout::HEADER_SIZE {
        return None;
    }
    let blob_count = u32_at(archive, H::BLOB_COUNT)? as usize;
    let blobs_offset = usize::try_from(u64_at(archive, H::BLOBS_OFFSET)?).ok()?;
    let data_offset = usize::try_from(u64_at(archive, H::DATA_OFFSET)?).ok()?;
    for index in 0..blob_count.min(4096) {
        let Some(record) =
            index.checked_mul(layout::BLOB_SIZE).and_then(|at| at.checked_add(blobs_offset))
        else {
            break;
        };
        let field = |at: usize| record.checked_add(at);
        let (Some(offset), Some(stored), Some(checksum_at)) = (
            field(B::OFFSET).and_then(|at| u64_at(archive, at)),
            field(B::STORED_SIZE).and_then(|at| u64_at(archive, at)),
            field(B::CHECKSUM),
        ) else {
            break;
        };
        let range = usize::try_from(offset)
            .ok()
            .and_then(|offset| data_offset.checked_add(offset))
            .and_then(|start| Some(start..start.checked_add(usize::try_from(stored).ok()?)?));
        if let Some(checksum) = range.and_then(|range| archive.get(range)).map(xxh3_64) {
            put_u64(archive, checksum_at, checksum);
        }
    }
    let index_end = data_offset.clamp(layout::HEADER_SIZE, archive.len());
    let mut hasher = Xxh3::new();
    hasher.update(&archive[..H::INDEX_CHECKSUM]);
    hasher.update(&archive[layout::HEADER_SIZE..index_end]);
    put_u64(archive, H::INDEX_CHECKSUM, hasher.digest())
}

/// The longest prefix of `name` no longer than half of it, cut on a character boundary.
fn half(name: &str) -> &str {
    let mut end = name.len() / 2;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn exercise(bytes: Vec<u8>) {
    let total = bytes.len();
    let Ok(archive) = Archive::from_vec(bytes) else {
        return;
    };
    assert_eq!(archive.start_offset() as usize + archive.bytes().len(), total);
    let _ = archive.header();

    let mut names = Vec::new();
    let mut all_small = true;
    for entry in archive.entries() {
        let Ok(entry) = entry else { continue };
        let _ = (entry.kind(), entry.kind_tag());
        assert_eq!(archive.entry(entry.index()).map(|again| again.name()).ok(), Some(entry.name()));
        names.push(entry.name().to_string());
        for blob in entry.blobs() {
            let Ok(blob) = blob else { continue };
            if blob.size() > MAX_READ {
                all_small = false;
                continue;
            }
            let first = archive.data(&blob);
            let second = archive.data(&blob);
            match (&first, &second) {
                (Ok(first), Ok(second)) => {
                    assert_eq!(first, second, "two reads of one blob differ");
                    assert_eq!(
                        first.len() as u64,
                        blob.size(),
                        "data length is not the declared size"
                    );
                }
                (Err(_), Err(_)) => {}
                _ => panic!("a second read of a blob disagrees with the first"),
            }
        }
        for role in ROLES {
            let _ = entry.blob(role);
        }
    }
    for name in names.iter().map(String::as_str).chain(["", "a", "a.b", "zz", "\u{e9}"]) {
        for namespace in NAMESPACES {
            if let Ok(Some(found)) = archive.find(namespace, name) {
                assert_eq!(found.name(), name);
                assert_eq!(found.kind().map(|kind| kind.namespace()), Some(namespace));
            }
            for prefix in [name, half(name)] {
                let Ok(matches) = archive.find_prefix(namespace, prefix) else { continue };
                for found in matches.flatten() {
                    assert!(
                        found.name().starts_with(prefix),
                        "find_prefix returned a name without the prefix"
                    );
                    assert_eq!(found.kind().map(|kind| kind.namespace()), Some(namespace));
                }
            }
        }
    }
    if all_small {
        let _ = archive.verify_all();
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data.to_vec());
    let mut fixed = data.to_vec();
    if fix_checksums(&mut fixed).is_some() && fixed != data {
        exercise(fixed);
    }
});
