"""The order in which a program is expected to read its archive when it starts.

A cold start reads the executable through page faults, and on each miss the kernel reads a whole
window around it (``read_ahead_kb``, 8 MiB on the benchmark machine). With blobs laid out by name,
the ~300 modules ``http --version`` imports are spread over the 80 MiB file and most of it is
read. :func:`first_use_order` predicts which entries a start reads, and in which order: the
modules the launcher imports before the application, then the application's entry module and,
depth first, what it imports (parents before children, imports in source order), with the
shared libraries of extension modules and the regular expressions a module compiles next to it.
``ingot pack`` hands that order to the writer (``ArchiveWriter.set_first_use``), which puts those
blobs first in the data region.

The prediction only moves bytes: a module it misses is read from further away, a module it adds
costs a little readahead (and, since the read-ahead thread maps what it predicts, memory). So the
import scan is textual (:func:`imports_in_source`, fast enough for thousands of modules): it
follows the ``import`` statements that run with their module, ``try`` blocks included; imports in
functions only for the entry point's own function; not those in ``except`` fallbacks nor under
``if TYPE_CHECKING:``, ``if __name__ == "__main__":`` (but in the module run as ``__main__``,
where that block is the program) or another system's ``sys.platform``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ingot._ingot import EXTENSION_KINDS

__all__ = [
    "BOOT_MODULES",
    "FALLBACK",
    "LAZY",
    "SKIPPED",
    "TOP",
    "first_use_order",
    "imports_in_source",
    "never_on_linux",
]

#: Modules the launcher imports from the archive before the application's own (tests check
#: this list against what a hello-world executable has imported when its main function runs).
BOOT_MODULES = (
    "encodings",
    "codecs",
    "encodings.aliases",
    "encodings.utf_8",
    "abc",
    "io",
    "zipimport",
)

#: An import statement: at a line's start, or after a ``;`` or a one-line block's ``:``
#: (``x = 1; import y``, ``if PY2: import z``, ``try: import ujson as json``).
_IMPORT = re.compile(rb"(?:^|[;:])[ \t]*import[ \t]+([\w. \t,]+)", re.M)
_FROM = re.compile(
    rb"(?:^|[;:])[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)", re.M
)
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
#: Block headers that change whether an import inside them runs when the module is imported.
_HEADER = re.compile(
    rb"[ \t]*(async[ \t]+def|def|class|if|elif|else|try|except|finally|with|for|"
    rb"while)\b([^\n]*):[ \t]*(?:#[^\n]*)?$"
)
#: The header of a one-line block, before the statement on its line (``if PY2: import z``).
_INLINE_HEADER = re.compile(
    rb"[ \t]*(async[ \t]+def|def|class|if|elif|else|try|except|finally|with|for|while)\b(.*?):"
)
#: Headers whose first line says what the block is even when they run over several lines
#: (``def f(a,`` / ``b):``): only statements start with these keywords.
_LONG_HEADER = re.compile(rb"[ \t]*(async[ \t]+def|def|class|except)\b([^\n]*)$")
_MAIN_GUARD = re.compile(rb"__name__\s*==\s*['\"]__main__['\"]")
#: Conditions under which a block never runs on Linux, the only target: ``TYPE_CHECKING``
#: (``typing.TYPE_CHECKING``, ``t.TYPE_CHECKING``), and other systems (encodings' win32 codecs,
#: ...): ``sys.platform == "win32"`` (darwin, cygwin; ``.startswith("win")``; ``_sys`` as the
#: standard library imports it), ``os.name == "nt"``.
_NEVER_ON_LINUX = re.compile(
    r"([A-Za-z_]\w*\.)?TYPE_CHECKING|"
    r"_?(sys\.platform|os\.name)\s*(?:==\s*|(?P<call>\.startswith\(\s*))"
    r"(?P<quote>['\"])(win32|win|darwin|cygwin|nt)(?P=quote)(?(call)\s*\))"
)
_AND, _OR = re.compile(r"\band\b"), re.compile(r"\bor\b")
_QUOTES = (b'"' * 3, b"'" * 3)

#: Where an import statement is: run with the module, in a function, in a fallback that runs only
#: when something failed (``except``), or in a guard that never runs in an application on Linux
#: (``if __name__ == "__main__":``, ``if TYPE_CHECKING:``, ``if sys.platform == "win32":``).
TOP, LAZY, FALLBACK, SKIPPED = "top", "lazy", "fallback", "skipped"


def never_on_linux(condition: str) -> bool:
    """Whether the condition of an ``if`` (its source text) is one under which the block never
    runs in an application on Linux (:data:`_NEVER_ON_LINUX`), or an ``and`` with one: ``not
    TYPE_CHECKING`` and ``sys.platform == "win32" or x`` may hold on Linux. The one rule for both
    scans of imports: this module's, of the source's text, and that of
    :func:`ingot.build.archive.reach.stdlib_imports`, of the syntax tree (``ast.unparse`` of the
    condition)."""
    if _OR.search(condition):
        return False
    return any(_NEVER_ON_LINUX.fullmatch(part.strip()) for part in _AND.split(condition))


def _effect(header: re.Match[bytes], as_main: bool) -> str:
    """What a block header (its keyword, its condition) makes of the block's body."""
    keyword = header.group(1).split()[-1]
    condition = header.group(2)
    guarded = keyword in (b"if", b"elif") and (
        never_on_linux(condition.decode("latin-1"))
        or (not as_main and _MAIN_GUARD.search(condition) is not None)
    )
    if keyword == b"def":
        return LAZY
    if keyword == b"except":
        return FALLBACK
    return SKIPPED if guarded else TOP


