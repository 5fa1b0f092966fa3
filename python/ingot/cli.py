"""The ``ingot`` command line. It parses arguments and reports; :mod:`ingot.build.pack` does the work.

    ingot pack -o app.ingot --path build/site --optimize 0,2 --compress 3
    ingot build examples/hello -o dist/hello     # a project, a script, a package directory
    ingot build --console-script black           # an installed command, with its dependencies
    ingot inspect dist/hello [--json]
    ingot runtime build 3.11 --sources DIR       # CPython for glibc 2.17, from source releases

Progress, warnings and the summary go to stderr. A problem the user must fix prints
``error: ...`` (and ``hint: ...``) and exits 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingot.build.pack import PackResult

    _Commands = argparse._SubParsersAction[argparse.ArgumentParser]

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
        prog="ingot",
        description="Cast a Python application into an archive that is imported from memory.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pack = commands.add_parser(
        "pack",
        help="write an archive of the standard library and directories of packages",
        description="Write an archive of the running interpreter's standard library and of "
        "directories of packages (site-packages, `pip install --target DIR`), with "
        "the shared libraries their extension modules need.",
    )
    pack.add_argument("-o", "--output", required=True, metavar="OUT", help="archive to write")
    pack.add_argument(
        "--path",
        dest="paths",
        action="extend",
        nargs="+",
        default=[],
        metavar="DIR",
        help="a directory of packages to include (repeatable; earlier ones win on a name clash)",
    )
    pack.add_argument(
        "--no-stdlib", dest="stdlib", action="store_false", help="leave the standard library out"
    )
    pack.add_argument(
        "--stdlib-exclude",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="also leave out stdlib modules/packages matching "
        "this glob on dotted names (e.g. 'xml.*' 'curses')",
    )
    pack.add_argument(
        "--no-default-excludes",
        action="store_true",
        help="keep what is left out by default (tests, idlelib, tkinter, ...)",
    )
    pack.add_argument(
        "--optimize",
        type=_levels,
        default=(0,),
        metavar="LEVELS",
        help="bytecode optimization levels to compile, e.g. 0,1,2 (default: 0)",
    )
    pack.add_argument(
        "--no-source",
        dest="source",
        action="store_false",
        help="leave module sources out (tracebacks then show no source lines)",
    )
    pack.add_argument(
        "--keep-debug-info",
        action="store_true",
        help="store extension modules and shared libraries whole, debug sections "
        "included (default: cut after their last loadable segment)",
    )
    pack.add_argument(
        "--compress",
        type=int,
        default=None,
        metavar="LEVEL",
        help="zstd-compress blobs at this level (default: store as is)",
    )
    pack.add_argument(
        "--files",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="put this top-level package under the files policy: materialized as "
        "real files in the extraction cache when imported (repeatable; unlike "
        "`ingot build`, no built-in defaults)",
    )
    pack.add_argument(
        "--no-precompile-regexes",
        dest="precompile_regexes",
        action="store_false",
        help="leave out the table of regular expressions compiled at build time",
    )
    pack.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")
    _build_parser(commands)
    inspect = commands.add_parser(
        "inspect",
        help="list what an executable or archive carries",
        description="List the entries (kind, name, size) of an executable made by `ingot build` "
        "or an archive, with its launch config and Python version.",
    )
    inspect.add_argument("path", metavar="EXE_OR_ARCHIVE")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument(
        "--sizes",
        action="store_true",
        help="only the biggest entries and "
        "groups (top-level packages), by bytes stored in the archive",
    )
    inspect.add_argument(
        "--verify",
        action="store_true",
        help="also read every entry and check its checksum; exit 1 if any is damaged",
    )
    cache = commands.add_parser(
        "cache",
        help="list or prune the extraction cache",
        description="The extraction cache holds the files trees (and, where memory files cannot "
        "be used, the native code) of the executables run by this user. List it, or "
        "remove what old builds left that no running process uses.",
    )
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("dir", help="print the cache directory")
    actions.add_parser("list", help="list trees with their size, age and whether in use")
    prune = actions.add_parser(
        "prune",
        help="remove trees older than --older-than days that no "
        "running process uses (and dead writers' leftovers)",
    )
    prune.add_argument(
        "--older-than",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="age in days, from when a tree was written (default 30; 0: all)",
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    _runtime_parser(commands)
    return parser


def _source(text: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not separator or not name or not value:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=PATH or NAME=URL#sha256=HEX")
    return name, value


def _runtime_parser(commands: _Commands) -> None:
    runtime = commands.add_parser(
        "runtime",
        help="build, list or remove Python runtimes (CPython for glibc 2.17)",
        description="A runtime is CPython and the libraries its standard library uses, built from "
        "their source releases with zig for glibc 2.17 and linked statically, kept in "
        "the user's cache ($INGOT_RUNTIMES, else $XDG_CACHE_HOME/ingot/runtimes).",
    )
    actions = runtime.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build a runtime from source releases")
    build.add_argument(
        "version",
        metavar="VERSION",
        help="the CPython version, e.g. 3.11 (checked against the source)",
    )
    build.add_argument(
        "--source",
        dest="sources",
        action="append",
        type=_source,
        default=[],
        metavar="NAME=FILE",
        help="a source release: python, zlib, bzip2, xz, "
        "expat, mpdecimal, libuuid, libffi, sqlite, openssl, ncurses, readline; "
        "FILE is a path or URL#sha256=HEX (repeatable)",
    )
    build.add_argument(
        "--sources",
        dest="directories",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory holding the source releases, found by "
        "name (upstream's or Debian's file names); what neither option gives is "
        "downloaded from ingot's pinned upstream releases",
    )
    build.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel jobs (default: CPUs)")
    build.add_argument("--force", action="store_true", help="rebuild if it exists")
    build.add_argument("--keep-build", action="store_true", help="keep the build directory")
    actions.add_parser("list", help="list the runtimes")
    relink = actions.add_parser(
        "launcher",
        help="build a runtime's launcher (and ingot's extension "
        "module for it) again from this ingot's source tree",
    )
    relink.add_argument("version", metavar="VERSION")
    remove = actions.add_parser("remove", help="remove a runtime")
    remove.add_argument("version", metavar="VERSION")
    actions.add_parser("dir", help="print the runtimes' directory")


def _build_parser(commands: _Commands) -> None:
    from ingot.build.project import DEFAULT_COMPRESSION

    build = commands.add_parser(
        "build",
        help="build an application into one executable",
        description="Build an application (a project directory with pyproject.toml, a package "
        "directory, a script, or an installed console script), its dependencies and "
        "the standard library into one executable: the launcher binary followed by "
        "an archive. Options override the project's [tool.ingot] settings.",
    )
    build.add_argument(
        "source",
        nargs="?",
        metavar="SOURCE",
        help="project directory, package directory or script (default: .)",
    )
    build.add_argument(
        "--console-script",
        metavar="NAME",
        help="build an installed console script, with its dependencies pinned to "
        "the versions installed here",
    )
    run = build.add_mutually_exclusive_group()
    run.add_argument(
        "--entry",
        metavar="MODULE:FUNCTION",
        help="function to call (or the name of one of [project.scripts])",
    )
    run.add_argument("--module", metavar="MODULE", help="module to run, as python -m does")
    run.add_argument("--script", metavar="PATH", help="script to run")
    build.add_argument(
        "--package",
        dest="packages",
        action="append",
        metavar="PATH",
        help="an application package directory, module or directory of packages "
        "to copy in (repeatable; default: pip-install the project)",
    )
    build.add_argument(
        "--dependency",
        dest="dependencies",
        action="append",
        metavar="REQ",
        help="a requirement to install (repeatable; replaces the project's)",
    )
    build.add_argument("-r", "--requirements", metavar="FILE", help="a requirements file")
    build.add_argument(
        "--include",
        action="append",
        metavar="PATTERN",
        help="carry modules that no code path imports, or that the defaults leave "
        "out (glob on dotted names; '*' carries everything)",
    )
    build.add_argument(
        "--exclude",
        action="append",
        metavar="PATTERN",
        help="leave out modules/packages matching this glob on dotted names",
    )
    build.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="file to write (default: dist/NAME, dist/NAME.ingot with --archive-only)",
    )
    fast = build.add_mutually_exclusive_group()
    fast.add_argument(
        "--fast-exit",
        dest="fast_exit",
        action="store_true",
        default=None,
        help="exit without finalizing the interpreter",
    )
    fast.add_argument("--no-fast-exit", dest="fast_exit", action="store_false")
    imports = build.add_mutually_exclusive_group()
    imports.add_argument(
        "--filesystem-imports",
        dest="filesystem_imports",
        action="store_true",
        default=None,
        help="import from directories the application adds to "
        "sys.path, after the archive (the default)",
    )
    imports.add_argument(
        "--no-filesystem-imports",
        dest="filesystem_imports",
        action="store_false",
        help="import from the archive alone",
    )
    build.add_argument(
        "--no-precompile-regexes",
        dest="precompile_regexes",
        action="store_false",
        default=None,
        help="leave out the table of regular expressions compiled at build time",
    )
    build.add_argument(
        "--files",
        dest="files",
        action="append",
        metavar="PACKAGE",
        help="materialize this top-level package as real files in the extraction "
        "cache, for code that needs them (repeatable; the files policy)",
    )
    build.add_argument(
        "--memory",
        dest="memory",
        action="append",
        metavar="PACKAGE",
        help="keep this package in memory although the built-in table would "
        "materialize it (repeatable)",
    )
    build.add_argument(
        "--optimize",
        type=_levels,
        metavar="LEVELS",
        help="bytecode optimization levels, e.g. 0,2 (default: 0)",
    )
    squeeze = build.add_mutually_exclusive_group()
    squeeze.add_argument(
        "--compress",
        type=int,
        metavar="LEVEL",
        help="zstd level of the blobs a start does not read (default: "
        f"{DEFAULT_COMPRESSION}; those a start reads stay stored as is)",
    )
    squeeze.add_argument(
        "--no-compress",
        dest="compress",
        action="store_const",
        const=False,
        help="store every blob as is",
    )
    build.add_argument(
        "--python",
        metavar="VERSION",
        help="build with the runtime of this Python "
        "version, for any Linux with glibc 2.17 or later (built first if there is "
        "none: ingot runtime build), or 'local': with the Python ingot runs under "
        "(default: its version's runtime if one is built, else local)",
    )
    build.add_argument(
        "--launcher",
        metavar="PATH",
        help="the launcher binary (default: $INGOT_LAUNCHER, else the one shipped with ingot)",
    )
    build.add_argument(
        "--archive-only",
        action="store_true",
        help="write only the archive (with its launch config), no launcher",
    )
    build.add_argument(
        "--force", action="store_true", help="overwrite an existing output that ingot did not write"
    )
    build.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError


def _pack(args: argparse.Namespace) -> int:
    from ingot.build.pack import DEFAULT_STDLIB_EXCLUDES, PackOptions, pack

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr)

    excludes = () if args.no_default_excludes else DEFAULT_STDLIB_EXCLUDES
    options = PackOptions(
        stdlib=args.stdlib,
        directories=args.paths,
        stdlib_exclude=(*excludes, *args.stdlib_exclude),
        optimize_levels=args.optimize,
        include_source=args.source,
        compression_level=args.compress,
        keep_debug_info=args.keep_debug_info,
        files_packages=args.files,
        precompile_regexes=args.precompile_regexes,
        progress=say,
    )
    result = pack(args.output, options)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _summary(result, say)
    say(
        f"wrote {result.output} ({_size(result.size)}) in {result.seconds:.1f} s"
        + (f", {len(result.warnings)} warnings" if result.warnings else "")
    )
    return 0


def _summary(result: PackResult, say: Callable[[str], None]) -> None:
    from ingot.build.pack import KINDS

    say(f"{'kind':<20}{'entries':>8}{'bytes':>14}")
    for kind in KINDS:
        say(f"{kind:<20}{result.counts[kind]:>8}{_size(result.sizes[kind]):>14}")
    say(f"{'total':<20}{sum(result.counts.values()):>8}{_size(sum(result.sizes.values())):>14}")
    if result.regexes:
        say(f"{'(regular expressions':<20}{result.regexes:>8}{_size(result.regexes_size):>14})")
    _left_out(result.left_out, say)


def _left_out(left_out: dict[str, tuple[str, int, int]], say: Callable[[str], None]) -> None:
    """What a build left out because nothing imports it, biggest first, by where it came from."""
    origins = {
        "stdlib": "of the standard library",
        "env": "packages of the environment",
        "app": "of the application",
    }
    for origin, label in origins.items():
        groups = sorted(
            ((size, name) for name, (where, _, size) in left_out.items() if where == origin),
            reverse=True,
        )
        if not groups:
            continue
        shown = ", ".join(f"{name} ({_size(size)})" for size, name in groups[:8])
        more = f" and {len(groups) - 8} more" if len(groups) > 8 else ""
        total = sum(size for size, _ in groups)
        say(
            f"left out, as nothing imports them, {label}: {shown}{more} ({_size(total)} in all; "
            "--include NAME carries one, --include '*' everything)"
        )


def _wanted_runtime(args: argparse.Namespace) -> str | None:
    """The runtime a build asks for: --python, else the project's [tool.ingot] python."""
    if args.python:
        return str(args.python)
    from pathlib import Path

    from ingot.build.project import load_project

    source = Path(args.source or ".")
    if args.console_script is None and (source / "pyproject.toml").is_file():
        return load_project(source).config.python
    return None


