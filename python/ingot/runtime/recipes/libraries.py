"""How each library of a runtime is built from its source release: the libraries the standard
library's extension modules use (CPython itself: :mod:`ingot.runtime.recipes.cpython`), with the runtime's toolchain
(:mod:`ingot.runtime.toolchain`), all static and position-independent, so that each extension module
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
    "cross_options",
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
