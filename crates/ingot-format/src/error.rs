use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing an archive. Each message says what, where
/// (entry, offset) and, for a mismatch, what was found and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write archive")]
    Write(#[source] std::io::Error),
    #[error("not an ingot archive: no ingot trailer at the end and no ingot header at the start")]
    NotAnArchive,
    #[error("the file is cut short: the archive after the executable's launcher starts at byte {start} but the file ends at byte {size}, before the archive's end (an interrupted copy or download?)")]
    CutShort { start: u64, size: u64 },
    #[error("the file has {} bytes after its archive, which ends at byte {end}: something was appended to it after it was built", size - end)]
    Appended { end: u64, size: u64 },
    #[error("archive truncated: {what} needs bytes {start}..{end} but the archive has {size}")]
    Truncated { what: String, start: u64, end: u64, size: u64 },
    #[error("bad archive header magic at offset {offset}: found {found:02x?}")]
    BadMagic { offset: u64, found: Vec<u8> },
    #[error("unsupported archive format version {found}; this ingot reads version {expected}")]
    UnsupportedVersion { found: u32, expected: u32 },
    #[error("archive index is corrupted: checksum {found:#018x}, expected {expected:#018x}")]
    IndexChecksum { found: u64, expected: u64 },
    #[error("archive is corrupted: {0}")]
    Malformed(String),
    #[error("entry `{entry}`: {role} data is corrupted: checksum {found:#018x}, expected {expected:#018x}")]
    DataChecksum { entry: String, role: &'static str, found: u64, expected: u64 },
    #[error("entry `{entry}`: {role} data failed to decompress")]
    Decompress {
        entry: String,
        role: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("entry `{entry}`: {} its {role} data failed", if *reading { "reading" } else { "writing out" })]
    Copy {
        entry: String,
        role: &'static str,
        /// Whether reading the stored bytes failed (or writing them out).
        reading: bool,
        #[source]
        source: std::io::Error,
    },
    #[error("duplicate {kind} entry `{name}`")]
    Duplicate { kind: &'static str, name: String },
    #[error("invalid entry name `{name}`: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("{kind} entry `{name}` cannot hold a {role} blob")]
    InvalidRole { kind: &'static str, name: String, role: &'static str },
    #[error("archive too large: {0}")]
    TooLarge(&'static str),
}

/// `error` and its causes, joined by `: ` (how every ingot tool reports an error).
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}
