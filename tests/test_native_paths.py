"""Native code and the dynamic loader see the executable's files (issue 52).

`dlopen` of an extension module's `__file__` (`<exe>/_tkinter...so`, as matplotlib's TkAgg does)
returns the module already loaded; a `dlopen` of it before its import loads it from the archive,
and the import then uses that object. Each executable runs in the clean room
(tests/support/cleanroom.py), through proclimit.
"""

import json
import textwrap

pytest_plugins = ["cleanroom"]

EXTENSION_APP = textwrap.dedent("""
    import ctypes, json
    import _lsprof

    again = ctypes.CDLL(_lsprof.__file__)
    maps = [line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
            if len(line.split(None, 5)) == 6]
    print(json.dumps({
        "init": bool(again.PyInit__lsprof),
        "copies": len({line for line in maps if line.startswith("/memfd:ingot:_lsprof")}),
    }))
""")


def test_dlopen_of_an_extension_modules_file_returns_the_loaded_module(
    build_executable, room, tmp_path
):
    # matplotlib's TkAgg does this with `_tkinter.__file__` to find Tcl/Tk's functions.
    (tmp_path / "app.py").write_text(EXTENSION_APP)
    run = room(build_executable("dlopen-extension-file", tmp_path / "app.py")).run()
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert json.loads(run.stdout) == {"init": True, "copies": 1}
