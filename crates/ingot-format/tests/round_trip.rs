//! Writer -> reader: what goes in comes out, in a deterministic byte layout, found by name, by
//! prefix, and through the trailer when the archive follows other bytes.

mod common;

use std::borrow::Cow;

use common::*;
use ingot_format::{layout, names};
use ingot_format::{Archive, ArchiveWriter, Kind, Namespace, Role};

/// Writes `entries`, reads the archive back and checks every entry, blob and header field.
fn check_round_trip(entries: &[Spec], zstd_level: Option<i32>) -> Archive {
    let bytes = write(entries, zstd_level);
    let archive = Archive::from_vec(bytes.clone()).unwrap();
    assert_eq!(archive.bytes(), &bytes[..]);
    assert_eq!(archive.start_offset(), 0);
    assert_eq!(archive.len(), entries.len());
    let header = archive.header();
    assert_eq!(header.version, layout::VERSION);
    assert_eq!(header.entry_count as usize, entries.len());
    assert_eq!(
        header.blob_count as usize,
        entries.iter().map(|(_, _, blobs)| blobs.len()).sum::<usize>()
    );
    assert_eq!(header.bytecode_magic, MAGIC);
    assert_eq!(header.python_version, (3, 11));

    for (kind, name, blobs) in entries {
        let entry = archive
            .find(kind.namespace(), name)
            .unwrap()
            .unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(entry.kind(), Some(*kind));
        assert_eq!(entry.kind_tag(), kind.tag());
        assert_eq!(entry.name(), *name);
        assert_eq!(archive.entry(entry.index()).unwrap().name(), *name);

        let mut expected: Vec<&(Role, Vec<u8>)> = blobs.iter().collect();
        expected.sort_by_key(|(role, _)| role.tag());
        let found: Vec<_> = entry.blobs().collect::<Result<_, _>>().unwrap();
        assert_eq!(found.len(), expected.len(), "{name}: blob count");
        for (blob, (role, content)) in found.iter().zip(&expected) {
            assert_eq!(blob.role(), *role, "{name}: blobs come in role order");
            assert_eq!(blob.size(), content.len() as u64);
            let data = archive.data(blob).unwrap();
            assert_eq!(&data[..], &content[..], "{name}: {} bytes", role.label());
            match zstd_level {
                None => {
                    assert_eq!(blob.compression(), layout::compression::NONE);
                    assert!(
                        matches!(data, Cow::Borrowed(_)),
                        "uncompressed data is borrowed from the archive"
                    );
                }
                Some(_) if content.len() >= 256 => {
                    assert_eq!(
                        blob.compression(),
                        layout::compression::ZSTD,
                        "{name}: {} compressed",
                        role.label()
                    );
                    assert!(blob.stored_size() < blob.size());
                }
                Some(_) => {}
            }
            assert_eq!(&entry.data(*role).unwrap().unwrap()[..], &content[..]);
        }
        for role in [
            Role::Source,
            Role::Bytecode(0),
            Role::Bytecode(1),
            Role::Bytecode(2),
            Role::Content,
            Role::Soname,
            Role::Needed,
        ] {
            if !blobs.iter().any(|(present, _)| *present == role) {
                assert!(entry.blob(role).unwrap().is_none(), "{name}: no {} blob", role.label());
                assert!(entry.data(role).unwrap().is_none());
            }
        }
    }
    archive.verify_all().unwrap();
    archive
}

fn one(kind: Kind) -> Vec<Spec> {
    every_kind().into_iter().filter(|(k, _, _)| *k == kind).collect()
}

#[test]
fn round_trip_module_with_source_and_bytecode_opt0_opt1_opt2() {
    check_round_trip(&one(Kind::Module), None);
}

#[test]
fn round_trip_module_with_source_and_bytecode_opt0_opt1_opt2_zstd() {
    check_round_trip(&one(Kind::Module), Some(3));
}

#[test]
fn round_trip_package() {
    check_round_trip(&one(Kind::Package), None);
}

#[test]
fn round_trip_package_zstd() {
    check_round_trip(&one(Kind::Package), Some(3));
}

#[test]
fn round_trip_namespace_package_has_no_blobs() {
    let archive = check_round_trip(&one(Kind::NamespacePackage), None);
    assert_eq!(archive.header().blob_count, 0);
    let archive = check_round_trip(&one(Kind::NamespacePackage), Some(3));
    assert_eq!(archive.find(Namespace::Modules, "nspkg").unwrap().unwrap().blobs().count(), 0);
}

#[test]
fn round_trip_extension_module_with_needed() {
    check_round_trip(&one(Kind::ExtensionModule), None);
}

#[test]
fn round_trip_extension_module_with_needed_zstd() {
    check_round_trip(&one(Kind::ExtensionModule), Some(3));
}

#[test]
fn round_trip_data_file() {
    check_round_trip(&one(Kind::DataFile), None);
}

#[test]
fn round_trip_data_file_zstd() {
    check_round_trip(&one(Kind::DataFile), Some(3));
}

#[test]
fn round_trip_dist_info_file() {
    check_round_trip(&one(Kind::DistInfoFile), None);
}

#[test]
fn round_trip_dist_info_file_zstd() {
    check_round_trip(&one(Kind::DistInfoFile), Some(3));
}

#[test]
fn round_trip_shared_library_with_soname_and_needed() {
    check_round_trip(&one(Kind::SharedLibrary), None);
}

#[test]
fn round_trip_shared_library_with_soname_and_needed_zstd() {
    check_round_trip(&one(Kind::SharedLibrary), Some(3));
}

#[test]
fn round_trip_every_kind_in_one_archive() {
    check_round_trip(&every_kind(), None);
    check_round_trip(&every_kind(), Some(3));
    check_round_trip(&every_kind(), Some(19));
}

#[test]
fn round_trip_empty_archive() {
    let archive = check_round_trip(&[], None);
    assert!(archive.is_empty());
    assert_eq!(archive.bytes().len(), layout::HEADER_SIZE + layout::TRAILER_SIZE);
    assert!(archive.find(Namespace::Modules, "a").unwrap().is_none());
    assert_eq!(archive.find_prefix(Namespace::Modules, "").unwrap().count(), 0);
    assert!(archive.entry(0).is_err());
}

