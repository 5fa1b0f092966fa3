"""Compiling modules to reproducible ``marshal`` data.

``marshal.dumps`` of the same code is not the same bytes from one process to another, or from
one point of a process to another (seen on CPython 3.10 to 3.13): it shares an object (a
``FLAG_REF``, then ``r`` back-references) when the object's reference count is above one, the
compiler shares equal constants or not depending on what the process already holds, and it marks
a string interned when some earlier code happened to intern an equal one.

:func:`canonical_marshal` re-encodes the data with rules that depend on the code's value only:

- immutable values (strings, bytes, numbers, tuples, frozensets) are shared by value, code
  objects and mutable containers by identity; refs are numbered in order of first use;
- a string is marked interned when it is an identifier (in a code object's names, local names or
  name), all ASCII letters, digits and underscores (what the compiler interns), or one character
  (CPython's one-character strings are singletons). Interning changes no meaning.

The result is checked by loading it back and comparing; on any doubt (say, a marshal type a
future CPython adds) the plain ``marshal.dumps`` is kept.

- a frozenset's members are written sorted by value: CPython 3.10 writes them in hash order,
  which depends on ``PYTHONHASHSEED`` (a frozenset's order carries no meaning).
"""

from __future__ import annotations

import marshal
import re
import struct
import sys
import warnings
from collections.abc import Callable
from types import CodeType

__all__ = ["canonical_marshal", "compile_module"]

_FLAG_REF = 0x80
_I32: Callable[..., tuple[int]] = struct.Struct("<i").unpack_from

# A code object after its type byte: int32 fields, objects, an int32 (firstlineno), objects;
# and which of its objects hold names.
if sys.version_info >= (3, 11):
    _CODE, _NAME_TUPLES, _NAME = (20, 8, 4, 2), (2, 3), 6
else:
    _CODE, _NAME_TUPLES, _NAME = (24, 8, 4, 1), (2, 3, 4, 5), 7

_SINGLETONS = frozenset(b"0NFTS.")
_FIXED = {ord("i"): 4, ord("g"): 8, ord("y"): 16, ord("I"): 8}
_SHORT_STRINGS = frozenset(b"zZ")  # 1-byte size
_STRINGS = frozenset(b"tuaA") | _SHORT_STRINGS
_PLAIN = {ord("Z"): ord("z"), ord("t"): ord("u"), ord("A"): ord("a")}
_INTERNED = {plain: interned for interned, plain in _PLAIN.items()}
_SEQUENCES = frozenset(b"([<>")
_BY_VALUE = frozenset(b"zuasl()>:") | frozenset(_FIXED)
_NAME_CHARS = re.compile(rb"[A-Za-z0-9_]*").fullmatch


class _Node:
    """A parsed object: ``head`` is its bytes after the type byte, up to the first child; ``key``
    numbers its value or, for code objects and mutable containers, the object itself."""

    __slots__ = ("children", "head", "interned", "key", "kind")

    children: list[_Child] | tuple[()]

    def __init__(self, kind: int, head: bytes) -> None:
        self.kind, self.head, self.children, self.key, self.interned = kind, head, (), -1, False


#: A node's child: a parsed object, a singleton (its type byte) or, in a code object, the raw
#: bytes of an int32 field.
_Child = _Node | int | bytes


