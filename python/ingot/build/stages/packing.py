"""The pack stage of a build: the spec's settings as :class:`ingot.build.archive.pack.PackOptions`, the
launch configuration the launcher reads, and a syntax error of the app's code shown where the
user wrote it."""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Iterable
from pathlib import Path

from ingot._ingot import LAUNCH_CONFIG, LAUNCH_CONFIG_VERSION, launch_config_json
from ingot.build.archive.buildcache import BuildMemo
from ingot.build.archive.pack import PackOptions, PackResult, pack
from ingot.build.archive.prefetch import Prefetch
from ingot.build.archive.sbom import Facts
from ingot.build.archive.stdlib_layout import Layout, for_target
from ingot.build.progress import Ticker
from ingot.build.resolve.settings import Settings, compression_levels
from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say
from ingot.build.stages.selection import Selection
from ingot.build.stages.staging import read_wheels
from ingot.errors import BuildError, CompileError
from ingot.stdlib import DEFAULT_STDLIB_EXCLUDES, is_excluded

__all__ = [
    "base_options",
    "launch_config",
    "pack_archive",
    "stdlib_excludes",
    "stdlib_layout",
]


def pack_archive(
    spec: Spec,
    base: PackOptions,
    roots: list[Path],
    selection: Selection,
    archive: Path,
    say: Say,
    ticker: Ticker | None = None,
    early: Prefetch | None = None,
) -> PackResult:
    """Packs what the app can reach from ``roots`` into ``archive`` with the options ``base``
    (:func:`base_options`) and what the stages before found (``early``: the pool
    :func:`ingot.build.archive.pack.stdlib_pool` started on ``base``), with its bill of
    materials."""
    settings = spec.plan.settings
    options = dataclasses.replace(
        base,
        directories=roots,
        exclude=tuple(settings.exclude),
        compression_level=compression_levels(settings.compress)[0],
        large_compression_level=compression_levels(settings.compress)[1],
        native_compression_level=compression_levels(settings.compress)[2],
        compress_start=bool(settings.compress_start),
        run_dependencies=settings.run_dependencies is not False,
        extra_files={LAUNCH_CONFIG: launch_config(spec)},
        files_packages=selection.files_packages,
        added_files=selection.prepared,
        stdlib_exclude=stdlib_excludes(settings, selection.stdlib_imported),
        strict_directories=roots[:1],
        keep=tuple(settings.include),
        progress=say,
        ticker=ticker,
        stdlib_pool=early,
        sbom=Facts(
            name=spec.plan.name,
            machine=spec.target.machine,
            runtime=spec.target.runtime,
            runtime_sources=spec.target.runtime_sources,
            wheels=read_wheels(roots),
        ),
    )
    try:
        return pack(archive, options)
    except CompileError as error:
        raise _compile_error(error, archive.parent / "app", spec) from None


def base_options(spec: Spec, memo: BuildMemo) -> PackOptions:
    """The pack options that depend on the spec alone (what the stdlib pool needs, and the
    standard library's layout), made once per build."""
    settings = spec.plan.settings
    return PackOptions(
        directories=[],
        stdlib_exclude=stdlib_excludes(settings),
        optimize_levels=tuple(settings.optimize or (0,)),
        precompile_regexes=settings.precompile_regexes is not False,
        entry_modules=[spec.plan.run["module"]],
        main_module=spec.plan.run["module"] if spec.plan.run["kind"] == "module" else None,
        prune=True,
        cache=memo,
        stdlib_layout=stdlib_layout(spec),
        environment=spec.environment,  # (read while resolving, not now)
    )


def stdlib_layout(spec: Spec) -> Layout:
    """The standard library the target's archive takes: of the interpreter the build runs under,
    or, for another architecture, of the target runtime's CPython (read from its files)."""
    return for_target(spec.target.stdlib_prefix, spec.target.machine)


def launch_config(spec: Spec) -> bytes:
    """``__ingot__/launch.json``: what the launcher runs, and how."""
    launch: dict[str, object] = {"version": LAUNCH_CONFIG_VERSION, "run": spec.plan.run}
    if spec.target.runtime is not None:
        # Which runtime the executable carries (the launcher ignores it; ingot inspect shows it).
        launch["runtime"] = spec.target.runtime
    if spec.plan.settings.fast_exit is not None:
        launch["fast_exit"] = spec.plan.settings.fast_exit
    if spec.plan.settings.python_mode is False:
        launch["python_mode"] = False  # self-calls run the application too
    if spec.plan.settings.filesystem_imports is False:
        launch["filesystem_imports"] = False  # sealed: the archive alone
    return launch_config_json(launch)  # the launcher's own struct checks and writes it


def stdlib_excludes(settings: Settings, imported: Iterable[str] = ()) -> tuple[str, ...]:
    """The default stdlib exclusions minus those an ``include`` pattern names or the
    application's code ``imported`` (:attr:`Selection.stdlib_imported`), plus ``exclude``."""
    wanted = [*settings.include, *imported]
    kept = [
        pattern
        for pattern in DEFAULT_STDLIB_EXCLUDES
        if not any(is_excluded(name, (pattern,)) for name in wanted)
    ]
    return (*kept, *settings.exclude)


def _compile_error(error: CompileError, app: Path, spec: Spec) -> BuildError:
    """The SyntaxError of the application's module, shown as Python shows it, at the user's
    file (the build compiles a staged copy)."""
    staged = Path(error.path)
    shown = staged
    for name, source in spec.plan.copies:
        copy = app / name
        if staged == copy:
            shown = source
        elif source.is_dir() and staged.is_relative_to(copy):
            shown = source / staged.relative_to(copy)
    if shown == staged and staged.is_relative_to(app):
        where = f" (from the project {spec.plan.pip_project})" if spec.plan.pip_project else ""
        shown = Path(f"{staged.relative_to(app)}{where}")
    syntax = error.error
    syntax.filename = str(shown)
    text = "".join(traceback.format_exception_only(type(syntax), syntax)).rstrip("\n")
    return BuildError(
        f"{error.name} does not compile:\n{text}",
        hint=f"fix it, or leave it out with --exclude {error.name}",
    )
