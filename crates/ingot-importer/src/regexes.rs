//! Precompiled regular expressions: the run-time half of `python/ingot/build/analysis/regexes.py`.
//!
//! When the finder has executed the module the archive names in `__ingot__/re/module` (the
//! regular-expression compiler of the interpreter the build targeted: the build knows which) and
//! the archive's table was built with this interpreter's `_sre` (`__ingot__/re/magic`), that
//! module's `compile(p, flags=0)` is replaced (by [`install`], which `hooks.rs` runs) by a
//! [`PrecompiledRegexes`] that looks `(p, flags)` up in the archive and, when found, calls
//! `_sre.compile` with the stored arguments. Everything else (a pattern not in the table, a
//! pattern object, flags that are not a plain int, an entry that does not decode or that
//! `_sre.compile` refuses) goes to the original function, so a table can make compilation faster
//! but never different. The layout is in docs/format.md, "Precompiled regular expressions".

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ingot_format::{Namespace, Role};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString, PyTuple};
use pyo3::{ffi, intern};

use ingot_format::names::{REGEX_DIR as ENTRY_PREFIX, REGEX_MAGIC as MAGIC_ENTRY, REGEX_MODULE};

use crate::view::ArchiveView;

/// The module whose `compile` the archive's table serves (`__ingot__/re/module`), if it names one:
/// [`install`] runs in its namespace after its code.
pub fn served_module(view: &ArchiveView) -> Option<String> {
    let entry = view.archive.find(Namespace::Files, REGEX_MODULE).ok()??;
    let module = String::from_utf8(entry.data(Role::Content).ok()??.into_owned()).ok()?;
    Some(module.trim().to_string())
}

/// The table's key for a pattern: `s` (str) or `b` (bytes), the flags in decimal, `:`, then the
/// pattern's text ([`pattern_text`]). The one definition: the build names the entries it writes
/// with it too (through [`regex_key`] and [`regex_entry_name`], which
/// python/ingot/build/analysis/regexes.py calls), so that the table the build writes is the table the
/// importer looks patterns up in.
pub fn key(is_str: bool, flags: impl std::fmt::Display, pattern: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(pattern.len() + 24);
    key.push(if is_str { b's' } else { b'b' });
    key.extend_from_slice(flags.to_string().as_bytes());
    key.push(b':');
    key.extend_from_slice(pattern);
    key
}

/// The archive entry a key is stored under.
pub fn entry_name(key: &[u8]) -> String {
    format!("{ENTRY_PREFIX}{:016x}", xxhash_rust::xxh3::xxh3_64(key))
}

/// What a [`key`] holds of a pattern: whether it is a str, and its text: a str's in UTF-8 (lone
/// surrogates as Python's `surrogatepass` encodes them: such a pattern has a key, so that nothing
/// that asks for one fails, but the build never puts it in the table), a bytes' as it is. None
/// for anything else.
fn pattern_text<'a>(pattern: &'a Bound<'_, PyAny>) -> Option<(bool, Cow<'a, [u8]>)> {
    if let Ok(text) = pattern.cast::<PyString>() {
        if let Ok(utf8) = text.to_str() {
            return Some((true, Cow::Borrowed(utf8.as_bytes())));
        }
        let py = pattern.py();
        let encoded = py
            .get_type::<PyString>()
            .getattr(intern!(py, "encode"))
            .and_then(|encode| encode.call1((text, "utf-8", "surrogatepass")))
            .ok()?;
        return Some((true, Cow::Owned(encoded.cast::<PyBytes>().ok()?.as_bytes().to_vec())));
    }
    let bytes = pattern.cast::<PyBytes>().ok()?;
    Some((false, Cow::Borrowed(bytes.as_bytes())))
}

/// The [`key`] of `(pattern, flags)` for the build: flags as `int(flags)` gives them (a
/// `re.RegexFlag` is its value), in decimal whatever their size. TypeError for a pattern that is
/// neither str nor bytes.
#[cfg(feature = "writer")]
fn build_key(pattern: &Bound<'_, PyAny>, flags: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let py = pattern.py();
    let Some((is_str, text)) = pattern_text(pattern) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a regular expression is str or bytes, not {}",
            pattern.get_type().name()?
        )));
    };
    let flags = py.get_type::<PyInt>().call1((flags,))?.str()?;
    Ok(key(is_str, flags.to_str()?, &text))
}

/// `regex_key(pattern: str | bytes, flags: int) -> bytes`: the table's key of `(pattern, flags)`
/// (see [`key`]).
#[cfg(feature = "writer")]
#[pyfunction]
pub fn regex_key<'py>(
    pattern: &Bound<'py, PyAny>,
    flags: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(pattern.py(), &build_key(pattern, flags)?))
}

/// `regex_entry_name(pattern: str | bytes, flags: int) -> str`: the archive entry the table keeps
/// `(pattern, flags)` in: `__ingot__/re/` and the XXH3-64 of its key, 16 lowercase hex digits.
#[cfg(feature = "writer")]
#[pyfunction]
pub fn regex_entry_name(pattern: &Bound<'_, PyAny>, flags: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(entry_name(&build_key(pattern, flags)?))
}

