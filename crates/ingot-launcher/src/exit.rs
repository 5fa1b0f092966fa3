//! How a launcher process ends: python's exit status rules, the uncaught-exception printout, and
//! the fast exit, which does what finalization does that can lose data or hide an error (joins
//! threads, runs atexit, finalizes live objects: files are flushed and closed, generators run
//! their `finally`, `__del__` methods run; the standard streams are flushed and a failure is
//! reported as python reports it), then `_exit`s without tearing the interpreter down.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList};

/// How the application ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Code(i32),
    /// An uncaught KeyboardInterrupt: the process ends by SIGINT, as python's does.
    Interrupted,
}

/// Prints an uncaught exception: through `sys.excepthook`, or, when that is the default one, with
/// the `traceback` module, which (unlike the C printer before Python 3.13) shows the source lines
/// of modules in the archive.
pub fn print_exception(py: Python<'_>, error: PyErr) {
    let printed = (|| -> PyResult<bool> {
        let sys = py.import("sys")?;
        if !sys.getattr("excepthook")?.is(&sys.getattr("__excepthook__")?) {
            return Ok(false);
        }
        let value = error.value(py);
        let mut traceback = match error.traceback(py) {
            Some(traceback) => traceback.into_any(),
            None => py.None().into_bound(py),
        };
        // The launcher's own frames (`<ingot boot>`: running the module) are not the app's.
        while !traceback.is_none()
            && traceback
                .getattr("tb_frame")?
                .getattr("f_code")?
                .getattr("co_filename")?
                .extract::<String>()?
                == "<ingot boot>"
        {
            traceback = traceback.getattr("tb_next")?;
        }
        value.setattr("__traceback__", &traceback)?;
        sys.setattr("last_type", value.get_type())?;
        sys.setattr("last_value", value)?;
        sys.setattr("last_traceback", &traceback)?;
        py.import("traceback")?
            .call_method1("print_exception", (value.get_type(), value, traceback))?;
        Ok(true)
    })();
    match printed {
        Ok(true) => {}
        Ok(false) => error.print(py),
        Err(_) => error.print(py),
    }
}

/// The exit status for `sys.exit(value)` (`_Py_HandleSystemExit`): None is 0, an int is itself,
/// anything else is printed to `sys.stderr` and is 1.
pub fn exit_code(py: Python<'_>, value: &Bound<'_, PyAny>) -> i32 {
    if value.is_none() {
        return 0;
    }
    if value.is_instance_of::<PyInt>() {
        // SAFETY: `value` is an int; on overflow CPython gives -1 (with an error we clear).
        let code = unsafe { ffi::PyLong_AsLong(value.as_ptr()) };
        if code == -1 {
            let _ = PyErr::take(py);
        }
        return code as c_int;
    }
    let printed = (|| -> PyResult<()> {
        let stderr = py.import("sys")?.getattr("stderr")?;
        if stderr.is_none() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("no sys.stderr"));
        }
        stderr.call_method1("write", (value.str()?,))?;
        stderr.call_method1("write", ("\n",))?;
        Ok(())
    })();
    if printed.is_err() {
        let _ = PyErr::take(py);
        if let Ok(text) = value.str() {
            eprintln!("{text}");
        }
    }
    1
}

/// Ends the process: fast (what Python promises at exit, then `_exit`) or through
/// `Py_FinalizeEx`.
pub fn finish(py: Python<'_>, boot: Bound<'_, PyDict>, outcome: Outcome, fast_exit: bool) -> ! {
    let mut code = match outcome {
        Outcome::Code(code) => code,
        Outcome::Interrupted => 130,
    };
    if fast_exit {
        // Threads joined and atexit handlers run (Py_FinalizeEx's first steps).
        if let Err(error) =
            boot.get_item("shutdown").map(|function| function.expect("boot.py").call0())
        {
            error.print(py);
        }
        drop(boot);
        let failed = flush_std_files(py, [false, false]);
        finalize_live_objects(py);
        // Again (finalizers may print), but not a stream that failed already: as CPython, which
        // has no sys.stdout to flush again by then, it says so once.
        let failed_again = flush_std_files(py, failed);
        if failed.contains(&true) || failed_again.contains(&true) {
            code = 120;
        }
        // SAFETY: flushing C stdio for extension modules that wrote with it.
        unsafe { libc::fflush(std::ptr::null_mut()) };
    } else {
        drop(boot);
        // SAFETY: no Python object is held past this point.
        if unsafe { ffi::Py_FinalizeEx() } < 0 {
            code = 120;
        }
    }
    if outcome == Outcome::Interrupted {
        // SAFETY: plain libc calls; as CPython's exit_sigint.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::kill(libc::getpid(), libc::SIGINT);
        }
    }
    // SAFETY: ends the process without running destructors or atexit (done above, or finalized).
    unsafe { libc::_exit(code) }
}

