"""The clean-room acceptance: each executable `ingot build` writes runs where no Python exists.

A room is a temporary directory holding only the executable (as `/app`), the glibc files it links
(`ldd`: libc, libm, libgcc_s and the dynamic loader, at their original paths), `/dev/null` and
`/dev/urandom` (bind mounts of the host's) and `/proc` (a fresh procfs), and nothing else: no
Python, no standard library, no `/etc`, no `/usr`, no certificates, no OpenSSL configuration. The
mounts are made in a mount namespace of their own (`unshare --mount`), so they vanish with it, and
the executable runs under `chroot` with an empty environment.

This needs root (CAP_SYS_ADMIN for the mounts, CAP_SYS_CHROOT): without it the tests skip, unless
`INGOT_REQUIRE_PYTHONS` is set (as CI does), where they fail.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import ingot
from conftest import ROOT, interpreters, python_for
from ingot.build import launcher_python

EXAMPLES = ROOT / "examples"
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CHROOT = shutil.which("chroot", path=SYSTEM_PATH) or "chroot"
GLIBC = ("libc.so.6", "libm.so.6", "libgcc_s.so.1")  # and the dynamic loader, ld-linux*

# Runs inside the room: what the room holds, seen from inside, and the native stdlib modules
# (OpenSSL through _ssl and _hashlib, SQLite through _sqlite3) loaded from the archive.
PROBE = textwrap.dedent("""
    import hashlib, json, os, sqlite3, ssl, stat, sys

    files = []
    for top, dirs, names in os.walk("/"):
        if top == "/":
            dirs[:] = sorted(d for d in dirs if d != "proc")
        files += [os.path.join(top, name) for name in names + [d for d in dirs
                  if os.path.islink(os.path.join(top, d))]]
    maps = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                   if len(line.split(None, 5)) == 6})

    connection = sqlite3.connect(":memory:")
    connection.execute("create table t (x integer, name text)")
    connection.executemany("insert into t values (?, ?)", [(1, "a"), (2, "b"), (3, "c")])
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        default = ssl.create_default_context()
        default_context = {"verify_required": default.verify_mode == ssl.CERT_REQUIRED,
                           "check_hostname": default.check_hostname,
                           "cert_store_stats": default.cert_store_stats()}
    except Exception as error:  # reported, and asserted on, by the test
        default_context = {"error": repr(error)}

    print(json.dumps({
        "root": sorted(os.listdir("/")),
        "files": sorted(files),
        "maps": maps,
        "executable": sys.executable,
        "environ": dict(os.environ),
        "prefix": sys.prefix,
        "path": sys.path,
        "modules": {name: getattr(sys.modules[name], "__file__", None)
                    for name in ("ssl", "_ssl", "_hashlib", "sqlite3", "_sqlite3")},
        "sha256": hashlib.sha256(b"clean room").hexdigest(),
        "sqlite": [sqlite3.sqlite_version,
                   connection.execute("select sum(x), group_concat(name, '') from t").fetchone()],
        "openssl": ssl.OPENSSL_VERSION,
        "client_context": [client.verify_mode == ssl.CERT_REQUIRED, client.check_hostname,
                           client.minimum_version >= ssl.TLSVersion.TLSv1_2],
        "default_context": default_context,
        "urandom": len(os.urandom(32)),
        "devnull": open("/dev/null", "w").write("x"),
        "devices": [stat.S_ISCHR(os.stat(path).st_mode) for path in ("/dev/null", "/dev/urandom")],
    }))
