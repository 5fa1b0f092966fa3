"""A build under a runtime: the runtime's interpreter runs this ingot's build stages, and gets the
resolved spec as data (a JSON file), not as a command line to parse again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ingot.build.interrupt import scratch_directory
from ingot.build.report import report_error
from ingot.build.resolve.spec import Spec
from ingot.build.run import RESULT_FILE
from ingot.errors import BuildError
from ingot.runtime.pins import sha256_of

__all__ = ["build_under"]


#: What the runtime's interpreter runs: this ingot's code from the path given first, then the
#: build of the spec in the file given second (:func:`ingot.build.run.build_spec_file`),
#: watching the pipe given fourth, which closes when this process ends.
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from ingot.build.run import "
    "build_spec_file; sys.exit(build_spec_file(sys.argv[1], quiet=sys.argv[2] == 'quiet', "
    "parent=int(sys.argv[3])))"
)
#: How long an interrupted child build is given to remove what it made, before it is killed.
_CHILD_GRACE = 30.0


def build_under(spec: Spec, *, quiet: bool) -> int:
    """Runs the build of ``spec`` under its runtime's interpreter: this ingot's Python code, with
    ingot's extension module built for that interpreter, gets the spec as a file; pip (of the
    Python ingot runs under) installs the dependencies as wheels for the runtime's version and
    platforms. Returns the child's exit status (it reports as ``ingot build`` does). The child
    ends with this process: interrupted, this process passes the interrupt on and waits for
    it; killed, the child sees the pipe it watches close (:func:`ingot.build.interrupt.
    watch_parent`)."""
    target = spec.target
    assert target.runtime_python is not None and target.runtime_importer is not None
    package = Path(__file__).resolve().parents[1]
    # (named with the pid: a later build removes it if this process is killed)
    with scratch_directory("ingot-runtime-path-") as path:
        shadow = path / "ingot"
        shadow.mkdir()
        for item in package.iterdir():
            native = item.name.startswith("_ingot.") and item.name.endswith(".so")
            if not native and item.name not in ("_launcher", "__pycache__"):
                (shadow / item.name).symlink_to(item)
        (shadow / target.runtime_importer.name).symlink_to(target.runtime_importer)
        spec_file = path / "spec.json"
        spec_file.write_text(spec.to_json())
        command = [str(target.runtime_python), "-I", "-c", _CHILD, str(path), str(spec_file)]
        status = _run_child([*command, "quiet" if quiet else "say"], spec.environment.variables)
        made = _read_result(spec_file.with_name(RESULT_FILE)) if status == 0 else None
    output = spec.plan.output
    if status == 0 and not _is_made(made, output):
        # (what ran was not this ingot's build: nothing says it did what it was asked)
        return report_error(
            BuildError(
                f"the build under {target.runtime_python} ended without error but wrote no "
                f"{output} (its result: {made or 'none'})",
                hint=f"check the runtime: ingot runtime remove {target.python}, then build again",
            )
        )
    return status


def _read_result(path: Path) -> dict[str, object] | None:
    """The result the child build wrote (:func:`ingot.build.run.build_spec_file`), or None."""
    try:
        made = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return made if isinstance(made, dict) else None


def _is_made(made: dict[str, object] | None, output: Path) -> bool:
    """Whether the child's result names ``output``, and the file there is the one it made."""
    if made is None or made.get("output") != str(output) or not output.is_file():
        return False
    return made.get("size") == output.stat().st_size and made.get("sha256") == sha256_of(output)


def _run_child(command: list[str], environment: Mapping[str, str]) -> int:
    """Runs the child build ``command`` (given, last, the pipe it watches) in the build's
    ``environment`` (the snapshot resolution took); its exit status. An
    interrupt of this process (^C, SIGTERM, SIGHUP: :func:`ingot.build.interrupt.
    interrupts_stop`) is passed on as SIGTERM, and the child is waited for (killed after
    :data:`_CHILD_GRACE` seconds) before the interrupt goes on."""
    watched, held = os.pipe()  # (both close on exec: only the child gets ``watched``)
    try:
        child = subprocess.Popen(
            [*command, str(watched)], pass_fds=(watched,), env=dict(environment)
        )
    except BaseException:
        os.close(held)
        raise
    finally:
        os.close(watched)
    try:
        return child.wait()
    except BaseException:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=_CHILD_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise
    finally:
        os.close(held)
