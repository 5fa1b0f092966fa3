"""The ``ingot`` command line. It parses arguments and calls what does the work (the build, the
packer, the runtime store); :mod:`ingot.output` formats what ``inspect`` and ``cache`` print.

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
import difflib
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingot import cachedir
from ingot._ingot import (
    ArchiveError,
    IngotFinder,
    __version__,
)
from ingot.build import report, run, under
from ingot.build.archive.pack import PackOptions, pack
from ingot.build.interrupt import interrupts_stop
from ingot.build.report import report_error
from ingot.build.resolve import settings
from ingot.build.resolve.environment import snapshot
from ingot.build.resolve.spec import resolve
from ingot.errors import IngotError
from ingot.inspection import bill_of_materials, carried_requirements, describe
from ingot.machine import MACHINES, Machine, host_machine, machine_named
from ingot.output import cache_text, inspect_text
from ingot.runtime import builder, launcher_build, pins, store, wheel
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES

if TYPE_CHECKING:
    _Commands = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ingot",
        description="Cast a Python application into an archive that is imported from memory.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        help="print ingot's version and the Python it runs under, and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _pack_parser(commands)
    _build_parser(commands)
    _inspect_parser(commands)
    _cache_parser(commands)
    _runtime_parser(commands)
    return parser


class _Version(argparse.Action):
    """``--version``: one line, as is (argparse's version action wraps it to the terminal's
    width, which breaks a long interpreter path across lines)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"ingot {__version__} (Python {sys.version.split()[0]} at {sys.executable})")
        parser.exit()


def _pack_parser(commands: _Commands) -> None:
    pack = commands.add_parser(
        "pack",
        help="write an archive of the standard library and directories of packages",
        description="Write an archive of the running interpreter's standard library and of "
        "directories of packages (site-packages, `pip install --target DIR`), with "
        "the shared libraries their extension modules need.",
    )
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
    # What an archive is written with: the settings `ingot build` takes too, from one table.
    settings.add_options(
        pack,
        settings.PACK_SETTINGS,
        required=("output",),
        helps={
            "output": "archive to write",
            "files": "put this top-level package under the files policy: materialized as "
            "real files in the extraction cache when imported (repeatable; unlike "
            "`ingot build`, no built-in defaults)",
        },
    )
    pack.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")


def _inspect_parser(commands: _Commands) -> None:
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
        "--sbom",
        action="store_true",
        help="print the bill of materials it carries (CycloneDX 1.6 JSON): CPython and the "
        "runtime's libraries, the distributions (versions, licences, wheels' sha256), the "
        "shared libraries, what the target system must provide",
    )
    inspect.add_argument(
        "--requirements",
        action="store_true",
        help="print the distributions it carries as name==version lines (for pip-audit -r)",
    )
    inspect.add_argument(
        "--verify",
        action="store_true",
        help="also read every entry and check its checksum; exit 1 if any is damaged",
    )


