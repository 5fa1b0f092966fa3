"""The child processes of a build that run a dependency's (or the project's) code, confined.

    from ingot.build.sandbox import Sandbox
    box = Sandbox(environment)
    done = box.run([sys.executable, "-I", "-S", "-c", CODE], readable=[site])
    done.returncode, done.stdout, done.confinement.describe()

Two steps of ``ingot build`` import packages to see what they do: the import probe
(:func:`ingot.build.archive.probe.import_probe`) and a ``files`` package's build-time preparation
(:data:`ingot.build.analysis.policy.PREPARATIONS`). Both run code that came from wheels (which
pip never runs) or from the project, so both run here:

- **an environment made from scratch**: ``PATH=/usr/local/bin:/usr/bin:/bin``,
  ``LANG=C.UTF-8``, ``HOME``, ``TMPDIR`` and the ``XDG_*`` homes in a new scratch directory,
  which is also the working directory; ``LD_LIBRARY_PATH`` if the build has one (the
  interpreter or an extension module may need it); the caller's ``extra`` variables. Nothing
  else of the build's environment (no CI secret, no ``PIP_*``, no ``SSH_AUTH_SOCK``);
- **no network**: a new network namespace with its own loopback only (as root, or in a new
  user namespace as another user); a listener on the host's loopback is out of reach;
- **as root, as ``nobody``** (uid and gid 65534 without the name), with no supplementary
  groups and ``no_new_privs``, in a new mount namespace where a private directory above what
  it must read (``/root``, the 0700 staging directory in TMPDIR) is replaced by an empty one
  holding just that, bound at its own path: the interpreter's directories and the staged
  packages read-only, the scratch directory writable. Everything else under it (root's home,
  keys, the build cache's other entries) is not there for the child;
- its own process group (killed when it ends or its time runs out), no standard input, and
  death with the build (``PR_SET_PDEATHSIG``).

What cannot be had is done without and said (:meth:`Confinement.describe`): no network
namespace where the kernel or a container refuses one (``unshare`` fails: Docker's seccomp
profile, ``user.max_user_namespaces=0``); as root, no change of user when ``nobody`` could not
read what the child needs (no mount namespace to bind it into, files of mode 0600 from a 0077
umask): the child then runs as root, with the scrubbed environment still.

The confinement is set up by the child itself, in this module's :data:`_SETUP` (ingot's code, run
by the same interpreter with ``-I -S`` before anything of the dependency), which then executes
the command asked for. Issue 53 (defect 4) is the record of why.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from ingot.build.interrupt import scratch_directory
from ingot.build.resolve.environment import Environment

__all__ = ["Confinement", "Outcome", "Sandbox", "nobody"]

#: The prefix of a sandbox's scratch directory in TMPDIR: one of a build's temporaries
#: (``ingot-build-``), which a later build removes if this one is killed
#: (:func:`ingot.build.interrupt.remove_stale`: ``<prefix><pid>-<random>``).
SCRATCH_PREFIX = "ingot-build-sandbox-"

#: The largest file a child may hand back (:meth:`Sandbox.run`'s ``collect``).
_COLLECT_LIMIT = 64 << 20

# The child's own code: the confinement, then an exec of the command. Runs with -I -S before
# anything else: stdlib only. sys.argv[1] is the JSON of Sandbox._plan.
_SETUP = r"""
import ctypes, errno, fcntl, json, os, signal, socket, sys
plan = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
said = {"user": "root" if os.getuid() == 0 else "self", "network": "shared", "why": []}
NEWNS, NEWUSER, NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18

def failed(what):
    said["why"].append(f"{what}: {os.strerror(ctypes.get_errno())}")

def mount(source, target, kind, flags, data=None):
    if libc.mount(source and source.encode(), target.encode(), kind and kind.encode(), flags,
                  data and data.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")

def loopback_up():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = bytearray(40)
        request[:2] = b"lo"
        fcntl.ioctl(s, 0x8913, request)  # SIOCGIFFLAGS
        flags = ctypes.c_short.from_buffer(request, 16)
        flags.value |= 1  # IFF_UP
        fcntl.ioctl(s, 0x8914, request)  # SIOCSIFFLAGS

def blocked(path, uid, gid):
    info = os.stat(path)
    bit = 0o100 if info.st_uid == uid else 0o010 if info.st_gid == gid else 0o001
    return not info.st_mode & bit

def expose(paths, uid, gid):
    groups = {}
    for path, writable in paths:
        parts = path.split("/")
        top = next(("/".join(parts[:i]) for i in range(2, len(parts))
                    if blocked("/".join(parts[:i]), uid, gid)), None)
        if top is not None:
            groups.setdefault(top, []).append((path, writable))
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY)
            for entries in groups.values() for path, _ in entries}
    os.umask(0o022)
    for top, entries in groups.items():
        mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for path, writable in entries:
            os.makedirs(path, 0o755, exist_ok=True)
            mount(f"/proc/self/fd/{held[path]}", path, None, MS_BIND | MS_REC)
            if not writable:
                mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for fd in held.values():
        os.close(fd)

