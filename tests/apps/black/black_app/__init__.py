"""black's command line (`black ARGS`), as the `black` console script runs it; with
`--compiled-probe` first, a JSON line saying where black's modules were loaded from."""

import json
import sys


def main():
    import black

    if sys.argv[1:2] == ["--compiled-probe"]:
        del sys.argv[1]
        import os
        import blib2to3

        base = os.path.dirname(blib2to3.__file__)
        grammar = os.path.join(base, "Grammar.txt")
        pickle = os.path.join(base, "Grammar%s.pickle" % ".".join(map(str, sys.version_info)))
        # blib2to3 loads the pickle instead of generating the grammar when this holds.
        pickle_used = os.path.exists(pickle) and os.path.getmtime(pickle) >= os.path.getmtime(grammar)
        print(json.dumps({"version": black.__version__, "black": black.__file__,
                          "linegen": sys.modules["black.linegen"].__file__,
                          "grammar_pickle_used": pickle_used}), flush=True)
    sys.argv[0] = "black"
    black.patched_main()
