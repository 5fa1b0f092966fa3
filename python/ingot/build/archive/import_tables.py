"""The build's tables of imports no source shows, and its rule for test suites: what native code
imports by name (:data:`NATIVE_IMPORTS`), what packages import by computed names
(:data:`COMPUTED_IMPORTS`) or call back (:data:`CALLBACK_IMPORTS`), what is optional
(:data:`OPTIONAL_IMPORTS`), the names in binaries that are no imports, and which subpackages
and files are a package's tests (:func:`in_test_package`, :func:`suite_of_file`)."""

from __future__ import annotations

__all__ = [
    "BINARY_NAMES_NOT_IMPORTS",
    "CALLBACK_IMPORTS",
    "CALLED_BACK",
    "COMPUTED_IMPORTS",
    "NATIVE_IMPORTS",
    "OPTIONAL_IMPORTS",
    "TEST_PACKAGES",
    "in_test_package",
    "suite_of_file",
]


#: Modules that native code imports by name, which no Python source shows: the interpreter's C
#: code (the codec registry and standard streams at start-up, exception display and warnings,
#: ``time.strptime``, pickling, ``python -m``) and the launcher's boot code and importer support
#: (their module-level imports; what they import lazily, the application imports itself). The
#: launcher's binary cannot be scanned for these: it holds ``sys.stdlib_module_names``, every
#: module's name. Extension modules' binaries are scanned (see
#: :func:`ingot.build.archive.reach.reach`).
NATIVE_IMPORTS = (
    "encodings",
    "codecs",
    "io",
    "abc",
    "warnings",
    "traceback",
    "linecache",
    "tokenize",
    "_strptime",
    "copyreg",
    "_compat_pickle",
    "_weakrefset",
    "runpy",
    "importlib.util",
    "importlib.machinery",
    "zipimport",
    "atexit",
    "re",
    "posixpath",
)

#: Modules of the standard library that import others by names computed at run time: module ->
#: (patterns of the names it may import, why). A package matched by its own pattern is carried
#: whole.
COMPUTED_IMPORTS = {
    "encodings": (
        ("encodings.*",),
        "codecs are looked up by name at run time (the locale's, a file's, str.encode's)",
    ),
    "sysconfig": (
        ("_sysconfigdata_*",),
        "its build-time variables are in a module named after the platform",
    ),
}

#: Imports inside a standard-library function that only another module calls: module ->
#: {imported module: (the caller, why)}. The import is followed once the caller is reached, not
#: when the module holding it is: the interpreter always loads ``importlib._bootstrap_external``,
#: and following its lazy imports would carry importlib.metadata and importlib.resources' readers,
#: and behind them email, zipfile, tarfile, lzma, csv and pathlib (0.8 MiB), into every executable.
CALLBACK_IMPORTS = {
    "importlib._bootstrap_external": {
        "importlib.metadata": (
            "importlib.metadata",
            (
                "PathFinder.find_distributions is called by importlib.metadata "
                "(Distribution.discover)"
            ),
        ),
        "importlib.readers": (
            "importlib.resources",
            (
                "FileLoader's and NamespaceLoader's get_resource_reader are called by "
                "importlib.resources"
            ),
        ),
    },
    "zipimport": {
        "importlib.readers": (
            "importlib.resources",
            "zipimporter.get_resource_reader is called by importlib.resources",
        ),
    },
}
#: Imports inside a standard-library function that the function does without, saying so:
#: module -> {imported module: why}. Not followed; ``--include`` carries them.
OPTIONAL_IMPORTS = {
    "pydoc": {
        "pydoc_data.topics": (
            "help()'s topic and keyword pages (215 KiB), which pydoc reports "
            "as not available when they are missing"
        ),
    },
}

CALLED_BACK: dict[str, list[str]] = {}
for _imports in CALLBACK_IMPORTS.values():
    for _imported, (_caller, _) in _imports.items():
        CALLED_BACK.setdefault(_caller, []).append(_imported)

#: NUL-terminated names in standard-library binaries that are method or attribute names there,
#: not imports: name -> where. Argument Clinic methods are recognized by their signatures
#: (:func:`binary_names`); these have none. ``readline`` would carry GNU readline and ncurses.
BINARY_NAMES_NOT_IMPORTS = {
    "readline": "mmap.mmap.readline and other file-like types' readline methods",
    "code": "_elementtree's ParseError.code and other error codes",
    "this": "the common word",
}

#: Subpackages of a package that hold its test suite: left out unless something imports them.
TEST_PACKAGES = ("tests", "test", "testing")


def in_test_package(name: str) -> bool:
    """Whether module ``name`` is part of a package's test suite: below its top-level package, a
    module or package named as in :data:`TEST_PACKAGES` (``pkg.tests``, ``pkg.sub.testing``), or
    in one (``pkg.tests.test_a``). The rule for what a package's tests are, for the build (what
    a package carried whole leaves out), its warnings and ``ingot inspect --sizes``; a file
    belongs to the test package whose directory holds it (:func:`suite_of_file`)."""
    return any(part in TEST_PACKAGES for part in name.split(".")[1:])


def suite_of_file(path: str) -> str | None:
    """The test package (:func:`in_test_package`: ``scipy.special.tests``) whose directory holds
    the file at ``path`` (relative to its import root: ``scipy/special/tests/data/boost.npz``), or
    None."""
    directories = path.split("/")[:-1]
    for end in range(2, len(directories) + 1):
        package = ".".join(directories[:end])
        if in_test_package(package):
            return package
    return None
