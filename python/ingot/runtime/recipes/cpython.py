"""How CPython is built for a runtime, after the libraries (:mod:`ingot.runtime.recipes.libraries`):
its configure options (:func:`python_configure_arguments`), what a runtime changes in its source
(:func:`patch_python`; Debian's security patches: :func:`security_patches`), and the
profile-guided build (:func:`build_python`: an instrumented interpreter, CPython's PGO task, then
the optimized one).
"""

from __future__ import annotations

import re
from pathlib import Path

from ingot.machine import Machine
from ingot.runtime.recipes.libraries import (
    LIBRARIES,
    PROFILE_RUNTIME_FILE,
    Run,
    _tcltk_variables,
    cross_options,
)

#: The training run of a profile-guided build: CPython's own PGO task (`-m test --pgo`: 44 test
#: modules, the default of CPython's Makefile), a worker per job.
PROFILE_TASK = "-m test --pgo --timeout=1200 -j{jobs}"

#: The profiles each instrumented binary writes: one file per binary (`%m`: the interpreter and
#: every extension module), merged across the training's processes.
PROFILE_FILE = "LLVM_PROFILE_FILE=code-%m.profclangr"

#: clang's IR-level profile-guided optimization: the instrumenting flag and the one that reads the
#: merged profile (`code.profclangd`, the name CPython's Makefile merges the profiles into).
PGO_GENERATE = "-fprofile-generate"
PGO_USE = "-fprofile-use=code.profclangd"


def build_python(
    source: Path,
    prefix: Path,
    libraries: Path,
    run: Run,
    jobs: int,
    machine: Machine,
    build_python: Path | None = None,
    llvm_profdata: Path | None = None,
    lto: bool = True,
) -> dict[str, int] | None:
    """Configures, compiles and installs CPython (``source``) into ``prefix``, optimized like
    distributions' builds: CPython's own ``-O3``, ThinLTO (unless ``lto`` is false), and with
    ``llvm_profdata`` (a native build whose profile runtime is under ``libraries``)
    profile-guided (``--enable-optimizations``, trained by :data:`PROFILE_TASK`). Returns, for a
    profile-guided build, what the profile counted (:func:`_check_profile`)."""
    arguments, environment = python_configure_arguments(
        prefix, libraries, machine, build_python, lto=lto
    )
    patch_python(source)
    # The build's own tools (see :func:`patch_python`) linked at -O0.
    make = ["make", f"-j{jobs}", f"{TOOL_LDFLAGS_VARIABLE}=-O0"]
    if llvm_profdata is not None:
        arguments.append("--enable-optimizations")
        environment.update(
            LLVM_PROFDATA=str(llvm_profdata),
            INGOT_PROFILE_RUNTIME=str(libraries / "lib" / "pgo" / PROFILE_RUNTIME_FILE),
        )
        # A failing test of the training does not stop the build (3.11's Makefile ignores the
        # task's status, 3.13's does not: on a loaded machine one failed, and a fresh machine's
        # test command stopped); the profile it leaves is what matters, and _check_profile
        # checks it.
        task = f"{PROFILE_TASK.format(jobs=jobs)} || true"
        make += [
            f"PROFILE_TASK={task}",
            f"LLVM_PROF_FILE={PROFILE_FILE}",
            # clang's IR-level instrumentation rather than the front end's (configure's choice
            # for clang): its profile matches the code compiled again (the front end's left part
            # of 217 of the interpreter's files unmatched), and it can promote hot indirect calls
            # to direct ones that can be inlined (which it promoted here was not checked).
            # Measured (docs/benchmarks.md): 0.82x the time of the same build with the front
            # end's.
            # The instrumented build without LTO: what it links is run once, for the training,
            # and thrown away, so ThinLTO's code generation at link time there is wasted. The IR
            # is instrumented before ThinLTO's link-time stage (the same point with or without
            # it), so the profile matches the LTO build made with it (checked: the build log's
            # `hash mismatch` warnings, docs/runtimes.md). More counters of the values seen at
            # indirect calls than clang's default: with it, the training's processes ran out
            # ("LLVM Profile Warning: ... Running out of static counters", a thousand times,
            # mixed into the test workers' reports).
            f"PGO_PROF_GEN_FLAG={PGO_GENERATE} -fno-lto -mllvm -vp-counters-per-site=8",
            f"PGO_PROF_USE_FLAG={PGO_USE}",
        ]
    run(["./configure", *arguments], cwd=source, extra=environment)
    run(make, cwd=source, extra=environment)
    profile = _check_profile(source, run, llvm_profdata) if llvm_profdata is not None else None
    run(["make", "install"], cwd=source, extra=environment)
    return profile