def _build(args: argparse.Namespace) -> int:
    from ingot.build.pipeline import BuildOptions, build
    from ingot.build.project import Config

    if args.console_script and args.source:
        raise IngotError(
            f"give a SOURCE ({args.source}) or --console-script ({args.console_script}), not both"
        )

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr)

    wanted = _wanted_runtime(args)
    if not os.environ.get("INGOT_IN_RUNTIME"):
        from ingot.runtime import store as runtime

        if wanted is None and args.launcher is None and not os.environ.get("INGOT_LAUNCHER"):
            # By default, this Python version's runtime if one is built (a launcher given
            # explicitly is one built for a Python of this machine: it means local).
            here = f"{sys.version_info[0]}.{sys.version_info[1]}"
            if runtime.find_runtime(here) is not None:
                wanted = here
        if wanted is not None and wanted != "local":
            return runtime.build_with(
                wanted, args.raw_argv, launcher=args.launcher, build_missing=True, say=say
            )

    config = Config(
        entry=args.entry,
        module=args.module,
        script=args.script,
        packages=args.packages,
        dependencies=args.dependencies,
        requirements=args.requirements,
        include=args.include or [],
        exclude=args.exclude or [],
        output=args.output,
        fast_exit=args.fast_exit,
        filesystem_imports=args.filesystem_imports,
        precompile_regexes=args.precompile_regexes,
        files=args.files or [],
        memory=args.memory or [],
        optimize=list(args.optimize) if args.optimize else None,
        compress=args.compress,
    )
    options = BuildOptions(
        source=args.source,
        console_script=args.console_script,
        config=config,
        launcher=args.launcher,
        archive_only=args.archive_only,
        force=args.force,
    )
    result = build(options, progress=say)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _summary(result.pack, say)
    run = result.run
    target = run["module"] + (f":{run['function']}" if run["kind"] == "function" else " (-m)")
    launcher = f"launcher {_size(result.launcher_size)} + " if result.launcher else ""
    say(f"runs {target}")
    if result.launcher:
        from ingot.build.pipeline import executable_glibc_floor

        floor = executable_glibc_floor(result.output)
        if floor.version:
            runtime_note = (
                f" (runtime {os.environ['INGOT_IN_RUNTIME']})"
                if os.environ.get("INGOT_IN_RUNTIME")
                else ""
            )
            say(
                f"runs on Linux with glibc {floor.version[0]}.{floor.version[1]} or later, "
                f"set by {floor.needed_by}{runtime_note}"
            )
            if os.environ.get("INGOT_IN_RUNTIME") and floor.version > (2, 17):
                print(
                    f"warning: {floor.needed_by} needs glibc {floor.version[0]}."
                    f"{floor.version[1]}: the executable will not run on older systems than "
                    "that, although its runtime needs only 2.17",
                    file=sys.stderr,
                )
            elif (
                not os.environ.get("INGOT_IN_RUNTIME")
                and wanted != "local"
                and args.launcher is None
                and not os.environ.get("INGOT_LAUNCHER")
                and floor.version > (2, 17)
            ):
                here = f"{sys.version_info[0]}.{sys.version_info[1]}"
                say(
                    f"note: built with this machine's Python {here}; for any Linux with glibc "
                    f"2.17 or later, build its runtime once (`ingot runtime build {here}`): "
                    "later builds use it (--python local: this machine's Python, quietly)"
                )
    say(
        f"wrote {result.output} ({launcher}archive {_size(result.pack.size)} = "
        f"{_size(result.size)}) in {result.seconds:.1f} s"
        + (f", {len(result.warnings)} warnings" if result.warnings else "")
    )
    return 0


