"""Runtimes (python/ingot/runtime/: store, sources, builder, recipes, toolchain; and
python/ingot/build/resolve/target.py, which chooses one): the glibc floor of ELF objects,
finding source releases, the store and its command line. What a built runtime is (minutes of
compiling, done by scripts/test) is tested in tests/test_old_system.py."""

import fnmatch
import functools
import hashlib
import importlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import ingot
from ingot import cli
from ingot._ingot import loadable_image
from ingot.build import under as build_under
from ingot.build.resolve import target
from ingot.build.resolve.inputs import console_script_entry
from ingot.build.resolve.spec import Spec
from ingot.elf import glibc_floor, glibc_needed
from ingot.errors import IngotError
from ingot.machine import MACHINES, host_machine
from ingot.runtime import build_checks, builder, commands, launcher_build, pins, recipes, store
from ingot.runtime import sources as runtime_sources
from ingot.runtime import toolchain as toolchain_module
from ingot.runtime.toolchain import Toolchain

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def extension_module(name):
    """The image of one of this Python's standard-library extension modules (pyenv's and
    Debian's build them as files)."""
    file = getattr(importlib.import_module(name), "__file__", None)
    assert file and file.endswith(".so"), f"{name} is not an extension module file here"
    return Path(file).read_bytes()


def test_glibc_needed_reads_version_needs_with_or_without_section_headers():
    image = extension_module("_ssl")
    needed = glibc_needed(image)
    assert needed is not None and needed >= (2, 2)
    # The archive keeps extension modules without section headers: same answer.
    stripped = loadable_image(image)
    assert len(stripped) < len(image) or stripped == image
    assert glibc_needed(stripped) == needed


def test_glibc_floor_names_the_object_that_sets_it():
    images = [
        ("_queue", extension_module("_queue")),
        ("_ssl", extension_module("_ssl")),
        ("text", b"not an ELF file"),
        ("broken", b"\x7fELF broken"),
    ]
    floor = glibc_floor(images)
    assert floor.version == max(version for version in floor.each.values() if version)
    assert floor.each[floor.needed_by] == floor.version
    assert "text" not in floor.each and floor.each["broken"] is None
    assert str(floor).startswith(f"glibc {floor.version[0]}.{floor.version[1]} (set by ")


def test_a_malformed_object_is_an_error():
    with pytest.raises(ValueError, match="not a readable ELF object"):
        glibc_needed(b"\x7fELF" + b"\0" * 10)


# --- sources ----------------------------------------------------------------------------------------

DEBIAN = [
    "python3.11_3.11.2.orig.tar.gz",
    "openssl_3.0.20.orig.tar.gz",
    "openssl_3.0.20.orig.tar.gz.asc",
    "sqlite3_3.40.1.orig.tar.xz",
    "sqlite3_3.40.1.orig-www.tar.xz",
    "libffi_3.4.4.orig.tar.gz",
    "zlib_1.2.13.dfsg.orig.tar.bz2",
    "bzip2_1.0.8.orig.tar.gz",
    "xz-utils_5.4.1.orig.tar.xz",
    "ncurses_6.4.orig.tar.gz",
    "readline_8.2.orig.tar.gz",
    "expat_2.5.0.orig.tar.gz",
    "mpdecimal_4.0.1.orig.tar.gz",
    "util-linux_2.38.1.orig.tar.xz",
    "x11proto-dev_2022.1-1_all.deb",
    "libx11_1.8.4.orig.tar.gz",
    "tcl8.6_8.6.13+dfsg.orig.tar.gz",
    "tk8.6_8.6.13.orig.tar.gz",
]
UPSTREAM = [
    "Python-3.13.1.tar.xz",
    "openssl-3.0.15.tar.gz",
    "sqlite-autoconf-3470000.tar.gz",
    "libffi-3.4.6.tar.gz",
    "zlib-1.3.1.tar.gz",
    "bzip2-1.0.8.tar.gz",
    "xz-5.6.3.tar.gz",
    "ncurses-6.5.tar.gz",
    "readline-8.2.tar.gz",
    "expat-2.6.2.tar.xz",
    "mpdecimal-4.0.0.tar.gz",
    "libuuid-1.0.3.tar.gz",
    "xorgproto-2024.1.tar.gz",
    "libX11-1.8.13.tar.gz",
    "tcl8.6.14-src.tar.gz",
    "tk8.6.14-src.tar.gz",
]


@pytest.mark.parametrize("names", [DEBIAN, UPSTREAM], ids=["debian", "upstream"])
def test_sources_are_found_by_their_release_names(tmp_path, names):
    for name in names:
        (tmp_path / name).write_bytes(b"")
    found = runtime_sources.resolve_sources({}, [tmp_path], tmp_path / "downloads")
    assert sorted(found) == sorted(
        [
            "python",
            "zlib",
            "bzip2",
            "xz",
            "expat",
            "mpdecimal",
            "libuuid",
            "libffi",
            "sqlite",
            "openssl",
            "ncurses",
            "readline",
            "xorgproto",
            "libx11",
            "tcl",
            "tk",
        ]
    )
    chosen = {path.name for path in found.values()}
    assert not any(name.endswith(".asc") or "orig-www" in name for name in chosen)
    assert chosen == {
        name for name in names if not name.endswith(".asc") and "orig-www" not in name
    }


def test_the_cpython_source_of_the_wanted_version_is_taken(tmp_path):
    for name in [*DEBIAN, "python3.13_3.13.5.orig.tar.xz", "Python-3.12.7.tgz"]:
        (tmp_path / name).write_bytes(b"")
    for wanted, expected in (
        ("3.13", "python3.13_3.13.5.orig.tar.xz"),
        ("3.11", "python3.11_3.11.2.orig.tar.gz"),
        ("3.12.7", "Python-3.12.7.tgz"),
    ):
        found = runtime_sources.resolve_sources({}, [tmp_path], tmp_path / "downloads", wanted)
        assert found["python"].name == expected, wanted


def test_a_source_given_by_name_wins_and_missing_ones_are_listed(tmp_path):
    (tmp_path / "zlib-1.3.1.tar.gz").write_bytes(b"")
    mine = tmp_path / "elsewhere" / "my-zlib.tar.gz"
    mine.parent.mkdir()
    mine.write_bytes(b"")
    with pytest.raises(IngotError) as error:
        runtime_sources.resolve_sources({"zlib": str(mine)}, [tmp_path], tmp_path / "downloads")
    assert error.value.message.startswith(
        "no source release for python, bzip2, xz, expat, "
        "mpdecimal, libuuid, libffi, sqlite, openssl, "
        "ncurses, readline, xorgproto, libx11, tcl, tk in "
    )
    assert "--source NAME=PATH" in error.value.hint