#: Functions a training run must have counted, by source file (None: a function of the
#: interpreter's own, named as is) and name: the interpreter's loop, and one of an extension
#: module (each binary writes its own profile: :data:`PROFILE_FILE`), whose static functions the
#: profile names with their file (`<path>/Modules/_json.c;scanstring_unicode`).
PROFILED_FUNCTIONS = ((None, "_PyEval_EvalFrameDefault"), ("_json.c", "scanstring_unicode"))


def _check_profile(source: Path, run: Run, llvm_profdata: Path) -> dict[str, int]:
    """What the merged profile (``code.profclangd``, CPython's name) counted in each of
    :data:`PROFILED_FUNCTIONS` (the sum of its counters), and how many functions it has; an
    error if it counted nothing in one (a training run that did not run, or profiles that were
    not written)."""
    from ingot.errors import IngotError

    counts = {}
    for file, name in PROFILED_FUNCTIONS:
        function = f"{file}:{name}" if file else name
        shown = source / "profile-shown.txt"
        run(
            [
                str(llvm_profdata),
                "show",
                f"--function={name}",
                "--counts",
                f"--output={shown}",
                "code.profclangd",
            ],
            cwd=source,
        )
        text = shown.read_text()
        named = rf"(?:\S*/)?{re.escape(file)}[:;]{re.escape(name)}" if file else re.escape(name)
        # Its counters (IR-level instrumentation counts blocks, the entry among them): their sum.
        found = re.search(
            rf"^\s*{named}:\n((?:\s+.*\n)*?)\s+Block counts: \[([\d, ]*)\]", text, re.M
        )
        counted = (
            sum(int(count) for count in re.findall(r"\d+", found[2]))
            + sum(int(count) for count in re.findall(r"Function count: (\d+)", found[1]))
            if found
            else 0
        )
        if counted == 0:
            raise IngotError(
                f"{source / 'code.profclangd'}: the training run counted no call of {function}",
                hint="see the training run's output in the build log (--keep-build keeps the tree)",
            )
        counts[function] = counted
        total = re.search(r"^Total functions: (\d+)", text, re.M)
        counts["functions"] = int(total[1]) if total else 0
    return counts


#: Where `_tkinter` starts Tcl, and what it does first there: an executable carries Tcl's and Tk's
#: script libraries in its `tkinter` package, whose files it materializes (`tkinter/tcl8.6`,
#: `tkinter/tk8.6`); there, no path Tcl searches by itself leads to them. TCL_LIBRARY still
#: wins, and a runtime's own interpreter, whose `tkinter` has no `tcl8.6`, finds its
#: `lib/tcl8.6` as before (next to `bin/`). Tk finds `tk8.6` next to Tcl's library.
_TKAPP_INIT = "    if (Tcl_AppInit(v->interp) != TCL_OK) {\n"
_TCL_LIBRARY_BESIDE_TKINTER = """\
#ifndef MS_WINDOWS
    /* ingot: Tcl's script library beside the tkinter package (an executable's files). */
    if (getenv("TCL_LIBRARY") == NULL) {
        PyObject *tkinter = PyImport_ImportModule("tkinter");
        PyObject *file = tkinter ? PyObject_GetAttrString(tkinter, "__file__") : NULL;
        const char *path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (slash != NULL) {
            size_t length = (size_t)(slash - path);
            char *library = PyMem_Malloc(length + sizeof("/tcl" TCL_VERSION "/init.tcl"));
            if (library != NULL) {
                memcpy(library, path, length);
                strcpy(library + length, "/tcl" TCL_VERSION "/init.tcl");
                if (access(library, R_OK) == 0) {
                    library[length + sizeof("/tcl" TCL_VERSION) - 1] = '\\0';
                    Tcl_SetVar(v->interp, "tcl_library", library, TCL_GLOBAL_ONLY);
                }
                PyMem_Free(library);
            }
        }
        PyErr_Clear();
        Py_XDECREF(file);
        Py_XDECREF(tkinter);
    }
#endif
"""


