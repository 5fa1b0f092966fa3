"""The ``ingot`` command line. It parses arguments and reports; :mod:`ingot.pack` does the work.

    ingot pack -o app.ingot --path build/site --optimize 0,2 --compress 3

Progress, warnings and the summary go to stderr. A problem the user must fix prints
``error: ...`` (and ``hint: ...``) and exits 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ingot.errors import IngotError

__all__ = ["main"]


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        levels = (-1,)
    if not levels or any(level not in (0, 1, 2) for level in levels):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of 0, 1, 2")
    return levels


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ingot", description="Cast a Python application into an archive that is imported "
                                  "from memory.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pack = commands.add_parser(
        "pack", help="write an archive of the standard library and directories of packages",
        description="Write an archive of the running interpreter's standard library and of "
                    "directories of packages (site-packages, `pip install --target DIR`), with "
                    "the shared libraries their extension modules need.")
    pack.add_argument("-o", "--output", required=True, metavar="OUT", help="archive to write")
    pack.add_argument("--path", dest="paths", action="extend", nargs="+", default=[],
                      metavar="DIR", help="a directory of packages to include (repeatable; "
                                          "earlier ones win on a name clash)")
    pack.add_argument("--no-stdlib", dest="stdlib", action="store_false",
                      help="leave the standard library out")
    pack.add_argument("--stdlib-exclude", action="extend", nargs="+", default=[],
                      metavar="PATTERN", help="also leave out stdlib modules/packages matching "
                                              "this glob on dotted names (e.g. 'xml.*' 'curses')")
    pack.add_argument("--no-default-excludes", action="store_true",
                      help="keep what is left out by default (tests, idlelib, tkinter, ...)")
    pack.add_argument("--optimize", type=_levels, default=(0,), metavar="LEVELS",
                      help="bytecode optimization levels to compile, e.g. 0,1,2 (default: 0)")
    pack.add_argument("--no-source", dest="source", action="store_false",
                      help="leave module sources out (tracebacks then show no source lines)")
    pack.add_argument("--keep-debug-info", action="store_true",
                      help="store extension modules and shared libraries whole, debug sections "
                           "included (default: cut after their last loadable segment)")
    pack.add_argument("--compress", type=int, default=None, metavar="LEVEL",
                      help="zstd-compress blobs at this level (default: store as is)")
    pack.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")
    return parser


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError


def _pack(args: argparse.Namespace) -> int:
    from ingot.pack import DEFAULT_STDLIB_EXCLUDES, KINDS, pack

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr)

    excludes = () if args.no_default_excludes else DEFAULT_STDLIB_EXCLUDES
    result = pack(args.output, stdlib=args.stdlib, directories=args.paths,
                  stdlib_exclude=(*excludes, *args.stdlib_exclude), optimize_levels=args.optimize,
                  include_source=args.source, compression_level=args.compress,
                  keep_debug_info=args.keep_debug_info, progress=say)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    say(f"{'kind':<20}{'entries':>8}{'bytes':>14}")
    for kind in KINDS:
        say(f"{kind:<20}{result.counts[kind]:>8}{_size(result.sizes[kind]):>14}")
    say(f"{'total':<20}{sum(result.counts.values()):>8}{_size(sum(result.sizes.values())):>14}")
    say(f"wrote {result.output} ({_size(result.size)}) in {result.seconds:.1f} s"
        + (f", {len(result.warnings)} warnings" if result.warnings else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``ingot`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "pack":
            return _pack(args)
        raise AssertionError(args.command)
    except IngotError as error:
        print(f"error: {error.message}", file=sys.stderr)
        if error.hint:
            print(f"hint: {error.hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
