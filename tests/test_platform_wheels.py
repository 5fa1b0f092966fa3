"""A platform wheel is never silently traded for a pure one (issue 52, item 4;
:mod:`ingot.build.stages.wheels`): real wheels from PyPI. soundfile 0.13.1 ships libsndfile
only in its ``manylinux_2_28`` wheel; asked for glibc 2.17, pip takes its pure
``py2.py3-none-any`` wheel, which has no library.

A build with this Python (``--python local``) asks pip for this machine's platforms, where the
question does not arise: these builds take the runtime's platforms (glibc 2.17 and the newer
manylinux ones of the fallback, :func:`ingot.build.resolve.target.runtime_target`) with this
Python and its launcher, so that no runtime is needed."""

import dataclasses
import sys

import pytest

from ingot.build.pipeline import build
from ingot.build.resolve.settings import Request, Settings
from ingot.build.resolve.spec import resolve
from ingot.build.resolve.target import RUNTIME_PLATFORMS, newer_manylinux_platforms
from ingot.build.stages.wheels import platform_floor, wheel_floor
from ingot.errors import BuildError
from ingot.inspection import describe

import proclimit
from helpers import real_launcher

PURE = "soundfile-0.13.1-py2.py3-none-any.whl"
NATIVE = "soundfile-0.13.1-py2.py3-none-manylinux_2_28_x86_64.whl"
LIBRARY = "_soundfile_data/libsndfile_x86_64.so"

needs_x86_64 = pytest.mark.skipif(
    not RUNTIME_PLATFORMS[0].endswith("_x86_64"), reason="soundfile's wheel is x86-64's"
)


def test_the_floor_of_a_wheel_is_the_oldest_of_its_manylinux_tags():
    assert platform_floor("manylinux_2_28_x86_64") == (2, 28)
    assert platform_floor("manylinux2014_aarch64") == (2, 17)
    assert platform_floor("manylinux1_x86_64") == (2, 5)
    assert platform_floor("any") is None and platform_floor("musllinux_1_2_x86_64") is None
    assert wheel_floor(NATIVE) == (2, 28) and wheel_floor(PURE) is None
    assert wheel_floor(
        "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    ) == (2, 27)


def _soundfile_build(tmp_path, platform_wheels=None):
    """Builds an app that needs soundfile==0.13.1 for the runtime's platforms (see the module);
    returns the result and the lines the build said."""
    launcher = real_launcher()
    if launcher is None:
        pytest.skip("no launcher: set INGOT_LAUNCHER or build it with cargo")
    script = tmp_path / "app.py"
    script.write_text(
        '# /// script\n# dependencies = ["soundfile==0.13.1"]\n# ///\n'
        "import soundfile\nprint(soundfile.__version__, soundfile.__libsndfile_version__)\n"
    )
    settings = Settings(
        python="local", output=str(tmp_path / "app"), platform_wheels=platform_wheels
    )
    spec = resolve(Request(source=str(script), launcher=str(launcher), settings=settings))
    assert spec.target.python == f"{sys.version_info[0]}.{sys.version_info[1]}"
    target = dataclasses.replace(
        spec.target, platforms=RUNTIME_PLATFORMS, newer_platforms=newer_manylinux_platforms()
    )
    if not any(platform_floor(name) >= (2, 28) for name in target.newer_platforms):
        pytest.skip("this machine's glibc is older than 2.28: no newer platform to take")
    said: list[str] = []
    try:
        result = build(dataclasses.replace(spec, target=target), said.append)
    except BuildError as error:
        if "NewConnectionError" in str(error) or "No matching distribution" in str(error):
            pytest.skip(f"pip could not reach PyPI: {str(error)[-300:]}")
        error.said = said
        raise
    return result, said


@needs_x86_64
def test_the_native_wheel_for_a_newer_glibc_is_taken_and_said(tmp_path):
    result, said = _soundfile_build(tmp_path)
    trade = [line for line in said if "took native wheels" in line]
    assert len(trade) == 1, said
    # The distribution, both wheels, and the glibc each needs.
    for part in ("soundfile 0.13.1", PURE, NATIVE, "glibc 2.28", "for the target's 2.17"):
        assert part in trade[0], (part, trade[0])
    assert "--platform-wheels keep-floor" in trade[0]
    # The native wheel's library is carried, and it counts in the executable's floor.
    described = describe(result.output)
    names = {entry["name"] for entry in described["entries"]}
    assert LIBRARY in names
    assert result.floor is not None and result.floor.each[LIBRARY] >= (2, 27)
    assert "soundfile-0.13.1.dist-info/WHEEL" in names
    # The executable runs: soundfile's import loads libsndfile (this machine has none of its own:
    # with the pure wheel, the import fails, "sndfile library not found").
    run = proclimit.run([result.output], timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("0.13.1 1."), run.stdout


@needs_x86_64
def test_keep_floor_stops_the_build_naming_both_wheels(tmp_path):
    with pytest.raises(BuildError) as error:
        _soundfile_build(tmp_path, platform_wheels="keep-floor")
    message = str(error.value)
    for part in ("soundfile 0.13.1", PURE, NATIVE, "glibc 2.28", "glibc 2.17"):
        assert part in message, (part, message)
    assert "--platform-wheels prefer" in error.value.hint
    assert not any("took native wheels" in line for line in error.value.said)
    assert not (tmp_path / "app").exists()