#: The programs CPython's build links only to run them while it builds (freezing and deep-freezing
#: modules) or to test embedding, never installed; with LTO each is one more link-time code
#: generation of nearly the whole interpreter (about 170 s here, even at -O0), twice in a
#: profile-guided build. :func:`patch_python` gives their link lines the make variable
#: :data:`TOOL_LDFLAGS_VARIABLE`, which a build sets to -O0 (no link-time optimization), keeps a
#: profile-guided build's first-stage tools for its second stage, and drops `_testembed` from
#: `make`.
BUILD_TOOLS = ("_bootstrap_python", "Programs/_freeze_module", "Programs/_testembed")
#: Of :data:`BUILD_TOOLS`, those a profile-guided build's second stage takes from its first.
KEPT_TOOLS = BUILD_TOOLS[:2]
TOOL_LDFLAGS_VARIABLE = "INGOT_TOOL_LDFLAGS"


def _patch_tool_links(makefile: Path) -> None:
    """Adds ``$(INGOT_TOOL_LDFLAGS)`` to the link line of each of :data:`BUILD_TOOLS` in
    ``Makefile.pre.in`` (after the flags it has, so that its -O wins); a release without one of
    them (3.10 has no `_bootstrap_python`) keeps linking it as it did. `make` (``build_all``)
    no longer links `_testembed` (test_embed's program: no runtime has it, and the training
    does not run it); `make Programs/_testembed` still does."""
    text = makefile.read_text()
    # A profile-guided build's second stage keeps the first's tools: they are not deleted, and
    # they are made again only when missing (their objects become order-only prerequisites).
    # They then freeze the same modules into the same data (instrumented: each run writes a
    # profile nothing reads).
    for tool in KEPT_TOOLS:
        text = re.sub(
            rf"^({re.escape(tool)}:)([^\n|]*\n\t\$\(LINKCC\))", r"\1 |\2", text, count=1, flags=re.M
        )
    # (and pybuilddir.txt, by which the kept `_bootstrap_python` finds the source tree's Lib:
    # 3.13.15's clean-retain-profile deletes it, and the second stage's freezing then looked
    # for the standard library where it is installed, before it is)
    for kept in ("_bootstrap_python", "pybuilddir.txt"):
        text = re.sub(
            rf"^(clean-retain-profile:(?:[^\n]*\n)*?)\t-rm -f {re.escape(kept)}\n",
            r"\1",
            text,
            count=1,
            flags=re.M,
        )
    text = re.sub(
        r"^(clean-retain-profile:(?:[^\n]*\n)*?\t-rm -f Programs/_testembed) Programs/_freeze_module\n",
        r"\1\n",
        text,
        count=1,
        flags=re.M,
    )
    text = re.sub(
        r"^(build_all:(?:[^\n]*\\\n)*[^\n]*?)[ \t]+Programs/_testembed\b",
        r"\1",
        text,
        count=1,
        flags=re.M,
    )
    for tool in BUILD_TOOLS:
        text = re.sub(
            rf"^({re.escape(tool)}:[^\n]*\n\t\$\(LINKCC\) [^\n]*?) -o \$@",
            rf"\1 $({TOOL_LDFLAGS_VARIABLE}) -o $@",
            text,
            count=1,
            flags=re.M,
        )
    makefile.write_text(text)


#: What a standard module built on its own gets when it includes one of CPython's internal
#: headers: the definition its own source lacks (those of 3.12 and later start with it; a
#: security patch of 3.11's series added `pycore_ceval.h` to pyexpat.c, which then did not compile
#: in a build whose pyexpat is not one of the interpreter's built-in modules).
_CORE_MODULE_DEFINITION = (
    "/* ingot: this module includes internal headers (see ingot.runtime.recipes) */\n"
    "#ifndef Py_BUILD_CORE_BUILTIN\n#  define Py_BUILD_CORE_MODULE 1\n#endif\n"
)
_INCLUDED_INTERNAL = re.compile(r'^\s*#\s*include\s+"(pycore_\w+\.h)"', re.MULTILINE)
_INCLUDED_LOCAL = re.compile(r'^\s*#\s*include\s+"((?!pycore_)[\w.]+\.h)"', re.MULTILINE)


