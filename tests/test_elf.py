"""Finding the shared libraries of extension modules as ld.so would, on this system's libraries."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace

import pytest

from ingot import elf

pytestmark = [
    pytest.mark.fast,  # the fast tier (scripts/test --fast)
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF/Linux only"),
]

_ssl = pytest.importorskip("_ssl")
_sqlite3 = pytest.importorskip("_sqlite3")


def needs_libz():
    """An extension-module-like object of this machine that needs only libz.so.1 (and libc)."""
    base = elf.read_elf(_ssl.__file__)
    return replace(base, needed=("libz.so.1", "libc.so.6"), rpath=(), runpath=())


def test_host_libraries_are_glibc_the_loader_and_libpython():
    for name in (
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libutil.so.1",
        "libresolv.so.2",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
        "linux-vdso.so.1",
        "libnss_files.so.2",
        "libpython3.11.so.1.0",
        "libmvec.so.1",
    ):
        assert elf.is_host_library(name), name
    for name in (
        "libcrypt.so.1",
        "libgcc_s.so.1",
        "libstdc++.so.6",
        "libssl.so.3",
        "libz.so.1",
        "libcrypto.so.3",
        "libsqlite3.so.0",
        "libffi.so.8",
    ):
        assert not elf.is_host_library(name), name


def test_parse_ldconfig_maps_names_to_paths_in_cache_order():
    text = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n"
        "\tlibz.so.1 (libc6) => /lib/i386-linux-gnu/libz.so.1\n"
        "\tlibfoo.so (libc6,x86-64, OS ABI: Linux 3.2.0) => /usr/lib/libfoo.so\n"
    )
    assert elf.parse_ldconfig(text) == {
        "libz.so.1": ("/lib/x86_64-linux-gnu/libz.so.1", "/lib/i386-linux-gnu/libz.so.1"),
        "libfoo.so": ("/usr/lib/libfoo.so",),
    }


def test_ld_cache_of_this_system_knows_libc():
    if shutil.which("ldconfig") is None and not os.path.exists("/sbin/ldconfig"):
        pytest.skip("no ldconfig")
    assert any(os.path.exists(path) for path in elf.ld_cache()["libc.so.6"])


def test_read_elf_gives_needed_names_and_class():
    obj = elf.read_elf(_ssl.__file__)
    assert {"libssl.so.3", "libcrypto.so.3"} <= set(obj.needed)
    assert obj.is_64 == (sys.maxsize > 2**32)
    with pytest.raises(ValueError):
        elf.ElfObject.from_image("x", b"not an ELF file")


def test_find_library_finds_libssl_for_ssl_module():
    obj = elf.read_elf(_ssl.__file__)
    path = elf.find_library("libssl.so.3", obj)
    assert path is not None and os.path.basename(path) == "libssl.so.3"
    assert elf.elf_class(path) == (obj.is_64, obj.machine)


def test_resolve_collects_ssl_and_sqlite_libraries_but_not_libc():
    resolution = elf.resolve([elf.read_elf(_ssl.__file__), elf.read_elf(_sqlite3.__file__)])
    assert {"libssl.so.3", "libcrypto.so.3", "libsqlite3.so.0"} <= set(resolution.libraries)
    assert not any(elf.is_host_library(name) for name in resolution.libraries)
    assert "libc.so.6" not in resolution.libraries
    assert resolution.missing == []
    assert resolution.libraries["libssl.so.3"].soname == "libssl.so.3"


def test_resolve_is_transitive():
    readline = pytest.importorskip("readline")
    obj = elf.read_elf(readline.__file__)
    libraries = elf.resolve([obj]).libraries
    if "libreadline.so.8" not in libraries:
        pytest.skip("readline not linked against libreadline.so.8 here")
    needed_by_libreadline = set(libraries["libreadline.so.8"].needed) - set(obj.needed)
    wanted = {name for name in needed_by_libreadline if not elf.is_host_library(name)}
    assert wanted <= set(libraries)


def test_runpath_origin_is_the_objects_directory(tmp_path):
    system = elf.find_library("libz.so.1", needs_libz())
    assert system is not None
    (tmp_path / "lib").mkdir()
    (tmp_path / "ext").mkdir()
    shutil.copy(system, tmp_path / "lib" / "libz.so.1")
    obj = replace(needs_libz(), path=str(tmp_path / "ext" / "mod.so"), runpath=("$ORIGIN/../lib",))
    assert os.path.samefile(elf.find_library("libz.so.1", obj), tmp_path / "lib" / "libz.so.1")
    with_braces = replace(obj, runpath=("${ORIGIN}/../lib",))
    assert os.path.samefile(elf.find_library("libz.so.1", with_braces), tmp_path / "lib/libz.so.1")


def test_rpath_comes_before_and_runpath_after_ld_library_path(tmp_path):
    system = elf.find_library("libz.so.1", needs_libz())
    for directory in ("rpath", "env"):
        (tmp_path / directory).mkdir()
        shutil.copy(system, tmp_path / directory / "libz.so.1")
    # (LD_LIBRARY_PATH as the build's environment had it: the caller gives it)
    env = str(tmp_path / "env")
    with_rpath = replace(needs_libz(), rpath=(str(tmp_path / "rpath"),))
    with_runpath = replace(needs_libz(), runpath=(str(tmp_path / "rpath"),))
    found = elf.find_library("libz.so.1", with_rpath, library_path=env)
    assert os.path.dirname(found) == str(tmp_path / "rpath")
    found = elf.find_library("libz.so.1", with_runpath, library_path=env)
    assert os.path.dirname(found) == env
    # RPATH is ignored when the object also has a RUNPATH
    both = replace(with_rpath, runpath=("/nonexistent",))
    assert os.path.dirname(elf.find_library("libz.so.1", both, library_path=env)) == env
    # Without it, RUNPATH's.
    assert elf.find_library("libz.so.1", with_runpath) == str(tmp_path / "rpath" / "libz.so.1")


def test_candidates_that_are_not_elf_of_the_right_class_are_skipped(tmp_path):
    (tmp_path / "libz.so.1").write_bytes(b"not an ELF object")
    obj = replace(needs_libz(), runpath=(str(tmp_path),))
    found = elf.find_library("libz.so.1", obj)
    assert found is not None and os.path.dirname(found) != str(tmp_path)
    wrong_machine = replace(obj, machine=obj.machine + 1000)
    assert elf.find_library("libz.so.1", wrong_machine) is None


def test_missing_library_is_reported_with_its_requester():
    obj = replace(needs_libz(), needed=("libdoesnotexist-ingot.so.7", "libc.so.6"))
    resolution = elf.resolve([obj])
    assert resolution.missing == [(obj.path, "libdoesnotexist-ingot.so.7")]
    assert resolution.libraries == {}


def test_known_libraries_are_used_and_their_needs_resolved(tmp_path):
    libssl = elf.read_elf(elf.find_library("libssl.so.3", elf.read_elf(_ssl.__file__)))
    resolution = elf.resolve([], known=[libssl])
    assert resolution.libraries["libssl.so.3"] is libssl
    assert "libcrypto.so.3" in resolution.libraries


def test_desktop_libraries_are_left_to_the_system_and_named():
    """X11, GL, CUPS, ... belong to the target's desktop (issue 37): not carried, not followed,
    not reported missing, whether or not this machine has them; the rest is collected."""
    needed = ("libX11.so.6", "libxcb-icccm.so.4", "libGL.so.1", "libcups.so.2", "libz.so.1")
    obj = replace(needs_libz(), needed=(*needed, "libc.so.6"))
    resolution = elf.resolve([obj])
    assert resolution.desktop == dict.fromkeys(needed[:4], obj.path)
    assert set(resolution.libraries) == {"libz.so.1"}
    assert resolution.missing == []
    for name in ("libfontconfig.so.1", "libglib-2.0.so.0", "libXext.so.6", "libEGL.so.1"):
        assert elf.is_desktop_library(name), name
    for name in ("libz.so.1", "libssl.so.3", "libSDL2-2.0.so.0", "libxml2.so.2", "libgomp.so.1"):
        assert not elf.is_desktop_library(name), name


def test_a_wheels_own_copy_of_a_desktop_library_is_carried(tmp_path):
    libz = elf.find_library("libz.so.1", needs_libz())
    shutil.copy(libz, tmp_path / "libfreetype.so.6")
    shipped = elf.read_elf(str(tmp_path / "libfreetype.so.6"))
    obj = replace(needs_libz(), needed=("libfreetype.so.6", "libc.so.6"))
    resolution = elf.resolve([obj], known=[shipped])
    assert resolution.libraries["libfreetype.so.6"] is shipped
    assert resolution.desktop == {}


def test_a_plugins_needs_come_only_from_the_collected_directories(tmp_path):
    """Qt's SQL driver plugins need libpq, which the wheel does not ship: taken from the build
    machine, it raised the floor (issue 37). A confined object's needs found outside ``within``,
    or nowhere, are left to the target system, and not reported missing; found inside, they are
    carried; something else's need of the same library still carries it."""
    libz = elf.find_library("libz.so.1", needs_libz())
    shutil.copy(libz, tmp_path / "libshipped.so.1")
    plugin = replace(
        needs_libz(),
        path=str(tmp_path / "plugin.so"),
        needed=("libz.so.1", "libshipped.so.1", "libnowhere.so.9", "libc.so.6"),
        runpath=(str(tmp_path),),
    )
    resolution = elf.resolve([], confined=[plugin], within=[str(tmp_path)])
    assert set(resolution.libraries) == {"libshipped.so.1"}
    assert resolution.left_to_system == {
        "libz.so.1": plugin.path,
        "libnowhere.so.9": plugin.path,
    }
    assert resolution.missing == []
    # An extension module that needs libz too: carried, and no longer left to the system.
    resolution = elf.resolve([needs_libz()], confined=[plugin], within=[str(tmp_path)])
    assert {"libz.so.1", "libshipped.so.1"} <= set(resolution.libraries)
    assert resolution.left_to_system == {"libnowhere.so.9": plugin.path}
