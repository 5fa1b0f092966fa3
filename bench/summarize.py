"""Put several import_bench.py result files of one interpreter side by side, as markdown.

    python bench/summarize.py bench/out/import-bench-3.11-*.json

Each cell is one invocation's median and, in parentheses, its ratio to the
stock median of the same invocation; nothing is averaged across invocations.
"""

from __future__ import annotations

import json
import sys

ORDER = ["stock", "bare", "zipimport", "floor", "floor-mmap", "oxidized", "ingot", "ingot-pyonly"]
STRACE = ["openat", "newfstatat", "read", "mmap"]


def cell(value, ratio, spec=".1f"):
    if value is None:
        return "–"
    return f"{value:{spec}} ({ratio:.2f})" if ratio is not None else f"{value:{spec}}"


def main(paths: list[str]) -> int:
    runs = [json.load(open(p)) for p in paths]
    names = [n for n in ORDER if any(n in r["configs"] for r in runs)]
    names += sorted({n for r in runs for n in r["configs"]} - set(names))
    head = " | ".join(f"run {i + 1}" for i in range(len(runs)))
    sep = "|---|" + "---:|" * len(runs)

    def table(title, fn):
        print(f"{title}\n\n| config | {head} |\n{sep}")
        for n in names:
            cells = []
            for r in runs:
                c = r["configs"].get(n)
                cells.append(fn(c) if c else "skipped")
            print(f"| {n} | " + " | ".join(cells) + " |")
        print()

    for i, r in enumerate(runs):
        print(f"- run {i + 1}: `{r['utc']}`, {r['runs']} rounds, load average {r['loadavg_before'][0]:.2f} "
              f"before / {r['loadavg_after'][0]:.2f} after, niceness {r.get('niceness', 0)}, "
              f"repo at {r['machine']['repo_commit']}")
    print()
    table("Whole process, median ms (ratio to stock, same run):",
          lambda c: cell(c["wall_ms_median"], c["wall_ratio_vs_stock"]))
    table("Import phase (exec of import_stdlib.py inside the process), median ms (ratio to stock, same run):",
          lambda c: cell(c["import_ms_median"], c["import_ratio_vs_stock"]))
    table("Process CPU time (user+sys), median ms (ratio to stock, same run):",
          lambda c: cell(c["cpu_s_median"] * 1e3, c.get("cpu_ratio_vs_stock"), ".0f"))
    table("Finder setup inside the process (open/index the archive, import the importer), median ms:",
          lambda c: cell(c["setup_ms_median"], None, ".2f"))

    last = runs[-1]
    base = last["configs"]["stock"]["strace"].get("total")
    if base:
        print(f"Syscalls, `strace -c -f`, one run each (run {len(runs)}):\n")
        print("| config | total | vs stock | failed | " + " | ".join(STRACE) + " |")
        print("|---|---:|---:|---:|" + "---:|" * len(STRACE))
        for n in names:
            c = last["configs"].get(n)
            if not c or not c.get("strace"):
                continue
            s = c["strace"]
            print(f"| {n} | {s['total']} | {s['total'] / base:.2f} | {s['errors']} | "
                  + " | ".join(str(s["calls"].get(k, 0)) for k in STRACE) + " |")
        print()

    print("Modules served by the finder under test (verify run of the last run):\n")
    print("| config | served by it | by SourceFileLoader after startup | imported by its own setup | loaders |")
    print("|---|---:|---:|---|---|")
    for n in names:
        c = last["configs"].get(n)
        if not c or not c.get("verify"):
            continue
        v = c["verify"]
        loaders = ", ".join(f"{k} {x}" for k, x in v["loaders"].items())
        setup = ", ".join(sorted(v["setup_loaded"])) or "–"
        print(f"| {n} | {v.get('served', '?')} | {v.get('other_source', 0)} | {setup} | {loaders} |")
    print()
    skipped = {k: v for r in runs for k, v in r.get("skipped", {}).items()}
    for k, v in skipped.items():
        print(f"- `{k}` skipped: {v}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
