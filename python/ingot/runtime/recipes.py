"""How each piece of a runtime is built from its source release: the libraries the standard
library's extension modules use, then CPython, all with the runtime's toolchain
(:mod:`ingot.toolchain`), all static and position-independent, so that each extension module
carries the code of the libraries it uses (``_ssl`` holds OpenSSL) and needs nothing of the
target system but glibc.

A recipe gets the unpacked source directory, the prefix everything is installed into (``lib``,
``include``, ``lib/pkgconfig``) and a ``run(argv, cwd, extra=None)`` function that runs one
command with the build's environment (plus ``extra``) and log, ``$NAME`` in an argument standing
for that environment variable (``$CC``: the toolchain's compiler). Recipes are data plus a few commands each; what a source release must look
like is said where it matters (``sqlite``: the amalgamation, or the full tree with ``tclsh``).

Tcl and Tk (``_tkinter``) are static too, but Tk draws through libX11, which belongs to the
desktop (manylinux's policy): ``_tkinter`` needs the target system's ``libX11.so.6``, linked
against a stand-in made from Xlib's headers (:func:`_libx11`). Tcl's and Tk's script libraries
(``init.tcl``, ``tk.tcl``, encodings) are installed as ``lib/tcl8.6`` and ``lib/tk8.6``.

Left out, on purpose: gdbm/ndbm, libnsl (``nis``), libxcrypt (``crypt``).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ingot.machine import Machine, host_machine

__all__ = [
    "LIBRARIES",
    "PROFILE_RUNTIME",
    "SCRIPT_LIBRARIES",
    "TOOLS",
    "Recipe",
    "build_python",
    "cross_options",
    "patch_python",
    "python_configure_arguments",
]

Run = Callable[..., None]
#: A recipe's build: the unpacked source, the prefix, the runner, the jobs, the target machine.
Build = Callable[[Path, Path, Run, int, Machine], None]

#: Compiler flags of every library: optimized, position-independent (they are linked into shared
#: extension modules), large-file aware as CPython is.
CFLAGS = "-O2 -fPIC -D_FILE_OFFSET_BITS=64"


@dataclass
class Recipe:
    name: str
    #: What it is for, in the runtime's description.
    purpose: str
    #: Globs that find its source release in a directory of sources (upstream's and Debian's
    #: names).
    patterns: tuple[str, ...]
    build: Build
    #: Environment variables CPython's configure takes for it (3.11+: instead of pkg-config).
    configure_environment: Callable[[Path], dict[str, str]] = field(default=lambda prefix: {})


def cross_options(machine: Machine) -> list[str]:
    """A configure script's ``--host`` and ``--build`` when ``machine`` is not this one (a cross
    build: configure then runs nothing it compiles); none for a native build."""
    build = host_machine()
    if machine == build:
        return []
    return [f"--host={machine.triplet}", f"--build={build.triplet}"]


def _autotools(*options: str) -> Build:
    def build(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
        if not (source / "configure").exists() and (source / "configure.ac").exists():
            # A snapshot of the repository (Debian's .orig of libffi 3.5+): its configure
            # script made as its release's is (autoconf, automake, libtool).
            run(["autoreconf", "-fi"], cwd=source)
        run(
            [
                "./configure",
                f"--prefix={prefix}",
                "--disable-shared",
                "--enable-static",
                *cross_options(machine),
                *options,
            ],
            cwd=source,
            extra={"CFLAGS": CFLAGS},
        )
        run(["make", f"-j{jobs}"], cwd=source)
        run(["make", "install"], cwd=source)

    return build


def _zlib(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # (zlib's configure takes no --host: it compiles with $CC for whatever that targets.)
    run(["./configure", f"--prefix={prefix}", "--static"], cwd=source, extra={"CFLAGS": CFLAGS})
    run(["make", f"-j{jobs}", "libz.a"], cwd=source)
    run(["make", "install"], cwd=source)


def _bzip2(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # A plain Makefile, with its own CC/AR/RANLIB/CFLAGS variables.
    run(
        [
            "make",
            f"-j{jobs}",
            "libbz2.a",
            "CC=$CC",
            "AR=$AR",
            "RANLIB=$RANLIB",
            f"CFLAGS={CFLAGS} -Wall -Winline",
        ],
        cwd=source,
    )
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "include").mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "libbz2.a", prefix / "lib" / "libbz2.a")
    shutil.copy2(source / "bzlib.h", prefix / "include" / "bzlib.h")


def _libffi(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # libffi 3.4.4 calls open_temp_exec_file() in src/tramp.c without declaring it, an error
    # under clang >= 16 (zig's); 3.4.5 declares it. Add the declaration where it is missing.
    tramp = source / "src" / "tramp.c"
    if tramp.exists():
        text = tramp.read_text()
        if "open_temp_exec_file" in text and "int open_temp_exec_file" not in text:
            tramp.write_text("extern int open_temp_exec_file (void);\n" + text)
    _autotools("--with-pic", "--disable-docs", "--disable-multi-os-directory")(
        source, prefix, run, jobs, machine
    )


def _sqlite(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # The amalgamation (sqlite-autoconf-*.tar.gz) has sqlite3.c; the full tree (Debian's orig
    # tarball) makes it with tclsh. Either way: one object, one static library.
    options = [
        "-DSQLITE_ENABLE_FTS5",
        "-DSQLITE_ENABLE_FTS4",
        "-DSQLITE_ENABLE_RTREE",
        "-DSQLITE_ENABLE_JSON1",
        "-DSQLITE_ENABLE_MATH_FUNCTIONS",
        "-DSQLITE_THREADSAFE=1",
        "-DSQLITE_OMIT_LOAD_EXTENSION=0",
        "-DSQLITE_ENABLE_DBSTAT_VTAB",
    ]
    if not (source / "sqlite3.c").exists():
        run(
            ["./configure", "--disable-shared", "--disable-tcl", *cross_options(machine)],
            cwd=source,
            extra={"CFLAGS": CFLAGS},
        )
        run(["make", "sqlite3.c"], cwd=source)
    run(["$CC", *CFLAGS.split(), *options, "-c", "sqlite3.c", "-o", "sqlite3.o"], cwd=source)
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "include").mkdir(parents=True, exist_ok=True)
    run(["$AR", "rcs", str(prefix / "lib" / "libsqlite3.a"), "sqlite3.o"], cwd=source)
    for header in ("sqlite3.h", "sqlite3ext.h"):
        shutil.copy2(source / header, prefix / "include" / header)


def _openssl(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # --openssldir is where OpenSSL looks for its configuration and certificates at run time:
    # Debian's and Ubuntu's place (RHEL's is /etc/pki/tls); SSL_CERT_FILE and SSL_CERT_DIR
    # override it, and certifi-using code does not need it.
    run(
        [
            "./Configure",
            machine.openssl,
            "no-shared",
            "no-tests",
            "-fPIC",
            f"--prefix={prefix}",
            "--libdir=lib",
            "--openssldir=/etc/ssl",
        ],
        cwd=source,
        extra={"CFLAGS": "-O2"},
    )
    run(["make", f"-j{jobs}", "build_libs"], cwd=source)
    run(["make", "install_dev"], cwd=source)


def _ncurses(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # The wide-character library only, no programs, no terminfo database: at run time it reads
    # the target system's (/etc/terminfo, /lib/terminfo, /usr/share/terminfo); where there is
    # none, readline works as on a dumb terminal and curses.setupterm() says it found none.
    # --disable-db-install: `make install` would otherwise compile the whole database with the
    # build machine's tic into the build machine's /usr/share/terminfo (the default directory
    # below), overwriting it as root and failing the build as anyone else.
    _autotools(
        "--without-shared",
        "--with-normal",
        "--without-debug",
        "--without-cxx",
        "--without-cxx-binding",
        "--without-ada",
        "--without-progs",
        "--without-tests",
        "--without-manpages",
        "--enable-widec",
        "--enable-pc-files",
        f"--with-pkg-config-libdir={prefix / 'lib' / 'pkgconfig'}",
        "--disable-stripping",
        "--with-terminfo-dirs=/etc/terminfo:/lib/terminfo:/usr/share/terminfo",
        "--with-default-terminfo-dir=/usr/share/terminfo",
        "--disable-db-install",
    )(source, prefix, run, jobs, machine)


#: readline 8.2's first official patch (readline82-001; in readline 8.2.1 and later): where LC_ALL,
#: LC_CTYPE or LANG names a locale the system lacks, setlocale() returns NULL, which
#: _rl_init_locale() copies (strlen(NULL)): `import readline` (pdb, pytest) dies with SIGSEGV in
#: a container that sets LANG=C.UTF-8 but holds no locale files. readline-8.2.tar.gz and
#: Debian's readline_8.2.orig.tar.gz are 8.2 without it.
_READLINE_SETLOCALE = (
    "  ret = setlocale (LC_CTYPE, lspec);\t/* ok, since it does not change locale */\n"
)
_READLINE_NO_LOCALE = (
    "  if (ret == 0 || *ret == 0)\n"
    "    ret = setlocale (LC_CTYPE, (char *)NULL);\n"
    "  if (ret == 0 || *ret == 0)\n"
    "    ret = RL_DEFAULT_LOCALE;\n"
)


def _readline(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    nls = source / "nls.c"
    text = nls.read_text()
    if _READLINE_SETLOCALE in text and _READLINE_SETLOCALE + _READLINE_NO_LOCALE not in text:
        nls.write_text(text.replace(_READLINE_SETLOCALE, _READLINE_SETLOCALE + _READLINE_NO_LOCALE))
    run(
        [
            "./configure",
            f"--prefix={prefix}",
            "--disable-shared",
            "--enable-static",
            "--with-curses",
            "--disable-install-examples",
            *cross_options(machine),
        ],
        cwd=source,
        extra={
            "CFLAGS": CFLAGS,
            "CPPFLAGS": f"-I{prefix / 'include'}",
            "LDFLAGS": f"-L{prefix / 'lib'}",
        },
    )
    run(["make", f"-j{jobs}"], cwd=source)
    run(["make", "install"], cwd=source)


def _expat(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # A release tarball has a configure script; a snapshot of the repository (Debian's orig
    # tarball) has the library in expat/ and no configure, but a CMakeLists.txt (cmake, if the
    # build machine has it, builds it).
    if (source / "expat" / "CMakeLists.txt").is_file():
        source = source / "expat"
    if (source / "configure").is_file():
        _autotools(
            "--with-pic",
            "--without-xmlwf",
            "--without-examples",
            "--without-tests",
            "--without-docbook",
        )(source, prefix, run, jobs, machine)
        return
    cmake = shutil.which("cmake")
    if cmake is None:
        from ingot.errors import IngotError

        raise IngotError(
            f"{source} has no configure script (a snapshot of expat's repository, "
            "not a release) and there is no cmake to build it with",
            hint="give expat's release tarball (expat-2.x.tar.xz: --source "
            "expat=...), or install cmake",
        )
    run(
        [
            cmake,
            "-S",
            ".",
            "-B",
            "build",
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
            "-DCMAKE_INSTALL_LIBDIR=lib",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_C_COMPILER=$CC",
            "-DCMAKE_AR=$AR",
            "-DCMAKE_RANLIB=$RANLIB",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            "-DEXPAT_SHARED_LIBS=OFF",
            "-DEXPAT_BUILD_TOOLS=OFF",
            "-DEXPAT_BUILD_EXAMPLES=OFF",
            "-DEXPAT_BUILD_TESTS=OFF",
            "-DEXPAT_BUILD_DOCS=OFF",
            "-DEXPAT_BUILD_FUZZERS=OFF",
            *(
                ["-DCMAKE_SYSTEM_NAME=Linux", f"-DCMAKE_SYSTEM_PROCESSOR={machine.name}"]
                if cross_options(machine)
                else []
            ),
        ],
        cwd=source,
        extra={"CFLAGS": CFLAGS},
    )
    run([cmake, "--build", "build", "-j", str(jobs)], cwd=source)
    run([cmake, "--install", "build"], cwd=source)


def _mpdecimal(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # libmpdec only (no C++ libmpdec++); its configure takes CFLAGS for the static library too.
    run(
        [
            "./configure",
            f"--prefix={prefix}",
            "--disable-shared",
            "--enable-static",
            "--disable-cxx",
            *cross_options(machine),
        ],
        cwd=source,
        extra={"CFLAGS": CFLAGS},
    )
    run(["make", f"-j{jobs}"], cwd=source)
    run(["make", "install"], cwd=source)


def _libuuid(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # util-linux is a whole suite of programs; libuuid is one of its libraries (a libuuid-1.0.x
    # release holds only that library, and its configure ignores the options it does not know).
    _autotools(
        "--disable-all-programs",
        "--enable-libuuid",
        "--disable-nls",
        "--disable-bash-completion",
        "--without-python",
        "--without-systemd",
        "--without-udev",
        "--without-tinfo",
        "--without-ncursesw",
        "--disable-asciidoc",
        "--disable-makeinstall-chown",
        "--disable-makeinstall-setuid",
    )(source, prefix, run, jobs, machine)


def _xorgproto(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # The X protocol's headers (X.h, Xproto.h, keysymdef.h, ...): nothing is compiled. From
    # upstream's release (configure generates Xfuncproto.h and Xpoll.h), or from Debian's
    # x11proto-dev package (its headers, as installed: Debian's mirror has no source of it).
    if (source / "usr" / "include" / "X11").is_dir():
        shutil.copytree(source / "usr" / "include", prefix / "include", dirs_exist_ok=True)
        return
    run(["./configure", f"--prefix={prefix}", *cross_options(machine)], cwd=source)
    run(["make", "install"], cwd=source)


#: The script libraries the Tcl and Tk recipes install in ``lib/`` (copied into the runtime).
SCRIPT_LIBRARIES = ("tcl8.6", "tk8.6")

#: Where :func:`_libx11` puts the stand-in ``libX11.so`` that Tk and ``_tkinter`` link against.
X11_STAND_IN = "x11-stand-in"


def _libx11(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # Xlib's headers, and a stand-in shared library: one empty function for every function they
    # declare, named libX11.so.6 (the soname of every libX11 since 1995). Linking against it
    # records what the target system's libX11 must provide (it has no symbol versions), and lets
    # configure's link tests and a misspelled name fail as they would against the real one;
    # nothing of it is installed in the runtime.
    headers = prefix / "include" / "X11"
    headers.mkdir(parents=True, exist_ok=True)
    for header in (source / "include" / "X11").glob("*.h"):
        shutil.copy2(header, headers / header.name)
    (headers / "XlibConf.h").write_text(
        "#ifndef _XLIBCONF_H_\n#define _XLIBCONF_H_\n"
        "#define XTHREADS 1\n#define XUSE_MTSAFE_API 1\n#endif\n"
    )
    declared = source / "x11-declared.c"
    declared.write_text(
        "".join(
            f"#include <X11/{name}>\n"
            # ImUtil.h: _XInitImageFuncPtrs, which Tk's images call.
            for name in (
                "Xlib.h",
                "Xutil.h",
                "Xresource.h",
                "XKBlib.h",
                "Xlocale.h",
                "Xcms.h",
                "ImUtil.h",
            )
        )
    )
    run(
        ["$CC", f"-I{prefix / 'include'}", "-E", "-P", "-o", "x11-declared.i", declared.name],
        cwd=source,
    )
    text = (source / "x11-declared.i").read_text()
    # A declaration's name is followed by its parameters (`*XOpenDisplay(`); a pointer to a
    # function (`(*XErrorHandler)(`) is not, and macros are gone after the preprocessor.
    names = sorted(set(re.findall(r"\b(_?X[A-Za-z0-9_]*)\s*\(", text)) - _X_NOT_FUNCTIONS)
    if len(names) < 500:
        from ingot.errors import IngotError

        raise IngotError(
            f"{source}: found {len(names)} functions in Xlib's headers, expected more than 500",
            hint="give libX11's source release (libX11-1.x.tar.*)",
        )
    stand_in = prefix / "lib" / X11_STAND_IN
    stand_in.mkdir(parents=True, exist_ok=True)
    (source / "x11-stand-in.c").write_text("".join(f"void {name}(void) {{}}\n" for name in names))
    run(
        [
            "$CC",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libX11.so.6",
            "-o",
            str(stand_in / "libX11.so"),
            "x11-stand-in.c",
        ],
        cwd=source,
    )


#: Names followed by `(` in Xlib's headers that are not libX11's functions: types (in a pointer
#: to a function's declaration), and two functions XKBlib.h declares and libX11 never defined.
_X_NOT_FUNCTIONS = frozenset(
    {"XPointer", "XID", "XkbAddSymInterpret", "XkbGetDeviceIndicatorState"}
)


def _copy_script_library(library: Path, target: Path, leave_out: tuple[str, ...]) -> None:
    """Installs a Tcl script library as it is in the source tree (``library/``): what ``make
    install`` puts in ``lib/tcl8.6`` less its Tcl modules' renaming, which needs a tclsh that
    runs here (a cross build has none); Tcl finds the packages by their ``pkgIndex.tcl``."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(library, target, ignore=shutil.ignore_patterns(*leave_out))


