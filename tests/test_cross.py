"""Executables built on this machine for the other architecture ingot builds for (`ingot build
--target aarch64` on x86-64): built with that architecture's runtime and its manylinux wheels,
without running anything of it (no binfmt handler is registered while they build: a target
binary started by the build would fail to execute), then run by qemu-user against a Debian 11
root of that architecture (`scripts/debian-root --arch arm64 bullseye DIR`, unpacked only: its
loader and glibc 2.31).

Needs both runtimes of Python 3.13 (this machine's and the target's) in the store, the root and
`qemu-<arch>-static`; scripts/test makes them once. Without them these tests skip, or fail under
`INGOT_REQUIRE_PYTHONS` (CI). Every run is under a process-count limit and a timeout
(tests/support/proclimit.py); a start under emulation is about 30 times slower than a native one.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingot.elf import elf_machine
from ingot.machine import MACHINES, host_machine
from ingot.runtime import store

import proclimit
from helpers import ROOT
from test_old_system import STDLIB, check_stdlib_report, require

VERSION = "3.13"
#: The architecture built for: the other one of ingot's two.
TARGET = next(name for name in MACHINES if name != host_machine().name)
DEBIAN_ARCH = {"aarch64": "arm64", "x86_64": "amd64"}[TARGET]


@pytest.fixture(scope="module")
def runtimes(runtime_store):
    target = store.find_runtime(VERSION, TARGET)
    require(
        target is not None,
        f"no {TARGET} runtime {VERSION} in {store.store()} (scripts/test builds it: ingot "
        f"runtime build {VERSION} --target {TARGET})",
    )
    host = store.find_runtime(target.version)
    require(host is not None and host.version == target.version, f"no runtime {target.version}")
    return target, host


@pytest.fixture(scope="module")
def qemu():
    found = shutil.which(f"qemu-{TARGET}-static")
    require(found is not None, f"no qemu-{TARGET}-static (apt-get install qemu-user-static)")
    return found


@pytest.fixture(scope="module")
def root():
    given = os.environ.get("INGOT_DEBIAN11_FOREIGN_ROOT")
    if given:
        path = Path(given)
    else:
        require(os.geteuid() == 0, "debootstrap needs root")
        cache = Path(os.environ.get("INGOT_CI_CACHE", "/var/cache/ingot"))
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "debian-root"), "--arch", DEBIAN_ARCH, "bullseye",
             str(cache / f"debian11-{DEBIAN_ARCH}"), "libsqlite3-0"],  # (as scripts/test)
            capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        path = Path(done.stdout.strip())
    libc = sorted((path / "lib" / f"{TARGET}-linux-gnu").glob("libc-2.*.so"))
    assert libc and libc[0].name == "libc-2.31.so", libc
    return path


def build(tmp_path, source, *options, expect=0):
    """`ingot build SOURCE --python 3.13 --target TARGET ...`, by the Python the tests run under."""
    output = tmp_path / "app"
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", str(source), "--python", VERSION,
         "--target", TARGET, "-o", str(output), *options],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == expect, done.stderr
    return output, done.stderr


def run_emulated(root, qemu, executable, *args):
    """Runs the executable under qemu-user, its loader and libraries the root's."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": "/root", "QEMU_LD_PREFIX": str(root)}
    result = proclimit.run(
        [qemu, str(executable), *args], max_processes=8, timeout=600, env=environment
    )
    assert not result.timed_out and result.limit_hit == 0, result.stderr
    return result


def inspect(path):
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", "--json", str(path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_the_other_architectures_runtime_is_optimized_without_a_training_run(runtimes):
    """Issue 41: a cross build cannot run its PGO training here; it gets CPython's -O3 and
    ThinLTO (unless built with --no-lto, as CI builds the runtimes it has not cached), said in
    its runtime.json and its sysconfig data."""
    target, _host = runtimes
    assert target.info["optimization"]["pgo"] is None, target.info
    (data,) = (target.path / "python" / "lib").glob("python3.*/_sysconfigdata_*.py")
    text = data.read_text()
    assert "--enable-optimizations" not in text
    if target.info["optimization"]["lto"] is None:
        assert "--with-lto" not in text
    else:
        assert target.info["optimization"]["lto"] == "thin", target.info
        assert "'--with-lto=thin'" in text


def _defines(runtime):
    """The ``pyconfig.h`` of a runtime, as {name: value or None (undefined)}."""
    (header,) = (runtime.path / "python" / "include").glob("python3.*/pyconfig.h")
    defines = {}
    for line in header.read_text().splitlines():
        if line.startswith("#define "):
            name, _, value = line[len("#define ") :].partition(" ")
            defines[name] = value
        elif line.startswith("/* #undef ") and line.endswith(" */"):
            defines[line[len("/* #undef ") : -len(" */")]] = None
    return defines