def test_a_debian_package_of_headers_is_unpacked_as_installed(tmp_path):
    """x11proto-dev: Debian's mirror serves no source of xorgproto, its package holds the
    headers; a .deb is an ar archive whose data.tar.* is the installed tree."""
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        "Package: x11proto-dev\nVersion: 2022.1-1\nArchitecture: all\n"
        "Maintainer: nobody <nobody@example.org>\nDescription: headers\n"
    )
    (tree / "usr" / "include" / "X11").mkdir(parents=True)
    (tree / "usr" / "include" / "X11" / "X.h").write_text("#define X_PROTOCOL 11\n")
    deb = tmp_path / "x11proto-dev_2022.1-1_all.deb"
    subprocess.run(["dpkg-deb", "--build", str(tree), str(deb)], check=True, capture_output=True)
    top = runtime_sources.unpack(deb, tmp_path / "src")
    assert top.name == "x11proto-dev_2022.1-1_all"
    assert (top / "usr" / "include" / "X11" / "X.h").read_text() == "#define X_PROTOCOL 11\n"
    (tmp_path / "bad.deb").write_bytes(b"!<arch>\n")
    with pytest.raises(IngotError, match=r"without data\.tar"):
        runtime_sources.unpack(tmp_path / "bad.deb", tmp_path / "src")


def test_tkinter_is_taught_where_an_executable_keeps_tcls_library(tmp_path):
    """The runtime's _tkinter.c looks for Tcl's script library beside the tkinter package,
    before Tcl_AppInit, once; a _tkinter.c without that call is an error, not a silent skip."""
    modules = tmp_path / "Modules"
    modules.mkdir()
    source = "static int x;\n    if (Tcl_AppInit(v->interp) != TCL_OK) {\n        return 0;\n"
    (modules / "_tkinter.c").write_text(source)
    recipes.patch_python(tmp_path)
    patched = (modules / "_tkinter.c").read_text()
    assert patched.index('"tcl_library"') < patched.index("Tcl_AppInit(v->interp)")
    assert 'getenv("TCL_LIBRARY") == NULL' in patched
    recipes.patch_python(tmp_path)
    assert (modules / "_tkinter.c").read_text() == patched
    (modules / "_tkinter.c").write_text("static int x;\n")
    with pytest.raises(IngotError, match="Tcl_AppInit"):
        recipes.patch_python(tmp_path)


#: The link rules of CPython's Makefile.pre.in (3.11 to 3.13) a runtime build changes, and the
#: interpreter's, which it must not.
_MAKEFILE_RULES = """\
build_all:	check-clean-src $(BUILDPYTHON) platform sharedmods \\
\t\tgdbhooks Programs/_testembed scripts checksharedmods rundsymutil

$(BUILDPYTHON):	Programs/python.o $(LINK_PYTHON_DEPS)
\t$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -o $@ Programs/python.o $(LINK_PYTHON_OBJS) $(LIBS)

Programs/_testembed: Programs/_testembed.o $(LINK_PYTHON_DEPS)
\t$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -o $@ Programs/_testembed.o $(LINK_PYTHON_OBJS)

_bootstrap_python: $(LIBRARY_OBJS_OMIT_FROZEN) Programs/_bootstrap_python.o Modules/getpath.o
\t$(LINKCC) $(PY_LDFLAGS_NOLTO) -o $@ $(LIBRARY_OBJS_OMIT_FROZEN) \\
\t\tPrograms/_bootstrap_python.o Modules/getpath.o $(LIBS) $(MODLIBS) $(SYSLIBS)

Programs/_freeze_module: Programs/_freeze_module.o Modules/getpath_noop.o $(LIBRARY_OBJS_OMIT_FROZEN)
\t$(LINKCC) $(PY_CORE_LDFLAGS) -o $@ Programs/_freeze_module.o Modules/getpath_noop.o $(LIBS)

clean-retain-profile: pycremoval
\tfind . -name '*.[oa]' -exec rm -f {} ';'
\t-rm -f _bootstrap_python
\t-rm -f python.html python*.js python.data python*.symbols python*.map
\t-rm -f Programs/_testembed Programs/_freeze_module
\t-rm -f Python/frozen_modules/*.h
"""


def test_the_builds_own_tools_link_without_link_time_optimization(tmp_path):
    """The programs CPython's build links only to run or test (_freeze_module, _bootstrap_python,
    _testembed) get the build's -O0 after their flags (the last -O wins); the interpreter keeps
    its link line; `make` no longer builds _testembed; a profile-guided build's second stage
    keeps the first's _freeze_module and _bootstrap_python (not deleted, their objects
    order-only prerequisites); patching twice changes nothing."""
    (tmp_path / "Modules").mkdir()
    (tmp_path / "Modules" / "_tkinter.c").write_text(
        "    if (Tcl_AppInit(v->interp) != TCL_OK) {\n"
    )
    makefile = tmp_path / "Makefile.pre.in"
    makefile.write_text(_MAKEFILE_RULES)
    recipes.patch_python(tmp_path)
    patched = makefile.read_text()
    variable = f"$({recipes.TOOL_LDFLAGS_VARIABLE})"
    lines = [line for line in patched.splitlines() if line.startswith("\t$(LINKCC)")]
    assert [variable in line for line in lines] == [False, True, True, True]
    assert all(line.index(variable) < line.index("-o $@") for line in lines[1:])
    assert "gdbhooks scripts checksharedmods" in patched
    assert "\n_bootstrap_python: | $(LIBRARY_OBJS_OMIT_FROZEN)" in patched
    assert "\nPrograms/_freeze_module: | Programs/_freeze_module.o" in patched
    clean = patched[patched.index("clean-retain-profile:") :]
    assert "_bootstrap_python" not in clean and "_freeze_module" not in clean
    assert "\t-rm -f Programs/_testembed\n" in clean and "frozen_modules" in clean
    unpatched = (
        _MAKEFILE_RULES.replace(" Programs/_testembed scripts", " scripts")
        .replace("_bootstrap_python: $(", "_bootstrap_python: | $(")
        .replace("_freeze_module: Programs/", "_freeze_module: | Programs/")
        .replace("\t-rm -f _bootstrap_python\n", "")
        .replace(" Programs/_freeze_module\n", "\n")
    )
    assert patched.replace(f" {variable}", "") == unpatched
    recipes.patch_python(tmp_path)
    assert makefile.read_text() == patched


def test_a_targets_libraries_are_built_once_and_shared(tmp_path):
    """The libraries of one target and key are built by the first build (which marks them
    complete), reused by the next; an interrupted build's are built again; a build of a new key
    deletes the target's libraries of other keys unless a build holds them, and no other
    target's."""

    def held(target: str, what: dict) -> builder.SharedLibraries:
        return builder.SharedLibraries(tmp_path, target, what)

    with held("x86_64-linux-gnu.2.17", {"sources": 1}) as first:
        assert not first.complete_before
        (first.path / "lib" / "tcl8.6").mkdir(parents=True)
        (first.path / "lib" / "tcl8.6" / "init.tcl").write_text("")
        first.done()
    # Tcl's script library moved out of lib/, where Tcl would look first (the path compiled in).
    assert not (first.path / "lib" / "tcl8.6").exists()
    assert (first.script_library("tcl8.6") / "init.tcl").is_file()
    (first.path / "lib" / "tk8.6").mkdir()  # (left there by an earlier ingot)
    with held("x86_64-linux-gnu.2.17", {"sources": 1}) as again:
        assert again.complete_before and again.path == first.path
        assert (again.path / "lib").is_dir() and again.script_library("tk8.6").is_dir()
        assert not (again.path / "lib" / "tk8.6").exists()
    interrupted = held("x86_64-linux-gnu.2.17", {"sources": 2})
    with interrupted:
        (interrupted.path / "half").write_text("")
    with held("x86_64-linux-gnu.2.17", {"sources": 2}) as rebuilt:
        assert not rebuilt.complete_before and not (rebuilt.path / "half").exists()
        rebuilt.done()
    assert not first.path.exists()  # another key of the same target, not in use
    with held("aarch64-linux-gnu.2.17", {"sources": 2}) as other_target:
        other_target.done()
        with held("x86_64-linux-gnu.2.17", {"sources": 3}) as newer:
            newer.done()
        assert other_target.path.is_dir()  # another target's
        assert not rebuilt.path.exists()
        with held("aarch64-linux-gnu.2.17", {"sources": 4}) as newest:
            newest.done()
        assert other_target.path.is_dir()  # in use by the build holding it


