//! The `files` policy: packages whose files must exist on a file system (code that opens paths
//! built from `__file__`, lists its directory, or hands a path to C code) are materialized once
//! into the extraction cache (`cache.rs`), and their `__file__`/`__path__` point there.
//!
//! The archive says which packages: for each one, `ingot pack` writes a tree manifest,
//! `__ingot__/files/<package>.json`, with [`write_manifest`] (exported to Python as
//! `ingot._ingot.files_manifest`), which the importer reads back with the same `Manifest` type:
//!
//! ```json
//! {"version": 1, "package": "certifi",
//!  "files": [["certifi/__init__.py", 94, "6c1d0f1e2a3b4c5d"], ["certifi/cacert.pem", 292041, "..."]]}
//! ```
//!
//! Each file is (path relative to the tree root, size, XXH3-64 of its bytes in hex); the paths are
//! those of the archive's own virtual tree (`certifi/cacert.pem` is the data file of that name,
//! `certifi/core.py` the source of `certifi.core`, `pkg/_ext<suffix>` the image of an extension
//! module). All the `files` packages of an archive share one tree, whose cache id is the XXH3-128
//! of their names and manifests, so a different build gets a different directory and a tree is
//! never updated in place.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use ingot_format::{Archive, Namespace};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::cache::{self, CacheError, TreeFile};

/// Where tree manifests live in an archive's `Files` namespace.
use ingot_format::names::FILES_MANIFEST_DIR as MANIFEST_DIR;

/// The version of the tree manifest [`write_manifest`] writes and [`parse_manifest`] reads.
const MANIFEST_VERSION: u32 = 1;

/// A tree manifest, as written and as read (the fields in this order are the JSON's).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    version: u32,
    package: String,
    /// (tree-relative path, size, XXH3-64 of the bytes as 16 lowercase hex digits), by path.
    files: Vec<(String, u64, String)>,
}

/// The tree manifest of the `files` package `package` whose tree holds `files` (tree-relative
/// path, bytes): compact JSON, the files sorted by path, every character outside printable ASCII
/// escaped as `\uXXXX` (the bytes Python's `json.dumps(..., separators=(",", ":"))` gives, which
/// `ingot pack` wrote before this function existed, so archives keep their bytes).
pub fn write_manifest<'a>(
    package: &str,
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<u8> {
    let mut listing: Vec<(String, u64, String)> = files
        .into_iter()
        .map(|(path, bytes)| {
            let hash = xxhash_rust::xxh3::xxh3_64(bytes);
            (path.to_string(), bytes.len() as u64, format!("{hash:016x}"))
        })
        .collect();
    listing.sort();
    let manifest =
        Manifest { version: MANIFEST_VERSION, package: package.to_string(), files: listing };
    let mut json = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut json, AsciiFormatter);
    manifest.serialize(&mut serializer).expect("a manifest serializes into memory");
    json
}

/// serde_json's compact output with every character outside `' '..='~'` escaped as `\uXXXX`
/// (UTF-16 code units, lowercase hex), as Python's `json` module does with `ensure_ascii`.
/// serde_json already escapes `"`, `\\` and the control characters the way Python does.
struct AsciiFormatter;

impl serde_json::ser::Formatter for AsciiFormatter {
    fn write_string_fragment<W>(&mut self, writer: &mut W, fragment: &str) -> std::io::Result<()>
    where
        W: ?Sized + std::io::Write,
    {
        let mut start = 0;
        for (index, char) in fragment.char_indices() {
            if (' '..='~').contains(&char) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..index])?;
            for unit in char.encode_utf16(&mut [0; 2]) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = index + char.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// `files_manifest(package: str, files: dict[str, bytes]) -> bytes`: [`write_manifest`], for
/// `ingot pack`.
#[cfg(feature = "writer")]
#[pyo3::pyfunction]
pub fn files_manifest(
    py: pyo3::Python<'_>,
    package: &str,
    files: HashMap<String, pyo3::pybacked::PyBackedBytes>,
) -> Vec<u8> {
    py.detach(|| {
        write_manifest(package, files.iter().map(|(path, bytes)| (path.as_str(), &**bytes)))
    })
}

/// Why the tree of the `files` packages cannot be materialized.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The archive's bytes for a tree file or manifest are damaged. Its causes are not shown.
    #[error("{0}")]
    Archive(ingot_format::Error),
    #[error("the archive has no tree manifest `{manifest}`")]
    NoManifest { manifest: String },
    #[error("tree manifest `{manifest}`")]
    Manifest {
        manifest: String,
        #[source]
        source: ManifestError,
    },
    #[error("`{path}` is in the tree manifest but not in the archive")]
    NotInArchive { path: String },
}

