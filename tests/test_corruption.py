"""Broken archives give an ImportError subclass that names the problem, and never crash."""

import sys

import pytest

import ingot

from helpers import ArchiveBuilder, run_python

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

OPEN_AND_IMPORT = """
import sys, ingot
try:
    ingot.install(sys.argv[1])
    import victim
    print("imported", victim.VALUE)
except ImportError as error:
    print(type(error).__name__, error)
"""


@pytest.fixture
def valid(tmp_path):
    builder = ArchiveBuilder()
    builder.module("victim", "VALUE = 'intact'\n" + "# padding\n" * 50)
    return builder.write(tmp_path / "valid.ingot").read_bytes()


def run_on(tmp_path, data):
    path = tmp_path / "broken.ingot"
    path.write_bytes(data)
    result = run_python(sys.executable, OPEN_AND_IMPORT, path, check=False)
    assert result.returncode == 0, f"the interpreter died: {result.returncode}\n{result.stderr}"
    return result.stdout.strip()


def test_valid_archive_imports(tmp_path, valid):
    assert run_on(tmp_path, valid) == "imported intact"


def test_empty_file_is_not_an_archive(tmp_path):
    assert run_on(tmp_path, b"").startswith("ArchiveError")
    assert "not an ingot archive" in run_on(tmp_path, b"")


def test_missing_file_names_the_path(tmp_path, clean_imports):
    with pytest.raises(ingot.ArchiveError, match=r"missing\.ingot"):
        ingot.IngotFinder(str(tmp_path / "missing.ingot"))


@pytest.mark.parametrize("keep", [1, 16, 95, 200, -17, -1])
def test_truncated_archive_is_reported(tmp_path, valid, keep):
    output = run_on(tmp_path, valid[:keep])
    assert output.startswith("ArchiveError"), output
    assert "truncated" in output or "not an ingot archive" in output


def test_flipped_byte_in_the_index_fails_the_index_checksum(tmp_path, valid):
    data = bytearray(valid)
    data[100] ^= 0xFF
    output = run_on(tmp_path, bytes(data))
    assert output.startswith("ArchiveError") and "index is corrupted" in output, output


@pytest.mark.parametrize("stored", ["bytecode", "source"])
def test_flipped_byte_in_module_data_is_caught_at_import_and_names_the_entry(tmp_path, stored):
    builder = ArchiveBuilder()
    if stored == "bytecode":
        builder.module("victim", "VALUE = 'intact'\n", with_source=False)
    else:
        builder.module("victim", "VALUE = 'intact'\n", levels=())
    data = bytearray(builder.write(tmp_path / "one.ingot").read_bytes())
    data[data.find(b"intact")] ^= 0xFF
    output = run_on(tmp_path, bytes(data))
    assert output.startswith("ArchiveError"), output
    assert "victim" in output and "corrupted" in output
    assert "hint: the file is damaged: build or copy it again" in output


def test_unsupported_format_version_names_both_versions(tmp_path, valid):
    data = bytearray(valid)
    data[8:12] = (99).to_bytes(4, "little")
    output = run_on(tmp_path, bytes(data))
    assert "unsupported archive format version 99" in output
    assert f"reads version {ingot.FORMAT_VERSION}" in output


def test_archive_for_another_python_is_refused(tmp_path):
    builder = ArchiveBuilder(python_version=(3, 9), magic=(3425).to_bytes(2, "little") + b"\r\n")
    builder.writer.add_module("victim", source=b"VALUE = 1\n")
    path = builder.write(tmp_path / "old.ingot")
    output = run_on(tmp_path, path.read_bytes())
    assert output.startswith("ArchiveError"), output
    assert "built for Python 3.9" in output
    assert f"this is Python {sys.version_info.major}.{sys.version_info.minor}" in output


def test_archive_error_is_an_import_error():
    assert issubclass(ingot.ArchiveError, ImportError)


def test_directory_is_refused_with_a_clear_error(tmp_path, clean_imports):
    with pytest.raises(ingot.ArchiveError, match="is a directory"):
        ingot.IngotFinder(str(tmp_path))


def test_inspect_verify_finds_a_damaged_entry_without_running_anything(tmp_path, capsys):
    from ingot import cli

    builder = ArchiveBuilder()
    builder.module("victim", "VALUE = 'intact'\n", levels=())
    builder.data("pkgdata/table.csv", "a,b\n1,2\n")
    path = builder.write(tmp_path / "app.ingot")
    assert cli.main(["inspect", "--verify", str(path)]) == 0
    assert "verified: every checksum of" in capsys.readouterr().err
    data = bytearray(path.read_bytes())
    data[data.find(b"intact")] ^= 0xFF
    path.write_bytes(bytes(data))
    assert cli.main(["inspect", str(path)]) == 0  # listing reads no entry's data
    capsys.readouterr()
    assert cli.main(["inspect", "--verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"error: {path} is damaged: " in err and "victim" in err and "corrupted" in err
    assert "hint: build it again" in err
