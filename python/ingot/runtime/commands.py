"""Running a runtime build's commands: each logged to the build's log, with the toolchain's
environment, and a line of progress every :data:`PROGRESS_SECONDS` while one runs."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ingot.runtime.store import (
    RuntimeError_,
)
from ingot.runtime.toolchain import (
    Toolchain,
)

__all__ = ["PROGRESS_SECONDS", "Builder"]


class Builder:
    """Runs one runtime build's commands, each logged, with the toolchain's environment."""

    def __init__(self, toolchain: Toolchain, log: Path, say: Callable[[str], None]):
        self.toolchain = toolchain
        self.log_path = log
        self.say = say
        self.started = time.monotonic()
        #: What a profile-guided build's training counted (recipes.build_python).
        self.profile: dict[str, int] | None = None

    def runner(self, build: Path, prefix: Path) -> Callable[..., None]:
        environment = self.toolchain.environment(build, prefix)

        def run(argv: list[str], cwd: Path, extra: dict[str, str] | None = None) -> None:
            env = dict(environment, **(extra or {}))
            argv = [
                re.sub(
                    r"\$([A-Z_]+)", lambda match: env.get(match.group(1), match.group(0)), argument
                )
                for argument in argv
            ]
            with open(self.log_path, "a") as log:
                log.write(f"\n$ (cd {cwd}) {' '.join(argv)}\n")
                log.flush()
                started = time.monotonic()
                try:
                    code = self._wait(argv, cwd, env, log)
                except OSError as error:
                    raise RuntimeError_(
                        f"cannot run `{' '.join(argv)}` in {cwd}: {error}",
                        hint="is the source release complete (a release "
                        "tarball, not a repository snapshot)?",
                    ) from None
                log.write(f"# exit {code} after {time.monotonic() - started:.1f} s\n")
            if code != 0:
                tail = self.log_path.read_text(errors="replace").splitlines()[-25:]
                raise RuntimeError_(
                    f"`{' '.join(argv)}` failed (exit {code}) in {cwd}:\n  " + "\n  ".join(tail),
                    hint=f"the whole log: {self.log_path}",
                )

        return run

    def _wait(self, argv: list[str], cwd: Path, env: dict[str, str], log: IO[str]) -> int:
        """Runs ``argv``, its output to ``log``; says every :data:`PROGRESS_SECONDS` which
        component and step is running, and for how long (a step can take minutes)."""
        step = " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv[:2]))
        with subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        ) as process:
            started = time.monotonic()
            while True:
                try:
                    return process.wait(timeout=PROGRESS_SECONDS)
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    self.say(
                        f"    {cwd.name}: {step}, {now - started:.0f} s "
                        f"({now - self.started:.0f} s since the start)"
                    )


#: How often a runtime build says what it is doing while one step runs.
PROGRESS_SECONDS = 10.0
