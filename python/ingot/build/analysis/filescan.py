"""Finding code that builds file system paths from ``__file__`` and hands them to APIs that need
real files: what ``ingot build`` warns about, so that the user can give that package the
``files`` policy (``[tool.ingot] files = ["pkg"]``).

In an ingot executable a module's ``__file__`` is a virtual path (``/abs/app/pkg/mod.py``) that
does not exist on disk: ``open(os.path.join(os.path.dirname(__file__), "data.json"))`` fails
there, ``pkgutil.get_data`` and ``importlib.resources`` work.

    from ingot.build.analysis.filescan import format_finding, scan_tree
    for finding in scan_tree("build/site", ["certifi", "jinja2"]):
        print(format_finding(finding))

The scan is static (:mod:`ast`; nothing is imported or run) and heuristic. Per module, class and
function scope it tracks the names whose value is built from ``__file__`` ("tainted"): a path
expression (``os.path.dirname``/``abspath``/``join``..., ``pathlib.Path(...)``, ``.parent``,
``/``, ``+``, f-strings, ``%``, ``str.format``, subscripts) of ``__file__``, ``__path__``,
``__spec__.origin``, ``mod.__file__``, ``find_spec(...).origin`` or ``inspect.getfile(...)``,
or of a tainted name. Taint flows through assignments (augmented and annotated ones, ``for`` and
``with`` targets, parameter defaults), module constants used in functions, ``self.attr`` and
class attributes within a class, and functions of the same module that return a tainted value.
Within a scope, a binding taints the uses on or after its line. Taint does not flow across
modules or through other calls. The scan reports the calls that need a real file system and get a
tainted argument (see :data:`ingot.build.analysis.path_sinks.CALL_SINKS`), and ``pathlib`` methods called on a tainted path (see
:data:`ingot.build.analysis.path_sinks.PATH_METHOD_SINKS`). It skips the code that cannot run when the package is imported on
the target Python: branches of ``if sys.version_info ...`` that are dead there, and
``if __name__ == "__main__":`` blocks.

A file that cannot be read or parsed (a syntax error, a bad encoding, NUL bytes, a grammar of
another Python version) gives no findings: the scan never fails a build.
"""

from __future__ import annotations

import ast
import importlib.util
import operator
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingot.build.analysis.path_sinks import (
    CALL_SINKS,
    MODULE_PATH_NAMES,
    NOT_PATH_ATTRIBUTES,
    PATH_FUNCTIONS,
    PATH_METHOD_SINKS,
    PATH_METHODS,
    SOURCE_FUNCTIONS,
)
from ingot.errors import CollectError

__all__ = [
    "Finding",
    "format_finding",
    "scan_source",
    "scan_tree",
]

_MARKERS = (
    b"__file__",
    b"__path__",
    b"__cached__",
    b"__spec__",
    b"find_spec",
    b"getfile(",
    b"getsourcefile(",
    b"getabsfile(",
)
_SNIPPET_LENGTH = 100
_FIELDS: dict[type, tuple[str, ...]] = {}  # node type: its fields that may hold nodes
_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
# Modules known under another name: posixpath.join is os.path.join.
_ALIASES = (
    ("posixpath", "os.path"),
    ("ntpath", "os.path"),
    ("pathlib._local", "pathlib"),
    ("builtins", ""),
)


@dataclass(frozen=True)
class Finding:
    """A call at ``path:line`` (``path`` as given to :func:`scan_source`, relative to the root for
    :func:`scan_tree`) in top-level package ``package`` that needs a real file and gets a path
    built from ``__file__``: ``call`` is what is called (``open``, ``os.listdir``,
    ``pathlib.Path.read_text``), ``snippet`` the source line, stripped and shortened."""

    path: str
    line: int
    package: str
    call: str
    snippet: str


def format_finding(finding: Finding) -> str:
    """The warning ``ingot build`` prints for ``finding``."""
    return (
        f"warning: {finding.path}:{finding.line}: {finding.call}() of a path built from "
        f"__file__; if `{finding.package}` needs real files, add it to [tool.ingot] files"
    )


