"""Generate bench/import_stdlib.py: one ``import X`` per importable pure-Python stdlib module.

Candidates are the ``.py`` modules and packages (with submodules) of each
interpreter's stdlib directory (see apps/make_artifacts.py for what is walked), minus
modules that are not meant to be imported by a program: GUI and demo code,
installers, ``__main__`` modules and the easter eggs.

A candidate is kept only if ``python -I -S -c "import X"`` run in a fresh
process, in an empty temporary working directory, on EVERY interpreter given:

* exits 0 within the timeout,
* writes nothing to stdout or stderr (this drops modules that warn on import,
  e.g. DeprecationWarning for distutils/imp/asyncore/cgi/... on 3.10 or 3.11),
* leaves the working directory empty.

The union of the interpreters' candidates is tested, and the result is the
sorted intersection.  The generated file is then run whole on every
interpreter (``python -I -S bench/import_stdlib.py``), which must exit 0 with
no output.

Usage (default: pyenv's newest 3.10 and 3.11, else python3.10 and python3.11 on PATH)::

    python3 bench/gen_import_stdlib.py [--python PY310 --python PY311]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "apps"))
from make_artifacts import iter_stdlib_modules  # noqa: E402

# Top-level packages/modules left out entirely (with all their submodules).
EXCLUDED_TOP = frozenset(
    {
        "idlelib",  # the IDLE application
        "tkinter",  # GUI toolkit (needs Tk; not an import-speed workload)
        "turtle",  # imports tkinter
        "turtledemo",  # demo scripts
        "ensurepip",  # installer, reads bundled wheels
        "this",  # prints the Zen of Python on import
        "antigravity",  # opens a web browser on import
        "__hello__",  # frozen-module test fixtures
        "__phello__",
        "_bootsubprocess",  # gone in 3.12
        "_compression",  # gone in 3.14
    }
)
# Submodules left out: absent from Debian's builds (macOS-only helpers).
EXCLUDED_PREFIXES = ("ctypes.macholib",)


def stdlib_dir(python: str) -> str:
    out = subprocess.run(
        [python, "-I", "-S", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def candidates(directory: str) -> set[str]:
    names = set()
    for name, _path, _is_pkg in iter_stdlib_modules(directory):
        parts = name.split(".")
        if not all(p.isidentifier() for p in parts):  # e.g. _sysconfigdata__linux_x86_64-linux-gnu
            continue
        if (
            parts[0] in EXCLUDED_TOP
            or parts[-1] == "__main__"
            or name.startswith(EXCLUDED_PREFIXES)
        ):
            continue
        names.add(name)
    return names


def try_import(python: str, name: str, timeout: float) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="ingot-gen-") as cwd:
        try:
            proc = subprocess.run(
                [python, "-I", "-S", "-c", f"import {name}"],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return False, "timeout"
        left = os.listdir(cwd)
    if proc.returncode != 0:
        last = proc.stderr.decode(errors="replace").strip().splitlines()
        return False, f"exit {proc.returncode}: {last[-1] if last else ''}"
    if proc.stdout or proc.stderr:
        first = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
        return False, f"output: {first[0] if first else '(whitespace)'}"
    if left:
        return False, f"created files: {left}"
    return True, ""


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--python", action="append", help="interpreter to test on (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--output", default=os.path.join(HERE, "import_stdlib.py"))
    ap.add_argument("-v", "--verbose", action="store_true", help="print every rejected module")
    args = ap.parse_args()
    if not args.python:
        import harness

        args.python = [harness.find_python("3.10"), harness.find_python("3.11")]
    pythons = args.python

    names: set[str] = set()
    for py in pythons:
        d = stdlib_dir(py)
        c = candidates(d)
        print(f"{py}: stdlib {d}: {len(c)} candidates", file=sys.stderr)
        names |= c

    jobs = [(py, n) for n in sorted(names) for py in pythons]
    results: dict[tuple[str, str], tuple[bool, str]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(try_import, py, n, args.timeout): (py, n) for py, n in jobs}
        for i, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            results[futs[fut]] = fut.result()
            if i % 200 == 0:
                print(f"  {i}/{len(jobs)} imports tried", file=sys.stderr)

    kept = []
    rejected = []
    for n in sorted(names):
        reasons = [
            f"{os.path.basename(py)}: {results[(py, n)][1]}"
            for py in pythons
            if not results[(py, n)][0]
        ]
        if reasons:
            rejected.append((n, reasons))
        else:
            kept.append(n)
    print(f"kept {len(kept)}, rejected {len(rejected)}", file=sys.stderr)
    if args.verbose:
        for n, reasons in rejected:
            print(f"  - {n}: {'; '.join(reasons)}", file=sys.stderr)

    versions = ", ".join(
        subprocess.run(
            [py, "-I", "-S", "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for py in pythons
    )
    header = (
        "# Generated by bench/gen_import_stdlib.py -- do not edit by hand.\n"
        f"# {len(kept)} pure-Python stdlib modules that import cleanly (exit 0, no output,\n"
        f"# no files written) in a fresh `python -I -S` process on CPython {versions}.\n"
    )
    with open(args.output, "w") as f:
        f.write(header)
        for n in kept:
            f.write(f"import {n}\n")
    print(f"wrote {args.output}", file=sys.stderr)

    ok = True
    for py in pythons:
        proc = subprocess.run(
            [py, "-I", "-S", args.output], stdin=subprocess.DEVNULL, capture_output=True
        )
        if proc.returncode != 0 or proc.stdout or proc.stderr:
            ok = False
            print(
                f"FAIL: {py} -I -S {args.output}: exit {proc.returncode}\n"
                f"{(proc.stdout + proc.stderr).decode(errors='replace')}",
                file=sys.stderr,
            )
        else:
            print(f"ok: {py} -I -S {args.output} ran cleanly", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