/// Flushes `sys.stdout` and `sys.stderr` as CPython's `flush_std_files` does: a failure to flush
/// stdout is reported as an unraisable exception (`Exception ignored in: <... '<stdout>' ...>`,
/// then the error), one of stderr is not; either makes the exit status 120. Streams whose entry
/// in `skip` is true are left alone. Returns which of the two failed.
fn flush_std_files(py: Python<'_>, skip: [bool; 2]) -> [bool; 2] {
    let mut failed = [false, false];
    let Ok(sys) = py.import("sys") else {
        return [true, true];
    };
    for (index, name) in ["stdout", "stderr"].into_iter().enumerate() {
        if skip[index] {
            continue;
        }
        let Ok(stream) = sys.getattr(name) else {
            let _ = PyErr::take(py);
            continue;
        };
        let closed =
            stream.getattr("closed").and_then(|closed| closed.is_truthy()).unwrap_or(false);
        if stream.is_none() || closed {
            continue;
        }
        if let Err(error) = stream.call_method0("flush") {
            if name == "stdout" {
                error.write_unraisable(py, Some(&stream));
            }
            failed[index] = true;
        }
    }
    failed
}

/// The most objects looked at, per finalizable object, to find the finalizable objects it holds.
const HOLDS_BUDGET: usize = 256;

/// Calls the finalizer of every live object that has one (a class's `__del__`, a C type's
/// `tp_finalize`: a file object closes, which flushes it; a suspended generator runs its
/// `finally` blocks and `with` exits), as the objects' deallocation at finalization would, with
/// holders before what they hold: a `TextIOWrapper` before its buffer, a `GzipFile` (which
/// writes its trailer when closed) before the file it writes to. The standard streams are
/// flushed, not closed, as at finalization. Each finalizer reports its own errors as
/// unraisable ("Exception ignored in: ..."), as at finalization.
fn finalize_live_objects(py: Python<'_>) {
    let Ok(objects) = py
        .import("gc")
        .and_then(|gc| gc.call_method0("get_objects"))
        .and_then(|list| Ok(list.cast_into::<PyList>()?))
    else {
        let _ = PyErr::take(py);
        return;
    };
    let standard = standard_streams(py);
    let finalizable: Vec<*mut ffi::PyObject> = objects
        .iter()
        .map(|object| object.as_ptr())
        // SAFETY: `object` is alive (the list holds it); its type too.
        .filter(|&object| unsafe { (*ffi::Py_TYPE(object)).tp_finalize.is_some() } && !standard.contains(&object))
        .collect();
    let index: HashMap<*mut ffi::PyObject, usize> =
        finalizable.iter().enumerate().map(|(position, &object)| (object, position)).collect();
    let mut holds: Vec<Vec<usize>> = vec![Vec::new(); finalizable.len()];
    let mut held_by = vec![0usize; finalizable.len()];
    for (position, &object) in finalizable.iter().enumerate() {
        // SAFETY: every object reached is alive: the list holds the finalizable ones, and the
        // others are reached through them, with the GIL held and no Python code running.
        let mut held = unsafe { finalizable_held_by(object, &index) };
        held.retain(|&other| other != position);
        for &other in &held {
            held_by[other] += 1;
        }
        holds[position] = held;
    }
    // Holders first (Kahn's algorithm, in the collector's order among equals); what a cycle leaves
    // goes last, in the collector's order.
    let mut order = Vec::with_capacity(finalizable.len());
    let mut ready: std::collections::VecDeque<usize> =
        (0..finalizable.len()).filter(|&position| held_by[position] == 0).collect();
    let mut placed = vec![false; finalizable.len()];
    while let Some(position) = ready.pop_front() {
        placed[position] = true;
        order.push(position);
        for &other in &holds[position] {
            held_by[other] -= 1;
            if held_by[other] == 0 {
                ready.push_back(other);
            }
        }
    }
    order.extend((0..finalizable.len()).filter(|&position| !placed[position]));
    for position in order {
        // SAFETY: alive (the list holds it); PyObject_CallFinalizer calls tp_finalize at most once
        // per object and reports the finalizer's errors itself.
        unsafe { ffi::PyObject_CallFinalizer(finalizable[position]) };
    }
    drop(objects);
}

