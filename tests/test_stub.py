"""The hand-written stub `python/ingot/_ingot.pyi` matches the compiled module."""

import importlib.util
import os
import subprocess
import sys

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def test_stub_matches_the_compiled_module():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("mypy is required for the stub check (scripts/test installs it)")
        pytest.skip("mypy is not installed")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ingot._ingot"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