def unreadable(paths):
    access = lambda path, mode: os.access(path, mode, effective_ids=True)
    for top in paths:
        if not access(top, os.R_OK | os.X_OK if os.path.isdir(top) else os.R_OK):
            return top
        for where, directories, files in os.walk(top, onerror=lambda e: None):
            for name in directories:
                if not access(os.path.join(where, name), os.R_OK | os.X_OK):
                    return os.path.join(where, name)
            for name in files:
                if not access(os.path.join(where, name), os.R_OK):
                    return os.path.join(where, name)
    return None

def confine():
    uid = os.getuid()
    if uid == 0:
        mounts = libc.unshare(NEWNS | NEWNET) == 0
        if not mounts:
            failed("no mount and network namespace")
        network = mounts or libc.unshare(NEWNET) == 0
    else:
        mounts = False
        network = libc.unshare(NEWUSER | NEWNET) == 0
        if network:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{os.getgid()} {os.getgid()} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
    if network:
        said["network"] = "none"
        try:
            loopback_up()
        except OSError as error:
            said["why"].append(f"loopback left down: {error.strerror}")
    else:
        failed("no network namespace")
    drop = plan["drop"]
    if uid != 0 or drop is None:
        return
    user, group = drop
    if mounts:
        try:
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            expose(plan["expose"], user, group)
        except OSError as error:
            said["why"].append(f"{error.strerror} ({error.filename or error})")
            return
    os.setegid(group)
    os.seteuid(user)
    missing = next((p for p in plan["reachable"]
                    if not os.access(p, os.R_OK | os.X_OK, effective_ids=True)), None)
    missing = missing or unreadable(plan["readable"])
    os.seteuid(0)
    os.setegid(0)
    if missing is not None:
        said["why"].append(f"stayed root: uid {user} cannot read {missing}")
        return
    os.setgroups([])
    os.setresgid(group, group, group)
    os.setresuid(user, user, user)
    said["user"] = "nobody"

confine()
libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG (after the change of user)
if os.getppid() != plan["parent"]:
    sys.exit(1)
sys.stderr.write("\ningot-sandbox: " + json.dumps(said) + "\n")
sys.stderr.flush()
os.chdir(plan["cwd"])
argv = plan["argv"]
os.execve(argv[0], argv, plan["env"])
"""

_SAID = "\ningot-sandbox: "


def nobody() -> tuple[int, int]:
    """The uid and gid of ``nobody`` (65534 for both where it has no entry)."""
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


@dataclass(frozen=True)
class Confinement:
    """What a child got: ``user`` (``nobody``; ``self``: the build's user, not root; ``root``),
    ``network`` (``none``: a namespace of its own; ``shared``: the build's), and why the rest
    could not be had."""

    user: str = "root"
    network: str = "shared"
    why: tuple[str, ...] = ()

    def describe(self) -> str:
        """``as nobody, without network, in a scratch home and directory`` and the reasons."""
        who = {"nobody": "as nobody", "self": "as this user"}.get(self.user, "as root")
        net = "without network" if self.network == "none" else "with the network"
        text = f"{who}, {net}, with a scrubbed environment in a scratch home and directory"
        return text + (f" ({'; '.join(self.why)})" if self.why else "")


@dataclass
class Outcome:
    """A child's end: its status (None: it did not start, or ran out of time), its output, the
    files it handed back (:meth:`Sandbox.run`'s ``collect``), how it was confined."""

    returncode: int | None
    stdout: bytes = b""
    stderr: str = ""
    collected: dict[str, bytes] = field(default_factory=dict)
    confinement: Confinement | None = None
    error: str = ""


class Sandbox:
    """Runs children that run code of the project or its dependencies, confined (this module's
    docstring). ``confinement``: how the last child was."""

    def __init__(self, environment: Environment | None = None) -> None:
        self.environment = environment or Environment()
        self.confinement: Confinement | None = None
        #: Directories found readable by ``nobody`` already (each is checked once a build).
        self.checked: set[str] = set()

    def environment_for(self, scratch: Path, extra: Mapping[str, str] = {}) -> dict[str, str]:
        """The child's whole environment (nothing else of the build's)."""
        home, tmp = str(scratch / "home"), str(scratch / "tmp")
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": home,
            "TMPDIR": tmp,
            "XDG_CACHE_HOME": str(scratch / "home" / ".cache"),
            "XDG_CONFIG_HOME": str(scratch / "home" / ".config"),
            "XDG_DATA_HOME": str(scratch / "home" / ".local" / "share"),
        }
        if self.environment.library_path:
            env["LD_LIBRARY_PATH"] = self.environment.library_path
        env.update(extra)
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        readable: Iterable[str | os.PathLike[str]] = (),
        extra: Mapping[str, str] = {},
        timeout: float = 120.0,
        collect: str | None = None,
    ) -> Outcome:
        """Runs ``argv`` (``argv[0]`` a path: this interpreter, usually) confined, with the
        directories ``readable`` there to read. With ``collect`` (a glob), the child gets a
        directory of its own to write, its path ``argv``'s ``{out}`` (replaced), and the
        regular files it leaves there whose names match are returned (none through a link)."""
        with scratch_directory(SCRATCH_PREFIX) as scratch:
            return self._run(scratch, list(argv), readable, extra, timeout, collect)

    def _run(
        self,
        scratch: Path,
        argv: list[str],
        readable: Iterable[str | os.PathLike[str]],
        extra: Mapping[str, str],
        timeout: float,
        collect: str | None,
    ) -> Outcome:
        os.chmod(scratch, 0o755)  # (nobody goes through it; what it holds is nobody's alone)
        box = scratch / "box"
        drop = nobody() if os.geteuid() == 0 else None
        for name in ("", "home", "tmp", "work", "out"):
            (box / name).mkdir(mode=0o700, exist_ok=True)
            if drop is not None:
                os.chown(box / name, *drop)
        if collect is not None:
            argv = [part.replace("{out}", str(box / "out")) for part in argv]
        paths = [os.path.realpath(path) for path in readable]
        env = self.environment_for(box, extra)
        plan = self._plan(box, argv, paths, drop, env)
        command = [sys.executable, "-I", "-S", "-c", _SETUP, json.dumps(plan)]
        try:
            child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=box,
                env=env,
                start_new_session=True,
            )
        except OSError as failure:
            return Outcome(None, error=str(failure))
        with child:
            try:
                stdout, stderr = child.communicate(timeout=timeout)
                returncode: int | None = child.returncode
            except subprocess.TimeoutExpired:
                _kill_group(child.pid)
                stdout, stderr = child.communicate()
                returncode = None
            finally:
                # (what it left running; on an interrupt too: in a session of its own, a ^C
                # of the terminal does not reach it)
                _kill_group(child.pid)
        text = stderr.decode(errors="replace")
        confinement, text = _confinement(text)
        self.confinement = confinement or self.confinement
        if confinement is not None and confinement.user == "nobody":
            self.checked.update(paths)
        owner = drop[0] if drop and confinement and confinement.user == "nobody" else os.geteuid()
        collected = _collect(box / "out", collect, owner) if collect and returncode == 0 else {}
        error = "" if returncode is not None else f"ran out of time ({timeout:g} s)"
        return Outcome(returncode, stdout, text, collected, confinement, error)

    def _plan(
        self,
        box: Path,
        argv: list[str],
        readable: list[str],
        drop: tuple[int, int] | None,
        env: dict[str, str],
    ) -> dict[str, object]:
        """What :data:`_SETUP` is told: whom to become, what to bind where, what to run."""
        interpreter = _interpreter_paths()
        expose = [(path, False) for path in _outermost([*interpreter, *readable])]
        expose.append((str(box), True))
        return {
            "drop": list(drop) if drop else None,
            "expose": [
                [path, writable]
                for path, writable in expose
                if not any(path != other and _under(path, other) for other, _ in expose)
            ],
            "readable": [path for path in readable if path not in self.checked],
            "reachable": [*interpreter, os.path.realpath(argv[0]), str(box)],
            "parent": os.getpid(),
            "cwd": str(box / "work"),
            "argv": argv,
            "env": env,
        }