class _Parser:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.refs: list[_Node] = []
        # Keys by value, (kind, head, keys of the children), or by identity (the node).
        self.keys: dict[tuple[int, bytes, tuple[int, ...]] | _Node, int] = {}
        self.names: set[int] = set()

    def take(self, size: int) -> bytes:
        start = self.pos
        self.pos += size
        if self.pos > len(self.data):
            raise ValueError("truncated marshal data")
        return self.data[start : self.pos]

    def string(self, kind: int) -> _Node:
        if kind in _SHORT_STRINGS:
            node = _Node(_PLAIN.get(kind, kind), self.take(1 + self.data[self.pos]))
            text = node.head[1:]
        else:
            node = _Node(_PLAIN.get(kind, kind), self.take(4 + _I32(self.data, self.pos)[0]))
            text = node.head[4:]
        node.interned = bool(_NAME_CHARS(text)) or (
            len(text) <= 4 and len(text.decode("utf-8", "surrogatepass")) == 1
        )
        return node

    def parse(self) -> _Node | int:
        code = self.data[self.pos]
        self.pos += 1
        flag, kind = code & _FLAG_REF, code & ~_FLAG_REF
        if kind in _SINGLETONS:
            return kind
        if kind == 0x72:  # 'r'
            node = self.refs[_I32(self.take(4))[0]]
            if node.key < 0:
                raise ValueError("reference to an unfinished object")
            return node
        if kind in _STRINGS:
            node = self.string(kind)
        elif kind in _FIXED:
            node = _Node(kind, self.take(_FIXED[kind]))
        elif kind == 0x73:  # 's': bytes
            node = _Node(kind, self.take(4 + _I32(self.data, self.pos)[0]))
        elif kind == 0x6C:  # 'l': int32 digit count (signed), 2-byte digits
            node = _Node(kind, self.take(4 + 2 * abs(_I32(self.data, self.pos)[0])))
        else:
            node = _Node(kind, b"")
        if flag:
            self.refs.append(node)
        if kind == 0x29:  # ')'
            node.head = self.take(1)
            node.children = [self.parse() for _ in range(node.head[0])]
        elif kind in _SEQUENCES:
            node.head = self.take(4)
            node.children = [self.parse() for _ in range(_I32(node.head)[0])]
        elif kind == 0x3A:  # ':': a slice constant (3.14+): start, stop, step
            node.children = [self.parse() for _ in range(3)]
        elif kind == 0x7B:  # '{': pairs up to a NULL
            node.children = []
            while self.data[self.pos] != 0x30:
                node.children += (self.parse(), self.parse())
            node.children.append(self.parse())
        elif kind == 0x63:  # 'c'
            ints, first, lineno, rest = _CODE
            node.head = self.take(ints)
            node.children = [self.parse() for _ in range(first)]
            node.children.append(self.take(lineno))
            node.children += [self.parse() for _ in range(rest)]
            for names in _NAME_TUPLES:
                self.names.update(_node(name).key for name in _node(node.children[names]).children)
            self.names.add(_node(node.children[_NAME]).key)
        elif not node.head:
            raise ValueError(f"unexpected marshal type {chr(kind)!r}")
        if node.kind in _BY_VALUE:
            # (Only a code object, not by value, holds raw bytes.)
            children = tuple(c.key if type(c) is _Node else -c for c in node.children)  # type: ignore[operator]
            node.key = self.keys.setdefault((node.kind, node.head, children), len(self.keys))
        else:
            node.key = self.keys.setdefault(node, len(self.keys))  # by identity
        return node


def _node(child: _Child) -> _Node:
    """``child`` as a parsed object; ValueError if the data is not laid out as expected."""
    if type(child) is not _Node:
        raise ValueError("unexpected marshal layout")
    return child


def _count(node: _Child, seen: set[int], recurring: set[int]) -> None:
    """Records in ``recurring`` the keys met more than once, pre-order, not entering repeats."""
    if type(node) is not _Node:
        return
    if node.key in seen:
        recurring.add(node.key)
        return
    seen.add(node.key)
    for child in node.children:
        _count(child, seen, recurring)


def _write(
    node: _Child, out: bytearray, recurring: set[int], index: dict[int, int], names: set[int]
) -> None:
    """Writes ``node``: a recurring key flagged the first time (numbered in order), then ``r``."""
    if isinstance(node, int):  # a singleton
        out.append(node)
        return
    if isinstance(node, bytes):  # a code object's raw field
        out += node
        return
    key = node.key
    if key in index:
        out.append(0x72)
        out += struct.pack("<i", index[key])
        return
    kind = node.kind
    if kind in _INTERNED and (node.interned or key in names):
        kind = _INTERNED[kind]
    if key in recurring:
        index[key] = len(index)
        kind |= _FLAG_REF
    out.append(kind)
    out += node.head
    children = node.children
    if node.kind == 0x3E:  # '>': frozenset
        children = sorted(children, key=_value)
    for child in children:
        _write(child, out, recurring, index, names)


def _value(node: _Child) -> tuple[object, ...]:
    """A sort key that depends on a constant's value only, not on the order it was parsed in."""
    if not isinstance(node, _Node):  # a singleton (a constant holds no raw bytes)
        return (node,)
    return (node.kind, node.head, tuple(_value(child) for child in node.children))


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
    """``marshal.dumps(code)``, re-encoded to depend on the value of ``code`` only."""
    data = marshal.dumps(code)
    try:
        parser = _Parser(data)
        root = parser.parse()
        if parser.pos != len(data):
            raise ValueError("trailing marshal data")
        recurring: set[int] = set()
        _count(root, set(), recurring)
        out = bytearray()
        _write(root, out, recurring, {}, parser.names)
        result = bytes(out)
        loaded = marshal.loads(result)
        return result if loaded == code or _same(loaded, code) else data
    except (ValueError, IndexError, KeyError, EOFError, TypeError, RecursionError, struct.error):
        return data


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
