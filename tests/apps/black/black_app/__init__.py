"""black's command line (`black ARGS`), as the `black` console script runs it; with
`--compiled-probe` first, a JSON line saying where black's modules were loaded from."""

import json
import sys


def main():
    import black

    if sys.argv[1:2] == ["--compiled-probe"]:
        del sys.argv[1]
        print(json.dumps({"version": black.__version__, "black": black.__file__,
                          "linegen": sys.modules["black.linegen"].__file__}), flush=True)
    sys.argv[0] = "black"
    black.patched_main()