def _tcl(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # The bundled extensions (pkgs/: itcl, thread, sqlite, tdbc) are not needed by tkinter.
    shutil.rmtree(source / "pkgs", ignore_errors=True)
    unix = source / "unix"
    run(
        [
            "./configure",
            f"--prefix={prefix}",
            "--disable-shared",
            "--enable-threads",
            *cross_options(machine),
        ],
        cwd=unix,
        extra={
            "CFLAGS": CFLAGS,
            "CPPFLAGS": f"-I{prefix / 'include'}",
            "LDFLAGS": f"-L{prefix / 'lib'}",
        },
    )
    run(["make", f"-j{jobs}", "binaries"], cwd=unix)
    run(["make", "install-binaries", "install-headers", "install-private-headers"], cwd=unix)
    _copy_script_library(source / "library", prefix / "lib" / "tcl8.6", ("dde", "reg"))


def _tk(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    unix = source / "unix"
    run(
        [
            "./configure",
            f"--prefix={prefix}",
            "--disable-shared",
            "--enable-threads",
            f"--with-tcl={prefix / 'lib'}",
            f"--x-includes={prefix / 'include'}",
            f"--x-libraries={prefix / 'lib' / X11_STAND_IN}",
            "--disable-xft",
            "--disable-xss",
            *cross_options(machine),
        ],
        cwd=unix,
        extra={"CFLAGS": CFLAGS, "CPPFLAGS": f"-I{prefix / 'include'}"},
    )
    run(["make", f"-j{jobs}", "libtk8.6.a"], cwd=unix)
    run(["make", "install-headers", "install-private-headers"], cwd=unix)
    shutil.copy2(unix / "libtk8.6.a", prefix / "lib" / "libtk8.6.a")
    _copy_script_library(source / "library", prefix / "lib" / "tk8.6", ("demos",))


def _tcltk_variables(prefix: Path) -> dict[str, str]:
    lib = prefix / "lib"
    return {
        "TCLTK_CFLAGS": f"-I{prefix / 'include'}",
        "TCLTK_LIBS": f"-L{lib} -ltk8.6 -ltcl8.6 -L{lib / X11_STAND_IN} -lX11 -lz -lpthread "
        "-ldl -lm",
    }


def _curses_variables(prefix: Path) -> dict[str, str]:
    cflags = f"-I{prefix / 'include' / 'ncursesw'} -D_GNU_SOURCE -DNCURSES_WIDECHAR"
    libs = f"-L{prefix / 'lib'}"
    return {
        "CURSES_CFLAGS": cflags,
        "CURSES_LIBS": f"{libs} -lncursesw",
        "PANEL_CFLAGS": cflags,
        "PANEL_LIBS": f"{libs} -lpanelw",
    }


def _flags(prefix: Path, library: str) -> tuple[str, str]:
    return f"-I{prefix / 'include'}", f"-L{prefix / 'lib'} -l{library}"


def _variables(name: str, library: str, extra_libs: str = "") -> Callable[[Path], dict[str, str]]:
    def variables(prefix: Path) -> dict[str, str]:
        cflags, libs = _flags(prefix, library)
        return {f"{name}_CFLAGS": cflags, f"{name}_LIBS": f"{libs} {extra_libs}".strip()}

    return variables


#: In build order. Names are the keys of ``--source NAME=...``.
LIBRARIES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in [
        Recipe(
            "zlib",
            "zlib (zlib, and gzip, zipfile, ...)",
            ("zlib-*.tar.*", "zlib_*.orig.tar.*"),
            _zlib,
            _variables("ZLIB", "z"),
        ),
        Recipe(
            "bzip2",
            "bz2",
            ("bzip2-*.tar.*", "bzip2_*.orig.tar.*"),
            _bzip2,
            _variables("BZIP2", "bz2"),
        ),
        Recipe(
            "xz",
            "lzma",
            ("xz-*.tar.*", "xz-utils_*.orig.tar.*"),
            _autotools(
                "--with-pic",
                "--disable-xz",
                "--disable-xzdec",
                "--disable-lzmadec",
                "--disable-lzmainfo",
                "--disable-lzma-links",
                "--disable-scripts",
                "--disable-doc",
                "--disable-nls",
            ),
            _variables("LIBLZMA", "lzma"),
        ),
        Recipe(
            "expat",
            "pyexpat, xml.etree, xml.sax",
            ("expat-*.tar.*", "expat_*.orig.tar.*"),
            _expat,
            _variables("LIBEXPAT", "expat"),
        ),
        Recipe(
            "mpdecimal",
            "decimal",
            ("mpdecimal-*.tar.*", "mpdecimal_*.orig.tar.*"),
            _mpdecimal,
            _variables("LIBMPDEC", "mpdec", "-lm"),
        ),
        Recipe(
            "libuuid",
            "uuid (_uuid)",
            ("util-linux-*.tar.*", "util-linux_*.orig.tar.*", "libuuid-*.tar.*"),
            _libuuid,
            _variables("LIBUUID", "uuid"),
        ),
        Recipe(
            "libffi",
            "ctypes",
            ("libffi-*.tar.*", "libffi_*.orig.tar.*"),
            _libffi,
            _variables("LIBFFI", "ffi"),
        ),
        Recipe(
            "sqlite",
            "sqlite3",
            ("sqlite-autoconf-*.tar.*", "sqlite3_*.orig.tar.*"),
            _sqlite,
            _variables("LIBSQLITE3", "sqlite3", "-lm"),
        ),
        Recipe("openssl", "ssl, hashlib", ("openssl-3*.tar.*", "openssl_3*.orig.tar.*"), _openssl),
        Recipe(
            "ncurses",
            "curses",
            ("ncurses-*.tar.*", "ncurses_*.orig.tar.*"),
            _ncurses,
            _curses_variables,
        ),
        Recipe(
            "readline",
            "readline (line editing in the interactive prompt)",
            ("readline-*.tar.*", "readline_*.orig.tar.*"),
            _readline,
            _variables("LIBREADLINE", "readline", "-lncursesw"),
        ),
        Recipe(
            "xorgproto",
            "tkinter (the X protocol's headers)",
            ("xorgproto-*.tar.*", "xorgproto_*.orig.tar.*", "x11proto-dev_*.deb"),
            _xorgproto,
        ),
        Recipe(
            "libx11",
            "tkinter (Xlib's headers; libX11 is the target system's)",
            ("libX11-*.tar.*", "libx11_*.orig.tar.*"),
            _libx11,
        ),
        Recipe("tcl", "tkinter (Tcl)", ("tcl8.6*-src.tar.*", "tcl8.6_*.orig.tar.*"), _tcl),
        Recipe(
            "tk",
            "tkinter (Tk)",
            ("tk8.6*-src.tar.*", "tk8.6_*.orig.tar.*"),
            _tk,
            _tcltk_variables,
        ),
    ]
}


def _profile_runtime(source: Path, prefix: Path, run: Run, jobs: int, machine: Machine) -> None:
    # compiler-rt's profile runtime (lib/profile), as its CMakeLists builds it for Linux, into
    # lib/pgo/libclang_rt.profile.a: what clang's driver links into a -fprofile-instr-generate
    # binary and zig's does not. Only the training run of a profile-guided build uses it.
    profile = source / "compiler-rt" / "lib" / "profile"
    units = sorted(profile.glob("*.c")) + sorted(profile.glob("*.cpp"))
    if not (profile / "InstrProfiling.c").is_file():
        from ingot.errors import IngotError

        raise IngotError(
            f"{source}: no compiler-rt/lib/profile/InstrProfiling.c",
            hint="give LLVM's source release (llvm-project-*.src.tar.xz, or Debian's "
            "llvm-toolchain-*.orig.tar.xz) of the LLVM that zig's clang is",
        )
    flags = [
        "-O2",
        "-fPIC",
        # Each binary linked with it (the interpreter, every extension module) keeps a copy of
        # its own: none exports or takes another's, so each writes its own counters.
        "-fvisibility=hidden",
        "-Wno-pedantic",
        f"-I{source / 'compiler-rt' / 'include'}",
        f"-I{profile.parent}",
        "-DCOMPILER_RT_HAS_ATOMICS=1",
        "-DCOMPILER_RT_HAS_FCNTL_LCK=1",
        "-DCOMPILER_RT_HAS_FLOCK=1",
        "-DCOMPILER_RT_HAS_UNAME=1",
    ]
    objects = []
    for unit in units:
        compiler = "$CXX" if unit.suffix == ".cpp" else "$CC"
        extra = ["-nostdinc++", "-fno-exceptions", "-fno-rtti"] if unit.suffix == ".cpp" else []
        run([compiler, *flags, *extra, "-c", unit.name, "-o", f"{unit.stem}.o"], cwd=profile)
        objects.append(f"{unit.stem}.o")
    target = prefix / "lib" / "pgo"
    target.mkdir(parents=True, exist_ok=True)
    (target / PROFILE_RUNTIME_FILE).unlink(missing_ok=True)
    run(["$AR", "rcs", str(target / PROFILE_RUNTIME_FILE), *objects], cwd=profile)


#: The file :data:`PROFILE_RUNTIME` makes, under ``lib/pgo`` of the libraries' prefix.
PROFILE_RUNTIME_FILE = "libclang_rt.profile.a"

#: compiler-rt's profile runtime, for a profile-guided build (not part of a runtime). Its source
#: is LLVM's, of the release zig's clang is (``zig cc --version``); of the whole tree only the
#: profile runtime is unpacked (:data:`PROFILE_RUNTIME_MEMBERS`).
PROFILE_RUNTIME = Recipe(
    "compiler-rt",
    "the profile runtime of PGO's training run (not in the runtime)",
    ("llvm-project-*.src.tar.*", "compiler-rt-*.src.tar.*", "llvm-toolchain-*.orig.tar.*"),
    _profile_runtime,
)
PROFILE_RUNTIME_MEMBERS = ("compiler-rt/lib/profile/", "compiler-rt/include/profile/")

#: What a build needs the sources of besides CPython and its libraries, by name.
TOOLS = {PROFILE_RUNTIME.name: PROFILE_RUNTIME}


def llvm_version_of(archive: Path) -> tuple[int, int, int] | None:
    """The LLVM release of an LLVM source tarball, from its name (``llvm-project-22.1.8.src``,
    ``llvm-toolchain-22_22.1.8.orig``, ``compiler-rt-22.1.8.src``)."""
    match = re.search(r"(?:^|[-_])(\d+)\.(\d+)\.(\d+)(?:[.~+-]|$)", archive.name)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


#: The training run of a profile-guided build: CPython's own PGO task (`-m test --pgo`: 44 test
#: modules, the default of CPython's Makefile), a worker per job.
PROFILE_TASK = "-m test --pgo --timeout=1200 -j{jobs}"

#: The profiles each instrumented binary writes: one file per binary (`%m`: the interpreter and
#: every extension module), merged across the training's processes.
PROFILE_FILE = "LLVM_PROFILE_FILE=code-%m.profclangr"

#: clang's IR-level profile-guided optimization: the instrumenting flag and the one that reads the
#: merged profile (`code.profclangd`, the name CPython's Makefile merges the profiles into).
PGO_GENERATE = "-fprofile-generate"
PGO_USE = "-fprofile-use=code.profclangd"


def build_python(
    source: Path,
    prefix: Path,
    libraries: Path,
    run: Run,
    jobs: int,
    machine: Machine,
    build_python: Path | None = None,
    llvm_profdata: Path | None = None,
) -> dict[str, int] | None:
    """Configures, compiles and installs CPython (``source``) into ``prefix``, optimized like
    distributions' builds: CPython's own ``-O3``, ThinLTO, and with ``llvm_profdata`` (a native
    build whose profile runtime is under ``libraries``) profile-guided
    (``--enable-optimizations``, trained by :data:`PROFILE_TASK`). Returns, for a profile-guided
    build, what the profile counted (:func:`_check_profile`)."""
    arguments, environment = python_configure_arguments(prefix, libraries, machine, build_python)
    patch_python(source)
    # The build's own tools (see :func:`patch_python`) linked at -O0.
    make = ["make", f"-j{jobs}", f"{TOOL_LDFLAGS_VARIABLE}=-O0"]
    if llvm_profdata is not None:
        arguments.append("--enable-optimizations")
        environment.update(
            LLVM_PROFDATA=str(llvm_profdata),
            INGOT_PROFILE_RUNTIME=str(libraries / "lib" / "pgo" / PROFILE_RUNTIME_FILE),
        )
        # A failing test of the training does not stop the build (3.11's Makefile ignores the
        # task's status, 3.13's does not: on a loaded machine one failed, and a fresh machine's
        # test command stopped); the profile it leaves is what matters, and _check_profile
        # checks it.
        task = f"{PROFILE_TASK.format(jobs=jobs)} || true"
        make += [
            f"PROFILE_TASK={task}",
            f"LLVM_PROF_FILE={PROFILE_FILE}",
            # clang's IR-level instrumentation rather than the front end's (configure's choice
            # for clang): its profile matches the code compiled again (the front end's left part
            # of 217 of the interpreter's files unmatched), and it can promote hot indirect calls
            # to direct ones that can be inlined (which it promoted here was not checked).
            # Measured (docs/benchmarks.md): 0.82x the time of the same build with the front
            # end's.
            # The instrumented build without LTO: what it links is run once, for the training,
            # and thrown away, so ThinLTO's code generation at link time there is wasted. The IR
            # is instrumented before ThinLTO's link-time stage (the same point with or without
            # it), so the profile matches the LTO build made with it (checked: the build log's
            # `hash mismatch` warnings, docs/runtimes.md). More counters of the values seen at
            # indirect calls than clang's default: with it, the training's processes ran out
            # ("LLVM Profile Warning: ... Running out of static counters", a thousand times,
            # mixed into the test workers' reports).
            f"PGO_PROF_GEN_FLAG={PGO_GENERATE} -fno-lto -mllvm -vp-counters-per-site=8",
            f"PGO_PROF_USE_FLAG={PGO_USE}",
        ]
    run(["./configure", *arguments], cwd=source, extra=environment)
    run(make, cwd=source, extra=environment)
    profile = _check_profile(source, run, llvm_profdata) if llvm_profdata is not None else None
    run(["make", "install"], cwd=source, extra=environment)
    return profile


#: Functions a training run must have counted, by source file (None: a function of the
#: interpreter's own, named as is) and name: the interpreter's loop, and one of an extension
#: module (each binary writes its own profile: :data:`PROFILE_FILE`), whose static functions the
#: profile names with their file (`<path>/Modules/_json.c;scanstring_unicode`).
PROFILED_FUNCTIONS = ((None, "_PyEval_EvalFrameDefault"), ("_json.c", "scanstring_unicode"))


def _check_profile(source: Path, run: Run, llvm_profdata: Path) -> dict[str, int]:
    """What the merged profile (``code.profclangd``, CPython's name) counted in each of
    :data:`PROFILED_FUNCTIONS` (the sum of its counters), and how many functions it has; an
    error if it counted nothing in one (a training run that did not run, or profiles that were
    not written)."""
    from ingot.errors import IngotError

    counts = {}
    for file, name in PROFILED_FUNCTIONS:
        function = f"{file}:{name}" if file else name
        shown = source / "profile-shown.txt"
        run(
            [
                str(llvm_profdata),
                "show",
                f"--function={name}",
                "--counts",
                f"--output={shown}",
                "code.profclangd",
            ],
            cwd=source,
        )
        text = shown.read_text()
        named = rf"(?:\S*/)?{re.escape(file)}[:;]{re.escape(name)}" if file else re.escape(name)
        # Its counters (IR-level instrumentation counts blocks, the entry among them): their sum.
        found = re.search(
            rf"^\s*{named}:\n((?:\s+.*\n)*?)\s+Block counts: \[([\d, ]*)\]", text, re.M
        )
        counted = (
            sum(int(count) for count in re.findall(r"\d+", found[2]))
            + sum(int(count) for count in re.findall(r"Function count: (\d+)", found[1]))
            if found
            else 0
        )
        if counted == 0:
            raise IngotError(
                f"{source / 'code.profclangd'}: the training run counted no call of {function}",
                hint="see the training run's output in the build log (--keep-build keeps the tree)",
            )
        counts[function] = counted
        total = re.search(r"^Total functions: (\d+)", text, re.M)
        counts["functions"] = int(total[1]) if total else 0
    return counts


#: Where `_tkinter` starts Tcl, and what it does first there: an executable carries Tcl's and Tk's
#: script libraries in its `tkinter` package, whose files it materializes (`tkinter/tcl8.6`,
#: `tkinter/tk8.6`); there, no path Tcl searches by itself leads to them. TCL_LIBRARY still
#: wins, and a runtime's own interpreter, whose `tkinter` has no `tcl8.6`, finds its
#: `lib/tcl8.6` as before (next to `bin/`). Tk finds `tk8.6` next to Tcl's library.
_TKAPP_INIT = "    if (Tcl_AppInit(v->interp) != TCL_OK) {\n"
_TCL_LIBRARY_BESIDE_TKINTER = """\
#ifndef MS_WINDOWS
    /* ingot: Tcl's script library beside the tkinter package (an executable's files). */
    if (getenv("TCL_LIBRARY") == NULL) {
        PyObject *tkinter = PyImport_ImportModule("tkinter");
        PyObject *file = tkinter ? PyObject_GetAttrString(tkinter, "__file__") : NULL;
        const char *path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (slash != NULL) {
            size_t length = (size_t)(slash - path);
            char *library = PyMem_Malloc(length + sizeof("/tcl" TCL_VERSION "/init.tcl"));
            if (library != NULL) {
                memcpy(library, path, length);
                strcpy(library + length, "/tcl" TCL_VERSION "/init.tcl");
                if (access(library, R_OK) == 0) {
                    library[length + sizeof("/tcl" TCL_VERSION) - 1] = '\\0';
                    Tcl_SetVar(v->interp, "tcl_library", library, TCL_GLOBAL_ONLY);
                }
                PyMem_Free(library);
            }
        }
        PyErr_Clear();
        Py_XDECREF(file);
        Py_XDECREF(tkinter);
    }
#endif
"""


#: The programs CPython's build links only to run them while it builds (freezing and deep-freezing
#: modules) or to test embedding, never installed; with LTO each is one more link-time code
#: generation of nearly the whole interpreter (about 170 s here, even at -O0), twice in a
#: profile-guided build. :func:`patch_python` gives their link lines the make variable
#: :data:`TOOL_LDFLAGS_VARIABLE`, which a build sets to -O0 (no link-time optimization), keeps a
#: profile-guided build's first-stage tools for its second stage, and drops `_testembed` from
#: `make`.
BUILD_TOOLS = ("_bootstrap_python", "Programs/_freeze_module", "Programs/_testembed")
#: Of :data:`BUILD_TOOLS`, those a profile-guided build's second stage takes from its first.
KEPT_TOOLS = BUILD_TOOLS[:2]
TOOL_LDFLAGS_VARIABLE = "INGOT_TOOL_LDFLAGS"


def _patch_tool_links(makefile: Path) -> None:
    """Adds ``$(INGOT_TOOL_LDFLAGS)`` to the link line of each of :data:`BUILD_TOOLS` in
    ``Makefile.pre.in`` (after the flags it has, so that its -O wins); a release without one of
    them (3.10 has no `_bootstrap_python`) keeps linking it as it did. `make` (``build_all``)
    no longer links `_testembed` (test_embed's program: no runtime has it, and the training
    does not run it); `make Programs/_testembed` still does."""
    text = makefile.read_text()
    # A profile-guided build's second stage keeps the first's tools: they are not deleted, and
    # they are made again only when missing (their objects become order-only prerequisites).
    # They then freeze the same modules into the same data (instrumented: each run writes a
    # profile nothing reads).
    for tool in KEPT_TOOLS:
        text = re.sub(
            rf"^({re.escape(tool)}:)([^\n|]*\n\t\$\(LINKCC\))", r"\1 |\2", text, count=1, flags=re.M
        )
    text = re.sub(
        r"^(clean-retain-profile:(?:[^\n]*\n)*?)\t-rm -f _bootstrap_python\n",
        r"\1",
        text,
        count=1,
        flags=re.M,
    )
    text = re.sub(
        r"^(clean-retain-profile:(?:[^\n]*\n)*?\t-rm -f Programs/_testembed) Programs/_freeze_module\n",
        r"\1\n",
        text,
        count=1,
        flags=re.M,
    )
    text = re.sub(
        r"^(build_all:(?:[^\n]*\\\n)*[^\n]*?)[ \t]+Programs/_testembed\b",
        r"\1",
        text,
        count=1,
        flags=re.M,
    )
    for tool in BUILD_TOOLS:
        text = re.sub(
            rf"^({re.escape(tool)}:[^\n]*\n\t\$\(LINKCC\) [^\n]*?) -o \$@",
            rf"\1 $({TOOL_LDFLAGS_VARIABLE}) -o $@",
            text,
            count=1,
            flags=re.M,
        )
    makefile.write_text(text)


def patch_python(source: Path) -> None:
    """What a runtime changes in CPython's source before configure: `_tkinter` finds Tcl's script
    library beside the `tkinter` package (:data:`_TCL_LIBRARY_BESIDE_TKINTER`); the build's own
    tools link without link-time optimization (:func:`_patch_tool_links`)."""
    makefile = source / "Makefile.pre.in"
    if makefile.is_file() and f"$({TOOL_LDFLAGS_VARIABLE})" not in makefile.read_text():
        _patch_tool_links(makefile)
    tkinter = source / "Modules" / "_tkinter.c"
    text = tkinter.read_text()
    if _TCL_LIBRARY_BESIDE_TKINTER not in text:
        if text.count(_TKAPP_INIT) != 1:
            from ingot.errors import IngotError

            raise IngotError(
                f"{tkinter}: no single `Tcl_AppInit(v->interp)` call to put the search for Tcl's "
                "library before",
                hint="this CPython's _tkinter differs from 3.10-3.14's; report it",
            )
        tkinter.write_text(text.replace(_TKAPP_INIT, _TCL_LIBRARY_BESIDE_TKINTER + _TKAPP_INIT))


#: CPython's own source release.
PYTHON_PATTERNS = ("Python-3.*.t*z", "python3.*_3.*.orig.tar.*")

#: A patch of Debian's series that fixes a vulnerability or backports an upstream fix: its file
#: names a CVE or a CPython issue, or its header (DEP-3) names a CPython issue or commit.
_UPSTREAM_FIX_NAME = re.compile(r"CVE-\d{4}-\d+|gh-\d+", re.IGNORECASE)
_UPSTREAM_FIX_HEADER = re.compile(
    r"^(Description|Subject):.*\bgh-\d+|^(Origin|Bug-Upstream|Bug):.*github\.com/python/cpython",
    re.IGNORECASE | re.MULTILINE,
)
_VENDOR_ONLY = re.compile(r"^Origin:\s*vendor", re.IGNORECASE | re.MULTILINE)


def security_patches(patches: Path) -> list[str]:
    """The patches of Debian's series in ``patches`` (its ``debian/patches``) a runtime takes,
    in the series' order: those that fix vulnerabilities or backport upstream fixes, not the
    distribution's layout and policy (install schemes, multiarch, ensurepip, its tests' skips:
    ``Origin: vendor``)."""
    names = [
        line.split("#", 1)[0].strip() for line in (patches / "series").read_text().splitlines()
    ]
    chosen = []
    for name in filter(None, names):
        header = (patches / name).read_text(errors="replace")[:4000]
        if _VENDOR_ONLY.search(header):
            continue
        if _UPSTREAM_FIX_NAME.search(name) or _UPSTREAM_FIX_HEADER.search(header):
            chosen.append(name)
    return chosen


def python_version_of(source: Path) -> tuple[int, int, int]:
    """The version of a CPython source tree (``Include/patchlevel.h``)."""
    text = (source / "Include" / "patchlevel.h").read_text()
    numbers = [
        int(re.search(rf"#define\s+PY_{name}_VERSION\s+(\d+)", text).group(1))  # type: ignore[union-attr]
        for name in ("MAJOR", "MINOR", "MICRO")
    ]
    return numbers[0], numbers[1], numbers[2]


def python_configure_arguments(
    prefix: Path, libraries: Path, machine: Machine, build_python: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    """CPython's configure options and environment for a static interpreter whose extension
    modules link the libraries under ``libraries`` statically. A cross build (``machine`` is not
    this one) needs ``build_python``, an interpreter of the same version that runs here (it
    compiles the standard library and generates sources), and is told what configure would
    otherwise find out by running a program or looking at this machine's files."""
    # The system (here: the runtime's own) expat and mpdecimal rather than CPython's bundled
    # copies, which CPython deprecates (3.13) and no longer falls back to implicitly (3.15).
    arguments = [
        f"--prefix={prefix}",
        "--disable-shared",
        "--without-ensurepip",
        f"--with-openssl={libraries}",
        # 3.10's setup.py (3.11 reads TCLTK_CFLAGS and TCLTK_LIBS).
        f"--with-tcltk-includes={_tcltk_variables(libraries)['TCLTK_CFLAGS']}",
        f"--with-tcltk-libs={_tcltk_variables(libraries)['TCLTK_LIBS']}",
        "--with-openssl-rpath=no",
        "--with-system-expat",
        "--with-system-libmpdec",
        # Link-time optimization across the interpreter's objects (ThinLTO, zig's clang and lld):
        # configure turns it on for a compiler named *clang*, with llvm-ar (both zig's).
        "--with-lto=thin",
        "CC=$CLANG",
    ]
    cross = cross_options(machine)
    if cross:
        assert build_python is not None, "a cross build needs the build machine's interpreter"
        arguments += [*cross, f"--with-build-python={build_python}"]
    environment = {
        # zig makes -Wdate-time an error (Modules/getbuildinfo.c uses __DATE__). No -O: CPython's
        # own (-O3) holds. No debug information (-g0; zig's clang then writes none, although
        # CPython's LTO flags add -g later on the line: libpython3.13.a 52 -> 17 MB): the
        # launcher that executables run is stripped, and with it each ThinLTO link (the
        # interpreter's, the launcher's) generated code for it.
        "CFLAGS": "-Wno-error=date-time -g0",
        # include/ncursesw: where ncurses puts curses.h and term.h (CPython's configure looks in
        # /usr/include/ncursesw, which the toolchain drops).
        # include/uuid: where util-linux puts uuid.h (3.10's setup.py looks for uuid.h).
        "CPPFLAGS": f"-I{libraries / 'include'} -I{libraries / 'include' / 'ncursesw'} "
        f"-I{libraries / 'include' / 'uuid'}",
        "LDFLAGS": f"-L{libraries / 'lib'}",
        # The optimization level of ThinLTO's link-time stage: zig's clang links in the mode its
        # last -O names, and CPython's link line has none: the mode of no -O, -O0's (on a
        # two-file program, no function inlined across files). Recorded in sysconfig
        # (PY_LDFLAGS_NODIST): the launcher links libpython with it.
        "LDFLAGS_NODIST": "-O3",
        # x86-64 and aarch64 read unaligned words. configure's test for it runs a misaligned
        # read, compiled with its CFLAGS (no -O here): zig's clang at -O0 traps undefined
        # behaviour, the test "fails", and CPython then hashes str and bytes with FNV instead
        # of SipHash (no protection from hash flooding, and slower dicts of strings).
        "ac_cv_aligned_required": "no",
    }
    if cross:
        # What configure finds out by running a program, for Linux with glibc on either
        # machine (its cross-build defaults are the cautious ones): /dev/ptmx (not /dev/ptc),
        # getaddrinfo, sem_getvalue and tzset that work, computed gotos (the evaluation loop's
        # dispatch: without them 3.13's interpreter is slower), PTHREAD_SCOPE_SYSTEM.
        environment.update(
            ac_cv_file__dev_ptmx="yes",
            ac_cv_file__dev_ptc="no",
            ac_cv_buggy_getaddrinfo="no",
            ac_cv_broken_sem_getvalue="no",
            ac_cv_working_tzset="yes",
            ac_cv_computed_gotos="yes",
            ac_cv_pthread_system_supported="yes",
        )
    for recipe in LIBRARIES.values():
        environment.update(recipe.configure_environment(libraries))
    return arguments, environment
