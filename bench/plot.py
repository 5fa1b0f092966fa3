"""Plot the ratios of a bench/peers.py result: docs/img/peers.png.

    build/peers/venv-plot/bin/python bench/plot.py [bench/results/peers-<utc>.json] [-o PNG]

Default input: the newest bench/results/peers-*.json. One panel per (workload, baseline) that
has a target: each configuration's start-to-exit time as a ratio to the baseline measured in the
same rounds (median over rounds), hot and cold page cache side by side, log scale; the dashed
lines are the targets for ingot. matplotlib is a bench-only dependency (bench/peers.py installs
it in build/peers/venv-plot).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

ORDER = [
    "bare",
    "stock",
    "venv",
    "ingot",
    "pyinstaller-onedir",
    "pyinstaller-onefile",
    "nuitka-onefile",
    "shiv",
]
SHORT = {
    "bare": "python -I -S\n-c pass",
    "stock": "python -I -S",
    "venv": "app venv",
    "ingot": "ingot",
    "pyinstaller-onedir": "PyInstaller\nonedir",
    "pyinstaller-onefile": "PyInstaller\nonefile",
    "nuitka-onefile": "Nuitka\nonefile",
    "shiv": "shiv",
}
TITLES = {
    "hello": "hello world",
    "import_stdlib": "import_stdlib (449 modules)",
    "http": "http --version (httpie)",
}


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("json", nargs="?", help="default: the newest bench/results/peers-*.json")
    ap.add_argument("-o", "--output", default=os.path.join(REPO, "docs", "img", "peers.png"))
    args = ap.parse_args()
    path = args.json or max(glob.glob(os.path.join(HERE, "results", "peers-*.json")))
    with open(path) as f:
        res = json.load(f)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    panels = [(w, b, ht, ct) for w, b, ht, ct in res["targets_spec"] if w in res["workloads"]]
    ncol = 2
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(11, 5.2 * nrow), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (w, base, hot_t, cold_t) in zip(axes.flat, panels, strict=False):
        cfgs = res["workloads"][w]["configs"]
        # `bare` (python -c pass) is only the baseline of hello; elsewhere it would be off the scale
        names = [n for n in ORDER if n in cfgs and n != base and (n != "bare" or w == "hello")]
        xs = range(len(names))
        width = 0.38
        for off, phase, color, hatch in [
            (-width / 2, "hot", "#4c72b0", None),
            (width / 2, "cold", "#8fb3de", "//"),
        ]:
            vals = [(cfgs[n].get(phase) or {}).get("ratio", {}).get(base) for n in names]
            for x, n, v in zip(xs, names, vals, strict=False):
                if v is None:
                    continue
                c = {"hot": "#c44e52", "cold": "#e8a0a2"}[phase] if n == "ingot" else color
                ax.bar(x + off, v, width, color=c, hatch=hatch, edgecolor="white", linewidth=0.5)
                ax.text(
                    x + off, v * 1.04, f"{v:.2f}", ha="center", va="bottom", fontsize=7, rotation=90
                )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(
            hot_t, color="#c44e52", linestyle="--", linewidth=1.2, label=f"target, hot: {hot_t:.2f}"
        )
        if cold_t is not None and cold_t != hot_t:
            ax.axhline(
                cold_t,
                color="#c44e52",
                linestyle=":",
                linewidth=1.2,
                label=f"target, cold: {cold_t:.2f}",
            )
        elif cold_t is not None:
            ax.lines[-1].set_label(f"target, hot and cold: {hot_t:.2f}")
        ax.set_yscale("log")
        ticks = [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10, 20, 50]
        ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xticks(list(xs))
        ax.set_xticklabels([SHORT[n] for n in names], fontsize=8)
        base_label = SHORT[base].replace("\n", " ")
        base_ms = cfgs[base]["hot"]["wall_ms_median"]
        ax.set_title(f"{TITLES[w]}\nvs {base_label} ({base_ms:.0f} ms hot)", fontsize=10)
        ax.set_ylabel("start-to-exit time / baseline (same rounds)", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left")
        top = max(
            [
                (cfgs[n].get(p) or {}).get("ratio", {}).get(base) or 0
                for n in names
                for p in ("hot", "cold")
            ]
        )
        ax.set_ylim(0.3 if w != "hello" else 0.5, max(2.0, top * 1.6))
    from matplotlib.patches import Patch

    fig.legend(
        handles=[
            Patch(color="#4c72b0", label="hot page cache"),
            Patch(
                facecolor="#8fb3de",
                hatch="//",
                edgecolor="white",
                label="cold (drop_caches before each run)",
            ),
            Patch(color="#c44e52", label="ingot (hot / cold)"),
        ],
        loc="lower center",
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    m = res["machine"]
    fig.suptitle(
        f"ingot executables vs peers: start-to-exit time / baseline, median over same rounds "
        f"(lower is faster)\nrun {res['utc']}, {m['nproc']} vCPU, CPython 3.11, "
        f"repo {m['repo_commit']}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    fig.savefig(args.output, dpi=100)
    print(f"wrote {args.output} from {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
