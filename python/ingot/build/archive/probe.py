"""The import probe: what importing a package of the environment imports, found by doing it in a
confined child interpreter (:mod:`ingot.build.sandbox`), through the build cache. Native code that
imports by names its binary does not show (Cython 3 compresses its strings, Rust's have no
terminator) shows there."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from ingot.build.archive.buildcache import (
    BuildMemo,
    file_digest,
    tree_digest,
)
from ingot.build.resolve.environment import Environment
from ingot.build.sandbox import Sandbox

__all__ = ["cached_probe", "import_probe"]


_PROBE = """
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
for name in sys.argv[2:]:
    try:
        __import__(name)
    except BaseException:
        pass
sys.stdout.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n")
"""


def import_probe(
    paths: list[str],
    environment: Environment | None = None,
    timeout: float = 120.0,
    sandbox: Sandbox | None = None,
) -> Callable[[list[str]], set[str]]:
    """A ``probe`` for :func:`reach`: imports the given top-level packages in a child of this
    interpreter (``-I -S -B``: no bytecode written into ``paths``, the build cache's among them;
    ``paths`` first on its ``sys.path``), confined by ``sandbox`` (:mod:`ingot.build.sandbox`:
    an environment made from scratch, a scratch home and working directory, no network, as
    root ``nobody``; by default one over the build's ``environment``), and returns the names of
    the modules it then had. Native code that imports by names its binary does not show
    (Cython 3 compresses its strings) shows it here. Nothing is returned if the child fails or
    takes longer than ``timeout`` seconds."""
    box = sandbox or Sandbox(environment)

    def probe(tops: list[str]) -> set[str]:
        done = box.run(
            [sys.executable, "-I", "-S", "-B", "-c", _PROBE, json.dumps(paths), *tops],
            readable=paths,
            timeout=timeout,
        )
        try:
            return set(json.loads(done.stdout.decode(errors="replace").splitlines()[-1]))
        except (ValueError, IndexError):
            return set()

    return probe


def cached_probe(
    memo: BuildMemo, paths: list[str], probe: Callable[[list[str]], set[str]]
) -> Callable[[list[str]], set[str]]:
    """``probe`` (:func:`import_probe` over ``paths``) through the build cache: keyed by the
    top-level packages asked and the contents of ``paths`` (of a directory of dependencies the
    build cache installed, its record of every file's hash; of another, the hashes themselves).
    A probe that failed (nothing returned) is not kept."""
    if memo.store is None:
        return probe
    digests: list[str] = []

    def run(tops: list[str]) -> set[str]:
        if not digests:
            digests.extend(_contents_key(Path(path)) for path in paths)
        found = memo.remember(
            "import-probe", [*tops, "|", *digests], lambda: sorted(probe(tops)), bool
        )
        return set(found)

    return run


def _contents_key(root: Path) -> str:
    """What a directory holds (not where: the staging directory is a new one each build), for
    :func:`cached_probe`'s key."""
    record = root.parent / "files.json"
    if (
        root.name == "site" and record.is_file()
    ):  # (ingot.build.stages.staging: checked, kept current)
        return f"installed:{file_digest(record)}"
    return f"tree:{json.dumps(tree_digest(root), sort_keys=True)}"
