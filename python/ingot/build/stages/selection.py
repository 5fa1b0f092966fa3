"""The select stage of a build: which packages need real files (the files policy), what code of the others
looks like it does, which of the application's imports the build does not carry, and the
preparations the files packages get."""

from __future__ import annotations

import _imp
import ast
import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ingot.build.analysis import filescan, nativefiles, path_sinks
from ingot.build.analysis.policy import PREPARATIONS, resolve_policy, top_level_names
from ingot.build.archive.buildcache import NO_CACHE, BuildMemo
from ingot.build.archive.import_tables import in_test_package
from ingot.build.archive.stdlib_layout import Layout
from ingot.build.resolve.environment import Environment
from ingot.build.resolve.settings import Settings
from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say
from ingot.build.sandbox import Sandbox
from ingot.errors import BuildError
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES, is_excluded

__all__ = ["Selection", "select"]


@dataclass(frozen=True)
class Selection:
    """What the select stage decided: the ``files`` packages, and what to warn about."""

    files_packages: list[str]
    warnings: list[str]
    #: What the preparations made, to carry as if it were in a staged root: (the root, the
    #: name relative to it, the file made, outside the root). The roots stay as staged.
    prepared: tuple[tuple[Path, str, Path], ...] = ()
    #: Standard-library modules the defaults leave out (tkinter, turtle, ...) that the
    #: application's own code imports: carried.
    stdlib_imported: list[str] = field(default_factory=list)


def select(
    spec: Spec,
    roots: list[Path],
    scratch: Path,
    say: Say,
    layout: Layout,
    memo: BuildMemo = NO_CACHE,
) -> Selection:
    """The files packages of a build over the staged ``roots`` (the app's first), the
    warnings about code that needs real files and imports the build does not carry, and what
    the files packages' preparations made from their staged copies (into ``scratch``; the
    roots, which may be the build cache's, are left as they are). ``layout``: the standard
    library the archive takes. Each module's scan is kept in the build cache (``memo``)."""
    files_packages, warnings = _file_policy(
        spec.plan.settings, roots, say, executable=not spec.archive_only, memo=memo
    )
    trees = _app_trees(roots[0])
    warnings += _missing_imports(
        roots, spec.plan.settings.allow_missing, spec.plan.settings.exclude, trees
    )
    prepared: list[tuple[Path, str, Path]] = []
    if spec.plan.settings.run_dependencies is False:
        skipped = [name for name in files_packages if name in PREPARATIONS]
        if skipped:
            say(
                f"not prepared (--no-run-dependencies): {', '.join(skipped)}; without it, "
                + "; ".join(PREPARATIONS[name].why for name in skipped)
            )
    else:
        warnings += _prepare(files_packages, roots, say, prepared, spec.environment, scratch)
    imported = _default_excluded_imports(roots[0], layout, trees)
    if imported:
        say(
            f"carrying what the defaults leave out of the standard library, as the code imports it: {', '.join(imported)}"
        )
    return Selection(files_packages, warnings, tuple(prepared), imported)


def _default_excluded_imports(
    app: Path, layout: Layout, trees: list[tuple[str, ast.Module]] | None = None
) -> list[str]:
    """The standard-library modules the defaults leave out (:data:`DEFAULT_STDLIB_EXCLUDES`) that
    the application's own code (``app``) imports anywhere: the build carries them. BuildError
    when the target's standard library (``layout``) lacks one, or a module it imports at its
    top level, unconditionally (tkinter's ``_tkinter``, which a CPython built without Tcl/Tk
    lacks): the executable would stop at that import."""
    wanted: dict[str, str] = {}
    for relative, tree in trees if trees is not None else _app_trees(app):
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            for name in names:
                top = name.split(".")[0]
                own = (app / f"{top}.py").exists() or (app / top).is_dir()  # (its own test.py)
                if (
                    not own
                    and top in sys.stdlib_module_names
                    and is_excluded(name, DEFAULT_STDLIB_EXCLUDES)
                ):
                    where = f"{relative}:{getattr(node, 'lineno', 0)}"
                    wanted.setdefault(name, where)
    carried = set(wanted)
    queue = sorted(wanted.items())
    while queue:
        name, where = queue.pop()
        needs, lacking = _needs(name, layout)
        if lacking is not None:
            raise BuildError(
                f"{where} imports `{name}`, but {lacking}: the executable would stop there "
                "with ModuleNotFoundError",
                hint="build with a Python that has it (--python local, if this machine's "
                "does), or leave the import out",
            )
        for needed in needs:  # (turtle needs tkinter, which needs _tkinter)
            if needed not in carried:
                carried.add(needed)
                if not needed.startswith("_"):  # (an extension module, found: nothing to read)
                    queue.append((needed, where))
    return sorted(carried)