def _define_core_module(source: Path) -> list[str]:
    """Gives each module source that ``Modules/Setup.stdlib.in`` names (the modules a build may
    compile on their own, as shared modules, not as the interpreter's) and that includes an
    internal header requiring ``Py_BUILD_CORE`` without defining it, the definition
    (:data:`_CORE_MODULE_DEFINITION`). The files changed, relative to ``source``."""
    setup = source / "Modules" / "Setup.stdlib.in"
    internal = source / "Include" / "internal"
    if not setup.is_file() or not internal.is_dir():
        return []
    requiring = {
        header.name
        for header in internal.glob("pycore_*.h")
        if 'error "this header requires Py_BUILD_CORE' in header.read_text(errors="replace")
    }
    named = sorted(set(re.findall(r"[\w/]+\.c\b", setup.read_text())))
    changed = []
    for name in named:
        path = source / "Modules" / name
        if not path.is_file():
            continue
        text = path.read_text()
        # (with the local headers it includes first: 3.13's _testcapi parts define it in parts.h)
        local = [path.parent / name for name in _INCLUDED_LOCAL.findall(text)]
        seen = text + "".join(h.read_text(errors="replace") for h in local if h.is_file())
        if "Py_BUILD_CORE" in seen or not requiring.intersection(_INCLUDED_INTERNAL.findall(text)):
            continue
        path.write_text(_CORE_MODULE_DEFINITION + text)
        changed.append(f"Modules/{name}")
    return changed


def patch_python(source: Path) -> None:
    """What a runtime changes in CPython's source before configure: `_tkinter` finds Tcl's script
    library beside the `tkinter` package (:data:`_TCL_LIBRARY_BESIDE_TKINTER`); the build's own
    tools link without link-time optimization (:func:`_patch_tool_links`); a standard module
    that includes internal headers compiles on its own (:func:`_define_core_module`)."""
    makefile = source / "Makefile.pre.in"
    if makefile.is_file() and f"$({TOOL_LDFLAGS_VARIABLE})" not in makefile.read_text():
        _patch_tool_links(makefile)
    _define_core_module(source)
    tkinter = source / "Modules" / "_tkinter.c"
    text = tkinter.read_text()
    if _TCL_LIBRARY_BESIDE_TKINTER not in text:
        if text.count(_TKAPP_INIT) != 1:
            from ingot.errors import IngotError

            raise IngotError(
                f"{tkinter}: no single `Tcl_AppInit(v->interp)` call to put the search for Tcl's "
                "library before",
                hint="this CPython's _tkinter differs from 3.10-3.14's; report it",
            )
        tkinter.write_text(text.replace(_TKAPP_INIT, _TCL_LIBRARY_BESIDE_TKINTER + _TKAPP_INIT))


#: CPython's own source release.
PYTHON_PATTERNS = ("Python-3.*.t*z", "python3.*_3.*.orig.tar.*")

#: A patch of Debian's series that fixes a vulnerability or backports an upstream fix: its file
#: names a CVE or a CPython issue, or its header (DEP-3) names a CPython issue or commit.
_UPSTREAM_FIX_NAME = re.compile(r"CVE-\d{4}-\d+|gh-\d+", re.IGNORECASE)
_UPSTREAM_FIX_HEADER = re.compile(
    r"^(Description|Subject):.*\bgh-\d+|^(Origin|Bug-Upstream|Bug):.*github\.com/python/cpython",
    re.IGNORECASE | re.MULTILINE,
)
_VENDOR_ONLY = re.compile(r"^Origin:\s*vendor", re.IGNORECASE | re.MULTILINE)


def security_patches(patches: Path) -> list[str]:
    """The patches of Debian's series in ``patches`` (its ``debian/patches``) a runtime takes,
    in the series' order: those that fix vulnerabilities or backport upstream fixes, not the
    distribution's layout and policy (install schemes, multiarch, ensurepip, its tests' skips:
    ``Origin: vendor``)."""
    names = [
        line.split("#", 1)[0].strip() for line in (patches / "series").read_text().splitlines()
    ]
    chosen = []
    for name in filter(None, names):
        header = (patches / name).read_text(errors="replace")[:4000]
        if _VENDOR_ONLY.search(header):
            continue
        if _UPSTREAM_FIX_NAME.search(name) or _UPSTREAM_FIX_HEADER.search(header):
            chosen.append(name)
    return chosen


def python_version_of(source: Path) -> tuple[int, int, int]:
    """The version of a CPython source tree (``Include/patchlevel.h``)."""
    text = (source / "Include" / "patchlevel.h").read_text()
    numbers = [
        int(re.search(rf"#define\s+PY_{name}_VERSION\s+(\d+)", text).group(1))  # type: ignore[union-attr]
        for name in ("MAJOR", "MINOR", "MICRO")
    ]
    return numbers[0], numbers[1], numbers[2]


