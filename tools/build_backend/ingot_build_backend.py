"""PEP 517 backend for ingot: maturin's, after building the launcher.

The `ingot` wheel carries, besides the extension module maturin builds, the launcher binary
(`crates/ingot-launcher`) compiled against the interpreter the wheel is built for, at
`ingot/_launcher/ingot-launcher-X.Y`, so that `ingot build` needs no compiler, and the launcher's
sources at `ingot/_source/`, so that `ingot runtime build` can link a runtime's launcher. maturin builds one
crate per wheel, hence this wrapper: it runs `cargo build -p ingot-launcher` with `PYO3_PYTHON`
set to the building interpreter, copies the binary into the package, then hands over to maturin.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import maturin
from maturin import (  # noqa: F401 - re-exported PEP 517 hooks
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parents[2]


def _build_launcher():
    version = "%d.%d" % sys.version_info[:2]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    environment = dict(os.environ, PYO3_PYTHON=sys.executable)
    command = ["cargo", "build", "--release", "-p", "ingot-launcher"]
    print(
        f"ingot: building the launcher for Python {version}: {' '.join(command)}", file=sys.stderr
    )
    subprocess.run(command, cwd=ROOT, env=environment, check=True, stdout=sys.stderr)
    destination = ROOT / "python" / "ingot" / "_launcher" / f"ingot-launcher-{version}"
    destination.parent.mkdir(exist_ok=True)
    temporary = destination.with_name(destination.name + ".tmp")
    shutil.copyfile(target / "release" / "ingot-launcher", temporary)
    temporary.chmod(0o755)
    temporary.replace(destination)


def _copy_sources():
    """The Rust workspace (manifests, lock file, crates' sources) and the Python files the crates
    embed, into ``ingot/_source/``: `ingot runtime build` links a runtime's launcher from them
    with cargo, so an ingot installed from a wheel can build runtimes (ingot.runtime.launcher_build.source_tree)."""
    destination = ROOT / "python" / "ingot" / "_source"
    shutil.rmtree(destination, ignore_errors=True)
    destination.mkdir()
    for name in ("Cargo.toml", "Cargo.lock"):
        shutil.copy2(ROOT / name, destination / name)
    shutil.copytree(
        ROOT / "crates",
        destination / "crates",
        ignore=shutil.ignore_patterns("target", "__pycache__", "*.pyc"),
    )
    (destination / "python" / "ingot" / "boot").mkdir(parents=True)
    for name in ("support.py", "archive_paths.py"):  # the importer's and the launcher's
        shutil.copy2(
            ROOT / "python" / "ingot" / "boot" / name,
            destination / "python" / "ingot" / "boot" / name,
        )


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _build_launcher()
    _copy_sources()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _build_launcher()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
