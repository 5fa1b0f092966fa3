"""What an application can import, so that a build carries that and leaves out the rest.

Starting from the modules an executable runs first (the launcher's, the entry module, every
module of the application's own code) and :data:`ingot.build.archive.import_tables.NATIVE_IMPORTS`, a module reaches:

- every module its source imports, at module level, in functions, and in ``except`` fallbacks
  (:func:`ingot.build.analysis.firstuse.imports_in_source`; guards that never run on Linux,
  ``TYPE_CHECKING`` and ``__main__`` blocks, but the one of the module run as ``__main__``, which is
  the program, are not followed; for the standard library, read from its syntax tree
  by :func:`stdlib_imports`, nor the functions only ``__main__`` calls, nor fallbacks to another
  module when what the ``try`` imports is there);
- the modules its string constants name: a dotted name of a module in the build
  (``"pygments.lexers.python"``, ``"django.db.backends.sqlite3"``), the top-level name of a
  package that is not the standard library's (``import_optional_dependency("pyarrow")``), or a
  name relative to its package in ``import_module(".x", __package__)``;
- the modules the code in its string constants imports (``subprocess.run([sys.executable,
  "-c", "import getpass; ..."])``, ``exec``, ``runpy``: :func:`ingot.build.archive.codestrings.code_string_imports`), as its own
  imports are;
- the entry points of a group its string constants name (``entry_points(group="app.plugins")``);
- for an extension module, the module names among the strings of its binary (C code imports by
  name: ``_datetime`` imports ``_strptime``, ``_elementtree`` ``xml.etree.ElementPath``);
- for a package of the environment with native code, what importing it imports
  (:func:`ingot.build.archive.probe.import_probe`: Cython 3 compresses its strings, Rust's have no terminator).

What only a string leads to (a name in a source or a binary, no import, probe or package carried
whole) is in :attr:`Reach.named_only`: the build's report lists it (``--exclude`` leaves it out).

The standard library is carried module by module. Any other package is carried whole once one of
its modules is reached (packages import their own modules in ways no scan sees: by names built at
run time, by walking ``__path__``), less its test suites (``pkg/tests``, ``pkg/test``, their
modules and data files) unless something reaches them. Packages of the environment that nothing
reaches (pip, setuptools, ingot itself) are left out, as is every standard-library module no path
leads to (test suites, tkinter, idlelib, ...). :data:`ingot.build.archive.import_tables.COMPUTED_IMPORTS` bring what they import by computed names, for the reason
given there.

What cannot be seen: imports of names computed at run time from data (a module named in a
configuration file or a pickle), code built at run time (an f-string, ``"\\n".join(lines)``) or
read from a file, and what native code imports later than at its import. ``--include PATTERN``
carries such modules anyway; the build prints what it left out.
"""

from __future__ import annotations

import ast
import configparser
import functools
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from ingot import _ingot
from ingot._ingot import EXTENSION_KINDS, loadable_image
from ingot.build.analysis.firstuse import SKIPPED, never_on_linux
from ingot.build.archive.buildcache import (
    NO_CACHE,
    BuildMemo,
    cached_imports,
)
from ingot.build.archive.codestrings import code_strings
from ingot.build.archive.collect import Item, distribution_name
from ingot.build.archive.import_tables import (
    BINARY_NAMES_NOT_IMPORTS,
    CALLBACK_IMPORTS,
    CALLED_BACK,
    COMPUTED_IMPORTS,
    OPTIONAL_IMPORTS,
    in_test_package,
    suite_of_file,
)

__all__ = [
    "Reach",
    "binary_names",
    "loose_binary_names",
    "reach",
    "stdlib_imports",
]

_STRING = re.compile(rb"""(?<![\w.])[rbuRBU]?(['"])([A-Za-z_][\w.]{0,200}?)\1""")
_RELATIVE_IMPORT = re.compile(rb"""import_module\(\s*(['"])(\.[\w.]*)\1""")
_IMPORT_CALL = re.compile(
    rb"""(?:import_module|__import__|find_spec)\(\s*(['"])([A-Za-z_][\w.]*)\1"""
)
_SIGNATURE = re.compile(rb"(?<=\x00)([A-Za-z_][A-Za-z0-9_]*)\((?:\$|[A-Za-z_*/)])")
_IDENTIFIER_RUN = re.compile(rb"[A-Za-z0-9_][A-Za-z0-9_.]{1,120}")
_BINARY_NAME = re.compile(rb"(?<=\x00)[A-Za-z0-9_][A-Za-z0-9_.]{1,120}(?=\x00)")

