"""pytest's command line from inside the executable: `pytest-app ARGS` is `pytest ARGS`."""

import sys


def main():
    import pytest

    return pytest.main(sys.argv[1:])