def _inspect(args: argparse.Namespace) -> int:
    import json

    from ingot.build.pipeline import describe

    info = describe(args.path)
    if args.verify:
        import ingot

        try:
            ingot.IngotFinder(str(args.path), any_python=True).verify()
        except ingot.ArchiveError as error:
            raise IngotError(
                f"{args.path} is damaged: {str(error).split(chr(10))[0]}",
                hint="build it again; a copy that was cut short or altered in "
                "transit cannot be repaired",
            ) from None
        print(
            f"{args.path}: verified: every checksum of {len(info['entries'])} entries matches",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"{info['path']}: {_size(info['size'])} (launcher {_size(info['launcher_size'])}, "
        f"archive {_size(info['archive_size'])}), Python {info['python']}"
    )
    print(f"launch: {json.dumps(info['launch']) if info['launch'] else 'none'}")
    runtime = (info["launch"] or {}).get("runtime")
    print(
        f"python: {'runtime ' + runtime if runtime else 'the build machine' + chr(39) + 's'} "
        f"(Python {info['python']})"
    )
    floor = info["glibc_floor"]
    print(
        f"needs glibc {floor['version']} or later (set by {floor['set_by']})"
        if floor["version"]
        else "needs no versioned glibc symbol"
    )
    print(f"files policy: {', '.join(info['files_packages']) or 'none (everything from memory)'}")
    if args.sizes:
        _sizes(info["entries"])
        return 0
    kinds: dict[str, list[int]] = {}
    for entry in info["entries"]:
        counts = kinds.setdefault(entry["kind"], [0, 0])
        counts[0] += 1
        counts[1] += entry["size"]
    print("; ".join(f"{count} {kind} ({_size(size)})" for kind, (count, size) in kinds.items()))
    for entry in info["entries"]:
        print(f"{entry['kind']:<20}{entry['size']:>12}  {entry['name']}")
    return 0


