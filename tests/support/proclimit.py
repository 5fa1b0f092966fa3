"""Running built executables under a process-count limit, so that a regression in self-calls
(an app that starts itself, which starts itself...) fails a test instead of taking the machine
down.

`run(args, max_processes=N, timeout=T)` runs `args` in a pids cgroup of its own (cgroup v1's
`pids` hierarchy, or cgroup v2 with the `pids` controller) whose `pids.max` is N, waits at most T
seconds, then kills whatever is left in the group and removes it. The result is a
`subprocess.CompletedProcess` with two more attributes: `limit_hit` (how many forks the limit
refused, from `pids.events`) and `timed_out`. Without cgroups (a non-root user), the limit is
RLIMIT_NPROC instead (root is exempt from it: as root without a pids cgroup, the helper refuses
to run, and the test fails under `INGOT_REQUIRE_PYTHONS` or skips).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

__all__ = ["pids_hierarchy", "run"]


def pids_hierarchy() -> Path | None:
    """Where this machine's pids cgroups are made: a cgroup v1 mount with the `pids` controller,
    or a cgroup v2 mount where `pids` is available (enabled for children if it is not yet)."""
    if os.geteuid() != 0:
        return None
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    for line in mounts:
        _device, mountpoint, kind, options, *_ = line.split()
        if kind == "cgroup" and "pids" in options.split(","):
            return Path(mountpoint)
    for line in mounts:
        _device, mountpoint, kind, *_ = line.split()
        root = Path(mountpoint)
        if kind == "cgroup2" and "pids" in (root / "cgroup.controllers").read_text().split():
            control = root / "cgroup.subtree_control"
            if "pids" not in control.read_text().split():
                try:
                    control.write_text("+pids")
                except OSError:
                    continue
            return root
    return None


def _kill_group(group: Path) -> None:
    """SIGKILLs every process of the group until none is left (a process forking meanwhile is
    caught by the next round)."""
    for _round in range(100):
        pids = [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"processes left in {group} after killing them for 5 s")


def run(
    args,
    *,
    max_processes: int = 32,
    timeout: float = 120,
    env=None,
    cwd=None,
    input=None,
    text=True,
) -> subprocess.CompletedProcess:
    """Runs `args` with at most `max_processes` processes (the first one included) and a
    timeout; everything the command started is killed when it ends or times out."""
    hierarchy = pids_hierarchy()
    if hierarchy is None and os.geteuid() == 0:
        message = "root without a pids cgroup: no way to limit the processes of a test"
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(message)
        pytest.skip(message)
    group = None
    if hierarchy is not None:
        group = hierarchy / f"ingot-test-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        group.mkdir()
        (group / "pids.max").write_text(str(max_processes))
        # The child joins the group before it execs the command: nothing it starts escapes it.
        command = [
            "sh",
            "-c",
            'echo $$ > "$0/cgroup.procs" && exec "$@"',
            str(group),
            *map(str, args),
        ]
        preexec = None
    else:
        command = [str(arg) for arg in args]
        running = sum(
            1
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and entry.stat().st_uid == os.getuid()
        )

        def preexec():
            import resource

            limit = running + max_processes
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))

    timed_out = False
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if input is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        text=text,
        preexec_fn=preexec,
    )
    try:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            if group is not None:
                _kill_group(group)
            process.kill()
            stdout, stderr = process.communicate()
        limit_hit = 0
        if group is not None:
            _kill_group(group)  # what the command left running (daemons, orphans)
            events = dict(line.split() for line in (group / "pids.events").read_text().splitlines())
            limit_hit = int(events.get("max", 0))
    finally:
        if group is not None:
            for _attempt in range(50):
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
    result = subprocess.CompletedProcess(args, process.returncode, stdout, stderr)
    result.limit_hit = limit_hit
    result.timed_out = timed_out
    return result
