"""The clean room, shared by the tests that run executables where no Python exists.

A room is a temporary directory holding only the executable (as `/app`), the glibc files it links
(`ldd`: libc, libm, libgcc_s and the dynamic loader, at their original paths), `/dev/null` and
`/dev/urandom` (bind mounts of the host's) and `/proc` (a fresh procfs), and nothing else: no
Python, no standard library, no `/etc`, no `/usr`, no certificates, no OpenSSL configuration. The
mounts are made in a mount namespace of their own (`unshare --mount`), so they vanish with it, and
the executable runs under `chroot` with an empty environment (or exactly the variables a test
gives). A test can add files: copies of host files or directories (`copy=`), empty writable
directories (`dirs=`, e.g. a HOME or a cache), bind mounts of host paths (`bind=`) and a
`/dev/shm` (`shm=True`: a fresh tmpfs, where multiprocessing's locks, POSIX semaphores, live).
The room shares the host's network namespace (only the mount namespace is private), so a server
the test runs on 127.0.0.1 is reachable from inside; there is no /etc/hosts or resolver
configuration, so use addresses, not names.

Every run is limited: it runs in a pids cgroup of its own (tests/support/proclimit.py) whose limit counts
every process and thread the run makes (the room's own `unshare` and `sh` included; default 64),
and under a timeout (default 120 s); whatever is left when the run ends or times out is killed.
A fork storm (an app that starts itself, which starts itself...) thus fails the test instead of
filling the machine. By default a run that timed out or had a fork refused by the limit fails the
test there (`Room.run`, `check_limits=True`); with `check_limits=False` the caller inspects the
result's `limit_hit` (forks the limit refused) and `timed_out` itself.

This needs root (CAP_SYS_ADMIN for the mounts, CAP_SYS_CHROOT): without it the tests skip, unless
`INGOT_REQUIRE_PYTHONS` is set (as CI does), where they fail.

Test modules use it as a plugin, which registers the fixtures below (and import its helpers,
such as `require_or_skip`, inside functions: a module-level import would come before pytest
registers the plugin and rewrites its asserts, and pytest warns about that):

    pytest_plugins = ["cleanroom"]

    def test_something(build_executable, room):
        executable = build_executable("name", project_dir, "--some-option")  # once per session
        run = room(executable, copy={"/data": data_dir}, dirs=["/cache"]).run(
            "/data/input.txt", env={"INGOT_CACHE_DIR": "/cache"})
        small = room(executable).run("--workers", "2", max_processes=16, check_limits=False)
        assert small.limit_hit == 0 and not small.timed_out
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

import ingot
from ingot.build.resolve.launcher import launcher_python

from helpers import ROOT, RUNTIMES, interpreters, python_for

__all__ = [
    "CHROOT",
    "GLIBC",
    "GLIBC_RUNTIME",
    "SYSTEM_PATH",
    "Builder",
    "Room",
    "expected_files",
    "find_launcher",
    "limits_problem",
    "linked_files",
    "require_or_skip",
]

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CHROOT = shutil.which("chroot", path=SYSTEM_PATH) or "chroot"
#: What a launcher links (and the dynamic loader, ld-linux*): a runtime's, linked for glibc 2.17,
#: also names libpthread, libdl and libutil, separate libraries of glibc before 2.34.
GLIBC = (
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "libutil.so.1",
    "librt.so.1",
)
#: glibc's run-time libraries (those that exist on the host go into a room made with
#: glibc="all"): what ingot leaves to the target system (ingot.elf.HOST_LIBRARIES) and any glibc
#: system has. Since glibc 2.34 libpthread, libdl, librt, libutil and libanl are empty stubs (their
#: code is in libc.so.6), but extension modules built against an older glibc (manylinux2014)
#: still name them in DT_NEEDED, and the loader must find them.
GLIBC_RUNTIME = (
    "libc.so.6",
    "libm.so.6",
    "libmvec.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    "libanl.so.1",
    "libnsl.so.1",
    "libBrokenLocale.so.1",
    "libthread_db.so.1",
    "libnss_files.so.2",
    "libnss_dns.so.2",
    "libnss_compat.so.2",
)


def require_or_skip(reason):
    """Skips the test, or fails it when `INGOT_REQUIRE_PYTHONS` is set (CI: nothing may skip for
    want of an interpreter, root or a tool)."""
    if os.environ.get("INGOT_REQUIRE_PYTHONS"):
        pytest.fail(f"clean room required (INGOT_REQUIRE_PYTHONS is set): {reason}")
    pytest.skip(reason)


# --- launchers and builds -------------------------------------------------------------------------


def launcher_candidates(version=None):
    """Launcher files that exist, in order: `INGOT_LAUNCHER`, target/release/ingot-launcher, the
    one ingot's package carries for `version` (default: this Python's)."""
    version = version or "{}.{}".format(*sys.version_info[:2])
    packaged = Path(ingot.__file__).parent / "_launcher" / f"ingot-launcher-{version}"
    return [
        Path(candidate)
        for candidate in (
            os.environ.get("INGOT_LAUNCHER"),
            ROOT / "target/release/ingot-launcher",
            packaged,
        )
        if candidate and Path(candidate).is_file()
    ]


def snapshot(launcher: Path, directory: Path, number=0) -> Path:
    """A copy of `launcher` in `directory`, so that a rebuild of target/ during the session (for
    another Python) cannot change it under the tests."""
    copy = directory / f"ingot-launcher-{number}"
    shutil.copy2(launcher, copy)
    return copy


def find_launcher(tmp_path_factory, version=None):
    """(launcher snapshot, Python with ingot installed of the version it embeds).

    With `version` ("3.11"): the first candidate that embeds that version, and the Python of that
    version (skip, or fail under INGOT_REQUIRE_PYTHONS, if either is missing). Without: the first
    candidate that embeds a Python we have, else target/release/ingot-launcher built by cargo for
    PYO3_PYTHON or this Python."""
    candidates = launcher_candidates(version)
    if not candidates and version is None:
        if shutil.which("cargo") is None:
            require_or_skip(
                "no launcher (INGOT_LAUNCHER, target/release/ingot-launcher) and "
                "no cargo to build one"
            )
        subprocess.run(
            ["cargo", "build", "--quiet", "--release", "-p", "ingot-launcher"],
            cwd=ROOT,
            check=True,
            env=dict(os.environ, PYO3_PYTHON=os.environ.get("PYO3_PYTHON", sys.executable)),
        )
        candidates = [
            Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "ingot-launcher"
        ]
    directory = tmp_path_factory.mktemp("launcher")
    snapshots = []
    for number, candidate in enumerate(candidates):
        copy = snapshot(candidate, directory, number)
        embedded = launcher_python(copy)
        assert embedded, f"{candidate} does not say which Python it embeds"
        if version is not None and embedded != version:
            continue
        if embedded in interpreters():
            return copy, interpreters()[embedded]
        snapshots.append((copy, embedded))
    if not snapshots:
        require_or_skip(
            f"no launcher embedding Python {version} (INGOT_LAUNCHER, "
            f"target/release/ingot-launcher, ingot/_launcher/ingot-launcher-{version}; "
            f"found: {[str(path) for path in candidates]})"
        )
    copy, embedded = snapshots[0]
    return copy, python_for(embedded)  # skips, or fails under INGOT_REQUIRE_PYTHONS


#: The runtime the clean-room builds use instead of the room's launcher (INGOT_TEST_RUNTIME).
RUNTIME = os.environ.get("INGOT_TEST_RUNTIME")


class Builder:
    """`ingot build SOURCE OPTIONS` with one launcher and Python, once per name: the executables
    are written to `workdir` and kept for the session."""

    def __init__(self, launcher: Path, python: str, workdir: Path, timeout=600):
        self.launcher, self.python, self.workdir, self.timeout = launcher, python, workdir, timeout
        self.built: dict[str, Path] = {}
        self.seconds: dict[str, float] = {}

    def __call__(self, name, source, *options, env=None):
        if name not in self.built:
            out = self.workdir / name
            if RUNTIME and RUNTIMES:  # the real store, not the tests' empty one
                env = dict(env if env is not None else os.environ, INGOT_RUNTIMES=RUNTIMES)
            started = time.perf_counter()
            run = subprocess.run(
                [
                    self.python,
                    "-m",
                    "ingot",
                    "build",
                    str(source),
                    *options,
                    # INGOT_TEST_RUNTIME=3.X: built with that runtime (docs/runtimes.md), as a
                    # user's default build is once one is built; else with the room's launcher.
                    *(
                        ["--python", RUNTIME]
                        if RUNTIME
                        else ["--python", "local", "--launcher", str(self.launcher)]
                    ),
                    "-o",
                    str(out),
                    "--force",
                    "-q",
                ],
                capture_output=True,
                text=True,
                cwd=self.workdir,
                timeout=self.timeout,
                env=env,
            )
            self.seconds[name] = time.perf_counter() - started
            if (
                run.returncode != 0
                and "pip could not install" in run.stderr
                and ("NewConnectionError" in run.stderr or "No matching distribution" in run.stderr)
            ):
                pytest.skip(f"pip could not reach PyPI: {run.stderr[-300:]}")
            assert run.returncode == 0, (
                f"ingot build {source} {shlex.join(options)} failed "
                f"(exit {run.returncode}):\n{run.stderr}{run.stdout}"
            )
            self.built[name] = out
        return self.built[name]


@pytest.fixture(scope="session")
def room_launcher(tmp_path_factory):
    """(launcher, Python with ingot installed of the version it embeds): `INGOT_LAUNCHER`, else
    target/release/ingot-launcher, else the one ingot's package carries for this Python (the first
    of them that embeds a Python we have), else target/release/ingot-launcher built by cargo for
    PYO3_PYTHON or this Python; copied first (see `snapshot`)."""
    return find_launcher(tmp_path_factory)


@pytest.fixture(scope="session")
def build_executable(clean_room_possible, room_launcher, tmp_path_factory):
    """`ingot build SOURCE ...` once per session and name; returns the executable."""
    launcher, python = room_launcher
    return Builder(launcher, python, tmp_path_factory.mktemp("clean-room-builds"))


# --- the room ------------------------------------------------------------------------------------


def linked_files(executable):
    """The absolute paths `ldd` resolves for the executable (not linux-vdso)."""
    run = subprocess.run(["ldd", str(executable)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    paths = []
    for line in run.stdout.splitlines():
        found = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if found:
            paths.append(found.group(1))
    return paths


@pytest.fixture(scope="session")
def clean_room_possible(tmp_path_factory):
    """Root, unshare, mount and chroot work here; else skip (fail under INGOT_REQUIRE_PYTHONS)."""
    if not sys.platform.startswith("linux"):
        require_or_skip("the clean room is Linux-only (unshare, mount -t proc, chroot)")
    for tool in ("unshare", "mount", "chroot", "ldd"):
        if shutil.which(tool, path=SYSTEM_PATH) is None:
            require_or_skip(f"{tool} is not installed")
    if os.geteuid() != 0:
        require_or_skip("the clean room needs root (mount namespaces, mount -t proc, chroot)")
    scratch = tmp_path_factory.mktemp("room-check")
    (scratch / "proc").mkdir()
    proc = shlex.quote(str(scratch / "proc"))
    run = subprocess.run(
        [
            "unshare",
            "--mount",
            "--fork",
            "sh",
            "-c",
            f"mount -t proc proc {proc} && umount {proc} && chroot / true",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": SYSTEM_PATH},
    )
    if run.returncode != 0:
        require_or_skip(f"unshare/mount/chroot are not permitted here: {run.stderr.strip()}")


def _inside(path) -> str:
    """An absolute path in the room, checked to stay in it."""
    path = str(path)
    assert path.startswith("/") and ".." not in Path(path).parts and path != "/", (
        f"a room path must be absolute, below / and without '..': {path!r}"
    )
    return path


class Room:
    """A room for `executable` at `root` (which must not exist yet).

    glibc: "linked" (the files `ldd` resolves for the executable: libc, libm, libgcc_s, the
           loader) or "all" (those, and the rest of glibc's run-time libraries, GLIBC_RUNTIME,
           from the directory of the linked libc.so.6). With INGOT_TEST_RUNTIME, always "all":
           a runtime's standard library is built for glibc 2.17, whose libpthread, librt, ...
           are libraries of their own (_posixshmem needs librt.so.1), which any glibc system has.
    copy:  {room path: host file or directory}: copied in (directories recursively).
    dirs:  room paths of empty private directories (mode 700; a HOME, a cache directory).
    bind:  {room path: host file or directory}: bind-mounted in for each run (read-write; give
           (host path, "ro") for read-only). From outside, between runs, only the empty mount
           point is there.
    shm:   a /dev/shm for each run: a fresh tmpfs (mode 1777, 64 MiB), as a system has for
           POSIX shared memory and semaphores (sem_open: multiprocessing's Lock, Queue, Pool);
           without it, they fail with ENOENT. From outside, only the empty mount point is there.
    pty:   terminals for each run: a fresh devpts instance at /dev/pts (its own ptmx, mode 666)
           and /dev/ptmx a link to it, as a system has for openpty (pexpect, pty.fork). From
           outside, only the empty mount point and the link are there.
    """

    def __init__(
        self,
        root: Path,
        executable: Path,
        *,
        glibc="linked",
        copy=None,
        dirs=(),
        bind=None,
        shm=False,
        pty=False,
    ):
        assert glibc in ("linked", "all"), glibc
        glibc = "all" if RUNTIME else glibc
        self.root = root
        self.libraries = linked_files(executable)
        names = {Path(path).name for path in self.libraries}
        loaders = {name for name in names if name.startswith("ld-linux")}
        if any(name.startswith("libpython") for name in names):
            # A launcher built with INGOT_LAUNCHER_SHARED (scripts/test-sid: Debian's static
            # libpython3.14.a is unusable) needs libpython, which a clean room has not.
            require_or_skip(f"the launcher links a shared libpython: {sorted(names)}")
        assert len(loaders) == 1 and names - loaders <= set(GLIBC), (
            f"the executable links more than glibc: {self.libraries}"
        )
        if glibc == "all":
            libc = next(Path(path) for path in self.libraries if Path(path).name == "libc.so.6")
            self.libraries += [
                str(libc.parent / name)
                for name in GLIBC_RUNTIME
                if name not in names and (libc.parent / name).exists()
            ]
        root.mkdir()
        shutil.copy2(executable, root / "app")
        for library in self.libraries:
            target = root / library.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(library, target)  # follows symlinks: the file itself, at the linked path
        (root / "proc").mkdir()
        (root / "dev").mkdir()
        for device in ("null", "urandom"):
            (root / "dev" / device).touch()
        self.shm = bool(shm)
        self.pty = bool(pty)
        if self.pty:
            (root / "dev" / "pts").mkdir(parents=True)
            (root / "dev" / "ptmx").symlink_to("pts/ptmx")
        if self.shm:
            (root / "dev" / "shm").mkdir()
        self.copied = {}
        for inside, source in (copy or {}).items():
            target = self.path(inside)
            target.parent.mkdir(parents=True, exist_ok=True)
            if Path(source).is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
            self.copied[_inside(inside)] = Path(source)
        self.dirs = [_inside(inside) for inside in dirs]
        for inside in self.dirs:
            self.path(inside).mkdir(parents=True, exist_ok=True)
            self.path(inside).chmod(0o700)  # private: the app runs as root
        self.binds = {}
        for inside, source in (bind or {}).items():
            source, mode = source if isinstance(source, tuple) else (source, "rw")
            assert mode in ("rw", "ro"), mode
            target = self.path(inside)
            target.parent.mkdir(parents=True, exist_ok=True)
            if Path(source).is_dir():
                target.mkdir(exist_ok=True)
            else:
                target.touch()
            self.binds[_inside(inside)] = (Path(source), mode)

    def path(self, inside) -> Path:
        """The host path of room path `inside` (e.g. to read what the app wrote)."""
        return self.root / _inside(inside).lstrip("/")

    def files(self):
        """Every file, symlink and directory in the room (as seen from outside: /proc is empty)."""
        return sorted("/" + str(path.relative_to(self.root)) for path in self.root.rglob("*"))

    def run(self, *args, env=None, timeout=120, input=None, max_processes=64, check_limits=True):
        """/app ARGS in the room: a private mount namespace with /proc, the two devices, the binds
        (and /dev/shm) mounted, chroot (working directory /), the environment `env` only (default
        none).

        The run is limited (tests/support/proclimit.py): at most `max_processes` processes and threads at
        a time in its pids cgroup (the room's `unshare` and `sh` count: two of them), at most
        `timeout` seconds; what is left when it ends or times out is killed. The result is a
        CompletedProcess (text) with `limit_hit` (how many forks the limit refused) and
        `timed_out`. With `check_limits` (the default), either fails the test here, with what the
        app printed; without, the caller checks them."""
        import proclimit

        root = shlex.quote(str(self.root))
        mounts = [
            f"mount --bind /dev/null {root}/dev/null",
            f"mount --bind /dev/urandom {root}/dev/urandom",
            f"mount -t proc proc {root}/proc",
        ]
        if self.shm:
            mounts.append(f"mount -t tmpfs -o mode=1777,size=64m tmpfs {root}/dev/shm")
        if self.pty:
            mounts.append(
                f"mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts {root}/dev/pts"
            )
        for inside, (source, mode) in self.binds.items():
            target = shlex.quote(str(self.path(inside)))
            mounts.append(f"mount --bind {shlex.quote(str(source))} {target}")
            if mode == "ro":
                mounts.append(f"mount -o remount,bind,ro {target}")
        variables = [f"{name}={value}" for name, value in (env or {}).items()]
        script = " && ".join(
            [
                *mounts,
                f"{{ env -i {shlex.join(variables)} {shlex.quote(CHROOT)} {root} /app "
                f"{shlex.join(args)}; status=$?; }}",
                "exit $status",  # the mounts go with the namespace
            ]
        )
        host = {"PATH": SYSTEM_PATH}  # for unshare, sh, mount; the app gets only `env`
        run = proclimit.run(
            ["unshare", "--mount", "--fork", "sh", "-c", script],
            max_processes=max_processes,
            timeout=timeout,
            env=host,
            input=input,
        )
        if check_limits:
            problem = limits_problem(run, max_processes, timeout)
            if problem:
                pytest.fail(
                    f"{shlex.join(['/app', *args])}: {problem}\n--- stdout\n"
                    f"{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-6000:]}",
                    pytrace=False,
                )
        return run

    def start(self, *args, **options):
        """`run(*args, **options)` on a thread of its own: a Future of its result, for an app that
        serves while the test talks to it (the test must make it exit; the timeout ends it
        otherwise)."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="room-run")
        future = pool.submit(self.run, *args, **options)
        pool.shutdown(wait=False)
        return future


def limits_problem(run, max_processes=None, timeout=None):
    """What went wrong with a limited run (Room.run's result), or "" when it stayed within its
    process limit and timeout."""
    problems = []
    if getattr(run, "timed_out", False):
        problems.append(f"timed out{f' after {timeout} s' if timeout else ''} (and was killed)")
    if getattr(run, "limit_hit", 0):
        problems.append(
            f"the process limit{f' ({max_processes})' if max_processes else ''} "
            f"refused {run.limit_hit} fork(s): too many processes or threads "
            f"(a fork storm?)"
        )
    return "; ".join(problems)


def expected_files(made: Room):
    """The room's tree: /app, /dev/{null,urandom}, /proc, glibc at its paths, what was added
    (copies with their contents, empty directories, bind mount points, /dev/shm) and their
    directories."""
    added = set(made.dirs) | set(made.binds) | ({"/dev/shm"} if made.shm else set())
    added |= {"/dev/pts", "/dev/ptmx"} if made.pty else set()
    for inside, source in made.copied.items():
        added.add(inside)
        if source.is_dir():
            added |= {inside + "/" + str(path.relative_to(source)) for path in source.rglob("*")}
    paths = {"/app", "/dev", "/dev/null", "/dev/urandom", "/proc"} | set(made.libraries) | added
    return sorted(
        paths
        | {str(parent) for path in paths for parent in Path(path).parents if str(parent) != "/"}
    )


@pytest.fixture
def room(tmp_path, clean_room_possible):
    """make(executable, glibc=, copy=, dirs=, bind=, shm=, pty=): a room for it (see Room), checked
    to hold exactly the executable, glibc, the mount points and what was asked for, and nothing
    named like Python outside what was asked for."""
    rooms = []

    def make(executable, **extras):
        made = Room(tmp_path / f"room-{len(rooms)}", executable, **extras)
        rooms.append(made)
        assert made.files() == expected_files(made)
        added = tuple(list(made.copied) + made.dirs + list(made.binds))
        assert not [
            path for path in made.files() if "python" in path.lower() and not path.startswith(added)
        ]
        return made

    return make


# --- TLS material and an HTTPS server on the host -------------------------------------------------


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A CA (ca.pem) and a server certificate for IP 127.0.0.1 it signed (server.pem,
    server.key), EC P-256, made with the openssl command line; `certs` holds the three files
    an app may see (not the CA's key); `other` is a second CA that signed nothing here."""
    openssl = shutil.which("openssl")
    if openssl is None:
        require_or_skip("the openssl command line is not installed (it makes the test CA)")
    work = tmp_path_factory.mktemp("tls")
    (work / "server.ext").write_text(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for command in (
        [
            "req",
            "-x509",
            *ec,
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=ingot test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        [
            "req",
            "-x509",
            *ec,
            "-keyout",
            "other.key",
            "-out",
            "other.pem",
            "-days",
            "2",
            "-subj",
            "/CN=ingot test other CA",
        ],
        [
            "req",
            "-new",
            *ec,
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
        [
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "4711",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    ):
        run = subprocess.run(
            [openssl, *command], cwd=work, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, f"openssl {' '.join(command)}:\n{run.stderr}"
    certs = work / "certs"
    certs.mkdir()
    for name in ("ca.pem", "server.pem", "server.key"):
        shutil.copy2(work / name, certs / name)
    return SimpleNamespace(
        ca=certs / "ca.pem",
        cert=certs / "server.pem",
        key=certs / "server.key",
        certs=certs,
        other=work / "other.pem",
    )


@pytest.fixture(scope="session")
def https_server(tls_files):
    """An HTTPS server on 127.0.0.1 (a free port) with the test certificate: GET answers JSON;
    `seen` lists the requests it got."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append({"path": self.path, "user_agent": self.headers.get("User-Agent")})
            body = json.dumps({"greeting": "hello from the host", "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files.cert, tls_files.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="https-server", daemon=True)
    thread.start()
    yield SimpleNamespace(url=f"https://127.0.0.1:{server.server_address[1]}", seen=seen)
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)