/// What is wrong with a tree manifest.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("version {found} is not supported (expected {expected})", expected = MANIFEST_VERSION)]
    Version { found: u32 },
    #[error("it describes package `{found}`")]
    OtherPackage { found: String },
    #[error("`{path}` is outside package `{package}`")]
    Outside { path: String, package: String },
    #[error("`{path}`: bad hash `{hash}`")]
    BadHash { path: String, hash: String },
}

/// The packages of one archive under the `files` policy, and the trees materialized so far.
pub struct FilesPolicy {
    packages: HashSet<String>,
    /// package -> absolute path of its tree root (the directory holding `<package>/`).
    trees: Mutex<HashMap<String, String>>,
    /// A verification of the existing tree started ahead of the first import ([`Self::verifying`]).
    ahead: Mutex<Option<Ahead>>,
}

/// A verification running on a thread of its own: the process that started it, and its result
/// (the tree root, if the tree exists and verifies).
struct Ahead {
    pid: u32,
    handle: std::thread::JoinHandle<Option<String>>,
}

impl FilesPolicy {
    /// Reads the list of `files` packages from the archive (names only: manifests are read when a
    /// package is first imported).
    pub fn load(archive: &Archive) -> ingot_format::Result<FilesPolicy> {
        let mut packages = HashSet::new();
        for entry in archive.find_prefix(Namespace::Files, MANIFEST_DIR)? {
            let entry = entry?;
            if let Some(package) = entry.name()[MANIFEST_DIR.len()..].strip_suffix(".json") {
                if !package.is_empty() && !package.contains('/') {
                    packages.insert(package.to_string());
                }
            }
        }
        Ok(FilesPolicy { packages, trees: Mutex::new(HashMap::new()), ahead: Mutex::new(None) })
    }

    /// Whether the top-level package of the dotted `module` name is under the `files` policy.
    pub fn covers(&self, module: &str) -> bool {
        !self.packages.is_empty()
            && self.packages.contains(module.split('.').next().unwrap_or(module))
    }

    pub fn packages(&self) -> Vec<String> {
        let mut packages: Vec<String> = self.packages.iter().cloned().collect();
        packages.sort();
        packages
    }

    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    /// The tree root of an already materialized package, if any.
    pub fn materialized(&self, package: &str) -> Option<String> {
        self.trees.lock().ok()?.get(package).cloned()
    }

    /// Maps a real path inside a materialized tree back to the tree-relative path
    /// (`<root>/certifi/cacert.pem` -> `certifi/cacert.pem`).
    pub fn relative(&self, path: &str) -> Option<String> {
        let trees = self.trees.lock().ok()?;
        trees.iter().find_map(|(package, root)| {
            let rest = path.strip_prefix(root.as_str())?.strip_prefix('/')?;
            (rest == package || rest.starts_with(&format!("{package}/"))).then(|| rest.to_string())
        })
    }

