"""One build, resolved: the :class:`Spec` every stage of :mod:`ingot.build.pipeline` reads.

:func:`resolve` turns what the command line asked (a :class:`ingot.build.resolve.settings.Request`),
the project's ``[tool.ingot]`` and ``[project]``, a script's PEP 723 block and the target (the
Python and launcher the executable gets, :mod:`ingot.build.resolve.target`) into one frozen spec. After
it, nothing reads the command line or the environment: a build under a runtime gets the spec as
JSON (:meth:`Spec.to_json`), and its stages take the spec and return their products.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingot.build.resolve.inputs import console_script_plan, plan_source
from ingot.build.resolve.settings import Request, Settings
from ingot.build.resolve.target import Say, Target, resolve_target
from ingot.errors import BuildError

__all__ = ["Say", "Spec", "resolve"]

#: The spec's JSON format; a child of another ingot refuses a spec it cannot read.
SPEC_FORMAT = 1


@dataclass(frozen=True)
class Spec:
    """A build, resolved: what to run, what to copy or pip-install, how, and where to write."""

    name: str
    run: dict[str, str]  # launch.json "run": kind, module (, function)
    settings: Settings  # the settings in effect (project's, overridden by options)
    output: Path
    default_output: bool
    target: Target
    copies: tuple[tuple[str, Path], ...] = ()  # (name in the app's root, source)
    roots: tuple[Path, ...] = ()  # directories of packages, collected as they are
    pip_project: Path | None = None  # pip install --no-deps this directory
    requirements: tuple[str, ...] = ()
    requirement_files: tuple[Path, ...] = ()
    pinned: bool = False  # the requirements pin every distribution needed (Plan.pinned)
    notes: tuple[str, ...] = ()  # what the build should tell the user
    force: bool = False  # replace an output that ingot did not write
    cache: bool = True  # use the build cache (:mod:`ingot.build.archive.buildcache`)
    refresh: bool = False  # install the dependencies again, not from the build cache

    @property
    def archive_only(self) -> bool:
        return self.target.launcher is None

    def to_json(self) -> str:
        return json.dumps({"format": SPEC_FORMAT, "spec": _encode(self)}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        if data.get("format") != SPEC_FORMAT:
            raise BuildError(f"a build spec of format {data.get('format')}, not {SPEC_FORMAT}")
        spec: Spec = _decode(cls, data["spec"])
        return spec


def _encode(value: object) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return {key: _encode(item) for key, item in value.items()}
    return value


def _decode(kind: Any, value: Any) -> Any:
    """``value`` (as :func:`_encode` wrote it) as the type ``kind``."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if dataclasses.is_dataclass(kind):
        hints, factory = typing.get_type_hints(kind), typing.cast(Any, kind)
        return factory(**{name: _decode(hints[name], item) for name, item in value.items()})
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        for option in arguments:
            if option is not type(None) and _fits(option, value):
                return _decode(option, value)
        raise BuildError(f"a build spec holds {value!r} where it expects {kind}")
    if origin is list:
        return [_decode(arguments[0], item) for item in value]
    if origin is tuple:
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(_decode(arguments[0], item) for item in value)
        return tuple(_decode(option, item) for option, item in zip(arguments, value))
    if kind is Path:
        return Path(value)
    return value


def _fits(kind: Any, value: Any) -> bool:
    base = typing.get_origin(kind) or kind
    if base in (tuple, list):
        return isinstance(value, list)
    if base is Path:
        return isinstance(value, str)
    if kind is int:
        return type(value) is int
    return isinstance(value, base)


def resolve(request: Request, say: Say = lambda message: None) -> Spec:
    """The spec of what ``request`` asks: the source's plan (:mod:`ingot.build.resolve.inputs`), then
    its target (:func:`ingot.build.resolve.target.resolve_target`, which may build a runtime first)."""
    if request.console_script and request.source:
        raise BuildError(
            f"give a SOURCE ({request.source}) or --console-script ({request.console_script}), "
            "not both"
        )
    if request.console_script:
        plan = console_script_plan(request.console_script, request)
    else:
        plan = plan_source(request)
    target = resolve_target(request, plan.settings, say)
    return Spec(
        name=plan.name,
        run=dict(plan.run),
        settings=plan.settings,
        output=plan.output,
        default_output=plan.default_output,
        target=target,
        copies=tuple(plan.copies),
        roots=tuple(plan.roots),
        pip_project=plan.pip_project,
        requirements=tuple(plan.requirements),
        requirement_files=tuple(plan.requirement_files),
        pinned=plan.pinned,
        notes=tuple(plan.notes),
        force=request.force,
        cache=not request.no_cache,
        refresh=request.refresh,
    )