def python_configure_arguments(
    prefix: Path,
    libraries: Path,
    machine: Machine,
    build_python: Path | None = None,
    *,
    lto: bool = True,
) -> tuple[list[str], dict[str, str]]:
    """CPython's configure options and environment for a static interpreter whose extension
    modules link the libraries under ``libraries`` statically, with ThinLTO unless ``lto`` is
    false (a quicker build: the launcher then links native code, without a second link-time
    code generation of the whole interpreter). A cross build (``machine`` is not
    this one) needs ``build_python``, an interpreter of the same version that runs here (it
    compiles the standard library and generates sources), and is told what configure would
    otherwise find out by running a program or looking at this machine's files."""
    # The system (here: the runtime's own) expat and mpdecimal rather than CPython's bundled
    # copies, which CPython deprecates (3.13) and no longer falls back to implicitly (3.15).
    arguments = [
        f"--prefix={prefix}",
        "--disable-shared",
        "--without-ensurepip",
        f"--with-openssl={libraries}",
        # 3.10's setup.py (3.11 reads TCLTK_CFLAGS and TCLTK_LIBS).
        f"--with-tcltk-includes={_tcltk_variables(libraries)['TCLTK_CFLAGS']}",
        f"--with-tcltk-libs={_tcltk_variables(libraries)['TCLTK_LIBS']}",
        "--with-openssl-rpath=no",
        "--with-system-expat",
        "--with-system-libmpdec",
        # Link-time optimization across the interpreter's objects (ThinLTO, zig's clang and lld):
        # configure turns it on for a compiler named *clang*, with llvm-ar (both zig's).
        *(["--with-lto=thin"] if lto else []),
        "CC=$CLANG",
    ]
    cross = cross_options(machine)
    if cross:
        assert build_python is not None, "a cross build needs the build machine's interpreter"
        arguments += [*cross, f"--with-build-python={build_python}"]
    environment = {
        # zig makes -Wdate-time an error (Modules/getbuildinfo.c uses __DATE__). No -O: CPython's
        # own (-O3) holds. No debug information (-g0; zig's clang then writes none, although
        # CPython's LTO flags add -g later on the line: libpython3.13.a 52 -> 17 MB): the
        # launcher that executables run is stripped, and with it each ThinLTO link (the
        # interpreter's, the launcher's) generated code for it.
        "CFLAGS": "-Wno-error=date-time -g0",
        # include/ncursesw: where ncurses puts curses.h and term.h (CPython's configure looks in
        # /usr/include/ncursesw, which the toolchain drops).
        # include/uuid: where util-linux puts uuid.h (3.10's setup.py looks for uuid.h).
        "CPPFLAGS": f"-I{libraries / 'include'} -I{libraries / 'include' / 'ncursesw'} "
        f"-I{libraries / 'include' / 'uuid'}",
        "LDFLAGS": f"-L{libraries / 'lib'}",
        # The optimization level of ThinLTO's link-time stage: zig's clang links in the mode its
        # last -O names, and CPython's link line has none: the mode of no -O, -O0's (on a
        # two-file program, no function inlined across files). Recorded in sysconfig
        # (PY_LDFLAGS_NODIST): the launcher links libpython with it.
        "LDFLAGS_NODIST": "-O3",
        # x86-64 and aarch64 read unaligned words. configure's test for it runs a misaligned
        # read, compiled with its CFLAGS (no -O here): zig's clang at -O0 traps undefined
        # behaviour, the test "fails", and CPython then hashes str and bytes with FNV instead
        # of SipHash (no protection from hash flooding, and slower dicts of strings).
        "ac_cv_aligned_required": "no",
    }
    if cross:
        # What configure finds out by running a program, for Linux with glibc on either
        # machine (its cross-build defaults are the cautious ones): /dev/ptmx (not /dev/ptc),
        # getaddrinfo, sem_getvalue and tzset that work, computed gotos (the evaluation loop's
        # dispatch: without them 3.13's interpreter is slower), PTHREAD_SCOPE_SYSTEM.
        environment.update(
            ac_cv_file__dev_ptmx="yes",
            ac_cv_file__dev_ptc="no",
            ac_cv_buggy_getaddrinfo="no",
            ac_cv_broken_sem_getvalue="no",
            ac_cv_working_tzset="yes",
            ac_cv_computed_gotos="yes",
            ac_cv_pthread_system_supported="yes",
        )
    for recipe in LIBRARIES.values():
        environment.update(recipe.configure_environment(libraries))
    return arguments, environment
