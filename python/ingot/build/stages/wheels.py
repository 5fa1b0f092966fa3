"""A platform wheel is never silently traded for a pure one (issue 52): after pip installs the
dependencies for the target's glibc floor (2.17 with a runtime), the distributions it installed
from a pure wheel (``*-none-any.whl``) are asked again, pinned, with the newer manylinux
platforms added. One that has a wheel with native code for a newer glibc there (soundfile
0.13.1 ships libsndfile only in its ``manylinux_2_28`` wheel; its pure wheel has no library) is
a trade pip made silently; the ``platform-wheels`` setting decides it:

- ``prefer`` (the default): its native wheel replaces the pure one, and the build says so, with
  both wheels and the glibc each needs; the check stage then names the files that raise the
  executable's floor;
- ``keep-floor``: the build stops, naming the same.

The cost: one dry resolution (``pip install --dry-run --no-deps``, one index page per
distribution) when something came from a pure wheel, none otherwise.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say
from ingot.errors import BuildError

__all__ = ["Pick", "Trade", "platform_floor", "reported_picks", "settle_pure_picks", "wheel_floor"]

#: Runs pip install into a directory, with arguments, for wheel platforms.
RunPip = Callable[[Path, list[str], tuple[str, ...]], "subprocess.CompletedProcess[str]"]

#: The glibc of the legacy manylinux tags.
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_floor(platform: str) -> tuple[int, int] | None:
    """The glibc a manylinux platform tag needs (``manylinux_2_28_x86_64`` -> (2, 28),
    ``manylinux2014_x86_64`` -> (2, 17)); None for another tag (``any``, musllinux, ...)."""
    found = re.match(r"manylinux_(\d+)_(\d+)_", platform)
    if found:
        return int(found[1]), int(found[2])
    return _LEGACY.get(platform.split("_", 1)[0])


def _platforms(filename: str) -> list[str]:
    """The platform tags of a wheel's file name (``...-py3-none-any.whl`` -> ``["any"]``)."""
    return filename.removesuffix(".whl").split("-")[-1].split(".")


def wheel_floor(filename: str) -> tuple[int, int] | None:
    """The oldest glibc a manylinux wheel runs on: the oldest of its tags (a wheel tagged
    ``manylinux_2_27_x86_64.manylinux_2_28_x86_64`` runs on 2.27); None for a wheel without
    a manylinux tag."""
    floors = [floor for tag in _platforms(filename) if (floor := platform_floor(tag))]
    return min(floors) if floors else None


@dataclass(frozen=True)
class Pick:
    """A distribution pip installed from an index, and the wheel it took."""

    name: str
    version: str
    wheel: str  # the file's name

    @property
    def pure(self) -> bool:
        return _platforms(self.wheel) == ["any"]


@dataclass(frozen=True)
class Trade:
    """A distribution whose wheel for the floor is pure and which has one with native code for
    a newer glibc."""

    name: str
    version: str
    pure: str  # the wheel pip took for the floor
    native: str  # the native one, for a newer manylinux
    floor: tuple[int, int]  # the glibc the native one needs

    def described(self) -> str:
        return (
            f"{self.name} {self.version}: {self.pure} (pure Python, no native code) and "
            f"{self.native} (native code, for glibc {_dotted(self.floor)} and later)"
        )


def _dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def reported_picks(report: Path) -> list[Pick]:
    """The wheels pip's ``--report`` says it installed from an index (not those given by path
    or URL, which have no other wheel to take)."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return []
    picks = []
    for item in data.get("install", []) if isinstance(data, dict) else []:
        try:
            url = item["download_info"]["url"]
            name, version = item["metadata"]["name"], item["metadata"]["version"]
        except (KeyError, TypeError):
            continue
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        if item.get("is_direct") or not filename.endswith(".whl"):
            continue
        picks.append(Pick(str(name), str(version), filename))
    return picks


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _trades(
    picks: list[Pick],
    floor: tuple[int, int],
    run_pip: RunPip,
    platforms: tuple[str, ...],
    scratch: Path,
) -> tuple[list[Trade], str | None]:
    """The pure picks that have a native wheel above ``floor`` among ``platforms`` (the floor's
    and the newer ones), by one dry resolution of them pinned; and pip's complaint if it failed."""
    pure = {_canonical(pick.name): pick for pick in picks if pick.pure}
    if not pure:
        return [], None
    report = scratch / "newer.json"
    pins = [f"{pick.name}=={pick.version}" for pick in pure.values()]
    args = ["--dry-run", "--ignore-installed", "--no-deps", "--report", str(report), *pins]
    run = run_pip(scratch / "dry", args, platforms)
    if run.returncode != 0:
        lines = (run.stderr or run.stdout).strip().splitlines()
        return [], lines[-1] if lines else f"exit {run.returncode}"
    trades = []
    for newer in reported_picks(report):
        old = pure.get(_canonical(newer.name))
        needs = wheel_floor(newer.wheel)
        if old is None or newer.pure or needs is None or needs <= floor:
            continue
        trades.append(Trade(old.name, old.version, old.wheel, newer.wheel, needs))
    return trades, None


