"""The docs describe today (issue 54): no tracked file narrates the development sessions the
project was written in (dates, commits and issues say when and why), and every ``ingot.x.y``
that the docs, the crates' READMEs and Python's docstrings and comments name is a module or an
attribute that exists. Links into the benchmark pages name headings that exist. These read the
files; they run no build."""

from __future__ import annotations

import ast
import importlib
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]

#: A mention of a development session: a numbered or dated one, "this"/"same"/... one, the
#: session's first commit. pytest's session (``scope="session"``, "once per session", "the
#: test session's cache"), SQLAlchemy's and requests' are not flagged.
SESSION = re.compile(
    r"\bsessions?[\s-]+\d+"
    r"|\bsession,?\s+of\s+\d{4}-\d\d"
    r"|\b(?:this|that|same|previous|earlier|next|last|our)\s+session\b(?!\s*[=(.])"
    r"|\bsession's\s+(?:first|last)\s+commit"
    r"|\bthe\s+session\s+had\b"
    r"|\b(?:development|dev|working)\s+sessions?\b"
    r"|[(]session\b(?![.)\],=])",
    re.IGNORECASE,
)

#: An ``ingot.x[.y...]`` reference (not part of a path, a longer name or a distribution name).
REFERENCE = re.compile(r"(?<![\w.\-/])ingot(?:\.[A-Za-z_]\w*)+")

#: The Markdown files whose ``ingot.x.y`` references are checked (CHANGELOG.md and
#: bench/results/HISTORY.md are history: names there may have moved since).
DOC_FILES = re.compile(r"(docs/.*|README|bench/README|crates/README|crates/[^/]+/README)\.md")


#: This file: its own prose names what the checks look for.
SELF = "tests/test_docs.py"


