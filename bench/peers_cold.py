"""Two cold-start experiments on bench/peers.py's builds (bench only; ingot is unchanged).

    nice -n -15 python3 bench/peers_cold.py [--work build/peers] [--runs 15]

1. Shared pages survive drop_caches. Pages that running processes have mapped stay in memory;
   on a shared machine other users' Python processes keep pyenv's libpython3.11.so (~4 MiB of
   it) and the system libcrypto (~3 MiB) resident, so the stock, venv and shiv rows start
   warmer than an ingot, PyInstaller or Nuitka executable, whose files nobody else maps. The row
   "baseline, private libs" runs the baseline with LD_LIBRARY_PATH pointing at private copies
   of libpython3.11.so.1.0, libssl.so.3 and libcrypto.so.3 (WORK/private-lib; the interpreter's
   RUNPATH yields to LD_LIBRARY_PATH), which nothing else maps: a really cold baseline.
2. Readahead. The launcher maps the whole executable (MAP_SHARED, PROT_READ) and reads the archive
   through page faults; on a page-cache miss the kernel reads a window sized by the device's
   read_ahead_kb (8192 KiB on this machine's virtio disk), so a cold `hello` reads ~36 MiB of its
   44 MiB. "ingot + MADV_RANDOM" preloads bench/apps/madv_random.c, which madvise(MADV_RANDOM)s
   every read-only shared file mapping larger than 16 MiB, so that faults read single pages.

Cold rounds as in bench/peers.py: sync + drop_caches before every run, order rotated each round;
ratios are medians over rounds of (config / baseline in the same round).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

import peers
import peers_build as pb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(pb.REPO, "build", "peers"))
    ap.add_argument("--python", default=peers.DEFAULT_PYTHON)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--nice", type=int, default=0)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    shim = os.path.join(work, "madv_random.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", shim, os.path.join(pb.HERE, "apps", "madv_random.c"),
                    "-ldl"], check=True)
    private = os.path.join(work, "private-lib")
    os.makedirs(private, exist_ok=True)
    for f in peers.shared_files(args.python):
        if os.path.basename(f).startswith(("libpython", "libssl", "libcrypto")):
            shutil.copyfile(f, os.path.join(private, os.path.basename(f)))
    state = pb.load_state(work)
    env = pb.build_env(work)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    run_cwd = os.path.join(work, "run-cwd")
    if args.nice:
        os.nice(args.nice)
    print(f"### Cold start: a really cold baseline, and ingot without readahead ({args.runs} rounds)\n")
    print("| workload | baseline | baseline ms | baseline, private libs ms | ingot ms | vs baseline | vs private-libs baseline "
          "| ingot + MADV_RANDOM ms | vs baseline |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for w, base in [("hello", "bare"), ("import_stdlib", "stock"), ("http", "venv")]:
        cfgs, _ = peers.configurations(work, args.python, w, state)
        runs = {base: (cfgs[base]["argv"], env),
                "private": (cfgs[base]["argv"], dict(env, LD_LIBRARY_PATH=private)),
                "ingot": (cfgs["ingot"]["argv"], env),
                "ingot-madv": (cfgs["ingot"]["argv"], dict(env, LD_PRELOAD=shim))}
        data = {n: {"wall_ns": [], "cpu_s": [], "failures": 0} for n in runs}
        names = list(runs)
        for i in range(args.runs):
            k = i % len(names)
            for n in names[k:] + names[:k]:
                wall, cpu, status = peers.guarded_run(runs[n][0], runs[n][1], run_cwd, True, data[n])
                if status != 0:
                    raise SystemExit(f"{w}/{n} exited with status {status}")
                data[n]["wall_ns"].append(wall)
                data[n]["cpu_s"].append(cpu)
        s = peers.summarize(data, [base, "private"])
        print(f"| {w} | {peers.LABELS[base]} | {s[base]['wall_ms_median']:.1f} | {s['private']['wall_ms_median']:.1f} | "
              f"{s['ingot']['wall_ms_median']:.1f} | {s['ingot']['ratio'][base]:.2f} | {s['ingot']['ratio']['private']:.2f} | "
              f"{s['ingot-madv']['wall_ms_median']:.1f} | {s['ingot-madv']['ratio'][base]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