/// `sys.stdin`, `sys.stdout`, `sys.stderr` (and their `__std*__` originals), their buffers and
/// raw files: flushed by [`flush_std_files`], never closed before the process ends.
fn standard_streams(py: Python<'_>) -> Vec<*mut ffi::PyObject> {
    let mut streams = Vec::new();
    let Ok(sys) = py.import("sys") else {
        return streams;
    };
    for name in ["stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__"] {
        let mut layer = sys.getattr(name).ok();
        for attribute in ["buffer", "raw", ""] {
            let Some(object) = layer.take() else { break };
            if object.is_none() {
                break;
            }
            streams.push(object.as_ptr());
            layer = if attribute.is_empty() { None } else { object.getattr(attribute).ok() };
        }
    }
    let _ = PyErr::take(py);
    streams
}

/// The finalizable objects (positions in `index`) that `object` holds: those it references, and
/// those referenced by the dicts, lists, tuples and sets it references (an instance's `__dict__`,
/// a list of files), a few levels deep.
///
/// # Safety
///
/// The GIL is held, and `object` is a live object that stays alive during the call.
unsafe fn finalizable_held_by(
    object: *mut ffi::PyObject,
    index: &HashMap<*mut ffi::PyObject, usize>,
) -> Vec<usize> {
    unsafe {
        let mut held = Vec::new();
        let mut frontier = vec![object];
        let mut seen = 0;
        for _level in 0..3 {
            let mut next = Vec::new();
            for &container in &frontier {
                for referent in referents(container) {
                    seen += 1;
                    if seen > HOLDS_BUDGET {
                        return held;
                    }
                    if let Some(&position) = index.get(&referent) {
                        if !held.contains(&position) {
                            held.push(position);
                        }
                    } else if is_plain_container(referent) {
                        next.push(referent);
                    }
                }
            }
            frontier = next;
        }
        held
    }
}

/// Whether `object` is a dict, list, tuple or set (exactly: not a subclass, not a module's or a
/// type's namespace reached through a function).
///
/// # Safety
///
/// The GIL is held, and `object` is a live object.
unsafe fn is_plain_container(object: *mut ffi::PyObject) -> bool {
    unsafe {
        ffi::PyDict_CheckExact(object) != 0
            || ffi::PyList_CheckExact(object) != 0
            || ffi::PyTuple_CheckExact(object) != 0
            || ffi::PySet_CheckExact(object) != 0
    }
}

/// The objects `object` references, by its type's `tp_traverse` (none for objects the collector
/// does not track).
///
/// # Safety
///
/// The GIL is held, and `object` is a live object; the referents returned are borrowed from
/// it (no reference is taken) and are valid only while it is unchanged.
unsafe fn referents(object: *mut ffi::PyObject) -> Vec<*mut ffi::PyObject> {
    unsafe {
        /// `tp_traverse`'s visit function: records `referent` in `found`.
        ///
        /// # Safety
        ///
        /// `found` is the `Vec` this function's caller passed to `tp_traverse`.
        unsafe extern "C" fn visit(referent: *mut ffi::PyObject, found: *mut c_void) -> c_int {
            unsafe {
                if !referent.is_null() {
                    (*found.cast::<Vec<*mut ffi::PyObject>>()).push(referent);
                }
                0
            }
        }
        let mut found: Vec<*mut ffi::PyObject> = Vec::new();
        if ffi::PyObject_IS_GC(object) == 0 {
            return found;
        }
        if let Some(traverse) = (*ffi::Py_TYPE(object)).tp_traverse {
            traverse(object, visit, (&mut found as *mut Vec<*mut ffi::PyObject>).cast());
        }
        found
    }
}
