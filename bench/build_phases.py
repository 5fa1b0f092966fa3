"""Where an `ingot build` spends its time: runs `python -m ingot ARGS` in this process with the
build's phases wrapped in timers, then prints each phase's total seconds (nested phases are
counted within their callers too). Timers, not cProfile: cProfile's cost per call made the
pure-Python phases look two to three times their size.

    PYTHONPATH=python VENV/bin/python bench/build_phases.py build --console-script http \\
        --python local -o /tmp/http --force -q

Run it with the interpreter that builds (the app's venv for `--console-script`), ingot on its
path. Each row is what the named function took, summed over its calls."""

from __future__ import annotations

import collections
import functools
import importlib
import sys
import time
from typing import Any

#: (module, function, label): the phases, as ingot.build's functions.
PHASES = [
    ("ingot.build.pipeline", "stage", "stage (pip, the dependencies)"),
    ("ingot.build.pipeline", "select", "select (files policy)"),
    ("ingot.build.archive.pack", "_collect", "pack: collect"),
    ("ingot.build.archive.pack", "_prune", "pack: find what the app reaches"),
    ("ingot.build.archive.reach", "stdlib_imports", "  reach: stdlib syntax trees"),
    ("ingot.build.archive.buildcache", "imports_in_source", "  import scans"),
    ("ingot.build.archive.pack", "_add_libraries", "pack: shared libraries"),
    ("ingot.build.archive.pack", "_add_items", "pack: compile, scan, add"),
    ("ingot.build.archive.pack", "_add_regexes", "pack: regular expressions"),
    ("ingot.build.archive.pack", "_write", "pack: dictionary and archive"),
    ("ingot.build.pipeline", "check_archive", "check"),
    ("ingot.build.pipeline", "assemble", "assemble"),
    ("ingot.build.pipeline", "glibc_verdict", "glibc floor"),
]

totals: collections.Counter[str] = collections.Counter()


def _timed(function: Any, label: str) -> Any:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - started

    return timed


def main() -> int:
    for module_name, name, label in PHASES:
        module = importlib.import_module(module_name)
        setattr(module, name, _timed(getattr(module, name), label))
    from ingot.build.archive.prefetch import Prefetch

    Prefetch.wait = _timed(Prefetch.wait, "pack: wait for the pool")  # type: ignore[method-assign]
    from ingot.cli import main as ingot

    started = time.perf_counter()
    try:
        code = ingot(sys.argv[1:])
    finally:
        print(f"{'whole build':<36}{time.perf_counter() - started:7.2f} s", file=sys.stderr)
        for _, _, label in [*PHASES, ("", "", "pack: wait for the pool")]:
            if label in totals:
                print(f"{label:<36}{totals[label]:7.2f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
