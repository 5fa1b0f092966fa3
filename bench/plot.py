"""docs/img/peers.png from a bench/peers.py result (default: the newest bench/results/peers-*.json):
per workload and target baseline, every configuration's same-round ratio, hot and cold."""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import textwrap

import harness as h

TITLES = {
    "hello": "hello world",
    "import_stdlib": "import_stdlib (449 modules)",
    "http": "http --version (httpie)",
}
HOT, COLD, INGOT = "#4c72b0", "#8fb3de", {"hot": "#c44e52", "cold": "#e8a0a2"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json", nargs="?", help="default: the newest bench/results/peers-*.json")
    ap.add_argument("-o", "--output", default=os.path.join(h.REPO, "docs", "img", "peers.png"))
    args = ap.parse_args()
    path = args.json or max(glob.glob(os.path.join(h.RESULTS, "peers-*.json")))
    with open(path) as f:
        res = json.load(f)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    panels = [p for p in res["targets_spec"] if p[0] in res["workloads"]]
    nrow = (len(panels) + 1) // 2
    fig, axes = plt.subplots(nrow, 2, figsize=(11, 5.2 * nrow), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (w, base, hot_t, cold_t) in zip(axes.flat, panels):
        cfgs = res["workloads"][w]["configs"]
        # `bare` (python -c pass) is only the baseline of hello; elsewhere it would be off the scale
        names = [
            n
            for n in h.load_data()["workloads"][w]["configs"]
            if n in cfgs and n != base and (n != "bare" or w == "hello")
        ]
        ratios = {
            (n, ph): (cfgs[n].get(ph) or {}).get("ratio", {}).get(base)
            for n in names
            for ph in ("hot", "cold")
        }
        for (n, ph), v in ratios.items():
            if v is not None:
                x = names.index(n) + (-0.19 if ph == "hot" else 0.19)
                color = INGOT[ph] if n == "ingot" else (HOT if ph == "hot" else COLD)
                hatch = "//" if ph == "cold" else None
                ax.bar(x, v, 0.38, color=color, hatch=hatch, edgecolor="white", linewidth=0.5)
                ax.text(x, v * 1.04, f"{v:.2f}", ha="center", va="bottom", fontsize=7, rotation=90)
        ax.axhline(1.0, color="black", linewidth=0.8)
        both = cold_t == hot_t
        for t, ls, what in [
            (hot_t, "--", "hot and cold" if both else "hot"),
            (cold_t, ":", "cold"),
        ]:
            if t is not None and (ls == "--" or not both):
                ax.axhline(t, color=INGOT["hot"], ls=ls, lw=1.2, label=f"target, {what}: {t:.2f}")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(
            FixedLocator([0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10, 20, 50])
        )
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([textwrap.fill(res["labels"][n], 12) for n in names], fontsize=8)
        base_ms = cfgs[base]["hot"]["wall_ms_median"]
        title = TITLES.get(w, w)
        ax.set_title(f"{title}\nvs {res['labels'][base]} ({base_ms:.0f} ms hot)", fontsize=10)
        ax.set_ylabel("start-to-exit time / baseline (same rounds)", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left")
        top = max([v or 0 for v in ratios.values()])
        ax.set_ylim(0.3 if w != "hello" else 0.5, max(2.0, top * 1.6))
    cold = {"facecolor": COLD, "hatch": "//", "edgecolor": "white"}
    handles = [
        Patch(color=HOT, label="hot page cache"),
        Patch(**cold, label="cold (drop_caches before each run)"),
        Patch(color=INGOT["hot"], label="ingot (hot / cold)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
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
