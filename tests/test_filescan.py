"""The static scan for code that builds paths from ``__file__`` and needs real files there."""

import sysconfig
import textwrap
from pathlib import Path

import pytest

from ingot.build.analysis.filescan import Finding, format_finding, scan_source, scan_tree
from ingot.errors import CollectError

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def scan(source, **options):
    """(line, call) of each finding in ``source`` (dedented)."""
    return [
        (f.line, f.call)
        for f in scan_source(textwrap.dedent(source), "pkg/mod.py", "pkg", **options)
    ]


# What is found.


def test_certifi_style_open_of_a_joined_dirname():
    source = textwrap.dedent("""\
        import os

        def where():
            return os.path.join(os.path.dirname(__file__), "cacert.pem")

        def contents():
            with open(os.path.join(os.path.dirname(__file__), "cacert.pem"), encoding="ascii") as f:
                return f.read()
        """)
    assert scan_source(source, "certifi/core.py", "certifi") == [
        Finding(
            "certifi/core.py",
            7,
            "certifi",
            "open",
            'with open(os.path.join(os.path.dirname(__file__), "cacert.pem"), encoding="ascii") '
            "as f:",
        )
    ]


def test_path_returned_by_a_function_of_the_same_module():
    # certifi before importlib.resources: where() builds the path, contents() opens it.
    assert scan("""\
        import os

        def where():
            f = os.path.dirname(__file__)
            return os.path.join(f, "cacert.pem")

        def contents():
            with open(where(), encoding="ascii") as data:
                return data.read()
        """) == [(8, "open")]


def test_pathlib_paths_built_from_file():
    assert scan("""\
        import json
        from pathlib import Path

        HERE = Path(__file__).resolve().parent
        SCHEMAS = HERE / "schemas"

        def schema(name):
            return json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))

        def names():
            return sorted(p.stem for p in SCHEMAS.glob("*.json"))

        def raw():
            with Path(__file__).with_name("raw.bin").open("rb") as f:
                return f.read()

        def templates():
            return list(Path(__file__).parents[1].joinpath("templates").iterdir())
        """) == [
        (8, "pathlib.Path.read_text"),
        (11, "pathlib.Path.glob"),
        (14, "pathlib.Path.open"),
        (18, "pathlib.Path.iterdir"),
    ]


def test_taint_through_module_constants_concatenation_and_augmented_assignment():
    assert scan("""\
        import os.path as osp

        def load(name):
            path = DATA_DIR + "/" + name
            path += ".txt"
            with open(path) as f:
                return f.read()

        def load_formatted(name):
            return open(f"{DATA_DIR}/{name}.csv").read()

        def load_percent(name):
            return open("%s/%s" % (DATA_DIR, name)).read()

        DATA_DIR = osp.join(osp.abspath(osp.dirname(__file__)), "data")
        """) == [(6, "open"), (10, "open"), (13, "open")]


def test_listdir_walk_glob_and_stat_calls():
    assert scan("""\
        import glob, os
        from os.path import dirname, join, isfile, getsize

        here = dirname(__file__)
        plugins = [n for n in os.listdir(join(here, "plugins")) if n.endswith(".py")]
        for root, dirs, files in os.walk(here):
            pass
        themes = glob.glob(os.path.join(here, "themes", "*.json"))
        if isfile(join(here, "VERSION")) and getsize(join(here, "VERSION")):
            pass
        """) == [
        (5, "os.listdir"),
        (6, "os.walk"),
        (8, "glob.glob"),
        (9, "os.path.getsize"),
        (9, "os.path.isfile"),
    ]


def test_shared_library_loaded_from_the_package_directory():
    assert scan("""\
        import ctypes
        import os
        from ctypes import cdll

        _here = os.path.dirname(os.path.abspath(__file__))
        _lib = ctypes.CDLL(os.path.join(_here, "libfast.so"))
        _other = cdll.LoadLibrary(_here + "/libother.so")
        _libc = ctypes.CDLL("libc.so.6")
        """) == [(6, "ctypes.CDLL"), (7, "ctypes.cdll.LoadLibrary")]


def test_subprocess_running_a_script_of_the_package():
    assert scan("""\
        import os, subprocess, sys

        HELPER = os.path.join(os.path.dirname(__file__), "helper.py")

        def run():
            return subprocess.run([sys.executable, HELPER], check=True)

        def version():
            return subprocess.check_output(["git", "--version"])
        """) == [(6, "subprocess.run")]


def test_other_ways_to_a_module_path():
    assert scan("""\
        import importlib.util, inspect, os, sys

        a = open(os.path.join(os.path.dirname(__spec__.origin), "a.txt"))
        b = os.listdir(__path__[0])
        c = open(os.path.dirname(sys.modules[__name__].__file__) + "/c.txt")
        d = os.path.exists(os.path.join(os.path.dirname(inspect.getfile(os)), "d"))
        e = open(importlib.util.find_spec("pkg").origin)
        """) == [(3, "open"), (4, "os.listdir"), (5, "open"), (6, "os.path.exists"), (7, "open")]


