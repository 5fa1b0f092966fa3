"""The clean-room acceptance: each executable `ingot build` writes runs where no Python exists.

The room (tests/support/cleanroom.py) holds only the executable (as `/app`), the glibc files it links,
`/dev/null`, `/dev/urandom` and `/proc`: no Python, no standard library, no `/etc`, no `/usr`, no
certificates, no OpenSSL configuration; the executable runs under `chroot` with an empty
environment.

This needs root (CAP_SYS_ADMIN for the mounts, CAP_SYS_CHROOT): without it the tests skip, unless
`INGOT_REQUIRE_PYTHONS` is set (as CI does), where they fail.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from helpers import ROOT, strace_calls

# The fixtures room_launcher, build_executable, room (and require_or_skip, imported where used:
# a module-level import would come before pytest registers and assert-rewrites the plugin).
pytest_plugins = ["cleanroom"]

EXAMPLES = ROOT / "examples"

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


@pytest.fixture(scope="session")
def probe_executable(build_executable, tmp_path_factory):
    script = tmp_path_factory.mktemp("probe") / "probe.py"
    script.write_text(PROBE)
    return build_executable("probe", script)


# --- the executables, each in a room of its own -------------------------------------------------


def test_the_room_holds_no_python(probe_executable, room):
    made = room(probe_executable)
    run = made.run()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    # From inside: only the executable, glibc, /dev/null, /dev/urandom (and /proc, not walked).
    assert seen["root"] == sorted(
        {"app", "dev", "proc"} | {library.split("/")[1] for library in made.libraries}
    )
    assert seen["files"] == sorted({"/app", "/dev/null", "/dev/urandom"} | set(made.libraries))
    assert not [path for path in seen["files"] if "python" in path.lower()]
    assert seen["environ"] == {} and seen["executable"] == "/app"
    assert all(entry == "/app" or entry.startswith("/app/") for entry in seen["path"]), seen["path"]
    # Mapped files: the executable, glibc, and memfds (extension modules, libssl, libcrypto, ...);
    # no libpython, nothing from a Python installation.
    mapped = [entry for entry in seen["maps"] if entry.startswith("/")]
    outside = [
        entry
        for entry in mapped
        if entry not in {"/app", *made.libraries} and not entry.startswith("/memfd:")
    ]
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
    assert seen["default_context"] == {
        "verify_required": True,
        "check_hostname": True,
        "cert_store_stats": {"x509": 0, "crl": 0, "x509_ca": 0},
    }


def test_hello_in_the_room(build_executable, room):
    run = room(build_executable("hello", EXAMPLES / "hello")).run()
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == "Hello from memory! (hello 1.0.0 from /app/hello/__init__.py)\n"


CTYPES_APP = {
    "base.c": "int base_value(void) { return 40; }\n",
    "greet.c": textwrap.dedent("""
        int base_value(void);
        int answer(void) { return base_value() + 2; }
        int threads(void) {
            int n = 0;
        #pragma omp parallel reduction(+:n)
            n += 1;
            return n;
        }
    """),
    "greeter/__init__.py": textwrap.dedent("""
        import ctypes, os
        _here = os.path.join(os.path.dirname(__file__), "lib")
        _lib = ctypes.CDLL(os.path.join(_here, "libgreet.so"))
        def report():
            again = ctypes.CDLL(os.path.join(_here, "libgreet.so"))
            return {"answer": _lib.answer(), "threads": _lib.threads() > 0,
                    "same_handle": again._handle == _lib._handle}
    """),
    "app.py": textwrap.dedent("""
        import json, greeter
        maps = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                       if len(line.split(None, 5)) == 6})
        print(json.dumps({**greeter.report(), "maps": maps}))
    """),
}


def test_a_library_loaded_by_path_comes_from_memory_with_what_it_needs(
    build_executable, room, tmp_path
):
    # A package's own library loaded by `ctypes.CDLL(<dir of __file__>/lib/libgreet.so)`: it
    # needs a library beside it (RUNPATH $ORIGIN) and one of the build machine's (GCC's OpenMP
    # runtime, libgomp.so.1), which the room (glibc only) does not have. All three load from
    # memory; loading the path again gives the same library.
    from cleanroom import require_or_skip

    if shutil.which("gcc") is None:
        require_or_skip("gcc is not installed (the test compiles the libraries it loads)")
    for name, text in CTYPES_APP.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    lib = tmp_path / "greeter" / "lib"
    lib.mkdir()
    compile = ["gcc", "-shared", "-fPIC", "-O1"]
    subprocess.run(
        [*compile, "-Wl,-soname,libbase.so", "-o", lib / "libbase.so", tmp_path / "base.c"],
        check=True,
    )
    linking = ["-L", lib, "-lbase", "-Wl,-rpath,$ORIGIN"]
    made = subprocess.run(
        [*compile, "-fopenmp", "-o", lib / "libgreet.so", tmp_path / "greet.c", *linking],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        require_or_skip(f"gcc cannot build an OpenMP library here (libgomp):\n{made.stderr}")
    run = room(build_executable("ctypes-by-path", tmp_path / "app.py")).run()
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    seen = json.loads(run.stdout)
    assert (seen["answer"], seen["threads"], seen["same_handle"]) == (42, True, True)
    for library in ("libgreet.so", "libbase.so", "libgomp.so.1"):
        assert any(f"/memfd:ingot:{library} " in line for line in seen["maps"]), seen["maps"]
    on_disk = [line for line in seen["maps"] if not line.startswith("/memfd:")]
    assert not [line for line in on_disk if "greet" in line or "gomp" in line], on_disk


# Ends threads the ways that make glibc load libgcc_s.so.1 itself, by its SONAME: one calls
# pthread_exit (through ctypes, as C libraries' worker threads do), and daemon threads still
# running Python code when the interpreter finalizes end in CPython's PyThread_exit_thread.
THREAD_EXIT_APP = textwrap.dedent("""
    import ctypes, json, os, threading, time

    libc = ctypes.CDLL(None)
    libc.pthread_exit.argtypes = [ctypes.c_void_p]
    started = threading.Event()

    def leave():
        started.set()
        libc.pthread_exit(None)

    def spin():
        while True:
            time.sleep(0.0005)

    exiting = threading.Thread(target=leave, daemon=True)
    exiting.start()
    started.wait()
    time.sleep(0.3)  # (an abort in pthread_exit would end the whole process meanwhile)
    for _ in range(4):
        threading.Thread(target=spin, daemon=True).start()
    maps = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                   if "libgcc_s" in line and len(line.split(None, 5)) == 6})
    print(json.dumps({"libgcc_s": maps,
                      "system": [d for d in ("/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                                             "/usr/lib/x86_64-linux-gnu",
                                             "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64")
                                 if os.path.exists(os.path.join(d, "libgcc_s.so.1"))]}))