def _sizes(entries: list[dict[str, Any]], shown: int = 20) -> None:
    """The biggest entries and groups, by stored bytes (and what they hold once decompressed)."""
    from ingot._ingot import RESERVED_PREFIX

    groups: dict[str, list[int]] = {}
    for entry in entries:
        name = entry["name"]
        group = (
            "(ingot)"
            if name.startswith(RESERVED_PREFIX)
            else name
            if entry["kind"] == "shared-library"
            else re.split(r"[./]", name)[0]
        )
        counts = groups.setdefault(group, [0, 0, 0])
        counts[0] += 1
        counts[1] += entry["stored"]
        counts[2] += entry["size"]
    total_stored = sum(entry["stored"] for entry in entries)
    total = sum(entry["size"] for entry in entries)
    print(f"{len(entries)} entries: {_size(total_stored)} stored ({_size(total)} decompressed)")
    print(f"\nbiggest groups{'':<26}{'entries':>8}{'stored':>12}{'decompressed':>14}")
    for group, (count, stored, size) in sorted(groups.items(), key=lambda item: -item[1][1])[
        :shown
    ]:
        print(f"  {group:<38}{count:>8}{_size(stored):>12}{_size(size):>14}")
    print(f"\nbiggest entries{'':<25}{'kind':>8}{'stored':>12}{'decompressed':>14}")
    for entry in sorted(entries, key=lambda entry: -entry["stored"])[:shown]:
        print(
            f"  {entry['name']:<38}{entry['kind'][:8]:>8}{_size(entry['stored']):>12}"
            f"{_size(entry['size']):>14}"
        )