#: The contexts from the most restrictive: an import is where its innermost such block puts it.
_RESTRICTIVE = (SKIPPED, FALLBACK, LAZY)


def _context_of(source: bytes, offset: int, line: str, as_main: bool) -> str:
    """The context of the import statement at ``offset``, on a line of context ``line``: within
    a one-line block (``if PY2: import z``), what its header makes of it."""
    start = source.rfind(b"\n", 0, offset) + 1
    inline = _INLINE_HEADER.match(source, start, offset + 1)
    if inline is None or line == SKIPPED:
        return line
    effects = {line, _effect(inline, as_main)}
    return next((effect for effect in _RESTRICTIVE if effect in effects), TOP)


def _contexts(source: bytes, as_main: bool = False) -> dict[int, str]:
    """Line number (1-based) -> TOP, LAZY or SKIPPED for the lines of ``source``, from indentation
    and block headers (a textual approximation: triple-quoted strings are skipped, continuation
    lines are taken as they come). ``as_main``: the module runs as ``__main__``, so its main
    block runs with it."""
    contexts: dict[int, str] = {}
    stack: list[tuple[int, str]] = []  # (indentation, what the block makes of its body)
    in_string = None
    for number, line in enumerate(source.split(b"\n"), 1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        stripped = line.lstrip(b" \t")
        if not stripped or stripped.startswith(b"#"):
            continue
        indent = len(line) - len(stripped)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        effects = {effect for _, effect in stack}
        context = next((effect for effect in _RESTRICTIVE if effect in effects), TOP)
        contexts[number] = context
        header = _HEADER.match(line) or _LONG_HEADER.match(line)
        if header:
            stack.append((indent, _effect(header, as_main)))
        for quote in _QUOTES:
            if line.count(quote) % 2 == 1:
                in_string = quote
                break
    return contexts


def imports_in_source(
    source: bytes, name: str, is_package: bool, as_main: bool = False
) -> dict[str, list[str]]:
    """The absolute module names the source of module ``name`` may import, in source order, by
    where the statement is (:data:`TOP`, :data:`LAZY`, :data:`FALLBACK`; :data:`SKIPPED` ones are
    left out; ``as_main``: the module runs as ``__main__``, and its ``if __name__ ==
    "__main__":`` block is top-level code):
    ``import a.b`` gives ``a.b``; ``from .x import y`` gives ``<package>.x`` and
    ``<package>.x.y`` (``y`` may be a submodule). Names that are not modules of the archive are
    dropped by :func:`first_use_order`."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for match in _IMPORT.finditer(source):
        for part in match.group(1).decode("ascii", "replace").split(","):
            module = part.split(" as ")[0].strip()
            if _NAME.match(module):
                found.append((match.start(), module))
    for match in _FROM.finditer(source):
        dots, module = match.group(1).decode(), match.group(2).decode("ascii", "replace")
        if dots:
            base = package.split(".") if package else []
            up = len(dots) - 1
            if up > len(base):
                continue
            base = base[: len(base) - up] if up else base
            module = ".".join(base + ([module] if module else []))
        if not module or not _NAME.match(module):
            continue
        found.append((match.start(), module))
        names = match.group(3).decode("ascii", "replace").strip("()\\ \t\r\n")
        for part in names.replace("\\", " ").replace("\n", " ").split(","):
            item = part.split(" as ")[0].strip()
            if item and item != "*" and _NAME.match(item):
                found.append((match.start(), f"{module}.{item}"))
    found.sort(key=lambda pair: pair[0])
    contexts = _contexts(source, as_main) if found else {}
    out: dict[str, list[str]] = {TOP: [], LAZY: [], FALLBACK: []}
    for offset, module in found:
        context = contexts.get(source.count(b"\n", 0, offset) + 1, SKIPPED)  # in a string
        context = _context_of(source, offset, context, as_main)
        if context != SKIPPED:
            out[context].append(module)
    return out


def first_use_order(
    roots: Iterable[str],
    imports: Mapping[str, Mapping[str, list[str]]],
    kinds: Mapping[str, str],
    needed: Mapping[str, list[str]],
    companions: Mapping[str, list[tuple[str, str]]] | None = None,
    lazy: Iterable[str] = (),
) -> list[tuple[str, str]]:
    """(name space, name) pairs in predicted first-read order, starting from ``roots`` (module
    names). ``imports`` maps a module to what it imports (:func:`imports_in_source`): the
    module-level imports of every module are followed, the imports inside functions only for the
    modules in ``lazy`` (an entry point's ``main()`` importing the application lazily). ``kinds`` maps a module
    name to its entry kind, ``needed`` an extension module or shared library to the shared
    libraries it needs (by soname), ``companions`` a module to other entries read when it runs
    (its precompiled regular expressions)."""
    companions = companions or {}
    order: list[tuple[str, str]] = []
    seen_modules: set[str] = set()
    seen_libraries: set[str] = set()

    def library(soname: str) -> None:
        # Iterative, dependencies first (the importer loads them before the object needing them).
        stack = [(soname, False)]
        while stack:
            current, expanded = stack.pop()
            if expanded:
                order.append(("libraries", current))
                continue
            if current in seen_libraries:
                continue
            seen_libraries.add(current)
            stack.append((current, True))
            stack.extend((dep, False) for dep in reversed(needed.get(current, [])))

    # Depth first with a stack of modules to visit: a module's imports are pushed in reverse, so
    # they are visited in source order, each with everything it imports before the next one; a
    # module whose parent package has not run yet is pushed back under its parent.
    lazy_roots = set(lazy)
    tasks = list(reversed(list(roots)))
    while tasks:
        module = tasks.pop()
        if module in seen_modules or module not in kinds:
            continue
        parent = module.rpartition(".")[0]
        if parent and parent in kinds and parent not in seen_modules:
            tasks += [module, parent]
            continue
        seen_modules.add(module)
        if kinds[module] in EXTENSION_KINDS:
            for soname in needed.get(module, []):
                library(soname)
        order.append(("modules", module))
        order.extend(companions.get(module, []))
        found = imports.get(module, {})
        tasks += reversed(
            found.get(TOP, []) + (found.get(LAZY, []) if module in lazy_roots else [])
        )
    return order