def _interpreter_paths() -> list[str]:
    """The directories this interpreter needs: its prefixes (a virtual environment's and its
    base's), its executable's, its standard library's, its shared library's."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    paths.add(os.path.dirname(sys.executable))
    for name in ("stdlib", "platstdlib"):
        paths.add(sysconfig.get_paths()[name])
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        paths.add(str(sysconfig.get_config_var("LIBDIR") or ""))
    return sorted(os.path.realpath(path) for path in paths if path and os.path.isdir(path))


def _under(path: str, other: str) -> bool:
    return path == other or path.startswith(other.rstrip("/") + "/")


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` less those inside another of them."""
    unique = sorted(set(paths))
    return [p for p in unique if not any(p != o and _under(p, o) for o in unique)]


def _confinement(stderr: str) -> tuple[Confinement | None, str]:
    """The setup's line on the child's confinement, and the child's own standard error."""
    before, found, after = stderr.partition(_SAID)
    if not found:
        return None, stderr
    line, _, rest = after.partition("\n")
    try:
        said = json.loads(line)
        confinement = Confinement(said["user"], said["network"], tuple(said["why"]))
    except (ValueError, KeyError, TypeError):
        return None, stderr
    return confinement, before + rest


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _collect(out: Path, pattern: str, owner: int) -> dict[str, bytes]:
    """The regular files directly in ``out`` named as ``pattern`` says, read through a
    descriptor opened without following links: only files of the child's user (``owner``)
    with one link (never a link to another file)."""
    found: dict[str, bytes] = {}
    try:
        directory = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return found
    try:
        for name in sorted(os.listdir(directory)):
            if not fnmatchcase(name, pattern):
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(fd)
                if (
                    not stat.S_ISREG(info.st_mode)
                    or info.st_nlink != 1
                    or info.st_size > _COLLECT_LIMIT
                    or info.st_uid != owner
                ):
                    continue
                found[name] = file.read(_COLLECT_LIMIT + 1)[:_COLLECT_LIMIT]
    finally:
        os.close(directory)
    return found