#[test]
fn round_trip_empty_blobs_and_incompressible_blobs_under_zstd() {
    let entries = vec![
        (Kind::Module, "empty", vec![(Role::Source, vec![]), (Role::Bytecode(0), vec![])]),
        (Kind::DataFile, "noise.bin", vec![(Role::Content, Rng(7).bytes(100))]),
    ];
    let archive = check_round_trip(&entries, Some(3));
    let noise = archive.find(Namespace::Files, "noise.bin").unwrap().unwrap();
    let blob = noise.blob(Role::Content).unwrap().unwrap();
    assert_eq!(
        blob.compression(),
        layout::compression::NONE,
        "a blob zstd does not shrink is stored as is"
    );
}

#[test]
fn same_name_in_different_name_spaces_are_different_entries() {
    let entries = vec![
        (Kind::Module, "x", vec![(Role::Source, b"module".to_vec())]),
        (Kind::DataFile, "x", vec![(Role::Content, b"file".to_vec())]),
        (Kind::SharedLibrary, "x", vec![(Role::Content, b"library".to_vec())]),
    ];
    check_round_trip(&entries, None);
}

#[test]
fn blobs_are_16_aligned_and_tables_are_where_the_header_says() {
    let bytes = write(&every_kind(), None);
    let data_offset = get_u64(&bytes, layout::header::DATA_OFFSET) as usize;
    assert_eq!(data_offset % 16, 0);
    assert_eq!(get_u64(&bytes, layout::header::ENTRIES_OFFSET), layout::HEADER_SIZE as u64);
    let blob_count = get_u32(&bytes, layout::header::BLOB_COUNT) as usize;
    for index in 0..blob_count {
        let record = blob_record(&bytes, index);
        assert_eq!(get_u64(&bytes, record + layout::blob::OFFSET) % 16, 0);
    }
    let trailer = bytes.len() - layout::TRAILER_SIZE;
    assert_eq!(get_u64(&bytes, trailer + layout::trailer::ARCHIVE_SIZE), bytes.len() as u64);
    assert_eq!(bytes[trailer + layout::trailer::MAGIC..], layout::TRAILER_MAGIC);
    assert_eq!(bytes[..8], layout::HEADER_MAGIC);
}

#[test]
fn entries_iterate_in_name_space_then_name_order() {
    let bytes = write(&every_kind(), None);
    let archive = Archive::from_vec(bytes).unwrap();
    let keys: Vec<(Namespace, String)> = archive
        .entries()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.kind().unwrap().namespace(), entry.name().to_string())
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    for (index, entry) in archive.entries().enumerate() {
        assert_eq!(entry.unwrap().index() as usize, index);
    }
}

#[test]
fn determinism_same_entries_in_any_order_give_identical_bytes() {
    for zstd_level in [None, Some(3)] {
        let entries = every_kind();
        let reference = write(&entries, zstd_level);
        let mut reversed = entries.clone();
        reversed.reverse();
        assert_eq!(write(&reversed, zstd_level), reference);
        // Every rotation, and blobs of each entry handed over in reverse role order.
        for shift in 1..entries.len() {
            let mut rotated = entries.clone();
            rotated.rotate_left(shift);
            for (_, _, blobs) in &mut rotated {
                blobs.reverse();
            }
            assert_eq!(write(&rotated, zstd_level), reference, "rotation {shift}");
        }
        // Writing twice from one writer gives the same bytes too.
        let mut writer = ArchiveWriter::new(options(zstd_level));
        for (kind, name, blobs) in &entries {
            writer.add(*kind, name, blobs.clone()).unwrap();
        }
        assert_eq!(writer.to_vec().unwrap(), reference);
        assert_eq!(writer.to_vec().unwrap(), reference);
    }
}

#[test]
fn find_returns_none_for_absent_names() {
    let archive = Archive::from_vec(write(&every_kind(), None)).unwrap();
    for (namespace, name) in [
        (Namespace::Modules, ""),
        (Namespace::Modules, "a"),
        (Namespace::Modules, "pkg.mo"),
        (Namespace::Modules, "pkg.mod2"),
        (Namespace::Modules, "zzz"),
        (Namespace::Modules, "pkg/data/table.csv"),
        (Namespace::Files, "pkg"),
        (Namespace::Files, "pkg/data"),
        (Namespace::Libraries, "libfoo.so"),
        (Namespace::Libraries, "pkg.mod"),
    ] {
        assert!(archive.find(namespace, name).unwrap().is_none(), "{namespace:?} {name:?}");
    }
}

fn prefix_names(archive: &Archive, namespace: Namespace, prefix: &str) -> Vec<String> {
    archive
        .find_prefix(namespace, prefix)
        .unwrap()
        .map(|entry| entry.unwrap().name().to_string())
        .collect()
}

#[test]
fn find_prefix_returns_exactly_the_entries_under_a_prefix() {
    let module =
        |name: &'static str| (Kind::Module, name, vec![(Role::Source, name.as_bytes().to_vec())]);
    let entries: Vec<Spec> = vec![
        (Kind::Package, "a", vec![]),
        module("a.b"),
        module("a.b.c"),
        module("a.c"),
        module("a_"),
        module("ab"),
        module("b"),
        module("b.a"),
        (Kind::NamespacePackage, "z", vec![]),
        (Kind::DataFile, "a.b/x", vec![(Role::Content, b"x".to_vec())]),
        (Kind::DataFile, "a/b", vec![(Role::Content, b"y".to_vec())]),
        (Kind::DistInfoFile, "a-1.dist-info/RECORD", vec![(Role::Content, b"z".to_vec())]),
        (Kind::SharedLibrary, "a.so", vec![(Role::Content, b"lib".to_vec())]),
    ];
    let archive = Archive::from_vec(write(&entries, None)).unwrap();

    assert_eq!(prefix_names(&archive, Namespace::Modules, "a."), ["a.b", "a.b.c", "a.c"]);
    assert_eq!(prefix_names(&archive, Namespace::Modules, "a.b."), ["a.b.c"]);
    assert_eq!(
        prefix_names(&archive, Namespace::Modules, "a"),
        ["a", "a.b", "a.b.c", "a.c", "a_", "ab"]
    );
    assert_eq!(prefix_names(&archive, Namespace::Modules, "b"), ["b", "b.a"]);
    assert_eq!(
        prefix_names(&archive, Namespace::Files, "a"),
        ["a-1.dist-info/RECORD", "a.b/x", "a/b"]
    );
    assert_eq!(prefix_names(&archive, Namespace::Files, "a/"), ["a/b"]);
    assert_eq!(prefix_names(&archive, Namespace::Libraries, ""), ["a.so"]);
    assert!(prefix_names(&archive, Namespace::Modules, "c").is_empty());
    assert!(prefix_names(&archive, Namespace::Modules, "zz").is_empty());
    assert!(prefix_names(&archive, Namespace::Libraries, "b").is_empty());

    // Against a brute-force filter, for every prefix of every name and a few that match nothing.
    let mut prefixes = vec![String::new(), "0".to_string(), "~".to_string(), "a.b.c.d".to_string()];
    for (_, name, _) in &entries {
        for end in 0..=name.len() {
            prefixes.push(name[..end].to_string());
        }
    }
    for namespace in [Namespace::Modules, Namespace::Files, Namespace::Libraries] {
        for prefix in &prefixes {
            let mut expected: Vec<String> = entries
                .iter()
                .filter(|(kind, name, _)| {
                    kind.namespace() == namespace && name.starts_with(prefix.as_str())
                })
                .map(|(_, name, _)| name.to_string())
                .collect();
            expected.sort();
            assert_eq!(
                prefix_names(&archive, namespace, prefix),
                expected,
                "{namespace:?} {prefix:?}"
            );
        }
    }
}

