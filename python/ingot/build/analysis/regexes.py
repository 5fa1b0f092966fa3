"""Regular expressions compiled at build time.

Python compiles a regular expression in pure Python (``re._parser`` and ``re._compiler``, or
``sre_parse``/``sre_compile`` on 3.10) before handing the result to the C engine,
``_sre.compile``. Modules compile most of their patterns at import time: ``http --version``
spends ~11 ms of its ~120 ms compiling 118 patterns, black ~6 ms compiling 49. That work is the
same on every start, and the answer depends only on the pattern, the flags and the Python version.

``ingot pack``/``ingot build`` find the patterns the collected modules compile (a static scan of
their source: :func:`patterns_in_source`), compile each with the build interpreter (which is the
launcher's Python; the archive's ``re`` is this interpreter's own) and store the arguments of its
``_sre.compile`` call in the archive, one entry per pattern (:func:`precompiled_entries`). At run
time the importer wraps the ``compile`` function of ``re._compiler`` (``sre_compile`` on 3.10)
when that module is imported: a pattern found in the table skips the Python compiler and goes
straight to ``_sre.compile``, which validates the code it is given; any other pattern takes the
usual path. The archive layout (entry names, value format) is in docs/format.md, "Precompiled
regular expressions".

The scan only has to be useful, not complete or exact: a pattern it misses is compiled as usual
at run time, and a pattern it finds that the program never compiles costs archive space only.
It understands ``re.compile(P, F)``, ``re.match/search/fullmatch/sub/subn/split/findall/
finditer(P, ..., F)`` (``re`` under any alias, or these functions imported from ``re``), where P
and F are constants, module-level names bound once to constants, and what ``+``, ``%``, ``|``,
f-strings, ``str.format`` and ``str.join`` make of constants.
"""

from __future__ import annotations

import ast
import bisect
import marshal
import re
import string
import sys
import warnings
from collections.abc import Callable, Hashable, Iterable
from types import ModuleType
from typing import AnyStr, NoReturn

from ingot._ingot import REGEX_DIR, REGEX_MAGIC, REGEX_MODULE, regex_entry_name, regex_key

__all__ = [
    "ENTRY_PREFIX",
    "MAGIC_ENTRY",
    "MODULE_ENTRY",
    "compile_arguments",
    "entry_name",
    "patterns_in_source",
    "precompiled_entries",
]

#: Directory of the table's entries in the archive's file name space.
ENTRY_PREFIX = REGEX_DIR
#: The entry holding ``_sre.MAGIC`` of the build interpreter (decimal, ASCII): the importer uses
#: the table only if its ``_sre`` has the same.
MAGIC_ENTRY = REGEX_MAGIC
#: The entry naming the module whose ``compile`` the table serves: this interpreter's
#: regular-expression compiler (the importer names no module; the archive does).
MODULE_ENTRY = REGEX_MODULE

#: Function -> position of its ``flags`` argument.
_FUNCTIONS = {
    "compile": 1,
    "match": 2,
    "fullmatch": 2,
    "search": 2,
    "findall": 2,
    "finditer": 2,
    "split": 3,
    "sub": 4,
    "subn": 4,
}
#: Longest pattern (characters or bytes) the scan builds or compiles.
_MAX_LENGTH = 65536


#: Names bound where an expression is (a class body, a comprehension): name -> value.
_ScopeDict = dict[str, object]


class _Unknown(Exception):
    """An expression the scan cannot evaluate."""


def _compiler() -> ModuleType:
    if sys.version_info >= (3, 11):
        import re._compiler as compiler
    else:
        import sre_compile as compiler
    return compiler


def key(pattern: str | bytes, flags: int) -> bytes:
    """What the table is keyed by: the pattern's type, the flags as given to ``compile`` and the
    pattern (UTF-8 for str). A pattern with lone surrogates has a key (so that nothing that asks
    for one fails: matplotlib's fontTools has such a pattern) but is never in the table
    (:func:`compile_arguments` leaves it out). Defined once, by the importer that looks patterns
    up at run time (``key`` in crates/ingot-importer/src/regexes.rs): this calls it."""
    return regex_key(pattern, flags)


def entry_name(pattern: str | bytes, flags: int) -> str:
    """The archive entry of a pattern: ``__ingot__/re/`` and the XXH3-64 of its :func:`key`, as 16
    lowercase hex digits (the importer's definition, as for :func:`key`)."""
    return regex_entry_name(pattern, flags)


