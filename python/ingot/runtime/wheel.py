"""Runtimes as wheels: how a runtime travels through the package indexes users already run (PyPI,
a devpi or Artifactory mirror, a folder of wheels) instead of a download server of ingot's own.

The runtime of CPython 3.X is the distribution ``pyingot-runtime-cp3X``, one wheel per version of
ingot (its launcher and ingot's extension module are that ingot's):

    pyingot_runtime_cp311-0.1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
        pyingot_runtime_cp311/runtime.json             what it is (runtime.json of the store)
        pyingot_runtime_cp311/python/bin/python3.11    the interpreter that runs a build's stages
        pyingot_runtime_cp311/python/lib/python3.11/   its standard library and lib-dynload
        pyingot_runtime_cp311/launcher/                ingot-launcher-3.11, _ingot.cpython-311-...so

Its tag is ``py3-none``: it carries its own interpreter, so any Python ingot runs under installs
it. It holds what builds and executables use and nothing else: no static libraries, headers or
build log (``ingot runtime launcher`` cannot relink it), no ``__pycache__``, none of the standard
library a build leaves out by default (:data:`ingot.stdlib.DEFAULT_STDLIB_EXCLUDES`: the
test suites, idlelib, ensurepip...) but tkinter (a build carries it when the application imports
it, with Tcl's and Tk's script libraries, ``python/lib/tcl8.6`` and ``tk8.6``), and its ELF files
without debug sections.

:func:`export_wheel` writes one from a runtime of the store, byte for byte the same each time
(sorted entries, fixed times and modes), and records its sha256 in the store's table of trusted
wheels. :func:`install_runtime` installs one into the store with pip (its configuration: index,
``--find-links``, ``PIP_*`` variables) in hash-checking mode (``--require-hashes``): only a
wheel whose sha256 this ingot knows (its release's, :data:`PINNED_WHEELS`, or one exported
here) is installed, never another project's or a lookalike of the same name; it is then checked
against its RECORD and moved into place in one rename.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ingot._ingot import __version__
from ingot.cachedir import make_directories
from ingot.machine import MACHINES, Machine, host_machine
from ingot.runtime.builder import relocate
from ingot.runtime.recipes import SCRIPT_LIBRARIES
from ingot.runtime.store import (
    Runtime,
    RuntimeError_,
    check_safe_path,
    read_runtime,
    store,
    trusted_files,
)
from ingot.runtime.toolchain import ToolchainError, find_zig
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES, is_excluded

__all__ = [
    "PINNED_WHEELS",
    "distribution",
    "export_wheel",
    "install_runtime",
    "known_hash",
    "trust_wheel",
    "wheel_name",
    "wheel_platform",
]

#: The sha256 of each runtime wheel of this ingot's release (wheel file name -> hex digest),
#: written into ingot's own wheel by scripts/wheels, which builds the runtime wheels first
#: (docs/security.md, "Runtime wheels"). Empty in a checkout.
PINNED_WHEELS = Path(__file__).with_name("pinned_wheels.json")
#: The hashes of the runtime wheels exported here (`ingot runtime export`), in the store.
TRUSTED_WHEELS = "trusted-wheels.json"


def wheel_platform(machine: str) -> str:
    """The platform tags of a runtime's wheel for ``machine`` (``x86_64``): every ELF file in it
    needs at most glibc 2.17."""
    return f"manylinux_2_17_{machine}.manylinux2014_{machine}"


#: The date of every entry of the wheels ingot writes (zip cannot say 1970), unless
#: ``SOURCE_DATE_EPOCH`` says another.
_EPOCH = (1980, 1, 1, 0, 0, 0)

#: A runtime's name in the store (what a wheel's runtime.json must make).
_NAME = re.compile(r"cpython-\d+\.\d+\.\d+[a-z0-9]*-[a-z0-9_]+-linux-gnu\.\d+\.\d+")


def distribution(version: str) -> str:
    """The distribution of the runtime of Python ``version`` ("3.11" or "3.11.2"):
    ``pyingot-runtime-cp311``."""
    major, minor = version.split(".")[:2]
    return f"pyingot-runtime-cp{major}{minor}"


def wheel_name(version: str, ingot_version: str = __version__, machine: str | None = None) -> str:
    """The file name of the runtime wheel of Python ``version`` for ``machine`` (default: this
    machine's)."""
    package = distribution(version).replace("-", "_")
    platform = wheel_platform(machine or host_machine().name)
    return f"{package}-{ingot_version}-py3-none-{platform}.whl"


#: What a runtime's wheel carries of what builds leave out by default: modules an application
#: may import (a build then carries them), with the files they need.
WHEEL_CARRIES = ("tkinter", "_tkinter")


#: What a runtime's wheel leaves out (of the test suites: tkinter's too).
_WHEEL_EXCLUDES = tuple(
    pattern for pattern in DEFAULT_STDLIB_EXCLUDES if pattern not in WHEEL_CARRIES
)


def _excluded(dotted: str) -> bool:
    return is_excluded(dotted, _WHEEL_EXCLUDES)


def _carried(runtime: Runtime) -> Iterator[tuple[str, Path]]:
    """(name in the wheel's package, file) of what a runtime's wheel carries, sorted."""
    minor = ".".join(runtime.version.split(".")[:2])
    stdlib = runtime.path / "python" / "lib" / f"python{minor}"
    found: list[tuple[str, Path]] = [("python/bin/" + runtime.python.name, runtime.python)]
    for launcher in sorted((runtime.path / "launcher").iterdir()):
        found.append((f"launcher/{launcher.name}", launcher))
    for library in SCRIPT_LIBRARIES:  # Tcl's and Tk's (tkinter), beside the standard library
        for path in sorted((stdlib.parent / library).rglob("*")):
            if path.is_file() and not path.is_symlink():
                found.append((f"python/lib/{path.relative_to(stdlib.parent).as_posix()}", path))
    for directory, subdirectories, files in os.walk(stdlib):
        here = Path(directory)
        relative = here.relative_to(stdlib)
        module = ".".join(relative.parts)
        kept = []
        for name in sorted(subdirectories):
            dotted = f"{module}.{name}" if module else name
            if name == "__pycache__" or name == "site-packages" or name.startswith("config-"):
                continue
            if relative.parts[:1] != ("lib-dynload",) and _excluded(dotted):
                continue
            kept.append(name)
        subdirectories[:] = kept
        for name in sorted(files):
            stem = name.split(".")[0]
            top = relative.parts[:1] in ((), ("lib-dynload",))
            dotted = stem if top else f"{module}.{stem}"
            if _excluded(dotted):
                continue
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            found.append((f"python/lib/python{minor}/{(relative / name).as_posix()}", path))
    return iter(sorted(found))


def _strippers() -> list[list[str]]:
    """Commands that copy an ELF file without its debug sections: binutils' or LLVM's objcopy,
    then zig's (which refuses many files: "unimplemented")."""
    found = [[tool, "--strip-debug"] for tool in ("objcopy", "llvm-objcopy") if shutil.which(tool)]
    try:
        found.append([str(find_zig()), "objcopy", "--strip-debug"])
    except ToolchainError:
        pass
    return found


def _strip_debug(path: Path, scratch: Path, strippers: list[list[str]]) -> bytes:
    """The ELF file at ``path`` without its debug sections, else as it is (when no stripper
    takes it)."""
    data = path.read_bytes()
    if not data.startswith(b"\x7fELF"):
        return data
    stripped = scratch / "stripped"
    for command in strippers:
        done = subprocess.run([*command, str(path), str(stripped)], capture_output=True)
        if done.returncode == 0:
            return stripped.read_bytes()
    return data


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def export_wheel(runtime: Runtime, directory: Path, say: Callable[[str], None] = print) -> Path:
    """Writes the wheel of ``runtime`` (from the store) into ``directory``; returns its path."""
    if not (runtime.path / "launcher").is_dir() or not runtime.info.get("launcher"):
        raise RuntimeError_(
            f"the runtime {runtime.path} has no launcher to carry",
            hint=f"link it first: ingot runtime launcher {runtime.version}",
        )
    if runtime.machine not in MACHINES:
        raise RuntimeError_(
            f"the runtime {runtime.path} is for {runtime.machine!r} (its runtime.json's target), "
            "an architecture ingot does not build for",
            hint=f"the architectures ingot builds for: {', '.join(MACHINES)}",
        )
    package = distribution(runtime.version).replace("-", "_")
    info = {
        key: value
        for key, value in runtime.info.items()
        if key not in ("built", "build_seconds", "wheel", "hashes")
    }
    # The prefix the runtime's sysconfig data records, rewritten where the wheel is installed.
    info["wheel"] = {
        "distribution": distribution(runtime.version),
        "version": __version__,
        "prefix": str(runtime.path / "python"),
    }
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = _EPOCH
    if epoch and epoch.isdigit():
        stamp = max(_EPOCH, time.gmtime(int(epoch))[:6])
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / wheel_name(runtime.version, machine=runtime.machine)
    partial = directory / f".{final.name}.{os.getpid()}.tmp"
    record: list[str] = []

    def add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
        entry = zipfile.ZipInfo(name, date_time=stamp)
        entry.external_attr = (0o100000 | mode) << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(entry, data, compresslevel=9)
        record.append(f"{name},{_record_hash(data)},{len(data)}")

    dist_info = f"{package}-{__version__}.dist-info"
    try:
        with tempfile.TemporaryDirectory() as scratch, zipfile.ZipFile(partial, "w") as archive:
            count, strippers, hashes = 0, _strippers(), {}
            trusted = {str(path.relative_to(runtime.path)) for path in trusted_files(runtime)}
            if not strippers:
                say(
                    "note: no objcopy (binutils, LLVM or zig): ELF files are carried with "
                    "their debug sections"
                )
            for name, path in _carried(runtime):
                executable = os.access(path, os.X_OK) and not name.endswith(".py")
                data = _strip_debug(path, Path(scratch), strippers)
                add(archive, f"{package}/{name}", data, 0o755 if executable else 0o644)
                if name in trusted:  # what the installed runtime is checked against
                    hashes[name] = hashlib.sha256(data).hexdigest()
                count += 1
                if count % 500 == 0:
                    say(f"  {count} files")
            info["hashes"] = hashes
            add(archive, f"{package}/runtime.json", (json.dumps(info, indent=2) + "\n").encode())
            python = runtime.info["python"]["version"]
            metadata = (
                "Metadata-Version: 2.1\n"
                f"Name: {distribution(runtime.version)}\n"
                f"Version: {__version__}\n"
                f"Summary: CPython {python} for glibc {info.get('glibc_floor', {}).get('target', '2.17')}"
                f" and ingot {__version__}'s launcher: the runtime `ingot build --python "
                f"{'.'.join(python.split('.')[:2])}` builds with\n"
                "License: PSF-2.0 AND MIT OR Apache-2.0\n"
            )
            add(archive, f"{dist_info}/METADATA", metadata.encode())
            wheel = (
                "Wheel-Version: 1.0\nGenerator: ingot "
                f"{__version__}\nRoot-Is-Purelib: false\n"
                + "".join(
                    f"Tag: py3-none-{tag}\n" for tag in wheel_platform(runtime.machine).split(".")
                )
            )
            add(archive, f"{dist_info}/WHEEL", wheel.encode())
            record.append(f"{dist_info}/RECORD,,")
            entry = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=stamp)
            entry.external_attr = 0o100644 << 16
            archive.writestr(entry, "\n".join(record) + "\n", zipfile.ZIP_DEFLATED, 9)
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    trust_wheel(final)
    say(f"wrote {final} ({count} files, {final.stat().st_size / 2**20:.1f} MiB)")
    return final


