"""Native code and the dynamic loader see the executable's files (issue 52).

`dlopen` of an extension module's `__file__` (`<exe>/_tkinter...so`, as matplotlib's TkAgg does)
returns the module already loaded; a `dlopen` of it before its import loads it from the archive,
and the import then uses that object. Each executable runs in the clean room
(tests/support/cleanroom.py), through proclimit.
"""

import json
import platform
import shutil
import subprocess
import textwrap

import pytest

pytest_plugins = ["cleanroom"]

PROBE_C = textwrap.dedent("""
    #include <dirent.h>
    #include <errno.h>
    #include <fcntl.h>
    #include <stdio.h>
    #include <sys/stat.h>
    #include <unistd.h>

    /* Each returns bytes read, a size, 0, or -errno. */
    long probe_fopen(const char *path, char *out, long size) {
        FILE *file = fopen(path, "rb");
        if (!file) return -errno;
        long got = (long)fread(out, 1, size, file);
        fclose(file);
        return got;
    }
    long probe_open(const char *path, char *out, long size) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) return -errno;
        long got = (long)read(fd, out, size);
        close(fd);
        return got;
    }
    long probe_stat(const char *path, int *is_dir) {
        struct stat status;
        if (stat(path, &status) != 0) return -errno;
        *is_dir = S_ISDIR(status.st_mode);
        return (long)status.st_size;
    }
    long probe_access(const char *path, int mode) {
        return access(path, mode) == 0 ? 0 : -errno;
    }
""")

DATA_APP = {
    "datapkg/__init__.py": "",
    "datapkg/data.txt": "forty-two bytes of data, read by C code.\n",
    "datapkg/sub/inner.txt": "inner\n",
    "app.py": textwrap.dedent("""
        import ctypes, errno, json, os, sys
        import datapkg

        here = os.path.dirname(datapkg.__file__)
        data = os.path.join(here, "data.txt").encode()
        sub = os.path.join(here, "sub").encode()
        missing = os.path.join(here, "missing.txt").encode()
        probe = ctypes.CDLL(sys.argv[1]) if len(sys.argv) > 1 else None
        libc = ctypes.CDLL(None)  # dlsym(RTLD_DEFAULT): the executable's definitions first
        seen = {}

        def read_with(function, path):
            out = ctypes.create_string_buffer(256)
            got = function(path, out, 256)
            return out.raw[:got].decode() if got >= 0 else errno.errorcode[-got]

        # Through libffi, by the pointers dlsym returns.
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fread.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        stream = libc.fopen(data, b"r")
        if stream:
            out = ctypes.create_string_buffer(256)
            got = libc.fread(out, 1, 256, stream)
            libc.fclose(stream)
            seen["ctypes_fopen"] = out.raw[:got].decode()
        else:
            seen["ctypes_fopen"] = errno.errorcode[ctypes.get_errno() or errno.EIO]
        status = ctypes.create_string_buffer(256)
        seen["ctypes_xstat64"] = [libc.__xstat64(1, path, status) == 0 for path in (data, sub)]
        seen["ctypes_access"] = [libc.access(path, os.R_OK) for path in (data, sub, missing)]
        # Through the PLT of a library compiled here.
        is_dir = ctypes.c_int(-1)
        seen["c_fopen"] = read_with(probe.probe_fopen, data)
        seen["c_open"] = read_with(probe.probe_open, data)
        seen["c_open_missing"] = read_with(probe.probe_open, missing)
        seen["c_stat"] = [probe.probe_stat(data, ctypes.byref(is_dir)), is_dir.value]
        seen["c_stat_dir"] = [probe.probe_stat(sub, ctypes.byref(is_dir)), is_dir.value]
        seen["c_stat_missing"] = probe.probe_stat(missing, ctypes.byref(is_dir))
        seen["c_access"] = [probe.probe_access(data, os.R_OK), probe.probe_access(data, os.W_OK)]
        # A path outside the executable is the system's.
        seen["c_outside"] = read_with(probe.probe_open, b"/dev/null")
        print(json.dumps(seen))
    """),
}


def test_c_code_opens_stats_and_checks_files_inside_the_executable(
    build_executable, room, tmp_path
):
    from cleanroom import require_or_skip

    if platform.machine() != "x86_64":
        pytest.skip("the probe passes x86-64's _STAT_VER to __xstat64")
    if shutil.which("gcc") is None:
        require_or_skip("gcc is not installed (the test compiles the library it loads)")
    for name, text in DATA_APP.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "probe.c").write_text(PROBE_C)
    library = tmp_path / "libprobe.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-o", library, tmp_path / "probe.c"], check=True
    )
    executable = build_executable("c-reads-data", tmp_path / "app.py")
    run = room(executable, copy={"/libprobe.so": library}).run("/libprobe.so")
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    seen = json.loads(run.stdout)
    text = DATA_APP["datapkg/data.txt"]
    assert seen["ctypes_fopen"] == text
    assert seen["ctypes_xstat64"] == [True, True]
    assert seen["ctypes_access"] == [0, 0, -1]
    assert (seen["c_fopen"], seen["c_open"], seen["c_open_missing"]) == (text, text, "ENOENT")
    assert seen["c_stat"] == [len(text), 0]
    assert seen["c_stat_dir"][1] == 1
    assert seen["c_stat_missing"] == -2  # ENOENT
    assert seen["c_access"] == [0, -20]  # ENOTDIR for a write, as the system answers it
    assert seen["c_outside"] == ""


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
