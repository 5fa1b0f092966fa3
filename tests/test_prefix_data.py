"""Files a wheel installs outside its packages (the `data` scheme: `<name>.data/data/share/...`),
which code finds through `sys.prefix`: carried with their distribution and answered at
`sys.prefix/share/...`, the executable being `sys.prefix`. The wheels are made here (a wheel is
a zip file with a record) and installed by the real pip of the build."""

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

import proclimit
from helpers import pip_build

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


def make_wheel(directory, name, files, data):
    """A py3-none-any wheel of distribution `name` (1.0) holding `files` (path in the wheel ->
    text) and, in its data scheme, `data` (path below the prefix -> text)."""
    dist_info = f"{name}-1.0.dist-info"
    contents = dict(files)
    for path, text in data.items():
        contents[f"{name}-1.0.data/{path}"] = text
    contents[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    contents[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: ingot-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, text in contents.items():
        digest = hashlib.sha256(text.encode()).digest()
        encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={encoded},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    contents[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def orphan_wheel(directory):
    """A distribution with a file outside its package that nothing imports."""
    return make_wheel(
        directory,
        "orphan_pkg",
        {"orphan_pkg/__init__.py": ""},
        {"data/share/orphan-pkg/note.txt": "never imported\n"},
    )


APP = textwrap.dedent("""
    import json, os, pathlib, sys, sysconfig
    import demo_data
    here = os.path.join(sys.prefix, "share", "demo-data")
    print(json.dumps({
        "prefixes": sorted({sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}),
        "executable": sys.executable,
        "data_path": sysconfig.get_path("data"),
        "listing": sorted(os.listdir(here)),
        "greeting": open(os.path.join(here, "greeting.txt")).read(),
        "page": pathlib.Path(here, "templates", "page.html").read_text(),
        "is_dir": os.path.isdir(os.path.join(here, "templates")),
        "unused": os.path.exists(os.path.join(sys.prefix, "share", "orphan-pkg")),
        "scripts": os.path.exists(os.path.join(sys.prefix, "bin")),
        "package": demo_data.NAME,
    }))
""")


def test_files_installed_outside_packages_are_answered_at_sys_prefix(tmp_path, launcher_here):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo = make_wheel(
        wheels,
        "demo_data",
        {"demo_data/__init__.py": "NAME = 'demo'\n"},
        {
            "data/share/demo-data/greeting.txt": "hello from the data scheme\n",
            "data/share/demo-data/templates/page.html": "<p>{{ body }}</p>\n",
            "scripts/demo-tool": "#!python\nprint('tool')\n",
        },
    )
    unused = orphan_wheel(wheels)
    app = tmp_path / "app.py"
    app.write_text(APP)
    out = tmp_path / "out" / "app"
    built = pip_build(
        tmp_path,
        app,
        "--dependency",
        demo,
        "--dependency",
        unused,
        "--launcher",
        launcher_here,
        "-o",
        out,
    )
    assert "carrying files installed outside packages" in built.stdout + built.stderr
    assert "demo_data (share)" in built.stdout + built.stderr
    run = proclimit.run([str(out)], max_processes=8, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["prefixes"] == [str(out)] and seen["executable"] == str(out)
    assert seen["data_path"] == str(out)
    assert seen["listing"] == ["greeting.txt", "templates"]
    assert seen["greeting"] == "hello from the data scheme\n"
    assert seen["page"] == "<p>{{ body }}</p>\n" and seen["is_dir"] is True
    # Carried with its distribution only: nothing imports orphan_pkg. Scripts are not carried.
    assert seen["unused"] is False and seen["scripts"] is False
    assert seen["package"] == "demo"
    # Nothing is written beside the executable.
    assert sorted(os.listdir(out.parent)) == ["app"]
    inspected = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert inspected.returncode == 0, inspected.stderr
    shown = "sys.prefix: the executable, which carries files installed outside packages: "
    assert shown + "demo_data-1.0 (share)\n" in inspected.stdout, inspected.stdout


def test_without_such_files_sys_prefix_stays_the_executables_directory(tmp_path, launcher_here):
    # orphan_pkg's files outside its package go with it, and nothing imports it.
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    orphan = orphan_wheel(wheels)
    app = tmp_path / "app.py"
    app.write_text("import sys\nprint(sys.prefix)\n")
    out = tmp_path / "out" / "app"
    built = pip_build(tmp_path, app, "--dependency", orphan, "--launcher", launcher_here, "-o", out)
    assert "installed outside packages" not in built.stdout + built.stderr
    run = proclimit.run([str(out)], max_processes=8, timeout=120, cwd=tmp_path)
    assert (run.returncode, run.stdout) == (0, f"{out.parent}\n"), run.stderr


def test_a_records_paths_outside_the_prefix_or_its_scripts_are_not_carried(tmp_path):
    from ingot.build.archive.collect import _prefix_listed

    (tmp_path / "x-1.dist-info").mkdir()
    (tmp_path / "x-1.dist-info" / "RECORD").write_text(
        "../..,,\n"  # nothing below the prefix
        "../../share/x/a.txt,sha256=AAAA,1\n"
        "../../bin/tool,,\n"  # a script
        "../../include/x.h,,\n"  # a header
        "../../share/../../etc/passwd,,\n"  # climbs out again
        "x/__init__.py,,\n"  # inside the root
    )
    assert _prefix_listed(tmp_path) == [("x-1.dist-info", "share/x/a.txt", "../../share/x/a.txt")]
