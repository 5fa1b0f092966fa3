"""Executables built with a runtime (`ingot build --python 3.11`) on an older system than the
build machine: a minimal Debian 11 root (glibc 2.31; `scripts/debian11-root`, debootstrap) with
nothing of Python in it, entered with chroot in a mount namespace of its own (a fresh /proc).

The runtime comes from the store (`INGOT_RUNTIMES`); scripts/test builds it once and keeps it
where the machine keeps caches. Without a runtime or root these tests skip, or fail under
`INGOT_REQUIRE_PYTHONS` (CI). Every run is under a process-count limit and a timeout
(tests/support/proclimit.py).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from ingot.machine import host_machine
from ingot.runtime import pins, store

import proclimit
from helpers import ROOT

VERSION = os.environ.get("INGOT_RUNTIME_VERSION", "3.11")  # the runtime the tests build with
CHROOT = shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin") or "/usr/sbin/chroot"


def require(condition, reason):
    if condition:
        return
    if os.environ.get("INGOT_REQUIRE_PYTHONS"):
        pytest.fail(f"{reason} (INGOT_REQUIRE_PYTHONS is set)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def built_runtime(runtime_store):
    found = store.find_runtime(VERSION)
    require(found is not None, f"no runtime {VERSION} in {store.store()} (scripts/test builds it)")
    return found


@pytest.fixture(scope="module")
def debian11():
    require(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare")
    given = os.environ.get("INGOT_DEBIAN11_ROOT")
    if given:
        root = Path(given)
    else:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "debian11-root")],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 0, done.stderr
        root = Path(done.stdout.strip())
    libc = sorted((root / "lib" / host_machine().triplet).glob("libc-2.*.so"))
    assert libc and libc[0].name == "libc-2.31.so", libc
    assert not list((root / "usr" / "bin").glob("python*")), "the root must hold no Python"
    return root


def build(tmp_path, source, *options):
    """`ingot build SOURCE --python 3.11 ...`, run by the Python the tests run under."""
    output = tmp_path / "app"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ingot",
            "build",
            str(source),
            "--python",
            VERSION,
            "-o",
            str(output),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr
    return output, done.stderr


def run_old(root, executable, *args, env=None, hide=()):
    """Runs the executable in the Debian 11 root (a copy under /tmp there), with /proc. `hide`:
    directories of the root that look empty for this run (an empty tmpfs mounted over each, in
    the run's own mount namespace)."""
    inside = f"/tmp/ingot-{uuid.uuid4().hex[:8]}"
    (root / inside.lstrip("/")).mkdir(parents=True)
    shutil.copy2(executable, root / inside.lstrip("/") / "app")
    variables = [f"{key}={value}" for key, value in (env or {"HOME": "/root"}).items()]
    hidden = "".join(
        f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(root / path.lstrip('/')))} && "
        for path in hide
    )
    script = (
        f"mount -t proc proc {shlex.quote(str(root))}/proc && {hidden}"
        f"exec env -i PATH=/usr/bin:/bin {shlex.join(variables)} {CHROOT} "
        f"{shlex.quote(str(root))} {inside}/app {shlex.join(args)}"
    )
    try:
        result = proclimit.run(
            ["unshare", "--mount", "--fork", "sh", "-c", script], max_processes=16, timeout=120
        )
    finally:
        shutil.rmtree(root / inside.lstrip("/"))
    assert not result.timed_out and result.limit_hit == 0, result.stderr
    return result


def test_the_runtime_needs_at_most_glibc_2_17(built_runtime):
    floor = built_runtime.info["glibc_floor"]
    assert tuple(int(part) for part in floor["version"].split(".")) <= (2, 17), floor
    assert tuple(
        int(part) for part in built_runtime.info["launcher"]["glibc_floor"].split(".")
    ) <= (2, 17)


def _section_names(path):
    """The section names of an ELF file, or None for another file."""
    with open(path, "rb") as file:
        if file.read(4) != b"\x7fELF":
            return None
    done = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True)
    return {
        line.split("]", 1)[1].split()[0]
        for line in done.stdout.splitlines()
        if line.strip().startswith("[") and "]" in line and line.split("]", 1)[1].split()
    }