""")


def require_or_skip(reason):
    if os.environ.get("INGOT_REQUIRE_PYTHONS"):
        pytest.fail(f"clean room required (INGOT_REQUIRE_PYTHONS is set): {reason}")
    pytest.skip(reason)


# --- the launcher, the Python that builds, the executables ----------------------------------------

@pytest.fixture(scope="session")
def room_launcher(tmp_path_factory):
    """(launcher, Python with ingot installed of the version it embeds): `INGOT_LAUNCHER`, else
    target/release/ingot-launcher, else the one ingot's package carries for this Python (the first
    of them that embeds a Python we have), else target/release/ingot-launcher built by cargo for
    PYO3_PYTHON or this Python. It is copied first, so that a rebuild of target/ during the
    session (for another Python) cannot change it under the tests."""
    packaged = Path(ingot.__file__).parent / "_launcher" / "ingot-launcher-{}.{}".format(
        *sys.version_info[:2])
    candidates = [Path(candidate) for candidate in
                  (os.environ.get("INGOT_LAUNCHER"), ROOT / "target/release/ingot-launcher",
                   packaged)
                  if candidate and Path(candidate).is_file()]
    if not candidates:
        if shutil.which("cargo") is None:
            require_or_skip("no launcher (INGOT_LAUNCHER, target/release/ingot-launcher) and "
                            "no cargo to build one")
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "ingot-launcher"],
                       cwd=ROOT, check=True, env=dict(os.environ, PYO3_PYTHON=os.environ.get(
                           "PYO3_PYTHON", sys.executable)))
        candidates = [Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
                      / "release" / "ingot-launcher"]
    snapshots = []
    for number, candidate in enumerate(candidates):
        snapshot = tmp_path_factory.mktemp("launcher") / f"ingot-launcher-{number}"
        shutil.copy2(candidate, snapshot)
        version = launcher_python(snapshot)
        assert version, f"{candidate} does not say which Python it embeds"
        if version in interpreters():
            return snapshot, interpreters()[version]
        snapshots.append((snapshot, version))
    snapshot, version = snapshots[0]
    return snapshot, python_for(version)  # skips, or fails under INGOT_REQUIRE_PYTHONS


@pytest.fixture(scope="session")
def build_executable(clean_room_possible, room_launcher, tmp_path_factory):
    """`ingot build SOURCE ...` once per session and name; returns the executable."""
    launcher, python = room_launcher
    built = {}
    workdir = tmp_path_factory.mktemp("clean-room-builds")

    def build(name, source, *options):
        if name not in built:
            out = workdir / name
            run = subprocess.run([python, "-m", "ingot", "build", str(source), *options,
                                  "--launcher", str(launcher), "-o", str(out), "--force",
                                  "-q"], capture_output=True, text=True, cwd=workdir,
                                 timeout=600)
            if run.returncode != 0 and "pip could not install" in run.stderr and (
                    "NewConnectionError" in run.stderr or
                    "No matching distribution" in run.stderr):
                pytest.skip(f"pip could not reach PyPI: {run.stderr[-300:]}")
            assert run.returncode == 0, run.stderr
            built[name] = out
        return built[name]

    return build


@pytest.fixture(scope="session")
def probe_executable(build_executable, tmp_path_factory):
    script = tmp_path_factory.mktemp("probe") / "probe.py"
    script.write_text(PROBE)
    return build_executable("probe", script)


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
    run = subprocess.run(["unshare", "--mount", "--fork", "sh", "-c",
                          f"mount -t proc proc {proc} && umount {proc} && chroot / true"],
                         capture_output=True, text=True, timeout=60, env={"PATH": SYSTEM_PATH})
    if run.returncode != 0:
        require_or_skip(f"unshare/mount/chroot are not permitted here: {run.stderr.strip()}")


class Room:
    def __init__(self, root: Path, executable: Path):
        self.root = root
        self.libraries = linked_files(executable)
        names = {Path(path).name for path in self.libraries}
        loaders = {name for name in names if name.startswith("ld-linux")}
        assert len(loaders) == 1 and names - loaders <= set(GLIBC), \
            f"the executable links more than glibc: {self.libraries}"
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

    def files(self):
        """Every file, symlink and directory in the room (as seen from outside: /proc is empty)."""
        return sorted("/" + str(path.relative_to(self.root)) for path in self.root.rglob("*"))

    def run(self, *args, timeout=120):
        """/app ARGS in the room: a private mount namespace with /proc and the two devices mounted,
        chroot, empty environment."""
        root = shlex.quote(str(self.root))
        script = " && ".join([
            f"mount --bind /dev/null {root}/dev/null",
            f"mount --bind /dev/urandom {root}/dev/urandom",
            f"mount -t proc proc {root}/proc",
            f"{{ env -i {shlex.quote(CHROOT)} {root} /app {shlex.join(args)}; status=$?; }}",
            f"umount {root}/proc {root}/dev/urandom {root}/dev/null",
            "exit $status",
        ])
        env = {"PATH": SYSTEM_PATH}  # for unshare, sh, mount; the app gets no environment
        return subprocess.run(["unshare", "--mount", "--fork", "sh", "-c", script],
                              capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def room(tmp_path, clean_room_possible):
    """make(executable): a room for it, checked to hold exactly the executable, glibc and the
    mount points, and nothing named like Python."""
    def make(executable):
        made = Room(tmp_path / "room", executable)
        assert made.files() == expected_files(made)
        assert not [path for path in made.files() if "python" in path.lower()]
        return made
    return make


def expected_files(made):
    """The room's tree: /app, /dev/{null,urandom}, /proc, glibc at its paths and their dirs."""
    return sorted({"/app", "/dev", "/dev/null", "/dev/urandom", "/proc"} |
                  {str(parent) for library in made.libraries
                   for parent in Path(library).parents if str(parent) != "/"} |
                  set(made.libraries))


# --- the executables, each in a room of its own -------------------------------------------------

