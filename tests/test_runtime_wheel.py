"""Runtimes as wheels (python/ingot/runtime/wheel.py): a runtime of the store written as the wheel
`pyingot-runtime-cp3X`, byte for byte the same each time, and installed back into a store by pip
(for real, from a folder of wheels); and what a build checks of a runtime before it runs any of it
(its files' hashes, who could have changed them). The runtime here is a small stand-in with a
runtime's layout; tests/test_fresh_system.py installs the real ones and runs what they build."""

import json
import os
import stat
import zipfile

import pytest

import ingot
from ingot import cli
from ingot.machine import MACHINES, host_machine
from ingot.runtime import store, wheel

HOST = host_machine().name

SYSCONFIG = "_sysconfigdata__linux_x86_64-linux-gnu.py"


def stand_in_runtime(root, version="3.11.2", target=f"{HOST}-linux-gnu.2.17", machine=HOST):
    """A runtime's layout (by default of this machine's architecture), with a few files of each
    kind a wheel carries or leaves out."""
    minor = ".".join(version.split(".")[:2])
    path = root / f"cpython-{version}-{machine}-linux-gnu.2.17"
    prefix = path / "python"
    lib = prefix / "lib" / f"python{minor}"
    files = {
        f"bin/python{minor}": "#!/bin/sh\necho stand-in\n",
        "include/Python.h": "",
        f"lib/libpython{minor}.a": "!<arch>\n",
        f"lib/python{minor}/os.py": "# os\n",
        f"lib/python{minor}/{SYSCONFIG}": f"build_time_vars = {{'prefix': '{prefix}'}}\n",
        f"lib/python{minor}/json/__init__.py": "",
        f"lib/python{minor}/ctypes/__init__.py": "",
        f"lib/python{minor}/ctypes/test/test_x.py": "",
        f"lib/python{minor}/test/test_os.py": "",
        f"lib/python{minor}/idlelib/__init__.py": "",
        f"lib/python{minor}/turtle.py": "",
        f"lib/python{minor}/__pycache__/os.cpython-311.pyc": "",
        f"lib/python{minor}/config-{minor}-x86_64-linux-gnu/libpython{minor}.a": "",
        f"lib/python{minor}/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so": "not elf",
        f"lib/python{minor}/lib-dynload/_testcapi.cpython-311-x86_64-linux-gnu.so": "",
        f"lib/python{minor}/site-packages/README.txt": "",
        f"lib/python{minor}/tkinter/__init__.py": "",
        f"lib/python{minor}/tkinter/test/test_tkinter.py": "",
        f"lib/python{minor}/lib-dynload/_tkinter.cpython-311-x86_64-linux-gnu.so": "not elf",
        "lib/tcl8.6/init.tcl": "",
        "lib/tcl8.6/encoding/utf-8.enc": "",
        "lib/tk8.6/tk.tcl": "",
    }
    for name, text in files.items():
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_text(text)
    (prefix / "bin" / f"python{minor}").chmod(0o755)
    (prefix / "bin" / "python3").symlink_to(f"python{minor}")
    (path / "launcher").mkdir()
    (path / "launcher" / f"ingot-launcher-{minor}").write_text("launcher")
    (path / "launcher" / f"ingot-launcher-{minor}").chmod(0o755)
    (path / "launcher" / "_ingot.cpython-311-x86_64-linux-gnu.so").write_text("importer")
    (path / "build.log").write_text("log")
    info = {
        "format": 1,
        "python": {"version": version, "implementation": "cpython"},
        "target": target,
        "glibc_floor": {"version": "2.17", "target": "2.17"},
        "built": "2026-11-26T06:36:48+00:00",
        "launcher": {"file": f"launcher/ingot-launcher-{minor}", "glibc_floor": "2.17"},
    }
    (path / "runtime.json").write_text(json.dumps(info))
    return store.read_runtime(path), lib


