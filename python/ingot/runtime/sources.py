"""The source releases a runtime is built from: given files (``--source NAME=FILE``, which the
user vouches for), or the pinned releases (:mod:`ingot.runtime.pins`, ``sources.toml``): found
by name in the directories given, else downloaded from Debian's mirror, and checked against
their pin's sha256 either way. Sources never come from the network implicitly: only what is
pinned, or an URL with the sha256 the user vouches for.
"""

from __future__ import annotations

import fnmatch
import io
import re
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from ingot.runtime import pins as pinning
from ingot.runtime import recipes
from ingot.runtime.store import RuntimeError_, sha256_of

__all__ = ["resolve_sources", "sha256_of", "unpack"]


_URL = re.compile(r"^(https?://[^#]+)#sha256=([0-9a-fA-F]{64})$")


def _fetch(url: str, sha256: str, downloads: Path) -> Path:
    """Downloads ``url`` once into ``downloads`` and checks it against ``sha256``."""
    name = url.rstrip("/").rsplit("/", 1)[-1] or "download"
    target = downloads / name
    if target.exists() and sha256_of(target) == sha256.lower():
        return target
    downloads.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        if isinstance(error, urllib.error.HTTPError):
            error.close()  # its response
        partial.unlink(missing_ok=True)
        raise RuntimeError_(
            f"cannot download {url}: {error}",
            hint="download it yourself and give the file (--source NAME=PATH, "
            "or put it in a directory given with --sources DIR)",
        ) from error
    got = sha256_of(partial)
    if got != sha256.lower():
        partial.unlink()
        raise RuntimeError_(
            f"{url}: sha256 {got}, expected {sha256.lower()}",
            hint="check the URL and the hash you gave",
        )
    partial.replace(target)
    return target


def resolve_sources(
    given: dict[str, str],
    directories: Iterable[Path],
    downloads: Path,
    python_version: str | None = None,
    pinned: dict[str, pinning.Pin] | None = None,
    say: Callable[[str], None] = lambda message: None,
    tools: Iterable[str] = (),
) -> dict[str, Path]:
    """The source release of CPython (``python``), of every library, of the build's ``tools``
    (:data:`recipes.TOOLS`: ``compiler-rt`` for a profile-guided build) and CPython's patch
    series where one is pinned (``patches``): given by name (a path or ``URL#sha256=HEX``);
    else, when ``pinned`` (:func:`ingot.runtime.pins.pins_for`), the pinned file, from
    ``directories`` or downloaded into ``downloads``, its sha256 checked; else (no pins: tests,
    and sources given for a release no pin covers) found in ``directories`` by the recipes'
    patterns (for CPython, the release of ``python_version`` when the directories hold
    several)."""
    known = ["python", "patches", *recipes.LIBRARIES, *recipes.TOOLS]
    patches = ["patches"] if pinned and "patches" in pinned and "python" not in given else []
    names = ["python", *patches, *recipes.LIBRARIES, *tools]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise RuntimeError_(
            f"unknown source name(s): {', '.join(unknown)}",
            hint=f"the sources a runtime is built from: {', '.join(known)}",
        )
    patterns = {
        "python": recipes.PYTHON_PATTERNS,
        **{name: recipe.patterns for name, recipe in recipes.LIBRARIES.items()},
        **{name: recipe.patterns for name, recipe in recipes.TOOLS.items()},
    }
    files = [
        path
        for directory in directories
        for path in sorted(Path(directory).iterdir())
        if path.is_file()
    ]
    found: dict[str, Path] = {}
    missing = []
    for name in names:
        if name in given:
            value = given[name]
            match = _URL.match(value)
            if match:
                found[name] = _fetch(match.group(1), match.group(2), downloads)
            elif "://" in value:
                raise RuntimeError_(
                    f"--source {name}={value}: an URL needs the sha256 of the file",
                    hint=f"--source {name}={value}#sha256=<64 hex digits>",
                )
            elif not Path(value).is_file():
                raise RuntimeError_(f"--source {name}={value}: no such file")
            else:
                found[name] = Path(value).resolve()
            continue
        if pinned and name in pinned:
            found[name] = _pinned_file(pinned[name], files, downloads, say)
            continue
        candidates = [
            path
            for path in files
            if any(fnmatch.fnmatchcase(path.name, pattern) for pattern in patterns.get(name, ()))
            and not path.name.endswith((".asc", ".sig", ".dsc"))
        ]
        if name == "python" and python_version and len(candidates) > 1:
            version = re.compile(rf"(^|[^0-9.]){re.escape(python_version)}([._-]|$)")
            candidates = [path for path in candidates if version.search(path.name)] or candidates
        if candidates:
            found[name] = candidates[-1].resolve()  # sorted: the newest-looking name
        else:
            missing.append(name)
    if missing:
        raise RuntimeError_(
            f"no source release for {', '.join(missing)}"
            + (f" in {', '.join(str(d) for d in directories)}" if directories else "")
            + (" and none pinned" if pinned is not None else ""),
            hint="give each with --source NAME=PATH (or NAME=URL#sha256=HEX), or a directory "
            "holding them with --sources DIR (Debian's `apt-get source --download-only` "
            "files work: scripts/runtime-sources fetches them)",
        )
    return found


