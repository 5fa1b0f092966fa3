//! Code an archive's optional tables run in a module's namespace right after the module's own
//! code: the general way a table hooks into the module it serves. The archive names the module
//! (the build knows the interpreter it targets), so the importer names none.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::regexes;
use crate::view::ArchiveView;

/// After `module`'s code ran successfully, `run` gets the archive and the module's namespace. A
/// hook must leave the module working if it fails: the tables are optimizations.
pub struct AfterExec {
    pub module: String,
    pub run: fn(Python<'_>, &Arc<ArchiveView>, &Bound<'_, PyDict>),
}

/// Every hook the archive's tables ask for (read once, when a finder opens the archive). The
/// tables know nothing of hooks (the modules depend one way: this one on `regexes`): each says
/// which module it serves, if any, and has a function to run there.
pub fn after_exec(view: &ArchiveView) -> Vec<AfterExec> {
    let regexes =
        regexes::served_module(view).map(|module| AfterExec { module, run: regexes::install });
    regexes.into_iter().collect()
}
