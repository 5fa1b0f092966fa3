//! The ingot archive: Python modules, their data, their extension modules and the shared libraries
//! those need, in one indexed file that is read in place from a memory map.
//!
//! - [`Archive`] opens an archive (a whole file, or one appended to an executable) without parsing
//!   its index; [`Archive::find`] looks one entry up by binary search on the mapped bytes.
//! - `ArchiveWriter` (feature `writer`, on by default) writes one, deterministically.
//!
//! The byte layout is specified in `docs/format.md` and transcribed once, in [`layout`].

mod error;
pub mod layout;
pub mod names;
mod reader;
#[cfg(feature = "writer")]
mod writer;

pub use error::{chain, Error, Result};
pub use reader::{Archive, Blob, Entry, Header};
#[cfg(feature = "writer")]
pub use writer::{ArchiveWriter, WriterCache, WriterOptions, NATIVE_BLOB_MIN};

/// What an entry is. The tag values are in [`layout::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A module: `source` and/or `bytecode` blobs.
    Module,
    /// A regular package's `__init__`: `source` and/or `bytecode` blobs.
    Package,
    /// A namespace package: no blobs.
    NamespacePackage,
    /// A compiled extension module: `content` (the ELF image) and `needed` blobs.
    ExtensionModule,
    /// A package data file, named by its path relative to the import root: `content`.
    DataFile,
    /// A file of a `*.dist-info` directory, named by its path: `content`.
    DistInfoFile,
    /// A shared library that extension modules need: `content`, `soname`, `needed`.
    SharedLibrary,
    /// A package whose `__init__` is a compiled extension module (mypyc, Cython): `content` and
    /// `needed` blobs, as for an extension module. Since format version 2.
    ExtensionPackage,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Module,
        Kind::Package,
        Kind::NamespacePackage,
        Kind::ExtensionModule,
        Kind::DataFile,
        Kind::DistInfoFile,
        Kind::SharedLibrary,
        Kind::ExtensionPackage,
    ];

    /// Every kind in the order listings print them (`ingot pack`'s summary): by name space, then
    /// by tag. The importer exports their labels to Python as `ingot._ingot.KINDS`.
    pub const LISTED: [Kind; 8] = [
        Kind::Module,
        Kind::Package,
        Kind::NamespacePackage,
        Kind::ExtensionModule,
        Kind::ExtensionPackage,
        Kind::DataFile,
        Kind::DistInfoFile,
        Kind::SharedLibrary,
    ];

    pub fn tag(self) -> u8 {
        use layout::kind::*;
        match self {
            Kind::Module => MODULE,
            Kind::Package => PACKAGE,
            Kind::NamespacePackage => NAMESPACE_PACKAGE,
            Kind::ExtensionModule => EXTENSION_MODULE,
            Kind::DataFile => DATA_FILE,
            Kind::DistInfoFile => DIST_INFO_FILE,
            Kind::SharedLibrary => SHARED_LIBRARY,
            Kind::ExtensionPackage => EXTENSION_PACKAGE,
        }
    }

    pub fn from_tag(tag: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.tag() == tag)
    }

    /// The name space the entry's name lives in.
    pub fn namespace(self) -> Namespace {
        match self {
            Kind::Module
            | Kind::Package
            | Kind::NamespacePackage
            | Kind::ExtensionModule
            | Kind::ExtensionPackage => Namespace::Modules,
            Kind::DataFile | Kind::DistInfoFile => Namespace::Files,
            Kind::SharedLibrary => Namespace::Libraries,
        }
    }

    /// Whether the entry is a module of native code: an extension module, or a package whose
    /// `__init__` is one. The importer exports their labels to Python as
    /// `ingot._ingot.EXTENSION_KINDS`.
    pub fn is_extension(self) -> bool {
        matches!(self, Kind::ExtensionModule | Kind::ExtensionPackage)
    }

    /// Whether the entry's `content` is a native image the dynamic loader maps: an extension
    /// module or package, or a shared library. The importer exports their labels to Python as
    /// `ingot._ingot.NATIVE_KINDS`.
    pub fn is_native(self) -> bool {
        self.is_extension() || self == Kind::SharedLibrary
    }

    /// A short lowercase name, for messages and listings.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Module => "module",
            Kind::Package => "package",
            Kind::NamespacePackage => "namespace-package",
            Kind::ExtensionModule => "extension-module",
            Kind::DataFile => "data-file",
            Kind::DistInfoFile => "dist-info-file",
            Kind::SharedLibrary => "shared-library",
            Kind::ExtensionPackage => "extension-package",
        }
    }
}