/// Replaces `compile` in the compiler module's namespace if the archive has a table for this
/// interpreter. A failure leaves the module as it was: the table is an optimization.
pub fn install(py: Python<'_>, view: &Arc<ArchiveView>, globals: &Bound<'_, PyDict>) {
    let _ = try_install(py, view, globals);
}

fn try_install(
    py: Python<'_>,
    view: &Arc<ArchiveView>,
    globals: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let Ok(Some(entry)) = view.archive.find(Namespace::Files, MAGIC_ENTRY) else {
        return Ok(());
    };
    let Ok(Some(magic)) = entry.data(Role::Content) else {
        return Ok(());
    };
    let sre = py.import("_sre")?;
    let ours: i64 = sre.getattr("MAGIC")?.extract()?;
    if std::str::from_utf8(&magic).ok().and_then(|text| text.trim().parse::<i64>().ok())
        != Some(ours)
    {
        return Ok(());
    }
    let Some(original) = globals.get_item(intern!(py, "compile"))? else {
        return Ok(());
    };
    let wrapper = PrecompiledRegexes {
        view: Arc::clone(view),
        original: original.unbind(),
        sre_compile: sre.getattr("compile")?.unbind(),
        hits: AtomicU64::new(0),
        misses: AtomicU64::new(0),
    };
    globals.set_item(intern!(py, "compile"), Bound::new(py, wrapper)?)
}

/// The regular-expression compiler's `compile(p, flags=0)`, answered from the archive's table
/// when it can be.
#[pyclass(module = "ingot._ingot", frozen)]
pub struct PrecompiledRegexes {
    view: Arc<ArchiveView>,
    original: Py<PyAny>,
    sre_compile: Py<PyAny>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl PrecompiledRegexes {
    /// The compiled pattern from the table, or None (not there, or not usable).
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        pattern: &Bound<'py, PyAny>,
        flags: Option<&Bound<'py, PyAny>>,
    ) -> Option<Bound<'py, PyAny>> {
        let flags_value: i64 = match flags {
            None => 0,
            Some(flags) if flags.is_exact_instance_of::<PyInt>() => flags.extract().ok()?,
            Some(_) => return None,
        };
        // Exactly str or bytes: a subclass goes to the compiler (which may treat it otherwise).
        if !pattern.is_exact_instance_of::<PyString>() && !pattern.is_exact_instance_of::<PyBytes>()
        {
            return None;
        }
        let (is_str, text) = pattern_text(pattern)?;
        let key = key(is_str, flags_value, &text);
        let entry = self.view.archive.find(Namespace::Files, &entry_name(&key)).ok()??;
        let data = entry.data(Role::Content).ok()??;
        let length = ffi::Py_ssize_t::try_from(data.len()).ok()?;
        // SAFETY: `data` lives until the call returns; marshal copies what it keeps and reports
        // malformed input as an exception (taken here, not left set).
        let stored = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyMarshal_ReadObjectFromString(data.as_ptr().cast(), length),
            )
        }
        .ok()?;
        let stored = stored.cast_into::<PyTuple>().ok()?;
        if stored.len() != 7 {
            return None;
        }
        // A different pattern under the same name (a hash collision, or a damaged archive).
        let same_pattern = stored.get_item(0).ok()?.eq(pattern).ok()?
            && stored.get_item(0).ok()?.get_type().is(pattern.get_type());
        let same_flags = stored.get_item(1).ok()?.extract::<i64>().ok()? == flags_value;
        if !same_pattern || !same_flags {
            return None;
        }
        let arguments = PyTuple::new(
            py,
            // The caller's pattern object, as the compiler would pass it (`Pattern.pattern is p`).
            [
                pattern.clone(),
                stored.get_item(2).ok()?,
                stored.get_item(3).ok()?,
                stored.get_item(4).ok()?,
                stored.get_item(5).ok()?,
                stored.get_item(6).ok()?,
            ],
        )
        .ok()?;
        // `_sre.compile` checks the code it is given and raises on anything malformed.
        self.sre_compile.bind(py).call1(arguments).ok()
    }
}

#[pymethods]
impl PrecompiledRegexes {
    #[pyo3(signature = (p, flags = None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        p: &Bound<'py, PyAny>,
        flags: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(compiled) = self.lookup(py, p, flags) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(compiled);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let original = self.original.bind(py);
        match flags {
            Some(flags) => original.call1((p, flags)),
            None => original.call1((p,)),
        }
    }

    /// Patterns answered from the table.
    #[getter]
    fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Patterns handed to the original compiler.
    #[getter]
    fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// The compiler's own `compile`, which patterns not in the table go to.
    #[getter]
    fn original<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.original.bind(py).clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "<ingot precompiled regular expressions of {:?}: {} hits, {} misses>",
            self.view.path,
            self.hits(),
            self.misses()
        )
    }
}