def test_a_runtime_wheel_carries_what_builds_use_and_is_the_same_each_time(tmp_path):
    runtime, lib = stand_in_runtime(tmp_path / "store")
    first = wheel.export_wheel(runtime, tmp_path / "a", say=lambda line: None)
    os.utime(lib / "os.py", (1, 1))  # times of the files are not the wheel's
    second = wheel.export_wheel(runtime, tmp_path / "b", say=lambda line: None)
    assert first.read_bytes() == second.read_bytes()
    assert first.name == (
        f"pyingot_runtime_cp311-{ingot.__version__}-py3-none-"
        f"manylinux_2_17_{HOST}.manylinux2014_{HOST}.whl"
    )
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        modes = {
            info.filename: stat.S_IMODE(info.external_attr >> 16) for info in archive.infolist()
        }
        info = json.loads(archive.read("pyingot_runtime_cp311/runtime.json"))
    package = "pyingot_runtime_cp311/"
    assert sorted(name.removeprefix(package) for name in names if name.startswith(package)) == [
        "launcher/_ingot.cpython-311-x86_64-linux-gnu.so",
        "launcher/ingot-launcher-3.11",
        "python/bin/python3.11",
        f"python/lib/python3.11/{SYSCONFIG}",
        "python/lib/python3.11/ctypes/__init__.py",
        "python/lib/python3.11/json/__init__.py",
        "python/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so",
        "python/lib/python3.11/lib-dynload/_tkinter.cpython-311-x86_64-linux-gnu.so",
        "python/lib/python3.11/os.py",
        "python/lib/python3.11/tkinter/__init__.py",
        "python/lib/tcl8.6/encoding/utf-8.enc",
        "python/lib/tcl8.6/init.tcl",
        "python/lib/tk8.6/tk.tcl",
        "runtime.json",
    ]
    dist_info = f"pyingot_runtime_cp311-{ingot.__version__}.dist-info/"
    assert {name for name in names if not name.startswith(package)} == {
        dist_info + "METADATA",
        dist_info + "WHEEL",
        dist_info + "RECORD",
    }
    assert modes[package + "python/bin/python3.11"] == 0o755
    assert modes[package + "launcher/ingot-launcher-3.11"] == 0o755
    assert modes[package + "python/lib/python3.11/os.py"] == 0o644
    assert "built" not in info and info["wheel"]["prefix"] == str(runtime.path / "python")


def test_a_runtime_wheel_installs_into_the_store_with_pip(tmp_path, monkeypatch, capsys):
    runtime, _ = stand_in_runtime(tmp_path / "built")
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    wheel.export_wheel(runtime, tmp_path / "wheels", say=lambda line: None)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    assert cli.main(["runtime", "install", "3.11"]) == 0
    out, err = capsys.readouterr()
    installed = tmp_path / "store" / f"cpython-3.11.2-{HOST}-linux-gnu.2.17"
    assert out.strip() == str(installed)
    assert f"pip install pyingot-runtime-cp311=={ingot.__version__}" in err
    assert os.access(installed / "python" / "bin" / "python3.11", os.X_OK)
    assert not os.access(installed / "python" / "lib" / "python3.11" / "os.py", os.X_OK)
    # sysconfig's data names the prefix where the runtime now is, not where it was built.
    data = (installed / "python" / "lib" / "python3.11" / SYSCONFIG).read_text()
    assert data == f"build_time_vars = {{'prefix': '{installed / 'python'}'}}\n"
    found = store.find_runtime("3.11")
    assert found.path == installed
    assert found.info["wheel"]["installed"] == f"pyingot-runtime-cp311=={ingot.__version__}"
    # It carries the hashes of its interpreter, launcher and extension module, which match.
    assert sorted(found.info["hashes"]) == [
        "launcher/_ingot.cpython-311-x86_64-linux-gnu.so",
        "launcher/ingot-launcher-3.11",
        "python/bin/python3.11",
    ]
    store.verify_runtime(found)
    assert sorted(entry.name for entry in (tmp_path / "store").iterdir()) == [
        installed.name,
        "trusted-wheels.json",  # (the hash of the wheel exported here)
    ]


def test_another_architectures_runtime_wheel_is_installed_when_asked_for(
    tmp_path, monkeypatch, capsys
):
    other = next(name for name in MACHINES if name != HOST)
    runtime, _ = stand_in_runtime(
        tmp_path / "built", target=f"{other}-linux-gnu.2.17", machine=other
    )
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    made = wheel.export_wheel(runtime, tmp_path / "wheels", say=lambda line: None)
    assert made.name.endswith(f"-py3-none-manylinux_2_17_{other}.manylinux2014_{other}.whl")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    assert cli.main(["runtime", "install", "3.11"]) == 1  # none for this machine exported
    assert (
        f"knows no sha256 for pyingot_runtime_cp311-{ingot.__version__}" in capsys.readouterr().err
    )
    assert cli.main(["runtime", "install", "3.11", "--target", other]) == 0
    installed = tmp_path / "store" / f"cpython-3.11.2-{other}-linux-gnu.2.17"
    assert capsys.readouterr().out.strip() == str(installed)
    found = store.find_runtime("3.11", other)
    assert (found.path, found.machine, found.cross) == (installed, other, True)
    assert store.find_runtime("3.11") is None
    store.verify_runtime(found)


