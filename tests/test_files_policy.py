"""The `files` policy and the extraction cache: packages that need real files get them, once,
safely; native code goes through the cache where memory files cannot be used."""

import glob
import grp
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import ingot
from ingot.build.archive.pack import pack

import proclimit
from helpers import run_python, strace_calls

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

DYNLOAD = os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")
SUFFIX = next(
    s
    for s in __import__("importlib.machinery").machinery.EXTENSION_SUFFIXES
    if s.startswith(".cpython")
)

FPKG_INIT = """
import os
HERE = os.path.dirname(__file__)

def greeting():
    with open(os.path.join(HERE, "data", "greeting.txt")) as file:
        return file.read()

def listing():
    return sorted(os.listdir(os.path.join(HERE, "data")))
"""

# What a program using `fpkg` reports: where things are and whether plain file access works.
PROBE = """
import importlib.resources, json, os, sys, ingot
finder = ingot.install(sys.argv[1])
import fpkg, fpkg.sub
report = {"file": fpkg.__file__, "path": list(fpkg.__path__), "sub": fpkg.sub.__file__}
try:
    report["greeting"] = fpkg.greeting()
    report["listing"] = fpkg.listing()
except OSError as error:
    report["error"] = f"{type(error).__name__}: {error}"
files = importlib.resources.files("fpkg")
report["resources_type"] = type(files).__name__
report["resource"] = (files / "data" / "greeting.txt").read_text()
with importlib.resources.as_file(files / "data" / "greeting.txt") as path:
    report["as_file"] = str(path)
report["source_line"] = finder.get_source("fpkg.sub").strip()
report["sub_code_file"] = fpkg.sub.where.__code__.co_filename
print(json.dumps(report))
"""


def make_site(root, with_extension=False):
    site = root / "site"
    package = site / "fpkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text(FPKG_INIT)
    (package / "sub.py").write_text("def where():\n    return __file__\n")
    (package / "data" / "greeting.txt").write_text("hello from a real file\n")
    (package / "data" / "other.bin").write_bytes(bytes(range(256)) * 64)
    (site / "mpkg").mkdir()
    (site / "mpkg" / "__init__.py").write_text("VALUE = 7\n")
    if with_extension:
        # _queue: an extension module file in every build (Debian builds _statistics, _bisect,
        # math, ... into libpython).
        (source,) = glob.glob(os.path.join(DYNLOAD, "_queue.cpython-*.so"))
        shutil.copy(source, package / f"_queue{SUFFIX}")
    return site


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    root = tmp_path_factory.mktemp("files-policy")
    site = make_site(root, with_extension=True)
    files = pack(root / "files.ingot", stdlib=False, directories=[site], files_packages=["fpkg"])
    memory = pack(root / "memory.ingot", stdlib=False, directories=[site])
    return files.output, memory.output


def cache_env(cache, **extra):
    env = dict(os.environ, INGOT_CACHE_DIR=str(cache))
    env.pop("INGOT_NATIVE", None)
    env.update(extra)
    return env


def tree_files(cache):
    """Every file under the cache, with its inode and mtime."""
    found = {}
    for top, _, names in os.walk(cache):
        for name in names:
            path = os.path.join(top, name)
            info = os.stat(path)
            found[os.path.relpath(path, cache)] = (info.st_ino, info.st_mtime_ns, info.st_size)
    return found


def trees(cache):
    return sorted(os.listdir(cache / "trees")) if (cache / "trees").exists() else []


def test_memory_policy_leaves_file_paths_virtual(archives, tmp_path):
    _, memory = archives
    report = json.loads(
        run_python(sys.executable, PROBE, memory, env=cache_env(tmp_path / "c")).stdout
    )
    assert report["file"] == f"{memory}/fpkg/__init__.py"
    assert report["error"].startswith(("FileNotFoundError", "NotADirectoryError"))
    assert report["resource"] == "hello from a real file\n"
    assert not (tmp_path / "c").exists()


