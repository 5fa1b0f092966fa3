"""Finding the shared libraries an extension module needs, the way the dynamic loader would.

For a ``DT_NEEDED`` name of an object, glibc's ``ld.so`` searches, in order:

1. a name with a ``/`` is a path, used as is;
2. if the object has no ``DT_RUNPATH``: its ``DT_RPATH``, then the ``DT_RPATH`` of the objects
   that loaded it, up the chain;
3. ``LD_LIBRARY_PATH``;
4. the object's ``DT_RUNPATH``;
5. the ld.so cache (``ldconfig -p``);
6. the default directories (multiarch, ``lib64``, ``lib``).

``$ORIGIN`` is the directory of the object that carries the path. A candidate is taken only if it
is an ELF object of the requester's class and machine, as ``ld.so`` does.

What is *not* collected: glibc's own libraries and the loader (the host's glibc must serve the
host's ``libc.so.6``; mixing glibcs crashes), ``libpython`` (the host interpreter provides it),
and the desktop's libraries (:data:`DESKTOP_LIBRARIES`: X11, GL, fontconfig, GLib, CUPS, ...),
which the target system provides.
Everything else is collected, including ``libgcc_s.so.1``, ``libstdc++`` and ``libcrypt.so.1``
(libxcrypt): they are not part of glibc and need not exist, or be recent enough, on the target.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shutil
import subprocess
import sysconfig
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingot._ingot import elf_class as _elf_class
from ingot._ingot import elf_dynamic, elf_version_needs
from ingot.machine import machine_of_elf

__all__ = [
    "ElfObject",
    "GlibcFloor",
    "Resolution",
    "VersionNeeds",
    "archive_floor",
    "elf_class",
    "elf_machine",
    "find_library",
    "glibc_floor",
    "glibc_needed",
    "is_desktop_library",
    "is_host_library",
    "ld_cache",
    "parse_ldconfig",
    "read_elf",
    "resolve",
]

#: Libraries the host always provides: glibc, its loader, the vDSO and libpython.
HOST_LIBRARIES = (
    "libc.so.*",
    "libm.so.*",
    "libpthread.so.*",
    "libdl.so.*",
    "librt.so.*",
    "libutil.so.*",
    "libresolv.so.*",
    "libnsl.so.*",
    "libanl.so.*",
    "libmvec.so.*",
    "libBrokenLocale.so.*",
    "libcidn.so.*",
    "libnss_*",
    "libthread_db.so.*",
    "libc_malloc_debug.so.*",
    "libmemusage.so",
    "libpcprofile.so",
    "libSegFault.so",
    "ld-linux*.so*",
    "ld64.so.*",
    "ld.so.*",
    "linux-vdso.so.*",
    "linux-gate.so.*",
    "libpython3*.so*",
)

#: Libraries of the desktop: the display (X11, xcb, Wayland), graphics drivers (GL, EGL, Vulkan,
#: DRM), fonts (fontconfig, FreeType), GLib, D-Bus, printing (CUPS), sound (ALSA, PulseAudio) and
#: the GTK stack. The target system provides them, matched to its hardware and display server, as
#: manylinux's policy says (PEP 599 lists X11, GL and GLib): a copy from the build machine would
#: raise the executable's glibc floor to the build machine's (CUPS's to 2.36 here) and replace
#: the target's drivers. They are not carried, nor followed; the build names them
#: (:attr:`Resolution.desktop`). A wheel's own copy (``*.libs``, a hashed name) is carried.
DESKTOP_LIBRARIES = (
    "libX11.so.*",
    "libX11-xcb.so.*",
    "libX[a-z]*.so.*",  # libXext, libXrender, libXi, libXau, libXdmcp, libXfixes, ...
    "libICE.so.*",
    "libSM.so.*",
    "libxcb.so.*",
    "libxcb-*.so.*",
    "libxkbcommon.so.*",
    "libxkbcommon-x11.so.*",
    "libwayland-*.so.*",
    "libdecor-0.so.*",
    "libGL.so.*",
    "libGLX.so.*",
    "libGLdispatch.so.*",
    "libOpenGL.so.*",
    "libEGL.so.*",
    "libGLESv1_CM.so.*",
    "libGLESv2.so.*",
    "libgbm.so.*",
    "libdrm.so.*",
    "libvulkan.so.*",
    "libfontconfig.so.*",
    "libfreetype.so.*",
    "libglib-2.0.so.*",
    "libgobject-2.0.so.*",
    "libgio-2.0.so.*",
    "libgmodule-2.0.so.*",
    "libgthread-2.0.so.*",
    "libdbus-1.so.*",
    "libcups.so.*",
    "libcupsimage.so.*",
    "libasound.so.*",
    "libpulse.so.*",
    "libpulse-simple.so.*",
    "libpulse-mainloop-glib.so.*",
    "libgtk-*.so.*",
    "libgdk-*.so.*",
    "libgdk_pixbuf-2.0.so.*",
    "libpango-1.0.so.*",
    "libpangocairo-1.0.so.*",
    "libpangoft2-1.0.so.*",
    "libcairo.so.*",
    "libcairo-gobject.so.*",
    "libatk-1.0.so.*",
    "libatk-bridge-2.0.so.*",
    "libatspi.so.*",
)

_MULTIARCH = {
    62: "x86_64-linux-gnu",
    183: "aarch64-linux-gnu",
    3: "i386-linux-gnu",
    40: "arm-linux-gnueabihf",
    21: "powerpc64le-linux-gnu",
    22: "s390x-linux-gnu",
    243: "riscv64-linux-gnu",
}


def is_desktop_library(name: str) -> bool:
    """Whether ``name`` (a ``DT_NEEDED`` or file name) is one of :data:`DESKTOP_LIBRARIES`."""
    base = os.path.basename(name)
    return any(fnmatch.fnmatchcase(base, pattern) for pattern in DESKTOP_LIBRARIES)


def is_host_library(name: str) -> bool:
    """Whether ``name`` (a ``DT_NEEDED`` or file name) is glibc's, the loader's or libpython's."""
    base = os.path.basename(name)
    return any(fnmatch.fnmatchcase(base, pattern) for pattern in HOST_LIBRARIES)


