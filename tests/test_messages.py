"""What ingot tells its users speaks to them: no issue numbers or internal history in any command's
help, in errors or in the build's output; `ingot --version` is one line however long its
interpreter's path is."""

import argparse
import ast
import re
import sys
from pathlib import Path

import pytest

from helpers import ROOT

pytestmark = pytest.mark.fast

#: What cites the project's own history rather than speaking to a user.
HISTORY = re.compile(r"\bissues? #?\d+|\bsessions?\b|#\d{2,}\b", re.IGNORECASE)


def parsers(parser, prefix="ingot"):
    """Every (sub)command's parser, by its command line."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{prefix} {name}")


def test_no_help_text_cites_an_issue(monkeypatch):
    from ingot import cli

    monkeypatch.setenv("COLUMNS", "200")
    found = {command: parser.format_help() for command, parser in parsers(cli._parser())}
    assert {"ingot build", "ingot inspect", "ingot runtime sources"} <= set(found)
    cited = {
        command: HISTORY.findall(text) for command, text in found.items() if HISTORY.search(text)
    }
    assert cited == {}
    assert not HISTORY.search(cli._QUICK_START + cli._BUILD_EXAMPLES)


def strings_said(path: Path):
    """The string constants of a module that are not docstrings: its messages (comments are
    not in the syntax tree)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        is_string = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_string and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_message_of_the_code_cites_an_issue():
    # Errors, hints, warnings and the build's progress are string constants (f-strings' parts
    # too): none cites the project's history.
    package = ROOT / "python" / "ingot"
    cited = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for path in sorted(package.rglob("*.py"))
        if not {"_source", "_launcher"} & set(path.parts)
        for line, text in strings_said(path)
        if HISTORY.search(text)
    ]
    assert cited == []


def test_the_scan_sees_a_message_and_not_a_docstring(tmp_path):
    # (so that the test above can fail)
    module = tmp_path / "m.py"
    module.write_text('"""Made for issue 42."""\nraise SystemExit(f"see issue {1}2 of the {x}")\n')
    assert [text for _, text in strings_said(module)] == ["see issue ", "2 of the "]
    module.write_text('help = "the scipy app of issue 42: 15%"\n')
    assert any(HISTORY.search(text) for _, text in strings_said(module))


def test_version_is_one_line_whatever_the_paths_length(monkeypatch, capsys):
    from ingot import __version__, cli

    long = "/opt/" + "a-rather-long-directory-name/" * 8 + "bin/python3"
    monkeypatch.setattr(sys, "executable", long)
    monkeypatch.setenv("COLUMNS", "20")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out == f"ingot {__version__} (Python {sys.version.split()[0]} at {long})\n"