@pytest.mark.parametrize("target", [f"{HOST}-../../escaped", f"{HOST}-linux-gnu.2.17/../../x"])
def test_a_runtime_wheel_whose_runtime_json_names_another_place_is_refused(
    tmp_path, monkeypatch, capsys, target
):
    runtime, _ = stand_in_runtime(tmp_path / "built", target=target)
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    wheel.export_wheel(runtime, tmp_path / "wheels", say=lambda line: None)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    assert cli.main(["runtime", "install", "3.11"]) == 1
    assert "holds no usable runtime" in capsys.readouterr().err
    assert [path.name for path in (tmp_path / "store").iterdir()] == ["trusted-wheels.json"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["built", "store", "wheels"]


def test_exporting_a_runtime_the_store_lacks_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path))
    assert cli.main(["runtime", "export", "3.12", "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"error: no runtime 3.12 for {HOST} in {tmp_path}" in err and "hint:" in err


# --- what ingot build trusts of a runtime (issue 26, S4) -----------------------------------


def planted_runtime(tmp_path, monkeypatch):
    """A stand-in runtime in a store of its own whose interpreter, if ingot ever ran it, would
    leave a marker file; its hashes recorded as when it was made."""
    runtime, _ = stand_in_runtime(tmp_path / "store")
    marker = tmp_path / "it-ran"
    runtime.python.write_text(f"#!/bin/sh\ntouch {marker}\n")
    store.record_hashes(runtime)
    (runtime.path / "runtime.json").write_text(json.dumps(runtime.info))
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    return runtime, marker, [str(script), "--python", "3.11", "-o", str(tmp_path / "app")]


def test_a_runtime_file_changed_since_it_was_made_is_refused_and_not_run(
    tmp_path, monkeypatch, capsys
):
    runtime, marker, build = planted_runtime(tmp_path, monkeypatch)
    assert store.verify_runtime(runtime) is None
    launcher = runtime.path / "launcher" / "ingot-launcher-3.11"
    launcher.write_text("another launcher")
    assert cli.main(["build", *build]) == 1
    err = capsys.readouterr().err
    assert f"error: the runtime's {launcher} is not the file it was made with" in err, err
    assert "hint: remove the runtime and build or install it again" in err
    assert not marker.exists()


def test_a_runtime_without_recorded_hashes_is_refused(tmp_path, monkeypatch, capsys):
    runtime, marker, build = planted_runtime(tmp_path, monkeypatch)
    del runtime.info["hashes"]
    (runtime.path / "runtime.json").write_text(json.dumps(runtime.info))
    assert cli.main(["build", *build]) == 1
    assert "records no hashes of its files" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_runtime_another_user_could_replace_is_refused_and_not_run(tmp_path, monkeypatch, capsys):
    # A real other user (nobody, 65534) owning the interpreter, then the store directory; then
    # the store writable by the group: each time the build stops before running anything.
    runtime, marker, build = planted_runtime(tmp_path, monkeypatch)
    os.chown(runtime.python, 65534, 65534)
    assert cli.main(["build", *build]) == 1
    err = capsys.readouterr().err
    assert (
        f"refusing the runtime at {runtime.python}: {runtime.python} is owned by uid 65534" in err
    )
    os.chown(runtime.python, 0, 0)
    os.chown(tmp_path / "store", 65534, 65534)
    assert cli.main(["build", *build]) == 1
    assert f"{tmp_path / 'store'} is owned by uid 65534" in capsys.readouterr().err
    os.chown(tmp_path / "store", 0, 0)
    (tmp_path / "store").chmod(0o775)
    assert cli.main(["build", *build]) == 1
    assert f"{tmp_path / 'store'} is writable by others (mode 775)" in capsys.readouterr().err
    assert not marker.exists()


# --- which runtime wheels ingot installs (issue 39, item 1) ----------------------------------------


def forged_then_real(tmp_path, monkeypatch):
    """A folder with a forged runtime wheel (a self-consistent runtime.json; its "interpreter"
    leaves a marker if ever run), and one with the real one, exported here (so trusted). The
    forged one is made first, under the same name: exporting the real one records its hash."""
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    marker = tmp_path / "it-ran"
    forged, _ = stand_in_runtime(tmp_path / "forged-runtime")
    forged.python.write_text(f"#!/bin/sh\ntouch {marker}\n")
    forged_wheel = wheel.export_wheel(forged, tmp_path / "forged", say=lambda line: None)
    runtime, _ = stand_in_runtime(tmp_path / "built")
    real_wheel = wheel.export_wheel(runtime, tmp_path / "wheels", say=lambda line: None)
    assert forged_wheel.name == real_wheel.name
    assert forged_wheel.read_bytes() != real_wheel.read_bytes()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return marker, forged_wheel, real_wheel


def test_a_forged_runtime_wheel_is_refused_and_nothing_of_it_runs(tmp_path, monkeypatch, capsys):
    marker, _, _ = forged_then_real(tmp_path, monkeypatch)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "forged"))
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    monkeypatch.delenv("INGOT_LAUNCHER", raising=False)
    assert cli.main(["build", str(script), "--python", "3.11", "-o", str(tmp_path / "app")]) == 1
    err = capsys.readouterr().err
    assert "refusing the pyingot-runtime-cp311" in err and "its sha256 is not the one" in err, err
    assert not marker.exists() and not (tmp_path / "app").exists()
    assert [p.name for p in (tmp_path / "store").iterdir() if p.is_dir()] == []


