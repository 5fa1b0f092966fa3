# /// script
# dependencies = ["numpy==2.4.6"]
# ///
"""The numpy workload of bench/peers.py (issue 13, peak RSS): import numpy, print one sum."""

import numpy

print(numpy.arange(10).sum())
