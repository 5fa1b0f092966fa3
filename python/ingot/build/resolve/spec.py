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
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingot import cachedir
from ingot.build.resolve import target
from ingot.build.resolve.environment import Environment, snapshot
from ingot.build.resolve.inputs import Plan, console_script_plan, plan_source
from ingot.build.resolve.launcher import checked_launcher
from ingot.build.resolve.lockfile import Locked, read_lock
from ingot.build.resolve.settings import Request
from ingot.build.resolve.target import Say, Target
from ingot.errors import BuildError

__all__ = ["Say", "Spec", "resolve"]

#: The spec's JSON format; a child of another ingot refuses a spec it cannot read.
SPEC_FORMAT = 1


@dataclass(frozen=True)
class Spec:
    """A build, resolved: its input's plan (what to run, what to copy or pip-install, the
    settings, where to write), its target, the environment it was resolved in, and how."""

    plan: Plan
    target: Target
    #: The environment when the build was resolved: what the build reads of it.
    environment: Environment = field(default_factory=Environment)
    #: The build cache's directory (:mod:`ingot.build.archive.buildcache`); None: no cache.
    cache_root: Path | None = None
    force: bool = False  # replace an output that ingot did not write
    refresh: bool = False  # install the dependencies again, not from the build cache
    #: The plan's lock file, read for the target: the files pip installs (nothing resolved).
    locked: Locked | None = None

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
    if dataclasses.is_dataclass(kind):
        return isinstance(value, dict)
    base = typing.get_origin(kind) or kind
    if base in (tuple, list):
        return isinstance(value, list)
    if base is Path:
        return isinstance(value, str)
    if kind is int:
        return type(value) is int
    return isinstance(value, base)


def _plan(request: Request) -> Plan:
    """The plan of the request's input (:mod:`ingot.build.resolve.inputs`)."""
    if request.console_script and request.source:
        raise BuildError(
            f"give a SOURCE ({request.source}) or --console-script ({request.console_script}), "
            "not both"
        )
    if request.console_script:
        return console_script_plan(request.console_script, request)
    return plan_source(request)


def _check_requires_python(plan: Plan, resolved: Target) -> None:
    """ConfigError when the application's ``requires-python`` excludes the target's Python (its
    runtime's release, else this one's)."""
    if plan.requires_python is None:
        return
    wanted, where = plan.requires_python
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # (pip's copy is the same code)
        from pip._vendor.packaging.specifiers import (  # type: ignore[assignment]
            InvalidSpecifier,
            SpecifierSet,
        )
    try:
        specifiers = SpecifierSet(wanted)
    except InvalidSpecifier:
        raise BuildError(
            f"{where}: requires-python {wanted!r} is not a version specifier",
            hint="e.g. '>=3.11'",
        ) from None
    version = resolved.runtime_release or ".".join(map(str, sys.version_info[:3]))
    if resolved.python != ".".join(version.split(".")[:2]):
        version = resolved.python
    if not specifiers.contains(version, prereleases=True):
        raise BuildError(
            f"{where}: requires-python {wanted!r} excludes Python {version}, which the build is "
            "for",
            hint="build for a version it allows: --python X.Y (or [tool.ingot] python)",
        )


def resolve(
    request: Request,
    say: Say = lambda message: None,
    environment: Environment | None = None,
    *,
    provide: bool = False,
) -> Spec:
    """The spec of what ``request`` asks: the input's plan (:mod:`ingot.build.resolve.inputs`),
    read once, then its target (:func:`ingot.build.resolve.target.resolve_target`), in
    ``environment`` (default: a snapshot of the environment now), which the spec keeps: after
    this, nothing of the build reads the environment. The runtimes the target takes must be in
    the store; with ``provide`` (``ingot build``), those it lacks are installed or built first
    (:func:`ingot.build.resolve.target.provide_runtimes`: the one step of resolving that may
    change the machine)."""
    plan = _plan(request)
    environment = environment if environment is not None else snapshot()
    if provide:
        target.provide_runtimes(request, plan.settings, say, environment)
    resolved = target.resolve_target(request, plan.settings, say, environment)
    _check_requires_python(plan, resolved)
    if resolved.launcher is not None:
        # (checked once, here: the pipeline takes the bytes of this digest only)
        digest = checked_launcher(resolved.launcher, resolved.machine, resolved.runtime_release)
        resolved = dataclasses.replace(resolved, launcher_sha256=digest)
    locked = None
    if plan.lock is not None:
        root = plan.lock.parent
        locked = read_lock(
            plan.lock, root, resolved, environment, say, request.allow_outside_project
        )
    return Spec(
        plan=plan,
        target=resolved,
        environment=environment,
        cache_root=None if request.no_cache else cachedir.build_root(),
        force=request.force,
        refresh=request.refresh,
        locked=locked,
    )
