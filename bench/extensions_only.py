"""Imports only the extension modules that `import_stdlib.py` pulls in: the cost of native code
with the stock loader (`dlopen` of lib-dynload files) against ingot (memfd copies).

    python -I -S bench/extensions_only.py --write-list            # once: bench/out/extensions.txt
    hyperfine -N -w 3 -r 40 \\
      'python3.11 -I -S bench/extensions_only.py stock' \\
      'python3.11 -I -S bench/extensions_only.py ingot python/ bench/out/stdlib-3.11.ingot'

For `ingot`, the second argument is the directory holding the `ingot` package, the third the
archive (as made by `python -m ingot pack`). Only the extension modules are imported from the
archive; everything else comes from the stock path finder in both modes.
"""

import os
import sys

LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "extensions.txt")


def write_list():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "import_stdlib.py")) as file:
        exec(compile(file.read(), "import_stdlib.py", "exec"), {"__name__": "import_stdlib"})
    names = sorted(
        name for name, module in list(sys.modules.items())
        if str(getattr(getattr(module, "__spec__", None), "origin", "")).endswith(".so")
    )
    os.makedirs(os.path.dirname(LIST), exist_ok=True)
    with open(LIST, "w") as file:
        file.write("\n".join(names) + "\n")
    print(f"{len(names)} extension modules -> {LIST}")


def main():
    if sys.argv[1:] == ["--write-list"]:
        return write_list()
    with open(LIST) as file:
        names = file.read().split()
    if sys.argv[1] == "ingot":
        sys.path.insert(0, sys.argv[2])
        import ingot

        finder = ingot.IngotFinder(sys.argv[3])

        class ExtensionsOnly:  # serve the extension modules only
            @staticmethod
            def find_spec(name, path=None, target=None):
                return finder.find_spec(name, path, target) if name in wanted else None

        wanted = set(names)
        sys.meta_path.insert(0, ExtensionsOnly)
    elif sys.argv[1] != "stock":
        raise SystemExit(f"unknown mode {sys.argv[1]!r}: stock or ingot")
    for name in names:
        __import__(name)


if __name__ == "__main__":
    main()
