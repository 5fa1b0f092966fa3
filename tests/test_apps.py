"""The application matrix (issues 3 and 4): real applications built from PyPI wheels with
`ingot build`, each run in the clean room (tests/support/cleanroom.py), where no Python exists.

Each app is a small project in tests/apps/<name>/ (its dependencies pinned to exact versions,
with manylinux wheels for CPython 3.11 x86-64, transitive ones included; a [project.scripts]
entry; a main module that exercises the package and prints what the test checks). The builds are
made once per session, two at a time (INGOT_APP_BUILD_JOBS), by the Python 3.11 ingot runs under
and the launcher that embeds 3.11; the matrix runs on 3.11 only (the wheels are cp311 ones) and is
skipped on other Pythons: scripts/test runs it in its 3.11 pass.

The rooms hold all of glibc's run-time libraries (cleanroom.Room glibc="all"), not only those the
launcher links: ingot leaves glibc to the target (ingot.elf.HOST_LIBRARIES), and wheels built
for manylinux2014 name libpthread.so.0 (charset_normalizer's mypyc modules, numpy's OpenBLAS),
which every glibc system has (an empty stub since glibc 2.34) but a room of the launcher's
libraries only does not.

The room shares the host's network namespace (only the mount namespace is private), so the
requests app reaches an HTTPS server the test runs on 127.0.0.1 (a CA and a server certificate
made with the openssl command line; the CA is copied into the room and named on the app's
command line). Apps under the files policy get a private INGOT_CACHE_DIR in the room.

Every run in a room is limited in processes (a pids cgroup: 64 processes and threads unless a
test says otherwise) and time (cleanroom.Room.run); a run that hits either fails the test. The
apps that start worker processes from the executable (joblib, sklearn, pip, uvicorn: self-calls
the launcher reads as python command lines) run under a smaller limit, so that the workers they
ask for fit and a fork storm does not. Those whose pools use multiprocessing's locks (POSIX
semaphores) get a /dev/shm in their room (cleanroom.Room shm=True), as any system has.
"""

import json
import os
import re
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# The fixtures clean_room_possible and room (helpers are imported inside functions: a
# module-level import would come before pytest registers and assert-rewrites the plugin).
pytest_plugins = ["cleanroom"]

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="the app matrix pins cp311 wheels and runs under Python 3.11 only "
    "(scripts/test's 3.11 pass runs it)",
)

APPS = Path(__file__).resolve().parent / "apps"

#: ingot features an app's [tool.ingot] needs, for a clear message if the build lacks them.
FEATURES = {
    "files": "the per-package file policy ([tool.ingot] files = [...], --files PKG)",
    "filesystem-imports": "imports from the file system ([tool.ingot] filesystem-imports = true)",
}

#: Known failures, recognized in an app's stderr: (pattern, what it means).
DIAGNOSES = [
    (
        r"libpthread\.so\.0: cannot open shared object file",
        "an extension module (built for manylinux2014) needs glibc's libpthread.so.0, which ingot "
        "leaves to the host and this room does not hold",
    ),
    (
        r"Not a directory: '/app/blib2to3/Grammar\.txt'",
        "black is compiled by mypyc with a shared group library (<hash>__mypyc, a top-level "
        "extension module served from memory). `import black` initializes blib2to3.pygram natively "
        "(mypyc's CPyImport_ImportNative, no sys.meta_path lookup) and derives its __file__ from "
        "the group library's: /app/blib2to3/pygram...so, inside the executable, although blib2to3 "
        "is under the files policy; pygram.initialize() then opens /app/blib2to3/Grammar.txt "
        "(importing blib2to3.pygram through the import system before black avoids it)",
    ),
    (r"cannot materialize package", "the files policy could not write its extraction cache"),
]


# --- builds ---------------------------------------------------------------------------------------


class Builds:
    """The session's app builds, started in the background in the order the tests need them."""

    def __init__(self, builder, names, jobs):
        self.builder = builder
        self.pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="ingot-app-build")
        self.futures = {name: self.pool.submit(builder, name, APPS / name) for name in names}

    def get(self, name):
        if name not in self.futures:
            self.futures[name] = self.pool.submit(self.builder, name, APPS / name)
        try:
            return self.futures[name].result()
        except AssertionError as error:
            text = str(error)
            for key, feature in FEATURES.items():
                if f"unknown key {key!r}" in text or (
                    f"--{key}" in text and "unrecognized arguments" in text
                ):
                    pytest.fail(
                        f"app {name!r} needs {feature}, which this ingot does not have "
                        f"(yet):\n{text}",
                        pytrace=False,
                    )
            raise