def settle_pure_picks(
    spec: Spec, target: Path, report: Path, scratch: Path, run_pip: RunPip, say: Say
) -> list[str]:
    """What the ``platform-wheels`` setting decides for the pure picks of the install into
    ``target`` that pip's ``report`` describes (see the module): the lines said, which a
    build from the cached install says again."""
    floors = [floor for tag in spec.target.platforms if (floor := platform_floor(tag))]
    if not floors or not spec.target.newer_platforms:
        return []
    floor = max(floors)
    platforms = spec.target.platforms + spec.target.newer_platforms
    trades, failed = _trades(reported_picks(report), floor, run_pip, platforms, scratch)
    if failed:
        line = f"pip: could not ask for native wheels of the pure ones it took: {failed}"
        say(line)
        return [line]
    if not trades:
        return []
    described = "; ".join(trade.described() for trade in trades)
    if spec.plan.settings.platform_wheels == "keep-floor":
        raise BuildError(
            f"pip took pure wheels for the target's glibc {_dotted(floor)} where native ones "
            f"exist for a newer glibc: {described}",
            hint="the pure wheel lacks the native code of the other (a bundled library, an "
            "accelerator): let the build take the native wheel and raise the floor "
            "(--platform-wheels prefer, the default), or require a release whose native wheel "
            f"runs on glibc {_dotted(floor)}",
        )
    _install_native(trades, target, scratch, run_pip, platforms)
    newest = max(trade.floor for trade in trades)
    line = (
        f"pip: took native wheels for glibc {_dotted(newest)} instead of the pure ones it took "
        f"for the target's {_dotted(floor)}, raising the executable's floor (their files' "
        f"needs are named at the end; --platform-wheels keep-floor stops instead): {described}"
    )
    say(line)
    return [line]


def _install_native(
    trades: list[Trade], target: Path, scratch: Path, run_pip: RunPip, platforms: tuple[str, ...]
) -> None:
    """Replaces each traded distribution's pure install in ``target`` with its native wheel."""
    native = scratch / "native"
    report = scratch / "native.json"
    pins = [f"{trade.name}=={trade.version}" for trade in trades]
    run = run_pip(native, ["--no-deps", "--report", str(report), *pins], platforms)
    took = {_canonical(pick.name): pick.wheel for pick in reported_picks(report)}
    wanted = {_canonical(trade.name): trade.native for trade in trades}
    if run.returncode != 0 or took != wanted:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-8:])
        raise BuildError(
            f"pip could not install the native wheels {', '.join(wanted.values())} "
            f"(took {', '.join(took.values()) or 'none'}):\n{tail}",
            hint="--platform-wheels keep-floor keeps the pure wheels (and stops, naming them)",
        )
    for trade in trades:
        _uninstall(target, trade.name, trade.version)
    _merge(native, target)


def _uninstall(target: Path, name: str, version: str) -> None:
    """Removes the files a distribution's RECORD lists from ``target`` (those inside it), its
    ``.dist-info`` and the directories left empty."""
    for info in target.glob("*.dist-info"):
        dist, _, dist_version = info.name.removesuffix(".dist-info").partition("-")
        if _canonical(dist) != _canonical(name) or dist_version != version:
            continue
        try:
            rows = list(csv.reader((info / "RECORD").read_text().splitlines()))
        except OSError:
            rows = []
        parents: set[Path] = set()
        for row in rows:
            path = (target / row[0]) if row else target
            if not row or ".." in Path(row[0]).parts or Path(row[0]).is_absolute():
                continue
            if path.is_file() or path.is_symlink():
                path.unlink()
                parents.update(path.parents)
        shutil.rmtree(info, ignore_errors=True)
        for parent in sorted(_inside(parents, target), key=lambda p: len(p.parts), reverse=True):
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()


def _inside(paths: Iterable[Path], root: Path) -> list[Path]:
    return [path for path in paths if path != root and root in path.parents]


def _merge(source: Path, destination: Path) -> None:
    """Moves the tree ``source`` into ``destination``, directory into directory."""
    for item in source.iterdir():
        there = destination / item.name
        if item.is_dir() and not item.is_symlink() and there.is_dir():
            _merge(item, there)
        else:
            if there.is_dir() and not there.is_symlink():
                shutil.rmtree(there)
            shutil.move(str(item), str(there))