    /// The tree root for `package`, materializing (or verifying) it in the cache on first use.
    /// `read` gives the bytes of a tree-relative path from the archive.
    ///
    /// All the archive's `files` packages share one tree, materialized together: code often finds
    /// a sibling's files relative to its own (mypyc's shared library computes the `__file__` of the
    /// modules it holds from its own), and one verification is cheaper than several.
    pub fn tree<'a, R>(
        &self,
        archive: &'a Archive,
        package: &str,
        read: R,
    ) -> Result<String, FilesError>
    where
        R: Fn(&str) -> ingot_format::Result<Option<Cow<'a, [u8]>>> + Sync,
    {
        let mut trees = self.trees.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(root) = trees.get(package) {
            return Ok(root.clone());
        }
        let ahead = self.ahead.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if let Some(ahead) = ahead {
            if ahead.pid == std::process::id() {
                if let Ok(Some(tree)) = ahead.handle.join() {
                    for name in &self.packages {
                        trees.insert(name.clone(), tree.clone());
                    }
                    return Ok(tree);
                }
            } else {
                // A forked child: the thread was not copied; its handle must not be touched.
                std::mem::forget(ahead.handle);
            }
        }
        let (files, id) = self.plan(archive)?;
        let root = cache::root();
        let tree = cache::ensure_tree(&root, "trees", &id, &files, |file| {
            read(&file.path)
                .map_err(FilesError::Archive)?
                .ok_or_else(|| FilesError::NotInArchive { path: file.path.clone() })
        })?;
        let tree = match tree.to_str() {
            Some(tree) => tree.to_string(),
            None => return Err(CacheError::NotUtf8 { path: tree }.into()),
        };
        for name in &self.packages {
            trees.insert(name.clone(), tree.clone());
        }
        Ok(tree)
    }

    /// The tree root if the archive's tree is already in the cache under `root` and verifies
    /// (the work of [`crate::readahead::files_tree`]'s thread).
    pub fn existing_tree(&self, archive: &Archive, root: &std::path::Path) -> Option<String> {
        let (files, id) = self.plan(archive).ok()?;
        let tree = cache::existing_tree(root, "trees", &id, &files)?;
        tree.to_str().map(str::to_string)
    }

    /// Hands over a verification started ahead of the first import, which [`Self::tree`] then
    /// waits for instead of verifying again.
    pub fn verifying(&self, handle: std::thread::JoinHandle<Option<String>>) {
        if let Ok(mut slot) = self.ahead.lock() {
            *slot = Some(Ahead { pid: std::process::id(), handle });
        }
    }

    /// The files of the archive's tree (from every `files` package's manifest) and the tree's id.
    fn plan(&self, archive: &Archive) -> Result<(Vec<TreeFile>, String), FilesError> {
        let mut files = Vec::new();
        let mut hasher = Xxh3::new();
        for name in self.packages() {
            let manifest = format!("{MANIFEST_DIR}{name}.json");
            let bytes = archive
                .find(Namespace::Files, &manifest)
                .and_then(|entry| {
                    entry.map(|entry| entry.data(ingot_format::Role::Content)).transpose()
                })
                .map_err(FilesError::Archive)?
                .flatten();
            let Some(bytes) = bytes else {
                return Err(FilesError::NoManifest { manifest });
            };
            match parse_manifest(&bytes, &name) {
                Ok(parsed) => files.extend(parsed),
                Err(source) => return Err(FilesError::Manifest { manifest, source }),
            }
            hasher.update(name.as_bytes());
            hasher.update(&[0]);
            hasher.update(&bytes);
        }
        let id = format!("{:032x}", hasher.digest128());
        Ok((files, id))
    }
}

fn parse_manifest(bytes: &[u8], package: &str) -> Result<Vec<TreeFile>, ManifestError> {
    let manifest: Manifest = serde_json::from_slice(bytes)?;
    if manifest.version != MANIFEST_VERSION {
        return Err(ManifestError::Version { found: manifest.version });
    }
    if manifest.package != package {
        return Err(ManifestError::OtherPackage { found: manifest.package });
    }
    let prefix = format!("{package}/");
    manifest
        .files
        .into_iter()
        .map(|(path, size, hash)| {
            // `pkg/...` for a package, `pkg.py` or `pkg<extension suffix>` for a top-level module.
            let inside = path.starts_with(&prefix)
                || path
                    .strip_prefix(package)
                    .is_some_and(|rest| rest.starts_with('.') && !rest.contains('/'));
            if !inside {
                return Err(ManifestError::Outside { path, package: package.to_string() });
            }
            match u64::from_str_radix(&hash, 16) {
                Ok(hash) => Ok(TreeFile { path, size, hash }),
                Err(_) => Err(ManifestError::BadHash { path, hash }),
            }
        })
        .collect()
}