/// Leading bytes that look like an executable and hold decoy magics.
fn leading_bytes(len: usize) -> Vec<u8> {
    let mut bytes = Rng(len as u64 + 1).bytes(len);
    if len >= 4 {
        bytes[..4].copy_from_slice(b"\x7fELF");
    }
    if len >= 40 {
        bytes[8..16].copy_from_slice(&layout::HEADER_MAGIC);
        bytes[24..32].copy_from_slice(&layout::TRAILER_MAGIC);
    }
    bytes
}

#[test]
fn archive_appended_after_leading_bytes_is_found_through_the_trailer() {
    let archive_bytes = small(Some(3));
    for leading in [0, 1, 7, 16, 100, 4096 + 3] {
        let mut file = leading_bytes(leading);
        file.extend_from_slice(&archive_bytes);
        let archive = Archive::from_vec(file).unwrap();
        assert_eq!(archive.start_offset(), leading as u64);
        assert_eq!(archive.bytes(), &archive_bytes[..]);
        let entry = archive.find(Namespace::Modules, "c").unwrap().unwrap();
        assert_eq!(&entry.data(Role::Source).unwrap().unwrap()[..], b"x=1\n");
        archive.verify_all().unwrap();
    }
}

#[test]
fn archive_appended_after_another_archive_opens_the_last_one() {
    let first = small(None);
    let second = write(&one(Kind::SharedLibrary), None);
    let mut both = first.clone();
    both.extend_from_slice(&second);
    let archive = Archive::from_vec(both).unwrap();
    assert_eq!(archive.start_offset(), first.len() as u64);
    assert!(archive.find(Namespace::Libraries, "libfoo.so.1").unwrap().is_some());
    assert!(archive.find(Namespace::Modules, "c").unwrap().is_none());
}

#[test]
fn write_file_then_open_path_reads_the_archive_also_when_appended_to_an_executable() {
    let directory = std::env::temp_dir().join(format!("ingot-format-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("plain.ingot");
    let mut writer = ArchiveWriter::new(options(Some(3)));
    for (kind, name, blobs) in every_kind() {
        writer.add(kind, name, blobs).unwrap();
    }
    let size = writer.write_file(&path).unwrap();
    let written = std::fs::read(&path).unwrap();
    assert_eq!(written.len() as u64, size);
    assert_eq!(written, writer.to_vec().unwrap());
    let archive = Archive::open_path(&path).unwrap();
    assert_eq!(archive.len(), every_kind().len());
    archive.verify_all().unwrap();

    let executable = directory.join("app");
    let mut bytes = leading_bytes(12345);
    bytes.extend_from_slice(&written);
    std::fs::write(&executable, &bytes).unwrap();
    let archive = Archive::open_path(&executable).unwrap();
    assert_eq!(archive.start_offset(), 12345);
    assert_eq!(archive.bytes(), &written[..]);
    archive.verify_all().unwrap();

    let empty = directory.join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(Archive::open_path(&empty), Err(ingot_format::Error::NotAnArchive)));
    assert!(matches!(
        Archive::open_path(&directory.join("missing")),
        Err(ingot_format::Error::Io { .. })
    ));
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn from_static_reads_an_archive_in_static_memory() {
    let bytes: &'static [u8] = Box::leak(small(None).into_boxed_slice());
    let archive = Archive::from_static(bytes).unwrap();
    let entry = archive.find(Namespace::Files, "a/d.txt").unwrap().unwrap();
    let data = entry.data(Role::Content).unwrap().unwrap();
    assert!(matches!(data, Cow::Borrowed(_)));
    assert_eq!(&data[..], b"hello");
    // Zero copy: the bytes are the archive's own, inside its data region.
    let data_offset = get_u64(bytes, layout::header::DATA_OFFSET) as usize;
    let region = bytes[data_offset..].as_ptr_range();
    assert!(region.contains(&data.as_ptr()));
    assert_eq!((data.as_ptr() as usize - bytes.as_ptr() as usize) % 16, 0);
}

fn format_md() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format.md");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn worked_example_in_format_md_is_what_the_writer_writes() {
    let mut documented = Vec::new();
    for line in format_md().lines() {
        let Some((address, rest)) = line.split_once(": ") else { continue };
        if address.len() != 8 || !address.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            continue;
        }
        assert_eq!(
            usize::from_str_radix(address, 16).unwrap(),
            documented.len(),
            "dump line {address}"
        );
        let hex = rest.split("  ").next().unwrap();
        documented.extend(hex.split_whitespace().map(|byte| u8::from_str_radix(byte, 16).unwrap()));
    }
    let mut writer = ArchiveWriter::new(options(None));
    writer.add(Kind::Module, "a", vec![(Role::Source, b"x=1\n".to_vec())]).unwrap();
    assert_eq!(
        documented,
        writer.to_vec().unwrap(),
        "docs/format.md §4 no longer matches the writer"
    );
    let archive = Archive::from_vec(documented).unwrap();
    let entry = archive.find(Namespace::Modules, "a").unwrap().unwrap();
    assert_eq!(&entry.data(Role::Source).unwrap().unwrap()[..], b"x=1\n");
}

