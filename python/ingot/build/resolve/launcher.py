"""The launcher an executable starts with: which binary, and what it carries.

A launcher says what it embeds (its Python version and bytecode magic, the ingot that built it,
the launch.json versions it reads) in its ``.ingot.launcher`` ELF section; a build reads it
without running the binary, and refuses a launcher whose Python is not the one building.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from ingot._ingot import (
    LAUNCH_CONFIG_VERSION,
    LAUNCHER_FACTS_FORMAT,
    LAUNCHER_FACTS_SECTION,
    ArchiveError,
    archive_info,
    elf_section,
)
from ingot.build.resolve.environment import Environment
from ingot.elf import elf_machine
from ingot.errors import BuildError
from ingot.machine import host_machine
from ingot.runtime.pins import sha256_of

__all__ = [
    "check_launcher",
    "checked_launcher",
    "find_launcher",
    "is_ingot_file",
    "launcher_facts",
    "launcher_python",
    "read_launcher",
]

#: The launcher's facts, as read.
Json = dict[str, Any]


def read_launcher(
    path: Path | None, sha256: str | None = None, machine: str | None = None
) -> bytes:
    """The bytes of the launcher at ``path`` (nothing for an archive: None): those whose
    ``sha256`` resolution recorded when it checked them (:func:`checked_launcher`), BuildError
    if the file changed since; without a digest (a target made by hand), checked now against
    this Python and the architecture ``machine``."""
    if path is None:
        return b""
    if sha256 is None:
        check_launcher(path, machine)
        return path.read_bytes()
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BuildError(f"cannot read the launcher {path}: {error.strerror or error}") from error
    if hashlib.sha256(data).hexdigest() != sha256:
        raise BuildError(
            f"the launcher {path} changed after the build was resolved (its sha256 is not the "
            f"one checked, {sha256})",
            hint="build again; and leave the launcher alone while a build runs",
        )
    return data


def checked_launcher(path: Path, machine: str, release: str | None = None) -> str:
    """Checks the launcher at ``path`` for a build (:func:`check_launcher`): against this
    Python, or, for a runtime's (``release``: its CPython, ``3.11.2``), against that release,
    whose interpreter the launcher was built with. Returns its sha256, which the spec keeps."""
    check_launcher(path, machine, release)
    try:
        return sha256_of(path)
    except OSError as error:
        raise BuildError(f"cannot read the launcher {path}: {error.strerror or error}") from error


def find_launcher(option: str | None = None, environment: Environment | None = None) -> Path:
    """The launcher binary: ``option``, else ``$INGOT_LAUNCHER`` (as ``environment``, the
    build's, has it), else ingot's own."""
    version = "%d.%d" % sys.version_info[:2]
    from_environment = environment.launcher if environment is not None else None
    if option:
        origin, path = "--launcher", Path(option)
    elif from_environment:
        origin, path = "INGOT_LAUNCHER", Path(from_environment)
    else:
        origin, path = (
            "ingot's package",
            Path(__file__).parents[2] / "_launcher" / f"ingot-launcher-{version}",
        )
    if not path.is_file() and origin == "ingot's package" and not path.parent.is_dir():
        raise BuildError(
            f"this ingot carries no launcher for this machine's Python {version} (it was "
            "installed from a release wheel, whose executables start with a runtime's launcher)",
            hint="build for a runtime: leave out --python local (or name a version: --python "
            f"{version}); for --python local, install ingot from its source (with Rust), or "
            "give a launcher built for this Python: --launcher PATH",
        )
    if not path.is_file():
        raise BuildError(
            f"no launcher binary at {path} (from {origin})",
            hint="build it (cargo build --release -p ingot-launcher) and pass "
            "--launcher PATH or set INGOT_LAUNCHER; or use --archive-only",
        )
    return path


def _elf_section(path: Path, name: str) -> bytes | None:
    """The contents of the section ``name`` of the ELF file at ``path`` (None if it has none);
    BuildError if the file is not a whole ELF file."""
    try:
        return elf_section(str(path), name)
    except ValueError as error:
        raise BuildError(
            f"{path} is not an ingot launcher: {error}",
            hint="give the ingot-launcher binary (cargo build --release -p "
            "ingot-launcher), or the one ingot ships (no --launcher)",
        ) from error
    except OSError as error:
        raise BuildError(f"cannot read the launcher {path}: {error.strerror or error}") from error


def launcher_facts(path: Path) -> Json:
    """What the launcher at ``path`` carries in its ``.ingot.launcher`` ELF section, without
    running it: ``python`` ("3.11"), ``bytecode_magic`` (hex), ``ingot`` (version), ``format``,
    ``launch_config`` (the launch.json versions it reads), ``linkage``. BuildError when the file
    is not an ingot launcher (not ELF, truncated, no such section) or is too new for this ingot."""
    path = Path(path)
    data = _elf_section(path, LAUNCHER_FACTS_SECTION)
    if data is None:
        raise BuildError(
            f"{path} is not an ingot launcher: it has no {LAUNCHER_FACTS_SECTION} "
            "section (an ELF file, but not ingot-launcher, or one built before "
            "launchers carried it)",
            hint="give the ingot-launcher binary (cargo build --release -p "
            "ingot-launcher), or the one ingot ships (no --launcher)",
        )
    try:
        facts = json.loads(data.decode())
        if not isinstance(facts, dict) or not isinstance(facts.get("format"), int):
            raise ValueError("not an object with a format")
    except ValueError as error:
        raise BuildError(
            f"{path}: its {LAUNCHER_FACTS_SECTION} section is unreadable: {error}"
        ) from error
    if facts["format"] > LAUNCHER_FACTS_FORMAT:
        raise BuildError(
            f"{path} is a launcher of a newer ingot ({facts.get('ingot')}; facts "
            f"format {facts['format']})",
            hint="upgrade ingot, or use the launcher it ships",
        )
    for key in ("python", "bytecode_magic", "ingot", "launch_config"):
        if key not in facts:
            raise BuildError(f"{path}: its {LAUNCHER_FACTS_SECTION} section has no {key!r}")
    return facts


def launcher_python(path: Path) -> str | None:
    """The Python version ("3.11") the launcher at ``path`` embeds (from :func:`launcher_facts`);
    None when it is not an ingot launcher."""
    try:
        python: str = launcher_facts(path)["python"]
        return python
    except BuildError:
        return None


def _check_this_python(path: Path, facts: Json) -> None:
    """BuildError unless the launcher's interpreter is this one: its version, release and
    bytecode magic."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    embedded, magic = facts["python"], importlib.util.MAGIC_NUMBER.hex()
    if embedded != here:
        raise BuildError(
            f"the launcher {path} embeds Python {embedded}, but this is Python "
            f"{here}: the archive's bytecode and extension modules would not match",
            hint=f"run ingot with Python {embedded} (python{embedded} -m ingot "
            "build ...), or give a launcher built for Python " + here,
        )
    release, running = facts.get("python_release"), sys.version.split()[0]
    if release != running:
        # The archive takes this interpreter's standard library and extension modules; the
        # launcher's interpreter would run them: one release, or they may not fit (a module the
        # other release lacks, a changed private API of a C module).
        raise BuildError(
            f"the launcher {path} embeds Python {release or 'of an unknown release'}, but this "
            f"is Python {running}: the executable would run one release's interpreter with "
            "the other's standard library",
            hint="build for a runtime (--python " + here + ", the default), whose interpreter "
            "and standard library are one build; or give a launcher built with this "
            f"interpreter ({sys.executable})",
        )
    if facts["bytecode_magic"] != magic:
        raise BuildError(
            f"the launcher {path} embeds a Python {here} with bytecode magic "
            f"{facts['bytecode_magic']}, but this one's is {magic}",
            hint="give a launcher built for this interpreter",
        )


def check_launcher(path: Path, machine: str | None = None, release: str | None = None) -> Json:
    """The launcher's facts, checked against this Python (or the CPython ``release`` of the
    runtime it belongs to, ``3.11.2``: a runtime's launcher and interpreter are one build,
    recorded by their hashes), this ingot's launch.json and the architecture ``machine``
    (default: this one's)."""
    facts = launcher_facts(path)
    wanted, found = machine or host_machine().name, elf_machine(path)
    if found != wanted:
        raise BuildError(
            f"the launcher {path} is built for {found}, but the executable is for {wanted}",
            hint=f"give a launcher built for {wanted}, or build for --target {found}",
        )
    if release is not None:
        if facts.get("python_release") != release:
            raise BuildError(
                f"the launcher {path} embeds Python {facts.get('python_release')}, but its "
                f"runtime is CPython {release}",
                hint="rebuild the runtime: ingot runtime build "
                + ".".join(release.split(".")[:2])
                + " --force",
            )
    else:
        _check_this_python(path, facts)
    if LAUNCH_CONFIG_VERSION not in facts["launch_config"]:
        raise BuildError(
            f"the launcher {path} (ingot {facts['ingot']}) reads launch "
            f"configuration versions {facts['launch_config']}, not "
            f"{LAUNCH_CONFIG_VERSION}",
            hint="use the launcher this ingot ships",
        )
    return facts


def is_ingot_file(path: Path) -> bool:
    """Whether ``path`` holds an ingot archive (an earlier ingot output), as the format's reader
    finds it (:func:`ingot._ingot.archive_info`)."""
    try:
        archive_info(path)
    except (ArchiveError, OSError, ValueError):
        return False
    return True
