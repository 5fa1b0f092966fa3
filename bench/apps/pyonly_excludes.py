"""Prints what `ingot pack --stdlib-exclude` leaves out for bench/finders.py's ingot-pyonly: the
extension modules of lib-dynload (served from there by the stock path finder, as in every other
configuration) and the modules the running interpreter serves frozen, as the floor does."""

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
print(" ".join(sorted(names)))