def test_attributes_class_constants_properties_and_parameter_defaults():
    assert scan("""\
        import os

        class Store:
            ROOT = os.path.dirname(os.path.abspath(__file__))

            def __init__(self, name, base=os.path.dirname(__file__)):
                self.index = os.path.join(self.ROOT, name, "index.json")
                self.base = base

            @property
            def config(self):
                return os.path.join(Store.ROOT, "config.ini")

            def read(self):
                return open(self.index).read()

            def read_config(self):
                return open(self.config).read()

            def entries(self):
                return os.listdir(self.base)
        """) == [(15, "open"), (18, "open"), (21, "os.listdir")]


def test_global_nonlocal_walrus_lambda_loop_and_local_imports():
    assert scan("""\
        import os
        from pathlib import Path

        _PATH = None

        def init():
            global _PATH
            _PATH = os.path.join(os.path.dirname(__file__), "x")

        def read():
            return open(_PATH)

        def outer():
            d = None
            def inner():
                nonlocal d
                d = os.path.dirname(__file__)
            inner()
            return os.listdir(d)

        def walrus():
            if (p := os.path.dirname(__file__)):
                return os.listdir(p)

        reader = lambda: open(os.path.dirname(__file__) + "/x")

        def local_import():
            from os.path import dirname, join
            return open(join(dirname(__file__), "y"))

        for d in [os.path.dirname(__file__), "/usr/share"]:
            os.listdir(d)

        def shadowed():
            def open(x):
                return x
            return open(__file__)
        """) == [
        (11, "open"),
        (19, "os.listdir"),
        (23, "os.listdir"),
        (25, "open"),
        (29, "open"),
        (32, "os.listdir"),
    ]


def test_each_call_once_at_its_first_line_with_a_short_snippet():
    long_line = f'y = open(os.path.join(p, "{"long" * 30}.txt"), encoding="utf-8")'
    source = textwrap.dedent("""\
        import os
        p = os.path.join(os.path.dirname(__file__), "data")
        x = open(p) if os.path.exists(p) else open(p + ".default")
        {long_line}
        z = open(
            p,
        )
        """).format(long_line=long_line)
    findings = scan_source(source, "pkg/mod.py", "pkg")
    assert [(f.line, f.call) for f in findings] == [
        (3, "open"),
        (3, "os.path.exists"),
        (4, "open"),
        (5, "open"),
    ]
    assert findings[2].snippet.startswith("y = open(os.path.join(p, ")
    assert findings[2].snippet == long_line[:97] + "..."
    assert findings[3].snippet == "z = open("


def test_bytes_are_decoded_as_python_does():
    latin1 = "# -*- coding: latin-1 -*-\r\nopen(__file__)  # café\r\n".encode("latin-1")
    assert [(f.line, f.snippet) for f in scan_source(latin1, "m.py", "m")] == [
        (2, "open(__file__)  # café")
    ]
    assert [f.line for f in scan_source(b"\xef\xbb\xbf\nopen(__file__)\n", "m.py", "m")] == [2]


def test_format_finding():
    finding = Finding("certifi/core.py", 12, "certifi", "open", "return open(where()).read()")
    assert format_finding(finding) == (
        "warning: certifi/core.py:12: open() of a path built from __file__; if `certifi` needs "
        "real files, add it to [tool.ingot] files"
    )


# What is not.


def test_package_data_read_through_the_import_system_is_not_reported():
    assert (
        scan("""\
        import pkgutil
        from importlib import resources
        import importlib.resources as ir

        a = pkgutil.get_data(__name__, "data/a.json")
        b = resources.files(__package__).joinpath("b.txt").read_text()
        c = (ir.files("pkg") / "c.bin").read_bytes()
        with resources.as_file(resources.files("pkg") / "d.so") as d:
            open(d).close()
        e = resources.read_text("pkg", "e.txt")
        """)
        == []
    )


def test_file_used_for_display_or_sys_path_is_not_reported():
    assert (
        scan("""\
        import logging, os, sys, warnings

        log = logging.getLogger(__name__)
        log.debug("loaded %s from %s", __name__, __file__)
        print(f"running {__file__}")
        warnings.warn("deprecated module " + os.path.basename(__file__))
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        NAME = os.path.splitext(os.path.basename(__file__))[0]
        open(os.path.join(os.getcwd(), NAME + ".log"), "a").close()
        if os.path.exists("/etc/os-release"):
            pass
        """)
        == []
    )


