"""What black's console script does (bench/peers.py --workloads black-*): black:patched_main."""

import sys

from black import patched_main

if __name__ == "__main__":
    sys.exit(patched_main())
