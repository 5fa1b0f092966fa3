"""Regular expressions compiled at build time (python/ingot/build/analysis/regexes.py) and answered from the
archive at run time (crates/ingot-importer/src/regexes.rs)."""

import _sre
import json
import marshal
import re
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import ingot
from ingot._ingot import content_hash
from ingot.build.analysis.regexes import (
    ENTRY_PREFIX,
    MAGIC_ENTRY,
    MODULE_ENTRY,
    compile_arguments,
    entry_name,
    key,
    patterns_in_source,
    precompiled_entries,
)
from ingot.build.archive.pack import pack

from helpers import run_python

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

SOURCE = """
import re
import re as regex
from re import compile as rx, IGNORECASE as IC, search

WORD = r"[a-z]+"
NUMBER = "[0-9]+"
JOINED = "|".join([WORD, NUMBER])
REBOUND = "first"
REBOUND = "second"
FLAGS = re.I | re.M

re.compile(r"plain(\\d+)")
re.compile(WORD + "-" + NUMBER, re.VERBOSE)
regex.match("^%s$" % WORD, "text", re.I)
rx("(?P<name>{})".format(NUMBER), flags=IC)
search(f"<{WORD}>", "text")
re.sub(JOINED, "", "text", 0, FLAGS)
re.split(b"[,;]", b"a,b")
re.compile(REBOUND)
re.compile(unknown_name)
re.compile("%5s" % WORD)
re.compile(r"\\d" * 3)

def inner():
    import re as late
    return late.fullmatch("inside", "inside")
"""


def test_scan_finds_patterns_built_from_constants():
    found = patterns_in_source(SOURCE)
    assert found == {
        (r"plain(\d+)", 0),
        (r"[a-z]+-[0-9]+", re.VERBOSE),
        (r"^[a-z]+$", re.I),
        (r"(?P<name>[0-9]+)", re.I),
        (r"<[a-z]+>", 0),
        (r"[a-z]+|[0-9]+", re.I | re.M),
        (b"[,;]", 0),
        (r"\d\d\d", 0),
        ("inside", 0),
    }


def test_scan_follows_containers_comprehensions_methods_and_class_bodies():
    source = textwrap.dedent(r"""
        import re
        HEX = "[0-9a-f]{1,4}"
        SUBS = {"hex": HEX}
        VARIANTS = ["%(hex)s:%(hex)s", "::%(hex)s"]
        ALTERNATIVES = "(?:" + "|".join([v % SUBS for v in VARIANTS]) + ")"
        ADDRESS = r"\[" + ALTERNATIVES + r"\]"
        re.compile("^" + ADDRESS[2:-2] + "$")
        re.compile("{h}-{h}".format(h=HEX))
        re.compile("[%s]" % re.escape("-.]"))
        re.compile(HEX.replace("a-f", "A-F"))

        class Wrapper:
            space = r"[ \t]"
            word = "[^" + space[1:]
            split = re.compile(r"(%(ws)s+)" % {"ws": space})
            del space
            other = re.compile(word)

            def method(self):
                return re.compile(space)  # not the class's: not evaluated
    """)
    hex_ = "[0-9a-f]{1,4}"
    assert patterns_in_source(source) == {
        (f"^(?:{hex_}:{hex_}|::{hex_})$", 0),
        (f"{hex_}-{hex_}", 0),
        (r"[\-\.\]]", 0),
        ("[0-9A-F]{1,4}", 0),
        (r"([ \t]+)", 0),
        (r"[^ \t]", 0),
    }


def test_scan_leaves_out_what_it_cannot_evaluate():
    found = {pattern for pattern, _ in patterns_in_source(SOURCE)}
    assert "first" not in found and "second" not in found  # a name bound twice
    assert not any("%5s" in p or "    " in p for p in found if isinstance(p, str))  # widths


@pytest.mark.parametrize(
    "source",
    [
        "x = 1\n",
        "import os\nos.compile('a')\n",
        "import re\ndef broken(:\n",
        b"import re\nre.compile('\xff')\n",  # a byte that is not UTF-8: does not parse
        "compile('a')\n",  # the builtin, not re's
    ],
)
def test_scan_finds_nothing_where_there_is_nothing(source):
    assert patterns_in_source(source) == set()


def _compiled_from(arguments):
    return _sre.compile(*arguments)