_MODULE_NAMESPACE = "modules"


def loose_binary_names(image: bytes) -> set[str]:
    """Every run of identifier characters (and dots) in a native image, however delimited: Rust
    and Cython 3 keep their strings in pools without NUL terminators. (What
    ``_IDENTIFIER_RUN.findall`` finds, scanned in Rust: ``ingot._ingot.loose_binary_names``.)"""
    return _ingot.loose_binary_names(image)


def binary_names(image: bytes) -> set[str]:
    """The NUL-terminated strings of a native image that look like module names (C code imports
    by name: ``numbers``, ``_strptime``, ``xml.etree.ElementPath``), less the names the image
    documents as its own functions or methods (an Argument Clinic signature, ``readline($self,
    ...``): a method that happens to share a module's name is not an import of it. (What
    ``_BINARY_NAME.findall`` finds less ``_SIGNATURE.findall``'s, scanned in Rust:
    ``ingot._ingot.binary_names``.)"""
    return _ingot.binary_names(image)


def _loaded_part(image: bytes) -> bytes:
    """What the dynamic loader maps of a native image: its strings, not the debug information
    after them, whose names of struct fields and variables (``inspect``, ``ast``) are no imports."""
    try:
        return bytes(loadable_image(image))
    except ValueError:
        return image


@dataclass
class Reach:
    """What :func:`reach` decided: the plan keys to carry, the imports it read (by module, as
    :func:`ingot.build.analysis.firstuse.imports_in_source` gives them), and what it left out, by
    group (a standard-library top-level module or package, or a package of the environment), with
    the number of entries and their bytes."""

    kept: set[tuple[str, str]] = field(default_factory=set)
    imports: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: Modules carried only because their package is carried whole: no import, name or probe
    #: leads to them from what the application runs (PyQt5.QtNetwork of an app that imports
    #: QtWidgets). Their native code's needs of the system are not taken from the build machine.
    whole_only: set[str] = field(default_factory=set)
    left_out: dict[str, tuple[str, int, int]] = field(
        default_factory=dict
    )  # group -> (origin, n, bytes)
    #: Modules carried only because a string names them (a string constant of a module's source,
    #: a name in a binary): no import, probe or package carried whole would bring them. Module
    #: named -> (the module whose string names it, bytes of it and of what only it brings).
    named_only: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Top-level packages with native code that were not probed (no ``probe`` given: a build
    #: with ``--no-run-dependencies``): what their C code imports was read from their binaries'
    #: strings alone.
    unprobed: list[str] = field(default_factory=list)


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        isinstance(name, ast.Name) and name.id in ("ImportError", "ModuleNotFoundError")
        for name in names
    )