@pytest.fixture(scope="session")
def app_builds(request, clean_room_possible, tmp_path_factory):
    from cleanroom import Builder, find_launcher

    launcher, python = find_launcher(tmp_path_factory, "3.11")
    names = [
        item.callspec.params["app"]
        for item in request.session.items
        if getattr(item, "module", None) is sys.modules[__name__]
        and "app" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    builds = Builds(
        Builder(launcher, python, tmp_path_factory.mktemp("app-builds")),
        list(dict.fromkeys(names)),
        int(os.environ.get("INGOT_APP_BUILD_JOBS", "2")),
    )
    yield builds
    builds.pool.shutdown(wait=True, cancel_futures=True)


# --- running an app -------------------------------------------------------------------------------


class App:
    """One app of the matrix in a test: its executable, rooms for it, and run checks."""

    def __init__(self, name, executable, make_room, request, tmp_path):
        self.name, self.executable, self.make_room = name, executable, make_room
        self.request, self.tmp_path = request, tmp_path
        self.note = None  # what the matrix table says beside "pass" (a known limitation)

    def room(self, **extras):
        return self.make_room(self.executable, glibc="all", **extras)

    def fixture(self, name):
        return self.request.getfixturevalue(name)

    def check(self, run, status=0):
        """Asserts that the run stayed within its process limit and timeout, and the exit
        status; on a mismatch, says what a known failure means."""
        from cleanroom import limits_problem

        problem = limits_problem(run)
        if problem:
            pytest.fail(
                f"{self.name}: {problem}; exit status {run.returncode}"
                f"\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-6000:]}",
                pytrace=False,
            )
        if run.returncode != status:
            known = [meaning for pattern, meaning in DIAGNOSES if re.search(pattern, run.stderr)]
            pytest.fail(
                f"{self.name}: exit status {run.returncode}, expected {status}"
                + "".join(f"\nroot cause: {meaning}" for meaning in known)
                + f"\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-6000:]}",
                pytrace=False,
            )
        return run

    def json(self, run):
        """The app's JSON line, after a successful run with nothing on stderr."""
        self.check(run)
        assert run.stderr == "", run.stderr
        return json.loads(run.stdout)


CASES = {}


def case(name):
    """Registers the test of app `name` (tests/apps/<name>)."""

    def register(function):
        CASES[name] = function
        return function

    return register


ANSI = re.compile(r"\x1b\[[0-9;]*m")
EXT = ".cpython-311-x86_64-linux-gnu.so"


# --- issue 3 --------------------------------------------------------------------------------------


@case("httpie")
def check_httpie(app: App):
    """`http --help` and an --offline request; a real request over TLS to the host's server;
    charset_normalizer's mypyc-compiled cd/md loaded from the archive (memory files)."""
    server, tls = app.fixture("https_server"), app.fixture("tls_files")
    room = app.room(dirs=["/home", "/cache"], copy={"/certs/ca.pem": tls.ca})
    env = {"HOME": "/home", "INGOT_CACHE_DIR": "/cache"}  # httpie needs a home (its config dir)

    run = app.check(room.run("--help", env=env))
    assert run.stdout.startswith("usage:\n    http [METHOD] URL [REQUEST_ITEM ...]\n"), run.stdout
    assert "--offline" in run.stdout and "--verify VERIFY" in run.stdout

    run = app.check(
        room.run(
            "--offline", "--ignore-stdin", "POST", "http://127.0.0.1:9/post", "name=ingot", env=env
        )
    )
    assert run.stdout.startswith("POST /post HTTP/1.1\n"), run.stdout
    assert "User-Agent: HTTPie/3.2.4" in run.stdout
    assert run.stdout.rstrip().endswith('{"name": "ingot"}'), run.stdout

    run = app.check(
        room.run(
            "--ignore-stdin", "--verify=/certs/ca.pem", "--body", f"{server.url}/httpie", env=env
        )
    )
    assert json.loads(run.stdout) == {"greeting": "hello from the host", "path": "/httpie"}
    assert {"path": "/httpie", "user_agent": "HTTPie/3.2.4"} in server.seen

    seen = app.json(room.run("--charset-probe"))
    assert (seen["encoding"], seen["decoded"], seen["version"]) == ("cp1251", True, "3.5.2")
    for name in ("charset_normalizer.md", "charset_normalizer.cd"):
        module = seen["modules"][name]
        path = "/app/" + name.replace(".", "/") + EXT
        assert module == {
            "file": path,
            "origin": path,
            "loader": "IngotFinder",
            "compiled": True,
        }, (name, module)
    assert seen["memfds"] == [
        f"/memfd:ingot:charset_normalizer.cd{EXT} (deleted)",
        f"/memfd:ingot:charset_normalizer.md{EXT} (deleted)",
    ]


@case("rich")
def check_rich(app: App):
    """A table rendered without colour, and markup with an emoji and a hyperlink in truecolor."""
    seen = app.json(app.room().run())
    assert seen["table"].splitlines() == [
        "       Moons       ",
        "┏━━━━━━━━━┳━━━━━━━┓",
        "┃ planet  ┃ moons ┃",
        "┡━━━━━━━━━╇━━━━━━━┩",
        "│ Mercury │     0 │",
        "│ Earth   │     1 │",
        "│ Mars    │     2 │",
        "│ Jupiter │    95 │",
        "└─────────┴───────┘",
    ]
    assert re.fullmatch(
        r"\x1b\[1;31malert\x1b\[0m \U0001F680 \x1b\]8;id=\d+;https://example\.org"
        r"\x1b\\link\x1b\]8;;\x1b\\\n",
        seen["markup"],
    ), seen["markup"]
    assert seen["file"] == "/app/rich/__init__.py"


@case("pygments")
def check_pygments(app: App):
    """A Python file in the room highlighted to HTML (with the style's CSS) and to a terminal."""
    source = APPS / "pygments" / "data" / "fib.py"
    seen = app.json(app.room(copy={"/data/fib.py": source}).run("/data/fib.py"))
    assert seen["lexer"] == "Python"
    assert seen["html"].startswith(
        '<div class="code"><pre><span></span><span class="k">def</span><span class="w"> </span>'
        '<span class="nf">fibonacci</span><span class="p">(</span>'
    ), seen["html"][:300]
    assert '<span class="sd">"""The first `count` Fibonacci numbers."""</span>' in seen["html"]
    assert ".code .k { color: #008000; font-weight: bold }" in seen["css"]
    assert "\x1b[38;5;" in seen["terminal"]
    assert ANSI.sub("", seen["terminal"]) == source.read_text()
    assert seen["file"] == "/app/pygments/__init__.py"


@case("pyyaml")
def check_pyyaml(app: App):
    """yaml.CLoader/CDumper (libyaml in the _yaml extension), an SQLite database file written in
    the room and read back on the host, a TLS 1.3 handshake with certificate files."""
    tls = app.fixture("tls_files")
    room = app.room(copy={"/data": APPS / "pyyaml" / "data", "/certs": tls.certs}, dirs=["/work"])
    seen = app.json(room.run("/data/inventory.yaml", "/work", "/certs"))
    assert seen["with_libyaml"] is True
    assert seen["yaml_module"] == f"/app/yaml/_yaml{EXT}"
    shop = {"name": "Corner Store", "open": True}
    assert seen["loaded"] == {
        "shop": shop,
        "items": [
            {"name": "apple", "count": 12, "price": 0.5},
            {"name": "pear", "count": 3, "price": 0.75},
            {"name": "plum", "count": 20, "price": 0.25},
        ],
        "branches": [shop, {"name": "Harbour", "open": False}],
        "notes": "multi-line\ntext\n",
    }
    assert seen["dumped"] == "{total: [35, 13.25, 'apple,pear,plum']}\n"
    assert seen["sqlite"][1:] == [[35, 13.25, "apple,pear,plum"], True]
    with sqlite3.connect(room.path("/work/inventory.sqlite3")) as connection:
        assert connection.execute("select name, count from item order by name").fetchall() == [
            ("apple", 12),
            ("pear", 3),
            ("plum", 20),
        ]
    assert seen["tls"]["version"] == "TLSv1.3" and seen["tls"]["received"] == "ping over TLS"
    assert seen["tls"]["peer"] == "127.0.0.1"
    assert seen["tls"]["openssl"].startswith("OpenSSL ")


# --- issue 4 --------------------------------------------------------------------------------------

BLACK_FORMATTED = """\
def greet(name, greeting="Hello"):
    return greeting + ", " + name + "!"


values = {
    "a": 1,
    "b": [
        1,
        2,
        3,
    ],
}
if values["a"] == 1:
    print(greet("room"))
"""


@case("black")
def check_black(app: App):
    """`black /work/ugly.py` reformats the file in place; the test reads the result."""
    room = app.room(copy={"/work/ugly.py": APPS / "black" / "data" / "ugly.py"}, dirs=["/home"])
    run = app.check(room.run("--compiled-probe", "/work/ugly.py", env={"HOME": "/home"}))
    probe = json.loads(run.stdout.splitlines()[0])
    assert probe["version"] == "26.10.1"
    # black.linegen is mypyc-compiled into the same group library as blib2to3 (files policy), so
    # the whole group is materialized: its __file__ is a real file in the extraction cache.
    assert probe["linegen"].startswith("/home/.cache/ingot/trees/")
    assert probe["linegen"].endswith(f"/black/linegen{EXT}")
    assert room.path(probe["linegen"]).is_file()
    # ingot build made blib2to3's grammar pickles (ingot.build.analysis.policy.PREPARATIONS), and
    # the tree's files share one modification time, so black loads them instead of generating the
    # grammar.
    assert probe["grammar_pickle_used"]
    assert "reformatted /work/ugly.py" in run.stderr and "1 file reformatted." in run.stderr
    assert room.path("/work/ugly.py").read_text() == BLACK_FORMATTED


@case("requests")
def check_requests(app: App):
    """certifi.where() names a real file (the files policy) and requests GETs from the host's
    HTTPS server, verifying it against the test CA."""
    server, tls = app.fixture("https_server"), app.fixture("tls_files")
    room = app.room(copy={"/certs/ca.pem": tls.ca}, dirs=["/cache"])
    seen = app.json(
        room.run(f"{server.url}/requests", "/certs/ca.pem", env={"INGOT_CACHE_DIR": "/cache"})
    )
    assert re.fullmatch(r"/cache/.+/certifi/cacert\.pem", seen["where"]), seen["where"]
    assert room.path(seen["where"]).is_file()
    assert seen["certificates"] > 100 and seen["same_as_contents"] is True
    assert seen["default_bundle"] == seen["where"]
    assert (seen["status"], seen["content_type"]) == (200, "application/json")
    assert json.loads(seen["body"]) == {"greeting": "hello from the host", "path": "/requests"}
    assert {"path": "/requests", "user_agent": "python-requests/2.34.2"} in server.seen


@case("jinja2")
def check_jinja2(app: App):
    """Templates from the app's own package data through jinja2.PackageLoader, read from the
    archive: the room has no directory the extraction cache could use (no /cache, /tmp, HOME)."""
    seen = app.json(app.room().run())
    assert seen["page"] == (
        "<html><head><title>FROM MEMORY</title></head>\n"
        "<body><ul><li>ingot: 3 items</li><li>&lt;script&gt;: 1 item</li></ul></body></html>"
    )
    assert seen["templates"] == ["base.html", "macros.html", "page.html"]
    assert seen["speedups"] == f"/app/markupsafe/_speedups{EXT}"


@case("pydantic")
def check_pydantic(app: App):
    """pydantic v2 models validated and serialized by pydantic_core (Rust)."""
    seen = app.json(app.room().run())
    user = {
        "id": 42,
        "name": "Ada Lovelace",
        "signup": "2024-05-06T07:08:09Z",
        "tags": ["math", "engines"],
        "address": {"city": "London", "zip": "12345"},
    }
    assert seen["user"] == user
    assert json.loads(seen["json"]) == user
    assert seen["errors"] == [
        ["address.zip", "string_pattern_mismatch"],
        ["id", "int_parsing"],
        ["name", "string_too_short"],
        ["signup", "datetime_from_date_parsing"],
    ]
    assert seen["ints"] == [1, 2, 3]
    assert seen["schema_keys"] == ["address", "id", "name", "signup", "tags"]
    assert seen["versions"] == ["2.14.3", "2.50.4"]
    assert seen["core"] == f"/app/pydantic_core/_pydantic_core{EXT}"


@case("numpy")
def check_numpy(app: App):
    """A float64 matrix product through OpenBLAS (numpy.libs, loaded from memory), an inverse,
    an FFT."""
    seen = app.json(app.room().run())
    assert seen["version"] == "2.4.6" and seen["blas"] == "scipy-openblas"
    assert seen["matmul_error"] < 1e-9 and seen["identity"] is True and seen["fft_peak"] == 5
    assert seen["umath"] == f"/app/numpy/_core/_multiarray_umath{EXT}"
    memfds = " ".join(seen["memfds"])
    assert "/memfd:ingot:libscipy_openblas64_-" in memfds, memfds
    assert "/memfd:ingot:libgfortran-" in memfds and "_multiarray_umath" in memfds, memfds


@case("cryptography")
def check_cryptography(app: App):
    """A Fernet round trip, the test CA and server certificates parsed and verified, a
    certificate built and parsed back."""
    tls = app.fixture("tls_files")
    seen = app.json(app.room(copy={"/certs": tls.certs}).run("/certs/ca.pem", "/certs/server.pem"))
    assert seen["fernet"] == "secret from memory"
    assert (seen["ca_subject"], seen["server_subject"]) == ("CN=ingot test CA", "CN=127.0.0.1")
    assert seen["server_issuer_is_ca"] is True and seen["ca_basic_constraints"] is True
    assert seen["san_ips"] == ["127.0.0.1"]
    assert seen["made"] == ["CN=made in the room", 4242, True]
    assert seen["version"] == "50.0.2" and seen["openssl"].startswith("OpenSSL ")
    assert seen["rust"].startswith("/app/cryptography/hazmat/bindings/_rust."), seen["rust"]


@case("lxml")
def check_lxml(app: App):
    """XML with namespaces: XPath (paths, functions, attributes), XSLT; HTML with lxml.html."""
    seen = app.json(app.room().run())
    assert seen["titles"] == ["Dune", "Neuromancer", "Solaris"]
    assert seen["euro_total"] == 16.75 and seen["usd_ids"] == ["b3"]
    assert seen["xslt"] == "b1=Dune;b2=Neuromancer;b3=Solaris;"
    assert seen["html"] == ["one", ["/three"], "onetwo 3"]
    assert seen["roundtrip"].startswith(
        '<book xmlns="urn:example:books" xmlns:p="urn:example:price" id="b1"><title>Dune</title>'
    )
    assert seen["versions"][0] == [6, 1, 3, 0]
    assert seen["etree"] == f"/app/lxml/etree{EXT}"


@case("sqlalchemy")
def check_sqlalchemy(app: App):
    """The ORM on an SQLite file in the room (compiled extensions in use); the host reads it."""
    room = app.room(dirs=["/work"])
    seen = app.json(room.run("/work/books.sqlite3"))
    assert seen["counts"] == [["Le Guin", 2], ["Lem", 1]]
    assert seen["titles"] == [["Solaris", 1962, "Lem"], ["The Dispossessed", 1974, "Le Guin"]]
    assert seen["version"] == "2.1.9" and seen["compiled"] is True
    with sqlite3.connect(room.path("/work/books.sqlite3")) as connection:
        assert connection.execute("select title from book order by title").fetchall() == [
            ("Solaris",),
            ("The Dispossessed",),
        ]


# A test suite for pytest inside the executable, shipped into the room as real files. (Written
# here rather than under tests/apps/, where the project's own pytest run would collect it.)
SUITE = {
    "conftest.py": """\
import pytest


def pytest_report_header(config):
    return "suite conftest loaded"


@pytest.fixture
def inventory():
    return {"apples": 3, "pears": 2}
""",
    "test_inventory.py": """\
import pytest


def test_total(inventory):
    assert sum(inventory.values()) == 5


@pytest.mark.parametrize("count", [1, 2])
def test_counts(count):
    assert count in (1, 2)


def test_restock(inventory):
    inventory["pears"] += 1
    assert inventory == {"apples": 3, "pears": 2}
""",
}


@case("pytest")
def check_pytest(app: App):
    """pytest runs a suite of real files (conftest.py, a test module) from inside the executable
    (the path finder after the archive, by default); the failing assertion's message is the rewritten one."""
    suite = app.tmp_path / "suite"
    suite.mkdir()
    for name, text in SUITE.items():
        (suite / name).write_text(text)
    room = app.room(copy={"/suite": suite})
    run = app.check(room.run("/suite", "-p", "no:cacheprovider", "-v", "--color=no"), status=1)
    out = run.stdout
    assert "suite conftest loaded" in out, out
    assert re.search(r"^rootdir: /suite$", out, re.M), out
    for test in ("test_total", "test_counts[1]", "test_counts[2]"):
        assert f"test_inventory.py::{test} PASSED" in out, out
    assert "test_inventory.py::test_restock FAILED" in out, out
    # Assertion rewriting: the message compares the two dicts item by item.
    assert (
        "E       AssertionError: assert {'apples': 3, 'pears': 3} == {'apples': 3, 'pears': 2}"
        in out
    ), out
    assert "E         Differing items:" in out, out
    assert "E         {'pears': 3} != {'pears': 2}" in out, out
    assert re.search(r"=+ 1 failed, 3 passed in [\d.]+s =+$", out.rstrip()), out[-500:]


# --- worker processes: self-calls of the executable -----------------------------------------------

SQUARES = [number * number for number in range(10)]


@case("joblib")
def check_joblib(app: App):
    """joblib.Parallel(n_jobs=2) with loky, concurrent.futures.ProcessPoolExecutor(2) and
    multiprocessing pools (spawn, forkserver, fork) map a function in worker processes that run
    the executable, within 32 processes and threads."""
    run = app.room(shm=True).run(max_processes=32, timeout=180, check_limits=False)
    assert run.limit_hit == 0 and not run.timed_out, (run.limit_hit, run.timed_out, run.stderr)
    seen = app.json(run)
    assert seen["joblib"] == "1.6.0" and seen["joblib_backend"] == "LokyBackend"
    for pool in ("loky", "futures", "spawn", "forkserver", "fork"):
        assert seen[pool] == {
            "squares": SQUARES,
            "workers_are_children": True,
            "executables": ["/app"],
            "files": ["/app/joblib_app/__init__.py"],
        }, (pool, seen[pool])


@case("joblib14")
def check_joblib14(app: App):
    """joblib 1.4's loky workers, which it starts by os.fork() and os.execve(sys.executable, ...,
    a copy of os.environ) (issue 37: they ran the application again, until a process limit):
    the workers run loky's code, twice, within 32 processes and threads."""
    run = app.room(shm=True).run(max_processes=32, timeout=180, check_limits=False)
    assert run.limit_hit == 0 and not run.timed_out, (run.limit_hit, run.timed_out, run.stderr)
    seen = app.json(run)
    assert seen["joblib"] == "1.4.2"
    for round_ in ("first", "second"):
        assert seen[round_] == {
            "squares": SQUARES,
            "workers_are_children": True,
            "executables": ["/app"],
            "files": ["/app/joblib14_app/__init__.py"],
        }, (round_, seen[round_])


@case("sklearn")
def check_sklearn(app: App):
    """scikit-learn cross-validates a logistic regression on the iris data set with n_jobs=2:
    the folds are fitted in loky worker processes that run the executable."""
    # No directory the extraction cache could use (no /cache, /tmp, HOME): sklearn's reads next
    # to its modules are answered from the archive.
    room = app.room(shm=True)
    run = room.run(max_processes=32, timeout=180, check_limits=False)
    assert run.limit_hit == 0 and not run.timed_out, (run.limit_hit, run.timed_out, run.stderr)
    seen = app.json(run)
    # The same app installed with pip into a venv of Python 3.11.7 (pyenv) with the pinned
    # wheels (scikit-learn 1.9.1, numpy 2.4.6, scipy 1.17.1, joblib 1.6.0, threadpoolctl 3.8.0,
    # narwhals 2.29.0, cloudpickle 3.1.2) printed these scores (sklearn-app).
    assert seen["scores"] == [0.98, 0.96, 0.98]
    assert seen["shape"] == [150, 4] and seen["classes"] == ["setosa", "versicolor", "virginica"]
    assert seen["descr"] == ".. _iris_dataset:"
    assert seen["fitted_in_workers"] is True and 1 <= seen["workers"] <= 2, seen
    assert seen["backend"] == "LokyBackend"
    assert seen["versions"] == ["1.9.1", "2.4.6", "1.17.1", "1.6.0", "3.8.0"]
    assert seen["sklearn"] == "/app/sklearn/__init__.py"  # served from memory


@case("pip")
def check_pip(app: App):
    """`sys.executable -m pip --version` and `sys.executable -I -c CODE ARGS` run pip and code
    from the executable's archive."""
    # pip asks platformdirs for its cache directory at start, which needs a HOME (the room has
    # no /etc/passwd): "could not determine the home directory for '~/.cache'".
    room = app.room(dirs=["/home"])
    run = room.run(max_processes=16, timeout=120, check_limits=False, env={"HOME": "/home"})
    assert run.limit_hit == 0 and not run.timed_out, (run.limit_hit, run.timed_out, run.stderr)
    seen = app.json(run)
    assert seen["executable"] == "/app"
    status, out, err = seen["pip"]
    assert (status, err) == (0, "") and out.startswith("pip 26.3 from /app/pip "), seen["pip"]
    assert seen["code"] == [0, "/app/pip/__init__.py\n['-c', 'one', 'two']\n", ""], seen["code"]


@case("uvicorn")
def check_uvicorn(app: App):
    """uvicorn with two worker processes serves requests from the host; a request to /shutdown
    stops it (its worker sends SIGTERM to uvicorn's supervisor, which ends the workers)."""
    import http.client
    import socket
    import time

    with socket.socket() as probe:  # a free port on the host's (and so the room's) loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serving = app.room().start(str(port), max_processes=32, timeout=120, check_limits=False)

    def get(path):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            assert response.status == 200, (path, response.status)
            return json.loads(response.read())
        finally:
            connection.close()

    stopped = False
    try:
        deadline = time.monotonic() + 90
        while True:
            if serving.done():
                app.check(serving.result())
                pytest.fail(f"uvicorn exited before serving:\n{serving.result().stderr}")
            try:
                answers = [get("/first")]
                break
            except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
                assert time.monotonic() < deadline, "uvicorn did not answer within 90 s"
                time.sleep(0.2)
        # Both workers accept on the socket the supervisor bound: ask until both have answered.
        for number in range(100):
            if len({answer["pid"] for answer in answers}) == 2:
                break
            answers.append(get(f"/request/{number}"))
        answers.append(get("/shutdown"))
        stopped = True
    finally:
        if not stopped and not serving.done():  # a failure: stop it, not wait for the timeout
            try:
                get("/shutdown")
            except Exception:
                pass
    run = app.check(serving.result(timeout=150))
    assert run.stdout == ""
    parents = re.findall(r"Started parent process \[(\d+)\]", run.stderr)
    workers = re.findall(r"Started server process \[(\d+)\]", run.stderr)
    assert len(parents) == 1 and len(set(workers)) == 2, run.stderr
    assert sorted(re.findall(r"Finished server process \[(\d+)\]", run.stderr)) == sorted(
        workers
    ), run.stderr
    assert f"Stopping parent process [{parents[0]}]" in run.stderr, run.stderr
    assert {str(answer["pid"]) for answer in answers} == set(workers), (answers, workers)
    for answer in answers:
        assert str(answer["pid"]) in workers and str(answer["parent"]) == parents[0], answer
        assert answer["executable"] == "/app", answer
        assert answer["file"] == "/app/uvicorn_app/server.py", answer
    assert run.limit_hit == 0


# --- issue 12: apps that read files next to their modules, zero-config ----------------------------


@case("flask")
def check_flask(app: App):
    """Flask's test client: a page from file templates (inheritance, autoescaping), a static file
    and a JSON answer. No [tool.ingot], and no directory the extraction cache could use: the
    templates and static files are read from the archive."""
    seen = app.json(app.room().run())
    assert seen["page"] == [
        200,
        "<html><head><title>FROM MEMORY</title></head>\n"
        "<body><ul><li>ingot</li><li>&lt;script&gt;</li></ul></body></html>",
    ]
    assert seen["style"] == [200, "body { color: #333; }\n", "text/css; charset=utf-8"]
    assert seen["missing"] == 404
    assert seen["api"] == [200, {"hello": "ingot"}]
    assert seen["templates"] == ["base.html", "page.html"]


@case("django")
def check_django(app: App):
    """Django: `migrate` on an SQLite file in the room (migrations found next to the modules), an
    ORM write, a view rendering an app template in German (Accept-Language) and Django's own
    French translations. No [tool.ingot]; the host reads the database afterwards."""
    room = app.room(dirs=["/data"])
    seen = app.json(room.run("/data"))
    assert seen["migrated"][0] == "Applying contenttypes.0001_initial... OK"
    assert seen["migrated"][-1] == "Applying polls.0001_initial... OK"
    assert len(seen["migrated"]) == 15, seen["migrated"]
    assert seen["page"] == [200, "<p>Ja/Nein: 1</p>\n<ul><li>Does it run from memory?</li></ul>\n"]
    assert seen["french_yes"] == "Oui"
    with sqlite3.connect(room.path("/data/db.sqlite3")) as connection:
        assert connection.execute("select text from polls_question").fetchall() == [
            ("Does it run from memory?",)
        ]


@case("timezones")
def check_timezones(app: App):
    """babel's locale data, pytz's zone files, dateutil's zoneinfo tarball and tzdata through
    zoneinfo, all read from the archive (no [tool.ingot]; no directory for a cache)."""
    seen = app.json(app.room().run())
    assert seen == {
        "babel_date": "Montag, 1. Juli 2024 14:30",
        "babel_number": "1.234.567,891",
        "babel_locales": True,
        "babel_file": "/app/babel/__init__.py",
        "pytz": "2024-07-01T21:30:00+09:00",
        "pytz_zones": True,
        "zoneinfo": "2024-07-01T08:30:00-04:00",
        "zoneinfo_zones": True,
        "dateutil": "2024-07-01T10:30:00+00:00",
        "dateutil_zoneinfo": "10:00:00",
    }


@case("plugins")
def check_plugins(app: App):
    """A click CLI whose subcommands are entry points of the app's own distribution, found by
    importlib.metadata in the archive and loaded by name."""
    room = app.room()
    run = app.check(room.run("--help"))
    assert "count" in run.stdout and "greet" in run.stdout, run.stdout
    assert app.check(room.run("greet", "Ada", "--shout")).stdout == "HELLO, ADA!\n"
    assert app.check(room.run("count")).stdout == "2 plugins from plugins-app 1.0\n"
    bad = app.check(room.run("greet"), status=2)
    assert "Missing argument 'NAME'" in bad.stderr


@case("pathplugins")
def check_pathplugins(app: App):
    """Plugins listed in a directory of the package and loaded by their file path (io.open_code
    answered from the archive), a file missing below the "install directory" (the executable):
    FileNotFoundError, a python command line through a shell (`shell=True`) and a frozen
    module (issue 37)."""
    # (a shell in the room for shell=True: dash, which needs only libc)
    room = app.room(copy={"/bin/sh": "/bin/dash"})
    seen = app.json(room.run("hello", max_processes=16, timeout=60))
    assert seen == {
        "plugins": {"reverse": "olleh", "shout": "HELLO!"},
        "config": "FileNotFoundError",
        "shell": [0, '["one", "two"]', ""],
        "frozen_module": "__hello__",
    }


@case("invoke")
def check_invoke(app: App):
    """invoke runs its commands through a shell (`/bin/sh -c`) with a copy of os.environ: behind
    it, `sys.executable SCRIPT ARGS` is python running the script, not the app again (issue 37:
    a shell in between); a command's exit status and both streams come back."""
    script = app.tmp_path / "work" / "child.py"
    script.parent.mkdir()
    script.write_text(
        "import json, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'name': __name__,"
        " 'app_loaded': 'invoke_app' in sys.modules}))\n"
    )
    room = app.room(copy={"/bin/sh": "/bin/dash", "/work": script.parent})
    seen = app.json(room.run("/work/child.py", max_processes=16, timeout=60))
    assert seen == {
        "child": {"argv": ["one", "two words"], "name": "__main__", "app_loaded": False},
        "exited": 3,
        "streams": ["out", "err"],
    }


@case("nacl")
def check_nacl(app: App):
    """PyNaCl and argon2-cffi (issue 52): libargon2 ends its four lanes' threads with
    pthread_exit, for which glibc loads libgcc_s.so.1 itself. The room holds glibc alone: with
    the runtime (whose launcher does not link libgcc_s) the executable's own copy is loaded from
    memory at start; with this machine's launcher (which links it) the system's is the one mapped.
    Without a copy the run aborts: "libgcc_s.so.1 must be installed for pthread_exit to work"."""
    from cleanroom import RUNTIME

    seen = app.json(app.room().run(timeout=60))
    libgcc = seen.pop("libgcc_s")
    assert seen == {
        "signature": seen["signature"],
        "verified": "ingot",
        "opened": "sealed",
        "pwhash": True,
        "argon2": "m=8192,t=2,p=4",
        "argon2_verified": True,
    }, seen
    assert len(seen["signature"]) == 16, seen
    assert libgcc, "no libgcc_s.so.1 mapped after pthread_exit ran"
    if RUNTIME:
        assert all(path.startswith("/memfd:ingot:libgcc_s.so.1") for path in libgcc), libgcc
    else:
        assert not any(path.startswith("/memfd:") for path in libgcc), libgcc


@case("haarcascade")
def check_haarcascade(app: App):
    """OpenCV's CascadeClassifier reads its XML by a path Python computed from cv2.__file__,
    inside the executable: its C++ code's open is answered from the archive (issue 52, item 1;
    before: "Can't open file: '<exe>/cv2/data/haarcascade_frontalface_default.xml'")."""
    seen = app.json(app.room().run(timeout=60))
    assert seen == {
        "path": "/app/cv2/data/haarcascade_frontalface_default.xml",
        "faces_loaded": True,
        "eyes_loaded": True,
        "window": [24, 24],
        "eye_window": [20, 20],
        "on_blank": 0,
    }, seen


@case("soundfile")
def check_soundfile(app: App):
    """soundfile 0.13.1's libsndfile is only in its manylinux_2_28 wheel: the build takes it over
    the pure wheel pip took for glibc 2.17 (issue 52, item 4), and cffi dlopens the library from
    `_soundfile_data` by its path inside the executable (item 2). WAV and FLAC written in the
    room; the host reads the WAV back with the standard library."""
    import wave

    room = app.room(dirs=["/out"])
    seen = app.json(room.run("/out", timeout=60))
    assert seen["libsndfile"].startswith("1."), seen
    for kind, format_ in (("wav", "WAV"), ("flac", "FLAC")):
        assert seen[kind]["frames"] == 8000 and seen[kind]["rate"] == 8000, seen
        assert seen[kind]["format"] == format_ and seen[kind]["max_error"] < 0.001, seen
    with wave.open(str(room.path("/out/tone.wav"))) as written:
        assert (written.getframerate(), written.getnframes(), written.getsampwidth()) == (
            8000,
            8000,
            2,
        )


@case("pexpect")
def check_pexpect(app: App):
    """pexpect spawns `sys.executable -c CODE` on a pty: the self-call runs python mode, and
    CODE imports getpass, which nothing else of the app imports, so only the build's reading of
    code held in strings carries it (issue 52, item 5; before: `ModuleNotFoundError: No module
    named 'getpass'`). The room gets terminals of its own (a devpts instance) and /dev/tty."""
    from ingot._ingot import IngotFinder

    room = app.room(pty=True, bind={"/dev/tty": "/dev/tty"})
    seen = app.json(room.run(timeout=90, max_processes=16))
    assert seen == {
        "length": 6,
        "reversed": "terc3s",
        "status": 0,
        "getpass_imported_here": False,
    }, seen
    modules = {name for kind, name, _ in IngotFinder(str(app.executable)).entries()}
    assert "getpass" in modules


@case("matplotlib-tk")
def check_matplotlib_tk(app: App):
    """A matplotlib figure in a tkinter window (FigureCanvasTkAgg) under Xvfb: `_tkagg` finds
    Tcl/Tk's functions with dlopen(_tkinter.__file__), a path inside the executable, and gets the
    module already loaded (issue 52, item 2; before: "cannot open shared object file: Not a
    directory"). The screenshot shows the figure: white, the red rectangle, the blue disc, text."""
    seen, shot = _window_app(app, "ingot matplotlib-tk")
    assert seen["backend"].lower() == "tkagg", seen
    assert "/matplotlib/backends/_tkagg" in seen["tkagg"], seen
    # (FigureCanvasTkAgg sizes the figure by Tk's scaling of the screen: 207 x 124 here)
    assert [shot.width, shot.height] == seen["size"] and seen["size"] >= [200, 120], seen
    scale = shot.width / 200
    red = [
        (x, y)
        for y in range(shot.height)
        for x in range(shot.width)
        if shot.pixel(x, y) == (200, 30, 30)
    ]
    left, top = min(x for x, _ in red), min(y for _, y in red)
    width = max(x for x, _ in red) - left + 1
    height = max(y for _, y in red) - top + 1
    assert abs(width - 100 * scale) <= 2 and abs(height - 60 * scale) <= 2, (width, height)
    assert len(red) >= 0.95 * width * height, len(red)
    assert shot.pixel(round(left + 140 * scale), round(top + 40 * scale)) == (30, 60, 200)
    assert shot.pixel(round(left + 110 * scale), 2) == (255, 255, 255)
    dark = shot.count(
        (left, round(top + 70 * scale), left + 80, shot.height), lambda rgb: max(rgb) < 100
    )
    assert dark > 20, dark  # "ingot" in DejaVu Sans


@case("kivy")
def check_kivy(app: App):
    """A Kivy window under Xvfb (SDL2 from its wheel, OpenGL through the desktop's Mesa): its
    default theme, an atlas image SDL2_image's C code loads by a path inside the executable
    (issue 52, item 1; before: "SDL2: Unable to load image", then "Unable to get a Window,
    abort"). The screenshot shows the drawing."""
    seen, shot = _window_app(app, "ingot kivy")
    assert seen["window"] == "WindowSDL" and seen["theme_textures"] > 50, seen
    assert (shot.width, shot.height) == tuple(seen["size"]) == (200, 120), seen
    assert shot.pixel(5, 5) == (255, 255, 255)
    assert shot.pixel(50, 50) == (200, 30, 30) and shot.pixel(160, 60) == (30, 60, 200)
    red = shot.count((15, 15, 125, 85), lambda rgb: rgb == (200, 30, 30))
    assert abs(red - 100 * 60) <= 300, red
    dark = shot.count((20, 90, 90, 120), lambda rgb: max(rgb) < 100)
    assert dark > 20, dark  # "ingot" in Kivy's Roboto


# Values checked below come from the same main module run by Python 3.11.7 in a venv with the
# pinned wheels installed (pip install of the app's dependencies).


@case("matplotlib")
def check_matplotlib(app: App):
    """matplotlib (Agg): a plot with text in DejaVu Sans (mpl-data: matplotlibrc, the font
    files, read from the archive) saved as PNG in the room, read back with Pillow; the host
    opens the file too. The extraction cache stays empty."""
    room = app.room(dirs=["/out", "/cache", "/home"])
    seen = app.json(
        room.run("/out", env={"INGOT_CACHE_DIR": "/cache", "MPLCONFIGDIR": "/home/mpl"})
    )
    assert not any(room.path("/cache").iterdir())
    assert seen == {
        "backend": "Agg",
        "size": [400, 300],
        "mode": "RGBA",
        "many_colors": True,
        "font": ["DejaVu Sans"],
        "font_file": "DejaVuSans.ttf",
    }
    assert room.path("/out/plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@case("dataframes")
def check_dataframes(app: App):
    """pandas and pyarrow: a Parquet file written in the room and read back, grouped, summed."""
    room = app.room(dirs=["/out"])
    seen = app.json(room.run("/out/frame.parquet"))
    assert seen == {
        "equal": True,
        "totals": {"Lima": 18, "Oslo": 10, "Pune": 11},
        "mean_ratio": 1.2,
        "rows": 5,
        "last": "2024-01-05T00:00:00+01:00",
        "schema": ["large_string", "int64", "double", "timestamp[us, tz=Europe/Oslo]"],
        "arrow": "26.0.1",
    }
    assert room.path("/out/frame.parquet").read_bytes()[:4] == b"PAR1"


@case("pillow")
def check_pillow(app: App):
    """Pillow: PNG, JPEG and WebP written and read back (the wheel's bundled libjpeg, libwebp,
    zlib loaded from memory); a blur; text drawn with FreeType. Pixel values as under python.

    Pillow 13's bundled libfreetype and libharfbuzz each name the other in DT_NEEDED: the
    importer loads such a cycle from memory by dropping one edge and binding it lazily
    (native.rs, drop_needed)."""
    seen = app.json(app.room().run())
    assert seen == {
        "PNG": ["PNG", [64, 48], [200, 30, 30]],
        "JPEG": ["JPEG", [64, 48], [200, 29, 37]],
        "WEBP": ["WEBP", [64, 48], [200, 29, 30]],
        "png_exact": True,
        "blurred": [235, 175, 175],
        "features": {"jpg": True, "webp": True, "zlib": True, "freetype2": True},
        "text": ["FreeTypeFont", [4, 11, 62, 33], 312],
    }


@case("httpx")
def check_httpx(app: App):
    """httpx: sync and async GETs over TLS to the host's server, verified against the test CA;
    certifi's bundle (a real file: certifi is under the built-in files policy) refuses it."""
    server, tls = app.fixture("https_server"), app.fixture("tls_files")
    room = app.room(dirs=["/cache"], copy={"/certs/ca.pem": tls.ca})
    seen = app.json(room.run(server.url, "/certs/ca.pem", env={"INGOT_CACHE_DIR": "/cache"}))
    assert seen == {
        "sync": [200, {"greeting": "hello from the host", "path": "/sync"}],
        "async": [200, "/async"],
        "http_version": "HTTP/1.0",  # the host server's
        "untrusted_refused": True,
        "certifi_is_file": True,
    }


@case("fastapi")
def check_fastapi(app: App):
    """FastAPI: a route with a pydantic body, a validation error, the OpenAPI schema and the docs
    page through the TestClient."""
    seen = app.json(app.room().run())
    assert seen == {
        "good": [
            200,
            {"id": 7, "item": {"name": "ingot", "price": 2.5, "tags": ["a"]}, "total": 5.0},
        ],
        "bad": [422, [["item_id", "int_parsing"], ["price", "missing"]]],
        "paths": ["/items/{item_id}"],
        "title": "matrix",
        "docs": 200,
    }


@case("markdown")
def check_markdown(app: App):
    """Python-Markdown loads the extensions it is given by name through entry points."""
    seen = app.json(app.room().run())
    assert seen == {"table": True, "toc": True, "highlighted": True, "heading": True}


@case("serializers")
def check_serializers(app: App):
    """orjson (Rust), msgpack (C) and tomlkit give python's bytes and text."""
    seen = app.json(app.room().run())
    assert seen == {
        "orjson": '{"n":[1,2,3],"point":{"x":1,"y":2.5},"when":"2024-05-06T07:08:09"}',
        "msgpack": ["81a16193010281a162c4056279746573", "{'a': [1, 2, {'b': b'bytes'}]}"],
        "msgpack_c": "msgpack._cmsgpack",
        "toml": "# settings\n[server]\nport = 9090  # the port\n",
    }


@case("attrs")
def check_attrs(app: App):
    """attrs and cattrs: structuring, validation errors, slots (attrs generates methods with
    exec at class creation)."""
    seen = app.json(app.room().run())
    assert seen == {
        "user": {"name": "Ada", "age": 36, "addresses": [{"city": "London", "zip": "12345"}]},
        "repr": "User(name='Ada', age=36, addresses=[Address(city='London', zip='12345')])",
        "error": "ClassValidationError",
        "slots": True,
        "fields": ["name", "age", "addresses"],
    }


@case("typer")
def check_typer(app: App):
    """typer: commands with typed arguments and options, help, and a usage error drawn by rich."""
    room = app.room()
    assert app.check(room.run("hello", "Ada", "--count", "2")).stdout == "Hello Ada\nHello Ada\n"
    assert app.check(room.run("total", "1", "2.5")).stdout == "3.5\n"
    help_text = ANSI.sub("", app.check(room.run("hello", "--help")).stdout)
    assert "Says hello to NAME." in help_text and "How many times." in help_text, help_text
    bad = app.check(room.run("hello"), status=2)
    assert "Missing argument 'name'." in bad.stderr, bad.stderr


@case("regex")
def check_regex(app: App):
    """The regex module's C extension beside the stdlib's re."""
    seen = app.json(app.room().run())
    assert seen == {
        "greek": ["\u03b1", "\u03b2\u03b3"],
        "fuzzy": True,
        "possessive": "aaab",
        "graphemes": ["e\u0301", "a"],
        "stdlib": "host at user",
        "module": "_regex",
    }


# --- issue 27: data outside packages, libraries loaded by path ------------------------------------


@case("nbconvert")
def check_nbconvert(app: App):
    """A notebook rendered to HTML with the `lab` template and to Markdown: nbconvert finds its
    templates under sys.prefix/share/jupyter, where its wheel installs them (the data scheme),
    and the executable answers them from the archive, as sys.prefix (jupyter_core also lists a
    directory under $HOME, which must exist as a value)."""
    seen = app.json(app.room(dirs=["/home"]).run(env={"HOME": "/home"}))
    assert seen == {
        "doctype": True,
        "heading": True,
        "lab_css": True,
        "highlighted": True,
        "output": True,
        "markdown": ["# Report", "Some *text*."],
        "prefix_is_executable": True,
        "searched": True,
        "templates": [
            "asciidoc",
            "base",
            "basic",
            "classic",
            "compatibility",
            "lab",
            "latex",
            "markdown",
            "python",
            "reveal",
            "rst",
            "script",
            "webpdf",
        ],
    }, seen


@case("lightgbm")
def check_lightgbm(app: App):
    """A model trained by lib_lightgbm.so, which lightgbm loads by path through ctypes from its
    package directory, with GCC's OpenMP runtime, which the room (glibc only) does not have:
    both from memory."""
    seen = app.json(app.room().run())
    assert (seen["trees"], seen["fits"], seen["version"]) == (40, True, "4.7.0"), seen
    assert seen["libraries"] == [
        "/memfd:ingot:lib_lightgbm.so (deleted)",
        "/memfd:ingot:libgomp.so.1 (deleted)",
    ], seen["libraries"]


# --- issue 27: the kinds of applications tried as a new user would --------------------------------


@case("scipy")
def check_scipy(app: App):
    """LAPACK through OpenBLAS, a BFGS minimization, a quadrature, a special function, a sparse
    solve: Fortran and C++ libraries of scipy.libs (and numpy.libs) from memory."""
    assert app.json(app.room().run()) == {
        "solve": [1.0, -2.0, -2.0],
        "rosen": [1.0, 1.0, 1.0],
        "quad": 2.0,
        "gamma": 24.0,
        "sparse": [2.5, 4.0, 4.5, 4.0, 2.5],
        "eigvals": [0.267949, 1.0],
    }


@case("polars")
def check_polars(app: App):
    """A Rust dataframe engine: group-by, join, SQL and a lazy query."""
    assert app.json(app.room().run()) == {
        "totals": [["a", 40], ["b", 70], ["c", 40]],
        "cities": ["Lima", "Oslo", "Pune"],
        "sql": [["a", 2], ["b", 2], ["c", 1]],
        "lazy": 3,
    }


@case("duckdb")
def check_duckdb(app: App):
    """A C++ SQL engine: aggregates, a window function, a query over a Python list."""
    assert app.json(app.room().run()) == {
        "grouped": [["a", 4], ["b", 2], ["c", 4]],
        "ranked": [["a", 1, 2], ["a", 3, 1], ["b", 2, 1], ["c", 4, 1]],
        "squares": 14,
        "version": "1.2.2",
    }


@case("mypy")
def check_mypy(app: App):
    """A type checker compiled by mypyc, reading typeshed's stubs next to its modules."""
    assert app.json(app.room().run()) == {
        "status": 1,
        "lines": [
            'error: Incompatible types in assignment (expression has type "str", variable has '
            'type "int")  [assignment]',
            'note: Revealed type is "str"',
        ],
        "stderr": "",
        "compiled": True,
    }


@case("sphinx")
def check_sphinx(app: App):
    """A documentation generator: the alabaster theme's templates and static files, Sphinx's
    French catalogs, Pygments' highlighting; the site written to a temporary directory."""
    seen = app.json(app.room(dirs=["/tmp"]).run())
    assert seen == {
        "status": 0,
        "french": True,
        "note": True,
        "highlighted": True,
        "theme_css": True,
    }


@case("gevent")
def check_gevent(app: App):
    """Greenlets on libev, and a StreamServer answering a gevent socket."""
    assert app.json(app.room().run()) == {
        "order": ["a", "b"],
        "values": ["B", "A"],
        "reply": "echo:ping",
        "hub": "gevent.libev.corecext",
    }


@case("aiohttp")
def check_aiohttp(app: App):
    """An asyncio web server and client with aiohttp's C parser."""
    assert app.json(app.room().run()) == {
        "status": 200,
        "body": {"hello": "ingot", "q": "1"},
        "c_parser": "aiohttp._http_parser",
    }


@case("grpcio")
def check_grpcio(app: App):
    """gRPC's C core: a server with the health service and a client over loopback."""
    assert app.json(app.room().run()) == {
        "status": "SERVING",
        "missing": "NOT_FOUND",
        "version": "1.85.3",
    }


@case("gunicorn")
def check_gunicorn(app: App):
    """A forking WSGI server: the arbiter and two workers are forks of the executable (no
    exec); a request is served by a worker, then SIGTERM stops them gracefully."""
    seen = app.json(app.room(dirs=["/tmp"]).run(max_processes=16))
    assert seen == {"body": "/ingot", "worker_is_child": True, "arbiter_exit": 0}


@case("numba")
def check_numba(app: App):
    """A JIT compiler: llvmlite's LLVM library, which it loads by path through ctypes, from
    memory; functions compiled and run on NumPy arrays."""
    assert app.json(app.room().run()) == {
        "total": 285.0,
        "hypot": [5.0, 13.0],
        "compiled": 1,
        "llvm": True,
        "version": "0.67.0",
    }


@case("boto3")
def check_boto3(app: App):
    """An AWS SDK offline: botocore's service models (JSON next to its modules) for S3 and
    DynamoDB, a presigned URL."""
    assert app.json(app.room().run()) == {
        "url": "https://bucket.s3.amazonaws.com/key.txt",
        "signed": True,
        "services": True,
        "has": [True, True, True],
        "operation": True,
    }


@case("humanize")
def check_humanize(app: App):
    """gettext catalogs through importlib.resources.as_file on a package directory."""
    assert app.json(app.room().run()) == {
        "english": "3 hours",
        "french": "3 heures",
        "ordinal": "2e",
        "intcomma": "1,234,567",
        "size": "3.0 MB",
    }


@case("opencv")
def check_opencv(app: App):
    """OpenCV's loader: its directory first on sys.path and `import cv2` again, answered with
    `cv2.abi3.so` from that directory (issue 37, item 5); drawing, edges, a PNG round trip."""
    seen = app.json(app.room().run())
    assert seen["version"] == "5.0.0" and seen["native"] == f"/app/cv2/cv2{EXT}"
    assert seen["circle_pixel"] == [0, 200, 255] and seen["blurred_corner"] == 0
    assert seen["edge_pixels"] == 432 and seen["contours"] == 2
    assert seen["png_ok"] is True and seen["round_trip"] is True


@case("pyproj")
def check_pyproj(app: App):
    """PROJ opens proj.db by path: zero-config, the build gives pyproj real files (issue 37,
    item 4)."""
    seen = app.json(app.room().run(env={"INGOT_CACHE_DIR": "/cache"}))
    assert seen == {
        "mercator": [261845.7, 6250564.3],
        "lambert": "RGF93 v1 / Lambert-93",
        "paris_london_km": 343.9,
    }


def _window_app(app: App, title: str) -> tuple[dict, object]:
    """Runs a GUI app of the matrix on an X server of its own (Xvfb) and returns what it says and
    a screenshot of its window. It runs on this machine, not in the room: the X client libraries,
    GL and fontconfig are the desktop's (the build does not carry them)."""
    from xvfb import run_window, xvfb_display

    runtime_dir = app.tmp_path / "xdg"
    runtime_dir.mkdir(mode=0o700)
    env = {
        "INGOT_CACHE_DIR": str(app.tmp_path / "cache"),
        "XDG_RUNTIME_DIR": str(runtime_dir),  # (Qt warns on stderr without one)
        "SDL_AUDIODRIVER": "dummy",  # (no sound card: ALSA's complaints)
        "PYGAME_HIDE_SUPPORT_PROMPT": "1",  # (pygame's greeting on stdout)
    }
    with xvfb_display() as display:
        result, shot = run_window(app.executable, display, title, app.tmp_path / "window", env=env)
    assert result.returncode == 0 and not result.timed_out and not result.limit_hit, (
        result.stdout + result.stderr
    )
    assert shot is not None, result.stderr
    return app.json(result), shot


def _check_drawing(shot) -> None:
    """The drawing both GUI apps make: white, a red rectangle, a blue disc."""
    assert (shot.width, shot.height) == (200, 120)
    assert shot.pixel(5, 5) == (255, 255, 255)
    assert shot.pixel(50, 50) == (200, 30, 30) and shot.pixel(119, 79) == (200, 30, 30)
    assert shot.pixel(160, 60) == (30, 60, 200)
    assert shot.count((20, 20, 120, 80), lambda rgb: rgb == (200, 30, 30)) == 100 * 60


@case("pygame")
def check_pygame(app: App):
    """A real SDL window under Xvfb; the default font, which pygame's C code reopens by name
    (zero-config: the build gives pygame real files)."""
    seen, shot = _window_app(app, "ingot pygame")
    assert seen["driver"] == "x11" and seen["size"] == [200, 120]
    _check_drawing(shot)
    # "ingot" in black, 24 px: dark pixels where the text is, as many as the font draws.
    width, height = seen["text_size"]
    dark = shot.count((20, 90, 20 + width, min(120, 90 + height)), lambda rgb: max(rgb) < 100)
    assert width > 30 and dark > 60, (width, dark)


def _check_qt(app: App, title: str) -> None:
    """A real Qt window under Xvfb through the xcb platform plugin: the drawing, text in a font
    fontconfig found, the image-format plugins; then the offscreen platform plugin, the window
    drawn into an image that goes through the JPEG plugin."""
    import proclimit

    seen, shot = _window_app(app, title)
    assert seen["platform"] == "xcb" and seen["size"] == [200, 120], seen
    assert {"gif", "ico", "jpeg", "svg"} <= set(seen["formats"]) and seen["fonts"], seen
    _check_drawing(shot)
    dark = shot.count((20, 95, 90, 120), lambda rgb: max(rgb) < 100)
    assert dark > 40, dark  # "ingot" in DejaVu Sans
    work = app.tmp_path / "offscreen"
    work.mkdir()
    runtime_dir = app.tmp_path / "xdg-offscreen"
    runtime_dir.mkdir(mode=0o700)
    env = {
        "QT_QPA_PLATFORM": "offscreen",
        "INGOT_CACHE_DIR": str(app.tmp_path / "cache"),
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    done = proclimit.run([app.executable, work], env=env, timeout=120, max_processes=32)
    assert done.returncode == 0 and not done.timed_out, done.stdout + done.stderr
    off = json.loads(done.stdout)
    assert off["platform"] == "offscreen" and off["jpeg"] is True, off
    assert off["pixels"] == {
        "5,5": [255, 255, 255],
        "50,50": [200, 30, 30],
        "160,60": [30, 60, 200],
    }
    assert all(abs(a - b) <= 24 for a, b in zip(off["jpeg_pixel"], (200, 30, 30))), off


@case("pyqt5")
def check_pyqt5(app: App):
    """PyQt5 (manylinux2014 wheels): _check_qt."""
    _check_qt(app, "ingot pyqt5")
    # Qt's optional plugins get nothing of this machine (the SQL drivers' libpq and ODBC,
    # multimedia's GStreamer): they load where the target system has those, as without ingot.
    from ingot._ingot import IngotFinder

    libraries = {
        name
        for kind, name, _ in IngotFinder(str(app.executable)).entries()
        if kind == "shared-library"
    }
    assert not libraries & {"libpq.so.5", "libodbc.so.2", "libgstreamer-1.0.so.0"}, libraries


@case("pyqt6")
def check_pyqt6(app: App):
    """PyQt6 (manylinux_2_28 wheels): _check_qt."""
    _check_qt(app, "ingot pyqt6")


@case("pyside6")
def check_pyside6(app: App):
    """PySide6 (manylinux_2_28 wheels): _check_qt."""
    _check_qt(app, "ingot pyside6")


@case("tkinter")
def check_tkinter(app: App):
    """A real Tk window under Xvfb: the runtime's Tcl/Tk, its script libraries read from the
    files the build gave tkinter (zero-config: `import tkinter` carries them), the system's
    libX11."""
    seen, shot = _window_app(app, "ingot tkinter")
    assert seen["windowing"] == "x11" and seen["tk"].startswith("8.6."), seen
    assert seen["size"] == [200, 120] and seen["encoding"] == "utf-8", seen
    from cleanroom import RUNTIME

    if RUNTIME:  # (a local Python's Tcl finds its own library, where its build put it)
        # The runtime's Tcl library: the materialized tkinter package's, in the extraction cache.
        cache = str(app.tmp_path / "cache")
        assert seen["library"].startswith(cache), seen
        assert seen["library"].endswith("/tkinter/tcl8.6"), seen
    _check_drawing(shot)
    dark = shot.count((20, 90, 80, 120), lambda rgb: max(rgb) < 100)
    assert dark > 20, dark  # "ingot" in Tk's default font


# --- the matrix -----------------------------------------------------------------------------------

ORDER = [
    "httpie",
    "rich",
    "pygments",
    "pyyaml",
    "black",
    "requests",
    "jinja2",
    "pydantic",
    "numpy",
    "cryptography",
    "lxml",
    "sqlalchemy",
    "pytest",
    "joblib",
    "joblib14",
    "sklearn",
    "pip",
    "uvicorn",
    "flask",
    "django",
    "timezones",
    "plugins",
    "pathplugins",
    "matplotlib",
    "dataframes",
    "pillow",
    "httpx",
    "fastapi",
    "markdown",
    "serializers",
    "attrs",
    "typer",
    "regex",
    "nbconvert",
    "lightgbm",
    "scipy",
    "polars",
    "duckdb",
    "mypy",
    "sphinx",
    "gevent",
    "aiohttp",
    "grpcio",
    "gunicorn",
    "numba",
    "boto3",
    "humanize",
    "opencv",
    "pyproj",
    "pygame",
    "pyqt5",
    "pyqt6",
    "pyside6",
    "tkinter",
    "invoke",
    "nacl",
    "haarcascade",
    "soundfile",
    "pexpect",
    "matplotlib-tk",
    "kivy",
]
assert (
    sorted(ORDER)
    == sorted(CASES)
    == sorted(path.name for path in APPS.iterdir() if (path / "pyproject.toml").is_file())
)


@pytest.fixture(scope="session")
def matrix_report():
    """Per app: the outcome, the executable's size and the build's time, written as JSON to
    $INGOT_MATRIX_REPORT at the end of the session (scripts/compat-matrix renders it into
    docs/compatibility.md)."""
    rows = {}
    yield rows
    target = os.environ.get("INGOT_MATRIX_REPORT")
    if target:
        Path(target).write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")


def _policy(app):
    """The [tool.ingot] settings of an app's project, or "zero-config"."""
    import tomllib

    settings = (
        tomllib.loads((APPS / app / "pyproject.toml").read_text()).get("tool", {}).get("ingot")
    )
    return (
        ", ".join(f"{key} = {json.dumps(value)}" for key, value in sorted(settings.items()))
        if settings
        else "zero-config"
    )


@pytest.mark.parametrize("app", ORDER)
def test_app_in_the_room(app, app_builds, room, request, tmp_path, matrix_report):
    row = matrix_report[app] = {"outcome": "fail", "policy": _policy(app)}
    executable = app_builds.get(app)
    row.update(
        size=executable.stat().st_size, build_seconds=round(app_builds.builder.seconds[app], 1)
    )
    case = App(app, executable, room, request, tmp_path)
    CASES[app](case)
    row["outcome"] = "pass" + (f" ({case.note})" if case.note else "")


def test_packages_with_a_compiled_init_are_imported_from_it(app_builds):
    """A package whose `__init__` is a compiled extension module (mypyc: black, black.resources,
    pytokens) is imported from it by CPython (FileFinder tries extension suffixes first); the
    archive should not serve it from its `__init__.py` and carry the extension as a module named
    `black.__init__`."""
    from ingot.inspection import describe

    entries = describe(app_builds.get("black"))["entries"]
    odd = sorted(entry["name"] for entry in entries if entry["name"].endswith(".__init__"))
    packages = {
        entry["name"]: entry["kind"]
        for entry in entries
        if entry["name"] in ("black", "black.resources")
    }
    assert not odd, (
        f"extension modules archived under a module name ending in .__init__: {odd}; "
        f"the packages themselves are {packages}"
    )
