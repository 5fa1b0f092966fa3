"""How fast interpreters run Python code: pyperformance's pure-Python benchmarks, one benchmark
at a time, the interpreters in turn (A B A B ...), so that a drift of the machine's speed falls on
all of them. For issue 41: a runtime's CPython (built by zig's clang) against a distribution's
build of the same release (Debian's python3.11, PGO and LTO).

    python3 bench/interpreters.py runtime=$(ingot runtime dir)/cpython-3.11.2-*/python/bin/python3.11 \\
        debian=/usr/bin/python3.11 [--rounds 3] [--benchmarks richards,nbody]

An interpreter of another system is named ``NAME=ROOT:PATH``: ``PATH`` inside the Debian root
``ROOT`` (``scripts/debian-root trixie DIR python3.13``: trixie's python3.13 against the 3.13
runtime), run there by chroot in a mount namespace of its own that sees the benchmark's files
(root only).

The first interpreter named is the one the ratios are of (A / each other). Writes
results/interpreters-<utc>.json and prints, per benchmark, each interpreter's median time and
the ratio of the medians, then the geometric mean of the ratios. Needs pip (to fetch pyperf and
pyperformance's benchmark scripts once, into build/interpreters/); the interpreters measured need
nothing but their standard library (pyperf is put on their PYTHONPATH, pure Python).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile

from harness import REPO, RESULTS, log, utc_stamp

PYPERF = "pyperf==2.10.0"
PYPERFORMANCE = "pyperformance==1.14.0"
#: issue 41's acceptance set: pure Python, no dependency but pyperf.
BENCHMARKS = (
    "richards",
    "nbody",
    "float",
    "deltablue",
    "raytrace",
    "chaos",
    "go",
    "json_loads",
    "unpack_sequence",
    "spectral_norm",
)
WORK = os.path.join(REPO, "build", "interpreters")


def prepare() -> tuple[str, str]:
    """pyperf installed into a directory of its own, and pyperformance's benchmark scripts
    (``bm_<name>/run_benchmark.py``) unpacked from its wheel; both once."""
    site = os.path.join(WORK, "pyperf")
    scripts = os.path.join(WORK, "benchmarks")
    if not os.path.isdir(os.path.join(site, "pyperf")):
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", site, PYPERF, "psutil"],
            check=True,
        )
    if not os.path.isdir(scripts):
        with tempfile.TemporaryDirectory() as download:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "-d",
                    download,
                    "--only-binary",
                    ":all:",
                    PYPERFORMANCE,
                ],
                check=True,
            )
            (wheel,) = [name for name in os.listdir(download) if name.endswith(".whl")]
            with zipfile.ZipFile(os.path.join(download, wheel)) as archive:
                for name in archive.namelist():
                    marker = "/data-files/benchmarks/"
                    if marker in name and name.endswith(".py"):
                        relative = name.split(marker, 1)[1]
                        target = os.path.join(scripts, relative)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with open(target, "wb") as out:
                            out.write(archive.read(name))
    return site, scripts


def command(python: str) -> list[str]:
    """How to start ``python`` (``PATH``, or ``ROOT:PATH`` for one inside a Debian root: chroot
    in a mount namespace where the root also sees this machine's /proc, /dev, /tmp and the
    benchmark's files, at the same paths)."""
    root, _, inside = python.rpartition(":")
    if not root:
        return [python]
    binds = " && ".join(
        f'mkdir -p "$0"{path} && mount --rbind {path} "$0"{path}'
        for path in ("/proc", "/dev", "/tmp", WORK)
    )
    chroot = shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin") or "chroot"
    return ["unshare", "--mount", "sh", "-c", f'{binds} && exec {chroot} "$0" "$@"', root, inside]


def run_once(python: str, script: str, site: str, processes: int, values: int) -> list[float]:
    """One pyperf run of a benchmark script: its values (seconds)."""
    with tempfile.TemporaryDirectory() as scratch:
        output = os.path.join(scratch, "out.json")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": site, "HOME": scratch}
        done = subprocess.run(
            [
                *command(python),
                script,
                "--processes",
                str(processes),
                "--values",
                str(values),
                "--warmups",
                "1",
                "--inherit-environ",
                "PYTHONPATH",
                "--quiet",
                "-o",
                output,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{python} {script} failed:\n{done.stderr[-3000:]}")
        with open(output) as file:
            data = json.load(file)
    return [
        value
        for benchmark in data["benchmarks"]
        for run in benchmark["runs"]
        if "values" in run
        for value in run["values"]
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("interpreters", nargs="+", help="NAME=PATH, the first the measured one")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--rounds", type=int, default=3, help="turns of each interpreter")
    parser.add_argument("--processes", type=int, default=4, help="pyperf worker processes")
    parser.add_argument("--values", type=int, default=3, help="values per worker process")
    args = parser.parse_args()
    interpreters = dict(item.split("=", 1) for item in args.interpreters)
    names = list(interpreters)
    site, scripts = prepare()
    results: dict[str, dict[str, list[float]]] = {}
    for benchmark in args.benchmarks.split(","):
        script = os.path.join(scripts, f"bm_{benchmark}", "run_benchmark.py")
        results[benchmark] = {name: [] for name in names}
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else names[::-1]
            for name in order:
                results[benchmark][name] += run_once(
                    interpreters[name], script, site, args.processes, args.values
                )
        log(f"{benchmark}: done")
    table = []
    ratios: dict[str, list[float]] = {other: [] for other in names[1:]}
    for benchmark, values in results.items():
        medians = {name: statistics.median(values[name]) for name in names}
        row = [benchmark] + [f"{medians[name] * 1e3:.4g} ms" for name in names]
        for other in names[1:]:
            ratio = medians[names[0]] / medians[other]
            ratios[other].append(ratio)
            row.append(f"{ratio:.3f}")
        table.append(row)
    header = ["benchmark", *names, *(f"{names[0]}/{other}" for other in names[1:])]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in table:
        print("| " + " | ".join(row) + " |")
    geomeans = {
        other: math.exp(sum(map(math.log, values)) / len(values))
        for other, values in ratios.items()
    }
    print(
        "| geometric mean | "
        + " | " * len(names)
        + " | ".join(f"{value:.3f}" for value in geomeans.values())
        + " |"
    )
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"interpreters-{utc_stamp()}.json")
    with open(path, "w") as file:
        json.dump(
            {
                "interpreters": interpreters,
                "rounds": args.rounds,
                "processes": args.processes,
                "values": args.values,
                "values_by_benchmark": results,
                "geometric_mean": geomeans,
            },
            file,
            indent=1,
        )
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