@pytest.mark.parametrize(
    "pattern, flags",
    [
        (r"(?P<year>\d{4})-(?P<month>\d\d)", 0),
        (r"hello\s+world", re.IGNORECASE),
        (
            r"""
        ^ (?P<key> [a-z_]+ )   # a key
        \s* = \s*
        (?P<value> .* ) $
     """,
            re.VERBOSE | re.MULTILINE,
        ),
        (b"[\x00-\x1f]+", 0),
        ("caf\u00e9|\u03a9+", re.I),
    ],
)
def test_precompiled_pattern_is_the_pattern_re_compiles(pattern, flags):
    arguments = compile_arguments([(pattern, flags)])[(pattern, flags)]
    ours, theirs = _compiled_from(arguments), re.compile(pattern, flags)
    assert (ours.pattern, ours.flags, ours.groups, ours.groupindex) == (
        theirs.pattern,
        theirs.flags,
        theirs.groups,
        theirs.groupindex,
    )
    samples = ["2026-11", "HELLO   World", "name = value\nx=1", "Caf\u00c9", "\u03c9\u03a9"]
    for sample in samples:
        sample = sample.encode("latin-1", "replace") if isinstance(pattern, bytes) else sample
        assert [m.span() for m in ours.finditer(sample)] == [
            m.span() for m in theirs.finditer(sample)
        ]


@pytest.mark.parametrize(
    "pattern, flags",
    [
        ("[[a]", 0),  # FutureWarning: possible nested set
        ("(unbalanced", 0),  # re.error
        ("a", re.DEBUG),  # prints at compile time
        (b"a", re.LOCALE),
        ("\ud800", 0),  # a lone surrogate has no UTF-8 key
    ],
)
def test_patterns_that_warn_fail_or_depend_on_more_than_their_text_are_left_out(pattern, flags):
    assert compile_arguments([(pattern, flags)]) == {}


def test_entries_are_named_by_key_and_hold_pattern_flags_and_arguments():
    entries = precompiled_entries([("a(b)c", re.I), (b"x", 0)])
    assert entries[MAGIC_ENTRY] == str(_sre.MAGIC).encode()
    compiler = "re._compiler" if sys.version_info >= (3, 11) else "sre_compile"
    assert entries[MODULE_ENTRY] == compiler.encode()
    stored = marshal.loads(entries[entry_name("a(b)c", re.I)])
    assert stored[:2] == ("a(b)c", re.I) and len(stored) == 7
    assert entry_name("a(b)c", re.I) != entry_name(b"a(b)c", re.I) != entry_name("a(b)c", 0)
    assert precompiled_entries([("(unbalanced", 0)]) == {}


@pytest.mark.parametrize(
    "pattern, flags, expected",
    [
        ("a", 2, b"s2:a"),
        (b"[,;]", 0, b"b0:[,;]"),
        ("caf\u00e9", re.I | re.M, b"s10:caf\xc3\xa9"),  # a RegexFlag is its value
        ("\U0001d49c", 0, b"s0:\xf0\x9d\x92\x9c"),
        ("\ud800", 0, b"s0:\xed\xa0\x80"),  # a key, but never in the table
        ("x", -1, b"s-1:x"),
        ("x", 1 << 70, b"s1180591620717411303424:x"),
        (b"", True, b"b1:"),
    ],
)
def test_keys_and_entry_names_keep_their_bytes(pattern, flags, expected):
    # The key is the importer's (crates/ingot-importer/src/regexes.rs); these are the bytes the
    # tables of archives already written were named with (docs/format.md).
    assert key(pattern, flags) == expected
    assert entry_name(pattern, flags) == f"{ENTRY_PREFIX}{content_hash(expected):016x}"


def test_an_entry_name_is_the_hash_of_the_key_and_a_key_is_of_str_or_bytes():
    assert entry_name("a", 2) == "__ingot__/re/579559968d302bb3"
    with pytest.raises(TypeError, match="str or bytes, not list"):
        key(["a"], 0)


# --- the importer's side ------------------------------------------------------------------------