def _needs(name: str, layout: Layout) -> tuple[list[str], str | None]:
    """The extension modules the top level of standard-library module ``name`` imports
    unconditionally (tkinter's ``_tkinter``), and what of them, or of the module, the target's
    standard library lacks (None: nothing)."""
    top = name.split(".")[0]
    package, module = layout.stdlib / top, layout.stdlib / f"{top}.py"
    source = package / "__init__.py" if package.is_dir() else module
    if not source.is_file():
        return [], f"the target's standard library ({layout.owner}) has no `{top}`"
    try:
        body = ast.parse(source.read_bytes()).body
    except (OSError, SyntaxError, ValueError):
        return [], None
    needs: list[str] = []
    for node in body:  # (module level, not in try/if)
        for needed in [a.name for a in node.names] if isinstance(node, ast.Import) else []:
            if not needed.startswith("_"):
                if is_excluded(needed, DEFAULT_STDLIB_EXCLUDES):
                    needs.append(needed)  # (another module the defaults leave out)
                continue
            if needed not in sys.builtin_module_names:
                found = layout.lib_dynload is not None and any(
                    (layout.lib_dynload / f"{needed}{suffix}").is_file()
                    for suffix in layout.extension_suffixes
                )
                if not found:
                    return needs, (
                        f"`{top}` needs `{needed}`, which the target ({layout.owner}) was built "
                        "without"
                    )
                needs.append(needed)
    return needs, None


def _file_policy(
    config: Settings, roots: list[Path], say: Say, *, executable: bool, memo: BuildMemo
) -> tuple[list[str], list[str]]:
    """The ``files`` packages of a build (configured + the built-in table), and warnings for code
    of the other collected packages that hands paths built from ``__file__`` to what needs real
    files: in an executable, what the launcher cannot answer from the archive (writing, C code,
    other processes); in an archive run by python, any file access."""

    present: dict[str, Path] = {}
    for root in roots:
        for name in sorted(top_level_names(root)):
            present.setdefault(name, root)
    decision = resolve_policy(
        present, files=config.files, memory=config.memory, executable=executable
    )
    for name, root in sorted(present.items()):
        if name not in decision.files and name not in config.memory:
            why = nativefiles.opens_own_files(root, name)
            if why:
                decision.files.add(name)
                decision.reasons[name] = f"zero-config: native code opens its files by path: {why}"
    for name in sorted(decision.files):
        say(f"files policy: {name} ({decision.reasons[name]})")
    warnings: list[str] = []
    by_root: dict[Path, list[str]] = {}
    for name, root in present.items():
        if name not in decision.files:
            by_root.setdefault(root, []).append(name)
    findings = [
        finding
        for root, names in sorted(by_root.items())
        for finding in filescan.scan_tree(root, sorted(names), scan=_cached_scan(memo))
        if not _in_tests(finding.path)
    ]
    answered = path_sinks.SERVED_FROM_ARCHIVE if executable else frozenset()
    served = sorted({finding.package for finding in findings if finding.call in answered})
    if served:
        say("reads files next to its modules, answered from the executable: " + ", ".join(served))
    by_package: dict[str, list[filescan.Finding]] = {}
    for finding in findings:
        if finding.call not in answered:
            by_package.setdefault(finding.package, []).append(finding)
    for package, found in sorted(by_package.items()):
        shown = found[:3]
        warnings += [
            filescan.format_finding(finding).removeprefix("warning: ") for finding in shown
        ]
        if len(found) > len(shown):
            warnings.append(f"{package}: {len(found) - len(shown)} more such uses of __file__")
    return sorted(decision.files), warnings


def _cached_scan(memo: BuildMemo) -> Callable[[bytes, str, str], list[filescan.Finding]]:
    """:func:`ingot.build.analysis.filescan.scan_source` through the build cache."""

    def scan(source: bytes, path: str, package: str) -> list[filescan.Finding]:
        rows = memo.remember(
            "filescan",
            [path, package, source],
            lambda: [
                dataclasses.astuple(finding)
                for finding in filescan.scan_source(source, path, package)
            ],
        )
        return [filescan.Finding(*row) for row in rows]

    return scan


def _app_trees(app: Path) -> list[tuple[str, ast.Module]]:
    """The syntax tree of each module of the application's own code (``app``), with its path
    relative to it, in path order; a file that does not parse is left out (the packer says so)."""
    trees = []
    for file in sorted(app.rglob("*.py")):
        try:
            trees.append(
                (file.relative_to(app).as_posix(), ast.parse(file.read_bytes(), str(file)))
            )
        except (OSError, SyntaxError, ValueError):
            continue
    return trees


