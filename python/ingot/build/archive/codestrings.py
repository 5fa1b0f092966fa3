"""Code held in string constants: a string that is a value, parses as Python and imports modules
(code for ``sys.executable -c``, ``exec``, ``runpy``) has its imports followed, as module-level
imports are (:func:`code_string_imports`, through the build cache: :func:`code_strings`)."""

from __future__ import annotations

import ast
import re
import textwrap

from ingot.build.archive.buildcache import (
    BuildMemo,
)

__all__ = ["CODE_STRING_LIMIT", "code_string_imports", "code_strings"]


_STATEMENT = r"(?:import[ \t]+[A-Za-z_]|from[ \t]+[A-Za-z_][\w.]*[ \t]+import[ \t(])"


#: In a source: a quote, ``\n`` or ``;`` before an import statement (a one-line string of code).
_CODE_HINT = re.compile(rb"""(?:['"]|\\n|;)[ \t]*""" + _STATEMENT.encode())


#: In a triple-quoted string: an import statement at a line's start.
_LINE_IMPORT = re.compile(rb"^[ \t]*" + _STATEMENT.encode(), re.M)


#: A string that looks like code: an import statement at its start, a line's or after ``;``.
_CODE_IMPORT = re.compile(r"(?:^|[;\n])[ \t]*" + _STATEMENT)


#: Longer strings are not parsed (generated tables, embedded documents).
CODE_STRING_LIMIT = 20_000


#: ``.format`` fields and ``%`` conversions, replaced by a name when a string does not parse as is
#: (``"import sys; sys.path.insert(0, {!r})"``).
_PLACEHOLDER = re.compile(r"\{[^{}\n]*\}|%\(?\w*\)?[rsdi]")


def _parsed_code(text: str) -> ast.Module | None:
    for candidate in (text, _PLACEHOLDER.sub("_", text)):
        try:
            return ast.parse(textwrap.dedent(candidate))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _may_hold_code(source: bytes) -> bool:
    """Whether a source may have a string literal holding code that imports: a one-line one
    (:data:`_CODE_HINT`), or a triple-quoted one that is a value (an assignment's or an argument's:
    or on the line after ``(``, ``=``, ``,`` or ``[``; not a docstring) with an import statement at a
    line's start (the text between the 1st and 2nd, 3rd and 4th, ... triple quotes of a kind,
    as :mod:`ingot.build.analysis.firstuse` takes them)."""
    if _CODE_HINT.search(source):
        return True
    for quote in (b'"' * 3, b"'" * 3):
        parts = source.split(quote)
        for index in range(1, len(parts), 2):
            lines = parts[index - 1].rstrip(b" \t").rsplit(b"\n", 2)
            before = lines[-1].strip().rstrip(b"rRbBuUfF")
            if not before and len(lines) > 1:  # (the string opens a line: after "f(", "x = ("?)
                before = b"" if lines[-2].rstrip()[-1:] not in (b"(", b"=", b",", b"[") else b"("
            if not before or len(parts[index]) > CODE_STRING_LIMIT:
                continue  # (a docstring or bare string statement)
            if _LINE_IMPORT.search(parts[index]):
                return True
    return False


def code_string_imports(source: bytes) -> list[str]:
    """The modules the code in a module's string constants imports: code for ``python -c``
    (``subprocess.run([sys.executable, "-c", "import getpass; ..."])``), ``exec``, ``runpy``.
    A string counts if it is a value (not a docstring or other bare string statement), is at
    most :data:`CODE_STRING_LIMIT` characters, has an import statement at its start, a line's or
    after ``;``, and parses as Python (after ``textwrap.dedent``; with format fields replaced by
    a name if it does not as is). Every ``import``/``from ... import`` of it, at any depth, is
    taken, absolute ones only (``-c`` code has no package); ``from a import b`` gives ``a`` and
    ``a.b``. Only the sources :func:`_may_hold_code` picks are parsed."""
    if not _may_hold_code(source):
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    statements = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if id(node) in statements or len(text) > CODE_STRING_LIMIT:
            continue
        if not _CODE_IMPORT.search(text):
            continue
        code = _parsed_code(text)
        for inner in ast.walk(code) if code is not None else ():
            if isinstance(inner, ast.Import):
                found += [alias.name for alias in inner.names]
            elif isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                found.append(inner.module)
                found += [
                    f"{inner.module}.{alias.name}" for alias in inner.names if alias.name != "*"
                ]
    return list(dict.fromkeys(found))


def code_strings(memo: BuildMemo, source: bytes) -> list[str]:
    """:func:`code_string_imports`, through the build cache (the build's pool computes them too,
    :mod:`ingot.build.archive.prefetch`)."""
    return list(memo.remember("code-strings", [source], lambda: code_string_imports(source)))