def stdlib_imports(
    source: bytes, name: str, is_package: bool, present: set[str], as_main: bool = False
) -> list[str] | None:
    """The modules a standard-library module can import when an application uses it, read from
    its syntax tree: module level, functions, ``except`` blocks, but not

    - code that never runs on Linux (``if sys.platform == "win32":``, ``if TYPE_CHECKING:``);
    - the ``if __name__ == "__main__":`` block, nor the functions only it calls (``_test()``,
      ``main()`` of modules that are also command-line tools: they run under ``python -m``);
    - an ``except ImportError:`` fallback to another top-level module or package whose ``try``
      imports only modules in ``present`` (``try: from _sha512 import sha512 except ImportError:
      from hashlib import sha512``). A fallback within the module's own package is followed: such
      a twin (``zoneinfo._zoneinfo``) is part of the package, and others import it directly.

    ``as_main``: the module runs as ``__main__`` (``--module json.tool``), and its main block,
    with the functions it calls, is the program.

    None if the source does not parse (the caller falls back to the textual scan)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    walk = _StdlibImports(
        package=name if is_package else name.rpartition(".")[0],
        top=name.split(".")[0] if "." in name or is_package else None,
        present=present,
        body=tree.body,
        dead=set() if as_main else _dead_functions(tree.body),
        as_main=as_main,
    )
    walk.statements(tree.body)
    return walk.found


def source_strings(
    memo: BuildMemo, source: bytes, package: str, stdlib: bool
) -> tuple[list[str], list[str]]:
    """What a module's source names as strings, through the build cache: the modules it
    imports by a computed name (``import_module("a.b")``, ``__import__``, ``find_spec``;
    relative ones resolved in ``package``), and, unless it is the standard library's (whose
    other module-name strings are data: pickle's table of renamed modules, logging's
    configuration), its other strings that look like names, each once, in order (entry point
    names, plugin modules: the reach analysis decides which are modules)."""

    def scan() -> tuple[list[str], list[str]]:
        imported = [m.group(2).decode("ascii", "replace") for m in _IMPORT_CALL.finditer(source)]
        for match in _RELATIVE_IMPORT.finditer(source):
            relative = match.group(2).decode("ascii", "replace")
            dots = len(relative) - len(relative.lstrip("."))
            base = package.split(".")
            base = base[: len(base) - (dots - 1)] if dots > 1 else base
            imported.append(".".join([*base, relative.lstrip(".")]).rstrip("."))
        texts = (
            []
            if stdlib
            else [m.group(2).decode("ascii", "replace") for m in _STRING.finditer(source)]
        )
        return list(dict.fromkeys(imported)), list(dict.fromkeys(texts))

    found = memo.remember("strings", [package, "stdlib" if stdlib else "", source], scan)
    return list(found[0]), list(found[1])


def present_modules(plan: Iterable[tuple[str, str]]) -> set[str]:
    """The modules :func:`stdlib_facts` takes as present: the plan's (its keys), and the
    interpreter's built-in ones."""
    names = {key[1] for key in plan if key[1] and key[0] == _MODULE_NAMESPACE}
    return names | set(sys.builtin_module_names)


def stdlib_facts(
    memo: BuildMemo,
    source: bytes,
    name: str,
    is_package: bool,
    present: set[str],
    as_main: bool = False,
) -> list[str] | None:
    """:func:`stdlib_imports`, through the build cache (kept with the answers ``present`` gave;
    the build's pool computes them too, :mod:`ingot.build.archive.prefetch`)."""
    kind = "package" if is_package else "module"
    return memo.with_present(
        "stdlib-imports",
        [name, f"{kind} as __main__" if as_main else kind, source],
        present,
        functools.partial(stdlib_imports, source, name, is_package, as_main=as_main),
    )


def _dead_functions(body: list[ast.stmt]) -> set[str]:
    """The top-level functions of a module (``body``) that only its ``__main__`` block, or other
    such functions, calls."""
    functions = {
        node.name: node
        for node in body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    main_blocks = [node for node in body if isinstance(node, ast.If) and _is_main_guard(node.test)]
    uses: dict[str | None, set[str]] = {}  # function (None: the module) -> names it loads
    for node in body:
        if node in main_blocks:
            continue
        owner = node.name if node in functions.values() else None  # type: ignore[attr-defined]
        names = uses.setdefault(owner, set())
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name):
                names.add(inner.id)
            elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                names.add(inner.value)  # __all__ entries, getattr(module, "name")
    # A function the __main__ block calls is a command-line entry point (``main()``, ``_test()``):
    # dead unless the module's other code uses it. Other public functions are live (any importer
    # may call them), as are dunder functions (the interpreter calls a module's ``__getattr__``),
    # private ones if live code uses them.
    in_main = {
        inner.id
        for block in main_blocks
        for inner in ast.walk(block)
        if isinstance(inner, ast.Name)
    }
    live = {
        name
        for name in functions
        if name not in in_main
        and (not name.startswith("_") or (name.startswith("__") and name.endswith("__")))
    } | {name for name in uses.get(None, set()) if name in functions}
    stack = list(live)
    while stack:
        for used in uses.get(stack.pop(), set()):
            if used in functions and used not in live:
                live.add(used)
                stack.append(used)
    return {name for name in functions if name not in live}