""")


def test_threads_end_with_pthread_exit_on_a_system_with_glibc_alone(
    build_executable, room, tmp_path
):
    """glibc loads libgcc_s.so.1 by its SONAME for pthread_exit (and pthread_cancel, backtrace);
    a system with glibc alone has none, and without it the process aborts ("libgcc_s.so.1 must
    be installed for pthread_exit to work"). Every executable carries Debian 11's copy, loaded
    from memory at start only where the system has none: with the runtime's launcher (which
    does not link libgcc_s) the room has none, and the carried copy is what is mapped; with this
    machine's launcher (which links it) the room holds the system's, and that one is used. A
    system's copy put in the room is preferred too."""
    from cleanroom import RUNTIME, linked_files

    script = tmp_path / "thread_exit.py"
    script.write_text(THREAD_EXIT_APP)
    executable = build_executable("thread-exit", script)
    run = room(executable).run(timeout=60)
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    seen = json.loads(run.stdout)
    carried = [path for path in seen["libgcc_s"] if path.startswith("/memfd:ingot:libgcc_s.so.1")]
    launcher_links_it = any("libgcc_s" in path for path in linked_files(executable))
    if seen["system"]:
        assert launcher_links_it and not RUNTIME, seen  # (what put it in the room)
        assert not carried, seen
    else:
        assert carried == seen["libgcc_s"] and carried, seen
        # The system's copy, where there is one, is the one glibc loads: nothing of the
        # executable's is mapped at start.
        host = next(path for path in ("/lib/x86_64-linux-gnu/libgcc_s.so.1",
                                      "/lib/aarch64-linux-gnu/libgcc_s.so.1")
                    if os.path.exists(path))  # fmt: skip
        run = room(executable, copy={host: host}).run(timeout=60)
        assert (run.returncode, run.stderr) == (0, ""), run.stderr
        seen = json.loads(run.stdout)
        assert seen["system"] and not any("/memfd:" in path for path in seen["libgcc_s"]), seen


def test_cli_app_in_the_room(build_executable, room):
    run = room(build_executable("cli-app", EXAMPLES / "cli-app")).run(
        "--title", "clean room", "--width", "120"
    )
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert "clean room" in run.stdout
    rows = {line.split("│")[1].strip() for line in run.stdout.splitlines() if line.count("│") >= 4}
    assert {"cli-app", "click", "rich"} <= rows, run.stdout
    assert run.stdout.rstrip().endswith("app from /app/cli_app/__init__.py")
    assert re.search(r"^Python 3\.\d+, app from", run.stdout, re.M)