def test_scopes_shadowing_and_order():
    assert scan("""\
        import os

        path = os.path.dirname(__file__)

        def elsewhere(path):
            return open(path)            # a parameter, not the module's path

        def local():
            path = "/etc/hosts"
            return open(path)            # a local of its own

        def before():
            name = "/etc/hosts"
            open(name)                   # name is not built from __file__ yet
            name = os.path.join(path, "x")
            return open(name)

        class Config:
            path = "/etc/app.conf"

            def read(self):
                return open(self.path)   # the class attribute, a real path
        """) == [(16, "open")]


def test_code_that_cannot_run_on_this_python_or_only_as_a_script_is_not_reported():
    source = """\
        import os, sys

        if sys.version_info < (3, 7):
            open(os.path.dirname(__file__) + "/legacy.txt")
        elif sys.version_info[0] == 2:
            open(os.path.dirname(__file__) + "/py2.txt")
        else:
            from importlib.resources import read_text

        if __name__ == "__main__":
            with open(__file__) as f:   # a generator script rewriting itself
                print(f.read())
        """
    assert scan(source) == []
    assert scan(source, python_version=(3, 6)) == [(4, "open")]


@pytest.mark.parametrize(
    "source",
    [
        b"def broken(:\n    open(__file__)\n",
        b"# -*- coding: no-such-codec -*-\nopen(__file__)\n",
        b"open(__file__)  # \xff\xfe not UTF-8\n",
        b"x = __file__\x00\nopen(x)\n",
        b"print 'python 2'\nopen(__file__)\n",
        b"open(" + b"(" * 500 + b"__file__" + b")" * 500 + b")\n",
        "open(__file__)  # a lone surrogate \udcff\n",
        b"",
    ],
    ids=["syntax", "codec", "utf8", "nul", "python2", "nesting", "surrogate", "empty"],
)
def test_unparseable_sources_give_no_findings(source):
    assert scan_source(source, "pkg/bad.py", "pkg") == []


# Trees.


def test_scan_tree_walks_the_given_packages_in_order(tmp_path):
    def write(relative, text):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))

    opener = "import os\nopen(os.path.join(os.path.dirname(__file__), 'x'))\n"
    write("alpha/__init__.py", "")
    write("alpha/sub/deep.py", "\n\n" + opener)
    write("alpha/core.py", opener)
    write("alpha/broken.py", "def (:\n" + opener)
    write("alpha/__pycache__/core.py", opener)
    write("alpha/data/notes.txt", opener)
    write("beta.py", opener)
    write("gamma/__init__.py", opener)  # not asked for
    findings = scan_tree(tmp_path, ["beta", "alpha", "missing"])
    assert [(f.path, f.line, f.package) for f in findings] == [
        ("alpha/core.py", 2, "alpha"),
        ("alpha/sub/deep.py", 4, "alpha"),
        ("beta.py", 2, "beta"),
    ]
    assert scan_tree(str(tmp_path), iter(["gamma"]))[0].path == "gamma/__init__.py"


def test_scan_tree_rejects_a_missing_root_and_paths_as_package_names(tmp_path):
    with pytest.raises(CollectError, match="it does not exist"):
        scan_tree(tmp_path / "nope", ["pkg"])
    with pytest.raises(CollectError, match="not a top-level import name"):
        scan_tree(tmp_path, ["../etc"])


def test_real_installed_package_pips_vendored_certifi():
    # pip's vendored certifi finds cacert.pem with importlib.resources on every Python >= 3.7;
    # only its fallback for older Pythons builds the path from __file__ (where()) and opens it.
    site = Path(sysconfig.get_paths()["purelib"])
    core = site / "pip" / "_vendor" / "certifi" / "core.py"
    if not core.is_file():
        pytest.skip(f"no pip with a vendored certifi in {site}")
    source = core.read_bytes()
    relative = core.relative_to(site).as_posix()
    assert b"importlib.resources" in source
    assert scan_source(source, relative, "pip") == []
    legacy = scan_source(source, relative, "pip", python_version=(3, 6))
    if b"os.path.dirname(__file__)" in source:
        # pip up to 24.x: a fallback for Pythons before 3.7 builds the path from __file__.
        assert [(f.path, f.call, f.snippet) for f in legacy] == [
            (
                "pip/_vendor/certifi/core.py",
                "open",
                "with open(where(), encoding=encoding) as data:",
            )
        ]
    else:
        # Newer pips dropped that fallback: nothing to find for any Python.
        assert legacy == []
    findings = scan_tree(site, ["pip"])
    assert findings == sorted(findings, key=lambda f: (f.path, f.line))
    assert not any(f.path == "pip/_vendor/certifi/core.py" for f in findings)
    # Whatever else this pip version holds (pip 24 checks for a file next to site.__file__ in
    # _internal/utils/virtualenv.py; pip 26 vendors certifi's tests, which check cacert.pem next
    # to certifi.__file__), each finding quotes the line it names.
    for finding in findings:
        line = (site / finding.path).read_text(encoding="utf-8").splitlines()[finding.line - 1]
        assert line.strip()[:100] == finding.snippet
