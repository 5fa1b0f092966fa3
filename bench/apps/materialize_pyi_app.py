"""The materialize workloads' PyInstaller onefile app: with BENCH_VERIFY=1 (the checking run) it
fails unless the onefile unpacked every data file (stdlib.count of them under stdlib/)."""

import os
import sys

if os.environ.get("BENCH_VERIFY") and os.path.exists(os.path.join(sys._MEIPASS, "stdlib.count")):
    with open(os.path.join(sys._MEIPASS, "stdlib.count")) as f:
        want = int(f.read())
    got = sum(len(names) for _, _, names in os.walk(os.path.join(sys._MEIPASS, "stdlib")))
    if got != want:
        sys.exit(f"unpacked {got} data files, expected {want}")