def _cache(args: argparse.Namespace) -> int:
    from ingot import cachedir

    if args.action == "dir":
        print(cachedir.root())
        return 0
    if args.action == "list":
        entries = cachedir.list_cache()
        for entry in entries:
            state = "temporary" if entry.temporary else "in use" if entry.in_use else ""
            print(
                f"{entry.section:<7}{_size(entry.size):>11}{entry.files:>7} files"
                f"{entry.age / 86400:>8.1f} days  {entry.path.name}  {state}".rstrip()
            )
        print(f"{len(entries)} entries, {_size(sum(e.size for e in entries))} in {cachedir.root()}")
        return 0
    removed = cachedir.prune(args.older_than, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for entry in removed:
        print(f"{verb} {entry.path} ({_size(entry.size)})")
    print(f"{verb} {len(removed)} entries, {_size(sum(e.size for e in removed))}")
    return 0


def _runtime(args: argparse.Namespace) -> int:
    from ingot.runtime import store as runtime

    if args.action == "dir":
        print(runtime.store())
        return 0
    if args.action == "list":
        found = runtime.list_runtimes()
        for item in found:
            floor = item.info.get("glibc_floor", {})
            print(
                f"{item.version:<10}{item.info.get('target', ''):<26}glibc >= "
                f"{floor.get('version') or '?':<6} {item.path}"
            )
        print(f"{len(found)} runtimes in {runtime.store()}", file=sys.stderr)
        return 0
    if args.action == "launcher":
        rebuilt = runtime.rebuild_launcher(
            args.version, say=lambda line: print(line, file=sys.stderr)
        )
        print(rebuilt.path)
        return 0
    if args.action == "remove":
        removed = runtime.remove_runtime(args.version)
        print(f"removed {removed.path}", file=sys.stderr)
        return 0
    built = runtime.build_runtime(
        dict(args.sources),
        args.directories,
        wanted=args.version,
        jobs=args.jobs,
        force=args.force,
        keep_build=args.keep_build,
        say=lambda line: print(line, file=sys.stderr),
    )
    print(built.path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``ingot`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = _parser().parse_args(argv)
    args.raw_argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "pack":
            return _pack(args)
        if args.command == "build":
            return _build(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "cache":
            return _cache(args)
        if args.command == "runtime":
            return _runtime(args)
        raise AssertionError(args.command)
    except IngotError as error:
        print(f"error: {error.message}", file=sys.stderr)
        if error.hint:
            print(f"hint: {error.hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ingot inspect X | head`
        sys.stdout = None  # nothing more to flush at exit (typeshed allows None)
        return 0
