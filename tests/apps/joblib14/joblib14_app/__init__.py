"""joblib before 1.5 starts loky's workers by forking and then replacing the child with
`os.execve(sys.executable, cmd, {**os.environ, ...})` (loky/backend/fork_exec.py): the workers
must be self-calls running loky's worker code, not the application again. Maps a module-level
function over range(10) twice (the second reuses the executor), and says who the workers were."""

import json
import os
import sys


def square(number):
    return number * number, os.getpid(), sys.executable, __file__


def main():
    import joblib

    seen = {"joblib": joblib.__version__}
    for round_ in ("first", "second"):
        parallel = joblib.Parallel(n_jobs=2, backend="loky")
        results = parallel(joblib.delayed(square)(number) for number in range(10))
        seen[round_] = {
            "squares": [result[0] for result in results],
            "workers_are_children": os.getpid() not in {result[1] for result in results},
            "executables": sorted({result[2] for result in results}),
            "files": sorted({result[3] for result in results}),
        }
    print(json.dumps(seen))