def _missing_imports(
    roots: list[Path],
    allowed: list[str],
    excluded: list[str] | None = None,
    trees: list[tuple[str, ast.Module]] | None = None,
) -> list[str]:
    """The modules the application's own code (``roots[0]``) imports at module level,
    unconditionally, that neither the build nor the standard library has (nor the interpreter,
    built in or frozen: ``__hello__``): the executable would
    stop at that import. BuildError naming each (file and line), unless ``allowed`` names it:
    then a warning. (Imports in ``try`` blocks, under ``if`` (a platform, ``TYPE_CHECKING``) or
    in functions may be optional.)"""

    present = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    for root in roots:
        present |= top_level_names(root)
    missing: dict[str, str] = {}
    for relative, tree in trees if trees is not None else _app_trees(roots[0]):
        imported = [
            (alias.name, node.lineno)
            for node in tree.body
            if isinstance(node, ast.Import)
            for alias in node.names
        ]
        imported += [
            (node.module, node.lineno)
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        ]
        for name, line in imported:
            top = name.split(".")[0]
            if top not in present and top != "__future__" and not _imp.is_frozen(top):
                missing.setdefault(top, f"{relative}:{line}")
            elif excluded and is_excluded(name, excluded):
                missing.setdefault(name, f"{relative}:{line} (left out by --exclude)")
    said = [
        f"{where} imports `{name}`, which the build does not carry: the executable would stop "
        "there with ModuleNotFoundError"
        for name, where in sorted(missing.items())
    ]
    refused = [text for text, name in zip(said, sorted(missing)) if name not in allowed]
    if refused:
        names = [name for name in sorted(missing) if name not in allowed]
        raise BuildError(
            "\n  ".join(
                ["the application's own code imports what the build cannot carry:", *refused]
            ),
            hint=(
                "keep what the code imports: remove the --exclude (or [tool.ingot] exclude) "
                "pattern that matches it; "
                if any("--exclude" in missing[name] for name in names)
                else ""
            )
            + "add the distribution that provides it to the dependencies (a script's "
            "`# /// script` block, [project] dependencies, or --dependency); or, if the "
            "executable never reaches that import, --allow-missing "
            + " --allow-missing ".join(names),
        )
    return [
        f"{text} (allowed: --allow-missing {name})" for text, name in zip(said, sorted(missing))
    ]


def _in_tests(path: str) -> bool:
    """Whether a package's source file (``pkg/tests/test_a.py``, ``pkg/testing.py``) is a module
    of its test suite, which the build leaves out unless something imports it
    (:func:`ingot.build.archive.import_tables.in_test_package`)."""
    return in_test_package(path.removesuffix(".py").replace("/", "."))


def _prepare(
    files_packages: list[str],
    roots: list[Path],
    say: Say,
    prepared: list[tuple[Path, str, Path]],
    environment: Environment,
    scratch: Path,
) -> list[str]:
    """Runs the built-in preparations (:data:`ingot.build.analysis.policy.PREPARATIONS`) of the ``files``
    packages, confined (:mod:`ingot.build.sandbox`: their staged directories to read, a
    directory of its own to write), and keeps the files each made in ``scratch``, each listed
    in ``prepared`` with the staged root and the name it is carried under (one the package
    holds already is never replaced); returns warnings for those that failed (the package still
    works, as it would without the files the step makes)."""

    warnings = []
    sandbox = Sandbox(environment)
    for package in files_packages:
        preparation = PREPARATIONS.get(package)
        root = next((root for root in roots if (root / package).is_dir()), None)
        if preparation is None or root is None:
            continue
        code = "import sys\nsys.path[0] = sys.argv[1]\n" + preparation.code  # (not the cwd)
        done = sandbox.run(
            [sys.executable, "-S", "-s", "-c", code, str(root), "{out}"],
            readable=[root],
            extra={"PYTHONHASHSEED": "0"},
            timeout=300,
            collect=preparation.makes,
        )
        failure = done.error or (
            None
            if done.returncode == 0
            else (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        )
        if failure is None:
            try:
                for name, content in sorted(done.collected.items()):
                    if (root / package / name).exists():  # (what it holds is never replaced)
                        continue
                    made = scratch / package / name
                    made.parent.mkdir(parents=True, exist_ok=True)
                    made.write_bytes(content)
                    prepared.append((root, f"{package}/{name}", made))
            except OSError as error:
                failure = str(error)
        if failure is None:
            where = sandbox.confinement.describe() if sandbox.confinement else "unconfined"
            say(f"prepared {package}: {preparation.why} (ran {where})")
        else:
            warnings.append(
                f"{package}: the build-time preparation failed ({failure}); "
                f"without it, {preparation.why}"
            )
    return warnings
