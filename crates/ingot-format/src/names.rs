//! The names ingot's writer and readers must agree on, written once: the data files ingot
//! reserves under `__ingot__/` (docs/format.md, "Files ingot reserves"), the launch
//! configuration's version, the first-use list's line tags and the launcher's ELF facts.
//!
//! The importer exports each of them to Python as an attribute of `ingot._ingot` (the same name),
//! where `ingot pack` and `ingot build` read them; a test checks the docs' table against
//! [`RESERVED`].

/// The directory of the data files ingot reserves; a package's own files never start with it.
pub const RESERVED_PREFIX: &str = "__ingot__/";

/// What an executable runs (JSON; `crates/ingot-launcher/README.md`).
pub const LAUNCH_CONFIG: &str = "__ingot__/launch.json";
/// The version of [`LAUNCH_CONFIG`] `ingot build` writes and the launcher reads.
pub const LAUNCH_CONFIG_VERSION: u32 = 1;

/// The entries a start is expected to read, in order: one per line, a tag
/// ([`FIRST_USE_MODULE`], [`FIRST_USE_FILE`], [`FIRST_USE_LIBRARY`]), a space and a name.
pub const FIRST_USE: &str = "__ingot__/first-use";
/// The first-use tag of an entry in the modules name space.
pub const FIRST_USE_MODULE: u8 = b'm';
/// The first-use tag of an entry in the files name space.
pub const FIRST_USE_FILE: u8 = b'f';
/// The first-use tag of an entry in the libraries name space.
pub const FIRST_USE_LIBRARY: u8 = b'l';

/// The tree manifests of `files`-policy packages: this prefix, the package and `.json`.
pub const FILES_MANIFEST_DIR: &str = "__ingot__/files/";

/// The shared libraries an executable takes from the system when the system's copy defines every
/// symbol version the archive's code needs of it (JSON: soname -> sorted version names); the
/// carried copy is loaded only otherwise.
pub const SYSTEM_FIRST: &str = "__ingot__/system-first.json";

/// The files the archive carries that distributions install outside their packages (the wheel's
/// `data` scheme, named relative to the installation prefix: `share/x`), by distribution (JSON:
/// `*.dist-info` directory -> the sorted top directories of its files). When present, the
/// executable is `sys.prefix` (and `exec_prefix`, `base_prefix`, `base_exec_prefix`), so that
/// `sys.prefix/share/x` is answered from the archive.
pub const PREFIX_DATA: &str = "__ingot__/prefix-data.json";

/// The zstd dictionary of the blobs stored with [`crate::layout::compression::ZSTD_DICTIONARY`].
pub const ZSTD_DICTIONARY: &str = "__ingot__/zstd-dictionary";

/// The precompiled regular expressions: this prefix and 16 hex digits per pattern.
pub const REGEX_DIR: &str = "__ingot__/re/";
/// `_sre.MAGIC` of the interpreter that built the regular-expression table, in ASCII decimal.
pub const REGEX_MAGIC: &str = "__ingot__/re/magic";
/// The module whose `compile(pattern, flags)` the table serves (the interpreter's
/// regular-expression compiler, named by the build, which knows that interpreter).
pub const REGEX_MODULE: &str = "__ingot__/re/module";

/// Every fixed name above, and each prefix (ending in `/`), as docs/format.md lists them.
pub const RESERVED: [&str; 9] = [
    LAUNCH_CONFIG,
    SYSTEM_FIRST,
    PREFIX_DATA,
    FIRST_USE,
    FILES_MANIFEST_DIR,
    ZSTD_DICTIONARY,
    REGEX_DIR,
    REGEX_MAGIC,
    REGEX_MODULE,
];

/// The ELF section in which a launcher carries its facts (JSON), read by `ingot build` without
/// running the launcher.
pub const LAUNCHER_FACTS_SECTION: &str = ".ingot.launcher";
/// The version of those facts' format; a reader refuses a newer one.
pub const LAUNCHER_FACTS_FORMAT: u32 = 1;