/// The rows `| offset | width | type | field | ... |` of the table under the heading that starts
/// with `heading`.
fn documented_fields(doc: &str, heading: &str) -> Vec<(usize, usize, String)> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        if line.starts_with("### ") {
            inside = line.starts_with(heading);
            continue;
        }
        if !inside || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if let (Ok(offset), Ok(width)) = (cells[1].parse(), cells[2].parse()) {
            rows.push((offset, width, cells[4].trim_matches('`').to_string()));
        }
    }
    assert!(!rows.is_empty(), "no field table under {heading}");
    rows
}

#[test]
fn field_tables_in_format_md_match_layout_rs() {
    use layout::{blob as B, entry as E, header as H, trailer as T};
    let doc = format_md();
    let expect = |heading: &str, size: usize, fields: &[(&str, usize, usize)]| {
        let documented = documented_fields(&doc, heading);
        let expected: Vec<(usize, usize, String)> = fields
            .iter()
            .map(|(name, offset, width)| (*offset, *width, name.to_string()))
            .collect();
        assert_eq!(documented, expected, "{heading}");
        let (last_offset, last_width, _) = documented.last().unwrap();
        assert_eq!(last_offset + last_width, size, "{heading}: fields fill the record");
        for pair in documented.windows(2) {
            assert_eq!(
                pair[0].0 + pair[0].1,
                pair[1].0,
                "{heading}: {} is followed by {}",
                pair[0].2,
                pair[1].2
            );
        }
    };
    expect(
        "### Header",
        layout::HEADER_SIZE,
        &[
            ("magic", H::MAGIC, 8),
            ("version", H::VERSION, 4),
            ("flags", H::FLAGS, 4),
            ("entry_count", H::ENTRY_COUNT, 4),
            ("blob_count", H::BLOB_COUNT, 4),
            ("entries_offset", H::ENTRIES_OFFSET, 8),
            ("blobs_offset", H::BLOBS_OFFSET, 8),
            ("names_offset", H::NAMES_OFFSET, 8),
            ("names_size", H::NAMES_SIZE, 8),
            ("data_offset", H::DATA_OFFSET, 8),
            ("data_size", H::DATA_SIZE, 8),
            ("bytecode_magic", H::BYTECODE_MAGIC, 4),
            ("python_major", H::PYTHON_MAJOR, 1),
            ("python_minor", H::PYTHON_MINOR, 1),
            ("reserved", H::RESERVED, 10),
            ("index_checksum", H::INDEX_CHECKSUM, 8),
        ],
    );
    expect(
        "### Entry record",
        layout::ENTRY_SIZE,
        &[
            ("name_offset", E::NAME_OFFSET, 4),
            ("name_size", E::NAME_SIZE, 4),
            ("kind", E::KIND, 1),
            ("flags", E::FLAGS, 1),
            ("reserved", E::RESERVED, 2),
            ("first_blob", E::FIRST_BLOB, 4),
            ("blob_count", E::BLOB_COUNT, 4),
            ("reserved2", E::RESERVED2, 4),
        ],
    );
    expect(
        "### Blob record",
        layout::BLOB_SIZE,
        &[
            ("role", B::ROLE, 1),
            ("compression", B::COMPRESSION, 1),
            ("reserved", B::RESERVED, 6),
            ("offset", B::OFFSET, 8),
            ("stored_size", B::STORED_SIZE, 8),
            ("size", B::SIZE, 8),
            ("checksum", B::CHECKSUM, 8),
        ],
    );
    expect(
        "### Trailer",
        layout::TRAILER_SIZE,
        &[("archive_size", T::ARCHIVE_SIZE, 8), ("magic", T::MAGIC, 8)],
    );
}

#[test]
fn tag_tables_in_format_md_match_layout_rs() {
    // Each kind and role row of §2 starts with `| tag | `label``.
    let doc = format_md();
    let row = |tag: u8, label: &str| format!("| {tag:<3} | `{label}`");
    for kind in Kind::ALL {
        assert!(
            doc.contains(&row(kind.tag(), kind.label())),
            "kind {} = {}",
            kind.label(),
            kind.tag()
        );
    }
    for role in [
        Role::Source,
        Role::Bytecode(0),
        Role::Bytecode(1),
        Role::Bytecode(2),
        Role::Content,
        Role::Soname,
        Role::Needed,
    ] {
        assert!(
            doc.contains(&row(role.tag(), role.label())),
            "role {} = {}",
            role.label(),
            role.tag()
        );
    }
    for (namespace, label) in [
        (Namespace::Modules, "modules"),
        (Namespace::Files, "files"),
        (Namespace::Libraries, "libraries"),
    ] {
        assert!(doc.contains(&row(namespace.tag(), label)), "name space {label}");
    }
}

#[test]
fn data_region_holds_bytecode_first_then_elf_metadata_then_sources_then_contents() {
    // The writer's layout, as docs/format.md §3 "Data region" describes it.
    let rank = |role: Role| match role {
        Role::Bytecode(level) => level,
        Role::Soname | Role::Needed => 3,
        Role::Source => 4,
        Role::Content => 5,
    };
    for zstd_level in [None, Some(3)] {
        let bytes = write(&every_kind(), zstd_level);
        let archive = Archive::from_vec(bytes.clone()).unwrap();
        let mut blobs = Vec::new();
        for entry in archive.entries() {
            for blob in entry.unwrap().blobs() {
                let blob = blob.unwrap();
                let record = blob_record(&bytes, blobs.len());
                blobs.push((
                    rank(blob.role()),
                    blobs.len(),
                    get_u64(&bytes, record + layout::blob::OFFSET),
                    blob.stored_size(),
                ));
            }
        }
        blobs.sort();
        let mut end = 0u64;
        for (rank, index, offset, stored_size) in blobs {
            assert_eq!(
                offset,
                end.next_multiple_of(16),
                "blob {index} (rank {rank}) follows the previous one"
            );
            end = offset + stored_size;
        }
        assert_eq!(get_u64(&bytes, layout::header::DATA_SIZE), end.next_multiple_of(16));
    }
}