def _cache_parser(commands: _Commands) -> None:
    cache = commands.add_parser(
        "cache",
        help="list or prune the extraction cache and the build cache",
        description="The extraction cache holds the files trees (and, where memory files cannot "
        "be used, the native code) of the executables run by this user; the build cache, what "
        "ingot build derived from inputs that did not change (installed dependencies, "
        "bytecode, compressed blobs). List them, or remove what no build or running process "
        "has used for a while.",
    )
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("dir", help="print the cache directory")
    actions.add_parser("list", help="list trees with their size, age and whether in use")
    prune = actions.add_parser(
        "prune",
        help="remove trees older than --older-than days that no "
        "running process uses, build cache entries not used for as long (and dead writers' "
        "leftovers)",
    )
    prune.add_argument(
        "--older-than",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="age in days, from when a tree was written (default 30; 0: all)",
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")


def _source(text: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not separator or not name or not value:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=PATH or NAME=URL#sha256=HEX")
    return name, value


def _runtime_version(text: str) -> str:
    """A runtime's Python version (``3.13``, ``3.13.5``; ``python3.13`` too), never ``local``."""
    if text.strip() != "local":
        try:
            return settings.parse_python(text)
        except argparse.ArgumentTypeError:
            pass
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a Python version ingot makes runtimes of: "
        f"{settings.SUPPORTED_PYTHONS} (such as 3.11 or 3.13.5)"
    )


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
        type=_runtime_version,
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
    build.add_argument(
        "--pgo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="profile-guided optimization: a training run of CPython's PGO tests, needing "
        "llvm-profdata of LLVM 19+ and LLVM's source (docs/runtimes.md). Default: for a native "
        "build, when both are at hand (else the build says why it goes on without); --pgo: "
        "an error without them; --no-pgo: -O3 and ThinLTO only",
    )
    build.add_argument(
        "--lto",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ThinLTO across the interpreter and again at the launcher's link (the default); "
        "--no-lto: a quicker build, for tests (a stored runtime built with it is kept; not with "
        "--pgo)",
    )
    actions.add_parser("list", help="list the runtimes")
    relink = actions.add_parser(
        "launcher",
        help="build a runtime's launcher (and ingot's extension "
        "module for it) again from this ingot's source tree",
    )
    relink.add_argument("version", metavar="VERSION", type=_runtime_version)
    relink.add_argument(
        "--if-sources-changed",
        action="store_true",
        help="leave a runtime whose launcher was built from the same Rust sources as it is",
    )
    install = actions.add_parser(
        "install",
        help="install a runtime from its wheel (pyingot-runtime-cp3X) with pip and its "
        "configuration (index, find-links, PIP_* variables)",
    )
    install.add_argument(
        "version", metavar="VERSION", type=_runtime_version, help="the Python version, e.g. 3.13"
    )
    export = actions.add_parser(
        "export", help="write a runtime of the store as a wheel that `runtime install` takes"
    )
    export.add_argument("version", metavar="VERSION", type=_runtime_version)
    export.add_argument(
        "-o", "--output", type=Path, default=Path("."), metavar="DIR", help="the wheel's folder"
    )
    remove = actions.add_parser("remove", help="remove a runtime")
    remove.add_argument("version", metavar="VERSION", type=_runtime_version)
    actions.add_parser("dir", help="print the runtimes' directory")
    _runtime_sources_parser(actions)
    for parser in (build, relink, install, export, remove):
        parser.add_argument(
            "--target",
            type=_machine,
            default=None,
            metavar="ARCH",
            help=f"the architecture it is for: {', '.join(MACHINES)} (default: this machine's)",
        )


def _runtime_sources_parser(actions: Any) -> None:
    """``ingot runtime sources`` and ``ingot runtime outdated`` (:mod:`ingot.runtime.pins`)."""
    sources = actions.add_parser(
        "sources",
        help="download the pinned source releases (python/ingot/runtime/sources.toml) from "
        "Debian's mirror, each checked against its sha256; --update pins the newest the "
        "mirror serves",
    )
    sources.add_argument("directory", nargs="?", type=Path, metavar="DIR", help="where to put them")
    sources.add_argument(
        "versions",
        nargs="*",
        type=_runtime_version,
        metavar="VERSION",
        help="the CPython versions whose sources to fetch (default: every pinned one)",
    )
    sources.add_argument(
        "--update",
        action="store_true",
        help="rewrite the pin file's lines to the newest release the mirror serves of each "
        "(in a checkout; then build the runtimes again)",
    )
    actions.add_parser(
        "outdated",
        help="list the pinned sources of which Debian's mirror lists or serves a newer release",
    )


def _build_parser(commands: _Commands) -> None:
    build = commands.add_parser(
        "build",
        help="build an application into one executable",
        description=textwrap.fill(
            "Build an application (a project directory with pyproject.toml, a package "
            "directory, a script, or an installed console script), its dependencies and "
            "the standard library into one executable: the launcher binary followed by "
            "an archive. Options override the project's [tool.ingot] settings.",
            78,
        ),
        epilog=_BUILD_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    settings.add_options(build)
    build.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")


_BUILD_EXAMPLES = """examples:
  ingot build app.py                     a script (its PEP 723 block: dependencies): dist/app
  ingot build .                          the project here: [project.scripts] or [tool.ingot]
  ingot build app.py --python 3.13       for another Python version (its runtime)
  ingot build app.py --target aarch64    for ARM64 Linux, built on x86-64
  ingot build --console-script http      an installed console script, pinned as installed
  ingot build app.py --files certifi     a package that needs real files
  ingot build app.py --python local      this machine's Python (for this machine's glibc)
"""


def _pack(args: argparse.Namespace) -> int:
    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr)

    excludes = () if args.no_default_excludes else DEFAULT_STDLIB_EXCLUDES
    compression, large_compression, native_compression = settings.compression_levels(args.compress)
    options = PackOptions.here(
        stdlib=args.stdlib,
        directories=args.paths,
        stdlib_exclude=(*excludes, *args.stdlib_exclude),
        optimize_levels=args.optimize or (0,),
        include_source=args.source,
        compression_level=compression,
        large_compression_level=large_compression,
        native_compression_level=native_compression,
        keep_debug_info=args.keep_debug_info,
        files_packages=args.files or [],
        precompile_regexes=args.precompile_regexes is not False,
        progress=say,
    )
    result = pack(args.output, options)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    report.summary(result, say)
    say(
        f"wrote {result.output} ({report.size(result.size)}) in {result.seconds:.1f} s"
        + (f", {len(result.warnings)} warnings" if result.warnings else "")
    )
    return 0


def _build(args: argparse.Namespace) -> int:
    say = run.say_unless(args.quiet)
    request = settings.from_args(args)
    # (provide: installs or builds a runtime the store lacks)
    spec = resolve(request, say, snapshot(), provide=True)
    if spec.target.runtime_python is not None:
        return under.build_under(spec, quiet=args.quiet)
    return run.build_and_report(spec, quiet=args.quiet)


def _inspect(args: argparse.Namespace) -> int:
    if args.sbom:
        sys.stdout.buffer.write(bill_of_materials(args.path))
        return 0
    if args.requirements:
        for line in carried_requirements(args.path):
            print(line)
        return 0
    info = describe(args.path)
    if args.verify:
        try:
            IngotFinder(str(args.path), any_python=True).verify()
        except ArchiveError as error:
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
    inspect_text.show(info, sizes=args.sizes)
    return 0


def _cache(args: argparse.Namespace) -> int:
    if args.action == "dir":
        print(cachedir.root())
        return 0
    if args.action == "list":
        cache_text.show_entries(cachedir.list_cache(), cachedir.root())
        return 0
    removed = cachedir.prune(args.older_than, dry_run=args.dry_run)
    cache_text.show_removed(removed, dry_run=args.dry_run)
    return 0


def _machine(text: str) -> Machine:
    try:
        return machine_named(text)
    except IngotError as error:
        raise argparse.ArgumentTypeError(f"{error.message} ({error.hint})") from None


def _runtime(args: argparse.Namespace) -> int:
    machine: Machine | None = getattr(args, "target", None)
    arch = machine.name if machine else None
    if args.action == "dir":
        print(store.store())
        return 0
    if args.action == "list":
        found = store.list_runtimes()
        for item in found:
            floor = item.info.get("glibc_floor", {})
            print(
                f"{item.version:<10}{item.info.get('target', ''):<26}glibc >= "
                f"{floor.get('version') or '?':<6} {item.path}"
            )
        print(f"{len(found)} runtimes in {store.store()}", file=sys.stderr)
        return 0
    if args.action == "launcher":
        rebuilt = launcher_build.rebuild_launcher(
            args.version,
            say=lambda line: print(line, file=sys.stderr),
            machine=machine,
            if_sources_changed=args.if_sources_changed,
        )
        print(rebuilt.path)
        return 0
    if args.action == "install":
        installed = wheel.install_runtime(
            args.version, say=lambda line: print(line, file=sys.stderr), machine=machine
        )
        print(installed.path)
        return 0
    if args.action == "export":
        exported = store.find_runtime(args.version, arch)
        if exported is None:
            raise store.RuntimeError_(
                f"no runtime {args.version} for {arch or host_machine().name} in {store.store()}",
                hint="`ingot runtime list` shows the runtimes there are",
            )
        print(
            wheel.export_wheel(exported, args.output, say=lambda line: print(line, file=sys.stderr))
        )
        return 0
    if args.action == "remove":
        removed = store.remove_runtime(args.version, arch)
        print(f"removed {removed.path}", file=sys.stderr)
        return 0
    if args.action in ("sources", "outdated"):
        return _runtime_sources(args)
    built = builder.build_runtime(
        dict(args.sources),
        args.directories,
        wanted=args.version,
        jobs=args.jobs,
        force=args.force,
        keep_build=args.keep_build,
        machine=machine,
        pgo=args.pgo,
        lto=args.lto,
        say=lambda line: print(line, file=sys.stderr),
    )
    print(built.path)
    return 0


def _runtime_sources(args: argparse.Namespace) -> int:
    """``ingot runtime sources`` and ``ingot runtime outdated`` (:mod:`ingot.runtime.pins`)."""

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    if args.action == "outdated":
        found = pins.outdated()
        for entry in found:
            print(entry.describe(), flush=True)
        say(f"{len(found)} of {len(pins.COMPONENTS)} components have a newer release listed")
        return 0
    if args.update:
        pins.update(say=say)
        return 0
    if args.directory is None:
        raise pins.PinError(
            "ingot runtime sources: no directory to put the sources in",
            hint="ingot runtime sources DIR [3.11 ...] (or --update, to pin newer releases)",
        )
    pinned = pins.read_pins()
    versions = args.versions or sorted(
        name.removeprefix("python-") for name in pinned if name.startswith("python-")
    )
    wanted: dict[str, pins.Pin] = {}
    for version in versions:
        wanted.update({pin.name: pin for pin in pins.pins_for(version, pinned).values()})
    for path in pins.fetch(args.directory, wanted.values(), say=say):
        print(path)
    return 0


#: What `ingot` alone prints after the commands.
_QUICK_START = """
quick start:
  ingot build hello.py             writes dist/hello: CPython, the stdlib it uses and hello.py
  ./dist/hello                     runs on any Linux with glibc 2.17 or later, no Python needed
  ingot build path/to/project      a project: [project.scripts] or [tool.ingot] say what to run
  ingot build --help               every option, grouped, with examples
"""

_COMMANDS = ("pack", "build", "inspect", "cache", "runtime")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``ingot`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not given:
        parser.print_help(sys.stderr)
        print(_QUICK_START, end="", file=sys.stderr)
        return 2
    first = given[0]
    if not first.startswith("-") and first not in _COMMANDS:
        close = difflib.get_close_matches(first, _COMMANDS, n=1, cutoff=0.5)
        parser.print_usage(sys.stderr)
        print(
            f"ingot: error: unknown command {first!r}"
            + (
                f"; did you mean {close[0]!r}?" if close else f" (commands: {', '.join(_COMMANDS)})"
            ),
            file=sys.stderr,
        )
        return 2
    args = _parse(parser, given)
    with interrupts_stop():  # SIGTERM and SIGHUP as ^C: what a command made goes on the way out
        return _run(args)


def _run(args: argparse.Namespace) -> int:
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
        return report_error(error)
    except KeyboardInterrupt as error:
        return report.report_interrupt(error)
    except BrokenPipeError:  # `ingot inspect X | head`
        sys.stdout = None  # nothing more to flush at exit (typeshed allows None)
        return 0


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed; an argument no parser knows is reported with the usage of the
    (sub)command it was given to, and the option it most likely meant."""
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    chosen = parser
    for key in ("command", "action"):
        commands = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, key, None)
        if not commands or name not in commands[0].choices:
            break
        chosen = commands[0].choices[name]
    options = [option for action in chosen._actions for option in action.option_strings]
    unknown = extra[0].split("=")[0]
    close = difflib.get_close_matches(unknown, options, n=1) if unknown.startswith("-") else []
    chosen.error(
        f"unrecognized arguments: {' '.join(extra)}"
        + (f" (did you mean {close[0]}?)" if close else "")
    )
