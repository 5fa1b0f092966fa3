"""What a build says once it is done: what the archive holds, what was left out, what it runs and
where it wrote (:func:`built`); and how a failed or interrupted build is reported. Builds are run
by :mod:`ingot.build.run`."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

from ingot.build.archive.pack import KINDS, PackResult
from ingot.build.interrupt import Interrupted
from ingot.build.pipeline import BuildResult
from ingot.errors import IngotError

__all__ = ["built", "report_error", "report_interrupt", "size", "summary"]


def size(count: float) -> str:
    """``count`` bytes for a person: ``512 B``, ``3.4 KiB``, ``12.0 MiB``."""
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError


def summary(result: PackResult, say: Callable[[str], None]) -> None:
    say(f"{'kind':<20}{'entries':>8}{'bytes':>14}")
    for kind in KINDS:
        say(f"{kind:<20}{result.counts[kind]:>8}{size(result.sizes[kind]):>14}")
    say(f"{'total':<20}{sum(result.counts.values()):>8}{size(sum(result.sizes.values())):>14}")
    if result.regexes:
        say(f"{'(regular expressions':<20}{result.regexes:>8}{size(result.regexes_size):>14})")
    _left_out(result.left_out, say)
    _named_only(result.named_only, say)


def _left_out(left_out: dict[str, tuple[str, int, int]], say: Callable[[str], None]) -> None:
    """What a build left out because nothing imports it, biggest first, by where it came from."""
    origins = {
        "stdlib": "of the standard library",
        "env": "packages of the environment",
        "app": "of the application",
    }
    for origin, label in origins.items():
        groups = sorted(
            ((bytes_, name) for name, (where, _, bytes_) in left_out.items() if where == origin),
            reverse=True,
        )
        if not groups:
            continue
        shown = ", ".join(f"{name} ({size(bytes_)})" for bytes_, name in groups[:8])
        more = f" and {len(groups) - 8} more" if len(groups) > 8 else ""
        total = sum(bytes_ for bytes_, _ in groups)
        say(
            f"left out, as nothing imports them, {label}: {shown}{more} ({size(total)} in all; "
            "--include NAME carries one, --include '*' everything)"
        )


def _named_only(named: dict[str, tuple[str, int]], say: Callable[[str], None]) -> None:
    """What a build carries only because a string names it (no import leads to it:
    :attr:`ingot.build.archive.reach.Reach.named_only`), biggest first, with what names it."""
    if not named:
        return
    shown = sorted(named.items(), key=lambda pair: (-pair[1][1], pair[0]))
    listed = ", ".join(
        f"{name} (in {where}: {size(bytes_)})" for name, (where, bytes_) in shown[:8]
    )
    more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
    total = sum(bytes_ for _, bytes_ in named.values())
    say(
        f"carried only because a string names them (no import seen): {listed}{more} "
        f"({size(total)} in all; --exclude NAME leaves one out)"
    )


def report_interrupt(error: KeyboardInterrupt) -> int:
    """Says that a build was interrupted (and by what); returns the exit status for it: 130 for
    ^C, 128 + the signal's number for SIGTERM and SIGHUP (:class:`ingot.build.interrupt.
    Interrupted`)."""
    if isinstance(error, Interrupted):
        print(f"interrupted ({signal.Signals(error.signum).name})", file=sys.stderr)
        return error.status
    print("interrupted", file=sys.stderr)
    return 130


def built(result: BuildResult, say: Callable[[str], None], warn: Callable[[str], None]) -> None:
    """What a finished build says: its warnings (through ``warn``, shown with ``--quiet`` too),
    what the archive holds and leaves out, what it runs, its notes, and what it wrote."""
    for warning in result.warnings:
        warn(f"warning: {warning}")
    summary(result.pack, say)
    run = result.run
    runs = run["module"] + (f":{run['function']}" if run["kind"] == "function" else " (-m)")
    say(f"runs {runs}")
    for note in result.notes:
        say(note)
    launcher = f"launcher {size(result.launcher_size)} + " if result.launcher else ""
    say(
        f"wrote {result.output} ({launcher}archive {size(result.pack.size)} = "
        f"{size(result.size)}) in {result.seconds:.1f} s"
        + (f", {len(result.warnings)} warnings" if result.warnings else "")
    )


def report_error(error: IngotError) -> int:
    """Prints ``error`` as ingot does (``error: ...``, then ``hint: ...``); returns the status."""
    print(f"error: {error.message}", file=sys.stderr)
    if error.hint:
        print(f"hint: {error.hint}", file=sys.stderr)
    return 1
