"""``python -m ingot``: the ``ingot`` command line."""

import sys

from ingot.cli import main

sys.exit(main())
