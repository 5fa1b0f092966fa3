"""The settings of ``ingot build``, defined once.

Each field of :class:`Settings` is one setting: its type, default, ``[tool.ingot]`` key, the
check its TOML value must pass, its command-line option(s) and its help. The command line's
options (:func:`add_options`), the checks of a ``[tool.ingot]`` table (:func:`from_table`), the
table in examples/README.md (:func:`markdown_table`, held to the README by a test) and the
resolved spec's settings all come from these fields. :class:`Request` is the same for what is
given on the command line only (what to build, the launcher, ``--force``).

Adding a setting is one field here, plus its use.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeGuard

from ingot.errors import ConfigError
from ingot.machine import MACHINES

#: What ``target`` may say: each architecture's name and aliases.
MACHINE_NAMES = frozenset(name for m in MACHINES.values() for name in (m.name, *m.aliases))

__all__ = [
    "DEFAULT_COMPRESSION",
    "DEFAULT_LARGE_COMPRESSION",
    "PACK_SETTINGS",
    "PLATFORM_WHEELS",
    "ZSTD_LEVELS",
    "ConfigError",
    "Request",
    "Settings",
    "add_options",
    "compression_levels",
    "from_args",
    "from_table",
    "is_str_list",
    "markdown_table",
    "merge",
    "parse_compress",
    "parse_entry",
    "parse_levels",
    "parse_platform_wheels",
    "parse_python",
]

#: The zstd level ``ingot build`` compresses with by default: the blobs a start reads stay stored
#: as is (zero-copy), so only size and build time depend on it (see docs/benchmarks.md). Against
#: 19 (and 12 for large blobs): httpie's archive written in 1.5 s instead of 4.5, its executable
#: 1.3% larger.
DEFAULT_COMPRESSION = 12
#: ... and for blobs over 64 KiB the dictionary does not serve and a start does not read
#: (native code loaded later, data, large modules), unless ``--compress`` gives a level for all.
#: 19, not 9 (issue 42): decompressed only when used, so only size and the first build's time
#: depend on it (the scipy app: 1.2 MiB smaller).
DEFAULT_LARGE_COMPRESSION = 19
#: ... and for the native images a start reads, of 64 KiB or more (extension modules, shared
#: libraries: a start decompresses them into their memory files, on the read-ahead thread, instead
#: of copying them; issue 42: a scipy app's 56 MiB of OpenBLAS stored in 10). 9, not 19: 19 made
#: the scipy app 3.1 MiB smaller but its start 4% slower and 4 MiB larger in memory (zstd 19's
#: 8 MiB window; farm-bench, 30 interleaved pairs).
DEFAULT_NATIVE_COMPRESSION = 9
#: zstd's levels (the fastest to the smallest).
ZSTD_LEVELS = (-7, 22)


def compression_levels(value: int | bool | None) -> tuple[int | None, int | None, int | None]:
    """The zstd levels of a ``compress`` setting: (of the blobs a start does not read, of those
    over 64 KiB, of the native images of 64 KiB or more a start reads; None: stored as is).
    Unset: the defaults; ``False``: everything stored as is; a level: that level for all."""
    if value is None:
        return DEFAULT_COMPRESSION, DEFAULT_LARGE_COMPRESSION, DEFAULT_NATIVE_COMPRESSION
    return (None, None, None) if value is False else (int(value), None, int(value))


#: The Python versions a build can be for (runtimes, launchers, bytecode).
SUPPORTED_PYTHONS = "3.10 to 3.15"
_PYTHON = re.compile(r"3\.1[0-5](\.\d+)?")


def parse_python(text: str) -> str:
    """``--python VERSION``: ``local``, or a supported version (``3.12``, ``3.13.5``; also as
    ``python3.12`` or ``cp312``, which mean the same)."""
    value = text.strip()
    if value == "local":
        return value
    value = re.sub(r"^(python|py|cpython-?)", "", value)
    found = re.fullmatch(r"cp(\d)(\d+)", text.strip())
    if found:
        value = f"{found[1]}.{found[2]}"
    if not _PYTHON.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Python version ingot builds for: {SUPPORTED_PYTHONS} (such as "
            "3.11 or 3.13.5), or 'local' (the Python ingot runs under)"
        )
    return value


def parse_compress(text: str) -> int:
    """``--compress LEVEL``: a zstd level."""
    try:
        level = int(text)
    except ValueError:
        level = ZSTD_LEVELS[1] + 1
    if not ZSTD_LEVELS[0] <= level <= ZSTD_LEVELS[1]:
        low, high = ZSTD_LEVELS
        raise argparse.ArgumentTypeError(f"{text!r} is not a zstd level ({low} to {high})")
    return level


#: What ``platform-wheels`` may say (:mod:`ingot.build.stages.wheels`), the default first.
PLATFORM_WHEELS = ("prefer", "keep-floor")


def parse_platform_wheels(text: str) -> str:
    """``--platform-wheels prefer|keep-floor``."""
    if text.strip() not in PLATFORM_WHEELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(PLATFORM_WHEELS)}")
    return text.strip()


def is_str_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


_ENTRY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def parse_entry(text: str, where: str) -> tuple[str, str]:
    """``"pkg.mod:func"`` -> ``("pkg.mod", "func")``; ConfigError naming ``where`` otherwise."""
    text = text.strip()
    if not _ENTRY.fullmatch(text) or ".." in text or text.endswith("."):
        raise ConfigError(
            f"{where}: {text!r} is not an entry point 'module:function'", hint="e.g. 'app.cli:main'"
        )
    module, function = text.split(":")
    return module, function


def parse_levels(text: str) -> tuple[int, ...]:
    """``--optimize 0,2``."""
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        levels = (-1,)
    if not levels or any(level not in (0, 1, 2) for level in levels):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of 0, 1, 2")
    return levels


@dataclass(frozen=True)
class Option:
    """How one setting is written in ``[tool.ingot]`` and on the command line.

    ``form`` says how the command line gives it: ``value`` (``--x VALUE``), ``list`` (``--x V``,
    repeatable), ``switch`` (``--x``/``--no-x``), ``flag`` (``--x``: true), ``off`` (``--no-x``:
    false) or ``positional``."""

    help: str
    flags: tuple[str, ...] = ()
    form: str = "value"
    metavar: str | None = None
    toml: bool = True  # a [tool.ingot] key (named as the field, with dashes)
    expected: str = ""  # what a TOML value must be (for the error)
    check: Callable[[object], bool] = lambda value: True
    parse: Callable[[str], Any] | None = None  # the command line's type
    group: str | None = None  # options of one group exclude each other
    off: str | None = None  # a second option that sets the value false (``--no-compress``)
    off_help: str | None = None
    doc: str | None = None  # the README table's text, when it differs from help
    doc_type: str = ""


def setting(default: Any = None, **option: Any) -> Any:
    """A field of :class:`Settings` or :class:`Request` with its :class:`Option`."""
    if isinstance(default, list):
        return field(default_factory=list, metadata={"option": Option(**option)})
    return field(default=default, metadata={"option": Option(**option)})


_STR = ("a string", lambda value: isinstance(value, str))
_BOOL = ("true or false", lambda value: isinstance(value, bool))


def _strings(what: str) -> dict[str, Any]:
    return {"expected": f"a list of strings ({what})", "check": is_str_list}


@dataclass(frozen=True)
class Settings:
    """The ``[tool.ingot]`` settings; None (or empty) when not set."""

    entry: str | None = setting(
        help="function to call (or the name of one of [project.scripts])",
        flags=("--entry",),
        metavar="MODULE:FUNCTION",
        expected="a string 'module:function'",
        check=_STR[1],
        group="run",
        doc='`"module:function"` to call',
        doc_type="str",
    )
    module: str | None = setting(
        help="module to run, as python -m does",
        flags=("--module",),
        metavar="MODULE",
        expected="a string (a module name)",
        check=_STR[1],
        group="run",
        doc_type="str",
    )
    script: str | None = setting(
        help="script to run",
        flags=("--script",),
        metavar="PATH",
        expected="a string (a path)",
        check=_STR[1],
        group="run",
        doc="a script to run (a path relative to the project)",
        doc_type="str",
    )
    packages: list[str] | None = setting(
        help="an application package directory, module or directory of packages to copy in "
        "(repeatable; default: pip-install the project)",
        flags=("--package",),
        form="list",
        metavar="PATH",
        **_strings("paths"),
        doc_type="list[str]",
    )
    dependencies: list[str] | None = setting(
        help="a requirement to install (repeatable; replaces the project's)",
        flags=("--dependency",),
        form="list",
        metavar="REQ",
        expected="a list of requirement strings",
        check=is_str_list,
        doc="requirement strings (default: `[project].dependencies`)",
        doc_type="list[str]",
    )
    requirements: str | None = setting(
        help="a requirements file",
        flags=("-r", "--requirements"),
        metavar="FILE",
        expected="a string (a path)",
        check=_STR[1],
        doc="a requirements file (`pip install -r`), relative to the project",
        doc_type="str",
    )
    platform_wheels: str | None = setting(
        help="when a distribution's wheel for the target's glibc floor (2.17 with a runtime) is "
        "pure Python and it has a wheel with native code for a newer manylinux: 'prefer' takes "
        "the native wheel and raises the floor, said (the default); 'keep-floor' stops the build "
        "instead, and takes no wheel for a newer glibc for a requirement that has none for the "
        "floor",
        flags=("--platform-wheels",),
        metavar="prefer|keep-floor",
        parse=parse_platform_wheels,
        expected=f"one of {', '.join(map(repr, PLATFORM_WHEELS))}",
        check=lambda value: value in PLATFORM_WHEELS,
        doc='`"prefer"`: a native wheel for a newer manylinux over the pure wheel of the '
        'floor, raising the floor, said (default); `"keep-floor"`: stop instead, and take no '
        "wheel for a newer glibc, not even for a requirement with none for the floor",
        doc_type="str",
    )
    include: list[str] = setting(
        [],
        help="carry modules that no code path imports, or that the defaults leave out (glob on "
        "dotted names; '*' carries everything)",
        flags=("--include",),
        form="list",
        metavar="PATTERN",
        **_strings("module-name globs"),
        doc_type="list[str]",
    )
    exclude: list[str] = setting(
        [],
        help="leave out modules/packages matching this glob on dotted names",
        flags=("--exclude",),
        form="list",
        metavar="PATTERN",
        **_strings("module-name globs"),
        doc_type="list[str]",
    )
    output: str | None = setting(
        help="file to write (default: dist/NAME, dist/NAME.ingot with --archive-only)",
        flags=("-o", "--output"),
        metavar="OUT",
        expected="a string (a path)",
        check=_STR[1],
        doc="the executable to write, relative to the project",
        doc_type="str",
    )
    fast_exit: bool | None = setting(
        help="exit without finalizing the interpreter",
        flags=("--fast-exit",),
        form="switch",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc_type="bool",
    )
    python_mode: bool | None = setting(
        help="let the processes the application starts from its own executable run python "
        "command lines (-c, -m, multiprocessing's spawn; the default); --no-python-mode: never, "
        "every start runs the application, for an executable that is a privilege boundary "
        "(a sudo or doas rule, set-user-ID; docs/security.md)",
        flags=("--python-mode",),
        form="switch",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc_type="bool",
    )
    filesystem_imports: bool | None = setting(
        help="import from directories the application adds to sys.path, after the archive "
        "(the default; --no-filesystem-imports: from the archive alone)",
        flags=("--filesystem-imports",),
        form="switch",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc_type="bool",
    )
    precompile_regexes: bool | None = setting(
        help="leave out the table of regular expressions compiled at build time",
        flags=("--no-precompile-regexes",),
        form="off",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc="store the regular expressions the modules compile, compiled at build time "
        "(default true)",
        doc_type="bool",
    )
    optimize: list[int] | None = setting(
        help="bytecode optimization levels, e.g. 0,2 (default: 0)",
        flags=("--optimize",),
        metavar="LEVELS",
        parse=parse_levels,
        expected="a list of 0, 1, 2",
        check=lambda value: (
            isinstance(value, list)
            and all(type(item) is int and item in (0, 1, 2) for item in value)
        ),
        doc_type="list[int]",
    )
    compress: int | bool | None = setting(
        help=f"zstd level of the blobs a start does not read (default: {DEFAULT_COMPRESSION}, "
        f"{DEFAULT_LARGE_COMPRESSION} over 64 KiB); of those a start reads, only native images "
        f"of 64 KiB or more are compressed ({DEFAULT_NATIVE_COMPRESSION}), the rest stay stored as "
        "is. 19: smaller, slower first build",
        flags=("--compress",),
        metavar="LEVEL",
        parse=parse_compress,
        expected=f"an integer zstd level ({ZSTD_LEVELS[0]} to {ZSTD_LEVELS[1]}), or false",
        check=lambda value: (
            value is False or (type(value) is int and ZSTD_LEVELS[0] <= value <= ZSTD_LEVELS[1])
        ),
        off="--no-compress",
        off_help="store every blob as is",
        doc=f"zstd level of the blobs a start does not read (default {DEFAULT_COMPRESSION}, "
        f"{DEFAULT_LARGE_COMPRESSION} over 64 KiB); false stores every blob as is",
        doc_type="int or false",
    )
    compress_start: bool | None = setting(
        help="compress the bytecode a start reads too: a smaller executable (15%% smaller for "
        "an app of scipy), whose start decompresses that bytecode instead of reading it in place",
        flags=("--compress-start",),
        form="switch",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc="compress the bytecode a start reads too (default false: it is read in place)",
        doc_type="bool",
    )
    run_dependencies: bool | None = setting(
        help="run code of the dependencies (and of the project) during the build, confined "
        "(docs/security.md, Builds): the import probe imports the packages with native code to "
        "see what their C code imports, and a files package's preparation runs (black's "
        "grammar tables); --no-run-dependencies: neither runs, and what C code imports by "
        "names its binary does not show (Cython 3's compressed strings, Rust extensions) is "
        "missed: carry it with --include. pip still builds the project itself (its build "
        "backend runs); --package copies the code instead",
        flags=("--run-dependencies",),
        form="switch",
        expected=_BOOL[0],
        check=_BOOL[1],
        doc="run the import probe and the build-time preparations, confined (default true); "
        "false runs no code of the dependencies: what their C code imports by names the "
        "binaries do not show is then missed (`include` carries it)",
        doc_type="bool",
    )
    files: list[str] = setting(
        [],
        help="materialize this top-level package as real files in the extraction cache, for code "
        "that needs them (repeatable; the files policy)",
        flags=("--files",),
        form="list",
        metavar="PACKAGE",
        **_strings("top-level package names"),
        doc_type="list[str]",
    )
    allow_missing: list[str] = setting(
        [],
        help="build although the application's own code imports this module at module level "
        "and the build does not carry it (a warning instead of an error; repeatable)",
        flags=("--allow-missing",),
        form="list",
        metavar="MODULE",
        **_strings("top-level module names"),
        doc_type="list[str]",
    )
    memory: list[str] = setting(
        [],
        help="keep this package in memory although the built-in table would materialize it "
        "(repeatable)",
        flags=("--memory",),
        form="list",
        metavar="PACKAGE",
        **_strings("top-level package names"),
        doc_type="list[str]",
    )
    python: str | None = setting(
        help="build with the runtime of this Python version, for any Linux with glibc 2.17 or "
        "later (installed from its wheel, pyingot-runtime-cp3X, through pip's configuration if "
        "missing), or 'local': with the Python ingot runs under and its launcher, for this "
        "machine's glibc (default: the runtime of the Python ingot runs under)",
        flags=("--python",),
        metavar="VERSION",
        parse=parse_python,
        expected=f"'local' or a Python version from {SUPPORTED_PYTHONS}, such as '3.11' or "
        "'3.13.5'",
        check=lambda value: (
            isinstance(value, str) and (value == "local" or _PYTHON.fullmatch(value) is not None)
        ),
        doc_type="str",
    )
    target: str | None = setting(
        help="the architecture the executable runs on: x86_64 or aarch64 (arm64), built from "
        "any machine with that architecture's runtime and manylinux wheels; nothing of the "
        "target runs during the build (default: this machine's)",
        flags=("--target",),
        metavar="ARCH",
        expected="'x86_64' or 'aarch64' (or 'amd64', 'arm64')",
        check=lambda value: isinstance(value, str) and value.lower() in MACHINE_NAMES,
        doc_type="str",
    )


@dataclass(frozen=True)
class Request:
    """What ``ingot build`` was asked on the command line: what to build, and the settings that
    override the project's."""

    source: str | None = setting(
        help="project directory, package directory or script (default: .)",
        form="positional",
        metavar="SOURCE",
        toml=False,
    )
    console_script: str | None = setting(
        help="build an installed console script, with its dependencies pinned to the versions "
        "installed here",
        flags=("--console-script",),
        metavar="NAME",
        toml=False,
    )
    launcher: str | None = setting(
        help="the launcher binary (default: $INGOT_LAUNCHER, else the one shipped with ingot)",
        flags=("--launcher",),
        metavar="PATH",
        toml=False,
    )
    archive_only: bool = setting(
        False,
        help="write only the archive (with its launch config), no launcher",
        flags=("--archive-only",),
        form="flag",
        toml=False,
    )
    force: bool = setting(
        False,
        help="overwrite an existing output that ingot did not write",
        flags=("--force",),
        form="flag",
        toml=False,
    )
    no_cache: bool = setting(
        False,
        help="neither take from nor add to the build cache (what earlier builds derived from "
        "the same inputs: installed dependencies, bytecode, compressed blobs)",
        flags=("--no-cache",),
        form="flag",
        toml=False,
    )
    refresh: bool = setting(
        False,
        help="resolve and install the dependencies again, even if the build cache has them for "
        "the same requirements (a newer release of an unpinned one)",
        flags=("--refresh",),
        form="flag",
        toml=False,
    )
    allow_outside_project: bool = setting(
        False,
        help="let the project's own files (pyproject.toml, [tool.ingot], a script's PEP 723 "
        "block) name paths outside its directory, and follow the symbolic links in what it "
        "copies that lead out of it (default: an error names them; paths given on the command "
        "line may be anywhere)",
        flags=("--allow-outside-project",),
        form="flag",
        toml=False,
    )
    settings: Settings = field(default_factory=Settings)


