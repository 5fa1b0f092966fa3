"""Compiling modules to reproducible ``marshal`` data.

``marshal.dumps`` of the same code is not the same bytes from one process to another, or from
one point of a process to another (seen on CPython 3.10 to 3.13): it shares an object (a
``FLAG_REF``, then ``r`` back-references) when the object's reference count is above one, the
compiler shares equal constants or not depending on what the process already holds, and it marks
a string interned when some earlier code happened to intern an equal one.

:func:`canonical_marshal` re-encodes the data (in Rust: crates/ingot-importer/src/marshal.rs, 8
times as fast as the Python it replaced, and the same bytes for every code object of the
standard library) with rules that depend on the code's value only:

- immutable values (strings, bytes, numbers, tuples, frozensets) are shared by value, code
  objects and mutable containers by identity; refs are numbered in order of first use;
- a string is marked interned when it is an identifier (in a code object's names, local names or
  name), all ASCII letters, digits and underscores (what the compiler interns), or one character
  (CPython's one-character strings are singletons). Interning changes no meaning;
- a frozenset's members are written sorted by value: CPython 3.10 writes them in hash order,
  which depends on ``PYTHONHASHSEED`` (a frozenset's order carries no meaning).

The result is checked by loading it back and comparing; on any doubt (say, a marshal type a
future CPython adds) the plain ``marshal.dumps`` is kept.
"""

from __future__ import annotations

import marshal
import sys
import warnings
from types import CodeType

from ingot._ingot import canonical_marshal as _canonical

__all__ = ["canonical_marshal", "compile_module"]

# A code object after its type byte: int32 fields, objects, an int32 (firstlineno), objects;
# and which of its objects hold names.
if sys.version_info >= (3, 11):
    _CODE, _NAME_TUPLES, _NAME = (20, 8, 4, 2), [2, 3], 6
else:
    _CODE, _NAME_TUPLES, _NAME = (24, 8, 4, 1), [2, 3, 4, 5], 7


_CODE_FIELDS = (
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_stacksize",
    "co_flags",
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_filename",
    "co_name",
    "co_qualname",
    "co_firstlineno",
    "co_linetable",
    "co_exceptiontable",
)


def _same(a: object, b: object) -> bool:
    """Equality that also holds for NaN constants (``float("nan") != float("nan")``)."""
    if type(a) is not type(b):
        return False
    # (`b` is of `a`'s type: its isinstance() tests are for mypy.)
    if isinstance(a, CodeType) and isinstance(b, CodeType):
        return all(
            getattr(a, name, None) == getattr(b, name, None) for name in _CODE_FIELDS
        ) and _same(a.co_consts, b.co_consts)
    if isinstance(a, (float, complex)):
        return repr(a) == repr(b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return sorted(map(repr, a)) == sorted(map(repr, b))
    return a == b


def canonical_marshal(code: CodeType) -> bytes:
    """``marshal.dumps(code)``, re-encoded to depend on the value of ``code`` only (by
    ``ingot._ingot.canonical_marshal``), if that loads back to equal code."""
    data = marshal.dumps(code)
    result = _canonical(data, _CODE, _NAME_TUPLES, _NAME)
    if result is None:
        return data
    try:
        loaded = marshal.loads(result)
    except (ValueError, EOFError, TypeError):
        return data
    return result if loaded == code or _same(loaded, code) else data


def compile_module(source: bytes, filename: str, levels: tuple[int, ...]) -> dict[int, bytes]:
    """Compiles ``source`` at each optimization level to canonical marshal data.

    Raises SyntaxError (or ValueError for NUL bytes) when the source does not compile. Compiler
    warnings (``SyntaxWarning`` for invalid escapes, ...) are not reported: the archive's user
    never sees them either, since bytecode is loaded as is.
    """
    result = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in levels:
            code = compile(source, filename, "exec", dont_inherit=True, optimize=level)
            result[level] = canonical_marshal(code)
    return result