/// Where `role`'s data of entry `name` starts in the archive (stored uncompressed).
fn data_offset_of(archive: &Archive, namespace: Namespace, name: &str, role: Role) -> usize {
    let data = archive.find(namespace, name).unwrap().unwrap().data(role).unwrap().unwrap();
    data.as_ptr() as usize - archive.bytes().as_ptr() as usize
}

#[test]
fn first_use_entries_lead_the_data_region_in_the_order_given() {
    let module = |name: &'static str| -> Spec {
        (
            Kind::Module,
            name,
            vec![
                (Role::Source, compressible(name, 300)),
                (Role::Bytecode(0), compressible(name, 200)),
                (Role::Bytecode(2), compressible(name, 100)),
            ],
        )
    };
    let entries: Vec<Spec> = vec![
        module("a"),
        module("b"),
        module("c"),
        (
            Kind::ExtensionModule,
            "ext",
            vec![
                (Role::Content, compressible("ELF", 400)),
                (Role::Needed, b"libz.so.1\0".to_vec()),
            ],
        ),
        (
            Kind::SharedLibrary,
            "libz.so.1",
            vec![(Role::Content, compressible("lib", 500)), (Role::Soname, b"libz.so.1".to_vec())],
        ),
    ];
    let mut writer = ArchiveWriter::new(options(None));
    for (kind, name, blobs) in &entries {
        writer.add(*kind, name, blobs.clone()).unwrap();
    }
    let plain = writer.to_vec().unwrap();
    writer.set_first_use([
        (Namespace::Modules, "c".to_string()),
        (Namespace::Modules, "ext".to_string()),
        (Namespace::Libraries, "libz.so.1".to_string()),
        (Namespace::Modules, "not-there".to_string()),
        (Namespace::Modules, "c".to_string()),
    ]);
    let ordered = writer.to_vec().unwrap();
    assert_eq!(ordered.len(), plain.len(), "the same blobs, elsewhere");
    let archive = Archive::from_vec(ordered.clone()).unwrap();
    let at = |namespace, name, role| data_offset_of(&archive, namespace, name, role);
    let start = at(Namespace::Modules, "c", Role::Bytecode(0));
    assert_eq!(
        start,
        get_u64(&ordered, layout::header::DATA_OFFSET) as usize,
        "c's bytecode comes first"
    );
    let sequence = [
        start,
        at(Namespace::Modules, "ext", Role::Needed),
        at(Namespace::Modules, "ext", Role::Content),
        at(Namespace::Libraries, "libz.so.1", Role::Soname),
        at(Namespace::Libraries, "libz.so.1", Role::Content),
        at(Namespace::Modules, "a", Role::Bytecode(0)),
        at(Namespace::Modules, "b", Role::Bytecode(0)),
    ];
    assert!(sequence.windows(2).all(|pair| pair[0] < pair[1]), "{sequence:?}");
    // What a start does not read stays behind: c's source and level-2 bytecode.
    assert!(
        at(Namespace::Modules, "c", Role::Source) > at(Namespace::Modules, "b", Role::Bytecode(0))
    );
    assert!(
        at(Namespace::Modules, "c", Role::Bytecode(2))
            > at(Namespace::Modules, "b", Role::Bytecode(0))
    );
    // Deterministic, and every entry reads back the same as from the archive without an order.
    assert_eq!(writer.to_vec().unwrap(), ordered);
    let unordered = Archive::from_vec(plain).unwrap();
    for (kind, name, blobs) in &entries {
        for (role, content) in blobs {
            let namespace = kind.namespace();
            assert_eq!(
                &archive.find(namespace, name).unwrap().unwrap().data(*role).unwrap().unwrap()[..],
                &content[..]
            );
            assert_eq!(
                &unordered.find(namespace, name).unwrap().unwrap().data(*role).unwrap().unwrap()[..],
                &content[..]
            );
        }
    }
}

/// Many small modules of a shared vocabulary, as a standard library has.
fn small_modules(count: usize) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    (0..count)
        .map(|n| {
            let source = format!("import os\nimport sys\n\ndef function_{n}(argument):\n    return os.path.join(sys.prefix, str(argument), 'module_{n}')\n").repeat(3);
            let bytecode = format!("\u{e3}code object function_{n} co_consts co_names os path join sys prefix str {n}").repeat(4);
            (format!("pkg.module_{n}"), source.into_bytes(), bytecode.into_bytes())
        })
        .collect()
}

#[test]
fn small_modules_compress_with_a_trained_dictionary_and_read_back() {
    let modules = small_modules(400);
    let mut writer = ArchiveWriter::new(options(Some(3)));
    for (name, source, bytecode) in &modules {
        writer
            .add(
                Kind::Module,
                name,
                vec![(Role::Source, source.clone()), (Role::Bytecode(0), bytecode.clone())],
            )
            .unwrap();
    }
    writer.set_first_use([(Namespace::Modules, "pkg.module_0".to_string())]);
    let size = writer.train_dictionary(16 << 10).unwrap().expect("enough samples for a dictionary");
    assert!(size > 0 && size <= 16 << 10);
    let archive = Archive::from_vec(writer.to_vec().unwrap()).unwrap();
    let dictionary = archive
        .find(Namespace::Files, names::ZSTD_DICTIONARY)
        .unwrap()
        .expect("the dictionary entry");
    assert_ne!(
        dictionary.blob(Role::Content).unwrap().unwrap().compression(),
        layout::compression::ZSTD_DICTIONARY
    );
    for (name, source, bytecode) in &modules {
        let entry = archive.find(Namespace::Modules, name).unwrap().unwrap();
        let code = entry.blob(Role::Bytecode(0)).unwrap().unwrap();
        if name == "pkg.module_0" {
            // Read by a start: stored as is, and borrowed from the map.
            assert_eq!(code.compression(), layout::compression::NONE);
            assert!(matches!(archive.data(&code).unwrap(), Cow::Borrowed(_)));
        } else {
            assert_eq!(code.compression(), layout::compression::ZSTD_DICTIONARY, "{name}");
        }
        assert_eq!(
            entry.blob(Role::Source).unwrap().unwrap().compression(),
            layout::compression::ZSTD_DICTIONARY
        );
        assert_eq!(&entry.data(Role::Source).unwrap().unwrap()[..], &source[..]);
        assert_eq!(&entry.data(Role::Bytecode(0)).unwrap().unwrap()[..], &bytecode[..]);
    }
    archive.verify_all().unwrap();
}