def test_the_cross_build_configures_cpython_as_the_native_build_does(runtimes):
    """configure cannot run programs built for the other machine and then assumes the cautious
    answer: the aarch64 runtime had no computed gotos (a slower evaluation loop), FNV instead
    of SipHash for str hashes, no time.tzset. The recipes give configure the answers for Linux
    on either machine: the cross build's pyconfig.h is the native build's, but for what is the
    machine's own (x86 inline assembly)."""
    target, host = runtimes
    native, cross = _defines(host), _defines(target)
    differing = sorted(
        name for name in native.keys() | cross.keys() if native.get(name) != cross.get(name)
    )
    machine_specific = {"HAVE_GCC_ASM_FOR_X64", "HAVE_GCC_ASM_FOR_X87"}
    assert set(differing) <= machine_specific, {
        name: (native.get(name), cross.get(name)) for name in differing
    }
    assert cross["HAVE_COMPUTED_GOTOS"] == "1" and cross["HAVE_WORKING_TZSET"] == "1"
    assert cross["HAVE_ALIGNED_REQUIRED"] is None


def test_hello_built_for_the_other_architecture_runs_there(runtimes, qemu, root, tmp_path):
    target, _host = runtimes
    app, log = build(tmp_path, ROOT / "examples" / "hello")
    assert "runs on Linux with glibc 2.17 or later" in log, log
    assert elf_machine(app) == TARGET
    info = inspect(app)
    assert info["machine"] == TARGET
    assert info["runtime"]["name"] == target.name == info["launch"]["runtime"]
    assert tuple(int(part) for part in info["glibc_floor"]["version"].split(".")) <= (2, 17)
    text = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", str(app)], capture_output=True, text=True
    ).stdout
    assert f", {TARGET}\n" in text.splitlines()[0] + "\n", text
    result = run_emulated(root, qemu, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("Hello from memory! (hello 1.0.0 from "), result.stdout


def test_the_standard_library_works_on_the_other_architecture(runtimes, qemu, root, tmp_path):
    target, _host = runtimes
    script = tmp_path / "stdlib_check.py"
    script.write_text(textwrap.dedent(STDLIB))
    app, _log = build(tmp_path, script)
    result = run_emulated(root, qemu, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    check_stdlib_report(json.loads(result.stdout), target.version)


NUMPY_APP = """
# /// script
# dependencies = ["numpy==2.2.6"]
# ///
import json, platform, numpy
matrix = numpy.arange(9.0).reshape(3, 3) + numpy.eye(3)
print(json.dumps({"det": round(float(numpy.linalg.det(matrix)), 3),
                  "machine": platform.machine(), "numpy": numpy.__version__}))
"""


def test_a_numpy_app_built_for_the_other_architecture_runs_there(runtimes, qemu, root, tmp_path):
    script = tmp_path / "numpy_app.py"
    script.write_text(textwrap.dedent(NUMPY_APP).lstrip())
    app, log = build(tmp_path, script)
    assert "runs on Linux with glibc 2.17 or later" in log, log
    natives = [
        entry for entry in inspect(app)["entries"]
        if entry["kind"] in ("extension-module", "extension-package")
        and entry["name"].startswith("numpy.")
    ]  # fmt: skip
    assert natives, "numpy's extension modules are carried"
    result = run_emulated(root, qemu, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert json.loads(result.stdout) == {"det": -5.0, "machine": TARGET, "numpy": "2.2.6"}


def test_the_projects_table_can_name_the_target(runtimes, tmp_path):
    project = tmp_path / "hello"
    shutil.copytree(ROOT / "examples" / "hello", project)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    assert "[tool.ingot]" not in text
    alias = {"aarch64": "arm64", "x86_64": "amd64"}[TARGET]  # Debian's name is taken too
    pyproject.write_text(text + f'\n[tool.ingot]\ntarget = "{alias}"\npython = "{VERSION}"\n')
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", str(project), "-o", str(tmp_path / "app")],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert elf_machine(tmp_path / "app") == TARGET
    pyproject.write_text(text + '\n[tool.ingot]\ntarget = "sparc64"\n')
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", str(project), "-o", str(tmp_path / "other")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "target" in done.stderr and "'x86_64' or 'aarch64'" in done.stderr, done.stderr
    assert not (tmp_path / "other").exists()


def test_a_launcher_of_another_architecture_is_refused(runtimes, tmp_path):
    _target, host = runtimes
    launcher = host.path / host.info["launcher"]["file"]
    _app, log = build(tmp_path, ROOT / "examples" / "hello", "--launcher", str(launcher), expect=1)
    assert f"is built for {host.machine}, but the executable is for {TARGET}" in log, log
    assert "hint:" in log


def test_a_target_ingot_does_not_build_for_is_a_clear_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", str(ROOT / "examples" / "hello"),
         "--target", "sparc64", "-o", str(tmp_path / "app")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "sparc64" in done.stderr and "aarch64" in done.stderr, done.stderr
    assert not (tmp_path / "app").exists()


def test_a_cross_build_with_this_machines_python_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", str(ROOT / "examples" / "hello"),
         "--python", "local", "--target", TARGET, "-o", str(tmp_path / "app")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"a build for {TARGET} takes a runtime" in done.stderr
    assert "hint: leave out --python local" in done.stderr


def test_a_requirement_without_a_wheel_for_the_target_is_a_clear_error(runtimes, tmp_path):
    script = tmp_path / "windows_only.py"
    script.write_text('# /// script\n# dependencies = ["pywin32==311"]\n# ///\nprint(1)\n')
    _app, log = build(tmp_path, script, expect=1)
    assert "pip could not install pywin32==311" in log and "Traceback" not in log, log
    assert f"a wheel of it for CPython {VERSION} on {TARGET}" in log, log
    assert not (tmp_path / "app").exists()
