"""The processor architectures ingot builds for, and what each is called by the tools a build
uses: one table, read by the runtime's recipes, the launcher's build, the runtime store, the
wheel platforms pip is given and ``ingot inspect``. A machine other than the one ingot runs on is
a cross build: nothing of the target is run during it.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

from ingot.errors import IngotError

__all__ = ["MACHINES", "Machine", "host_machine", "machine_named", "machine_of_elf"]


@dataclass(frozen=True)
class Machine:
    """One architecture, as ``uname -m`` names it (``x86_64``, ``aarch64``)."""

    name: str
    #: The GNU triplet autoconf's ``--host`` takes, and Debian's multiarch directory.
    triplet: str
    #: Rust's target (cargo-zigbuild adds the glibc version).
    rust: str
    #: OpenSSL's ``Configure`` target.
    openssl: str
    #: ``e_machine`` of its ELF files.
    elf: int
    #: Other names users give it (Debian's and Docker's).
    aliases: tuple[str, ...] = ()

    def wheel_platforms(self, glibc: tuple[int, int]) -> tuple[str, ...]:
        """The manylinux wheel tags of this machine for glibc ``glibc`` and older, newest
        first, with the legacy aliases of 2.17 (``manylinux2014``) and older."""
        tags = [f"manylinux_2_{minor}_{self.name}" for minor in range(glibc[1], 16, -1)]
        if glibc >= (2, 17):
            tags.append(f"manylinux2014_{self.name}")
        if self.name == "x86_64":  # manylinux2010 and manylinux1 were x86 only
            tags += ["manylinux2010_x86_64", "manylinux1_x86_64"]
        return tuple(tags)


MACHINES: dict[str, Machine] = {
    machine.name: machine
    for machine in (
        Machine("x86_64", "x86_64-linux-gnu", "x86_64-unknown-linux-gnu", "linux-x86_64", 62,
                ("amd64", "x86-64")),
        Machine("aarch64", "aarch64-linux-gnu", "aarch64-unknown-linux-gnu", "linux-aarch64",
                183, ("arm64",)),
    )
}  # fmt: skip


def machine_named(name: str, *, where: str = "--target") -> Machine:
    """The machine ``name`` names (``aarch64``, ``arm64``); IngotError for one ingot does not
    build for."""
    wanted = name.strip().lower()
    for machine in MACHINES.values():
        if wanted == machine.name or wanted in machine.aliases:
            return machine
    raise IngotError(
        f"{where}: ingot does not build for the architecture {name!r}",
        hint=f"the architectures ingot builds for: {', '.join(MACHINES)}",
    )


def host_machine() -> Machine:
    """The machine ingot runs on; IngotError where that is none of :data:`MACHINES`."""
    return machine_named(platform.machine(), where="this machine")


def machine_of_elf(e_machine: int) -> str:
    """The name of the architecture of an ELF file's ``e_machine`` (``aarch64``), or
    ``e_machine N`` for one ingot does not build for."""
    for machine in MACHINES.values():
        if machine.elf == e_machine:
            return machine.name
    return f"e_machine {e_machine}"