#[test]
fn a_blob_that_needs_a_missing_dictionary_is_an_error_not_a_panic() {
    let modules = small_modules(400);
    let mut writer = ArchiveWriter::new(options(Some(3)));
    for (name, source, _) in &modules {
        writer.add(Kind::Module, name, vec![(Role::Source, source.clone())]).unwrap();
    }
    writer.train_dictionary(16 << 10).unwrap().unwrap();
    let mut bytes = writer.to_vec().unwrap();
    // Rename the dictionary entry in the name region (same length, sorts the same way).
    let at = bytes
        .windows(names::ZSTD_DICTIONARY.len())
        .position(|window| window == names::ZSTD_DICTIONARY.as_bytes())
        .unwrap();
    bytes[at + names::ZSTD_DICTIONARY.len() - 1] = b'z';
    fix_index_checksum(&mut bytes);
    let archive = Archive::from_vec(bytes).unwrap();
    let entry = archive.find(Namespace::Modules, "pkg.module_1").unwrap().unwrap();
    let error = entry.data(Role::Source).unwrap_err().to_string();
    assert!(error.contains("zstd dictionary") && error.contains("pkg.module_1"), "{error}");
}

/// Every blob of `archive`, copied out with `copy_blob`, next to what `data` reads.
fn copies_match_data(archive: &Archive) -> usize {
    let mut blobs = 0;
    for entry in archive.entries() {
        for blob in entry.unwrap().blobs() {
            let blob = blob.unwrap();
            let mut copied = Vec::new();
            let size = archive
                .copy_blob(&blob, &mut copied, |out| {
                    out.clear();
                    Ok(())
                })
                .unwrap();
            assert_eq!(size, blob.size());
            assert_eq!(copied, &archive.data(&blob).unwrap()[..]);
            blobs += 1;
        }
    }
    blobs
}

