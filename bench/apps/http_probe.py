"""Phase probe (bench/peers.py --probe): httpie's `http` console script, then on stderr
`probe SPAWN START IMPORTED DONE` (CLOCK_MONOTONIC ns). argv: SPAWN [--gc-off] HTTP_ARGS...;
--gc-off: the cyclic GC off during the imports (httpie.core, httpie.cli.definition), then
gc.freeze()."""

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