def test_files_policy_gives_real_files_and_paths(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    report = json.loads(run_python(sys.executable, PROBE, files, env=cache_env(cache)).stdout)
    (tree,) = trees(cache)
    root = str(cache / "trees" / tree)
    assert report["file"] == f"{root}/fpkg/__init__.py"
    assert report["path"] == [f"{root}/fpkg"]
    assert report["sub"] == f"{root}/fpkg/sub.py" == report["sub_code_file"]
    assert report["greeting"] == "hello from a real file\n"
    assert report["listing"] == ["greeting.txt", "other.bin"]
    assert report["resources_type"] in ("PosixPath", "Path")
    assert report["as_file"] == f"{root}/fpkg/data/greeting.txt"  # no temporary copy
    assert report["source_line"] == "def where():\n    return __file__".strip()
    assert oct(os.stat(cache).st_mode & 0o777) == "0o700"
    assert (
        oct(os.stat(os.path.join(root, "fpkg", "data", "greeting.txt")).st_mode & 0o777) == "0o600"
    )


def test_second_start_writes_nothing(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    run_python(sys.executable, PROBE, files, env=cache_env(cache))
    before = tree_files(cache)
    listing_before = sorted(os.listdir(cache / "trees"))
    run_python(sys.executable, PROBE, files, env=cache_env(cache))
    assert tree_files(cache) == before
    assert sorted(os.listdir(cache / "trees")) == listing_before


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_second_start_makes_no_write_syscall_into_the_cache(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    run_python(sys.executable, PROBE, files, env=cache_env(cache))
    log = tmp_path / "strace.log"
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(log),
            "-e",
            "trace=%file,%desc",
            sys.executable,
            "-c",
            PROBE,
            str(files),
        ],
        env=cache_env(cache),
        check=True,
        capture_output=True,
    )
    writes = [
        line
        for line in strace_calls(log)
        if str(cache) in line
        and (
            "O_WRONLY" in line
            or "O_RDWR" in line
            or "O_CREAT" in line
            or "rename" in line
            or "unlink" in line
            or "mkdir" in line
        )
    ]
    assert writes == []


def test_memory_only_app_never_creates_the_cache(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    run_python(
        sys.executable,
        """
        import sys, ingot
        ingot.install(sys.argv[1])
        import mpkg
        assert mpkg.VALUE == 7
    """,
        files,
        env=cache_env(cache),
    )
    assert not cache.exists()


def test_altered_and_missing_files_are_detected_and_repaired(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    run_python(sys.executable, PROBE, files, env=cache_env(cache))
    (tree,) = trees(cache)
    greeting = cache / "trees" / tree / "fpkg" / "data" / "greeting.txt"
    greeting.write_text("hello from a tampered file\n")
    report = json.loads(run_python(sys.executable, PROBE, files, env=cache_env(cache)).stdout)
    assert report["greeting"] == "hello from a real file\n"
    # Same length, different bytes: only the hash can tell.
    greeting.write_text("HELLO from a real file\n")
    report = json.loads(run_python(sys.executable, PROBE, files, env=cache_env(cache)).stdout)
    assert report["greeting"] == "hello from a real file\n"
    (cache / "trees" / tree / "fpkg" / "sub.py").unlink()
    report = json.loads(run_python(sys.executable, PROBE, files, env=cache_env(cache)).stdout)
    assert os.path.isfile(report["sub"])
    assert trees(cache) == [tree]


def test_concurrent_first_starts_all_succeed_and_leave_one_tree(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE, str(files)],
            env=cache_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [(process.wait(timeout=120), *process.communicate()) for process in processes]
    for code, out, err in results:
        assert code == 0, err
        assert json.loads(out)["greeting"] == "hello from a real file\n"
    assert len(trees(cache)) == 1
    assert not [name for name in trees(cache) if name.startswith(".tmp-")]


def test_a_killed_materialization_leaves_nothing_trusted(tmp_path):
    # A package large enough that writing it takes a while: kill the writer at several points.
    site = tmp_path / "site"
    (site / "big" / "data").mkdir(parents=True)
    (site / "big" / "__init__.py").write_text("")
    for index in range(1500):
        (site / "big" / "data" / f"f{index:04}.txt").write_bytes(os.urandom(2048))
    archive = pack(
        tmp_path / "big.ingot", stdlib=False, directories=[site], files_packages=["big"]
    ).output
    check = """
        import os, sys, ingot
        ingot.install(sys.argv[1])
        import big
        names = os.listdir(os.path.join(os.path.dirname(big.__file__), "data"))
        assert len(names) == 1500, len(names)
        print("ok")
    """
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3):
        cache = tmp_path / f"cache-{delay}"
        process = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(check), str(archive)],
            env=cache_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        complete = [name for name in trees(cache) if not name.startswith(".tmp-")]
        for name in complete:  # a tree under its final name is always whole
            assert len(os.listdir(cache / "trees" / name / "big" / "data")) == 1500
        result = run_python(sys.executable, check, archive, env=cache_env(cache))
        assert result.stdout == "ok\n"


def test_extension_module_of_a_files_package_loads_from_its_tree(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    result = run_python(
        sys.executable,
        """
        import json, sys, ingot
        ingot.install(sys.argv[1])
        import fpkg._queue as ext
        maps = {line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if len(line.split()) > 5}
        print(json.dumps({"file": ext.__file__, "mapped": ext.__file__ in maps,
                          "memfd": any("_queue" in m and "memfd" in m for m in maps),
                          "value": ext.SimpleQueue().qsize()}))
    """,
        files,
        env=cache_env(cache),
    )
    report = json.loads(result.stdout)
    assert report["file"].startswith(str(cache / "trees"))
    assert report["mapped"] and not report["memfd"]
    assert report["value"] == 0


def test_unusable_cache_dir_is_a_clear_import_error(archives, tmp_path):
    files, _ = archives
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    result = run_python(sys.executable, PROBE, files, env=cache_env(shared), check=False)
    assert result.returncode == 1
    assert "cannot materialize package `fpkg`" in result.stderr
    assert "writable by other users" in result.stderr
    assert "hint: set INGOT_CACHE_DIR to a private directory of yours" in result.stderr
    assert "Traceback" in result.stderr and "Segmentation" not in result.stderr


def test_the_cache_falls_back_as_the_xdg_rules_say(archives, tmp_path):
    # An empty or relative INGOT_CACHE_DIR is ignored, as XDG_CACHE_HOME is; a home the app
    # cannot write falls back to $XDG_RUNTIME_DIR, then to a private directory under /tmp.
    files, _ = archives
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    for setting in ("", "relative/dir"):
        env = cache_env(setting, HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
        env.pop("XDG_CACHE_HOME", None)
        result = run_python(sys.executable, PROBE, files, env=env, check=False)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["file"].startswith(str(home / ".cache" / "ingot"))
    # A home where the cache cannot be made (root may write anywhere, so not by permissions:
    # ~/.cache is a file), then no runtime directory either.
    shutil.rmtree(home / ".cache")
    (home / ".cache").write_text("not a directory")
    result = run_python(sys.executable, PROBE, files, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["file"].startswith(str(runtime / "ingot"))
    env.pop("XDG_RUNTIME_DIR")
    result = run_python(sys.executable, PROBE, files, env=env, check=False)
    assert result.returncode == 0, result.stderr
    file = json.loads(result.stdout)["file"]
    assert file.startswith(f"/tmp/ingot-{os.geteuid()}/trees/")
    shutil.rmtree("/".join(file.split("/")[:5]))  # /tmp/ingot-<uid>/trees/<id>: ours only


def test_pack_refuses_a_files_package_it_does_not_hold(tmp_path):
    site = make_site(tmp_path)
    with pytest.raises(ingot.errors.PackError, match="'nothere', which is not in the archive"):
        pack(tmp_path / "x.ingot", stdlib=False, directories=[site], files_packages=["nothere"])


def test_a_files_package_that_nothing_imports_is_skipped_when_pruning(tmp_path):
    # Issue 37, item 9: the built-in table names certifi, installed as a dependency's dependency
    # that nothing imports; the reach analysis leaves it out, and the build goes on without it.
    site = make_site(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("import mpkg\n")
    said = []
    result = pack(
        tmp_path / "x.ingot",
        stdlib=False,
        directories=[tmp_path / "app", site],
        strict_directories=[tmp_path / "app"],
        files_packages=["fpkg"],
        entry_modules=["main"],
        prune=True,
        progress=said.append,
    )
    assert "fpkg" in result.left_out and "mpkg" not in result.left_out
    assert "files policy: fpkg left out (nothing imports it), so not materialized" in said


# --- native code through the cache ---------------------------------------------------------------

NATIVE_PROBE = """
    import json, os, sys, ingot
    ingot.install(sys.argv[1])
    import _sqlite3, _queue
    def held(prefix):
        # The files this process holds open below prefix (the listing's own descriptor is gone
        # when it is read: skipped).
        targets = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return sorted(target for target in targets if target.startswith(prefix))
    maps = {line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if len(line.split()) > 5}
    print(json.dumps({
        "memfds": sorted(m for m in maps if "memfd:ingot" in m),
        "cached": sorted(m for m in maps if m.startswith(sys.argv[2])),
        "held": held(sys.argv[2]),
        "sqlite": _sqlite3.sqlite_version,
        "queue": _queue.SimpleQueue().empty(),
    }))
"""


@pytest.fixture(scope="module")
def native_archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-cache")
    site = root / "site"
    site.mkdir()
    for name in ("_sqlite3", "_queue"):
        (source,) = glob.glob(os.path.join(DYNLOAD, f"{name}.cpython-*.so"))
        shutil.copy(source, site)
    return pack(root / "native.ingot", stdlib=False, directories=[site]).output


def test_native_code_through_the_cache_when_asked(native_archive, tmp_path):
    cache = tmp_path / "cache"
    env = cache_env(cache, INGOT_NATIVE="cache")
    report = json.loads(
        run_python(sys.executable, NATIVE_PROBE, native_archive, cache, env=env).stdout
    )
    assert report["memfds"] == []
    assert any("libsqlite3" in path for path in report["cached"]), report["cached"]
    assert any("_sqlite3" in path for path in report["cached"])
    # The loader was given the descriptor that was checked (a swap of the path after the check
    # changes nothing), and the process holds it.
    assert set(report["cached"]) <= set(report["held"]), report
    assert report["sqlite"] and report["queue"] is True
    before = tree_files(cache)
    run_python(sys.executable, NATIVE_PROBE, native_archive, cache, env=env)
    assert tree_files(cache) == before


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare (a noexec tmpfs in a mount namespace)",
)
def test_a_noexec_cache_is_named_with_a_hint(native_archive, tmp_path):
    # Native code through a cache on a noexec file system: the loader's "failed to map segment
    # from shared object" alone did not say why.
    mount = tmp_path / "noexec"
    mount.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(NATIVE_PROBE))
    script = (
        f"mount -t tmpfs -o noexec,mode=700 tmpfs {mount} && "
        f"exec {sys.executable} {probe} {native_archive} {mount / 'cache'}"
    )
    env = cache_env(mount / "cache", INGOT_NATIVE="cache")
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 1
    assert "failed to map segment from shared object" in result.stderr, result.stderr
    assert f"hint: {mount / 'cache'}" in result.stderr and "mounted noexec" in result.stderr
    assert "INGOT_CACHE_DIR" in result.stderr


def test_bad_native_mode_is_a_clear_error(native_archive, tmp_path):
    result = run_python(
        sys.executable,
        NATIVE_PROBE,
        native_archive,
        tmp_path,
        env=cache_env(tmp_path / "c", INGOT_NATIVE="disk"),
        check=False,
    )
    assert result.returncode == 1
    assert 'INGOT_NATIVE="disk" is not a native-code mode' in result.stderr


def _can_set_memfd_noexec():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            "echo 2 > /proc/sys/vm/memfd_noexec && cat /proc/sys/vm/memfd_noexec",
        ],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0 and probe.stdout.strip() == "2"


def test_native_code_falls_back_to_the_cache_under_memfd_noexec(native_archive, tmp_path):
    if not _can_set_memfd_noexec():
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("this test needs root and a kernel with vm.memfd_noexec (Linux 6.3+)")
        pytest.skip("needs root and a kernel with vm.memfd_noexec (Linux 6.3+)")
    cache = tmp_path / "cache"
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(NATIVE_PROBE))
    # vm.memfd_noexec is per pid namespace: 2 refuses executable memory files in this one only.
    result = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            'echo 2 > /proc/sys/vm/memfd_noexec && exec "$0" "$@"',
            sys.executable,
            str(script),
            str(native_archive),
            str(cache),
        ],
        env=cache_env(cache),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["memfds"] == []
    assert any("libsqlite3" in path for path in report["cached"]), report["cached"]
    assert report["sqlite"] and report["queue"] is True