def _options(cls: type[Any]) -> list[tuple[str, Option]]:
    return [(f.name, f.metadata["option"]) for f in fields(cls) if "option" in f.metadata]


def toml_key(name: str) -> str:
    return name.replace("_", "-")


#: ``[tool.ingot]`` keys -> field names.
TOML_KEYS = {toml_key(name): name for name, option in _options(Settings) if option.toml}


#: The settings ``ingot pack`` takes too: what an archive is written with.
PACK_SETTINGS = ("output", "optimize", "compress", "files", "precompile_regexes")

#: ``ingot build --help``'s groups of options, in order: title -> fields.
SECTIONS: dict[str, tuple[str, ...]] = {
    "what to run": (
        "source",
        "console_script",
        "entry",
        "module",
        "script",
        "allow_outside_project",
    ),
    "dependencies": (
        "dependencies",
        "requirements",
        "packages",
        "platform_wheels",
        "refresh",
        "run_dependencies",
    ),
    "what to carry": ("include", "exclude", "allow_missing", "files", "memory"),
    "output": (
        "output",
        "force",
        "archive_only",
        "optimize",
        "compress",
        "compress_start",
        "precompile_regexes",
    ),
    "runtime": ("python", "target", "launcher"),
    "start-up and self-calls": ("fast_exit", "python_mode", "filesystem_imports"),
    "the build cache": ("no_cache",),
}