@dataclass
class _StdlibImports:
    """:func:`stdlib_imports`' walk over one module's statements: what it imports goes to
    ``found``."""

    package: str  # the package relative imports start from
    top: str | None  # the module's top-level package (None: a top-level module)
    present: set[str]
    body: list[ast.stmt]  # the module's top-level statements
    dead: set[str]  # top-level functions not followed (:func:`_dead_functions`)
    as_main: bool = False  # the module runs as __main__: its main block is followed
    found: list[str] = field(default_factory=list)

    def absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        base = self.package.split(".") if self.package else []
        if node.level - 1 > len(base):
            return None
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def imports_of(self, nodes: list[ast.stmt]) -> list[str]:
        found = []
        for node in nodes:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found += [alias.name for alias in inner.names]
                elif isinstance(inner, ast.ImportFrom) and (module := self.absolute(inner)):
                    found.append(module)
        return found

    def statements(self, nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                self.found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = self.absolute(node)
                if module:
                    self.found.append(module)
                    self.found.extend(
                        f"{module}.{alias.name}" for alias in node.names if alias.name != "*"
                    )
            elif isinstance(node, ast.If):
                main_block = _is_main_guard(node.test) and not self.as_main
                if main_block or never_on_linux(ast.unparse(node.test)):
                    self.statements(node.orelse)
                    continue
                self.statements(node.body)
                self.statements(node.orelse)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                self.try_statement(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name not in self.dead or node not in self.body:
                    self.statements(node.body)
            else:
                for field_name in ("body", "orelse", "finalbody", "handlers"):
                    child = getattr(node, field_name, None)
                    if isinstance(child, list):
                        self.statements(
                            [c for c in child if isinstance(c, ast.stmt)]
                            + [s for c in child if isinstance(c, ast.ExceptHandler) for s in c.body]
                        )
                if isinstance(node, ast.Match):
                    for case in node.cases:
                        self.statements(case.body)

    def try_statement(self, node: ast.stmt) -> None:
        """A ``try`` (or ``try``/``except*``): an ``except ImportError`` fallback to another
        top-level module is not followed when everything the ``try`` imports is present."""
        self.statements(node.body)  # type: ignore[attr-defined]
        tried = self.imports_of(node.body)  # type: ignore[attr-defined]
        all_present = bool(tried) and all(module in self.present for module in tried)
        for handler in node.handlers:  # type: ignore[attr-defined]
            own = self.top and all(
                module.split(".")[0] == self.top for module in self.imports_of(handler.body)
            )
            if own or not (all_present and _catches_import_error(handler)):
                self.statements(handler.body)
        self.statements(node.orelse)  # type: ignore[attr-defined]
        self.statements(node.finalbody)  # type: ignore[attr-defined]


def _top(key: tuple[str, str], item: Item) -> str | None:
    namespace, name = key
    if namespace == _MODULE_NAMESPACE:
        return name.split(".")[0]
    if item.kind == "data-file" and "/" in name:
        return name.split("/")[0]
    return None


def _size(item: Item) -> int:
    try:
        return item.path.stat().st_size if item.path is not None else 0
    except OSError:
        return 0


def _dist_tops(
    plan: Mapping[tuple[str, str], Item],
) -> tuple[dict[str, set[str]], dict[str, dict[str, list[str]]]]:
    """Per ``*.dist-info`` directory: the top-level names its RECORD lists, and its entry points
    (group -> module names)."""
    tops: dict[str, set[str]] = {}
    entry_points: dict[str, dict[str, list[str]]] = {}
    for (_namespace, name), item in plan.items():
        if item.kind != "dist-info-file" or item.path is None:
            continue
        directory, _, file = name.partition("/")
        if file == "RECORD":
            try:
                lines = item.path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            found = tops.setdefault(directory, set())
            for line in lines:
                path = line.split(",")[0]
                first = path.split("/")[0]
                if first.endswith((".dist-info", ".data")) or first.startswith(".."):
                    continue
                found.add(first.removesuffix(".py").split(".")[0] if "/" not in path else first)
        elif file == "entry_points.txt":
            parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
            parser.optionxform = str  # type: ignore[assignment,method-assign]
            try:
                parser.read_string(item.path.read_text(errors="replace"))
            except (OSError, configparser.Error):
                continue
            for group in parser.sections():
                if group in ("console_scripts", "gui_scripts"):
                    continue
                modules = [value.split(":")[0].strip() for value in parser[group].values()]
                entry_points.setdefault(directory, {})[group] = [m for m in modules if m]
    return tops, entry_points


def reach(
    plan: Mapping[tuple[str, str], Item],
    origin: Mapping[tuple[str, str], str],
    roots: Iterable[str],
    *,
    keep: Iterable[str] = (),
    probe: Callable[[list[str]], set[str]] | None = None,
    memo: BuildMemo = NO_CACHE,
    main: str | None = None,
) -> Reach:
    """Decides what of ``plan`` (keys as :func:`ingot.build.archive.pack._merge` makes them) to
    carry. ``origin`` says where each key comes from: ``"stdlib"``, ``"app"`` (always carried) or
    ``"env"`` (another directory of packages). ``roots`` are module names run for sure; ``keep``
    are ``--include`` patterns (dotted names, ``fnmatch``; a package's pattern keeps its
    modules). ``probe`` (see :func:`ingot.build.archive.probe.import_probe`) is given the reached top-level packages with
    native code, whose binaries may not show what they import, and returns module names they
    imported: those are reached too. ``main`` is the module run as ``__main__`` (a script, or
    ``python -m`` of a module or package): its ``if __name__ == "__main__":`` block, and what the
    functions it calls import, are followed."""
    keep = tuple(keep)
    walk = _Walk(plan, origin, memo)
    if main is not None:
        # (of a package, its __main__ runs as __main__)
        walk.mains = {main, f"{main}.__main__"}
        roots = [*roots, *walk.mains]
    for name in roots:
        walk.visit(name)
    for key in plan:
        if origin.get(key) == "app" and key[0] == _MODULE_NAMESPACE:
            walk.visit(key[1])
        if key[0] == _MODULE_NAMESPACE and keep and _matches(key[1], keep):
            walk.visit(key[1])
    starts = list(walk.queue)
    native_tops = {
        name.split(".")[0]
        for name, key in walk.modules.items()
        if origin.get(key) == "env" and plan[key].kind in EXTENSION_KINDS
    }
    probed: set[str] = set()
    while True:
        walk.drain()
        unprobed = sorted((walk.whole & native_tops) - probed)
        if probe is None or not unprobed:
            break
        probed.update(unprobed)
        for found in probe(unprobed):
            walk.edges.setdefault("", set()).add(found)
            walk.visit(found)
    decided = walk.decide(keep)
    if probe is None:
        decided.unprobed = sorted(walk.whole & native_tops)
    followed = walk.followed([*starts, ""])
    decided.whole_only = {name for name in walk.reached if name not in followed}
    decided.named_only = walk.named_only([*starts, ""])
    return decided


class _Walk:
    """The state of one :func:`reach`: the modules reached so far and the queue of those to
    read, the packages carried whole, the distributions reached through entry points."""

    def __init__(
        self,
        plan: Mapping[tuple[str, str], Item],
        origin: Mapping[tuple[str, str], str],
        memo: BuildMemo = NO_CACHE,
    ) -> None:
        self.plan = plan
        self.memo = memo
        self.origin = origin
        self.modules = {
            name: key for key in plan if (name := key[1]) and key[0] == _MODULE_NAMESPACE
        }
        self.third_party_tops = {
            name.split(".")[0] for name, key in self.modules.items() if origin.get(key) != "stdlib"
        }
        self.by_top: dict[str, list[tuple[str, str]]] = {}
        for key, item in plan.items():
            top = _top(key, item)
            if top is not None and origin.get(key) != "stdlib":
                self.by_top.setdefault(top, []).append(key)
        self.dist_tops, dist_entry_points = _dist_tops(plan)
        self.groups: dict[str, list[tuple[str, list[str]]]] = {}
        for directory, by_group in dist_entry_points.items():
            for group, targets in by_group.items():
                self.groups.setdefault(group, []).append((directory, targets))
        self.present = present_modules(plan)
        self.result = Reach()
        self.reached: set[str] = set()
        self.whole: set[str] = set()  # top-level names carried whole
        self.dists: set[str] = set()  # dist-info directories reached through entry points
        self.mains: set[str] = set()  # the modules that may run as __main__
        self.queue: list[str] = []
        #: module -> the modules it leads to, other than by carrying its package whole.
        self.edges: dict[str, set[str]] = {}
        #: module -> the modules a string of it names (not in ``edges`` unless it imports them).
        self.named: dict[str, set[str]] = {}
        self.current = ""  # the module being read ("": the roots, the probe)

    def visit(self, name: str, named: bool = False) -> None:
        if name in self.modules:
            (self.named if named else self.edges).setdefault(self.current, set()).add(name)
            if name not in self.reached:
                self.queue.append(name)

    def followed(
        self,
        starts: Iterable[str],
        named: bool = True,
        whole: bool = False,
        within: set[str] | None = None,
    ) -> set[str]:
        """The modules the edges lead to from ``starts`` (``named``: strings' too; ``whole``:
        a package other than the standard library's, once reached, with all its modules;
        ``within``: only through these)."""
        seen: set[str] = set()
        tops: set[str] = set()
        pending = list(starts)
        while pending:
            name = pending.pop()
            if name in seen or (within is not None and name not in within):
                continue
            seen.add(name)
            pending += self.edges.get(name, ())
            if named:
                pending += self.named.get(name, ())
            key, top = self.modules.get(name), name.split(".")[0]
            if whole and key and self.origin.get(key) != "stdlib" and top not in tops:
                tops.add(top)
                pending += [
                    other[1]
                    for other in self.by_top.get(top, [])
                    if other[0] == _MODULE_NAMESPACE and not in_test_package(other[1])
                ]
        return seen

    def named_only(self, starts: list[str]) -> dict[str, tuple[str, int]]:
        """:attr:`Reach.named_only`: each module that a string of a module reached otherwise
        names, with the bytes of what would not be reached without that string."""
        only = self.reached - self.followed(starts, named=False, whole=True)
        found: dict[str, tuple[str, int]] = {}
        for source in sorted(set(self.named) - only):
            for name in sorted(self.named[source] & only):
                brought = self.followed([name], whole=True, within=only)
                only -= brought
                found[name] = (source, sum(_size(self.plan[self.modules[m]]) for m in brought))
        return found

    def strings(self, source: bytes, package: str, stdlib: bool) -> None:
        imported, texts = source_strings(self.memo, source, package, stdlib)
        for name in imported:
            self.visit(name)
        for name in code_strings(self.memo, source):
            self.visit(name)  # (followed as the module's own imports are)
        for text in texts:
            if "." in text or text in self.third_party_tops:
                self.visit(text, named=True)
            for directory, targets in self.groups.get(text, ()):
                self.dists.add(directory)
                for target in targets:
                    self.visit(target)

    def drain(self) -> None:
        """Visits the modules on the queue and everything they reach."""
        while self.queue:
            name = self.queue.pop()
            if name in self.reached:
                continue
            self.reached.add(name)
            self.current = name
            for imported in CALLED_BACK.get(name, ()):
                self.visit(imported)
            key = self.modules[name]
            item = self.plan[key]
            parent = name.rpartition(".")[0]
            if parent:
                self.visit(parent)
            top = name.split(".")[0]
            if self.origin.get(key) != "stdlib" and top not in self.whole:
                self.whole.add(top)
                self.current = "\0whole"  # (not an edge of this module's)
                for other in self.by_top.get(top, []):
                    if other[0] == _MODULE_NAMESPACE and not in_test_package(other[1]):
                        self.visit(other[1])
                self.current = name
            if self.origin.get(key) == "stdlib" and name in COMPUTED_IMPORTS:
                patterns = COMPUTED_IMPORTS[name][0]
                for module in self.modules:
                    if any(fnmatchcase(module, pattern) for pattern in patterns):
                        self.visit(module)
            source = None
            package = (
                name
                if item.kind in ("package", "extension-package", "namespace-package")
                else parent
            )
            try:
                if item.kind in ("module", "package") and item.path is not None:
                    source = item.path.read_bytes()
                elif item.kind in EXTENSION_KINDS and item.path is not None:
                    image = _loaded_part(item.path.read_bytes())
                    # A third-party binary's loose names (Rust and Cython 3 pool their strings
                    # without NULs) reach only other packages: among them, common words that are
                    # also standard-library modules ("code", "this", "string") would be noise. Its
                    # standard-library imports are NUL-terminated names, in the source shipped beside
                    # it (mypyc, Cython) or seen by the import probe.
                    names = (
                        binary_names(image) - BINARY_NAMES_NOT_IMPORTS.keys()
                        if self.origin.get(key) == "stdlib"
                        else binary_names(image)
                        | {
                            found
                            for found in loose_binary_names(image)
                            if found in self.modules
                            and self.origin.get(self.modules[found]) != "stdlib"
                        }
                    )
                    for found in names:
                        self.visit(found, named=True)
                    source = item.source.read_bytes() if item.source is not None else None
            except OSError:
                source = None
            if source is None:
                continue
            is_package = item.kind in ("package", "extension-package")
            as_main = name in self.mains
            found_imports = cached_imports(self.memo, source, name, is_package, as_main)
            self.result.imports[name] = found_imports
            precise = (
                stdlib_facts(self.memo, source, name, is_package, self.present, as_main)
                if self.origin.get(key) == "stdlib" and item.kind in ("module", "package")
                else None
            )
            if precise is not None:
                not_followed = (
                    CALLBACK_IMPORTS.get(name, {}).keys() | OPTIONAL_IMPORTS.get(name, {}).keys()
                )
                for imported in precise:
                    if imported not in not_followed:
                        self.visit(imported)
            else:
                for where, imported_names in found_imports.items():
                    if where != SKIPPED:
                        for imported in imported_names:
                            self.visit(imported)
            self.strings(source, package, self.origin.get(key) == "stdlib")

    def test_suite_of(self, path: str) -> str | None:
        """The test package (``scipy.special.tests``) a data file's ``path`` lies in
        (:func:`suite_of_file`), when the plan has that package's modules; else None."""
        package = suite_of_file(path)
        return package if package in self.modules else None

    def decide(self, keep: tuple[str, ...]) -> Reach:
        """The plan keys to carry, once nothing more is reached."""
        kept_tops = set(self.whole) | {name.split(".")[0] for name in self.reached}
        for key, item in self.plan.items():
            namespace, name = key
            where = self.origin.get(key, "env")
            if where == "app" or namespace == "libraries":
                carried = True
            elif namespace == _MODULE_NAMESPACE:
                carried = name in self.reached
            elif item.kind == "dist-info-file" or item.dist is not None:
                # (files installed outside the packages go with their distribution too)
                directory = item.dist or name.split("/")[0]
                owned = self.dist_tops.get(directory)
                carried = directory in self.dists or (
                    bool(owned & kept_tops) if owned else _import_name_guess(directory) in kept_tops
                )
            else:
                top = _top(key, item)
                carried = top is None or top in kept_tops
                suite = self.test_suite_of(name) if item.kind == "data-file" else None
                if carried and suite is not None:
                    # A test suite's data (scipy/special/tests/data/boost.npz) goes with its
                    # test modules: out, unless something reaches them or --include keeps them.
                    carried = suite in self.reached or bool(keep and _matches(suite, keep))
            if carried or (keep and _matches(name, keep)):
                self.result.kept.add(key)
                continue
            group = (
                item.dist or name.split("/")[0]
                if item.kind == "dist-info-file" or item.dist is not None
                else (
                    (self.test_suite_of(name) if item.kind == "data-file" else None)
                    or _top(key, item)
                    or name
                )
            )
            if namespace == _MODULE_NAMESPACE and group in kept_tops:
                # Part of a package that is carried (click.testing of click): named as such,
                # not as the package.
                group = ".".join(name.split(".")[:2])
            count, size = self.result.left_out.get(group, (where, 0, 0))[1:]
            self.result.left_out[group] = (where, count + 1, size + _size(item))
        return self.result


def _import_name_guess(directory: str) -> str:
    """The top-level name a distribution most likely imports as, from its ``*.dist-info``
    directory, for one whose ``RECORD`` lists no module: ``Foo_Bar-1.0.dist-info`` ->
    ``foo_bar``."""
    return distribution_name(directory).lower().replace(".", "_").replace("-", "_")


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    dotted = name.replace("/", ".")
    parts = dotted.split(".")
    return any(
        fnmatchcase(".".join(parts[:i]), pattern)
        for pattern in patterns
        for i in range(1, len(parts) + 1)
    )
