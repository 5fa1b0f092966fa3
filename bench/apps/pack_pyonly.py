"""`ingot pack -o OUT` of the running interpreter's stdlib less what the finders workload's
ingot-finder-pyonly leaves to others: the extension modules of lib-dynload (served from there by
the stock path finder, as in every other configuration) and the modules the interpreter serves
frozen, as the floor does.

    python bench/apps/pack_pyonly.py OUT      # with ingot on PYTHONPATH
"""

import _imp
import importlib.machinery
import os
import sys

names = {"zipimport"}
for d in sys.path:
    if d.endswith("lib-dynload") and os.path.isdir(d):
        for f in os.listdir(d):
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                if f.endswith(suffix):
                    names.add(f[: -len(suffix)])
for n in getattr(_imp, "_frozen_module_names", lambda: ())():
    if not n.startswith("_frozen_importlib") and n != "os.path":
        names.add(n)
pack = ["-m", "ingot", "pack", "-q", "-o", sys.argv[1], "--stdlib-exclude", *sorted(names)]
os.execv(sys.executable, [sys.executable, *pack])