#[test]
fn copy_blob_writes_what_data_reads_from_a_file_or_from_memory_stored_compressed_or_with_the_dictionary(
) {
    let directory = std::env::temp_dir().join(format!("ingot-format-copy-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let modules = small_modules(400);
    let mut writer = ArchiveWriter::new(options(Some(3)));
    for (kind, name, blobs) in every_kind() {
        writer.add(kind, name, blobs).unwrap();
    }
    for (name, source, bytecode) in &modules {
        writer
            .add(
                Kind::Module,
                name,
                vec![(Role::Source, source.clone()), (Role::Bytecode(0), bytecode.clone())],
            )
            .unwrap();
    }
    writer.set_first_use([(Namespace::Modules, "pkg.module_0".to_string())]);
    writer.train_dictionary(16 << 10).unwrap().unwrap();
    let path = directory.join("app");
    let mut bytes = leading_bytes(4097);
    bytes.extend_from_slice(&writer.to_vec().unwrap());
    std::fs::write(&path, &bytes).unwrap();

    let from_file = Archive::open_path(&path).unwrap();
    let mut compressions = std::collections::BTreeSet::new();
    for entry in from_file.entries() {
        for blob in entry.unwrap().blobs() {
            compressions.insert(blob.unwrap().compression());
        }
    }
    assert_eq!(
        compressions.into_iter().collect::<Vec<_>>(),
        [
            layout::compression::NONE,
            layout::compression::ZSTD,
            layout::compression::ZSTD_DICTIONARY
        ]
    );
    let blobs = copies_match_data(&from_file);
    assert_eq!(copies_match_data(&Archive::from_vec(bytes[4097..].to_vec()).unwrap()), blobs);
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn copy_blob_of_a_damaged_blob_is_a_checksum_error_and_a_failing_writer_is_a_write_error() {
    let directory =
        std::env::temp_dir().join(format!("ingot-format-copy-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let content = b"\x7fELF pretend shared library ".repeat(300);
    for level in [None, Some(3)] {
        let mut writer = ArchiveWriter::new(options(level));
        writer
            .add(Kind::SharedLibrary, "libdemo.so.1", vec![(Role::Content, content.clone())])
            .unwrap();
        let mut bytes = writer.to_vec().unwrap();
        let archive = Archive::from_vec(bytes.clone()).unwrap();
        let blob = archive
            .find(Namespace::Libraries, "libdemo.so.1")
            .unwrap()
            .unwrap()
            .blob(Role::Content)
            .unwrap()
            .unwrap();
        let at = archive.stored_range(&blob).unwrap().start + 40;
        bytes[at] ^= 0x55;
        let path = directory.join("damaged");
        std::fs::write(&path, &bytes).unwrap();
        let damaged = Archive::open_path(&path).unwrap();
        let blob = damaged
            .find(Namespace::Libraries, "libdemo.so.1")
            .unwrap()
            .unwrap()
            .blob(Role::Content)
            .unwrap()
            .unwrap();
        let mut restarts = 0;
        let error = damaged
            .copy_blob(&blob, &mut Vec::new(), |out| {
                restarts += 1;
                out.clear();
                Ok(())
            })
            .unwrap_err();
        // Read from the file, then once more from the map, which decides.
        assert_eq!(restarts, 1, "{level:?}");
        let message = error.to_string();
        assert!(
            matches!(
                error,
                ingot_format::Error::DataChecksum { .. } | ingot_format::Error::Decompress { .. }
            ) && message.contains("libdemo.so.1"),
            "{level:?}: {message}"
        );

        struct Full;
        impl std::io::Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("no space left"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let blob = archive
            .find(Namespace::Libraries, "libdemo.so.1")
            .unwrap()
            .unwrap()
            .blob(Role::Content)
            .unwrap()
            .unwrap();
        let error = archive.copy_blob(&blob, &mut Full, |_| Ok(())).unwrap_err();
        assert!(matches!(error, ingot_format::Error::Copy { reading: false, .. }), "{error:?}");
        assert!(error.to_string().contains("libdemo.so.1"), "{error}");
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn what_a_start_reads_stays_stored_as_is_native_images_included() {
    let image = b"\x7fELF native code, copied into a memory file when loaded ".repeat(200);
    let mut writer = ArchiveWriter::new(options(Some(3)));
    writer
        .add(
            Kind::ExtensionModule,
            "fast",
            vec![(Role::Content, image.clone()), (Role::Needed, b"libfoo.so.1\0".to_vec())],
        )
        .unwrap();
    writer.add(Kind::Module, "slow", vec![(Role::Bytecode(0), b"bytecode ".repeat(300))]).unwrap();
    writer
        .add(Kind::DataFile, "pkg/table.txt", vec![(Role::Content, b"row\n".repeat(500))])
        .unwrap();
    writer.add(Kind::Module, "later", vec![(Role::Bytecode(0), b"bytecode ".repeat(300))]).unwrap();
    writer.set_first_use([
        (Namespace::Modules, "fast".to_string()),
        (Namespace::Modules, "slow".to_string()),
        (Namespace::Files, "pkg/table.txt".to_string()),
    ]);
    let archive = Archive::from_vec(writer.to_vec().unwrap()).unwrap();
    let blob = |namespace, name, role| {
        archive.find(namespace, name).unwrap().unwrap().blob(role).unwrap().unwrap()
    };
    assert_eq!(
        blob(Namespace::Modules, "fast", Role::Content).compression(),
        layout::compression::NONE
    );
    assert_eq!(
        blob(Namespace::Modules, "fast", Role::Needed).compression(),
        layout::compression::NONE
    );
    assert_eq!(
        blob(Namespace::Modules, "slow", Role::Bytecode(0)).compression(),
        layout::compression::NONE
    );
    assert_eq!(
        blob(Namespace::Files, "pkg/table.txt", Role::Content).compression(),
        layout::compression::NONE
    );
    assert_eq!(
        blob(Namespace::Modules, "later", Role::Bytecode(0)).compression(),
        layout::compression::ZSTD
    );
    assert_eq!(
        &archive.data(&blob(Namespace::Modules, "fast", Role::Content)).unwrap()[..],
        &image[..]
    );
}

#[test]
fn reserved_files_table_in_format_md_lists_every_reserved_name() {
    let doc = format_md();
    let start = doc.find("### Files ingot reserves").expect("the reserved files section");
    let section = &doc[start..];
    let section = &section[..section[4..].find("\n### ").map_or(section.len(), |end| end + 4)];
    // The first cell of each table row: one or more names in backticks.
    let mut documented: Vec<String> = Vec::new();
    for line in section.lines().filter(|line| line.starts_with("| `")) {
        let cell = line.split('|').nth(1).unwrap();
        for name in cell.split('`').skip(1).step_by(2) {
            // `__ingot__/files/<pkg>.json` and `__ingot__/re/<16 hex digits>` stand for prefixes.
            let name = name.find('<').map_or(name, |at| &name[..at]);
            documented.push(name.to_string());
        }
    }
    documented.sort();
    documented.dedup();
    let mut reserved: Vec<String> = names::RESERVED.iter().map(|name| name.to_string()).collect();
    reserved.sort();
    assert_eq!(documented, reserved);
    for name in names::RESERVED {
        assert!(name.starts_with(names::RESERVED_PREFIX), "{name}");
    }
}

/// A `WriterCache` in memory, counting what it is asked and given.
#[derive(Default)]
struct MemoryCache {
    values: std::sync::Mutex<std::collections::HashMap<u128, Vec<u8>>>,
    hits: std::sync::atomic::AtomicUsize,
}

impl ingot_format::WriterCache for MemoryCache {
    fn get(&self, key: u128) -> Option<Vec<u8>> {
        let found = self.values.lock().unwrap().get(&key).cloned();
        if found.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        found
    }

    fn put(&self, key: u128, value: &[u8]) {
        self.values.lock().unwrap().insert(key, value.to_vec());
    }
}

fn archive_of(
    modules: &[(String, Vec<u8>, Vec<u8>)],
    cache: Option<std::sync::Arc<MemoryCache>>,
    untrained: &[&str],
) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(options(Some(3)));
    for (name, source, bytecode) in modules {
        let blobs = vec![(Role::Source, source.clone()), (Role::Bytecode(0), bytecode.clone())];
        writer.add(Kind::Module, name, blobs).unwrap();
    }
    if let Some(cache) = cache {
        writer.set_cache(cache);
    }
    writer.set_untrained(untrained.iter().map(|name| (Namespace::Modules, name.to_string())));
    writer.set_first_use([(Namespace::Modules, "pkg.module_0".to_string())]);
    writer.train_dictionary(16 << 10).unwrap().expect("a dictionary");
    writer.to_vec().unwrap()
}

#[test]
fn a_cache_gives_the_same_archive_and_a_wrong_cached_blob_is_not_used() {
    let modules = small_modules(300);
    let plain = archive_of(&modules, None, &[]);
    let cache = std::sync::Arc::new(MemoryCache::default());
    assert_eq!(archive_of(&modules, Some(cache.clone()), &[]), plain);
    let stored = cache.values.lock().unwrap().len();
    assert!(stored > 300, "{stored} values kept");
    assert_eq!(archive_of(&modules, Some(cache.clone()), &[]), plain);
    assert!(cache.hits.load(std::sync::atomic::Ordering::Relaxed) >= stored);
    // Every value replaced by another's (valid zstd data, the wrong bytes): none is taken.
    {
        let mut values = cache.values.lock().unwrap();
        let other = values.values().max_by_key(|value| value.len()).unwrap().clone();
        for value in values.values_mut() {
            *value = other.clone();
        }
    }
    assert_eq!(archive_of(&modules, Some(cache), &[]), plain);
}

#[test]
fn modules_left_out_of_training_change_without_changing_the_dictionary() {
    let mut modules = small_modules(300);
    let dictionary = |archive: Vec<u8>| {
        let archive = Archive::from_vec(archive).unwrap();
        let entry = archive.find(Namespace::Files, names::ZSTD_DICTIONARY).unwrap().unwrap();
        archive.data(&entry.blob(Role::Content).unwrap().unwrap()).unwrap().into_owned()
    };
    let before = dictionary(archive_of(&modules, None, &["pkg.module_7"]));
    modules[7].1 = b"an edit of the application's own module\n".repeat(20);
    assert_eq!(dictionary(archive_of(&modules, None, &["pkg.module_7"])), before);
    assert_ne!(dictionary(archive_of(&modules, None, &[])), before);
}

#[test]
fn large_blobs_are_compressed_at_their_own_level_and_read_back() {
    let text: Vec<u8> =
        (0..40_000).flat_map(|n: u32| format!("line {n} of a data file\n").into_bytes()).collect();
    let archive_with = |large: Option<i32>| {
        let mut options = options(Some(19));
        options.large_zstd_level = large;
        let mut writer = ArchiveWriter::new(options);
        writer.add(Kind::DataFile, "pkg/data.txt", vec![(Role::Content, text.clone())]).unwrap();
        writer
            .add(Kind::DataFile, "pkg/small.txt", vec![(Role::Content, text[..1000].to_vec())])
            .unwrap();
        writer.to_vec().unwrap()
    };
    let (slow, fast) = (archive_with(None), archive_with(Some(1)));
    assert_ne!(slow, fast);
    for bytes in [slow, fast] {
        let archive = Archive::from_vec(bytes).unwrap();
        let entry = archive.find(Namespace::Files, "pkg/data.txt").unwrap().unwrap();
        let blob = entry.blob(Role::Content).unwrap().unwrap();
        assert_eq!(blob.compression(), layout::compression::ZSTD);
        assert_eq!(archive.data(&blob).unwrap().as_ref(), &text[..]);
    }
    // A small blob is compressed at the level given for all.
    let small_of = |bytes: Vec<u8>| {
        let archive = Archive::from_vec(bytes).unwrap();
        let entry = archive.find(Namespace::Files, "pkg/small.txt").unwrap().unwrap();
        archive.data(&entry.blob(Role::Content).unwrap().unwrap()).unwrap().into_owned()
    };
    assert_eq!(small_of(archive_with(Some(1))), &text[..1000]);
}

#[test]
fn large_native_images_a_start_reads_are_compressed_only_when_asked() {
    // Issue 42: a first-use shared library of 1 MiB or more is compressed at the native level;
    // a small one, and bytecode a start reads, stay as they are.
    let big = compressible("big", ingot_format::NATIVE_BLOB_MIN + 1);
    assert!(big.len() >= ingot_format::NATIVE_BLOB_MIN);
    let small = compressible("small", 4000);
    let archive_with = |native: Option<i32>| {
        let mut options = options(Some(3));
        options.native_zstd_level = native;
        let mut writer = ArchiveWriter::new(options);
        for (name, bytes) in [("libbig.so.1", &big), ("libsmall.so.1", &small)] {
            writer
                .add(
                    Kind::SharedLibrary,
                    name,
                    vec![(Role::Content, bytes.clone()), (Role::Soname, name.as_bytes().to_vec())],
                )
                .unwrap();
        }
        writer
            .add(
                Kind::Module,
                "m",
                vec![(Role::Bytecode(0), compressible("code", 200)), (Role::Source, b"x".to_vec())],
            )
            .unwrap();
        writer.set_first_use([
            (Namespace::Modules, "m".to_string()),
            (Namespace::Libraries, "libbig.so.1".to_string()),
            (Namespace::Libraries, "libsmall.so.1".to_string()),
        ]);
        Archive::from_vec(writer.to_vec().unwrap()).unwrap()
    };
    let compression = |archive: &Archive, namespace, name, role| {
        let entry = archive.find(namespace, name).unwrap().unwrap();
        let blob = entry.blob(role).unwrap().unwrap();
        (blob.compression(), archive.data(&blob).unwrap().into_owned())
    };
    let raw = layout::compression::NONE;
    let asked = archive_with(Some(1));
    let (tag, bytes) = compression(&asked, Namespace::Libraries, "libbig.so.1", Role::Content);
    assert_eq!((tag, bytes == big), (layout::compression::ZSTD, true));
    let (tag, bytes) = compression(&asked, Namespace::Libraries, "libsmall.so.1", Role::Content);
    assert_eq!((tag, bytes == small), (raw, true));
    assert_eq!(compression(&asked, Namespace::Modules, "m", Role::Bytecode(0)).0, raw);
    let not_asked = archive_with(None);
    assert_eq!(compression(&not_asked, Namespace::Libraries, "libbig.so.1", Role::Content).0, raw);
}

#[test]
fn bytecode_a_start_reads_is_compressed_only_when_asked() {
    // Issue 42: `ingot build --compress-start` trades the zero-copy start for size; by default
    // the bytecode a start reads stays in place, and its ELF metadata does in any case.
    let code = compressible("code", 20_000);
    let archive_with = |start: bool| {
        let mut options = options(Some(3));
        options.compress_start_bytecode = start;
        let mut writer = ArchiveWriter::new(options);
        writer
            .add(
                Kind::Module,
                "m",
                vec![(Role::Bytecode(0), code.clone()), (Role::Source, b"x = 1\n".repeat(50))],
            )
            .unwrap();
        writer
            .add(
                Kind::SharedLibrary,
                "libm.so.1",
                vec![
                    (Role::Content, compressible("lib", 4000)),
                    (Role::Soname, b"libm.so.1".to_vec()),
                ],
            )
            .unwrap();
        writer.set_first_use([
            (Namespace::Modules, "m".to_string()),
            (Namespace::Libraries, "libm.so.1".to_string()),
        ]);
        Archive::from_vec(writer.to_vec().unwrap()).unwrap()
    };
    let tag = |archive: &Archive, namespace, name, role| {
        let entry = archive.find(namespace, name).unwrap().unwrap();
        let blob = entry.blob(role).unwrap().unwrap();
        (blob.compression(), archive.data(&blob).unwrap().into_owned())
    };
    let raw = layout::compression::NONE;
    let (compressed, bytes) = tag(&archive_with(true), Namespace::Modules, "m", Role::Bytecode(0));
    assert_ne!(compressed, raw);
    assert_eq!(bytes, code);
    assert_eq!(tag(&archive_with(false), Namespace::Modules, "m", Role::Bytecode(0)).0, raw);
    let asked = archive_with(true);
    assert_eq!(tag(&asked, Namespace::Libraries, "libm.so.1", Role::Soname).0, raw);
    assert_eq!(tag(&asked, Namespace::Libraries, "libm.so.1", Role::Content).0, raw);
}