def test_files_packages_and_top_level_modules_share_one_tree(tmp_path):
    site = make_site(tmp_path)
    (site / "tmod.py").write_text("import os\nHERE = os.path.dirname(__file__)\n")
    archive = pack(
        tmp_path / "both.ingot", stdlib=False, directories=[site], files_packages=["fpkg", "tmod"]
    ).output
    cache = tmp_path / "cache"
    result = run_python(
        sys.executable,
        """
        import json, os, sys, ingot
        ingot.install(sys.argv[1])
        import tmod, fpkg
        print(json.dumps({"tmod": tmod.__file__, "fpkg": fpkg.__file__,
                          "siblings": sorted(os.listdir(tmod.HERE))}))
    """,
        archive,
        env=cache_env(cache),
    )
    report = json.loads(result.stdout)
    (tree,) = trees(cache)
    root = str(cache / "trees" / tree)
    assert report["tmod"] == f"{root}/tmod.py"
    assert report["fpkg"] == f"{root}/fpkg/__init__.py"
    assert report["siblings"] == ["fpkg", "tmod.py"]


# --- an executable ---------------------------------------------------------------------------


def _launcher_or_skip():
    from ingot.build.resolve.environment import snapshot
    from ingot.build.resolve.launcher import find_launcher, launcher_python
    from ingot.errors import BuildError

    try:
        launcher = find_launcher(None, snapshot())
    except BuildError as error:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(f"no launcher: {error}")
        pytest.skip(f"no launcher: {error}")
    if launcher_python(launcher) != f"{sys.version_info[0]}.{sys.version_info[1]}":
        pytest.skip("the launcher embeds another Python")
    return launcher


