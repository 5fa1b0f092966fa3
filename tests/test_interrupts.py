"""What an interrupted build leaves (docs/security.md, "Builds"; issue 53, item 6): SIGTERM
(`timeout`, a CI's cancel) and SIGHUP stop `ingot build` as ^C does, and it leaves nothing
beside the output or in TMPDIR; a child build under a runtime's interpreter ends with its
parent; what a killed build left (SIGKILL, which no handler sees) the next build removes.
Real builds, real signals."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import ingot
from ingot.build.interrupt import Interrupted, interrupts_stop, scratch_directory
from ingot.build.resolve.environment import Environment
from ingot.build.resolve.settings import Request, Settings
from ingot.build.resolve.spec import resolve
from ingot.runtime import store

from helpers import HERE, RUNTIMES, environment

pytestmark = pytest.mark.fast

#: The data beside the script: large enough that writing the output takes a while.
DATA_BYTES = 48 << 20


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A script that reads a large data directory beside it: its build writes ~48 MiB."""
    root = tmp_path_factory.mktemp("app")
    (root / "data").mkdir()
    (root / "data" / "blob.bin").write_bytes(os.urandom(DATA_BYTES))
    script = root / "big.py"
    script.write_text(
        "from pathlib import Path\nprint(len((Path(__file__).parent / 'data' / 'blob.bin').read_bytes()))\n"
    )
    return script


def _ours(directory):
    """What ingot left in ``directory`` (TMPDIR, or the output's)."""
    return sorted(name for name in os.listdir(directory) if name.startswith(("ingot-", ".")))


def _start(script, out, tmp, *options):
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ingot",
            "build",
            str(script),
            "--archive-only",
            "--no-compress",
            "--python",
            "local",
            "-o",
            str(out / "big.ingot"),
            *options,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(found, build, timeout=300.0):
    """Polls ``found()`` (without sleeping: the moment may be short) until it is true; fails
    if the build ends first."""
    deadline = time.monotonic() + timeout
    while not found():
        assert build.poll() is None, f"the build ended first: {build.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "timed out"
    return True


