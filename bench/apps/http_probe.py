"""Phase probe for the `http --version` workload (bench/peers.py --probe): what the `http` console
script does, with CLOCK_MONOTONIC stamps written to stderr as one line:

    probe <spawn_ns> <script_start_ns> <imported_ns> <main_done_ns>

argv: http_probe.py SPAWN_NS [--gc-off] [http args...]; SPAWN_NS is the parent's
time.monotonic_ns() just before it spawned this process; --gc-off disables the cyclic garbage
collector for the imports, then moves everything they created to the permanent generation
(gc.freeze()) and enables it again (an experiment: what collections during start-up cost).
Phases: interpreter start-up (spawn to the first line of this script), imports (the modules
httpie.__main__.main() imports first: httpie.core and httpie.cli.definition, which builds the
argument parser), the rest of main() (plugins via importlib.metadata, parsing, printing the
version), then exit (after main to reaped)."""

import time

_t_start = time.monotonic_ns()

import sys  # noqa: E402

_gc_off = len(sys.argv) > 2 and sys.argv[2] == "--gc-off"
if _gc_off:
    import gc

    gc.disable()
    del sys.argv[2]

import httpie.cli.definition  # noqa: E402
import httpie.core  # noqa: E402,F401
from httpie.__main__ import main  # noqa: E402

_t_imported = time.monotonic_ns()
if _gc_off:
    gc.freeze()
    gc.enable()
_spawn = sys.argv[1]
sys.argv[:] = ["http", *sys.argv[2:]]  # in place: httpie.core.main(args=sys.argv) bound this list
try:
    status = main()
except SystemExit as e:
    status = e.code
_t_main = time.monotonic_ns()
sys.stdout.flush()
sys.stderr.write(f"probe {_spawn} {_t_start} {_t_imported} {_t_main}\n")
sys.exit(status)