@pytest.mark.parametrize("version", ["3.11", "3.13"])
def test_each_native_runtime_is_optimized_like_the_fastest_builds(runtime_store, version, tmp_path):
    """Issue 41: CPython's own -O3 and ThinLTO, and PGO trained on CPython's PGO tests where the
    runtime records them (CI builds the runtimes it has not cached with --no-pgo --no-lto;
    release wheels always with both: scripts/wheels --pgo). The training counted the
    interpreter's loop and an extension module's code (each binary writes its own profile), and
    nothing of the instrumentation is left in what ships: no profile sections in any ELF file,
    no profile written by a run."""
    found = store.find_runtime(version)
    require(found is not None, f"no runtime {version} in {store.store()} (scripts/test builds it)")
    optimization = found.info["optimization"]
    assert optimization["lto"] in ("thin", None), optimization
    code = (
        "import json, sys, sysconfig; print(json.dumps({name: sysconfig.get_config_var(name) for "
        "name in ('CONFIG_ARGS', 'OPT', 'CFLAGS', 'PY_CFLAGS_NODIST', 'PY_LDFLAGS_NODIST')} | "
        "{'hash': sys.hash_info.algorithm}))"
    )
    done = proclimit.run(
        [str(found.python), "-I", "-c", code], max_processes=8, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    variables = json.loads(done.stdout)
    assert "-O3" in variables["OPT"].split(), variables
    assert "-O2" not in variables["CFLAGS"].split(), variables
    if optimization["lto"] is None:
        # What the runtime says of itself is checked against what it is: no LTO in its build.
        assert "--with-lto" not in variables["CONFIG_ARGS"], variables
        assert "-flto" not in variables["PY_LDFLAGS_NODIST"], variables
    else:
        assert "'--with-lto=thin'" in variables["CONFIG_ARGS"], variables
        # ThinLTO's code generation at -O3 (lld's default is -O2).
        assert "-flto=thin" in variables["PY_LDFLAGS_NODIST"], variables
        assert "-O3" in variables["PY_LDFLAGS_NODIST"].split(), variables
    # str and bytes hashed with SipHash, CPython's default on machines that read unaligned
    # words (FNV until 2026-11-28: configure's test of it, at -O0, trapped under zig's clang).
    assert variables["hash"] == "siphash13", variables
    assert sorted(path.name for path in tmp_path.iterdir()) == [], "a run wrote a profile"
    instrumented = [
        str(path.relative_to(found.path))
        for path in found.path.rglob("*")
        if path.is_file()
        and not path.is_symlink()
        and any(name.startswith("__llvm_prf") for name in (_section_names(path) or ()))
    ]
    assert instrumented == [], instrumented
    if optimization["pgo"] is None:
        # What the runtime says of itself is checked against what it is: no PGO in its build.
        assert "'--enable-optimizations'" not in variables["CONFIG_ARGS"], variables
        assert "-fprofile-use" not in variables["PY_CFLAGS_NODIST"], variables
        pytest.skip(
            f"runtime {found.version} was built without PGO (scripts/test builds the runtimes "
            "its cache lacks with --no-pgo --no-lto; INGOT_CI_PGO=1 builds them with both): "
            f"its -O3 and LTO ({optimization['lto']}) were checked, its training was not"
        )
    assert optimization["pgo"]["instrumentation"].startswith("IR"), optimization
    counted = optimization["pgo"]["counted"]
    assert counted["_PyEval_EvalFrameDefault"] > 1_000_000, counted
    assert counted["_json.c:scanstring_unicode"] > 0, counted
    assert counted["functions"] > 5_000, counted
    assert "'--enable-optimizations'" in variables["CONFIG_ARGS"], variables
    # clang's IR-level PGO (the front end's, configure's choice, left much of its profile
    # unmatched).
    assert "-fprofile-use=code.profclangd" in variables["PY_CFLAGS_NODIST"], variables


@pytest.mark.parametrize("version", ["3.11", "3.13"])
def test_each_runtimes_tcl_finds_its_script_library(runtime_store, version):
    """tkinter in both runtimes (issue 37): Tcl and Tk static in `_tkinter`, which needs only
    the system's libX11 (this machine's: scripts/test installs the X client libraries), and the
    script libraries beside the standard library: encodings, clock's time zones, msgcat, Tk's
    own library (found from Tcl's)."""
    found = store.find_runtime(version)
    require(found is not None, f"no runtime {version} in {store.store()} (scripts/test builds it)")
    code = textwrap.dedent(
        """
        import json, tkinter, _tkinter
        tcl = tkinter.Tcl()
        print(json.dumps({
            "library": tcl.eval("info library"),
            "encoding": tcl.eval("encoding convertto iso8859-15 \\u20ac") == "\\xa4",
            "clock": tcl.eval("clock format 0 -timezone :America/New_York -format %H"),
            "msgcat": tcl.eval("package require msgcat"),
            "tk": tcl.eval("file exists [file join [file dirname [info library]] tk8.6 tk.tcl]"),
            "module": _tkinter.__file__,
        }))
        """
    )
    done = proclimit.run([str(found.python), "-I", "-c", code], max_processes=8, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["library"] == str(found.python.parent.parent / "lib" / "tcl8.6"), seen
    assert seen["encoding"] is True and seen["clock"] == "19" and seen["tk"] == "1", seen
    assert seen["msgcat"].startswith("1."), seen
    needed = subprocess.run(["readelf", "-d", seen["module"]], capture_output=True, text=True)
    libraries = sorted(
        line.split("[")[1].rstrip("]") for line in needed.stdout.splitlines() if "(NEEDED)" in line
    )
    assert libraries == ["libX11.so.6", "libc.so.6", "libdl.so.2", "libm.so.6", "libpthread.so.0"]


def test_hello_runs_on_debian_11(built_runtime, debian11, tmp_path):
    app, log = build(tmp_path, ROOT / "examples" / "hello")
    assert "runs on Linux with glibc 2.17 or later" in log, log
    result = run_old(debian11, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("Hello from memory! (hello 1.0.0 from /tmp/ingot-")
    # The standard library's extension modules carry their libraries: no shared library but GCC's
    # support library, which every executable carries for glibc (ingot.build.archive.libgcc).
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", "--json", str(app)],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(done.stdout)
    libraries = [entry["name"] for entry in info["entries"] if entry["kind"] == "shared-library"]
    assert libraries == ["libgcc_s.so.1"], libraries
    assert tuple(int(part) for part in info["glibc_floor"]["version"].split(".")) <= (2, 17)
    assert info["launch"]["runtime"] == built_runtime.name
    # inspect names the runtime, its patch release and target, and each native file's floor.
    assert info["runtime"] == {
        "name": built_runtime.name,
        "python": built_runtime.version,
        "glibc": "2.17",
        "target": f"{built_runtime.machine}-linux-gnu",
    }
    assert info["machine"] == built_runtime.machine
    assert info["glibc_floor"]["each"]["the launcher"] is not None
    text = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", str(app)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        f"python: runtime {built_runtime.name} (CPython {built_runtime.version} for glibc 2.17)"
        in text
    )
    assert "none needs more than glibc 2.17" in text


STDLIB = """
import bz2, ctypes, ctypes.util, curses, decimal, hashlib, json, lzma, readline, sqlite3, ssl
import sys, unicodedata, uuid, zlib, pyexpat, _uuid, inspect, email.utils, urllib.parse
context = ssl.create_default_context()
connection = sqlite3.connect(":memory:")
connection.execute("create table t (x)")
connection.executemany("insert into t values (?)", [(1,), (2,)])
libc = ctypes.CDLL(None)
data = b"ingot " * 100
print(json.dumps({
    "ssl": [ssl.OPENSSL_VERSION.split()[0], context.verify_mode == ssl.CERT_REQUIRED],
    "sqlite": [sqlite3.sqlite_version, connection.execute("select sum(x) from t").fetchone()[0]],
    "ctypes": libc.strlen(b"four"),
    "decimal": str(decimal.Decimal(1) / decimal.Decimal(7)),
    "compression": [bz2.decompress(bz2.compress(data)) == data,
                    lzma.decompress(lzma.compress(data)) == data,
                    zlib.decompress(zlib.compress(data)) == data],
    "hashlib": hashlib.sha256(b"abc").hexdigest()[:16],
    "uuid": [len(str(uuid.uuid4())), uuid.uuid1().version, _uuid.has_uuid_generate_time_safe],
    "expat": pyexpat.EXPAT_VERSION.split("_")[0],
    "mpdecimal": decimal.__libmpdec_version__.count(".") >= 1,
    "unicodedata": unicodedata.name("\\u00e9"),
    "version": sys.version.split()[0],
    "readline": readline._READLINE_LIBRARY_VERSION.split(".")[0],
    "curses": curses.ncurses_version.major,
    # The components' releases, and two of the security fixes a 3.11 runtime carries from
    # Debian's series (CVE-2023-24329: leading blanks in an URL; CVE-2023-27043: strict
    # parsing of addresses), shown by behaviour.
    "versions": {"openssl": ssl.OPENSSL_VERSION.split()[1], "sqlite": sqlite3.sqlite_version,
                 "expat": pyexpat.EXPAT_VERSION.split("_")[1], "zlib": zlib.ZLIB_RUNTIME_VERSION},
    "urlsplit_scheme": urllib.parse.urlsplit(" https://x/").scheme,
    "getaddresses_strict": "strict" in inspect.signature(email.utils.getaddresses).parameters,
}))
"""


def test_the_standard_library_works_on_debian_11(built_runtime, debian11, tmp_path):
    script = tmp_path / "stdlib_check.py"
    script.write_text(textwrap.dedent(STDLIB))
    app, _log = build(tmp_path, script)
    result = run_old(debian11, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    check_stdlib_report(json.loads(result.stdout), built_runtime.version)


def check_stdlib_report(seen, version):
    """What :data:`STDLIB` prints, as a runtime of CPython ``version`` must have it."""
    assert seen["ssl"] == ["OpenSSL", True]
    assert seen["sqlite"][1] == 3
    assert seen["ctypes"] == 4
    assert seen["decimal"] == "0.1428571428571428571428571429"
    assert seen["compression"] == [True, True, True]
    assert seen["hashlib"] == "ba7816bf8f01cfea"
    assert seen["uuid"] == [36, 1, 1]  # _uuid: libuuid is in the runtime
    assert (seen["expat"], seen["mpdecimal"]) == ("expat", True)
    assert seen["unicodedata"] == "LATIN SMALL LETTER E WITH ACUTE"
    assert seen["version"] == version
    assert (seen["readline"], seen["curses"]) == ("8", 6)
    # The releases the pins name (python/ingot/runtime/sources.toml): what the runtime carries.
    pinned = pins.read_pins()
    assert seen["versions"] == {
        "openssl": pinned["openssl"].version,
        "sqlite": pinned["sqlite"].version,
        "expat": pinned["expat"].version,
        "zlib": pinned["zlib"].version,
    }
    # Two of the security fixes Debian's series carries, by behaviour, where a patch series of
    # the release is pinned (CVE-2023-24329, CVE-2023-27043); without it, 3.11.2 lacks them.
    minor = ".".join(version.split(".")[:2])
    if f"patches-{minor}" in pinned or minor != "3.11":
        assert seen["urlsplit_scheme"] == "https"
        assert seen["getaddresses_strict"] is True


WHEELS = """
import io, json, orjson
from PIL import Image
image = Image.new("RGB", (4, 3), (255, 0, 0))
buffer = io.BytesIO()
image.save(buffer, format="PNG")
again = Image.open(io.BytesIO(buffer.getvalue()))
print(orjson.dumps({"size": again.size, "pixel": again.getpixel((1, 1)),
                    "png": buffer.getvalue()[:4] == b"\\x89PNG"}).decode())
"""


def test_an_app_with_manylinux_wheels_runs_on_debian_11(built_runtime, debian11, tmp_path):
    script = tmp_path / "wheels_app.py"
    script.write_text(textwrap.dedent(WHEELS))
    app, log = build(
        tmp_path, script, "--dependency", "orjson==3.11.4", "--dependency", "pillow==11.3.0"
    )
    result = run_old(debian11, app)
    assert (result.returncode, result.stderr) == (0, ""), (result.stderr, log)
    assert json.loads(result.stdout) == {"size": [4, 3], "pixel": [255, 0, 0], "png": True}


def test_by_default_a_build_uses_its_pythons_runtime_and_console_scripts_resolve_here(
    built_runtime, debian11, tmp_path
):
    # No --python, no launcher named: the runtime of the Python ingot runs under, if built. The
    # console script (pytest, installed where the tests run) is resolved here, where the runtime
    # does not look, and its pins installed for the runtime.
    if built_runtime.version.rsplit(".", 1)[0] != "%d.%d" % sys.version_info[:2]:
        pytest.skip(
            f"the runtime is {built_runtime.version}, the tests run on {sys.version.split()[0]}"
        )
    output = tmp_path / "pytest-app"
    env = {key: value for key, value in os.environ.items() if key != "INGOT_LAUNCHER"}
    done = subprocess.run(
        [sys.executable, "-m", "ingot", "build", "--console-script", "pytest", "-o", str(output)],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert f"(runtime {built_runtime.name})" in done.stderr, done.stderr
    import pytest as this_pytest

    result = run_old(debian11, output, "--version")
    assert result.returncode == 0, result.stderr
    assert f"pytest {this_pytest.__version__}" in result.stdout + result.stderr


# Issue 24: readline 8.2 (unpatched) dies in rl_initialize, at `import readline` (pdb, pytest),
# when LC_ALL, LC_CTYPE or LANG names a locale the system lacks (setlocale returns NULL, which
# _rl_init_locale copies with strlen): container images set LANG=C.UTF-8 and often hold no
# locale files (Python's coercion to C.UTF-8 then fails too). Without a terminfo database readline
# works as on a dumb terminal, and curses says it finds none.
READLINE = """
import curses, readline
readline.parse_and_bind("tab: complete")
readline.add_history("ingot")
try:
    curses.setupterm()
    terminal = "found"
except curses.error as error:
    terminal = str(error)
print(readline.get_history_item(1), readline._READLINE_LIBRARY_VERSION.split(".")[0], terminal)
"""
#: A minimal container's: no terminfo database, no locale files (Debian 11's root has C.UTF-8).
BARE = ("/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo", "/usr/lib/locale")


@pytest.fixture(scope="module")
def readline_app(built_runtime, tmp_path_factory):
    directory = tmp_path_factory.mktemp("readline-app")
    script = directory / "readline_app.py"
    script.write_text(textwrap.dedent(READLINE))
    return build(directory, script)[0]


@pytest.mark.parametrize(
    "env",
    [
        {"TERM": "xterm"},
        {},
        {"TERM": "xterm", "LANG": "C.UTF-8"},
        {"LC_ALL": "en_US.UTF-8"},
        {"TERM": "dumb", "LC_CTYPE": "C.UTF-8"},
    ],
    ids=["xterm", "no-term", "lang", "lc-all", "lc-ctype"],
)
def test_readline_imports_without_terminfo_or_locales(debian11, readline_app, env):
    hide = [path for path in BARE if (debian11 / path.lstrip("/")).is_dir()]
    result = run_old(debian11, readline_app, env=env, hide=hide)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    history, major, terminal = result.stdout.split(" ", 2)
    assert (history, major) == ("ingot", "8")
    assert terminal.startswith("setupterm: could not find "), terminal  # none to find


# Issue 24: a C++ wheel built with a runtime. The build machine's libstdc++ (and libgcc_s), which
# the build carries, need its glibc (2.36 here); the executable takes the system's copy where it
# defines every symbol version the wheel's code needs (__ingot__/system-first.json) and keeps the
# carried one for systems without it, so the floor stays the runtime's 2.17.
CXX_APP = """
# /// script
# dependencies = ["numpy==2.1.2"]
# ///
import json, numpy
matrix = numpy.arange(9.0).reshape(3, 3) + numpy.eye(3)
mapped = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libstdc++" in line})
print(json.dumps({"det": round(float(numpy.linalg.det(matrix)), 3), "libstdc++": mapped}))
"""


def test_a_cxx_wheel_keeps_the_runtimes_floor_and_runs_on_debian_11(
    built_runtime, debian11, tmp_path
):
    script = tmp_path / "cxx_app.py"
    script.write_text(textwrap.dedent(CXX_APP).lstrip())
    app, log = build(tmp_path, script)
    assert "runs on Linux with glibc 2.17 or later" in log, log
    assert "libstdc++.so.6: the system's where it defines GLIBCXX_" in log, log
    assert "else the carried copy, which needs glibc" in log, log
    result = run_old(debian11, app)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    seen = json.loads(result.stdout)
    # Debian 11's own C++ runtime (GCC 10's), not the carried copy (a memory file).
    libstdcxx = f"/usr/lib/{host_machine().triplet}/libstdc++.so.6.0.28"
    assert seen == {"det": -5.0, "libstdc++": [libstdcxx]}