/// Where a name is looked up: dotted module names, `/`-separated file paths relative to the
/// import root, or shared library file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Namespace {
    Modules,
    Files,
    Libraries,
}

impl Namespace {
    pub const ALL: [Namespace; 3] = [Namespace::Modules, Namespace::Files, Namespace::Libraries];

    pub fn tag(self) -> u8 {
        match self {
            Namespace::Modules => layout::namespace::MODULES,
            Namespace::Files => layout::namespace::FILES,
            Namespace::Libraries => layout::namespace::LIBRARIES,
        }
    }

    /// A short lowercase name, as the importer's Python API spells a name space.
    pub fn label(self) -> &'static str {
        match self {
            Namespace::Modules => "modules",
            Namespace::Files => "files",
            Namespace::Libraries => "libraries",
        }
    }
}

/// What a blob of an entry holds. The tag values are in [`layout::role`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Python source, as bytes (encoding per PEP 263).
    Source,
    /// `marshal` data of the module's code object (no `.pyc` header) at optimization level 0, 1
    /// or 2, compiled by the interpreter whose bytecode magic is in the header.
    Bytecode(u8),
    /// The file's bytes: a data file, a dist-info file, an extension module or a shared library.
    Content,
    /// A shared library's `DT_SONAME`, UTF-8.
    Soname,
    /// The `DT_NEEDED` names of an ELF object, UTF-8, each followed by a NUL byte.
    Needed,
}

impl Role {
    pub fn tag(self) -> u8 {
        use layout::role::*;
        match self {
            Role::Source => SOURCE,
            Role::Bytecode(0) => BYTECODE_OPT0,
            Role::Bytecode(1) => BYTECODE_OPT1,
            Role::Bytecode(_) => BYTECODE_OPT2,
            Role::Content => CONTENT,
            Role::Soname => SONAME,
            Role::Needed => NEEDED,
        }
    }

    pub fn from_tag(tag: u8) -> Option<Role> {
        use layout::role::*;
        Some(match tag {
            SOURCE => Role::Source,
            BYTECODE_OPT0 => Role::Bytecode(0),
            BYTECODE_OPT1 => Role::Bytecode(1),
            BYTECODE_OPT2 => Role::Bytecode(2),
            CONTENT => Role::Content,
            SONAME => Role::Soname,
            NEEDED => Role::Needed,
            _ => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Source => "source",
            Role::Bytecode(0) => "bytecode-opt0",
            Role::Bytecode(1) => "bytecode-opt1",
            Role::Bytecode(_) => "bytecode-opt2",
            Role::Content => "content",
            Role::Soname => "soname",
            Role::Needed => "needed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_kinds_are_every_kind_by_name_space_then_tag() {
        let mut sorted = Kind::ALL;
        sorted.sort_by_key(|kind| (kind.namespace().tag(), kind.tag()));
        assert_eq!(Kind::LISTED, sorted);
    }

    #[test]
    fn tags_and_labels_are_distinct_and_round_trip() {
        for (index, kind) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(Kind::from_tag(kind.tag()), Some(kind));
            for other in &Kind::ALL[index + 1..] {
                assert_ne!(kind.label(), other.label());
            }
        }
        for (index, namespace) in Namespace::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(namespace.tag()), index);
        }
    }

    #[test]
    fn native_kinds_are_the_extension_modules_and_shared_libraries() {
        let native: Vec<Kind> = Kind::LISTED.into_iter().filter(|kind| kind.is_native()).collect();
        assert_eq!(native, [Kind::ExtensionModule, Kind::ExtensionPackage, Kind::SharedLibrary]);
        for kind in Kind::ALL {
            assert_eq!(
                kind.is_extension(),
                kind.is_native() && kind.namespace() == Namespace::Modules
            );
        }
    }
}