def add_options(
    parser: argparse.ArgumentParser,
    only: Iterable[str] | None = None,
    *,
    required: Iterable[str] = (),
    helps: Mapping[str, str] | None = None,
) -> None:
    """Adds an option for every field of :class:`Request` and :class:`Settings` to ``parser``
    (``only``: for these fields; ``required``: options the command cannot do without;
    ``helps``: another command's words for a field)."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    chosen = None if only is None else set(only)
    sections: dict[str, Any] = {}
    if only is None:  # (a command with every setting: its help in groups)
        for title, names in SECTIONS.items():
            group = parser.add_argument_group(title)
            sections.update(dict.fromkeys(names, group))
    for name, option in _options(Request) + _options(Settings):
        if chosen is not None and name not in chosen:
            continue
        if helps and name in helps:
            option = dataclasses.replace(option, help=helps[name])
        home: Any = sections.get(name, parser)
        target: Any = home
        if option.group is not None or option.off is not None or option.form == "switch":
            key = option.group or name
            if key not in groups:
                groups[key] = home.add_mutually_exclusive_group()
            target = groups[key]
        if option.form == "positional":
            target.add_argument(name, nargs="?", metavar=option.metavar, help=option.help)
            continue
        common: dict[str, Any] = {"dest": name, "help": option.help}
        if name in required:
            common["required"] = True
        if option.form == "value":
            common.update(metavar=option.metavar, type=option.parse)
        elif option.form == "list":
            common.update(action="append", metavar=option.metavar)
        elif option.form == "flag":
            common.update(action="store_true")
        elif option.form == "switch":
            common.update(action="store_true", default=None)
        elif option.form == "off":
            common.update(action="store_false", default=None)
        target.add_argument(*option.flags, **common)
        if option.form == "switch":
            negative = option.flags[0].replace("--", "--no-", 1)
            target.add_argument(negative, dest=name, action="store_false")
        if option.off is not None:
            target.add_argument(
                option.off, dest=name, action="store_const", const=False, help=option.off_help
            )


def from_args(args: argparse.Namespace) -> Request:
    """The :class:`Request` of parsed command-line options."""

    def value(name: str) -> Any:
        given = getattr(args, name)
        return list(given) if isinstance(given, tuple) else given

    settings = Settings(**{name: value(name) for name, _ in _options(Settings)})
    given = {name: value(name) for name, _ in _options(Request)}
    return Request(**given, settings=_defaults(settings))


def _defaults(settings: Settings) -> Settings:
    """``settings`` with the lists the command line did not give empty rather than None."""
    empty: dict[str, Any] = {
        f.name: []
        for f in fields(Settings)
        if f.default is dataclasses.MISSING and getattr(settings, f.name) is None
    }
    return dataclasses.replace(settings, **empty)


def from_table(table: object, where: str) -> Settings:
    """The :class:`Settings` of a ``[tool.ingot]`` table; ConfigError names ``where`` and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.ingot] must be a table")
    options = dict(_options(Settings))
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in TOML_KEYS:
            close = [
                known for known in TOML_KEYS if known.replace("-", "_") == key.replace("-", "_")
            ] or difflib.get_close_matches(key, list(TOML_KEYS), n=1, cutoff=0.6)
            raise ConfigError(
                f"{where}: unknown key {key!r} in [tool.ingot]",
                hint=f"did you mean {close[0]!r}?"
                if close
                else "known keys: " + ", ".join(TOML_KEYS),
            )
        option = options[TOML_KEYS[key]]
        if not option.check(value):
            raise ConfigError(
                f"{where}: [tool.ingot] {key} must be {option.expected}, not {value!r}"
            )
        values[TOML_KEYS[key]] = value
    settings = Settings(**values)
    if settings.entry is not None:
        parse_entry(settings.entry, f"{where}: [tool.ingot] entry")
    chosen = [key for key in ("entry", "module", "script") if getattr(settings, key) is not None]
    if len(chosen) > 1:
        raise ConfigError(
            f"{where}: [tool.ingot] sets {' and '.join(chosen)}; give one of entry, module, script"
        )
    return settings