def test_import_stdlib_in_the_room(build_executable, room):
    run = room(
        build_executable("import-stdlib", EXAMPLES / "import-stdlib" / "import_stdlib.py")
    ).run()
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    found = re.fullmatch(r"imported (\d+) modules in [\d.]+ ms \(Python 3\.\d+\)\n", run.stdout)
    assert found, run.stdout
    assert int(found.group(1)) >= 449


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_import_stdlib_executable_reads_no_module_file_and_writes_nothing(
    build_executable, tmp_path
):
    # The strace acceptance, on the host (not in the room): every file system call of the
    # import_stdlib executable and its children.
    executable = build_executable("import-stdlib", EXAMPLES / "import-stdlib" / "import_stdlib.py")
    log = tmp_path / "strace.log"
    result = subprocess.run(
        ["strace", "-f", "-o", str(log), "-e", "trace=%file,%desc", str(executable)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 and "ptrace" in result.stderr:
        from cleanroom import require_or_skip

        require_or_skip(f"strace cannot trace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    calls = strace_calls(log)
    paths = [match.group(1) for line in calls for match in [re.search(r'"([^"]*)"', line)] if match]
    assert len(paths) > 10, "strace logged too little to be meaningful"
    # No module file, and nothing under a real Python installation. (sysconfig, at import, derives
    # `<sys.prefix>/lib/python3.X/...` paths from the executable's directory and lstat()s them;
    # they do not exist, hold no modules, and are the stdlib's own doing, not an import.)
    installations = {sysconfig.get_paths()["stdlib"], sys.base_prefix, sys.prefix}
    module_files = [
        path
        for path in paths
        if path.endswith((".py", ".pyc"))
        or "__pycache__" in path
        or "site-packages" in path
        or any(path.startswith(root) for root in installations)
    ]
    assert module_files == []
    writes = [
        line
        for line in calls
        if (
            re.search(r"\b(open|openat|creat)\(", line)
            and re.search(r"O_WRONLY|O_RDWR|O_CREAT", line)
        )
        or re.search(r"\b(mkdir|mkdirat|unlink|unlinkat|rename|renameat2?|link|symlink)\(", line)
    ]
    assert writes == []


# --- TLS with the system's CA store, wherever the distribution keeps it -------------------------

TLS_CLIENT = textwrap.dedent("""
    import json, ssl, sys, urllib.request
    try:
        print(json.loads(urllib.request.urlopen(sys.argv[1], timeout=30).read())["greeting"])
    except Exception as error:  # the test reads why
        print(type(error).__name__, error)
        sys.exit(1)
""")


@pytest.fixture(scope="session")
def tls_client(build_executable, tmp_path_factory):
    script = tmp_path_factory.mktemp("tls-client") / "tls_client.py"
    script.write_text(TLS_CLIENT)
    return build_executable("tls_client", script)


@pytest.mark.parametrize(
    "bundle",
    [
        "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu
        "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL, Amazon Linux
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # CentOS, RHEL 7
        "/etc/ssl/ca-bundle.pem",  # openSUSE, SLES
        "/etc/ssl/cert.pem",  # Alpine
    ],
)
def test_tls_trusts_the_systems_ca_store_wherever_it_is_kept(
    tls_client, https_server, tls_files, room, bundle
):
    run = room(tls_client, copy={bundle: tls_files.ca}).run(https_server.url)
    assert (run.returncode, run.stdout.strip()) == (0, "hello from the host"), (
        run.stdout + run.stderr
    )


def test_ssl_cert_file_and_dir_still_win_over_the_systems_store(
    tls_client, https_server, tls_files, room
):
    url, ca, other = https_server.url, tls_files.ca, tls_files.other
    system = "/etc/pki/tls/certs/ca-bundle.crt"
    # The user's file, the right CA, wins over a system store that would not verify.
    chosen = room(tls_client, copy={system: other, "/mine/ca.pem": ca})
    run = chosen.run(url, env={"SSL_CERT_FILE": "/mine/ca.pem"})
    assert (run.returncode, run.stdout.strip()) == (0, "hello from the host"), (
        run.stdout + run.stderr
    )
    # And a user's choice that does not verify is not overridden by the system's store.
    wrong = room(tls_client, copy={system: ca, "/mine/ca.pem": other})
    for env in ({"SSL_CERT_FILE": "/mine/ca.pem"}, {"SSL_CERT_DIR": "/mine"}):
        run = wrong.run(url, env=env)
        assert run.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in run.stdout, run.stdout
