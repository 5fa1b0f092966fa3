"""The http-phases workload's app (bench/workloads.toml): httpie's `http` console script, then on
stdout `bench startup_ns=N imports_ns=N main_ns=N` (startup: from BENCH_SPAWN_NS, the harness's
CLOCK_MONOTONIC at spawn, to this script's first line). PROBE_GC_OFF=1: the cyclic GC off during
the imports, then gc.freeze()."""

# /// script
# dependencies = ["httpie==3.2.4"]
# ///

import time

_start = time.monotonic_ns()

import os  # noqa: E402
import sys  # noqa: E402

_gc_off = os.environ.get("PROBE_GC_OFF") == "1"
if _gc_off:
    import gc

    gc.disable()

import httpie.cli.definition  # noqa: E402
import httpie.core  # noqa: E402,F401
from httpie.__main__ import main  # noqa: E402

_imported = time.monotonic_ns()
if _gc_off:
    gc.freeze()
    gc.enable()
sys.argv[0] = "http"
try:
    status = main()
except SystemExit as e:
    status = e.code
_done = time.monotonic_ns()
_startup = _start - int(os.environ.get("BENCH_SPAWN_NS") or _start)
print(f"bench startup_ns={_startup} imports_ns={_imported - _start} main_ns={_done - _imported}")
sys.exit(status)
