"""PyInstaller onefile app of bench/materialize.py: prints how many files it unpacked."""

import os
import sys

if os.environ.get("MATBENCH_COUNT"):
    print(sum(len(files) for _, _, files in os.walk(sys._MEIPASS)))
