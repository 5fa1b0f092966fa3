"""Worker processes started from the executable: joblib.Parallel with its default backend (loky:
workers started as `sys.executable -m joblib.externals.loky.backend.popen_loky_posix ...`, its
resource tracker as `sys.executable -c ...`), concurrent.futures.ProcessPoolExecutor, and
multiprocessing pools with the spawn, forkserver and fork start methods (spawn and forkserver run
`sys.executable -c 'from multiprocessing...' --multiprocessing-fork`). Each maps a module-level
function over range(10); the workers say who they are (pid, sys.executable, where joblib_app
came from)."""

import json
import os
import sys


def square(number):
    return number * number, os.getpid(), sys.executable, __file__


def summary(results):
    """The squares, and what the workers were: not this process, the executable."""
    return {
        "squares": [result[0] for result in results],
        "workers_are_children": os.getpid() not in {result[1] for result in results},
        "executables": sorted({result[2] for result in results}),
        "files": sorted({result[3] for result in results}),
    }


def main():
    import concurrent.futures
    import multiprocessing

    import joblib

    seen = {"pid": os.getpid(), "joblib": joblib.__version__}
    parallel = joblib.Parallel(n_jobs=2)
    results = parallel(joblib.delayed(square)(number) for number in range(10))
    seen["joblib_backend"] = type(parallel._backend).__name__
    seen["loky"] = summary(results)
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        seen["futures"] = summary(list(pool.map(square, range(10))))
    for method in ("spawn", "forkserver", "fork"):
        with multiprocessing.get_context(method).Pool(2) as pool:
            seen[method] = summary(pool.map(square, range(10)))
    print(json.dumps(seen))