def test_a_build_tagged_lookalike_beside_the_real_wheel_is_refused(tmp_path, monkeypatch, capsys):
    # A wheel of the same name and version with a build tag (pip prefers it), in a second folder.
    marker, forged_wheel, _ = forged_then_real(tmp_path, monkeypatch)
    lookalike = tmp_path / "lookalike"
    lookalike.mkdir()
    name, version, rest = forged_wheel.name.split("-", 2)
    (lookalike / f"{name}-{version}-1-{rest}").write_bytes(forged_wheel.read_bytes())
    monkeypatch.setenv("PIP_FIND_LINKS", f"{tmp_path / 'wheels'} {lookalike}")
    assert cli.main(["runtime", "install", "3.11"]) == 1
    assert "its sha256 is not the one" in capsys.readouterr().err
    assert not marker.exists()
    # The real one alone installs.
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    assert cli.main(["runtime", "install", "3.11"]) == 0
    assert store.find_runtime("3.11") is not None


def test_a_runtime_wheel_ingot_knows_no_hash_of_is_not_asked_of_pip(tmp_path, monkeypatch, capsys):
    # No pinned hash (a checkout's ingot) and none exported here: pip is not run at all, the
    # user's index is never asked for a name that anyone could register.
    monkeypatch.setenv("INGOT_RUNTIMES", str(tmp_path / "store"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
    assert cli.main(["runtime", "install", "3.11"]) == 1
    err = capsys.readouterr().err
    assert "knows no sha256 for pyingot_runtime_cp311-" in err and "hint: build the runtime" in err
    assert "pip install" not in err


def test_the_trusted_hashes_of_a_store_another_user_could_write_are_refused(
    tmp_path, monkeypatch, capsys
):
    _, _, _ = forged_then_real(tmp_path, monkeypatch)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    (tmp_path / "store").chmod(0o777)
    assert cli.main(["runtime", "install", "3.11"]) == 1
    assert "is writable by others (mode 777)" in capsys.readouterr().err
    (tmp_path / "store").chmod(0o755)
    assert cli.main(["runtime", "install", "3.11"]) == 0


def test_a_build_whose_runtime_wrote_no_executable_fails(tmp_path, monkeypatch, capsys):
    # Issue 39, item 1: a runtime's "interpreter" that does nothing and exits 0 (as the forged
    # wheel's shell script did) made the build exit 0 without an executable.
    # (the stand-in's launcher is no launcher: its check, test_launcher's business, is skipped)
    monkeypatch.setattr("ingot.build.resolve.launcher.check_launcher", lambda *args: None)
    runtime, _, build = planted_runtime(tmp_path, monkeypatch)
    runtime.python.write_text("#!/bin/sh\nexit 0\n")
    store.record_hashes(runtime)  # (made so: the store's checks pass)
    (runtime.path / "runtime.json").write_text(json.dumps(runtime.info))
    assert cli.main(["build", *build]) == 1
    assert "ended without error but wrote no" in capsys.readouterr().err
    assert not (tmp_path / "app").exists()


def test_a_build_under_a_runtime_is_done_only_when_its_result_says_so(
    tmp_path, monkeypatch, capsys
):
    # The child sends its result back (the output, its size and sha256): a file that merely
    # appeared where the output goes, however new, is not taken for the build's.
    # (the stand-in's launcher is no launcher: its check, test_launcher's business, is skipped)
    monkeypatch.setattr("ingot.build.resolve.launcher.check_launcher", lambda *args: None)
    runtime, _, build = planted_runtime(tmp_path, monkeypatch)
    runtime.python.write_text(f"#!/bin/sh\nprintf forged > {tmp_path / 'app'}\nexit 0\n")
    store.record_hashes(runtime)
    (runtime.path / "runtime.json").write_text(json.dumps(runtime.info))
    assert cli.main(["build", *build]) == 1
    assert "ended without error but wrote no" in capsys.readouterr().err
