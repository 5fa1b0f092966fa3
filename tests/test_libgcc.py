"""GCC's support library every executable carries (ingot.build.archive.libgcc, issue 52): the
pinned Debian 11 packages, what is taken from them, and what a build carries. That glibc finds
the carried copy on a system with glibc alone is tested where it happens: in the clean room
(tests/test_clean_room.py, tests/test_apps.py's nacl app)."""

import hashlib
import json
import shutil

import pytest

from ingot import elf
from ingot._ingot import IngotFinder, elf_dynamic
from ingot.build.archive import libgcc
from ingot.build.archive.pack import pack
from ingot.build.archive.sbom import Facts
from ingot.errors import IngotError
from ingot.machine import MACHINES, host_machine

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


@pytest.mark.parametrize("machine", sorted(libgcc.PACKAGES))
def test_each_machines_copy_is_its_pinned_library_and_needs_no_newer_glibc_than_2_17(
    machine, tmp_path
):
    path = libgcc.extract(machine, tmp_path)
    image = path.read_bytes()
    assert hashlib.sha256(image).hexdigest() == libgcc.PACKAGES[machine].library_sha256
    assert elf.elf_machine(path) == machine
    dynamic = elf_dynamic(image)
    assert (dynamic["soname"], dynamic["machine"]) == (libgcc.LIBGCC_S, MACHINES[machine].elf)
    assert dynamic["needed"] == ["libc.so.6"], dynamic
    floor = elf.glibc_floor([(path.name, image)])
    assert floor.version is not None and floor.version <= (2, 17), floor


def test_a_damaged_package_is_refused_with_a_hint(tmp_path, monkeypatch):
    package = libgcc.PACKAGES[host_machine().name]
    copy = tmp_path / "debs"
    shutil.copytree(libgcc.DIRECTORY, copy)
    data = bytearray((copy / package.file).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / package.file).write_bytes(bytes(data))
    monkeypatch.setattr(libgcc, "DIRECTORY", copy)
    with pytest.raises(IngotError, match="not the pinned package") as raised:
        libgcc.extract(host_machine().name, tmp_path)
    assert raised.value.hint and "reinstall ingot" in raised.value.hint
    (copy / package.file).unlink()
    with pytest.raises(IngotError, match="cannot be read"):
        libgcc.extract(host_machine().name, tmp_path)
    with pytest.raises(IngotError, match=r"no libgcc_s\.so\.1 for riscv64"):
        libgcc.package_of("riscv64")


def test_a_build_carries_it_and_its_bill_of_materials_names_debians_package(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "hello_app.py").write_text("print('hello')\n")
    output = tmp_path / "app.ingot"
    result = pack(
        output, directories=[app], entry_modules=["hello_app"], sbom=Facts(name="hello-app")
    )
    assert libgcc.LIBGCC_S in result.names("shared-library")
    finder = IngotFinder(str(output), any_python=True)
    bill = json.loads(finder.read("__ingot__/sbom.cdx.json"))
    (component,) = [c for c in bill["components"] if c["name"] == libgcc.LIBGCC_S]
    assert component["purl"] == libgcc.PACKAGES[host_machine().name].purl, component
    assert "carried by ingot" in component["description"], component
    assert component["hashes"][0]["content"] == libgcc.PACKAGES[host_machine().name].library_sha256
    # glibc's lookup prefers the system's copy: the table the importer reads lists it.
    assert libgcc.LIBGCC_S in json.loads(finder.read("__ingot__/system-first.json"))
