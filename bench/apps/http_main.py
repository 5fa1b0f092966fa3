"""Entry script for the `http --version` workload of bench/peers.py, for the tools that take a
script (PyInstaller, Nuitka): what httpie's `http` console script does."""

import sys

from httpie.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
