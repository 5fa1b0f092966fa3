"""GCC's support library, ``libgcc_s.so.1``, which every executable carries.

glibc loads ``libgcc_s.so.1`` itself, by its SONAME, the first time a thread ends with
``pthread_exit`` or is cancelled (the unwinder runs the thread's cleanups) and the first time
``backtrace`` is called; without it, the process aborts ("libgcc_s.so.1 must be installed for
pthread_exit to work"). CPython calls ``pthread_exit`` in every daemon thread still running Python
code when the interpreter finalizes, and C libraries call it in their worker threads (libargon2's,
through argon2-cffi). A machine with glibc alone (a distroless base image, a container of glibc's
files) has no libgcc_s, and a runtime's launcher does not link it: so the executable carries one,
and the launcher loads it from memory at start when the system has none (the system's copy is
preferred: ``ingot_importer::native::provide_libgcc_s``), where glibc's later lookup by SONAME
finds it.

The copy carried is Debian 11's (``libgcc-s1`` 10.2.1-6, from GCC 10), which needs glibc 2.14 on
x86-64 and 2.17 on ARM64, under the executables' floor: the build machine's own copy may need a
newer glibc (Debian 12's needs 2.35). The two ``.deb`` files are kept in ``ingot/_libgcc``, each
checked against its sha256 (the one Debian's signed index gives) and its library against its own
before use; ``scripts/libgcc-debs`` fetches them again from the mirror apt is configured with.
The library is GPL-3 with the GCC Runtime Library Exception; its source is Debian's ``gcc-10``
10.2.1-6 source package.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ingot.errors import IngotError

__all__ = ["LIBGCC_S", "PACKAGES", "DebianPackage", "extract", "package_of"]

#: The SONAME glibc looks up.
LIBGCC_S = "libgcc_s.so.1"

#: Where the ``.deb`` files are kept: the ``ingot`` package's ``_libgcc`` directory.
DIRECTORY = Path(__file__).resolve().parents[2] / "_libgcc"


@dataclass(frozen=True)
class DebianPackage:
    """One machine's ``libgcc-s1`` package: its file, its sha256 and that of the library in it."""

    name: str
    version: str
    architecture: str  # Debian's name of the machine
    deb_sha256: str
    member: str  # the library's path in the package's data
    library_sha256: str

    @property
    def file(self) -> str:
        return f"{self.name}_{self.version}_{self.architecture}.deb"

    @property
    def purl(self) -> str:
        """Its package URL (the bill of materials names it: scanners know Debian's packages)."""
        return (
            f"pkg:deb/debian/{self.name}@{self.version}?arch={self.architecture}&distro=debian-11"
        )


#: By machine (``uname -m``).
PACKAGES = {
    "x86_64": DebianPackage(
        "libgcc-s1",
        "10.2.1-6",
        "amd64",
        "e478f2709d8474165bb664de42e16950c391f30eaa55bc9b3573281d83a29daf",
        "./lib/x86_64-linux-gnu/libgcc_s.so.1",
        "2d771c2e232fce107c7ec7f9a64b9a804e6d6737063088a2d8096b149a0af8cd",
    ),
    "aarch64": DebianPackage(
        "libgcc-s1",
        "10.2.1-6",
        "arm64",
        "e2fcdb378d3c1ad1bcb64d4fb6b37aab44011152beca12a4944f435a2582df1f",
        "./lib/aarch64-linux-gnu/libgcc_s.so.1",
        "4fe749ef03239678d5b1a49649d77a8579fe82ea49698ba1f113f8f0bd6bc445",
    ),
}


#: What a damaged or missing package's error suggests.
HINT = "reinstall ingot (or run scripts/libgcc-debs in its checkout)"


def package_of(machine: str) -> DebianPackage:
    try:
        return PACKAGES[machine]
    except KeyError:
        raise IngotError(f"no {LIBGCC_S} for {machine}: ingot carries one for "
                         f"{', '.join(PACKAGES)}") from None  # fmt: skip


def extract(machine: str, directory: Path) -> Path:
    """Writes the ``libgcc_s.so.1`` of ``machine`` into ``directory``; returns its path. Both
    the package and the library are checked against their sha256 first."""
    package = package_of(machine)
    deb = DIRECTORY / package.file
    try:
        content = deb.read_bytes()
    except OSError as error:
        raise IngotError(f"{deb}: cannot be read ({error.strerror})", hint=HINT) from None
    if hashlib.sha256(content).hexdigest() != package.deb_sha256:
        raise IngotError(f"{deb}: not the pinned package (its sha256 differs)", hint=HINT)
    library = _member(_ar_member(content, "data.tar.xz", deb), package.member, deb)
    if hashlib.sha256(library).hexdigest() != package.library_sha256:
        raise IngotError(f"{deb}: its {LIBGCC_S} is not the pinned one", hint=HINT)
    path = directory / f"{machine}-{LIBGCC_S}"
    path.write_bytes(library)
    return path


def _ar_member(content: bytes, name: str, deb: Path) -> bytes:
    """The member ``name`` of an ``ar`` archive (a ``.deb`` is one: ``debian-binary``, the
    control and the data tarballs), each member a 60-byte header and its bytes, 2-aligned."""
    if not content.startswith(b"!<arch>\n"):
        raise IngotError(f"{deb}: not a Debian package (no ar signature)", hint=HINT)
    offset = 8
    while offset + 60 <= len(content):
        header = content[offset : offset + 60]
        member = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii", "replace").strip() or "0")
        start = offset + 60
        if member == name:
            return content[start : start + size]
        offset = start + size + (size & 1)
    raise IngotError(f"{deb}: has no {name}", hint=HINT)


def _member(data: bytes, member: str, deb: Path) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(lzma.decompress(data)), mode="r:") as tar:
            found = tar.extractfile(member)
            if found is None:
                raise KeyError(member)
            return found.read()
    except (KeyError, lzma.LZMAError, tarfile.TarError) as error:
        raise IngotError(f"{deb}: its data has no readable {member} ({error})", hint=HINT) from None