def _re_sources():
    """The regular-expression modules of this interpreter: name -> (source, is_package)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if sys.version_info >= (3, 11):
        out = {"re": ((stdlib / "re" / "__init__.py").read_text(), True)}
        for path in sorted((stdlib / "re").glob("_*.py")):
            if path.stem != "__init__":
                out[f"re.{path.stem}"] = (path.read_text(), False)
        return out
    return {
        name: ((stdlib / f"{name}.py").read_text(), False)
        for name in ("re", "sre_compile", "sre_parse", "sre_constants")
    }


def _archive(path, table, builder):
    for name, (source, is_package) in _re_sources().items():
        builder.module(name, source, package=is_package)
    for name, content in table.items():
        builder.data(name, content)
    return builder.write(path)


PROBE = """
    import json, sys
    import ingot
    for name in [name for name in sys.modules if name.split(".")[0] in ("re", "sre_compile",
                                                                         "sre_parse", "sre_constants")]:
        del sys.modules[name]  # imported at start-up (site): import them again, from the archive
    ingot.install(sys.argv[1])
    import re
    compiler = sys.modules["re._compiler" if sys.version_info >= (3, 11) else "sre_compile"].compile
    results = {"wrapper": type(compiler).__name__, "re.compile": type(re.compile).__name__,
               "from_archive": re.__spec__.loader is not None
               and type(re.__spec__.loader).__name__ == "IngotFinder"}
    before = (getattr(compiler, "hits", 0), getattr(compiler, "misses", 0))
    for pattern in sys.argv[2:]:
        compiled = re.compile(pattern, re.I)
        assert compiled.pattern is pattern
        results[pattern] = [compiled.pattern, compiled.flags & re.I != 0,
                            [m.group() for m in compiled.finditer("AAB aab abba")]]
    results["hits"] = getattr(compiler, "hits", 0) - before[0]
    results["misses"] = getattr(compiler, "misses", 0) - before[1]
    print(json.dumps(results))
"""


def _probe(archive, *patterns):
    result = run_python(sys.executable, PROBE, archive, *patterns, cwd=archive.parent)
    return json.loads(result.stdout)


def test_importer_answers_patterns_from_the_table(tmp_path, builder):
    archive = _archive(tmp_path / "re.ingot", precompiled_entries([("a+b", re.I)]), builder)
    out = _probe(archive, "a+b", "b+a")
    assert out["from_archive"] and out["wrapper"] == "PrecompiledRegexes"
    assert out["a+b"] == ["a+b", True, ["AAB", "aab", "ab"]]
    assert out["b+a"] == ["b+a", True, ["bba"]]
    assert (out["hits"], out["misses"]) == (1, 1)


ROUND_TRIP = """
    import json, marshal, sys
    import ingot
    for name in [name for name in sys.modules if name.split(".")[0] in ("re", "sre_compile",
                                                                         "sre_parse", "sre_constants")]:
        del sys.modules[name]
    ingot.install(sys.argv[1])
    import re
    compiler = sys.modules["re._compiler" if sys.version_info >= (3, 11) else "sre_compile"].compile
    results = []
    with open(sys.argv[2], "rb") as file:
        patterns = marshal.load(file)
    for pattern, flags in patterns:
        before = compiler.hits
        ours = re.compile(pattern, flags)
        theirs = compiler.original(pattern, flags)
        results.append([compiler.hits - before, ours.pattern is pattern,
                        [ours.flags, ours.groups, dict(ours.groupindex)]
                        == [theirs.flags, theirs.groups, dict(theirs.groupindex)]])
    print(json.dumps(results))