@pytest.mark.parametrize(
    "given, message",
    [
        ({"pyhton": "x.tar.gz"}, "unknown source name(s): pyhton"),
        ({"zlib": "https://example.org/zlib.tar.gz"}, "an URL needs the sha256 of the file"),
        ({"zlib": "/nonexistent/zlib.tar.gz"}, "no such file"),
    ],
)
def test_bad_sources_are_refused(tmp_path, given, message):
    with pytest.raises(IngotError, match=message.replace("(", r"\(").replace(")", r"\)")):
        runtime_sources.resolve_sources(given, [], tmp_path / "downloads")


# --- the store and the command line ----------------------------------------------------------


def fake_runtime(store, version, machine=None):
    machine = machine or host_machine().name
    path = store / f"cpython-{version}-{machine}-linux-gnu.2.17"
    path.mkdir(parents=True)
    (path / "runtime.json").write_text(
        json.dumps(
            {
                "format": 1,
                "python": {"version": version},
                "target": f"{machine}-linux-gnu.2.17",
                "glibc_floor": {"version": "2.17"},
            }
        )
    )
    return path


def test_runtimes_are_listed_found_and_removed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path))
    fake_runtime(tmp_path, "3.11.2")
    fake_runtime(tmp_path, "3.13.1")
    (tmp_path / ".build-abc").mkdir()  # a build under way is not a runtime
    (tmp_path / "junk").mkdir()
    assert [item.version for item in store.list_runtimes()] == ["3.13.1", "3.11.2"]
    assert store.find_runtime("3.11").version == "3.11.2"
    assert store.find_runtime("3.1") is None
    assert cli.main(["runtime", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["3.13.1", "3.11.2"]
    assert cli.main(["runtime", "remove", "3.13"]) == 0
    assert [item.version for item in store.list_runtimes()] == ["3.11.2"]
    assert cli.main(["runtime", "remove", "3.12"]) == 1
    err = capsys.readouterr().err
    assert f"error: no runtime 3.12 for {host_machine().name} in {tmp_path}" in err
    assert "hint: `ingot runtime list`" in err


def test_another_architectures_runtime_is_found_only_when_asked_for(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path))
    other = next(name for name in MACHINES if name != host_machine().name)
    fake_runtime(tmp_path, "3.13.5", other)
    fake_runtime(tmp_path, "3.13.1")
    assert store.find_runtime("3.13").version == "3.13.1"
    found = store.find_runtime("3.13", other)
    assert (found.version, found.machine, found.cross) == ("3.13.5", other, True)
    assert not store.find_runtime("3.13").cross
    assert cli.main(["runtime", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["3.13.5", f"{other}-linux-gnu.2.17"] for line in listed)
    assert cli.main(["runtime", "remove", "3.13.5"]) == 1  # not this machine's
    assert cli.main(["runtime", "remove", "3.13.5", "--target", other]) == 0
    assert store.find_runtime("3.13", other) is None
    with pytest.raises(SystemExit) as exited:
        cli.main(["runtime", "remove", "3.13", "--target", "sparc"])
    assert exited.value.code == 2
    assert "ingot does not build for the architecture 'sparc'" in capsys.readouterr().err


def test_a_relative_store_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("INGOT_RUNTIMES", "relative/dir")
    assert cli.main(["runtime", "list"]) == 1
    assert "error: INGOT_RUNTIMES=relative/dir is not an absolute path" in capsys.readouterr().err


def test_building_without_zig_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ziglang", None)  # import fails
    assert cli.main(["runtime", "build", "3.11", "--sources", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "needs zig, from the `ziglang` package" in err and "hint: pip install ziglang" in err


def test_relocate_rewrites_the_recorded_prefix(tmp_path):
    old, new = tmp_path / ".build-x" / "rt" / "python", tmp_path / "rt" / "python"
    data = old / "lib" / "python3.11" / "_sysconfigdata__linux_x86_64-linux-gnu.py"
    makefile = old / "lib" / "python3.11" / "config-3.11-x86_64-linux-gnu" / "Makefile"
    for path in (data, makefile):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"LIBPL = '{old}/lib/python3.11/config-3.11-x86_64-linux-gnu'\n")
    cached = data.parent / "__pycache__" / (data.stem + ".cpython-311.pyc")
    cached.parent.mkdir()
    cached.write_bytes(b"stale")
    builder.relocate(old, new)
    for path in (data, makefile):
        assert path.read_text() == f"LIBPL = '{new}/lib/python3.11/config-3.11-x86_64-linux-gnu'\n"
    assert not cached.exists()


# --- pinned sources (python/ingot/runtime/sources.toml) ------------------------------------------


def test_every_component_a_runtime_is_built_from_is_pinned_once_with_a_file_its_recipe_takes():
    pinned = pins.read_pins()
    patterns = {
        "python": recipes.PYTHON_PATTERNS,
        "patches": ("python3.*_*.debian.tar.*",),
        **{name: recipe.patterns for name, recipe in recipes.LIBRARIES.items()},
        **{name: recipe.patterns for name, recipe in recipes.TOOLS.items()},
    }
    for minor in ("3.11", "3.13"):
        chosen = pins.pins_for(minor, pinned)
        expected = {"python", *recipes.LIBRARIES, *recipes.TOOLS}
        assert set(chosen) - {"patches"} == expected, minor
        assert chosen["python"].version.startswith(minor + "."), chosen["python"]
        for name, pin in chosen.items():
            assert len(pin.sha256) == 64 and int(pin.sha256, 16) >= 0, pin
            assert pin.version == pins.upstream_version(pin.debian), pin
            assert any(fnmatch.fnmatchcase(pin.file, p) for p in patterns[name]), pin
    # A patch series, where one is pinned, is of the pinned release.
    for name, pin in pinned.items():
        if name.startswith("patches-"):
            assert pin.version == pinned["python-" + name.removeprefix("patches-")].version
    # The mirror serves no source of these: the error says which to build for instead.
    for minor in ("3.12", "3.14", "3.15"):
        with pytest.raises(pins.PinError, match=f"no source of CPython {minor} is pinned") as error:
            pins.pins_for(minor, pinned)
        assert "--python 3.13" in error.value.hint


def test_debian_versions_compare_as_dpkg_compares_them():
    ordered = [
        "1.0~rc1-1",
        "1.0-1",
        "1.0-1+deb12u1",
        "1.0-2",
        "1.0a-1",  # (a letter sorts before any other character: before the `.` of 1.0.1)
        "1.0.1-1",
        "1.3.dfsg+really1.3.1-1",
        "1.3.dfsg+really1.3.2-4",
        "1:0.9-1",  # an epoch wins over everything after it
    ]
    for older, newer in itertools.pairwise(ordered):
        assert pins.debian_compare(older, newer) == -1, (older, newer)
        assert pins.debian_compare(newer, older) == 1, (older, newer)
    assert pins.debian_compare("3.11.2-6+deb12u9", "3.11.2-6+deb12u9") == 0
    if shutil.which("dpkg"):
        for older, newer in itertools.pairwise(ordered):
            subprocess.run(["dpkg", "--compare-versions", older, "lt", newer], check=True)
    assert pins.upstream_version("1:1.3.dfsg+really1.3.2-4") == "1.3.2"
    assert pins.upstream_version("8.6.18+dfsg-1") == "8.6.18"
    assert pins.upstream_version("2:1.8.12-1") == "1.8.12"
    assert pins.upstream_version("6.6+20260608-2") == "6.6+20260608"


def _pin(name, debian, file="f.orig.tar.gz"):
    return pins.Pin(name, "pkg", debian, pins.upstream_version(debian), file, "0" * 64)


def test_outdated_lists_what_the_mirror_has_newer_than_the_pins_and_whether_it_serves_it():
    newest = {
        "openssl": (pins.Offer("3.5.9-1", {}), pins.Offer("3.5.7-1~deb13u3", {}, True)),
        "zlib": (pins.Offer("1:1.3.dfsg+really1.3.2-4", {}),) * 2,
        "expat": (pins.Offer("2.9.0-1", {}), pins.Offer("2.9.0-1", {}, True)),
        "python-3.14": (pins.Offer("3.14.10-1", {}), None),
        "sqlite": (pins.Offer("3.53.4-2", {}), None),
    }
    pinned = {
        "openssl": _pin("openssl", "3.5.7-1~deb13u3"),
        "zlib": _pin("zlib", "1:1.3.dfsg+really1.3.2-4"),
        "expat": _pin("expat", "2.8.3-1~deb13u1"),
        "sqlite": _pin("sqlite", "3.40.1-2"),
    }
    found = pins.compare(pinned, lambda component: newest.get(component.name, (None, None)))
    described = {entry.component.name: entry.describe() for entry in found}
    assert set(described) == {"openssl", "expat", "python-3.14", "sqlite"}  # zlib is current
    assert described["openssl"] == (
        "openssl: 3.5.7 (3.5.7-1~deb13u3); the mirror lists 3.5.9 (3.5.9-1), but serves no "
        "newer file"
    )
    assert described["expat"] == "expat: 2.8.3 (2.8.3-1~deb13u1); the mirror serves 2.9.0 (2.9.0-1)"
    assert described["python-3.14"].startswith("python-3.14: not pinned; the mirror lists 3.14.10")
    assert "serves no newer file" in described["sqlite"]


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="needs apt (Debian's mirror)")
def test_the_mirrors_releases_of_a_package_are_read_newest_first_within_its_line():
    # The real index of this machine's apt: OpenSSL's releases within its 3.5 LTS line.
    component = next(c for c in pins.COMPONENTS if c.name == "openssl")
    offered = pins.offers(component)
    if not offered:
        pytest.skip("apt has no source index of openssl (scripts/runtime-sources adds one)")
    assert all(pins.upstream_version(offer.debian).startswith("3.5.") for offer in offered)
    versions = [offer.debian for offer in offered]
    assert versions == sorted(versions, key=functools.cmp_to_key(pins.debian_compare))[::-1]
    assert all(pins.component_file(component, offer) for offer in offered)


def test_a_pinned_file_in_a_directory_is_taken_only_with_its_pinned_sha256(tmp_path):
    sources = tmp_path / "sources"
    sources.mkdir()
    for name in DEBIAN:  # (the other sources, unpinned here: found by their names)
        (sources / name).write_bytes(b"")
    (sources / "zlib_1.3.2.orig.tar.gz").write_bytes(b"zlib release")
    (sources / "zlib_1.3.3.orig.tar.gz").write_bytes(b"a newer one, not pinned")
    digest = hashlib.sha256(b"zlib release").hexdigest()
    pin = pins.Pin("zlib", "zlib", "1.3.2-1", "1.3.2", "zlib_1.3.2.orig.tar.gz", digest)
    found = runtime_sources.resolve_sources({}, [sources], tmp_path / "dl", pinned={"zlib": pin})
    assert found["zlib"] == sources / "zlib_1.3.2.orig.tar.gz"
    # Another file under the pinned name is refused, and says what to do.
    (sources / "zlib_1.3.2.orig.tar.gz").write_bytes(b"tampered")
    with pytest.raises(IngotError, match="not the pinned " + digest) as error:
        runtime_sources.resolve_sources({}, [sources], tmp_path / "dl", pinned={"zlib": pin})
    assert "ingot runtime sources DIR" in error.value.hint


@pytest.fixture
def build_with_calls(tmp_path, monkeypatch):
    """Records the builds that would run under a runtime (instead of running them): the Python
    version of each and its spec. A runtime the store lacks is not built: the target is made up.
    The store is an empty directory, and no launcher is named by the environment."""
    calls = []

    def under(spec, *, quiet):
        calls.append((spec.target.python, spec))
        return 0

    def runtime_target(wanted, request, machine=None, root=None):
        return target.Target(
            python=wanted,
            launcher=None,
            runtime=f"cpython-{wanted}",
            runtime_python=tmp_path / "python",
            runtime_importer=tmp_path / "_ingot.so",
            pip_python=sys.executable,
            platforms=target.RUNTIME_PLATFORMS,
        )

    monkeypatch.setattr(build_under, "build_under", under)
    monkeypatch.setattr(target, "runtime_target", runtime_target)
    monkeypatch.setattr(target, "provide_runtimes", lambda *args: None)
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    return calls


HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_ingot_build_reads_its_input_once(tmp_path, build_with_calls, monkeypatch):
    # (the files beside a script are scanned, a console script looked up, once per build)
    from ingot.build.resolve import spec as spec_module

    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    planned = []
    plan_source = spec_module.plan_source
    monkeypatch.setattr(
        spec_module, "plan_source", lambda request: planned.append(request) or plan_source(request)
    )
    assert cli.main(["build", str(script)]) == 0
    assert len(planned) == 1 and len(build_with_calls) == 1


def test_a_build_is_for_this_pythons_runtime_by_default(tmp_path, build_with_calls):
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    assert cli.main(["build", str(script)]) == 0
    assert [(python, spec.plan.copies[0][1]) for python, spec in build_with_calls] == [
        (HERE, script)
    ]


@pytest.mark.parametrize("options", [["--python", "local"], ["--launcher", "/x/launcher"]])
def test_local_python_or_a_given_launcher_means_no_runtime(
    tmp_path, build_with_calls, options, capsys
):
    fake_runtime(tmp_path / "store", f"{HERE}.1")
    # A source that does not exist: the build stops at once, after choosing its Python.
    assert cli.main(["build", str(tmp_path / "missing.py"), *options]) == 1
    assert build_with_calls == []
    assert "missing.py" in capsys.readouterr().err


def test_a_named_version_is_built_with_its_runtime(tmp_path, build_with_calls):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\n[project.scripts]\np = "p:main"\n'
        '[tool.ingot]\npython = "3.13"\n'
    )
    assert cli.main(["build", str(project)]) == 0
    assert cli.main(["build", str(project), "--python", "3.12"]) == 0
    assert [wanted for wanted, _ in build_with_calls] == ["3.13", "3.12"]


def test_without_a_runtime_or_its_wheel_the_build_says_how_to_get_one(
    tmp_path, monkeypatch, capsys
):
    # An empty store, and no wheel of the runtime whose hash this ingot knows (a checkout's: its
    # release's are pinned in its wheel): a clear error, before any build work and without
    # asking pip, that names the wheel and the ways to get a runtime.
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    monkeypatch.delenv("INGOT_RUNTIME_SOURCES", raising=False)
    (tmp_path / "wheels").mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    assert cli.main(["build", str(script), "-o", str(tmp_path / "app")]) == 1
    err = capsys.readouterr().err
    wanted = f"pyingot_runtime_cp{HERE.replace('.', '')}-{ingot.__version__}-py3-none-"
    assert f"error: no runtime for Python {HERE} (" in err and str(tmp_path / "store") in err
    assert f"knows no sha256 for {wanted}" in err and "pip install" not in err
    assert f"`ingot runtime build {HERE}`" in err and "--python local" in err
    assert not (tmp_path / "app").exists()
    assert not (tmp_path / "store").exists()  # nothing half-installed


@pytest.mark.parametrize("version", ["3.12", "3.14", "3.15"])
def test_a_python_the_mirror_serves_no_source_of_is_refused_naming_the_pinned_ones(
    tmp_path, monkeypatch, capsys, version
):
    # No runtime in the store, no wheel, and no source pinned (Debian's mirror serves none):
    # the build says so before any work and names the versions it can build for.
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    monkeypatch.delenv("INGOT_RUNTIME_SOURCES", raising=False)
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    argv = ["build", str(script), "--python", version, "-o", str(tmp_path / "app")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert f"error: no runtime for Python {version} (" in err
    assert f"no source of CPython {version} is pinned" in err
    assert "--python 3.13" in err and "3.11" in err and "Traceback" not in err
    assert not (tmp_path / "app").exists() and not (tmp_path / "store").exists()


def test_a_console_script_is_resolved_where_it_is_installed(tmp_path, build_with_calls):
    # pip's console script, installed with this environment's pip: resolved here, where it is
    # installed; the build under the runtime, which sees none of this environment, gets the
    # entry point and the pinned requirements in its spec.
    import importlib.metadata

    out = str(tmp_path / "pip")
    assert cli.main(["build", "--console-script", "pip", "--python", "3.13", "-o", out]) == 0
    ((_, resolved),) = build_with_calls
    (installed,) = [
        entry
        for entry in importlib.metadata.entry_points(group="console_scripts")
        if entry.name == "pip"
    ]
    assert resolved.plan.run == {
        "kind": "function",
        "module": installed.module,
        "function": installed.attr,
    }
    assert any(pin.lower().startswith("pip==") for pin in resolved.plan.requirements)
    # The spec crosses to the runtime's interpreter as data, whole.
    assert Spec.from_json(resolved.to_json()) == resolved
    with pytest.raises(IngotError, match="no console script 'other' is installed"):
        console_script_entry("other")


def test_a_runtime_build_says_what_runs_while_a_step_takes_long(tmp_path, monkeypatch):
    # A step (here: sh sleeping) that outlasts the progress period is reported as it runs, by
    # component (its directory), step and time; its output goes to the log only.
    monkeypatch.setattr(commands, "PROGRESS_SECONDS", 0.2)
    said = []
    log = tmp_path / "build.log"
    work = tmp_path / "openssl-3.0.20"
    work.mkdir()
    run = commands.Builder(Toolchain(Path("/no/zig")), log, said.append).runner(work, tmp_path)
    run(["sh", "-c", "echo compiling; sleep 0.7"], cwd=work)
    assert len(said) >= 2, said
    assert all(line.startswith("    openssl-3.0.20: sh -c, ") for line in said), said
    assert said[-1].endswith(" s since the start)"), said
    assert "compiling" in log.read_text()
    with pytest.raises(IngotError, match="failed \\(exit 3\\)"):
        run(["sh", "-c", "exit 3"], cwd=work)


def test_a_cross_build_is_configured_for_the_target_and_runs_nothing_of_it(tmp_path):
    host = host_machine()
    other = next(machine for machine in MACHINES.values() if machine != host)
    assert recipes.cross_options(host) == []
    assert recipes.cross_options(other) == [
        f"--host={other.triplet}",
        f"--build={host.triplet}",
    ]
    native, _ = recipes.python_configure_arguments(tmp_path / "p", tmp_path / "l", host)
    assert not [a for a in native if a.startswith(("--host", "--with-build-python"))]
    build_python = tmp_path / "python3.13"
    arguments, environment = recipes.python_configure_arguments(
        tmp_path / "p", tmp_path / "l", other, build_python
    )
    assert f"--host={other.triplet}" in arguments
    assert f"--with-build-python={build_python}" in arguments
    # What configure would otherwise find out by running a program built for the target.
    assert environment["ac_cv_buggy_getaddrinfo"] == "no"
    assert environment["ac_cv_file__dev_ptmx"] == "yes"
    assert Toolchain(Path("/no/zig"), machine=other).target == f"{other.name}-linux-gnu.2.17"
    assert Toolchain(Path("/no/zig"), machine=other).cross
    assert not Toolchain(Path("/no/zig")).cross


def test_a_cross_runtime_build_of_3_10_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    other = next(machine for machine in MACHINES.values() if machine != host_machine())
    monkeypatch.setattr(builder, "find_zig", lambda: Path("/no/zig"))
    with pytest.raises(IngotError, match=r"cross builds need 3\.11 or later"):
        builder.build_runtime({}, wanted="3.10", machine=other, say=lambda line: None)
    assert not (tmp_path / "store").exists()  # nothing fetched, nothing made


def test_a_runtime_build_missing_what_its_launcher_needs_stops_before_any_work(
    tmp_path, monkeypatch
):
    """Issue 41: a cross build without Rust's standard library for the target compiled for 14
    minutes, then stopped at the launcher. cargo, cargo-zigbuild and the Rust target are checked
    first: nothing fetched, nothing made."""
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.setattr(builder, "find_zig", lambda: Path("/no/zig"))
    monkeypatch.setattr(builder, "check_build_tools", lambda: None)  # (the next test's)
    other = next(machine for machine in MACHINES.values() if machine != host_machine())
    # No cargo on PATH.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(IngotError, match="needs Rust's cargo") as error:
        builder.build_runtime({}, wanted="3.13", say=lambda line: None)
    assert "rustup" in error.value.hint
    # cargo, but no cargo-zigbuild (here nor beside this interpreter).
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("cargo", "rustc"):
        (tools / name).write_text("#!/bin/sh\nexit 0\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setattr(launcher_build.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(IngotError, match="needs cargo-zigbuild") as error:
        builder.build_runtime({}, wanted="3.13", say=lambda line: None)
    assert "pip install cargo-zigbuild" in error.value.hint
    # Both, but a rustc whose sysroot has no standard library for the other machine.
    (tools / "cargo-zigbuild").write_text("#!/bin/sh\nexit 0\n")
    (tools / "cargo-zigbuild").chmod(0o755)
    sysroot = tmp_path / "sysroot"
    (sysroot / "lib" / "rustlib" / host_machine().rust / "lib").mkdir(parents=True)
    (tools / "rustc").write_text(f"#!/bin/sh\necho {sysroot}\n")
    with pytest.raises(IngotError, match=f"no standard library for {other.rust}") as error:
        builder.build_runtime({}, wanted="3.13", machine=other, say=lambda line: None)
    assert error.value.hint == f"rustup target add {other.rust}"
    assert not (tmp_path / "store").exists()  # nothing fetched, nothing made


def test_a_runtime_build_without_the_build_tools_it_needs_stops_before_any_work(
    tmp_path, monkeypatch
):
    """Issue 40: on a fresh Debian 12 the README's runtime build stopped in OpenSSL's Configure
    (perl-base lacks FindBin) after the first libraries were built, and would have stopped
    without make; then SQLite's snapshot (Debian's) wanted tclsh. They are checked first."""
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.setattr(builder, "find_zig", lambda: Path("/no/zig"))
    tools = tmp_path / "tools"
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))
    with pytest.raises(IngotError, match="needs make and perl, which this machine lacks") as error:
        builder.build_runtime({}, wanted="3.13", say=lambda line: None)
    assert "apt install make perl cmake tcl" in error.value.hint
    # A Perl without the modules OpenSSL's Configure uses: the real perl, made to load one that
    # is not there (as perl-base lacks FindBin).
    for name in ("make", "perl"):
        (tools / name).symlink_to(shutil.which(name, path=os.defpath) or f"/usr/bin/{name}")
    monkeypatch.setenv("PERL5OPT", "-MNo::Such::Module")
    with pytest.raises(IngotError, match=r"needs Perl's module No::Such::Module \(OpenSSL"):
        builder.build_runtime({}, wanted="3.13", say=lambda line: None)
    monkeypatch.delenv("PERL5OPT")
    build_checks.check_build_tools()  # this machine's perl has them all
    assert not (tmp_path / "store").exists()  # nothing fetched, nothing made
    # A release (expat's configure, SQLite's amalgamation) needs no cmake or tclsh; a snapshot
    # of the repository (Debian's .orig tarballs) does. (PATH has neither here.)
    tarballs = {}
    for name, top, member in (
        ("expat", "expat-2.5.0", "configure"),
        ("expat-snapshot", "expat-2.5.0", "expat/CMakeLists.txt"),
        ("sqlite", "sqlite-autoconf-3400100", "sqlite3.c"),
        ("sqlite-snapshot", "sqlite3-3.40.1", "tool/mkopcodeh.tcl"),
    ):
        tree = tmp_path / name / top
        (tree / member).parent.mkdir(parents=True, exist_ok=True)
        (tree / member).write_text("")
        tarballs[name] = tmp_path / f"{name}.tar.gz"
        with tarfile.open(tarballs[name], "w:gz") as tar:
            tar.add(tree, arcname=top)
    build_checks.check_snapshot_tools({"expat": tarballs["expat"], "sqlite": tarballs["sqlite"]})
    with pytest.raises(IngotError, match="builds only with cmake, and this machine has no cmake"):
        build_checks.check_snapshot_tools({"expat": tarballs["expat-snapshot"]})
    with pytest.raises(
        IngotError, match=r"generates sqlite3\.c with Tcl's tclsh, and this machine"
    ):
        build_checks.check_snapshot_tools({"sqlite": tarballs["sqlite-snapshot"]})


def _tool(directory, name, output):
    """An executable ``name`` in ``directory`` that prints ``output``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(f"#!/bin/sh\necho '{output}'\n")
    (directory / name).chmod(0o755)
    return directory / name


def test_a_profile_guided_build_without_a_fitting_llvm_profdata_stops_before_any_work(
    tmp_path, monkeypatch
):
    """Issue 41: PGO's profiles are merged by llvm-profdata, which must read the raw profiles of
    zig's clang (LLVM 19 or later). It is looked for first: nothing fetched, nothing made."""
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.setattr(builder, "find_zig", lambda: Path("/no/zig"))
    monkeypatch.setattr(builder, "check_build_tools", lambda: None)
    monkeypatch.setattr(launcher_build.sys, "executable", str(tmp_path / "tools" / "python"))
    tools = tmp_path / "tools"
    for name in ("cargo", "cargo-zigbuild"):
        _tool(tools, name, "")
    old = _tool(tools, "llvm-profdata-14", "Ubuntu LLVM version 14.0.6")
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("LLVM_PROFDATA", raising=False)
    with pytest.raises(IngotError, match="needs llvm-profdata of LLVM 19 or later") as error:
        builder.build_runtime({}, wanted="3.13", pgo=True, say=lambda line: None)
    assert f"found only {old} (LLVM 14)" in str(error.value)
    assert "apt install llvm-19" in error.value.hint and "--no-pgo" in error.value.hint
    assert not (tmp_path / "store").exists()
    # Not asked for (the default): the build says why it goes on without it, and goes on (here
    # to the sources, none in an empty directory; the pinned ones are not fetched by this test).
    said = []
    monkeypatch.setattr(builder, "_pins_for", lambda wanted, sources: {})
    with pytest.raises(IngotError, match="no source release for python"):
        builder.build_runtime({}, [tmp_path], wanted="3.13", say=said.append)
    assert "building without profile-guided optimization" in said[0], said
    assert "needs llvm-profdata of LLVM 19" in said[0] and "apt install llvm-19" in said[0]
    # $LLVM_PROFDATA is the one taken, and said.
    monkeypatch.setenv("LLVM_PROFDATA", str(old))
    with pytest.raises(IngotError, match=r"\(\$LLVM_PROFDATA\)"):
        builder.build_runtime({}, wanted="3.13", pgo=True, say=lambda line: None)
    # The newest fitting one wins over older ones and the unversioned name.
    monkeypatch.delenv("LLVM_PROFDATA")
    _tool(tools, "llvm-profdata", "LLVM version 18.1.8")
    newest = _tool(tools, "llvm-profdata-21", "Debian LLVM version 21.1.2")
    _tool(tools, "llvm-profdata-19", "Debian LLVM version 19.1.7")
    assert toolchain_module.find_llvm_profdata() == (newest, 21)
    # With llvm-profdata but no LLVM source (none is pinned), the default goes on without PGO
    # too, and says so; --pgo stops.
    said.clear()
    with pytest.raises(IngotError, match="no source release for python"):
        builder.build_runtime({}, [tmp_path], wanted="3.13", say=said.append)
    assert "no LLVM source" in said[0], said
    with pytest.raises(IngotError, match=r"no source release for python, .*, compiler-rt in"):
        builder.build_runtime({}, [tmp_path], wanted="3.13", pgo=True, say=said.append)
    # Without PGO, none is needed.
    (tools / "llvm-profdata-21").unlink()
    (tools / "llvm-profdata-19").unlink()
    said.clear()
    with pytest.raises(IngotError, match="no source release for python"):
        builder.build_runtime({}, [tmp_path], wanted="3.13", pgo=False, say=said.append)
    assert not any("profile-guided" in line for line in said), said


def test_a_cross_build_cannot_be_profile_guided(tmp_path, monkeypatch):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.setattr(builder, "find_zig", lambda: Path("/no/zig"))
    monkeypatch.setattr(builder, "check_launcher_prerequisites", lambda toolchain: None)
    other = next(machine for machine in MACHINES.values() if machine != host_machine())
    with pytest.raises(IngotError, match="cannot be built with profile-guided optimization"):
        builder.build_runtime({}, wanted="3.13", machine=other, pgo=True, say=lambda line: None)
    assert not (tmp_path / "store").exists()


def test_a_profile_guided_build_is_link_time_optimized(tmp_path, monkeypatch):
    """--pgo with --no-lto is refused before anything is done."""
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    with pytest.raises(IngotError, match="--pgo with --no-lto") as error:
        builder.build_runtime({}, wanted="3.13", pgo=True, lto=False, say=lambda line: None)
    assert error.value.hint and "--no-lto" in error.value.hint
    assert not (tmp_path / "store").exists()


def test_a_stored_runtime_is_kept_when_optimized_as_much_as_asked_or_more(tmp_path, monkeypatch):
    """A build without LTO (CI's, for the runtimes its cache lacks) keeps a stored runtime with
    it; a build asking for LTO (the default) builds one without it again, and says why."""
    final = tmp_path / "cpython-3.13.15-x86_64-linux-gnu.2.17"
    final.mkdir()
    digests = {"python": "a" * 64}

    def stored(lto: str | None) -> None:
        info = {
            "recipes": builder.recipes_fingerprint(),
            "sources": {"python": {"sha256": "a" * 64}},
            "optimization": builder._optimization(None, 2, None, lto is not None),
        }
        monkeypatch.setattr(builder, "read_runtime", lambda path: store.Runtime(path, info))

    said: list[str] = []
    stored("thin")
    assert builder._built_already(final, said.append, False, digests, lto=False) is not None
    assert builder._built_already(final, said.append, False, digests, lto=True) is not None
    stored(None)
    assert builder._built_already(final, said.append, False, digests, lto=False) is not None
    said.clear()
    assert builder._built_already(final, said.append, False, digests, lto=True) is None
    assert said == [
        f"runtime {final.name} was built without link-time optimization: building it again"
    ]
    assert builder._optimization(None, 2, None, False)["lto"] is None


def test_a_module_built_on_its_own_that_includes_internal_headers_defines_what_they_need(tmp_path):
    """A standard module that Modules/Setup.stdlib.in names and that includes an internal
    header requiring Py_BUILD_CORE without defining it (3.11's pyexpat.c after a security patch
    of Debian's series) gets the definition, once; one that defines it, or whose local header
    does (3.13's _testcapi parts), or that includes no such header, is left as it is."""
    internal = tmp_path / "Include" / "internal"
    internal.mkdir(parents=True)
    (internal / "pycore_ceval.h").write_text(
        '#ifndef Py_BUILD_CORE\n#  error "this header requires Py_BUILD_CORE define"\n#endif\n'
    )
    (internal / "pycore_free.h").write_text("/* no requirement */\n")
    modules = tmp_path / "Modules"
    (modules / "_testcapi").mkdir(parents=True)
    (modules / "Setup.stdlib.in").write_text(
        "@MODULE_PYEXPAT_TRUE@pyexpat pyexpat.c\n@MODULE_A_TRUE@a a.c\n@MODULE_B_TRUE@b b.c\n"
        "@MODULE__TESTCAPI_TRUE@_testcapi _testcapi/run.c\n"
    )
    needs = '#include "Python.h"\n#include "pycore_ceval.h"\n'
    (modules / "pyexpat.c").write_text(needs)
    (modules / "a.c").write_text("#define Py_BUILD_CORE_MODULE 1\n" + needs)
    (modules / "b.c").write_text('#include "pycore_free.h"\n')
    (modules / "_testcapi" / "parts.h").write_text("#define Py_BUILD_CORE_MODULE 1\n")
    (modules / "_testcapi" / "run.c").write_text('#include "parts.h"\n' + needs)
    (modules / "posixmodule.c").write_text(needs)  # (not named: the interpreter's own)
    before = {path: path.read_text() for path in modules.rglob("*.c")}
    assert recipes.cpython._define_core_module(tmp_path) == ["Modules/pyexpat.c"]
    patched = (modules / "pyexpat.c").read_text()
    assert patched.endswith(needs)
    assert patched.index("#  define Py_BUILD_CORE_MODULE 1") < patched.index("Python.h")
    assert "#ifndef Py_BUILD_CORE_BUILTIN" in patched
    for path, text in before.items():
        if path.name != "pyexpat.c":
            assert path.read_text() == text, path
    assert recipes.cpython._define_core_module(tmp_path) == []
    assert (modules / "pyexpat.c").read_text() == patched


def test_the_profile_runtimes_llvm_must_be_the_release_zigs_clang_is(tmp_path):
    names = {
        "llvm-toolchain-22_22.1.8.orig.tar.xz": (22, 1, 8),
        "llvm-project-21.1.0.src.tar.xz": (21, 1, 0),
        "compiler-rt-19.1.7.src.tar.xz": (19, 1, 7),
        "llvm.tar.xz": None,
    }
    for name, version in names.items():
        assert recipes.llvm_version_of(Path(name)) == version, name
    zig = _tool(tmp_path, "zig", "clang version 22.1.8")
    toolchain = Toolchain(zig)
    assert toolchain.clang_major() == 22
    builder._check_profile_runtime(toolchain, Path("llvm-toolchain-22_22.1.8.orig.tar.xz"))
    with pytest.raises(IngotError, match=r"is LLVM 21\.1\.0, but zig's clang is LLVM 22") as error:
        builder._check_profile_runtime(toolchain, Path("llvm-project-21.1.0.src.tar.xz"))
    assert "llvm-project-22" in error.value.hint and "--no-pgo" in error.value.hint


def test_llvms_source_is_a_tool_source_found_by_name_and_unpacked_in_part(tmp_path):
    tree = tmp_path / "tree" / "llvm-toolchain-22_22.1.8"
    for name in (
        "compiler-rt/lib/profile/InstrProfiling.c",
        "compiler-rt/include/profile/InstrProfData.inc",
        "compiler-rt/lib/asan/asan.c",
        "llvm/lib/big.cpp",
    ):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(name)
    archive = tmp_path / "sources" / "llvm-toolchain-22_22.1.8.orig.tar.xz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(tree, arcname=tree.name)
    for name in DEBIAN:  # every other source, by Debian's names
        (archive.parent / name).write_bytes(b"x")
    found = runtime_sources.resolve_sources({}, [archive.parent], tmp_path / "downloads")
    assert "compiler-rt" not in found  # only for a profile-guided build
    found = runtime_sources.resolve_sources(
        {}, [archive.parent], tmp_path / "downloads", tools=["compiler-rt"]
    )
    assert found["compiler-rt"] == archive
    top = runtime_sources.unpack(archive, tmp_path / "src", only=recipes.PROFILE_RUNTIME_MEMBERS)
    unpacked = sorted(str(path.relative_to(top)) for path in top.rglob("*") if path.is_file())
    assert unpacked == [
        "compiler-rt/include/profile/InstrProfData.inc",
        "compiler-rt/lib/profile/InstrProfiling.c",
    ]
    with pytest.raises(IngotError, match="nothing under nowhere/"):
        runtime_sources.unpack(archive, tmp_path / "src2", only=("nowhere/",))


def test_a_failing_test_of_the_training_run_does_not_stop_a_profile_guided_build(
    tmp_path, monkeypatch
):
    """CPython 3.13's Makefile stops when a test of its training run fails (3.11's ignores it): a
    fresh machine's test command stopped there (one test failed under load). The recipe's task
    ignores the status; the merged profile is checked after (_check_profile)."""
    commands = []
    monkeypatch.setattr(recipes.cpython, "patch_python", lambda source: None)
    monkeypatch.setattr(
        recipes.cpython, "_check_profile", lambda source, run, profdata: {"counted": 1}
    )
    recipes.build_python(
        tmp_path,
        tmp_path / "prefix",
        tmp_path / "libraries",
        lambda argv, cwd, extra=None: commands.append(argv),
        2,
        host_machine(),
        llvm_profdata=Path("/usr/bin/llvm-profdata"),
    )
    make = next(command for command in commands if command[0] == "make" and len(command) > 2)
    task = next(arg for arg in make if arg.startswith("PROFILE_TASK="))
    # 3.13's rule, run by make with that variable: a failing task, then the merge still runs.
    (tmp_path / "Makefile").write_text(
        "profile-run-stamp:\n\t$(LLVM_PROF_FILE) sh -c 'exit 2' $(PROFILE_TASK)\n\ttouch merged\n"
    )
    done = subprocess.run(
        ["make", "-s", task, "LLVM_PROF_FILE=LLVM_PROFILE_FILE=x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and (tmp_path / "merged").exists(), done.stderr
    (tmp_path / "merged").unlink()
    failed = subprocess.run(
        ["make", "-s", "PROFILE_TASK=-m test"], cwd=tmp_path, capture_output=True
    )
    assert failed.returncode != 0 and not (tmp_path / "merged").exists()  # (the rule as it is)


@pytest.mark.fast
def test_the_recipes_fingerprint_is_of_what_they_do_not_of_their_comments(tmp_path):
    module = Path(recipes.__file__).parent / "cpython.py"
    text = module.read_text()
    tidied = tmp_path / "tidied.py"
    # Comments, docstrings, blank lines and wrapping changed: the same fingerprint.
    tidied.write_text(
        text.replace('"""', '"""Reworded. ', 1)
        .replace("    # ", "    #  (tidied) ")
        .replace("\n\n\n", "\n\n\n\n")
    )
    assert tidied.read_text() != text
    assert recipes.code_of(tidied) == recipes.code_of(module)
    assert recipes.fingerprint(tidied) == recipes.fingerprint(module)
    # A change of what it does: another fingerprint.
    changed = tmp_path / "changed.py"
    changed.write_text(text.replace('PGO_GENERATE = "-fprofile-generate"', 'PGO_GENERATE = "-x"'))
    assert changed.read_text() != text
    assert recipes.fingerprint(changed) != recipes.fingerprint(module)
    # The libraries' fingerprint does not cover CPython's recipe.
    assert builder.libraries_fingerprint() != builder.recipes_fingerprint()


def test_zig_caches_left_by_launcher_builds_are_removed_and_those_in_use_kept(tmp_path):
    """A launcher build's zig caches live beside its cargo target; the ones earlier builds
    left in the store's .zig-caches (one per build or relink, about 60 MB each, named after a
    temporary directory) go at the next build, but for a build still running."""
    caches = tmp_path / ".zig-caches"
    for name in (".build-gone", ".relink-gone", ".build-running", "other"):
        (caches / name / "global").mkdir(parents=True)
        (caches / name / "global" / "file").write_text("x")
    (tmp_path / ".build-running").mkdir()  # its build directory: in progress
    launcher_build.remove_left_zig_caches(tmp_path)
    assert sorted(path.name for path in caches.iterdir()) == [".build-running", "other"]
    shutil.rmtree(caches / ".build-running")
    shutil.rmtree(caches / "other")
    launcher_build.remove_left_zig_caches(tmp_path)
    assert not caches.exists()


def test_launcher_sources_digest_is_the_trees_and_changes_with_its_rust_sources(tmp_path):
    """`ingot runtime launcher --if-sources-changed` keeps a launcher built from the same
    sources: the digest is the same for a copy of the tree (a staging copy, an installed
    package's ingot/_source), ignores build output, and changes when a crate's file does."""
    tree = launcher_build.source_tree()
    assert tree is not None
    copy = tmp_path / "copy"
    for name in ("Cargo.toml", "Cargo.lock"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / name, copy / name)
    shutil.copytree(tree / "crates", copy / "crates", ignore=shutil.ignore_patterns("target"))
    (copy / "python" / "ingot" / "boot").mkdir(parents=True)
    for name in ("support.py", "archive_paths.py"):
        shutil.copy2(tree / "python" / "ingot" / "boot" / name, copy / "python/ingot/boot" / name)
    digest = launcher_build.launcher_sources_digest(copy)
    assert digest == launcher_build.launcher_sources_digest(tree)
    (copy / "crates" / "ingot-launcher" / "target").mkdir(exist_ok=True)
    (copy / "crates" / "ingot-launcher" / "target" / "junk").write_text("build output")
    assert launcher_build.launcher_sources_digest(copy) == digest
    source = copy / "crates" / "ingot-launcher" / "src" / "main.rs"
    source.write_text(source.read_text() + "\n// changed\n")
    assert launcher_build.launcher_sources_digest(copy) != digest


def test_a_build_finds_runtimes_in_the_store_its_snapshot_names(tmp_path, monkeypatch):
    # Resolution reads the environment once: the store is the snapshot's, whatever the
    # environment says afterwards (a runtime child's, a caller's that changed it).
    from ingot.build.resolve.environment import Environment
    from ingot.build.resolve.settings import Request, Settings
    from ingot.build.resolve.spec import resolve

    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    snapshot = Environment({**os.environ, "INGOT_RUNTIMES": str(tmp_path / "snapshot")})
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "now"))
    monkeypatch.delenv("INGOT_RUNTIME_SOURCES", raising=False)
    request = Request(source=str(script), settings=Settings(python="3.11"))
    with pytest.raises(IngotError) as raised:
        resolve(request, environment=snapshot)
    assert f"in {tmp_path / 'snapshot'}" in str(raised.value)
    assert store.store({"INGOT_RUNTIMES": str(tmp_path / "a")}) == tmp_path / "a"
    assert store.store({"HOME": "/home/u"}) == Path("/home/u/.cache/ingot/runtimes")
    with pytest.raises(IngotError):
        store.store({"INGOT_RUNTIMES": "relative"})
