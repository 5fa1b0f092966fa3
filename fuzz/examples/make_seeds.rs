//! Writes a few valid archives into `seeds/archive_reader/`, the read-only seed corpus of the
//! `archive_reader` fuzz target. Run from `fuzz/`: `cargo run --example make_seeds`.

use std::path::Path;

use ingot_format::{ArchiveWriter, Kind, Role, WriterOptions};

fn options(zstd_level: Option<i32>) -> WriterOptions {
    WriterOptions { bytecode_magic: [0xa7, 0x0d, 0x0d, 0x0a], python_version: (3, 11), zstd_level }
}

fn text(seed: &str, len: usize) -> Vec<u8> {
    seed.bytes().cycle().take(len).collect()
}

fn every_kind(zstd_level: Option<i32>) -> ArchiveWriter {
    let mut writer = ArchiveWriter::new(options(zstd_level));
    let entries: Vec<(Kind, &str, Vec<(Role, Vec<u8>)>)> = vec![
        (Kind::Package, "pkg", vec![(Role::Source, text("# pkg\n", 40))]),
        (
            Kind::Module,
            "pkg.mod",
            vec![
                (Role::Source, text("x = 1\n", 200)),
                (Role::Bytecode(0), text("copt0", 120)),
                (Role::Bytecode(1), text("copt1", 120)),
                (Role::Bytecode(2), text("copt2", 120)),
            ],
        ),
        (Kind::NamespacePackage, "ns", vec![]),
        (
            Kind::ExtensionModule,
            "pkg._ext",
            vec![
                (Role::Content, text("\x7fELF\x02\x01\x01", 300)),
                (Role::Needed, b"libfoo.so.1\0libc.so.6\0".to_vec()),
            ],
        ),
        (Kind::DataFile, "pkg/data.txt", vec![(Role::Content, text("data ", 100))]),
        (
            Kind::DistInfoFile,
            "pkg-1.0.dist-info/METADATA",
            vec![(Role::Content, b"Name: pkg\nVersion: 1.0\n".to_vec())],
        ),
        (
            Kind::SharedLibrary,
            "libfoo.so.1",
            vec![
                (Role::Content, text("\x7fELFlib", 300)),
                (Role::Soname, b"libfoo.so.1".to_vec()),
                (Role::Needed, b"libc.so.6\0".to_vec()),
            ],
        ),
    ];
    for (kind, name, blobs) in entries {
        writer.add(kind, name, blobs).unwrap();
    }
    writer
}

fn main() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/archive_reader");
    std::fs::create_dir_all(&directory).unwrap();
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();

    seeds.push(("empty.ingot", ArchiveWriter::new(options(None)).to_vec().unwrap()));

    let mut one = ArchiveWriter::new(options(None));
    one.add(Kind::Module, "a", vec![(Role::Source, b"x=1\n".to_vec())]).unwrap();
    seeds.push(("one-module.ingot", one.to_vec().unwrap()));

    seeds.push(("every-kind.ingot", every_kind(None).to_vec().unwrap()));
    let zstd = every_kind(Some(3)).to_vec().unwrap();
    seeds.push(("every-kind-zstd.ingot", zstd.clone()));

    let mut appended = b"\x7fELF\x02\x01\x01\0not really an executable\0".to_vec();
    appended.resize(64, 0xcc);
    appended.extend_from_slice(&zstd);
    seeds.push(("appended-to-executable.bin", appended));

    let mut tree = ArchiveWriter::new(options(None));
    for name in ["a", "a.b", "a.b.c", "a.c", "a_", "ab", "b", "b.a"] {
        tree.add(Kind::Module, name, vec![(Role::Source, name.as_bytes().to_vec())]).unwrap();
    }
    tree.add(Kind::DataFile, "a/b", vec![(Role::Content, b"y".to_vec())]).unwrap();
    tree.add(Kind::SharedLibrary, "a.so", vec![(Role::Content, b"lib".to_vec())]).unwrap();
    seeds.push(("module-tree.ingot", tree.to_vec().unwrap()));

    for (name, bytes) in seeds {
        std::fs::write(directory.join(name), &bytes).unwrap();
        println!("{name}: {} bytes", bytes.len());
    }
}
