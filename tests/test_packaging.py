"""The installed ingot package carries a launcher for the Python it is installed in."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ingot
from ingot.build.resolve.launcher import find_launcher

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def test_installed_package_carries_a_launcher_for_its_python(monkeypatch):
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    launcher = find_launcher()
    assert launcher.name == "ingot-launcher-%d.%d" % sys.version_info[:2]
    assert os.access(launcher, os.X_OK)
    bare = subprocess.run([str(launcher)], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 1
    assert "ingot launcher for Python %d.%d" % sys.version_info[:2] in bare.stderr


def test_installed_package_carries_the_launchers_sources(monkeypatch):
    # What `ingot runtime build` links a runtime's launcher from, when ingot is not run from a
    # checkout (ingot.runtime.launcher_build.source_tree).
    import pytest

    from ingot.runtime import launcher_build

    package = Path(ingot.__file__).resolve().parent
    if (package.parents[1] / "crates").is_dir():
        pytest.skip("ingot runs from a checkout here, not from an installed wheel")
    monkeypatch.delenv("INGOT_SOURCE_TREE", raising=False)
    tree = launcher_build.source_tree()
    assert tree == package / "_source"
    for name in (
        "Cargo.toml",
        "Cargo.lock",
        "crates/ingot-launcher/Cargo.toml",
        "crates/ingot-launcher/build.rs",
        "crates/ingot-launcher/src/boot.py",
        "crates/ingot-importer/src/finder.rs",
        "python/ingot/boot/support.py",
    ):
        assert (tree / name).is_file(), name
    assert not (tree / "crates" / "target").exists()