def scan_source(
    source: bytes | str, path: str, package: str, *, python_version: tuple[int, int] | None = None
) -> list[Finding]:
    """The findings in one module's ``source`` (bytes are decoded as Python does: PEP 263
    declaration, else UTF-8), sorted by line; [] if it cannot be decoded or parsed.

    ``python_version`` (default: the running interpreter's) decides which branches of
    ``if sys.version_info ...`` are dead."""
    marked = source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")
    if not any(marker in marked for marker in _MARKERS):
        return []
    try:
        text = (
            importlib.util.decode_source(source)
            if isinstance(source, bytes)
            else source.replace("\r\n", "\n").replace("\r", "\n")
        )
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, UnicodeError, LookupError, RecursionError, MemoryError):
        return []
    version = tuple(python_version or sys.version_info[:2])[:2]
    try:
        calls = _Module(tree, version).findings()
    except RecursionError:
        return []
    lines = text.split("\n")
    findings = set()
    for node, call in calls:
        snippet = lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else ""
        if len(snippet) > _SNIPPET_LENGTH:
            snippet = snippet[: _SNIPPET_LENGTH - 3] + "..."
        findings.add(Finding(path, node.lineno, package, call, snippet))
    return sorted(findings, key=lambda f: (f.line, f.call, f.snippet))


def scan_tree(
    root: str | os.PathLike[str],
    packages: Iterable[str],
    *,
    python_version: tuple[int, int] | None = None,
    scan: Callable[[bytes, str, str], list[Finding]] | None = None,
) -> list[Finding]:
    """The findings in every ``.py`` file of ``root/<package>/`` (recursively, ``__pycache__``
    left out) and in ``root/<package>.py``, for each of ``packages`` (top-level import names),
    sorted by path and line. A package that is not under ``root``, or a file that cannot be read,
    is skipped. ``scan(source, path, package)`` stands for :func:`scan_source` (the build's
    cached one) when given."""
    root = Path(root)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a directory"
        raise CollectError(
            f"cannot scan {root} for uses of __file__: it {what}",
            hint="give the directory the packages were collected from",
        )
    findings: list[Finding] = []
    for package in sorted(set(packages)):
        if not package.isidentifier():
            raise CollectError(
                f"cannot scan package {package!r} of {root}: not a top-level import name",
                hint="give names like 'certifi', not paths or dotted names",
            )
        files = []
        if (root / f"{package}.py").is_file():
            files.append(f"{package}.py")
        for directory, subdirectories, names in os.walk(root / package):
            subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
            relative = Path(directory).relative_to(root).as_posix()
            files += [f"{relative}/{name}" for name in sorted(names) if name.endswith(".py")]
        for relative in files:
            try:
                source = (root / relative).read_bytes()
            except OSError:
                continue
            findings += (
                scan(source, relative, package)
                if scan is not None
                else scan_source(source, relative, package, python_version=python_version)
            )
    return sorted(findings, key=lambda f: (f.path, f.line, f.call, f.snippet))


class _Scope:
    """A module, class or function body: the names it binds, those of them that are tainted, its
    assignments, calls and (functions) returns."""

    def __init__(
        self,
        kind: str,
        parent: _Scope | None,
        klass: _Scope | None = None,
        self_name: str | None = None,
    ) -> None:
        self.kind, self.parent, self.klass, self.self_name = kind, parent, klass, self_name
        self.local: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.tainted: dict[str, int] = {}  # name: the first line that taints it
        self.attributes: set[str] = set()  # classes: tainted ``self.<name>``
        self.defs: dict[str, list[_Scope]] = {}  # functions defined here, by name
        self.classes: dict[str, _Scope] = {}  # classes defined here, by name
        # (targets, value, the scope value is evaluated in, line: the binding's effect is seen
        # from there on in this scope)
        self.bindings: list[tuple[list[ast.expr], ast.expr, _Scope, int]] = []
        self.calls: list[ast.Call] = []
        self.returns: list[ast.expr] = []
        self.returns_tainted = False


