//! The writer refuses what a reader could not look up or an importer could not use safely, and a
//! refused `add` leaves the writer as it was.

mod common;

use common::*;
use ingot_format::{ArchiveWriter, Error, Kind, Role};

fn writer() -> ArchiveWriter {
    ArchiveWriter::new(options(None))
}

fn blobs_for(kind: Kind) -> Vec<(Role, Vec<u8>)> {
    match kind {
        Kind::Module | Kind::Package => vec![(Role::Source, b"pass\n".to_vec())],
        Kind::NamespacePackage => vec![],
        _ => vec![(Role::Content, b"bytes".to_vec())],
    }
}

fn assert_invalid_name(kind: Kind, name: &str) {
    let mut writer = writer();
    match writer.add(kind, name, blobs_for(kind)) {
        Err(Error::InvalidName { name: named, .. }) => assert_eq!(named, name),
        other => panic!("{} `{name:?}`: expected InvalidName, got {other:?}", kind.label()),
    }
    assert!(writer.is_empty(), "a refused entry is not added");
    assert!(!writer.contains(kind, name));
}

#[test]
fn writer_rejects_empty_names_of_every_kind() {
    for kind in Kind::ALL {
        assert_invalid_name(kind, "");
    }
}

#[test]
fn writer_rejects_names_with_a_nul_byte_of_every_kind() {
    for kind in Kind::ALL {
        for name in ["\0", "a\0", "a\0b", "pkg/\0"] {
            assert_invalid_name(kind, name);
        }
    }
}

#[test]
fn writer_rejects_module_names_with_empty_parts() {
    for kind in [Kind::Module, Kind::Package, Kind::NamespacePackage, Kind::ExtensionModule] {
        for name in [".", "..", ".a", "a.", "a..b", "a.b.", "...", "a...b"] {
            assert_invalid_name(kind, name);
        }
    }
}

#[test]
fn writer_rejects_module_names_with_path_separators() {
    for kind in [Kind::Module, Kind::Package, Kind::NamespacePackage, Kind::ExtensionModule] {
        for name in ["/a", "a/b", "a\\b", "../a", "/etc/passwd"] {
            assert_invalid_name(kind, name);
        }
    }
}

#[test]
fn writer_rejects_absolute_and_dot_dot_file_paths() {
    for kind in [Kind::DataFile, Kind::DistInfoFile] {
        for name in [
            "/etc/passwd",
            "/a",
            "..",
            "../a",
            "a/..",
            "a/../b",
            ".",
            "./a",
            "a/./b",
            "a//b",
            "a/",
            "a\\b",
            "\\a",
        ] {
            assert_invalid_name(kind, name);
        }
    }
}

#[test]
fn writer_rejects_shared_library_names_with_directories_or_dot_dot() {
    for name in ["/lib/libc.so.6", "lib/libc.so.6", "..", ".", "../libc.so.6", "a\\b"] {
        assert_invalid_name(Kind::SharedLibrary, name);
    }
}