def tracked_files() -> list[str]:
    """The tracked files, less this one."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [
        name for name in listed.split("\0") if name and name != SELF and (ROOT / name).is_file()
    ]


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def session_mentions(text: str) -> Iterator[tuple[int, str]]:
    """(line, the words) of each mention of a development session in ``text``."""
    for match in SESSION.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, " ".join(match.group(0).split())


def test_no_tracked_file_mentions_a_development_session():
    found = []
    for name in tracked_files():
        text = text_of(ROOT / name)
        if text is None:
            continue
        found += [f"{name}:{line}: {words!r}" for line, words in session_mentions(text)]
    assert not found, "say the date, the commit or the issue instead:\n" + "\n".join(found)


def test_the_session_check_tells_a_diary_from_pytest():
    diary = [
        "Memory, second round (sess" + "ion 8): native images",
        "the goals of sess" + "ion 3 were met; on this sess" + "ion's machine",
        "a fresh machine (empty cache, sess" + "ion\nof 2026-11-28)",
        "measured in the same sess" + "ion, by the old script",
        "start-up against the sess" + "ion's first commit",
        "Since sess" + "ion 22 the runtimes are profile-guided",
    ]
    for text in diary:
        assert list(session_mentions(text)), text
    pytest_words = [
        '@pytest.fixture(scope="session")',
        "built once per session and name; kept for the session",
        "the test session's build cache, at the end of the session",
        "with Session(engine) as session: session.add_all(rows)",
        "a session that commits, a fresh session that queries",
        "print(session.get_adapter(url))",
        "subprocess.Popen(cmd, start_new_session=True)",
    ]
    for text in pytest_words:
        assert not list(session_mentions(text)), text


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of every docstring and comment of a Python source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            text = value.value if isinstance(value, ast.Constant) else None
            if first is not None and isinstance(text, str):
                yield first.lineno, text
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def references(names: list[str]) -> dict[str, list[str]]:
    """Each ``ingot.x.y`` reference in the docs and in Python's docstrings and comments, with
    the places (``file:line``) that name it."""
    found: dict[str, list[str]] = {}
    for name in names:
        if DOC_FILES.fullmatch(name):
            pieces: Iterator[tuple[int, str]] = iter([(1, (ROOT / name).read_text())])
        elif name.endswith((".py", ".pyi")):
            pieces = python_prose((ROOT / name).read_text())
        else:
            continue
        for first, text in pieces:
            for match in REFERENCE.finditer(text):
                line = first + text.count("\n", 0, match.start())
                found.setdefault(match.group(0), []).append(f"{name}:{line}")
    return found


def stub_declares(name: str, stub: str) -> bool:
    """Whether python/ingot/_ingot.pyi (``stub``) declares ``name`` at its top level."""
    tree = ast.parse(stub)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return True
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == name for t in node.targets
        ):
            return True
    return False


def has_attribute(obj: object, name: str) -> bool:
    """``obj.name`` exists, or ``obj`` is a class that declares it as a field (a dataclass's
    field with a default factory is no class attribute)."""
    if hasattr(obj, name):
        return True
    if isinstance(obj, type):
        return any(name in getattr(klass, "__annotations__", {}) for klass in obj.__mro__)
    return False


def unresolved(reference: str, stub: str) -> str | None:
    """Why ``reference`` names nothing, or None when it resolves: the longest importable
    module, then attributes (submodules imported as needed); ``ingot._ingot``'s names are
    checked against its stub, which the compiled module must match (tests/test_stub.py)."""
    parts = reference.split(".")
    if parts[:2] == ["ingot", "_ingot"] and len(parts) > 2:
        if parts[2].startswith("__") or stub_declares(parts[2], stub):
            return None
        return f"python/ingot/_ingot.pyi declares no {parts[2]}"
    obj: object = importlib.import_module("ingot")
    path = "ingot"
    for part in parts[1:]:
        if not has_attribute(obj, part):
            try:
                obj = importlib.import_module(f"{path}.{part}")
            except ModuleNotFoundError:
                return f"{path} has no {part}"
        else:
            obj = getattr(obj, part, None)
        path = f"{path}.{part}"
    return None


def test_every_ingot_reference_in_the_docs_and_docstrings_resolves():
    stub = (ROOT / "python" / "ingot" / "_ingot.pyi").read_text()
    found = references(tracked_files())
    assert "ingot.build.archive.reach" in found  # the scan reads what it should
    broken = []
    for reference, places in sorted(found.items()):
        why = unresolved(reference, stub)
        if why is not None:
            broken += [f"{place}: {reference} ({why})" for place in places]
    assert not broken, "\n".join(broken)


def test_the_reference_check_catches_a_name_that_moved(tmp_path):
    stub = (ROOT / "python" / "ingot" / "_ingot.pyi").read_text()
    assert unresolved("ingot.build.archive.reach", stub) is None
    assert unresolved("ingot._ingot.KINDS", stub) is None
    assert unresolved("ingot.pack.KINDS", stub) == "ingot has no pack"
    assert (
        unresolved("ingot.cachedir.no_such_function", stub)
        == "ingot.cachedir has no no_such_function"
    )
    assert "declares no" in str(unresolved("ingot._ingot.no_such_function", stub))
    source = '"""See :func:`ingot.firstuse.imports_in_source`."""\n# ingot.policy.PREPARATIONS\n'
    assert [(line, REFERENCE.findall(text)) for line, text in python_prose(source)] == [
        (1, ["ingot.firstuse.imports_in_source"]),
        (2, ["ingot.policy.PREPARATIONS"]),
    ]
    assert REFERENCE.findall("python/ingot/cli.py, pyingot.dist, _ingot.so") == []


def headings(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings."""
    anchors = set()
    for line in markdown.splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading and not line.startswith("#!"):
            words = re.sub(r"[^\w\- ]", "", heading.group(1).lower())
            anchors.add(words.replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("page", ["docs/benchmarks.md", "bench/results/HISTORY.md"])
def test_links_into_the_benchmark_pages_name_their_headings(page):
    target = (ROOT / page).resolve()
    anchors = headings(target.read_text())
    broken = []
    for name in tracked_files():
        if not name.endswith(".md"):
            continue
        source = ROOT / name
        for match in re.finditer(r"\]\(([^)#\s]*)#([^)\s]+)\)", source.read_text()):
            linked = (source.parent / match.group(1)).resolve() if match.group(1) else source
            if linked == target and match.group(2) not in anchors:
                broken.append(f"{name}: #{match.group(2)}")
    assert not broken, "\n".join(broken)