def _split(entries: Iterable[str]) -> tuple[str, ...]:
    return tuple(part for entry in entries for part in entry.split(":"))


@dataclass(frozen=True)
class ElfObject:
    """What the loader needs to know about an ELF shared object found at ``path``."""

    path: str
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    machine: int
    is_64: bool

    @classmethod
    def from_image(cls, path: str, image: bytes) -> ElfObject:
        """Raises ValueError when ``image`` is not an ELF object."""
        info = elf_dynamic(image)
        return cls(
            path,
            info["soname"],
            tuple(info["needed"]),
            _split(info["rpath"]),
            _split(info["runpath"]),
            info["machine"],
            info["is_64"],
        )


def read_elf(path: str) -> ElfObject:
    """Reads the dynamic section of the ELF object at ``path`` (ValueError if it is not one)."""
    with open(path, "rb") as file:
        return ElfObject.from_image(path, file.read())


def elf_class(path: str) -> tuple[bool, int] | None:
    """(is_64, machine) from the ELF header of ``path``; None if it is not a readable ELF file
    (read by ``ingot._ingot.elf_class``: Rust reads ELF headers, as it reads archives)."""
    return _elf_class(path)


def elf_machine(path: str | os.PathLike[str]) -> str | None:
    """The architecture of the ELF file at ``path`` (``x86_64``, ``aarch64``; see
    :func:`ingot.machine.machine_of_elf`), None if it is not a readable ELF file."""
    found = elf_class(os.fspath(path))
    return machine_of_elf(found[1]) if found is not None else None


def parse_ldconfig(text: str) -> dict[str, tuple[str, ...]]:
    """Maps each library name of ``ldconfig -p`` output to its paths, in cache order."""
    paths: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.match(r"\s+(\S+)\s+\(([^)]*)\)(?:\s+OS ABI:[^=]*)?\s+=>\s+(\S.*)$", line)
        if match:
            paths.setdefault(match.group(1), []).append(match.group(3).strip())
    return {name: tuple(found) for name, found in paths.items()}