@pytest.mark.parametrize("moment", ["staging", "writing"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_mid_build_leaves_nothing(app, tmp_path, moment, signum):
    # Issue 53: SIGTERM left `.OUT.<pid>.<hex>.tmp` beside the output (up to the executable's
    # size) and `ingot-build-*` in TMPDIR.
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    build = _start(app, out, tmp)
    if moment == "staging":
        _wait_for(lambda: any(name.startswith("ingot-build-") for name in os.listdir(tmp)), build)
    else:
        _wait_for(lambda: any(".tmp" in name for name in os.listdir(out)), build)
    build.send_signal(signum)
    _, err = build.communicate(timeout=60)
    assert build.returncode == 128 + signum, err
    assert f"interrupted ({signal.Signals(signum).name})" in err and "Traceback" not in err
    assert _ours(tmp) == [] and os.listdir(out) == []


def test_a_signal_while_the_staging_directory_is_made_removes_it(tmp_path, monkeypatch):
    # A signal sent the moment the staging directory appeared (as the test above sends it) was
    # handled before the build's `try` began, and the directory stayed. Here the signal arrives
    # inside mkdtemp, after the directory is made: it is held until the removal is sure, then
    # raised, and the block never runs.
    made = []
    real = tempfile.mkdtemp

    def mkdtemp_and_signal(*args, **kwargs):
        path = real(*args, **kwargs)
        made.append(Path(path))
        os.kill(os.getpid(), signal.SIGTERM)
        return path

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_and_signal)
    ran = []
    with (
        pytest.raises(Interrupted) as raised,
        interrupts_stop(),
        scratch_directory("ingot-build-") as path,
    ):
        ran.append(path)
    assert raised.value.signum == signal.SIGTERM and ran == []
    assert len(made) == 1 and made[0].name.startswith(f"ingot-build-{os.getpid()}-")
    assert os.listdir(tmp_path) == []
    # Without a signal, the directory is there in the block and gone after it.
    monkeypatch.setattr(tempfile, "mkdtemp", real)
    with interrupts_stop(), scratch_directory("ingot-build-") as path:
        assert path.is_dir() and path.parent == tmp_path
    assert os.listdir(tmp_path) == []


def test_a_build_removes_what_killed_builds_left(app, tmp_path):
    # SIGKILL, which no handler sees, leaves the staging directory; the next build removes it
    # (its writer's pid is in its name, and that process is gone), and a killed write's
    # temporary file beside the output, as this ingot and earlier ones named it. What a live
    # build holds, or what is too young to judge, stays.
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    build = _start(app, out, tmp)
    _wait_for(lambda: any(name.startswith("ingot-build-") for name in os.listdir(tmp)), build)
    build.kill()
    build.communicate()
    left = _ours(tmp)
    assert len(left) == 1 and left[0].startswith(f"ingot-build-{build.pid}-"), left
    dead = subprocess.Popen(["true"])  # (a pid no process has now)
    dead.wait()
    old = time.time() - 3600
    stale = [
        tmp / left[0],
        out / f".big.ingot.tmp-{dead.pid}-0123abcd",
        out / f".big.ingot.{dead.pid}.0123abcd.tmp",  # (an earlier ingot's name)
        tmp / f"ingot-runtime-path-{dead.pid}-abc_123",
    ]
    kept = [
        out / f".big.ingot.tmp-{os.getpid()}-0123abcd",  # (a live process's)
        tmp / f"ingot-build-{os.getpid()}-xyz",
        tmp / "ingot-build-noname",  # (no pid: an earlier ingot's, not known to be stale)
    ]
    for path in stale + kept:
        if not path.exists():
            path.mkdir() if "ingot-" in path.name else path.write_bytes(b"half an executable")
        os.utime(path, (old, old))
    young = out / f".big.ingot.tmp-{dead.pid}-fedc9876"  # (a pid reused within seconds?)
    young.write_bytes(b"")
    done = _start(app, out, tmp)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    assert not [path for path in stale if path.exists()]
    assert all(path.exists() for path in [*kept, young])


def _spec_file(app, out, tmp_path, tmp=None):
    # (``tmp``: the TMPDIR of the build's environment, which the child build runs in)
    environment = Environment({**os.environ, **({"TMPDIR": str(tmp)} if tmp else {})})
    spec = resolve(
        Request(
            source=str(app),
            archive_only=True,
            settings=Settings(output=str(out / "big.ingot"), python="local", compress=False),
        ),
        environment=environment,
    )
    native = Path(ingot._ingot.__file__)
    # This machine's Python stands in for a runtime's: the same child build, the same code.
    target = {**json.loads(spec.to_json())["spec"]["target"]}
    target.update(runtime_python=sys.executable, runtime_importer=str(native))
    data = json.loads(spec.to_json())
    data["spec"]["target"] = target
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    return path


#: A parent like `ingot build` with a runtime: the spec built under (another) interpreter.
_PARENT = """
import sys
from ingot.build import under
from ingot.build.interrupt import interrupts_stop
from ingot.build.report import report_interrupt
from ingot.build.resolve.spec import Spec
spec = Spec.from_json(open(sys.argv[1]).read())
with interrupts_stop():
    try:
        sys.exit(under.build_under(spec, quiet=False))
    except KeyboardInterrupt as error:
        sys.exit(report_interrupt(error))
"""


def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            found.append(int(entry))
    return found


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_child_build_ends_with_its_parent(app, tmp_path, signum):
    # Issue 53: SIGTERM to `ingot build` left the child build (under the runtime's
    # interpreter) running, still writing 2 s later. Terminated, the parent passes the signal
    # on and waits; killed, the child sees the pipe it watches close. Either way the child is
    # gone within seconds and removes what it made.
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    spec = _spec_file(app, out, tmp_path, tmp)
    log = tmp_path / "stderr"
    with log.open("w") as stderr:  # (not a pipe: the child holds it too)
        parent = subprocess.Popen(
            [sys.executable, "-c", _PARENT, str(spec)],
            env={**os.environ, "TMPDIR": str(tmp)},
            stderr=stderr,
        )
    _wait_for(lambda: any(name.startswith("ingot-build-") for name in os.listdir(tmp)), parent)
    (child,) = _children(parent.pid)
    parent.send_signal(signum)
    parent.wait(timeout=60)
    deadline = time.monotonic() + 20
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    err = log.read_text()
    assert not _alive(child), f"the child build {child} outlived its parent"
    if signum == signal.SIGTERM:
        assert parent.returncode == 143 and "interrupted (SIGTERM)" in err, err
        assert _ours(tmp) == []
    else:
        # (the parent's own directory stays: the next build removes it)
        assert [name for name in _ours(tmp) if not name.startswith("ingot-runtime-path-")] == []
    assert os.listdir(out) == []


def test_a_child_build_under_a_real_runtime_ends_with_its_parent(app, tmp_path):
    with environment("INGOT_RUNTIMES", RUNTIMES):
        found = store.find_runtime(HERE)
        if found is None:
            if os.environ.get("INGOT_REQUIRE_PYTHONS"):
                pytest.fail(f"no runtime in {store.store()} (INGOT_REQUIRE_PYTHONS is set)")
            pytest.skip(f"no runtime in {store.store()} (scripts/test builds one)")
        out, tmp = tmp_path / "out", tmp_path / "tmp"
        out.mkdir()
        tmp.mkdir()
        build = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ingot",
                "build",
                str(app),
                "--archive-only",
                "--no-compress",
                "--python",
                HERE,
                "-o",
                str(out / "big.ingot"),
            ],
            env={**os.environ, "TMPDIR": str(tmp)},
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(lambda: any(n.startswith("ingot-build-") for n in os.listdir(tmp)), build)
        (child,) = _children(build.pid)
        build.send_signal(signal.SIGTERM)
        _, err = build.communicate(timeout=60)
        deadline = time.monotonic() + 20
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child) and build.returncode == 143, err
        assert _ours(tmp) == [] and os.listdir(out) == []
