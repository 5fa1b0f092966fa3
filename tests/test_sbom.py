"""The bill of materials every executable carries (``__ingot__/sbom.cdx.json``): a CycloneDX 1.6
document, checked against the schema by cyclonedx-python-lib's validator; what `ingot inspect
--sbom` and `--requirements` print, and pip-audit reading the latter. The end-to-end tests build
a numpy app from PyPI's wheels with this machine's Python, or with the runtime INGOT_TEST_RUNTIME
names (then OpenSSL's version is in the document too)."""

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import proclimit
from helpers import RUNTIMES, environment, pip_build

#: INGOT_TEST_RUNTIME=3.X: the app is built with that runtime (tests/support/cleanroom.py).
RUNTIME = os.environ.get("INGOT_TEST_RUNTIME")


def schema_errors(text):
    """What cyclonedx-python-lib's strict validator finds wrong with ``text`` (None: valid)."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    return None if error is None else str(error.data.message)


_METADATA = """\
Metadata-Version: 2.1
Name: {name}
Version: {version}
{extra}
"""


def _carried(**overrides):
    from ingot.build.archive.sbom import Carried

    fields = {
        "python": "3.11.2",
        "distributions": [
            (
                "Demo_Pkg-1.0+local.dist-info",
                _METADATA.format(
                    name="Demo_Pkg",
                    version="1.0+local",
                    extra="Classifier: License :: OSI Approved :: MIT License",
                ).encode(),
            ),
            (
                "other-2.0.dist-info",
                _METADATA.format(
                    name="other", version="2.0", extra="License: Apache 2.0\n with more text"
                ).encode(),
            ),
        ],
        "libraries": [
            ("libdemo.so.1", "Demo_Pkg-1.0+local.dist-info", "demo.libs/libdemo.so.1", "a" * 64)
        ],
        "desktop_libraries": {"libX11.so.6": "demo/_gui.so"},
    }
    return Carried(**{**fields, **overrides})


_RUNTIME_SOURCES = (
    ("python", "3.11.2", "python3.11_3.11.2.orig.tar.gz", "1" * 64, "CPython"),
    ("patches", "3.11.2", "python3.11_3.11.2-6.debian.tar.xz", "2" * 64, "patches"),
    ("openssl", "3.5.7", "openssl_3.5.7.orig.tar.gz", "3" * 64, "ssl, hashlib"),
)


@pytest.mark.fast
def test_the_document_validates_and_says_what_the_executable_is_made_of():
    from ingot.build.archive.sbom import Facts, document, requirements

    facts = Facts(
        name="demo",
        machine="x86_64",
        runtime="cpython-3.11.2-x86_64-linux-gnu.2.17",
        runtime_sources=_RUNTIME_SOURCES,
        wheels={
            "demo-pkg": {
                "name": "Demo_Pkg",
                "version": "1.0+local",
                "url": "https://example.org/demo_pkg-1.0-py3-none-any.whl",
                "sha256": "b" * 64,
            }
        },
    )
    text = document(facts, _carried()).decode()
    assert schema_errors(text) is None
    bom = json.loads(text)
    by_ref = {component["bom-ref"]: component for component in bom["components"]}
    assert by_ref["runtime:cpython"]["version"] == "3.11.2"
    assert by_ref["runtime:openssl"]["version"] == "3.5.7"
    assert by_ref["runtime:openssl"]["externalReferences"][0]["hashes"][0]["content"] == "3" * 64
    demo = by_ref["pypi:demo-pkg"]
    assert demo["purl"] == "pkg:pypi/demo-pkg@1.0%2Blocal"
    assert demo["hashes"] == [{"alg": "SHA-256", "content": "b" * 64}]
    assert demo["licenses"] == [{"license": {"name": "MIT License"}}]
    assert by_ref["pypi:other"]["licenses"] == [{"license": {"name": "Apache 2.0"}}]
    assert "hashes" not in by_ref["pypi:other"]  # (no wheel recorded for it)
    assert {"ref": "pypi:demo-pkg", "dependsOn": ["library:libdemo.so.1"]} in bom["dependencies"]
    properties = [(p["name"], p["value"]) for p in bom["metadata"]["properties"]]
    assert ("ingot:needs:library", "libX11.so.6 (for demo/_gui.so)") in properties
    assert requirements(text) == ["Demo_Pkg==1.0+local", "other==2.0"]
    # The same facts, the same bytes; other facts, another serial number.
    assert document(facts, _carried()).decode() == text
    other = json.loads(document(Facts(name="demo"), _carried(python="3.11.3")))
    assert other["serialNumber"] != bom["serialNumber"]
    assert other["components"][0]["version"] == "3.11.3"


@pytest.mark.fast
def test_the_validator_rejects_what_the_schema_does_not_allow():
    # (so that the checks of the documents above and below can fail)
    from ingot.build.archive.sbom import Facts, document

    bom = json.loads(document(Facts(name="demo"), _carried()))
    bom["components"][0]["hashes"] = [{"alg": "SHA-256", "content": "not hex"}]
    assert schema_errors(json.dumps(bom)) is not None
    bom = json.loads(document(Facts(name="demo"), _carried()))
    bom["serialNumber"] = "urn:uuid:not-a-uuid"
    assert schema_errors(json.dumps(bom)) is not None


@pytest.mark.fast
def test_a_runtimes_sources_have_versions_recorded_or_read_from_their_names(tmp_path):
    from ingot.build.resolve.target import runtime_sources
    from ingot.runtime.pins import read_pins, source_version
    from ingot.runtime.store import Runtime

    pins = read_pins()
    openssl = pins["openssl"]
    info = {
        "python": {"version": "3.11.9"},
        "sources": {
            "python": {"file": "Python-3.11.9.tgz", "sha256": "0" * 64},
            "openssl": {"file": openssl.file, "sha256": openssl.sha256},  # (before versions)
            "sqlite": {"file": "sqlite-autoconf-3460000.tar.gz", "sha256": "5" * 64},
            "zlib": {"file": "zlib-1.3.1.tar.gz", "sha256": "6" * 64, "version": "1.3.1"},
            "compiler-rt": {"file": "llvm-project-19.1.7.src.tar.xz", "sha256": "7" * 64},
        },
    }
    found = runtime_sources(Runtime(tmp_path, info))
    assert [(name, version) for name, version, *_ in found] == [
        ("python", "3.11.9"),
        ("openssl", openssl.version),
        ("sqlite", "3.46.0"),
        ("zlib", "1.3.1"),
    ]
    assert source_version("zlib_1.3.dfsg+really1.3.2.orig.tar.gz", pins={}) == "1.3.2"
    assert source_version("tcl8.6.14-src.tar.gz", pins={}) == "8.6.14"
    assert source_version("x11proto-dev_2022.1-1_all.deb", pins={}) == "2022.1"


@pytest.mark.fast
def test_the_runtime_build_records_each_sources_version(tmp_path):
    from ingot.elf import GlibcFloor
    from ingot.runtime import builder
    from ingot.runtime.pins import read_pins

    class Toolchain:
        target = "x86_64-linux-gnu.2.17"

        def version(self):
            return "0.15.1"

    openssl = read_pins()["openssl"]
    found = {"python": tmp_path / "Python-3.11.9.tgz", "openssl": tmp_path / openssl.file}
    digests = {"python": "0" * 64, "openssl": openssl.sha256}
    info = builder._runtime_info("3.11.9", Toolchain(), GlibcFloor(None, None), found, {}, digests)
    assert info["sources"]["python"]["version"] == "3.11.9"
    assert info["sources"]["openssl"]["version"] == openssl.version


# --- end to end: a numpy app from PyPI --------------------------------------------------------


@pytest.fixture(scope="module")
def numpy_apps(tmp_path_factory):
    """Two builds of the same numpy app (the second from the build cache's install)."""
    work = tmp_path_factory.mktemp("sbom")
    script = work / "app.py"
    script.write_text(
        textwrap.dedent("""\
        # /// script
        # dependencies = ["numpy"]
        # ///
        import numpy
        print(numpy.__version__, int(numpy.arange(4).sum()))
        """)
    )
    python = ["--python", RUNTIME] if RUNTIME else ["--python", "local"]
    built = []
    with environment("INGOT_RUNTIMES", RUNTIMES if RUNTIME else os.environ["INGOT_RUNTIMES"]):
        for name in ("first", "second"):
            (work / name).mkdir()
            output = work / name / "app"
            pip_build(work, script, *python, "-o", output, "-q")
            built.append(output)
    return built


def inspect(*args):
    run = subprocess.run(
        [sys.executable, "-m", "ingot", "inspect", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_numpy_apps_bill_of_materials_validates_and_names_what_it_carries(numpy_apps):
    app = numpy_apps[0]
    ran = proclimit.run([str(app)], timeout=120)
    assert ran.returncode == 0, ran.stderr
    numpy_version = ran.stdout.split()[0]
    text = inspect("--sbom", app)
    assert schema_errors(text) is None
    bom = json.loads(text)
    by_ref = {component["bom-ref"]: component for component in bom["components"]}
    numpy = by_ref["pypi:numpy"]
    assert numpy["version"] == numpy_version
    assert numpy["purl"] == f"pkg:pypi/numpy@{numpy_version}"
    assert numpy["licenses"]  # (numpy's License-Expression)
    assert re.fullmatch(r"[0-9a-f]{64}", numpy["hashes"][0]["content"])
    wheel = numpy["externalReferences"][0]["url"]
    assert wheel.endswith(".whl") and f"numpy-{numpy_version}-" in wheel, wheel
    # numpy's own copy of OpenBLAS, from its wheel.
    libraries = next(d["dependsOn"] for d in bom["dependencies"] if d["ref"] == "pypi:numpy")
    assert any("openblas" in ref for ref in libraries), libraries
    assert all(by_ref[ref]["description"].startswith("shared library") for ref in libraries)
    described = json.loads(inspect("--json", app))
    properties = [(p["name"], p["value"]) for p in bom["metadata"]["properties"]]
    floor = described["glibc_floor"]["version"]
    assert ("ingot:needs:glibc", f"{floor} or later") in properties
    python = by_ref["runtime:cpython"]["version"]
    if RUNTIME:
        from ingot.runtime.pins import read_pins

        assert python == described["runtime"]["python"]
        # OpenSSL, built into the runtime: its version and source's sha256.
        assert re.fullmatch(r"\d+\.\d+\.\d+", by_ref["runtime:openssl"]["version"])
        assert by_ref["runtime:openssl"]["version"] == read_pins()["openssl"].version
    else:
        assert python == sys.version.split()[0]
    assert any(e["name"] == "__ingot__/sbom.cdx.json" for e in described["entries"])
    # The launcher the archive is put behind (the archive's own document is the same behind any).
    launcher = app.read_bytes()[: described["launcher_size"]]
    assert by_ref["launcher"]["hashes"][0]["content"] == hashlib.sha256(launcher).hexdigest()


def test_two_builds_of_the_same_inputs_carry_the_same_bill_of_materials(numpy_apps):
    first, second = (inspect("--sbom", app) for app in numpy_apps)
    assert first == second


#: pip-audit of a requirements file as it is: nothing resolved (--no-deps) or installed.
AUDIT = [sys.executable, "-m", "pip_audit", "--no-deps", "--disable-pip", "-r"]


def test_pip_audit_reads_the_requirements_list(numpy_apps, tmp_path):
    listed = inspect("--requirements", numpy_apps[0]).splitlines()
    assert any(re.fullmatch(r"numpy==\d+\.\d+\.\d+", line) for line in listed), listed
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(listed) + "\n")
    run = subprocess.run(
        [*AUDIT, str(requirements), "--progress-spinner", "off", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    audited = {d["name"]: d for d in json.loads(run.stdout)["dependencies"]}
    assert sorted(audited) == sorted(line.split("==")[0].lower() for line in listed)
    for found in audited.values():
        # Checked against PyPI's vulnerability data; or, where pip-audit cannot reach it (a
        # mirror without PyPI's per-release JSON API), parsed and named as not audited.
        assert "version" in found or "not found on PyPI" in found.get("skip_reason", ""), found
    # (a line pip-audit cannot read fails it: the check above can fail)
    requirements.write_text("numpy=== ===\n")
    bad = subprocess.run(
        [*AUDIT, str(requirements)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0