"""

#: Patterns of every kind the table holds: str and bytes, flags, non-ASCII, text that looks like
#: a key.
KINDS_OF_PATTERNS = [
    ("plain", 0),
    (r"(?P<word>\w+)\s*=\s*(\d+)", re.I | re.M),
    (b"[\x00-\x1f]+", 0),
    (b"(?P<head>ab+)\xff", re.I | re.S),
    ("caf\u00e9|\u03a9+", re.I),
    ("\U0001f600+|\u00e9", re.ASCII),
    ("s0:b1:|10:", re.VERBOSE),
    ("", 0),
    ("x" * 300, re.DOTALL),
]


def test_the_table_the_build_writes_is_the_table_the_importer_reads(tmp_path, builder):
    # The build names each entry by the key; the importer looks each pattern up by the key: if
    # the two ever computed it differently, no pattern would be found, silently.
    table = precompiled_entries(KINDS_OF_PATTERNS)
    assert len(table) == len(KINDS_OF_PATTERNS) + 2  # every pattern, the magic, the module
    archive = _archive(tmp_path / "kinds.ingot", table, builder)
    patterns = tmp_path / "patterns.marshal"
    patterns.write_bytes(marshal.dumps([(p, int(f)) for p, f in KINDS_OF_PATTERNS]))
    result = run_python(sys.executable, ROUND_TRIP, archive, patterns, cwd=tmp_path)
    assert json.loads(result.stdout) == [[1, True, True]] * len(KINDS_OF_PATTERNS)


def test_damaged_entries_fall_back_to_the_compiler(tmp_path, builder):
    bad_code = marshal.dumps(("a+b", int(re.I), int(re.I), [999, 1, 2], 0, {}, (None,)))
    other_pattern = marshal.dumps(("zzz", int(re.I), int(re.I), [], 0, {}, (None,)))
    table = {
        MAGIC_ENTRY: str(_sre.MAGIC).encode(),
        MODULE_ENTRY: precompiled_entries([("a+b", re.I)])[MODULE_ENTRY],
        entry_name("a+b", re.I): bad_code,
        entry_name("b+a", re.I): other_pattern,
        entry_name("x", re.I): b"not marshal",
    }
    out = _probe(_archive(tmp_path / "re.ingot", table, builder), "a+b", "b+a", "x")
    assert out["wrapper"] == "PrecompiledRegexes" and out["hits"] == 0
    assert out["a+b"] == ["a+b", True, ["AAB", "aab", "ab"]]
    assert out["b+a"] == ["b+a", True, ["bba"]]
    assert out["x"] == ["x", True, []]


def test_a_table_of_another_sre_is_not_used(tmp_path, builder):
    table = precompiled_entries([("a+b", re.I)])
    table[MAGIC_ENTRY] = str(_sre.MAGIC + 1).encode()
    out = _probe(_archive(tmp_path / "re.ingot", table, builder), "a+b")
    assert out["wrapper"] == "function" and out["a+b"] == ["a+b", True, ["AAB", "aab", "ab"]]


def test_without_a_module_entry_the_table_is_not_installed(tmp_path, builder):
    # The importer names no module: the archive says which module the table serves.
    table = precompiled_entries([("a+b", re.I)])
    del table[MODULE_ENTRY]
    out = _probe(_archive(tmp_path / "none.ingot", table, builder), "a+b")
    assert out["wrapper"] == "function" and out["a+b"] == ["a+b", True, ["AAB", "aab", "ab"]]


def test_the_table_hooks_into_the_module_the_archive_names(tmp_path, builder):
    table = precompiled_entries([("a+b", re.I)])
    table[MODULE_ENTRY] = b"re"  # `re` has a `compile` too: the table serves it instead
    out = _probe(_archive(tmp_path / "other.ingot", table, builder), "a+b")
    assert out["wrapper"] == "function" and out["re.compile"] == "PrecompiledRegexes"
    assert out["a+b"] == ["a+b", True, ["AAB", "aab", "ab"]]


def test_archive_without_a_table_leaves_the_compiler_alone(tmp_path, builder):
    out = _probe(_archive(tmp_path / "re.ingot", {}, builder), "a+b")
    assert out["wrapper"] == "function"


def test_pack_adds_the_table_and_can_leave_it_out(tmp_path):
    site = tmp_path / "site"
    (site / "app").mkdir(parents=True)
    (site / "app" / "__init__.py").write_text(
        textwrap.dedent("""
        import re
        TOKEN = re.compile(r"(?P<name>[A-Za-z_]\\w*)=(?P<value>\\S+)")
    """)
    )
    with_table = pack(tmp_path / "with.ingot", stdlib=False, directories=[site])
    without = pack(
        tmp_path / "without.ingot", stdlib=False, directories=[site], precompile_regexes=False
    )
    assert with_table.regexes == 1 and without.regexes == 0
    finder = ingot.IngotFinder(str(tmp_path / "with.ingot"))
    name = entry_name(r"(?P<name>[A-Za-z_]\w*)=(?P<value>\S+)", 0)
    assert marshal.loads(finder._read(name))[0] == r"(?P<name>[A-Za-z_]\w*)=(?P<value>\S+)"
    assert finder._read(MAGIC_ENTRY) == str(_sre.MAGIC).encode()
    with pytest.raises(FileNotFoundError):
        ingot.IngotFinder(str(tmp_path / "without.ingot"))._read(MAGIC_ENTRY)


def test_a_pattern_the_table_cannot_hold_never_breaks_a_build(tmp_path):
    # fontTools (under matplotlib) compiles a pattern of lone surrogates: the build crashed in
    # key() with UnicodeEncodeError. Now the pattern is left out of the table, and it still works
    # at run time, from the compiler.
    site = tmp_path / "site"
    (site / "app").mkdir(parents=True)
    (site / "app" / "__init__.py").write_text(
        textwrap.dedent("""
        import re
        LONE = re.compile("[\\ud800-\\udfff]")
        WORD = re.compile(r"\\w+")
    """)
    )
    result = pack(tmp_path / "app.ingot", stdlib=False, directories=[site], entry_modules=["app"])
    assert result.regexes == 1  # WORD only
    done = run_python(
        sys.executable,
        """
        import sys, ingot
        ingot.install(sys.argv[1])
        import app
        print(bool(app.LONE.match("\\ud801")), app.WORD.match("ok!").group())
    """,
        tmp_path / "app.ingot",
    )
    assert done.stdout.split() == ["True", "ok"], done.stderr
