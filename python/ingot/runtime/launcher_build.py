"""Building a runtime's launcher: the Rust launcher linked with the runtime's static CPython by
cargo-zigbuild for the runtime's glibc (:func:`build_launcher`), what it needs checked first
(:func:`check_launcher_prerequisites`), and linking it again from this checkout's sources
(:func:`rebuild_launcher`, :func:`launcher_sources_digest`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ingot.cachedir import make_directories
from ingot.elf import glibc_floor
from ingot.machine import Machine, host_machine
from ingot.runtime.commands import Builder
from ingot.runtime.store import (
    Runtime,
    RuntimeError_,
    find_runtime,
    record_hashes,
    store,
    sysconfig_vars,
)
from ingot.runtime.toolchain import (
    Toolchain,
    find_zig,
)

__all__ = [
    "build_launcher",
    "check_launcher_prerequisites",
    "launcher_sources_digest",
    "rebuild_launcher",
    "remove_left_zig_caches",
    "source_tree",
]


def source_tree() -> Path | None:
    """ingot's source tree (the launcher's crate): ``$INGOT_SOURCE_TREE``, the checkout this ingot
    runs from, or the copy an installed wheel carries (``ingot/_source``)."""
    here = Path(__file__).resolve()
    candidates = [os.environ.get("INGOT_SOURCE_TREE"), here.parents[3], here.parents[1] / "_source"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "crates" / "ingot-launcher" / "Cargo.toml").is_file():
            return Path(candidate)
    return None


def launcher_sources_digest(tree: Path | None = None) -> str | None:
    """The sha256 of what a launcher and ingot's extension module are built from: the Rust
    workspace (manifests, lock file, crates' sources) and the Python files the crates embed, as
    ``ingot/_source`` carries them (tools/build_backend), in ``tree`` (default: :func:`source_tree`);
    None without one. The same in a checkout, a staging copy and an installed package's copy of
    the same sources: ``ingot runtime launcher --if-sources-changed`` compares it with what a
    runtime records."""
    tree = tree or source_tree()
    if tree is None:
        return None
    files = [tree / "Cargo.toml", tree / "Cargo.lock"]
    files += [
        tree / "python" / "ingot" / "boot" / name for name in ("support.py", "archive_paths.py")
    ]
    for path in sorted((tree / "crates").rglob("*")):
        parts = path.relative_to(tree).parts
        if "target" in parts or "__pycache__" in parts or path.suffix == ".pyc":
            continue
        if path.is_file() and not path.is_symlink():
            files.append(path)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"-")
    return digest.hexdigest()


def check_launcher_prerequisites(toolchain: Toolchain) -> tuple[Path, str]:
    """What building a runtime's launcher needs besides zig: ingot's source tree, cargo,
    cargo-zigbuild and, for another machine, Rust's standard library for it. Checked before a
    runtime build does any work (issue 41: a missing Rust target stopped a build after 14
    minutes of compiling); RuntimeError_ naming the first missing one. Returns the source tree
    and cargo-zigbuild's path."""
    tree = source_tree()
    if tree is None:
        raise RuntimeError_(
            "building a runtime's launcher needs ingot's source tree (its Rust "
            "crates), which this installation does not have",
            hint="set INGOT_SOURCE_TREE to a checkout of ingot",
        )
    cargo_zigbuild = shutil.which("cargo-zigbuild") or str(
        Path(sys.executable).parent / "cargo-zigbuild"
    )
    if shutil.which("cargo") is None:
        raise RuntimeError_(
            "building a runtime's launcher needs Rust's cargo, which is not on PATH",
            hint="install Rust (https://rustup.rs), then run the build again",
        )
    if not os.access(cargo_zigbuild, os.X_OK):
        raise RuntimeError_(
            "building a runtime's launcher needs cargo-zigbuild, which is not on PATH "
            f"(nor beside {sys.executable})",
            hint="pip install cargo-zigbuild (or install ingot with its [runtime] extra)",
        )
    if toolchain.cross:
        _check_rust_target(toolchain.machine.rust)
    return tree, cargo_zigbuild


def build_launcher(
    stage: Path,
    prefix: Path,
    toolchain: Toolchain,
    builder: Builder,
    build_python: Path | None = None,
) -> Path:
    """Builds the launcher against the runtime's ``libpython3.X.a``, linked by zig for the
    runtime's glibc and machine (cargo-zigbuild), into ``stage/launcher/``. For another machine,
    pyo3 and the launcher's build script read the runtime's sysconfig data through
    ``build_python`` (this machine's interpreter of the same release)."""
    tree, cargo_zigbuild = check_launcher_prerequisites(toolchain)
    python = next(iter(sorted((prefix / "bin").glob("python3.*[0-9]"))))
    # Kept in the store between builds: relinking after a change of ingot is incremental.
    target_dir = store() / ".cargo-target" / stage.name
    # (the toolchain's wrappers, which the environment names as CC, AR, ..., made there too: the
    # crates' build scripts rerun when those variables change, and a temporary directory's name
    # changed them at every relink, compiling zstd's C code and all that depends on it again)
    make_directories(target_dir)
    run = builder.runner(target_dir, prefix)
    rust_target = toolchain.machine.rust
    # zig's caches too (what it builds on first use for the target, about 60 MB: compiler-rt,
    # the glibc stubs, the C objects of the crates' build scripts), beside the cargo target they
    # serve, instead of the build's own, named after its temporary directory.
    zig_caches = target_dir / "zig"
    extra = {
        "ZIG_GLOBAL_CACHE_DIR": str(zig_caches / "global"),
        "ZIG_LOCAL_CACHE_DIR": str(zig_caches / "local"),
    }
    if toolchain.cross:
        assert build_python is not None
        python = _cross_python(stage.parent, build_python, prefix)
        extra["PYO3_CROSS_LIB_DIR"] = str(prefix / "lib")

    def zigbuild(*package: str) -> None:
        """``cargo zigbuild --release`` of ``package`` for the runtime's glibc and Python."""
        run(
            [
                cargo_zigbuild,
                "zigbuild",
                "--release",
                "--quiet",
                *package,
                "--target",
                f"{rust_target}.{toolchain.glibc[0]}.{toolchain.glibc[1]}",
            ],
            cwd=tree,
            extra={
                "PYO3_PYTHON": str(python),
                "CARGO_TARGET_DIR": str(target_dir),
                "CARGO_ZIGBUILD_ZIG_PATH": str(toolchain.zig),
                **extra,
            },
        )

    zigbuild("-p", "ingot-launcher")
    version = ".".join(sysconfig_vars(prefix)["VERSION"].split(".")[:2])
    destination = stage / "launcher" / f"ingot-launcher-{version}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(target_dir / rust_target / "release" / "ingot-launcher", destination)
    # ingot's own extension module for the runtime's interpreter: `ingot build --python` runs
    # ingot under it, whatever Python ingot itself was installed for.
    zigbuild("-p", "ingot-importer", "--lib", "--features", "extension-module")
    suffix = sysconfig_vars(prefix)["EXT_SUFFIX"]
    shutil.copy2(
        target_dir / rust_target / "release" / "libingot_importer.so",
        stage / "launcher" / f"_ingot{suffix}",
    )
    return destination


def rebuild_launcher(
    wanted: str,
    say: Callable[[str], None] = print,
    machine: Machine | None = None,
    *,
    if_sources_changed: bool = False,
) -> Runtime:
    """Builds the launcher and ingot's extension module of an existing runtime again, from this
    ingot's source tree (after a change of ingot; the interpreter and libraries stay). With
    ``if_sources_changed``, a runtime whose launcher was built from the same sources
    (:func:`launcher_sources_digest`) is left as it is."""
    machine = machine or host_machine()
    found = find_runtime(wanted, machine.name)
    if found is None:
        raise RuntimeError_(
            f"no runtime {wanted} for {machine.name} in {store()}",
            hint="`ingot runtime list` shows the runtimes there are",
        )
    recorded = (found.info.get("launcher") or {}).get("sources")
    if if_sources_changed and recorded is not None and recorded == launcher_sources_digest():
        say(f"runtime {found.name}: its launcher was built from these sources; kept")
        return found
    toolchain = Toolchain(find_zig(), machine=machine)
    build_python = None
    if toolchain.cross:
        host = find_runtime(found.version, host_machine().name)
        if host is None or host.version != found.version:
            raise RuntimeError_(
                f"relinking the {machine.name} runtime {found.version} needs this machine's "
                f"runtime of CPython {found.version}, which the store lacks",
                hint=f"build it: ingot runtime build {found.version}",
            )
        build_python = host.python
    remove_left_zig_caches(store())
    work = Path(tempfile.mkdtemp(prefix=".relink-", dir=store()))
    try:
        builder = Builder(toolchain, found.path / "build.log", say)
        staged = work / found.name
        staged.mkdir()
        launcher = build_launcher(staged, found.path / "python", toolchain, builder, build_python)
        floor = glibc_floor([(launcher.name, launcher.read_bytes())])
        if floor.version is not None and floor.version > toolchain.glibc:
            raise RuntimeError_(
                f"the launcher needs {floor}, above glibc {toolchain.glibc[0]}.{toolchain.glibc[1]}"
            )
        for built in (staged / "launcher").iterdir():
            os.replace(built, found.path / "launcher" / built.name)
        found.info["launcher"] = {
            "file": f"launcher/{launcher.name}",
            "glibc_floor": ".".join(map(str, floor.version)) if floor.version else None,
            "sources": launcher_sources_digest(),
        }
        record_hashes(found)
        (found.path / "runtime.json").write_text(json.dumps(found.info, indent=2) + "\n")
        say(f"runtime {found.name}: launcher rebuilt ({floor})")
        return found
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_rust_target(rust_target: str) -> None:
    """RuntimeError_ unless Rust's standard library for ``rust_target`` is installed."""
    rustc = shutil.which("rustc")
    if rustc is None:
        return  # said by cargo
    sysroot = subprocess.run(
        [rustc, "--print", "sysroot"], capture_output=True, text=True
    ).stdout.strip()
    if not (Path(sysroot) / "lib" / "rustlib" / rust_target / "lib").is_dir():
        raise RuntimeError_(
            f"Rust has no standard library for {rust_target} here (in {sysroot}), which the "
            "runtime's launcher is built with",
            hint=f"rustup target add {rust_target}",
        )


def remove_left_zig_caches(root: Path) -> None:
    """Removes the zig caches that launcher builds left in ``root/.zig-caches``, one per build
    or relink (about 60 MB each), named after a temporary directory of the store that no longer
    exists: a build in progress has its directory, and keeps its cache."""
    caches = root / ".zig-caches"
    if not caches.is_dir():
        return
    for cache in caches.iterdir():
        if cache.name.startswith((".build-", ".relink-")) and not (root / cache.name).exists():
            shutil.rmtree(cache, ignore_errors=True)
    with contextlib.suppress(OSError):
        caches.rmdir()  # (only if empty)


def _cross_python(directory: Path, build_python: Path, prefix: Path) -> Path:
    """A script that runs ``build_python`` (this machine's interpreter) with sysconfig reading
    the cross runtime's data: what the launcher's build script asks (``LIBPL``, ``LIBS``) is the
    runtime's, what it runs (the bytecode compiler, ``marshal``) is the same release here."""
    data = next(prefix.glob("lib/python3.*/_sysconfigdata_*.py"))
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / ".cross-python"
    script.write_text(
        "#!/bin/sh\n"
        f"_PYTHON_SYSCONFIGDATA_NAME={shlex.quote(data.stem)} "
        f"_PYTHON_SYSCONFIGDATA_PATH={shlex.quote(str(data.parent))} "
        f'exec {shlex.quote(str(build_python))} "$@"\n'
    )
    script.chmod(0o755)
    return script