#[test]
fn writer_accepts_ordinary_names() {
    let mut writer = writer();
    for (kind, name) in [
        (Kind::Module, "a"),
        (Kind::Module, "pkg.sub.mod"),
        (Kind::Module, "_private"),
        (Kind::Module, "naïve"),
        (Kind::Package, "pkg"),
        (Kind::NamespacePackage, "ns"),
        (Kind::ExtensionModule, "pkg._ext"),
        (Kind::DataFile, "pkg/data/x.json"),
        (Kind::DataFile, "pkg/..hidden"),
        (Kind::DataFile, "pkg/.hidden"),
        (Kind::DistInfoFile, "pkg-1.0.dist-info/METADATA"),
        (Kind::SharedLibrary, "libfoo.so.1"),
        (Kind::SharedLibrary, "..libweird"),
    ] {
        writer.add(kind, name, blobs_for(kind)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(writer.contains(kind, name));
    }
    assert_eq!(writer.len(), 13);
}

#[test]
fn writer_rejects_duplicate_names_within_a_name_space() {
    let mut writer = writer();
    writer.add(Kind::Module, "a", blobs_for(Kind::Module)).unwrap();
    for kind in [Kind::Module, Kind::Package, Kind::NamespacePackage, Kind::ExtensionModule] {
        match writer.add(kind, "a", blobs_for(kind)) {
            Err(Error::Duplicate { kind: existing, name }) => {
                assert_eq!(existing, "module");
                assert_eq!(name, "a");
            }
            other => panic!("{}: expected Duplicate, got {other:?}", kind.label()),
        }
    }
    writer.add(Kind::DataFile, "f", blobs_for(Kind::DataFile)).unwrap();
    assert!(matches!(
        writer.add(Kind::DistInfoFile, "f", blobs_for(Kind::DistInfoFile)),
        Err(Error::Duplicate { .. })
    ));
    writer.add(Kind::SharedLibrary, "l", blobs_for(Kind::SharedLibrary)).unwrap();
    assert!(matches!(
        writer.add(Kind::SharedLibrary, "l", blobs_for(Kind::SharedLibrary)),
        Err(Error::Duplicate { .. })
    ));
    assert_eq!(writer.len(), 3);
    // The first one added is the one that stays.
    let archive = ingot_format::Archive::from_vec(writer.to_vec().unwrap()).unwrap();
    let entry = archive.find(ingot_format::Namespace::Modules, "a").unwrap().unwrap();
    assert_eq!(entry.kind(), Some(Kind::Module));
}

#[test]
fn writer_allows_the_same_name_in_different_name_spaces() {
    let mut writer = writer();
    writer.add(Kind::Module, "x", blobs_for(Kind::Module)).unwrap();
    writer.add(Kind::DataFile, "x", blobs_for(Kind::DataFile)).unwrap();
    writer.add(Kind::SharedLibrary, "x", blobs_for(Kind::SharedLibrary)).unwrap();
    assert_eq!(writer.len(), 3);
}

#[test]
fn writer_rejects_roles_not_allowed_for_the_kind() {
    let all_roles = [
        Role::Source,
        Role::Bytecode(0),
        Role::Bytecode(1),
        Role::Bytecode(2),
        Role::Content,
        Role::Soname,
        Role::Needed,
    ];
    let allowed = |kind: Kind| -> Vec<Role> {
        match kind {
            Kind::Module | Kind::Package => {
                vec![Role::Source, Role::Bytecode(0), Role::Bytecode(1), Role::Bytecode(2)]
            }
            Kind::NamespacePackage => vec![],
            Kind::ExtensionModule | Kind::ExtensionPackage => vec![Role::Content, Role::Needed],
            Kind::DataFile | Kind::DistInfoFile => vec![Role::Content],
            Kind::SharedLibrary => vec![Role::Content, Role::Soname, Role::Needed],
        }
    };
    for kind in Kind::ALL {
        let name = match kind.namespace() {
            ingot_format::Namespace::Files => "d/f",
            _ => "n",
        };
        for role in all_roles {
            let mut writer = writer();
            let result = writer.add(kind, name, vec![(role, b"x".to_vec())]);
            if allowed(kind).contains(&role) {
                result.unwrap_or_else(|error| panic!("{} {}: {error}", kind.label(), role.label()));
            } else {
                match result {
                    Err(Error::InvalidRole { kind: label, name: named, role: role_label }) => {
                        assert_eq!(label, kind.label());
                        assert_eq!(named, name);
                        assert_eq!(role_label, role.label());
                    }
                    other => panic!(
                        "{} {}: expected InvalidRole, got {other:?}",
                        kind.label(),
                        role.label()
                    ),
                }
                assert!(writer.is_empty());
            }
        }
    }
}

#[test]
fn writer_rejects_bytecode_optimization_levels_above_2() {
    for level in [3, 9, 255] {
        let mut writer = writer();
        assert!(matches!(
            writer.add(Kind::Module, "m", vec![(Role::Bytecode(level), b"c".to_vec())]),
            Err(Error::InvalidRole { .. })
        ));
    }
}

#[test]
fn writer_rejects_the_same_role_twice_in_one_entry() {
    let mut writer = writer();
    let result = writer.add(
        Kind::Module,
        "m",
        vec![(Role::Source, b"a".to_vec()), (Role::Source, b"b".to_vec())],
    );
    assert!(result.is_err());
    let result = writer.add(
        Kind::SharedLibrary,
        "libx.so",
        vec![
            (Role::Needed, b"a\0".to_vec()),
            (Role::Content, b"elf".to_vec()),
            (Role::Needed, b"b\0".to_vec()),
        ],
    );
    assert!(result.is_err());
    assert!(writer.is_empty());
}
