"""Enumerate the pure-Python modules of a CPython standard library directory.

Shared by gen_import_stdlib.py (candidate list), make_artifacts.py (zip and
floor blob) and make_oxidized.py (packed resources).  Works on a directory, so
it can describe another interpreter's stdlib than the one running it.

The *packed set* (what every archive built here contains) is every ``.py``
module and package under the stdlib directory except:

* ``site-packages`` and ``lib-dynload`` (not stdlib source),
* directories whose name is not an identifier (``config-3.11-x86_64-linux-gnu``);
  a file whose stem is not an identifier is kept (``_sysconfigdata__linux_x86_64-linux-gnu.py``
  is imported by sysconfig through ``__import__``), the caller decides,
* test code: the top-level ``test`` package and any ``test``/``tests``/
  ``idle_test`` subpackage (``lib2to3/tests/data`` does not even compile),
* directories without ``__init__.py`` (no namespace packages in the stdlib).
"""

from __future__ import annotations

import os

TEST_DIRS = frozenset({"test", "tests", "idle_test"})
SKIP_TOP = frozenset({"site-packages", "lib-dynload"})


def iter_stdlib_modules(stdlib_dir: str):
    """Yield ``(module_name, file_path, is_package)`` sorted by module name."""
    out = []

    def walk(directory: str, prefix: str, top: bool) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                if name == "__pycache__" or (top and name in SKIP_TOP):
                    continue
                if not name.isidentifier() or name in TEST_DIRS:
                    continue
                init = os.path.join(entry.path, "__init__.py")
                if not os.path.isfile(init):
                    continue
                pkg = prefix + name
                out.append((pkg, init, True))
                walk(entry.path, pkg + ".", False)
            elif entry.is_file() and name.endswith(".py"):
                stem = name[:-3]
                if stem == "__init__" or "." in stem:
                    continue
                out.append((prefix + stem, entry.path, False))

    walk(stdlib_dir, "", True)
    out.sort()
    return out


def compile_module(path: str):
    """Compile one module exactly as the stock path finder would (optimize 0)."""
    with open(path, "rb") as f:
        source = f.read()
    return compile(source, path, "exec", dont_inherit=True, optimize=0)


def is_frozen(name: str) -> bool:
    """True if the running interpreter serves ``name`` from FrozenImporter (3.11: os, site, runpy, ...).

    The archives built here leave these out, so that with a finder first on
    sys.meta_path they are still served frozen, as in the stock configuration.
    """
    import _imp

    return _imp.is_frozen(name)
