"""The black-phases workload's app: black's console script, reporting as apps/http_probe.py."""

# /// script
# dependencies = [
#   "black==26.10.1", "click==8.5.1", "mypy_extensions==1.2.0", "packaging==26.3",
#   "pathspec==1.1.1", "platformdirs==4.14.5", "pytokens==0.4.1",
# ]
# ///

import time

_start = time.monotonic_ns()

import os  # noqa: E402
import sys  # noqa: E402


def main():
    gc_off = os.environ.get("PROBE_GC_OFF") == "1"
    if gc_off:
        import gc

        gc.disable()
    from black import patched_main

    imported = time.monotonic_ns()
    if gc_off:
        gc.freeze()
        gc.enable()
    sys.argv[0] = "black"
    try:
        status = patched_main()
    except SystemExit as e:
        status = e.code
    done = time.monotonic_ns()
    startup = _start - int(os.environ.get("BENCH_SPAWN_NS") or _start)
    print(f"bench startup_ns={startup} imports_ns={imported - _start} main_ns={done - imported}")
    sys.exit(status)


if __name__ == "__main__":
    main()