class _Module:
    """One parsed module: its scopes, built in one walk, then tainted to a fixed point."""

    def __init__(self, tree: ast.Module, version: tuple[int, ...]) -> None:
        self.version = version
        self.imports: dict[str, str] = {}
        self.module = _Scope("module", None)
        self.scopes = [self.module]
        self._build(tree)

    # Building the scopes.

    def _build(self, tree: ast.Module) -> None:
        stack: list[tuple[Any, _Scope]] = [(node, self.module) for node in tree.body]
        fields = _FIELDS
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is not ast.Load:
                    scope.local.add(node.id)
                continue
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                stack += self._function(node, scope)
                continue
            if kind is ast.ClassDef:
                scope.local.add(node.name)
                klass = _Scope("class", scope)
                scope.classes[node.name] = klass
                self.scopes.append(klass)
                stack += [(child, scope) for child in node.decorator_list + node.bases]
                stack += [(keyword.value, scope) for keyword in node.keywords]
                stack += [(child, klass) for child in node.body]
                continue
            if kind is ast.If:
                live = self._static_test(node.test)
                if live is not None:
                    stack += [(child, scope) for child in (node.body if live else node.orelse)]
                    continue
            elif kind is ast.Call:
                scope.calls.append(node)
            elif kind is ast.Assign:
                scope.bindings.append((node.targets, node.value, scope, node.lineno))
            elif kind is ast.AugAssign or kind is ast.AnnAssign or kind is ast.NamedExpr:
                if node.value is not None:
                    scope.bindings.append(([node.target], node.value, scope, node.lineno))
            elif kind is ast.For or kind is ast.AsyncFor:
                scope.bindings.append(([node.target], node.iter, scope, node.lineno))
            elif kind is ast.comprehension:  # may come after its use: [f(x) for x in ...]
                scope.bindings.append(([node.target], node.iter, scope, 0))
            elif kind is ast.withitem:
                if node.optional_vars is not None:
                    scope.bindings.append(
                        ([node.optional_vars], node.context_expr, scope, node.optional_vars.lineno)
                    )
            elif kind is ast.Return:
                if node.value is not None:
                    scope.returns.append(node.value)
            elif kind is ast.Global:
                scope.declared_global.update(node.names)
            elif kind is ast.Nonlocal:
                scope.declared_nonlocal.update(node.names)
            elif kind is ast.Import or kind is ast.ImportFrom:
                self._import(node, scope)
                continue
            elif kind is ast.ExceptHandler and node.name:
                scope.local.add(node.name)
            # The children, but not constants and contexts, which hold nothing of interest.
            names = fields.get(kind)
            if names is None:
                names = fields[kind] = tuple(name for name in kind._fields if name != "ctx")
            for name in names:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack += [
                        (child, scope)
                        for child in value
                        if isinstance(child, ast.AST) and type(child) is not ast.Constant
                    ]
                elif isinstance(value, ast.AST) and type(value) is not ast.Constant:
                    stack.append((value, scope))

    def _function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope
    ) -> list[tuple[ast.AST, _Scope]]:
        """A new scope for function ``node``; what to walk next, in which scope."""
        scope.local.add(node.name)
        arguments = node.args
        positional = arguments.posonlyargs + arguments.args
        self_name = positional[0].arg if scope.kind == "class" and positional else None
        function = _Scope("function", scope, scope if scope.kind == "class" else None, self_name)
        scope.defs.setdefault(node.name, []).append(function)
        self.scopes.append(function)
        every = (
            positional
            + arguments.kwonlyargs
            + [a for a in (arguments.vararg, arguments.kwarg) if a]
        )
        function.local.update(argument.arg for argument in every)
        defaults = list(
            zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults)
        )
        defaults += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d]
        for argument, default in defaults:
            function.bindings.append(([ast.Name(argument.arg, ast.Store())], default, scope, 0))
        outer = [
            *node.decorator_list,
            *arguments.defaults,
            *(d for d in arguments.kw_defaults if d),
        ]
        return [(child, scope) for child in outer] + [(child, function) for child in node.body]

    def _import(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                bound = alias.asname or alias.name.partition(".")[0]
                self.imports[bound] = alias.name if alias.asname else bound
            elif alias.name != "*":
                bound = alias.asname or alias.name
                module = "." * node.level + (node.module or "")
                self.imports[bound] = f"{module}.{alias.name}"
            else:
                continue
            scope.local.add(bound)

    def _static_test(self, test: ast.expr) -> bool | None:
        """The value of ``test`` on the target Python if it compares ``sys.version_info`` (or
        its ``[0]``, ``[1]``, ``[:n]``, ``.major``, ``.minor``) with a constant; else None."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        sides = (left, right)
        if any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides) and any(
            isinstance(side, ast.Constant) and side.value == "__main__" for side in sides
        ):
            # if __name__ == "__main__": a module run as a script, not a package imported.
            return {ast.Eq: False, ast.NotEq: True}.get(type(op))
        known: Any = None  # None: the whole sys.version_info, of which (major, minor) is known
        if isinstance(left, ast.Subscript):
            index, left = left.slice, left.value
            if (
                isinstance(index, ast.Constant)
                and isinstance(index.value, int)
                and index.value in (0, 1)
            ):
                known = self.version[index.value]
            elif (
                isinstance(index, ast.Slice)
                and index.lower is None
                and index.step is None
                and isinstance(index.upper, ast.Constant)
                and isinstance(index.upper.value, int)
                and index.upper.value in (1, 2)
            ):
                known = self.version[: index.upper.value]
            else:
                return None
        elif isinstance(left, ast.Attribute) and left.attr in ("major", "minor"):
            known = self.version[0 if left.attr == "major" else 1]
            left = left.value
        if self._qualified(left) != "sys.version_info":
            return None
        try:
            constant = ast.literal_eval(right)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        compare = _COMPARISONS.get(type(op))
        if compare is None:
            return None
        if known is None:
            if not (
                isinstance(constant, tuple)
                and constant
                and all(type(part) is int for part in constant)
            ):
                return None
            prefix = self.version[: len(constant)]
            if prefix == constant[:2] and len(constant) > 2:
                return None  # (3, 11) against (3, 11, 2): depends on the micro version
            # sys.version_info has more than two items: when its (major, minor) starts like
            # ``constant``, it is greater.
            difference = (prefix > constant[:2]) - (prefix < constant[:2]) or 1
            return compare(difference, 0)
        if type(known) is not type(constant) or (
            isinstance(constant, tuple) and not all(type(part) is int for part in constant)
        ):
            return None
        return compare(known, constant)

    # Taint.

    def findings(self) -> list[tuple[ast.Call, str]]:
        """(call, what is called) for every call that needs a real file and gets a tainted path."""
        changed = True
        while changed:
            changed = False
            for scope in self.scopes:
                for targets, value, where, line in scope.bindings:
                    if self._tainted(value, where):
                        for target in targets:
                            changed |= self._bind(target, value, scope, where, line)
                if (
                    scope.kind == "function"
                    and not scope.returns_tainted
                    and any(self._tainted(value, scope) for value in scope.returns)
                ):
                    scope.returns_tainted = changed = True
        found = []
        for scope in self.scopes:
            for call in scope.calls:
                sink = self._sink(call, scope)
                if sink:
                    found.append((call, sink))
        return found

    def _bind(
        self, target: ast.expr, value: ast.expr, scope: _Scope, where: _Scope, line: int
    ) -> bool:
        """Taints what ``target`` binds in ``scope`` from ``line`` on; whether that is new."""
        if isinstance(target, (ast.Tuple, ast.List)):
            if (
                isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
            ):
                pairs = [(t, v) for t, v in zip(target.elts, value.elts) if self._tainted(v, where)]
            else:
                pairs = [(t, value) for t in target.elts]
            changed = False
            for element, element_value in pairs:
                changed |= self._bind(element, element_value, scope, where, line)
            return changed
        if isinstance(target, ast.Starred):
            return self._bind(target.value, value, scope, where, line)
        if isinstance(target, ast.Name):
            owner = scope
            if target.id in scope.declared_global:
                owner, line = self.module, 0  # seen whenever the function has run
            elif target.id in scope.declared_nonlocal:
                owner, line = scope.parent or self.module, 0
                while owner.parent is not None and (
                    owner.kind == "class" or target.id not in owner.local
                ):
                    owner = owner.parent
            if owner.tainted.get(target.id, line + 1) <= line:
                return False
            owner.tainted[target.id] = line
            return True
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            method = self._method_of(target.value.id, scope)
            klass = method.klass if method is not None else None
            if klass is not None and target.attr not in klass.attributes:
                klass.attributes.add(target.attr)
                return True
        return False

    def _method_of(self, name: str, scope: _Scope | None) -> _Scope | None:
        """The method (``scope`` or one it is nested in) whose ``self`` parameter is ``name``."""
        while scope is not None and scope.kind == "function":
            if scope.self_name is not None:
                return scope if scope.self_name == name else None
            if name in scope.local:
                return None
            scope = scope.parent
        return None

    def _class_of(self, name: str, scope: _Scope | None) -> _Scope | None:
        """The class ``name`` is, read in ``scope``: a method's ``self`` (or ``cls``) or the name
        of a class defined in an enclosing scope; None if neither."""
        method = self._method_of(name, scope)
        if method is not None:
            return method.klass
        first = True
        while scope is not None:
            if first or scope.kind != "class":
                if name in scope.classes:
                    return scope.classes[name]
                if name in scope.local:
                    return None
            first = False
            scope = scope.parent
        return None

    def _lookup(self, name: str, scope: _Scope | None, line: int) -> bool:
        """Whether ``name``, read in ``scope`` at ``line``, is tainted: in ``scope`` itself, by
        a binding on or before ``line`` (loops aside, a later one has not run yet); in an
        enclosing scope, by any (a function runs after the module is imported)."""
        first = True
        while scope is not None:
            if not first and scope.kind == "class":  # class names are not seen by its methods
                scope = scope.parent
                continue
            if name in scope.declared_global:
                return name in self.module.tainted
            if name in scope.tainted and (not first or scope.tainted[name] <= line):
                return True
            first = False
            if name in scope.local and name not in scope.declared_nonlocal:
                return False
            scope = scope.parent
        return False

    def _defs(self, name: str, scope: _Scope | None) -> list[_Scope]:
        """The functions ``name`` may be, read in ``scope``."""
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and name in scope.defs:
                return scope.defs[name]
            if (first or scope.kind != "class") and name in scope.local:
                return []
            first = False
            scope = scope.parent
        return []

    def _tainted(self, node: ast.expr, scope: _Scope) -> bool:
        """Whether expression ``node``, evaluated in ``scope``, is a path built from
        ``__file__``."""
        if isinstance(node, ast.Name):
            return node.id in MODULE_PATH_NAMES or self._lookup(node.id, scope, node.lineno)
        if isinstance(node, ast.Attribute):
            if node.attr in MODULE_PATH_NAMES:
                return True
            value = node.value
            if node.attr == "origin" and (
                (isinstance(value, ast.Name) and value.id == "__spec__")
                or (isinstance(value, ast.Attribute) and value.attr == "__spec__")
                or (
                    isinstance(value, ast.Call)
                    and (self._qualified(value.func) or "").endswith("find_spec")
                )
            ):
                return True
            if isinstance(value, ast.Name):
                klass = self._class_of(value.id, scope)
                if klass is not None:
                    return (
                        node.attr in klass.attributes
                        or node.attr in klass.tainted
                        or any(f.returns_tainted for f in klass.defs.get(node.attr, ()))
                    )
            return node.attr not in NOT_PATH_ATTRIBUTES and self._tainted(value, scope)
        if isinstance(node, ast.Call):
            return self._call_tainted(node, scope)
        if isinstance(node, ast.BinOp):
            return self._tainted(node.left, scope) or self._tainted(node.right, scope)
        if isinstance(node, ast.JoinedStr):
            return any(
                self._tainted(part.value, scope)
                for part in node.values
                if isinstance(part, ast.FormattedValue)
            )
        if isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr, ast.Await)):
            return self._tainted(node.value, scope)
        if isinstance(node, ast.IfExp):
            return self._tainted(node.body, scope) or self._tainted(node.orelse, scope)
        if isinstance(node, ast.BoolOp):
            return any(self._tainted(value, scope) for value in node.values)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self._tainted(element, scope) for element in node.elts)
        if isinstance(node, ast.Dict):
            return any(self._tainted(value, scope) for value in node.values)
        return False

    def _arguments_tainted(self, call: ast.Call, scope: _Scope) -> bool:
        return any(self._tainted(argument, scope) for argument in call.args) or any(
            self._tainted(keyword.value, scope) for keyword in call.keywords
        )

    def _call_tainted(self, call: ast.Call, scope: _Scope) -> bool:
        func = call.func
        qualified = self._qualified(func, scope)
        if qualified in SOURCE_FUNCTIONS:
            return True
        if qualified in PATH_FUNCTIONS:
            return self._arguments_tainted(call, scope)
        if isinstance(func, ast.Name):
            return any(f.returns_tainted for f in self._defs(func.id, scope))
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name):
                klass = self._class_of(func.value.id, scope)
                if klass is not None:
                    return any(f.returns_tainted for f in klass.defs.get(func.attr, ()))
            if func.attr in PATH_METHODS:
                return self._tainted(func.value, scope)
            if func.attr in ("join", "format"):  # "/".join(...), "{}/x".format(...)
                return self._arguments_tainted(call, scope)
        return False

    def _sink(self, call: ast.Call, scope: _Scope) -> str | None:
        """What ``call`` calls, if it needs a real file and gets a tainted path."""
        func = call.func
        qualified = self._qualified(func, scope)
        if qualified in CALL_SINKS and self._arguments_tainted(call, scope):
            return qualified
        if (
            isinstance(func, ast.Attribute)
            and func.attr in PATH_METHOD_SINKS
            and self._tainted(func.value, scope)
        ):
            return f"pathlib.Path.{func.attr}"
        return None

    def _qualified(self, node: ast.expr, scope: _Scope | None = None) -> str | None:
        """The dotted name ``node`` refers to, through the module's imports (``osp.join`` is
        ``os.path.join``); a name the module binds otherwise is None, a builtin itself."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.imports:
            base = self.imports[node.id]
        elif node.id in self.module.local or (scope is not None and self._bound(node.id, scope)):
            return None
        else:
            base = node.id
        name = ".".join([base, *reversed(parts)])
        for module, canonical in _ALIASES:
            if name.startswith(module + "."):
                return f"{canonical}{name[len(module) :]}".lstrip(".")
        return name

    def _bound(self, name: str, scope: _Scope | None) -> bool:
        while scope is not None:
            if name in scope.local:
                return True
            scope = scope.parent
        return False