class _Scanner:
    def __init__(self) -> None:
        self.re_names: set[str] = set()  # names bound to the re module
        self.functions: dict[str, str] = {}  # local name -> re function
        self.flag_names: dict[str, int] = {}  # local name -> re flag value
        self.constants: dict[str, object] = {}

    def note_import(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "re":
                    self.re_names.add(alias.asname or "re")
        elif isinstance(node, ast.ImportFrom) and node.module == "re" and not node.level:
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name in _FUNCTIONS:
                    self.functions[local] = alias.name
                elif isinstance(getattr(re, alias.name, None), int):
                    self.flag_names[local] = int(getattr(re, alias.name))

    def function_of(self, call: ast.Call) -> str | None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.re_names
            and func.attr in _FUNCTIONS
        ):
            return func.attr
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        return None

    # -- constant evaluation --------------------------------------------------------------------

    def evaluate(self, node: ast.AST, scope: _ScopeDict | None = None) -> object:
        """The value of ``node`` if it is made of constants; ``scope`` holds names bound where it
        is (a class body, a comprehension) over the module's. Raises _Unknown."""
        value = self._evaluate(node, scope or {})
        if isinstance(value, (str, bytes, list, tuple, dict)) and len(value) > _MAX_LENGTH:
            raise _Unknown
        return value

    def _evaluate(self, node: ast.AST, scope: _ScopeDict) -> object:
        def evaluate(child: ast.AST) -> object:
            return self.evaluate(child, scope)

        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (str, bytes, int))
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.Name):
            for names in (scope, self.constants, self.flag_names):
                if node.id in names:
                    return names[node.id]
            raise _Unknown
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.re_names
        ):
            value = getattr(re, node.attr, None)
            if isinstance(value, int):
                return int(value)
            raise _Unknown
        if isinstance(node, ast.Tuple):
            return tuple(evaluate(element) for element in node.elts)
        if isinstance(node, ast.List):
            return [evaluate(element) for element in node.elts]
        if isinstance(node, ast.Dict):
            keys = [key for key in node.keys if key is not None]
            if len(keys) != len(node.keys):  # a `**mapping`
                raise _Unknown
            pairs = [(evaluate(key), evaluate(value)) for key, value in zip(keys, node.values)]
            if not all(isinstance(key, Hashable) for key, _ in pairs):
                raise _Unknown
            return dict(pairs)
        if isinstance(node, ast.BinOp):
            return _binary(node.op, evaluate(node.left), evaluate(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = evaluate(node.operand)
            return -value if type(value) is int else _unknown()
        if isinstance(node, ast.Subscript):
            value, index = evaluate(node.value), node.slice
            if isinstance(index, ast.Slice) and index.step is None:
                bounds = [
                    None if part is None else evaluate(part) for part in (index.lower, index.upper)
                ]
                lower, upper = bounds
                if (
                    isinstance(value, (str, bytes, list, tuple))
                    and (lower is None or type(lower) is int)
                    and (upper is None or type(upper) is int)
                ):
                    return value[lower:upper]
                raise _Unknown
            key = evaluate(index)
            try:
                if isinstance(value, dict):
                    return value[key]
                if isinstance(value, (str, bytes, list, tuple)) and type(key) is int:
                    return value[key]
            except (IndexError, KeyError, TypeError):
                raise _Unknown from None
            raise _Unknown
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            generator = node.generators[0]
            items = evaluate(generator.iter)
            if (
                generator.ifs
                or generator.is_async
                or not isinstance(generator.target, ast.Name)
                or not isinstance(items, (list, tuple, str))
                or len(items) > 1000
            ):
                raise _Unknown
            return [self.evaluate(node.elt, {**scope, generator.target.id: item}) for item in items]
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    parts.append(part.value)
                elif (
                    isinstance(part, ast.FormattedValue)
                    and part.conversion == -1
                    and part.format_spec is None
                ):
                    value = evaluate(part.value)
                    if not isinstance(value, (str, int)):
                        raise _Unknown
                    parts.append(str(value))
                else:
                    raise _Unknown
            return evaluate(ast.Constant("".join(parts)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self._method(node, evaluate)
        raise _Unknown

    def _method(self, node: ast.Call, evaluate: Callable[[ast.AST], object]) -> object:
        """``re.escape(C)``, ``C.format(...)``, ``C.join([...])``, ``C.replace(A, B)``."""
        func = node.func
        if not isinstance(func, ast.Attribute):
            raise _Unknown
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise _Unknown
        method = func.attr
        args = [evaluate(arg) for arg in node.args]
        keywords = {str(keyword.arg): evaluate(keyword.value) for keyword in node.keywords}
        if isinstance(func.value, ast.Name) and func.value.id in self.re_names:
            if method == "escape" and len(args) == 1 and not keywords:
                if isinstance(args[0], str):
                    return evaluate(ast.Constant(re.escape(args[0])))
                if isinstance(args[0], bytes):
                    return evaluate(ast.Constant(re.escape(args[0])))
            raise _Unknown
        receiver = evaluate(func.value)
        if isinstance(receiver, str) and method == "format":
            return _format(receiver, args, keywords)
        if isinstance(receiver, (str, bytes)) and not keywords:
            if (
                method == "join"
                and len(args) == 1
                and isinstance(args[0], (list, tuple))
                and all(type(part) is type(receiver) for part in args[0])
            ):
                return evaluate(ast.Constant(receiver.join(args[0])))
            if method == "replace" and len(args) == 2:
                old, new = args
                if isinstance(receiver, str) and isinstance(old, str) and isinstance(new, str):
                    return _replace(receiver, old, new)
                if isinstance(receiver, bytes) and type(old) is bytes and type(new) is bytes:
                    return _replace(receiver, old, new)
        raise _Unknown


def _unknown() -> NoReturn:
    raise _Unknown


def _concat(left: AnyStr, right: AnyStr) -> AnyStr:
    if type(left) is not type(right) or len(left) + len(right) > _MAX_LENGTH:
        raise _Unknown
    return left + right


def _replace(text: AnyStr, old: AnyStr, new: AnyStr) -> AnyStr:
    if not old or len(text) * max(1, len(new)) > _MAX_LENGTH:
        raise _Unknown
    return text.replace(old, new)


def _binary(op: ast.operator, left: object, right: object) -> object:
    if isinstance(op, ast.Add):
        if isinstance(left, str) and type(right) is str:
            return _concat(left, right)
        if isinstance(left, bytes) and type(right) is bytes:
            return _concat(left, right)
    if isinstance(op, ast.BitOr) and type(left) is int and type(right) is int:
        return left | right
    if (
        isinstance(op, ast.Mult)
        and isinstance(left, (str, bytes))
        and type(right) is int
        and right >= 0
        and len(left) * right <= _MAX_LENGTH
    ):
        return left * right
    if isinstance(op, ast.Mod) and isinstance(left, str):
        # Only plain conversions: a width or precision could ask for any amount of memory.
        if re.search(r"%(?!(?:\([A-Za-z_]\w*\))?[sdr%])", left):
            raise _Unknown
        args = (
            right.values()
            if isinstance(right, dict)
            else right
            if isinstance(right, tuple)
            else (right,)
        )
        if not all(isinstance(arg, (str, int)) for arg in args):
            raise _Unknown
        try:
            value = left % right
        except (TypeError, ValueError, KeyError):
            raise _Unknown from None
        if len(value) > _MAX_LENGTH:
            raise _Unknown
        return value
    raise _Unknown


def _format(template: str, args: list[object], keywords: dict[str, object]) -> str:
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        raise _Unknown from None
    for _, name, spec, conversion in fields:
        if name is not None and (
            spec or conversion or not (name == "" or name.isdigit() or name.isidentifier())
        ):
            raise _Unknown
    if not all(isinstance(arg, (str, int)) for arg in [*args, *keywords.values()]):
        raise _Unknown
    try:
        value = template.format(*args, **keywords)
    except (IndexError, KeyError, ValueError):
        raise _Unknown from None
    if len(value) > _MAX_LENGTH:
        raise _Unknown
    return value


#: Lines that may import ``re`` (a cheap filter before parsing; the parse decides).
_IMPORT_LINE = re.compile(rb"^[ \t]*(?:import[ \t][^\n]*\bre\b|from[ \t]+re[ \t]+import\b)", re.M)


def _lines_between(lines: list[int], start: int, end: int) -> bool:
    index = bisect.bisect_left(lines, start)
    return index < len(lines) and lines[index] <= end


def patterns_in_source(source: str | bytes) -> set[tuple[str | bytes, int]]:
    """The (pattern, flags) pairs a module's source visibly compiles with ``re``. Empty for source
    that does not parse or never imports ``re``.

    Walking a whole syntax tree in Python costs more than parsing it, so only the statements
    imports and calls can be on are visited: lines that import ``re`` and lines that name one of
    its functions after the names the imports bind are found in the text first."""
    data = source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")
    if not _IMPORT_LINE.search(data):
        return set()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the scanned code: not ours to say
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    scanner = _Scanner()
    text_lines = data.splitlines()
    import_lines = sorted(
        {data.count(b"\n", 0, match.start()) + 1 for match in _IMPORT_LINE.finditer(data)}
    )
    # An import statement can span lines; a statement is visited if it covers one of them.
    for node in _nodes_on(tree, import_lines):
        scanner.note_import(node)
    if not scanner.re_names and not scanner.functions:
        return set()
    names = [
        rb"\b"
        + re.escape(name.encode())
        + rb"\s*\.\s*(?:"
        + b"|".join(n.encode() for n in _FUNCTIONS)
        + rb")\b"
        for name in scanner.re_names
    ]
    names += [rb"\b" + re.escape(name.encode()) + rb"\s*\(" for name in scanner.functions]
    call_text = re.compile(b"|".join(names))
    call_lines = [number for number, line in enumerate(text_lines, 1) if call_text.search(line)]
    if not call_lines:
        return set()
    # Module-level names bound once, in order, to something the scan can evaluate. (A name
    # rebound inside a function may make the scan find a pattern the module never compiles:
    # that costs an unused table entry, nothing else.)
    bound: dict[str, int] = {}
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For))
            else []
        )
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    bound[name.id] = bound.get(name.id, 0) + 1
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and bound.get(node.targets[0].id) == 1
        ):
            try:
                scanner.constants[node.targets[0].id] = scanner.evaluate(node.value)
            except (_Unknown, RecursionError):
                pass
    found: set[tuple[str | bytes, int]] = set()
    for call in _nodes_on(tree, call_lines):
        if isinstance(call, ast.Call):
            _add_call(scanner, call, {}, found)
    # Class bodies run top to bottom once, in a namespace of their own: evaluate their calls with
    # the names bound before them (textwrap.TextWrapper builds its patterns that way).
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _lines_between(
            call_lines, node.lineno, node.end_lineno or node.lineno
        ):
            scope: _ScopeDict = {}
            for statement in node.body:
                for call in _calls_outside_functions(statement):
                    _add_call(scanner, call, scope, found)
                if (
                    isinstance(statement, ast.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                ):
                    try:
                        scope[statement.targets[0].id] = scanner.evaluate(statement.value, scope)
                    except (_Unknown, RecursionError):
                        scope.pop(statement.targets[0].id, None)
                elif isinstance(statement, ast.Delete):
                    for target in statement.targets:
                        if isinstance(target, ast.Name):
                            scope.pop(target.id, None)
    return found


def _add_call(
    scanner: _Scanner, call: ast.Call, scope: _ScopeDict, found: set[tuple[str | bytes, int]]
) -> None:
    """Adds the (pattern, flags) of ``call`` to ``found`` if it is a call of an ``re`` function
    with arguments the scan can evaluate."""
    function = scanner.function_of(call)
    if function is None or not call.args or any(isinstance(arg, ast.Starred) for arg in call.args):
        return
    flags_node = None
    position = _FUNCTIONS[function]
    if len(call.args) > position:
        flags_node = call.args[position]
    for keyword in call.keywords:
        if keyword.arg == "flags":
            flags_node = keyword.value
        elif keyword.arg is None:
            return
    try:
        pattern = scanner.evaluate(call.args[0], scope)
        flags = 0 if flags_node is None else scanner.evaluate(flags_node, scope)
    except (_Unknown, RecursionError):
        return
    if isinstance(pattern, (str, bytes)) and type(flags) is int:
        found.add((pattern, flags))


def _calls_outside_functions(node: ast.AST) -> Iterable[ast.Call]:
    stack: list[ast.AST] = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _nodes_on(tree: ast.Module, lines: list[int]) -> Iterable[ast.AST]:
    """The nodes of ``tree`` whose line span covers one of ``lines`` (sorted), and the nodes
    without a position (arguments, comprehensions) inside them."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        start = getattr(node, "lineno", None)
        if start is not None and not _lines_between(
            lines, start, getattr(node, "end_lineno", start) or start
        ):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


class _RecordingSre:
    """Stands in for the ``_sre`` module inside the compiler, to capture ``_sre.compile``'s
    arguments."""

    def __init__(self, real: ModuleType) -> None:
        self._real = real
        self.calls: list[tuple[object, ...]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def compile(self, *args: object) -> object:
        self.calls.append(args)
        return self._real.compile(*args)


#: ``_sre.compile``'s arguments as :func:`_plain` makes them.
_Arguments = tuple[str | bytes, int, list[int], int, dict[str, int], tuple[str | None, ...]]


def compile_arguments(
    patterns: Iterable[tuple[str | bytes, int]],
) -> dict[tuple[str | bytes, int], _Arguments]:
    """(pattern, flags) -> the arguments the build interpreter's compiler passes to
    ``_sre.compile`` for it. Patterns that do not compile, warn, or use flags whose compilation
    is not a pure function of the pattern (DEBUG prints, LOCALE, TEMPLATE) are left out."""
    compiler = _compiler()
    excluded = re.DEBUG | re.LOCALE | getattr(re, "TEMPLATE", 0) | getattr(re, "T", 0)
    real: ModuleType = compiler._sre  # the compiler's own `import _sre`
    recorder = _RecordingSre(real)
    out: dict[tuple[str | bytes, int], _Arguments] = {}
    compiler._sre = recorder  # type: ignore[attr-defined]
    try:
        for pattern, flags in sorted(
            {(p, int(f)) for p, f in patterns}, key=lambda p: (type(p[0]).__name__, p[0], p[1])
        ):
            if flags & excluded or flags < 0 or len(pattern) > _MAX_LENGTH:
                continue
            if isinstance(pattern, str):
                try:
                    pattern.encode("utf-8")
                except UnicodeEncodeError:
                    continue
            recorder.calls.clear()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    compiler.compile(pattern, flags)
            except Exception:
                continue
            if len(recorder.calls) == 1:
                arguments = _plain(recorder.calls[0])
                if arguments is not None:
                    out[(pattern, flags)] = arguments
    finally:
        compiler._sre = real  # type: ignore[attr-defined]
    return out


def _plain(arguments: tuple[object, ...]) -> _Arguments | None:
    """``_sre.compile``'s arguments as plain, marshallable values (the compiler's opcodes are an
    int subclass); None if they are not what this version of the table expects."""
    try:
        pattern, flags, code, groups, groupindex, indexgroup = arguments
    except ValueError:
        return None
    if (
        type(pattern) not in (str, bytes)
        or not isinstance(pattern, (str, bytes))
        or not isinstance(flags, int)
        or not isinstance(groups, int)
        or not isinstance(code, list)
        or not isinstance(groupindex, dict)
        or not isinstance(indexgroup, tuple)
    ):
        return None
    return (
        pattern,
        int(flags),
        [int(word) for word in code],
        int(groups),
        {str(name): int(index) for name, index in groupindex.items()},
        tuple(None if name is None else str(name) for name in indexgroup),
    )


def precompiled_entries(patterns: Iterable[tuple[str | bytes, int]]) -> dict[str, bytes]:
    """The archive entries (name -> content) of the table for ``patterns``: one per pattern,
    ``marshal.dumps((pattern, flags, *arguments of _sre.compile after the pattern))``, plus
    :data:`MAGIC_ENTRY` and :data:`MODULE_ENTRY`.
    Two patterns whose names collide are both left out. Empty if nothing compiled."""
    import _sre  # type: ignore[import-not-found]  # (typeshed has no stub for it)

    entries: dict[str, bytes] = {}
    collided: set[str] = set()
    for (pattern, flags), arguments in compile_arguments(patterns).items():
        name = entry_name(pattern, flags)
        if name in entries:
            collided.add(name)
            continue
        # (pattern, flags as given, then _sre.compile's arguments after the pattern)
        entries[name] = marshal.dumps((pattern, flags, *tuple(arguments[1:])))
    for name in collided:
        del entries[name]
    if entries:
        entries[MAGIC_ENTRY] = str(_sre.MAGIC).encode()
        compiler = "re._compiler" if sys.version_info >= (3, 11) else "sre_compile"
        entries[MODULE_ENTRY] = compiler.encode()
    return entries