def _pinned_file(
    pin: pinning.Pin, files: list[Path], downloads: Path, say: Callable[[str], None]
) -> Path:
    """The file ``pin`` names: from the directories given (``files``), else downloaded from
    Debian's mirror into ``downloads``; RuntimeError_ unless its sha256 is the pinned one."""
    for path in files:
        if path.name == pin.file:
            got = sha256_of(path)
            if got != pin.sha256:
                raise RuntimeError_(
                    f"{path}: sha256 {got}, not the pinned {pin.sha256} ({pin.name} "
                    f"{pin.version}, python/ingot/runtime/sources.toml)",
                    hint="remove it (`ingot runtime sources DIR` fetches the pinned file), or "
                    f"give another release explicitly with --source {pin.name}=FILE",
                )
            return path.resolve()
    try:
        (path,) = pinning.fetch(downloads, [pin], say=say)
    except pinning.PinError as error:
        raise RuntimeError_(
            f"{pin.name} {pin.version}: {pin.file} is not in the --sources directories, and "
            f"cannot be downloaded: {error}",
            hint="`ingot runtime sources DIR` fetches the pinned files (on Debian, with deb-src "
            "entries: scripts/runtime-sources adds them), then build with --sources DIR",
        ) from None
    return path


def _deb_data(archive: Path) -> bytes:
    """The ``data.tar.*`` member of a Debian package (an ``ar`` archive)."""
    blob = archive.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise RuntimeError_(f"{archive}: not a Debian package (no ar header)")
    offset = 8
    while offset + 60 <= len(blob):
        header = blob[offset : offset + 60]
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            break
        offset += 60
        if name.startswith("data.tar"):
            return blob[offset : offset + size]
        offset += size + (size & 1)
    raise RuntimeError_(f"{archive}: a Debian package without data.tar")


def unpack(archive: Path, into: Path, only: tuple[str, ...] = ()) -> Path:
    """Unpacks a source tarball into ``into``; returns its top directory. With ``only``
    (directories under the top one, ``compiler-rt/lib/profile/``), only what is under them. A
    Debian package (``.deb``: a library's headers, where Debian's mirror serves no source) is
    unpacked, as installed, into a directory named after it."""
    into.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".deb"):
        top = into / archive.name.removesuffix(".deb")
        try:
            with tarfile.open(fileobj=io.BytesIO(_deb_data(archive))) as tar:
                tar.extractall(top, filter="data") if hasattr(
                    tarfile, "data_filter"
                ) else tar.extractall(top)
        except (tarfile.TarError, OSError) as error:
            raise RuntimeError_(f"cannot unpack {archive}: {error}") from None
        return top
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            tops = {member.name.split("/", 1)[0] for member in members}
            if len(tops) != 1:
                raise RuntimeError_(
                    f"{archive}: not a source release (expected one top "
                    f"directory, found {len(tops)})"
                )
            chosen = [
                member
                for member in members
                if not only or member.name.partition("/")[2].startswith(only)
            ]
            if not chosen:
                raise RuntimeError_(
                    f"{archive}: nothing under {', '.join(only)}",
                    hint="is it the right source release?",
                )
            tar.extractall(into, members=chosen, filter="data") if hasattr(
                tarfile, "data_filter"
            ) else tar.extractall(into, members=chosen)
    except (tarfile.TarError, OSError) as error:
        raise RuntimeError_(f"cannot unpack {archive}: {error}") from None
    return into / tops.pop()
