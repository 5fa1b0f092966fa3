"""CPython's own test modules against a standard library served from an ingot archive, and
against the stock one, on the same Python: prints the test cases that fail only with ingot.

    python tests/stdlib_tests.py                      # the default set below
    python tests/stdlib_tests.py test_json test_runpy
    python tests/stdlib_tests.py --python ~/.pyenv/versions/3.13.0/bin/python3.13

The Python must have ingot installed (or run from a checkout whose python/ingot holds a built
_ingot) and its `test` package (pyenv's builds have it; Debian splits it into libpython3.X-testsuite).
Each set runs twice through `python -m test` (regrtest, in one process, `--junit-xml`):

- stock: `python -I`;
- ingot: `python -I` whose import system has the archive's finder first on sys.meta_path and its
  path hook first, the archive first on sys.path, and reads of paths under the archive answered
  as an executable answers them (`ingot.serve_archive_paths`): every standard-library module
  imported from then on comes from the archive (the `test` package itself, which builds leave
  out, is read from the stdlib directory by the path finder after it).

What this does not cover: modules imported before the finder is installed (the interpreter's
start-up set and what `import ingot` needs) stay stock, and the child Pythons some tests start
(`script_helper.assert_python_ok`, `subprocess` of `sys.executable`) are stock. Exit status: 0 if
no test fails only with ingot, 1 if some do, 2 if a run could not be made.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

#: Test modules the issue asks for (test_ssl runs offline: regrtest's network resource is off).
DEFAULT_TESTS = [
    "test_importlib",
    "test_zipimport",
    "test_pkgutil",
    "test_runpy",
    "test_linecache",
    "test_traceback",
    "test_warnings",
    "test_inspect",
    "test_unittest",
    "test_argparse",
    "test_json",
    "test_sqlite3",
    "test_ssl",
]

#: Test cases known to fail only with the archive, and why. Keyed by "module.Class.test".
KNOWN = (
    json.loads((Path(__file__).with_name("stdlib_tests_known.json")).read_text())
    if Path(__file__).with_name("stdlib_tests_known.json").is_file()
    else {}
)

# The standard library as builds pack it, but with the test suites inside its packages
# (unittest.test, ...) and the _test* extension modules: the tests import them from there. The
# `test` package itself stays out (read from disk), and the GUI packages.
PACK = """
import sys
from ingot.build.archive.pack import pack
pack(sys.argv[1], stdlib_exclude=("test", "idlelib", "tkinter", "_tkinter", "turtle",
                                  "turtledemo"))
"""

BOOT = """
import runpy, sys
archive = sys.argv.pop(1)
import ingot
finder = ingot.IngotFinder(archive)
sys.meta_path.insert(0, finder)
sys.path_hooks.insert(0, finder.path_hook)
sys.path.insert(0, archive)
sys.path_importer_cache.clear()
ingot.serve_archive_paths(finder)  # as executables do: open(json.__file__) works
sys.argv[0] = "-m test"
runpy.run_module("test", run_name="__main__", alter_sys=True)
"""


def cases(junit: Path) -> dict[str, str]:
    """test case id -> outcome ("ok", "failure", "error", "skipped") from regrtest's JUnit XML."""
    found = {}
    if not junit.is_file():
        return found
    for case in ElementTree.parse(junit).iter("testcase"):
        name = f"{case.get('classname', '')}.{case.get('name', '')}".removeprefix(".")
        outcome = "ok"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        found[name] = outcome
    return found


def run(
    python: str, tests: list[str], junit: Path, archive: Path | None, timeout: int
) -> tuple[int, str]:
    command = [python, "-I"]
    command += ["-c", BOOT, str(archive)] if archive else ["-m", "test"]
    command += ["--junit-xml", str(junit), *tests]  # regrtest: no -u, optional resources off
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    return done.returncode, done.stdout[-4000:] + done.stderr[-4000:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="*", default=DEFAULT_TESTS)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ingot-stdlib-tests-") as scratch:
        work = Path(scratch)
        archive = work / "stdlib.ingot"
        packed = subprocess.run(
            [options.python, "-I", "-c", PACK, str(archive)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if packed.returncode != 0:
            print(
                f"error: cannot pack the standard library of {options.python}:\n"
                f"{packed.stderr[-2000:]}",
                file=sys.stderr,
            )
            print(
                "hint: the Python needs ingot installed (pip install ingot, or this checkout)",
                file=sys.stderr,
            )
            return 2
        results = {}
        for mode, target in (("stock", None), ("ingot", archive)):
            started = time.perf_counter()
            junit = work / f"{mode}.xml"
            status, tail = run(options.python, options.tests, junit, target, options.timeout)
            results[mode] = cases(junit)
            print(
                f"{mode}: exit {status}, {len(results[mode])} test cases, "
                f"{sum(v in ('failure', 'error') for v in results[mode].values())} failing, "
                f"{time.perf_counter() - started:.0f} s",
                flush=True,
            )
            if not results[mode]:
                print(f"error: the {mode} run reported no test cases:\n{tail}", file=sys.stderr)
                return 2
    bad = ("failure", "error")
    only_ingot = sorted(
        name
        for name, outcome in results["ingot"].items()
        if outcome in bad and results["stock"].get(name) not in bad
    )
    missing = sorted(set(results["stock"]) - set(results["ingot"]))
    unknown = [name for name in only_ingot if name not in KNOWN]
    for name in only_ingot:
        print(
            f"ingot only: {name} ({results['ingot'][name]})"
            + (f": known, {KNOWN[name]}" if name in KNOWN else "")
        )
    if missing:
        print(f"{len(missing)} test cases ran in stock only, e.g. {', '.join(missing[:5])}")
    print(
        f"{len(only_ingot)} test cases fail only with ingot ({len(unknown)} not in the known "
        f"list), of {len(results['ingot'])}"
    )
    if options.json:
        options.json.write_text(
            json.dumps(
                {
                    "tests": options.tests,
                    "only_ingot": only_ingot,
                    "missing": missing,
                    "results": results,
                },
                indent=1,
            )
        )
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