@functools.cache
def ld_cache() -> dict[str, tuple[str, ...]]:
    """The ld.so cache of this system, from ``ldconfig -p`` (empty if there is no ldconfig)."""
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None
    )
    if ldconfig is None:
        return {}
    try:
        run = subprocess.run(
            [ldconfig, "-p"],
            capture_output=True,
            text=True,
            check=False,
            env={"LC_ALL": "C"},
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_ldconfig(run.stdout)


def default_dirs(machine: int, is_64: bool) -> list[str]:
    """The loader's built-in directories for objects of that machine and class."""
    triplet = _MULTIARCH.get(machine) or sysconfig.get_config_var("MULTIARCH")
    dirs = [f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []
    if is_64:
        dirs += ["/lib64", "/usr/lib64"]
    return [*dirs, "/lib", "/usr/lib"]


def _expand(entry: str, origin: str) -> str | None:
    """``$ORIGIN`` expanded; None for other tokens (``$LIB``, ``$PLATFORM``): not supported."""
    expanded = re.sub(r"\$(ORIGIN\b|\{ORIGIN\})", lambda _: origin, entry)
    if "$" in expanded:
        return None
    return expanded or "."


def _expand_all(entries: Iterable[str], origin: str) -> tuple[str, ...]:
    return tuple(e for e in (_expand(entry, origin) for entry in entries) if e is not None)


def find_library(
    name: str,
    requester: ElfObject,
    loader_rpath: tuple[str, ...] = (),
    library_path: str | None = None,
) -> str | None:
    """The path ``ld.so`` would load for ``requester``'s ``DT_NEEDED`` ``name``, or None.

    ``loader_rpath``: the expanded ``DT_RPATH`` directories of the objects that loaded
    ``requester``, nearest first; ``library_path``: ``LD_LIBRARY_PATH`` (the caller reads it).
    """
    wanted = (requester.is_64, requester.machine)
    if "/" in name:
        return name if elf_class(name) == wanted else None
    origin = os.path.dirname(os.path.abspath(requester.path))
    dirs: list[str] = []
    if not requester.runpath:
        dirs += _expand_all(requester.rpath, origin) + loader_rpath
    if library_path:
        dirs += [entry or "." for entry in re.split("[:;]", library_path)]
    dirs += _expand_all(requester.runpath, origin)
    candidates = [os.path.join(directory, name) for directory in dirs]
    candidates += ld_cache().get(name, ())
    candidates += [
        os.path.join(directory, name)
        for directory in default_dirs(requester.machine, requester.is_64)
    ]
    return next((path for path in candidates if elf_class(path) == wanted), None)


@dataclass
class Resolution:
    """The libraries a set of objects needs, transitively, minus the host's."""

    libraries: dict[str, ElfObject] = field(default_factory=dict)  # file name -> object
    missing: list[tuple[str, str]] = field(default_factory=list)  # (requester path, needed name)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)  # (name, kept, other)
    #: Desktop libraries (:data:`DESKTOP_LIBRARIES`) needed and left to the system: name -> the
    #: path of the first object that needs it.
    desktop: dict[str, str] = field(default_factory=dict)
    #: What the ``confined`` objects need from outside ``within`` (found on this machine, or not
    #: at all), left to the target system: name -> the path of the first object that needs it.
    left_to_system: dict[str, str] = field(default_factory=dict)


def resolve(
    objects: Iterable[ElfObject],
    *,
    known: Iterable[ElfObject] = (),
    library_path: str | None = None,
    confined: Iterable[ElfObject] = (),
    within: Iterable[str] = (),
) -> Resolution:
    """Finds every library ``objects`` need, breadth first, in the order given.

    ``known``: libraries already chosen (shipped in a wheel's ``*.libs``), keyed by file name: a
    needed name found among them is not searched for. Their own needs are resolved too.

    ``confined``: objects whose needs are taken only from the directories ``within`` (plugins a
    package loads by path, which may need what it does not ship: Qt's SQL drivers need libpq);
    what they need from elsewhere is left to the target system
    (:attr:`Resolution.left_to_system`), unless something else needs it too.
    """
    result = Resolution()
    inside = tuple(os.path.join(os.path.realpath(directory), "") for directory in within)
    for library in known:
        result.libraries.setdefault(os.path.basename(library.path), library)
    queue: deque[tuple[ElfObject, tuple[str, ...], bool]] = deque(
        (obj, (), False) for obj in objects
    )
    queue.extend((library, (), False) for library in result.libraries.values())
    queue.extend((obj, (), True) for obj in confined)
    while queue:
        requester, loader_rpath, confining = queue.popleft()
        origin = os.path.dirname(os.path.abspath(requester.path))
        child_rpath = (
            loader_rpath
            if requester.runpath
            else (_expand_all(requester.rpath, origin) + loader_rpath)
        )
        for name in requester.needed:
            if is_host_library(name):
                continue
            if is_desktop_library(name) and os.path.basename(name) not in result.libraries:
                result.desktop.setdefault(os.path.basename(name), requester.path)
                continue
            path = find_library(name, requester, loader_rpath, library_path)
            file_name = os.path.basename(name)
            kept = result.libraries.get(file_name)
            if kept is not None:
                if path is not None and os.path.realpath(path) != os.path.realpath(kept.path):
                    result.conflicts.append((file_name, kept.path, path))
                continue
            if confining and (path is None or not os.path.realpath(path).startswith(inside)):
                result.left_to_system.setdefault(file_name, requester.path)
                continue
            if path is None:
                result.missing.append((requester.path, name))
                continue
            try:
                library = read_elf(path)
            except (OSError, ValueError):
                result.missing.append((requester.path, name))
                continue
            result.libraries[file_name] = library
            queue.append((library, child_rpath, confining))
    for name in list(result.left_to_system):
        if name in result.libraries:  # needed by something else too: carried
            del result.left_to_system[name]
    return result


# --- the glibc an object needs ----------------------------------------------------------------

_GLIBC_VERSION = re.compile(r"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$")


def glibc_needed(image: bytes) -> tuple[int, int] | None:
    """The newest ``GLIBC_x.y`` symbol version an ELF image needs (from its ``DT_VERNEED``), or
    None if it needs none (a static executable, an object that uses no versioned glibc symbol).
    ``GLIBC_PRIVATE`` and the like are not versions and are ignored."""
    newest = None
    for _library, version in elf_version_needs(image):
        match = _GLIBC_VERSION.match(version)
        if match:
            found = (int(match.group(1)), int(match.group(2)))
            newest = found if newest is None or found > newest else newest
    return newest


#: What a native file of an archive needs: (kind, name, [(library, symbol version), ...]).
VersionNeeds = tuple[str, str, list[tuple[str, str]]]


def archive_floor(
    launcher: bytes | None, native: Iterable[VersionNeeds], system_first: dict[str, list[str]]
) -> GlibcFloor:
    """The oldest glibc an executable runs on: the newest ``GLIBC_x.y`` its ``launcher`` image
    (None: an archive alone) or any of its ``native`` files needs, and which one. A carried
    library the executable takes from the system where the system's copy is new enough
    (``system_first``) sets no floor of its own."""
    floor = glibc_floor([("the launcher", launcher)] if launcher else [])
    floor.system_first = system_first
    for _kind, name, needs in native:
        versions = [
            tuple(int(part) for part in version[6:].split(".")[:2])
            for _library, version in needs
            if version.startswith("GLIBC_") and version[6:7].isdigit()
        ]
        needed = max(versions) if versions else None
        floor.each[name] = needed  # type: ignore[assignment]
        if name in system_first:
            continue  # the system's copy where it is new enough: see GlibcFloor.system_first
        if needed is not None and (floor.version is None or needed > floor.version):
            floor = GlibcFloor(needed, name, floor.each, floor.system_first)  # type: ignore[arg-type]
    return floor


@dataclass
class GlibcFloor:
    """The oldest glibc a set of ELF objects runs on: the newest version any of them needs, and
    which object needs it."""

    version: tuple[int, int] | None
    needed_by: str | None
    #: Every object's own need, by name.
    each: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    #: Carried libraries taken from the system where its copy is new enough (an executable's
    #: ``__ingot__/system-first.json``): soname -> the symbol versions needed of the system's
    #: copy. Their own floors (in ``each``) count only where the system has no such copy.
    system_first: dict[str, list[str]] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.version is None:
            return "no versioned glibc symbol"
        return f"glibc {self.version[0]}.{self.version[1]} (set by {self.needed_by})"


def glibc_floor(images: Iterable[tuple[str, bytes]]) -> GlibcFloor:
    """The glibc floor of named ELF images (non-ELF ones are skipped; unreadable ones need
    nothing known)."""
    floor = GlibcFloor(None, None)
    for name, image in images:
        if not image.startswith(b"\x7fELF"):
            continue
        try:
            needed = glibc_needed(image)
        except ValueError:  # not a readable ELF object: it sets no floor ingot could know
            needed = None
        floor.each[name] = needed
        if needed is not None and (floor.version is None or needed > floor.version):
            floor.version, floor.needed_by = needed, name
    return floor
