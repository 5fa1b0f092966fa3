"""httpie's `http` command (`http --help`, `http --offline ...`), and with `--charset-probe`
charset_normalizer detecting encodings through its compiled (mypyc) modules, reporting where
they were loaded from."""

import json
import sys


def charset_probe():
    import charset_normalizer
    from charset_normalizer import from_bytes

    text = "Всё хорошо, что хорошо кончается. Привет из памяти, без файлов!"
    best = from_bytes(text.encode("cp1251")).best()
    modules = {}
    for name in ("charset_normalizer.md", "charset_normalizer.cd"):
        module = sys.modules.get(name)
        modules[name] = None if module is None else {
            "file": getattr(module, "__file__", None),
            "origin": module.__spec__.origin,
            "loader": type(module.__spec__.loader).__name__,
            "compiled": module.__spec__.origin.endswith(".so"),
        }
    with open("/proc/self/maps") as maps:
        memfds = sorted({line.split(None, 5)[5].strip() for line in maps
                         if "memfd:" in line and "charset_normalizer" in line})
    print(json.dumps({"encoding": best.encoding, "decoded": str(best) == text,
                      "version": charset_normalizer.__version__, "modules": modules,
                      "memfds": memfds}))


def main():
    if sys.argv[1:] == ["--charset-probe"]:
        return charset_probe()
    from httpie.__main__ import main as http
    return http()