def test_the_room_holds_no_python(probe_executable, room):
    made = room(probe_executable)
    run = made.run()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    # From inside: only the executable, glibc, /dev/null, /dev/urandom (and /proc, not walked).
    assert seen["root"] == sorted({"app", "dev", "proc"} |
                                  {library.split("/")[1] for library in made.libraries})
    assert seen["files"] == sorted({"/app", "/dev/null", "/dev/urandom"} | set(made.libraries))
    assert not [path for path in seen["files"] if "python" in path.lower()]
    assert seen["environ"] == {} and seen["executable"] == "/app"
    assert all(entry == "/app" or entry.startswith("/app/") for entry in seen["path"]), seen["path"]
    # Mapped files: the executable, glibc, and memfds (extension modules, libssl, libcrypto, ...);
    # no libpython, nothing from a Python installation.
    mapped = [entry for entry in seen["maps"] if entry.startswith("/")]
    outside = [entry for entry in mapped
               if entry not in {"/app", *made.libraries} and not entry.startswith("/memfd:")]
    assert not outside, outside
    assert not [entry for entry in mapped if "libpython" in entry]


def test_ssl_sqlite_hashlib_in_the_room(probe_executable, room):
    run = room(probe_executable).run()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    for name, file in seen["modules"].items():
        assert file and file.startswith("/app/"), (name, file)  # from the archive
    assert seen["sha256"] == hashlib.sha256(b"clean room").hexdigest()
    assert seen["sqlite"][1] == [6, "abc"]
    assert seen["openssl"].startswith("OpenSSL ")
    assert seen["client_context"] == [True, True, True]
    assert seen["urandom"] == 32 and seen["devnull"] == 1 and seen["devices"] == [True, True]
    # No OpenSSL configuration and no certificates exist in the room: create_default_context()
    # still works (OpenSSL ignores the missing openssl.cnf and CA paths), verifying peers, with an
    # empty trust store; a real TLS connection would need certificates (SSL_CERT_FILE, or
    # cafile=) brought into the room.
    assert seen["default_context"] == {"verify_required": True, "check_hostname": True,
                                       "cert_store_stats": {"x509": 0, "crl": 0, "x509_ca": 0}}


def test_hello_in_the_room(build_executable, room):
    run = room(build_executable("hello", EXAMPLES / "hello")).run()
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == "Hello from memory! (hello 1.0.0 from /app/hello/__init__.py)\n"


def test_cli_app_in_the_room(build_executable, room):
    run = room(build_executable("cli-app", EXAMPLES / "cli-app")).run(
        "--title", "clean room", "--width", "120")
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert "clean room" in run.stdout
    rows = {line.split("│")[1].strip() for line in run.stdout.splitlines()
            if line.count("│") >= 4}
    assert {"cli-app", "click", "rich"} <= rows, run.stdout
    assert run.stdout.rstrip().endswith("app from /app/cli_app/__init__.py")
    assert re.search(r"^Python 3\.\d+, app from", run.stdout, re.M)


def test_import_stdlib_in_the_room(build_executable, room):
    run = room(build_executable("import-stdlib",
                                EXAMPLES / "import-stdlib" / "import_stdlib.py")).run()
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    found = re.fullmatch(r"imported (\d+) modules in [\d.]+ ms \(Python 3\.\d+\)\n", run.stdout)
    assert found, run.stdout
    assert int(found.group(1)) >= 455


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_import_stdlib_executable_reads_no_module_file_and_writes_nothing(build_executable, tmp_path):
    # The strace acceptance, on the host (not in the room): every file system call of the
    # import_stdlib executable and its children.
    executable = build_executable("import-stdlib", EXAMPLES / "import-stdlib" / "import_stdlib.py")
    log = tmp_path / "strace.log"
    result = subprocess.run(["strace", "-f", "-o", str(log), "-e", "trace=%file,%desc", str(executable)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "ptrace" in result.stderr:
        require_or_skip(f"strace cannot trace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    paths = [match.group(1) for line in calls for match in [re.search(r'"([^"]*)"', line)] if match]
    assert len(paths) > 10, "strace logged too little to be meaningful"
    # No module file, and nothing under a real Python installation. (sysconfig, at import, derives
    # `<sys.prefix>/lib/python3.X/...` paths from the executable's directory and lstat()s them;
    # they do not exist, hold no modules, and are the stdlib's own doing, not an import.)
    installations = {sysconfig.get_paths()["stdlib"], sys.base_prefix, sys.prefix}
    module_files = [path for path in paths
                    if path.endswith((".py", ".pyc")) or "__pycache__" in path or "site-packages" in path
                    or any(path.startswith(root) for root in installations)]
    assert module_files == []
    writes = [line for line in calls
              if re.search(r"\b(open|openat|creat)\(", line) and re.search(r"O_WRONLY|O_RDWR|O_CREAT", line)
              or re.search(r"\b(mkdir|mkdirat|unlink|unlinkat|rename|renameat2?|link|symlink)\(", line)]
    assert writes == []
