"""importlib.resources over archived package data: the Traversable API and the legacy calls."""

import importlib.resources as resources
import sys
import warnings

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


@pytest.fixture
def app(builder, tmp_path):
    builder.package("assets", "")
    builder.module("assets.code", "X = 1\n")
    builder.package("assets.nested", "")
    builder.data("assets/readme.txt", "héllo\n")
    builder.data("assets/blob.bin", b"\x00\x01\x02")
    builder.data("assets/templates/base.html", "<html>{{ x }}</html>")
    builder.data("assets/templates/deep/inner.html", "inner")
    return builder.write(tmp_path / "assets.ingot")


def test_files_returns_a_traversable_directory(app, install):
    install(app)
    root = resources.files("assets")
    assert root.is_dir()
    assert not root.is_file()
    assert str(root) == f"{app}/assets"
    try:
        from importlib.resources.abc import Traversable
    except ImportError:  # 3.10
        from importlib.abc import Traversable
    assert isinstance(root, Traversable)


def test_iterdir_lists_files_modules_and_directories(app, install):
    install(app)
    names = {child.name: child.is_dir() for child in resources.files("assets").iterdir()}
    assert names == {
        "__init__.py": False,
        "code.py": False,
        "nested": True,
        "readme.txt": False,
        "blob.bin": False,
        "templates": True,
    }


def test_read_and_open_in_text_and_binary_modes(app, install):
    install(app)
    root = resources.files("assets")
    assert root.joinpath("readme.txt").read_text(encoding="utf-8") == "héllo\n"
    assert (root / "blob.bin").read_bytes() == b"\x00\x01\x02"
    with (root / "readme.txt").open("rb") as stream:
        assert stream.read() == "héllo\n".encode()
    with (root / "readme.txt").open("r", encoding="utf-8") as stream:
        assert stream.read() == "héllo\n"
    assert root.joinpath("templates", "deep", "inner.html").read_text() == "inner"
    assert (root / "templates" / "deep").is_dir()


def test_missing_resource_raises_file_not_found(app, install):
    install(app)
    missing = resources.files("assets") / "nope.txt"
    assert not missing.is_file()
    assert not missing.is_dir()
    with pytest.raises(FileNotFoundError):
        missing.read_bytes()


def test_joinpath_cannot_leave_the_archive(app, install):
    install(app)
    with pytest.raises(ValueError):
        resources.files("assets").joinpath("../../../etc/passwd")


def test_as_file_gives_a_real_temporary_file(app, install):
    install(app)
    with resources.as_file(resources.files("assets") / "blob.bin") as path:
        assert path.read_bytes() == b"\x00\x01\x02"


def test_as_file_of_a_directory_gives_a_real_directory(app, install):
    # Issue 27: gettext's localedir and the like. Python 3.12 copies a directory itself; 3.10
    # and 3.11 only files, so ingot does it for its archive's directories there.
    import os

    install(app)
    with resources.as_file(resources.files("assets") / "templates") as path:
        assert path.is_dir()
        assert sorted(os.listdir(path)) == ["base.html", "deep"]
        assert (path / "base.html").read_text() == "<html>{{ x }}</html>"
        assert (path / "deep" / "inner.html").read_text() == "inner"
        copy = path
    assert not copy.exists()  # a temporary copy, removed afterwards
    with resources.as_file(resources.files("assets")) as path:  # a package directory
        assert (path / "readme.txt").read_text(encoding="utf-8") == "héllo\n"
        assert (path / "code.py").is_file() and (path / "nested").is_dir()


def test_legacy_resource_functions(app, install):
    install(app)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert resources.read_text("assets", "readme.txt") == "héllo\n"
        assert resources.read_binary("assets", "blob.bin") == b"\x00\x01\x02"
        assert resources.is_resource("assets", "readme.txt")
        assert not resources.is_resource("assets", "templates")
        assert "readme.txt" in set(resources.contents("assets"))
        with resources.open_binary("assets", "blob.bin") as stream:
            assert stream.read() == b"\x00\x01\x02"


def test_resource_reader_protocol(app, install):
    finder = install(app)
    reader = finder.get_resource_reader("assets")
    with reader.open_resource("readme.txt") as stream:
        assert stream.read() == "héllo\n".encode()
    assert reader.is_resource("readme.txt")
    with pytest.raises(FileNotFoundError):
        reader.resource_path("readme.txt")


@pytest.mark.skipif(sys.version_info < (3, 12), reason="files(module) arrived in Python 3.12")
def test_files_of_a_module_is_its_directory(app, install):
    install(app)
    assert str(resources.files("assets.code")) == f"{app}/assets"