def _read_hashes(path: Path) -> dict[str, str]:
    try:
        table = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise RuntimeError_(
            f"cannot read the runtime wheels' hashes in {path}: {error}",
            hint=f"remove {path}, then export the runtime wheels again",
        ) from None
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise RuntimeError_(f"{path} is not a table of wheel names and sha256 digests")
    return table


def trust_wheel(wheel: Path) -> None:
    """Records the sha256 of ``wheel``, a runtime wheel exported here, in the store's table of
    trusted wheels: what :func:`install_runtime` then installs besides its release's own."""
    root = store()
    make_directories(root)
    table_path = root / TRUSTED_WHEELS
    table = _read_hashes(table_path) if table_path.exists() else {}
    table[wheel.name] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    partial = table_path.with_name(f".{TRUSTED_WHEELS}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
    partial.chmod(0o644)
    os.replace(partial, table_path)


def known_hash(name: str, root: Path | None = None) -> str | None:
    """The sha256 ingot trusts for the runtime wheel file ``name``: its release's
    (:data:`PINNED_WHEELS`), else one exported here (the store's table, checked first: no
    other user can have written it or a directory above it)."""
    pinned = _read_hashes(PINNED_WHEELS).get(name)
    if pinned is not None:
        return pinned
    table = (root or store()) / TRUSTED_WHEELS
    if not table.exists():
        return None
    check_safe_path(table)
    return _read_hashes(table).get(name)


def _expected(version: str, machine: Machine, root: Path) -> tuple[str, str]:
    """The file name of the runtime wheel of Python ``version`` for ``machine``, and the sha256
    this ingot knows for it (:func:`known_hash`); RuntimeError_ when it knows none."""
    expected = wheel_name(version, machine=machine.name)
    digest = known_hash(expected, root)
    if digest is None:
        raise RuntimeError_(
            f"no runtime for Python {version} ({machine.name}) in {root}, and this ingot "
            f"knows no sha256 for {expected}: it installs only its own release's runtime wheels "
            "and those exported on this machine, never a wheel an index merely names",
            hint=f"build the runtime from source: `ingot runtime build {version}"
            + (f" --target {machine.name}`" if machine != host_machine() else "`")
            + "; or export the wheel of a runtime you built (ingot runtime export, "
            "scripts/wheels), which records its hash"
            + (
                ""
                if machine != host_machine()
                else "; or build for this machine's Python: --python local"
            ),
        )
    return expected, digest


def install_runtime(
    version: str,
    say: Callable[[str], None] = print,
    machine: Machine | None = None,
    environment: Mapping[str, str] | None = None,
) -> Runtime:
    """Installs the runtime of Python ``version`` ("3.11") for ``machine`` (default: this one)
    from its wheel of this ingot's version into the store, with pip; returns it. In a build's
    ``environment`` snapshot (its store, pip's variables); None: the environment now."""
    machine = machine or host_machine()
    requirement = f"{distribution(version)}=={__version__}"
    root = store(environment)
    expected, digest = _expected(version, machine, root)
    # Another machine's wheel: pip is told its platform (it would pick this machine's).
    platform = [] if machine == host_machine() else ["--platform", f"manylinux2014_{machine.name}"]
    if importlib.util.find_spec("pip") is None:
        raise RuntimeError_(
            f"no runtime for Python {version} in {root}, and no pip in ingot's environment "
            f"({sys.executable}) to install {requirement} with",
            hint=f"`{sys.executable} -m ensurepip`, then build again; or `ingot runtime build "
            f"{version}` (from source), or --python local",
        )
    make_directories(root)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=root))
    pinned = work / "requirements.txt"
    pinned.write_text(f"{requirement} --hash=sha256:{digest}\n")
    try:
        say(
            f"installing the runtime for Python {version} ({machine.name}): pip install "
            f"{requirement}"
        )
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--target",
            str(work / "target"),
            "--no-deps",
            "--no-compile",
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "--no-warn-script-location",
            "--progress-bar",
            "off",
            *platform,
            "--require-hashes",
            "--requirement",
            str(pinned),
        ]
        said: list[str] = []
        with subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=None if environment is None else dict(environment),
        ) as pip:
            assert pip.stdout is not None
            for line in pip.stdout:  # pip's lines as they come: a download can take a while
                if line.strip():
                    said.append(line.strip())
                    say(f"  pip: {line.strip()}")
        if pip.returncode != 0 and any("DO NOT MATCH THE HASHES" in line for line in said):
            raise RuntimeError_(
                f"refusing the {requirement} wheel pip found: its sha256 is not the one this "
                f"ingot knows for {expected} ({digest}); it is another build of that name (a "
                "lookalike on an index or in a folder), and nothing of it was run",
                hint="give pip the runtime wheels of this ingot's release, or build the runtime "
                f"from source: ingot runtime build {version}",
            )
        if pip.returncode != 0:
            cross = machine != host_machine()
            which = f" for {machine.name}" if cross else ""
            raise RuntimeError_(
                f"no runtime for Python {version}{which} in {root}, and pip could not install "
                f"{requirement}"
                + (f" (its {machine.name} wheel)" if cross else "")
                + (": " + " / ".join(said[-2:]) if said else ""),
                hint="give pip a folder or index that has it (PIP_FIND_LINKS=DIR, "
                "find-links or index-url in pip.conf, PIP_INDEX_URL; ingot's scripts/wheels "
                "makes it); or build it from source: `ingot runtime build "
                + (
                    f"{version} --target {machine.name}`"
                    if cross
                    else f"{version}`; or build for this machine's Python: --python local"
                ),
            )
        package = work / "target" / distribution(version).replace("-", "_")
        placed = _place(package, requirement, root)
        if placed.machine != machine.name:
            raise RuntimeError_(
                f"pip installed {requirement} for {placed.machine}, not {machine.name}",
                hint="give pip the wheel of that architecture (its platform tag ends in "
                f"_{machine.name})",
            )
        return placed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _place(package: Path, requirement: str, root: Path) -> Runtime:
    """Moves the runtime pip installed at ``package`` into the store, its prefix rewritten."""
    found = read_runtime(package)
    if found is None:
        raise RuntimeError_(f"{requirement} holds no runtime (no readable runtime.json)")
    name = f"cpython-{found.version}-{found.info.get('target')}"
    if not _NAME.fullmatch(name) or not found.python.is_file():
        raise RuntimeError_(f"{requirement} holds no usable runtime ({name})")
    final = root / name
    recorded = found.info.get("wheel", {}).get("prefix")
    if isinstance(recorded, str) and recorded:
        relocate(package / "python", final / "python", recorded=recorded)
    found.info.setdefault("wheel", {})["installed"] = requirement
    (package / "runtime.json").write_text(json.dumps(found.info, indent=2) + "\n")
    if final.exists():
        doomed = final.with_name(f".replaced-{final.name}-{os.getpid()}")
        final.rename(doomed)
        shutil.rmtree(doomed)
    package.rename(final)
    placed = read_runtime(final)
    assert placed is not None
    return placed
