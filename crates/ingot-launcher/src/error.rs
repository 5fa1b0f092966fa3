//! Why the launcher cannot start the application: its own executable not found, the archive
//! missing, damaged or built for another Python, or a bad launch configuration. Printed as
//! `ingot: ` and the error with its causes ([`ingot_format::chain`]); the exit status is 1.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::{BYTECODE_MAGIC, LAUNCH_CONFIG, PYTHON_VERSION};

/// Why the application cannot be started (each message begins with where: the executable).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Neither `/proc/self/exe` nor `argv[0]` gives the executable.
    #[error("cannot find its own executable: /proc/self/exe: {proc}; argv[0] {:?}: {argv0_error} (mount /proc, or start it by its path)", .argv0.to_string_lossy())]
    OwnExecutable { proc: std::io::Error, argv0: OsString, argv0_error: ExecutableError },
    /// A set-user-ID, set-group-ID or file-capability start (or real and effective ids that
    /// differ) without /proc: `argv[0]` and `PATH` are the caller's to choose, so they never say
    /// which file runs.
    #[error("cannot find its own executable: /proc/self/exe: {proc}; this is a privileged start (set-user-ID, set-group-ID or file capabilities), where argv[0] and PATH, which the caller chooses, are not trusted (mount /proc)")]
    PrivilegedWithoutProc { proc: std::io::Error },
    #[error("{exe}")]
    Archive {
        exe: PathBuf,
        #[source]
        source: ingot_format::Error,
    },
    /// A launcher without an archive.
    #[error("{exe}: {error} (this is the ingot launcher for Python {python}: append an archive built with Python {python} to a copy of it)", error = ingot_format::Error::NotAnArchive, python = PYTHON_VERSION)]
    NotAnArchive { exe: PathBuf },
    #[error("{exe}: the archive was built for Python {version} (bytecode magic {magic}), but this launcher embeds Python {python} (bytecode magic {our_magic}); build it with Python {python}", python = PYTHON_VERSION, our_magic = BYTECODE_MAGIC)]
    OtherPython { exe: PathBuf, version: String, magic: String },
    #[error("{exe}: the archive has no {config}", config = LAUNCH_CONFIG)]
    NoConfig { exe: PathBuf },
    #[error("{exe}: {config} is empty", config = LAUNCH_CONFIG)]
    EmptyConfig { exe: PathBuf },
    #[error("{exe}: {config}", config = LAUNCH_CONFIG)]
    Config {
        exe: PathBuf,
        #[source]
        source: ConfigError,
    },
}

/// What is wrong with a launch configuration (defined with it, in the importer).
pub use ingot_importer::launch::ConfigError;

/// Why `argv[0]` names no executable (see [`crate::find_executable`]).
#[derive(Debug, thiserror::Error)]
pub enum ExecutableError {
    #[error("it is empty")]
    Empty,
    #[error("the current directory is unknown")]
    NoCurrentDirectory,
    #[error("{path} is not an executable file")]
    NotExecutable { path: PathBuf },
    #[error("no executable of that name on PATH ({})", .search_path.to_string_lossy())]
    NotOnPath { search_path: OsString },
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingot_format::chain;

    #[test]
    fn messages_keep_their_wording() {
        let exe = || PathBuf::from("/opt/app");
        let python = PYTHON_VERSION;
        let cases: Vec<(LaunchError, String)> = vec![
            (
                LaunchError::PrivilegedWithoutProc {
                    proc: std::io::Error::from_raw_os_error(libc::ENOENT),
                },
                "cannot find its own executable: /proc/self/exe: No such file or directory (os error 2); \
                 this is a privileged start (set-user-ID, set-group-ID or file capabilities), where \
                 argv[0] and PATH, which the caller chooses, are not trusted (mount /proc)"
                    .to_string(),
            ),
            (
                LaunchError::OwnExecutable {
                    proc: std::io::Error::from_raw_os_error(libc::ENOENT),
                    argv0: "no-such-app".into(),
                    argv0_error: ExecutableError::NotOnPath { search_path: "/bin:/usr/bin".into() },
                },
                "cannot find its own executable: /proc/self/exe: No such file or directory (os error 2); \
                 argv[0] \"no-such-app\": no executable of that name on PATH (/bin:/usr/bin) \
                 (mount /proc, or start it by its path)"
                    .to_string(),
            ),
            (
                LaunchError::Archive {
                    exe: exe(),
                    source: ingot_format::Error::Io {
                        path: exe(),
                        source: std::io::Error::from_raw_os_error(libc::EACCES),
                    },
                },
                "/opt/app: failed to read `/opt/app`: Permission denied (os error 13)".to_string(),
            ),
            (
                LaunchError::NotAnArchive { exe: exe() },
                format!(
                    "/opt/app: not an ingot archive: no ingot trailer at the end and no ingot header at the start \
                     (this is the ingot launcher for Python {python}: append an archive built with Python {python} \
                     to a copy of it)"
                ),
            ),
            (
                LaunchError::OtherPython { exe: exe(), version: "3.9".into(), magic: "610d0d0a".into() },
                format!(
                    "/opt/app: the archive was built for Python 3.9 (bytecode magic 610d0d0a), but this launcher \
                     embeds Python {python} (bytecode magic {BYTECODE_MAGIC}); build it with Python {python}"
                ),
            ),
            (
                LaunchError::NoConfig { exe: exe() },
                "/opt/app: the archive has no __ingot__/launch.json".to_string(),
            ),
            (
                LaunchError::EmptyConfig { exe: exe() },
                "/opt/app: __ingot__/launch.json is empty".to_string(),
            ),
            (
                LaunchError::Config { exe: exe(), source: ConfigError::Version { found: 2 } },
                "/opt/app: __ingot__/launch.json: version 2 is not supported (this launcher reads version 1)"
                    .to_string(),
            ),
            (
                LaunchError::Config {
                    exe: exe(),
                    source: ConfigError::NotAName { name: "a..b".into() },
                },
                "/opt/app: __ingot__/launch.json: `a..b` is not a Python name".to_string(),
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(chain(&error), expected);
        }
        let json = serde_json::from_slice::<serde_json::Value>(b"not json").unwrap_err();
        let shown = json.to_string();
        assert_eq!(
            chain(&LaunchError::Config { exe: exe(), source: json.into() }),
            format!("/opt/app: __ingot__/launch.json: {shown}")
        );
        assert_eq!(ExecutableError::Empty.to_string(), "it is empty");
        assert_eq!(
            ExecutableError::NoCurrentDirectory.to_string(),
            "the current directory is unknown"
        );
        assert_eq!(
            ExecutableError::NotExecutable { path: "/opt/bin/data".into() }.to_string(),
            "/opt/bin/data is not an executable file"
        );
    }
}