def merge(base: Settings, overrides: Settings) -> Settings:
    """``base`` with every setting ``overrides`` gives replacing it (one of entry/module/script
    given in ``overrides`` replaces all three)."""
    merged = base
    if any(getattr(overrides, key) is not None for key in ("entry", "module", "script")):
        merged = dataclasses.replace(merged, entry=None, module=None, script=None)
    given = {
        f.name: getattr(overrides, f.name)
        for f in fields(Settings)
        if getattr(overrides, f.name) not in (None, [])
    }
    return dataclasses.replace(merged, **given)


def _flags(option: Option, name: str) -> str:
    flags = [flag for flag in option.flags if flag.startswith("--")]
    if option.form == "switch":
        flags.append(flags[0].replace("--", "--no-", 1))
    if option.off:
        flags.append(option.off)
    return ", ".join(f"`{flag}`" for flag in flags)


def markdown_table(rows: Sequence[tuple[str, Option]] | None = None) -> str:
    """The ``[tool.ingot]`` keys as a Markdown table: key, type, option(s), meaning."""
    lines = ["| key | type | option | meaning |", "|---|---|---|---|"]
    for name, option in rows if rows is not None else _options(Settings):
        if option.toml:
            text = option.doc or option.help
            lines.append(
                f"| `{toml_key(name)}` | {option.doc_type} | {_flags(option, name)} | {text} |"
            )
    return "\n".join(lines) + "\n"
