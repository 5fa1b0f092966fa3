"""The installed ingot package carries a launcher for the Python it is installed in."""

import os
import subprocess
import sys

import ingot.build


def test_installed_package_carries_a_launcher_for_its_python(monkeypatch):
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    launcher = ingot.build.find_launcher()
    assert launcher.name == "ingot-launcher-%d.%d" % sys.version_info[:2]
    assert os.access(launcher, os.X_OK)
    bare = subprocess.run([str(launcher)], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 1
    assert "ingot launcher for Python %d.%d" % sys.version_info[:2] in bare.stderr
