"""What a user gets from the release wheels (scripts/wheels), on a fresh system: a minimal Debian 12
root (`scripts/debian-root bookworm`) with only apt's python3 and python3-venv (no C compiler, no
cargo, no libpython headers or library) installs ingot from a folder of wheels, builds a PEP 723
script that needs requests (from the same folder) for its own Python's runtime and for 3.13's,
each installed on demand through pip's configuration, and both executables run on Debian 11.

Inputs (scripts/test makes them): INGOT_TEST_WHEELS (the wheels of ingot and its runtimes for
3.11 and 3.13), INGOT_DEBIAN12_ROOT, INGOT_DEBIAN11_ROOT. Without them these tests skip, or fail
under INGOT_REQUIRE_PYTHONS (CI). Every command in a root runs under a process-count limit and a
timeout (tests/support/proclimit.py).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ingot.machine import host_machine

import proclimit
from test_old_system import CHROOT, debian11, require, run_old  # noqa: F401 - a fixture

APP = """\
# /// script
# dependencies = ["requests"]
# ///
import ssl
import sys

import requests

print(sys.version.split()[0], requests.__version__, ssl.OPENSSL_VERSION.split()[1])
session = requests.Session()  # urllib3, certifi's CA bundle, charset_normalizer, idna
print(session.get_adapter("https://example.org").__class__.__name__)
"""


@pytest.fixture(scope="module")
def wheels():
    given = os.environ.get("INGOT_TEST_WHEELS")
    require(given and Path(given).is_dir(), "INGOT_TEST_WHEELS names no folder of wheels")
    found = sorted(path.name for path in Path(given).glob("*.whl"))
    for wanted in ("pyingot-*-cp311-*", "pyingot_runtime_cp311-*", "pyingot_runtime_cp313-*"):
        require(
            any(re.fullmatch(wanted.replace("*", ".*"), name) for name in found),
            f"no {wanted} wheel in {given} (scripts/wheels makes them)",
        )
    return Path(given)


@pytest.fixture(scope="module")
def debian12():
    given = os.environ.get("INGOT_DEBIAN12_ROOT")
    require(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare")
    require(given and Path(given, "bin", "sh").exists(), "INGOT_DEBIAN12_ROOT names no root")
    root = Path(given)
    assert (root / "usr" / "bin" / "python3.11").exists()
    # Nothing to compile with: no C compiler, no Rust, no libpython to link.
    for absent in ("usr/bin/cc", "usr/bin/gcc", "usr/bin/cargo", "usr/bin/rustc", "usr/bin/ld"):
        assert not (root / absent).exists(), absent
    assert not list(root.glob(f"usr/lib/{host_machine().triplet}/libpython3*")), (
        "libpython is there"
    )
    assert not list(root.glob("usr/include/python3*")), "Python's headers are there"
    return root


@pytest.fixture(scope="module")
def requirement_wheels(wheels, tmp_path_factory):
    """The wheels of ingot and its runtimes, with requests' for the runtimes (pip download, here
    where PyPI is reachable): the folder pip gets in the root, which has no index."""
    folder = tmp_path_factory.mktemp("find-links")
    for wheel in wheels.glob("*.whl"):
        shutil.copy2(wheel, folder)
    for version in ("3.11", "3.13"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "requests",
                "--only-binary",
                ":all:",
                "--platform",
                f"manylinux2014_{host_machine().name}",
                "--python-version",
                version,
                "-d",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        require(done.returncode == 0, f"pip download requests: {done.stderr.strip()[-300:]}")
    return folder


def in_root(root, script, *, max_processes=64, timeout=600):
    """``script`` (sh) in ``root``, as root, in a mount namespace of its own with /proc."""
    command = (
        f"mount -t proc proc {shlex.quote(str(root))}/proc && "
        f"exec env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 {CHROOT} "
        f"{shlex.quote(str(root))} sh -c {shlex.quote(script)}"
    )
    result = proclimit.run(
        ["unshare", "--mount", "--fork", "sh", "-c", command],
        max_processes=max_processes,
        timeout=timeout,
    )
    assert not result.timed_out and result.limit_hit == 0, result.stderr
    return result


def test_ingot_installs_without_a_compiler_and_builds_portable_executables(
    debian12, debian11, requirement_wheels, tmp_path
):
    place = f"/tmp/ingot-fresh-{uuid.uuid4().hex[:8]}"
    inside = debian12 / place.lstrip("/")
    inside.mkdir(parents=True)
    try:
        shutil.copytree(requirement_wheels, inside / "wheels")
        (inside / "app.py").write_text(APP)
        venv = in_root(debian12, f"cd {place} && python3 -m venv venv")
        assert venv.returncode == 0, venv.stderr
        started = time.monotonic()
        installed = in_root(
            debian12,
            f"cd {place} && venv/bin/pip install -q --no-index --find-links wheels pyingot && "
            "venv/bin/ingot --version",
        )
        seconds = time.monotonic() - started
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert "ingot " in installed.stdout and "(Python 3.11." in installed.stdout
        # For the note (pytest -s shows it); not a timed assertion.
        print(f"\npip install --no-index --find-links wheels pyingot: {seconds:.1f} s")
        pip = f"PIP_NO_INDEX=1 PIP_FIND_LINKS={place}/wheels INGOT_RUNTIMES={place}/runtimes"
        # The build cache goes with the rest of this run, not into the kept root's home.
        pip += f" INGOT_CACHE_DIR={place}/cache"
        built = in_root(
            debian12,
            f"cd {place} && env {pip} venv/bin/ingot build app.py -o app-default && "
            f"env {pip} venv/bin/ingot build app.py --python 3.13 -o app-313",
            timeout=1200,
        )
        log = built.stdout + built.stderr
        assert built.returncode == 0, log
        assert "installing the runtime for Python 3.11" in log, log
        assert "installing the runtime for Python 3.13" in log, log
        assert log.count("runs on Linux with glibc 2.17 or later") == 2, log
        outputs = {}
        for name in ("app-default", "app-313"):
            result = run_old(debian11, inside / name)
            assert (result.returncode, result.stderr) == (0, ""), result.stderr
            outputs[name] = result.stdout.split("\n")
        assert outputs["app-default"][0].startswith("3.11."), outputs
        assert outputs["app-313"][0].startswith("3.13."), outputs
        for lines in outputs.values():
            assert lines[1] == "HTTPAdapter", lines
    finally:
        shutil.rmtree(inside, ignore_errors=True)
