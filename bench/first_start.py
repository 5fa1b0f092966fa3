"""First start against second start of an executable that uses the extraction cache (the files
policy): medians of alternating rounds, the cache emptied before each first start.

    python3 bench/first_start.py EXE [ARGS...] [--rounds 9] [--env NAME=VALUE ...]

Prints the two medians and their ratio (issue 12's goal: <= 1.2). Environment settings the app
needs (MPLCONFIGDIR, HOME) are passed with --env and kept between rounds, so that only ingot's
cache starts empty.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="+")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ingot-first-start-") as scratch:
        cache = os.path.join(scratch, "cache")
        env = dict(os.environ, INGOT_CACHE_DIR=cache)
        env.update(setting.split("=", 1) for setting in options.env)
        first, second = [], []
        for _ in range(options.rounds):
            shutil.rmtree(cache, ignore_errors=True)
            for bucket in (first, second):
                started = time.perf_counter()
                run = subprocess.run(options.command, env=env, capture_output=True)
                bucket.append(time.perf_counter() - started)
                if run.returncode != 0:
                    print(
                        f"error: {options.command[0]} exited {run.returncode}:\n"
                        f"{run.stderr.decode(errors='replace')[-2000:]}",
                        file=sys.stderr,
                    )
                    return 1
        used = os.path.isdir(cache) and any(os.scandir(cache))
    one, two = statistics.median(first), statistics.median(second)
    print(
        f"first {one * 1000:.0f} ms, second {two * 1000:.0f} ms, ratio {one / two:.2f} "
        f"(medians of {options.rounds}; the cache was {'used' if used else 'not used'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
