"""What of a project's dependencies (and of the project) `ingot build` runs, and how
(ingot.build.sandbox; docs/security.md, Builds; issue 53, defect 4): the import probe and a files
package's preparation run in a child with an environment made from scratch, a scratch home and
working directory, no network, and as root as nobody; `--no-run-dependencies` runs neither.

The dependency is a real wheel with native code (an extension module: a copy of one of the
standard library's), installed by the build's real pip from a local folder; the app's blib2to3
is a real package. Both write down, when their code runs, what they were given."""

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

from ingot.build.archive.probe import import_probe

SECRET = "INGOT_TEST_SECRET"

#: What the dependency's (or blib2to3's) code writes, as JSON, to the file named first.
REPORT = """
import json, os, socket, sys
def report(path, port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        reached = True
    except OSError:
        reached = False
    with open(path, "w") as f:
        json.dump({"uid": os.getuid(), "env": dict(os.environ), "cwd": os.getcwd(),
                   "reached": reached, "interfaces": [n for _, n in socket.if_nameindex()]}, f)
"""


def _wheel(directory: Path, name: str, files: dict[str, bytes]) -> Path:
    """A wheel of ``name`` 1.0 holding ``files`` (bytes: an extension module too)."""
    dist_info = f"{name}-1.0.dist-info"
    contents = dict(files)
    contents[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    )
    contents[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: ingot-tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
    )
    record = []
    for path, data in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    contents[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def _bisect_file() -> str:
    import _bisect

    return _bisect.__file__


def _namespaces() -> bool:
    """Whether this machine gives a process a network namespace (as root, or in a user
    namespace otherwise)."""
    command = ["unshare", "--net", "true"]
    if os.geteuid() != 0:
        command[1:1] = ["--user", "--map-root-user"]
    try:
        return subprocess.run(command, capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.fixture
def marker_dir():
    """A directory anyone may write (the child may run as nobody), and its removal."""
    directory = Path(tempfile.mkdtemp(prefix="ingot-test-sandbox-", dir="/tmp"))
    directory.chmod(0o777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def listener():
    """A port listening on the host's loopback (out of reach from a network namespace)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def _build(tmp_path, source, *options, env=None):
    out = tmp_path / "out.ingot"
    command = [sys.executable, "-m", "ingot", "build", str(source), "--python", "local"]
    command += ["--archive-only", "--no-cache", "-o", str(out), *options]
    environment = {**os.environ, SECRET: "hunter2", **(env or {})}
    run = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=600
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout + run.stderr, out


@pytest.fixture
def native_app(tmp_path, marker_dir, listener):
    """An app script importing ``nativedep``, a wheel with an extension module whose
    ``__init__`` reports what it was given to ``marker_dir/probe.json``."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    extension = Path(_bisect_file())
    init = REPORT + f"report({str(marker_dir / 'probe.json')!r}, {listener})\n"
    _wheel(
        wheels,
        "nativedep",
        {
            "nativedep/__init__.py": init.encode(),
            f"nativedep/_bisect{suffix}": extension.read_bytes(),
        },
    )
    app = tmp_path / "app.py"
    app.write_text("import nativedep\nprint('app')\n")
    env = {"PIP_FIND_LINKS": str(wheels), "PIP_NO_INDEX": "1"}
    return app, env


def _scrubbed(report: dict, sandboxed: str) -> None:
    """The report of code that ran confined: ``sandboxed`` is the build's line about it."""
    env = report["env"]
    assert SECRET not in env and "PIP_FIND_LINKS" not in env, env
    scratch = os.path.join(tempfile.gettempdir(), "ingot-build-sandbox-")
    assert env["HOME"].startswith(scratch) and env["HOME"] != os.environ.get("HOME"), env
    assert report["cwd"].startswith(scratch), report["cwd"]
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["LANG"] == "C.UTF-8"
    if os.geteuid() == 0:
        assert report["uid"] != 0, report
        assert "as nobody" in sandboxed, sandboxed
    if _namespaces():
        assert not report["reached"] and report["interfaces"] == ["lo"], report
        assert "without network" in sandboxed, sandboxed


def test_the_import_probe_runs_a_dependency_confined(tmp_path, native_app, marker_dir):
    app, env = native_app
    run, _ = _build(tmp_path, app, "--dependency", "nativedep==1.0", env=env)
    said = [line for line in run.splitlines() if "import probe: ran" in line]
    _scrubbed(json.loads((marker_dir / "probe.json").read_text()), "".join(said[:1]))


def test_without_running_dependencies_the_probe_does_not_run(tmp_path, native_app, marker_dir):
    app, env = native_app
    run, out = _build(
        tmp_path, app, "--dependency", "nativedep==1.0", "--no-run-dependencies", env=env
    )
    assert not (marker_dir / "probe.json").exists()
    assert "import probe: not run (--no-run-dependencies)" in run, run
    assert "nativedep" in run.split("import probe: not run", 1)[1].splitlines()[0]
    from ingot import IngotFinder

    assert IngotFinder(str(out)).find_spec("nativedep") is not None  # carried all the same


@pytest.fixture
def blib_app(tmp_path, marker_dir, listener):
    """An app package ``myapp`` and, beside it, its own package named ``blib2to3`` (a files
    package with a built-in preparation) whose ``pgen2/driver.py`` reports what it was given."""
    source = tmp_path / "src"
    (source / "myapp").mkdir(parents=True)
    (source / "myapp" / "__init__.py").write_text("")
    (source / "myapp" / "__main__.py").write_text("import blib2to3\nprint('app')\n")
    blib = source / "blib2to3"
    (blib / "pgen2").mkdir(parents=True)
    (blib / "__init__.py").write_text("")
    (blib / "Grammar.txt").write_text("file_input: ENDMARKER\n")
    (blib / "pgen2" / "__init__.py").write_text("")
    (blib / "pgen2" / "driver.py").write_text(
        REPORT
        + "def main(*grammars):\n"
        + f"    report({str(marker_dir / 'driver.json')!r}, {listener})\n"
        + "    return True\n"
    )
    return source


def test_a_blib2to3_of_the_app_runs_only_confined(tmp_path, blib_app, marker_dir):
    run, _ = _build(tmp_path, blib_app / "myapp", "--package", str(blib_app / "blib2to3"))
    said = [line for line in run.splitlines() if line.startswith("prepared blib2to3")]
    _scrubbed(json.loads((marker_dir / "driver.json").read_text()), "".join(said[:1]))


def test_a_blib2to3_of_the_app_does_not_run_without_running_dependencies(
    tmp_path, blib_app, marker_dir
):
    run, _ = _build(
        tmp_path,
        blib_app / "myapp",
        "--package",
        str(blib_app / "blib2to3"),
        "--no-run-dependencies",
    )
    assert not (marker_dir / "driver.json").exists()
    assert "not prepared (--no-run-dependencies): blib2to3" in run, run


def test_as_root_a_probe_stays_root_where_nobody_cannot_read_the_packages(tmp_path):
    """The packages of a directory of mode 0700 (inside it, what nobody cannot read) are not
    probed as nobody, who would see none of them: the probe stays root, and says why."""
    if os.geteuid() != 0:
        pytest.skip("a change of user is root's")
    packages = tmp_path / "private"
    (packages / "pkg").mkdir(parents=True)
    (packages / "pkg" / "__init__.py").write_text("import colorsys\n")
    packages.chmod(0o700)
    from ingot.build.sandbox import Sandbox

    sandbox = Sandbox()
    found = import_probe([str(packages)], sandbox=sandbox)(["pkg"])
    assert {"pkg", "colorsys"} <= found
    assert sandbox.confinement is not None and sandbox.confinement.user == "root"
    assert any("cannot read" in why for why in sandbox.confinement.why), sandbox.confinement