/// A tree root's package directory: `<root>/<package path>`.
pub fn package_dir(root: &str, module: &str) -> String {
    format!("{root}/{}", module.replace('.', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_written_as_python_json_wrote_them_and_read_back() {
        let files: [(&str, &[u8]); 4] = [
            ("pkg/\u{e9}.txt", b""),
            ("pkg/a\"b\\c\n\u{7f}\u{1}.py", b"xy"),
            ("pkg/\u{1f389}/z", b"z"),
            ("pkg.py", b""),
        ];
        let written = write_manifest("pkg", files);
        let hash = |bytes: &[u8]| format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes));
        // `json.dumps(document, separators=(",", ":")).encode()` of the same document, as
        // `ingot pack` wrote manifests before Rust did.
        let expected = format!(
            r#"{{"version":1,"package":"pkg","files":[["pkg.py",0,"{e}"],["pkg/a\"b\\c\n\u007f\u0001.py",2,"{xy}"],["pkg/\u00e9.txt",0,"{e}"],["pkg/\ud83c\udf89/z",1,"{z}"]]}}"#,
            e = hash(b""),
            xy = hash(b"xy"),
            z = hash(b"z"),
        );
        assert_eq!(String::from_utf8(written.clone()).unwrap(), expected);
        let mut read: Vec<(String, u64, u64)> = parse_manifest(&written, "pkg")
            .unwrap()
            .into_iter()
            .map(|file| (file.path, file.size, file.hash))
            .collect();
        read.sort();
        let mut given: Vec<(String, u64, u64)> = files
            .iter()
            .map(|(path, bytes)| {
                (path.to_string(), bytes.len() as u64, xxhash_rust::xxh3::xxh3_64(bytes))
            })
            .collect();
        given.sort();
        assert_eq!(read, given);
    }

    #[test]
    fn manifest_errors_keep_their_wording() {
        let parse = |json: &str| parse_manifest(json.as_bytes(), "pkg").map(|_| ()).unwrap_err();
        let wrapped = |source: ManifestError| {
            ingot_format::chain(&FilesError::Manifest {
                manifest: "__ingot__/files/pkg.json".into(),
                source,
            })
        };
        let json = serde_json::from_slice::<Manifest>(b"{").map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            wrapped(parse("{")),
            format!("tree manifest `__ingot__/files/pkg.json`: {json}")
        );
        assert_eq!(
            wrapped(parse(r#"{"version": 2, "package": "pkg", "files": []}"#)),
            "tree manifest `__ingot__/files/pkg.json`: version 2 is not supported (expected 1)"
        );
        assert_eq!(
            wrapped(parse(r#"{"version": 1, "package": "other", "files": []}"#)),
            "tree manifest `__ingot__/files/pkg.json`: it describes package `other`"
        );
        assert_eq!(
            parse(r#"{"version": 1, "package": "pkg", "files": [["other/a", 1, "ff"]]}"#)
                .to_string(),
            "`other/a` is outside package `pkg`"
        );
        assert_eq!(
            parse(r#"{"version": 1, "package": "pkg", "files": [["pkg/a", 1, "xyz"]]}"#)
                .to_string(),
            "`pkg/a`: bad hash `xyz`"
        );
        let tree = parse_manifest(
            br#"{"version": 1, "package": "pkg", "files": [["pkg/a", 1, "ff"], ["pkg.py", 2, "0"]]}"#,
            "pkg",
        )
        .unwrap();
        assert_eq!(tree.len(), 2);
        assert_eq!(
            FilesError::NoManifest { manifest: "__ingot__/files/pkg.json".into() }.to_string(),
            "the archive has no tree manifest `__ingot__/files/pkg.json`"
        );
        // Through the cache (a reader's error is the cache's content error): the same text.
        let missing = FilesError::NotInArchive { path: "pkg/a".into() };
        let through = FilesError::Cache(CacheError::Content(Box::new(missing)));
        assert_eq!(
            ingot_format::chain(&through),
            "`pkg/a` is in the tree manifest but not in the archive"
        );
        // An archive error is shown without its causes, as before.
        let damaged = FilesError::Archive(ingot_format::Error::Decompress {
            entry: "pkg/a".into(),
            role: "content",
            source: std::io::Error::other("bad frame"),
        });
        assert_eq!(
            ingot_format::chain(&damaged),
            "entry `pkg/a`: content data failed to decompress"
        );
    }
}