def _writes(log, cache):
    """Syscalls in an strace log (``strace -y``) that create, write, rename or remove something,
    a name relative to a directory descriptor joined to that directory's path
    (``mkdirat(3</a>, "b", ...)``: ``"/a/b"``)."""
    markers = ("O_WRONLY", "O_RDWR", "O_CREAT", "rename", "unlink", "mkdir", "rmdir", "ftruncate")
    joined = (
        re.sub(r'\b\d+<([^>]*)>, "([^"]*)"', lambda found: f'"{found[1]}/{found[2]}"', line)
        for line in strace_calls(log)
    )
    return [
        line
        for line in joined
        if any(marker in line for marker in markers)
        and "memfd" not in line
        and " = -1 " not in line
    ]  # failed attempts (mkdir of an existing parent) write nothing


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_executable_with_a_files_package_writes_its_cache_once(tmp_path):
    launcher = _launcher_or_skip()
    script = tmp_path / "tls_app.py"
    script.write_text(
        "import certifi, ssl\n"
        "context = ssl.create_default_context(cafile=certifi.where())\n"
        "print(certifi.where(), context.cert_store_stats()['x509_ca'] > 50)\n"
    )
    exe = tmp_path / "tls_app"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "ingot",
            "build",
            str(script),
            "--dependency",
            "certifi==2024.8.30",
            "--launcher",
            str(launcher),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    assert "files policy: certifi (built-in" in build.stderr
    cache = tmp_path / "cache"
    env = {"PATH": "/usr/bin:/bin", "INGOT_CACHE_DIR": str(cache)}
    outputs = []
    for run in ("first", "second"):
        log = tmp_path / f"{run}.strace"
        result = subprocess.run(
            ["strace", "-f", "-qq", "-y", "-o", str(log), "-e", "trace=%file,%desc", str(exe)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        outputs.append((result.stdout, _writes(log, cache)))
    (first_out, first_writes), (second_out, second_writes) = outputs
    assert first_out == second_out and first_out.startswith(f"{cache}/trees/")
    assert first_out.rstrip().endswith("/certifi/cacert.pem True")
    assert first_writes and all(str(cache) in line for line in first_writes), first_writes
    assert second_writes == []
    # The second start checked the tree on the launcher's verify-ahead thread, not on the main
    # thread (whose id is the process id in strace -f's log).
    second_log = strace_calls(tmp_path / "second.strace")
    pid = int(second_log[0].split()[0])
    readers = {
        int(line.split()[0])
        for line in second_log
        if "cacert.pem" in line and "openat(" in line and "O_NOFOLLOW" in line
    }
    assert readers and pid not in readers, second_log[:3]

    # A tree altered by hand fails that check; the import then repairs it and the app works.
    (pem,) = cache.glob("trees/*/certifi/cacert.pem")
    damaged = bytearray(pem.read_bytes())
    damaged[100] ^= 0x01
    pem.write_bytes(bytes(damaged))
    result = subprocess.run(
        [str(exe)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0 and result.stdout == first_out, result.stderr
    (repaired,) = cache.glob("trees/*/certifi/cacert.pem")
    assert repaired.read_bytes() != bytes(damaged)


def test_legacy_resources_path_gives_the_real_file(archives, tmp_path):
    files, _ = archives
    cache = tmp_path / "cache"
    result = run_python(
        sys.executable,
        """
        import importlib.resources, sys, warnings, ingot
        warnings.simplefilter("ignore", DeprecationWarning)
        ingot.install(sys.argv[1])
        with importlib.resources.path("fpkg", "__init__.py") as path:
            print(path)
    """,
        files,
        env=cache_env(cache),
    )
    (tree,) = trees(cache)
    assert result.stdout.strip() == str(cache / "trees" / tree / "fpkg" / "__init__.py")


def test_a_cache_another_user_could_swap_is_refused_or_passed_over(archives, tmp_path):
    # Issue 26, S3: the cache root itself private, but a directory above it writable by others
    # (not sticky) or another user's: they could rename the root away after its check and put a
    # tree of theirs, extension modules included, where the app loads it. Named: refused, with
    # the directory at fault; found by the XDG rules: passed over for the next place.
    files, _ = archives
    parents = [(tmp_path / "open", 0o777, None)]
    if os.geteuid() == 0:
        parents.append((tmp_path / "nobodys", 0o755, 65534))
    for parent, mode, owner in parents:
        parent.mkdir()
        os.chmod(parent, mode)
        if owner is not None:
            os.chown(parent, owner, owner)
        cache = parent / "cache"
        cache.mkdir(mode=0o700)
        result = run_python(sys.executable, PROBE, files, env=cache_env(cache), check=False)
        assert result.returncode == 1, result.stderr
        assert f"could be replaced by another user: `{parent}`" in result.stderr, result.stderr
        assert not (cache / "trees").exists()
        home, runtime = parent / "home", tmp_path / f"run-{parent.name}"
        home.mkdir()
        runtime.mkdir(mode=0o700)
        env = cache_env("", HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
        env.pop("XDG_CACHE_HOME", None)
        result = run_python(sys.executable, PROBE, files, env=env, check=False)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["file"].startswith(str(runtime / "ingot"))
    # Sticky and world-writable, as /tmp: nobody else can rename what is ours in it.
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    result = run_python(sys.executable, PROBE, files, env=cache_env(sticky / "cache"), check=False)
    assert result.returncode == 0, result.stderr


def test_a_squatted_last_fallback_is_the_directory_the_error_names(tmp_path):
    # Issue 26: no usable place for the cache (no home, no runtime directory) and /tmp/ingot-<uid>
    # taken by another user: the error names that directory and its owner, not the home.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("needs root and setpriv (INGOT_REQUIRE_PYTHONS)")
        pytest.skip("needs root and setpriv (another user)")
    nobody = 65534
    squatted = f"/tmp/ingot-{nobody}"
    if os.path.lexists(squatted):
        pytest.skip(f"{squatted} exists already")
    launcher = _launcher_or_skip()
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "data.txt").write_text("data\n")
    (tmp_path / "app.py").write_text("import mypkg\nprint(mypkg.__file__)\n")
    # Where the other user can run it (pytest's directories are private to root).
    shared = Path(tempfile.mkdtemp(prefix="ingot-squatted-"))
    shared.chmod(0o755)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "ingot",
            "build",
            str(tmp_path / "app.py"),
            "--files",
            "mypkg",
            "--python",
            "local",
            "--launcher",
            str(launcher),
            "-o",
            str(shared / "app"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    os.mkdir(squatted, 0o700)  # root's, where nobody's cache would go
    try:
        as_nobody = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
        result = proclimit.run([*as_nobody, str(shared / "app")], env=env, timeout=60)
    finally:
        os.rmdir(squatted)
        shutil.rmtree(shared)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"cache directory `{squatted}` belongs to user 0, not to this user" in result.stderr
    assert "/nonexistent" not in result.stderr, result.stderr


# --- privileged starts (issue 53, item 2) ---------------------------------------------------------

#: The user who starts a privileged install here, and a group it is not in (made if missing).
CALLER, SECRET_GROUP = "ingot-caller", "ingot-secret"

#: A files-policy package with native code: an extension module (an honest copy of `_queue`) and
#: a library it loads by its path from its own directory (`ctypes.CDLL`). `plugin.so` is not
#: the archive's: the caller puts it there.
PRIVILEGED_PKG = """
import ctypes, os
HERE = os.path.dirname(__file__)

def probe(name):
    return ctypes.CDLL(os.path.join(HERE, "lib", name)).probe()
"""

#: The app: imports the package (its tree is materialized and verified), says where the tree is,
#: waits until the caller has changed it, then loads the native code it holds.
PRIVILEGED_APP = """
import json, os, sys, time
import fpkg
here, rendezvous = os.path.dirname(fpkg.__file__), sys.argv[1]
with open(os.path.join(rendezvous, "ready"), "w") as file:
    file.write(here)
deadline = time.monotonic() + 30
while not os.path.exists(os.path.join(rendezvous, "go")) and time.monotonic() < deadline:
    time.sleep(0.02)
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
report = {"here": here, "cap_eff": status["CapEff"].strip(), "egid": os.getegid()}
import fpkg._queue as ext
report["ext_file"] = ext.__file__
report["ext_works"] = ext.SimpleQueue().qsize() == 0
report["probe"] = fpkg.probe("libprobe.so")
try:
    report["plugin"] = fpkg.probe("plugin.so")
except OSError as error:
    report["plugin_error"] = str(error)
try:
    import fpkg.planted
    report["planted"] = "imported"
except ImportError as error:
    report["planted"] = type(error).__name__
import fcntl
memory = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if target.startswith("/memfd:ingot:"):
        memory[target] = fcntl.fcntl(int(fd), 1034)  # F_GET_SEALS
report["memory_files"] = memory
print(json.dumps(report))
"""

HONEST_LIBRARY = "int probe(void) { return 42; }\n"

#: What the caller puts in the tree: a library whose constructor records the privileges it ran
#: with (the `CapEff:` and `Gid:` lines of /proc/self/status) in MARKER.
TAMPERED_LIBRARY = r"""
#include <stdio.h>
#include <string.h>
__attribute__((constructor)) static void ran(void) {
    FILE *status = fopen("/proc/self/status", "r"), *marker = fopen(MARKER, "a");
    char line[256];
    while (status && marker && fgets(line, sizeof line, status))
        if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "Gid:", 4)) fputs(line, marker);
    if (marker) fclose(marker);
    if (status) fclose(status);
}
int probe(void) { return 666; }
"""

#: Run by the caller (the other user): starts the app, changes its tree while it waits, lets it go.
TAMPER = """
"$1" "$2" & app=$!
tries=0
until [ -e "$2/ready" ]; do
    sleep 0.02; tries=$((tries + 1))
    [ "$tries" -lt 1500 ] || { echo "the app never got ready" >&2; kill "$app"; exit 97; }
done
tree=$(cat "$2/ready")
for target in "$tree/_queue$3" "$tree/lib/libprobe.so" "$tree/lib/plugin.so"; do
    cp "$4" "$target.new" && mv -f "$target.new" "$target" || exit 98
done
echo "raise SystemExit('the caller module ran')" > "$tree/planted.py"
touch "$2/go"
wait "$app"
"""


def _system_account(kind, name):
    """The id of the system user (`kind` "user") or group ("group") `name`, made if missing."""

    def lookup():
        return pwd.getpwnam(name).pw_uid if kind == "user" else grp.getgrnam(name).gr_gid

    try:
        return lookup()
    except KeyError:
        make = ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        command = make if kind == "user" else ["groupadd"]
        subprocess.run([*command, "--system", name], capture_output=True, timeout=60)
        return lookup()  # (made by this run, or by another one meanwhile)


def _compile(source, output, *defines):
    (output.parent / f"{output.name}.c").write_text(source)
    compiled = subprocess.run(
        ["cc", "-shared", "-fPIC", *defines, "-o", str(output), f"{output}.c"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert compiled.returncode == 0, compiled.stderr


@pytest.fixture(scope="module")
def privileged_app(tmp_path_factory):
    """(the app, built as root into a directory anyone may read, the caller's uid and gid, the
    group's gid, the tampered library); the caller's cache is removed afterwards."""
    needed = ["setpriv", "setcap", "getcap", "useradd", "groupadd", "cc"]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if os.geteuid() != 0 or missing:
        why = f"needs root and {', '.join(needed)} (missing: {', '.join(missing) or 'root'})"
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(f"{why} (INGOT_REQUIRE_PYTHONS)")
        pytest.skip(why)
    launcher = _launcher_or_skip()
    uid, group = _system_account("user", CALLER), _system_account("group", SECRET_GROUP)
    caller_gid = pwd.getpwuid(uid).pw_gid
    project = tmp_path_factory.mktemp("privileged")
    package = project / "fpkg"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text(PRIVILEGED_PKG)
    (source,) = glob.glob(os.path.join(DYNLOAD, "_queue.cpython-*.so"))
    shutil.copy(source, package / f"_queue{SUFFIX}")
    _compile(HONEST_LIBRARY, package / "lib" / "libprobe.so")
    (project / "app.py").write_text(PRIVILEGED_APP)
    shared = Path(tempfile.mkdtemp(prefix="ingot-privileged-"))
    try:
        shared.chmod(0o755)
        drop = shared / "drop"  # where the caller's code, if it runs, records it
        drop.mkdir()
        os.chown(drop, uid, caller_gid)
        tampered = shared / "tampered.so"
        _compile(TAMPERED_LIBRARY, tampered, f'-DMARKER="{drop / "marker"}"')
        tampered.chmod(0o755)
        build = subprocess.run(
            [
                sys.executable,
                "-m",
                "ingot",
                "build",
                str(project / "app.py"),
                "--files",
                "fpkg",
                "--python",
                "local",
                "--launcher",
                str(launcher),
                "-o",
                str(shared / "app"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert build.returncode == 0, build.stderr
        yield shared / "app", uid, caller_gid, group, tampered
    finally:
        shutil.rmtree(shared)
        shutil.rmtree(f"/tmp/ingot-{uid}", ignore_errors=True)


@pytest.mark.parametrize("privilege", ["file capability", "set-group-ID"])
def test_a_privileged_start_never_loads_native_code_the_caller_put_in_its_tree(
    privileged_app, privilege, tmp_path
):
    # Issue 53, item 2: with file capabilities or set-group-ID the effective user is the
    # caller, so a files-policy tree is in the caller's own cache (/tmp/ingot-<uid>); the caller
    # replaced an extension module there while the app waited, and its code ran with
    # CapEff 0000000000000400 (or the group). A privileged start loads native code only from
    # sealed memory files holding the archive's bytes: the caller's files never run.
    app, uid, gid, group, tampered = privileged_app
    installed = app.parent / f"app-{privilege.split()[-1]}"
    shutil.copyfile(app, installed)
    if privilege == "file capability":
        installed.chmod(0o755)
        subprocess.run(["setcap", "cap_net_bind_service+ep", str(installed)], check=True)
        shown = subprocess.run(["getcap", str(installed)], capture_output=True, text=True)
        assert "cap_net_bind_service" in shown.stdout, shown
    else:
        os.chown(installed, 0, group)
        installed.chmod(0o2755)
    rendezvous = app.parent / f"rendezvous-{privilege.split()[-1]}"
    rendezvous.mkdir()
    os.chown(rendezvous, uid, gid)
    marker = app.parent / "drop" / "marker"
    as_caller = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    command = [*as_caller, "sh", "-c", TAMPER, "sh", str(installed), str(rendezvous), SUFFIX]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    result = proclimit.run([*command, str(tampered)], env=env, timeout=90)
    ran = marker.read_text() if marker.exists() else ""
    marker.unlink(missing_ok=True)
    assert ran == "", f"the caller's library ran in the privileged app:\n{ran}"
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    # The privilege was real, and the tree the caller's.
    if privilege == "file capability":
        assert report["cap_eff"] == "0000000000000400", report
    else:
        assert report["egid"] == group, report
    assert report["here"].startswith(f"/tmp/ingot-{uid}/trees/"), report
    assert os.stat(report["here"]).st_uid == uid
    # The archive's native code ran, from memory; paths still name the tree.
    assert report["ext_file"] == f"{report['here']}/_queue{SUFFIX}" and report["ext_works"]
    assert report["probe"] == 42, report
    # ... each sealed against writing, growing and shrinking, and sealing (F_SEAL_*: 8|4|2|1).
    labels = {name.split(":", 2)[2].removesuffix(" (deleted)") for name in report["memory_files"]}
    assert {f"fpkg._queue{SUFFIX}", "libprobe.so"} <= labels, report
    assert set(report["memory_files"].values()) == {0xF}, report
    # A library the archive does not hold is refused, with what and why.
    assert "plugin" not in report, report
    assert report["plugin_error"].startswith(f"{installed}/fpkg/lib/plugin.so: "), report
    assert f"{report['here']}/lib/plugin.so" in result.stderr, result.stderr
    assert "privileged start" in result.stderr and "hint:" in result.stderr, result.stderr
    # A module the caller added to the tree is not imported.
    assert report["planted"] == "ModuleNotFoundError", report


def test_a_privileged_start_where_memory_files_fail_stops_instead_of_using_the_cache(
    privileged_app, tmp_path
):
    # Where memory files are refused (vm.memfd_noexec=2), native code used to go through the
    # extraction cache: in a file-capability start, the caller's directory. A privileged start
    # stops there instead, with what, why and a hint, and writes no native code to the cache.
    if not _can_set_memfd_noexec():
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail("this test needs root and a kernel with vm.memfd_noexec (Linux 6.3+)")
        pytest.skip("needs root and a kernel with vm.memfd_noexec (Linux 6.3+)")
    app, uid, gid, _group, _tampered = privileged_app
    installed = app.parent / "app-noexec"
    shutil.copyfile(app, installed)
    installed.chmod(0o755)
    subprocess.run(["setcap", "cap_net_bind_service+ep", str(installed)], check=True)
    rendezvous = app.parent / "rendezvous-noexec"
    rendezvous.mkdir()
    (rendezvous / "go").touch()
    os.chown(rendezvous, uid, gid)
    as_caller = f"setpriv --reuid={uid} --regid={gid} --clear-groups"
    # vm.memfd_noexec is per pid namespace: 2 refuses executable memory files in this one only.
    script = f'echo 2 > /proc/sys/vm/memfd_noexec && exec {as_caller} "$0" "$1"'
    command = ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    result = proclimit.run([*command, str(installed), str(rendezvous)], env=env, timeout=90)
    assert result.returncode == 1, result.stdout + result.stderr
    # (the first extension module the app imports: `_ctypes`, for the package)
    assert "ImportError: cannot load extension module `" in result.stderr, result.stderr
    assert "`: not from memory (memfd_create failed: " in result.stderr, result.stderr
    assert (
        "a privileged start (set-user-ID, set-group-ID or file capabilities) loads native code "
        "from nowhere else" in result.stderr
    ), result.stderr
    assert "\nhint: allow memory files here" in result.stderr, result.stderr
    assert not os.path.exists(f"/tmp/ingot-{uid}/native"), os.listdir(f"/tmp/ingot-{uid}")
