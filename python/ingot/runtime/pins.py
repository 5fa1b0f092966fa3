"""The source releases runtimes are built from, pinned in one file (``sources.toml``), one line
each: the Debian source package and version it comes from, its upstream release, the file and
its sha256. Debian's mirror (the one apt is configured with: no host is written here) is where
they come from; its signed Sources index gives each file's sha256.

    ingot runtime sources DIR [3.11 ...]     # the pinned files into DIR, each checked
    ingot runtime sources --update           # pin the newest release the mirror serves
    ingot runtime outdated                   # what the mirror has newer than the pins

The newest release of a component is the highest Debian version, in any suite the apt
configuration has (``scripts/runtime-sources`` adds the security suites, bookworm, trixie,
forky, sid and experimental), whose files the mirror actually serves (a suite's index may list
a release whose files are not there yet), within the component's ``line`` (OpenSSL's 3.5 LTS).
A build checks every file it uses against its pin (:func:`ingot.runtime.sources.
resolve_sources`), and a runtime built from other files than the pins is built again
(:func:`ingot.runtime.builder.build_runtime`).

This module needs only the standard library and apt's commands (``apt-cache``, ``apt-get
--print-uris``): ``python3 python/ingot/runtime/pins.py fetch DIR 3.11`` runs it without ingot
installed (``scripts/runtime-sources``, as root on a fresh machine).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

try:
    from ingot.errors import IngotError as _Base
except ImportError:  # run as a script, without ingot installed

    class _Base(Exception):  # type: ignore[no-redef]
        def __init__(self, message: str, hint: str | None = None) -> None:
            super().__init__(message + (f"\nhint: {hint}" if hint else ""))
            self.hint = hint


__all__ = [
    "COMPONENTS",
    "PINS",
    "Component",
    "Offer",
    "Pin",
    "PinError",
    "debian_compare",
    "fetch",
    "outdated",
    "pins_for",
    "read_pins",
    "source_version",
    "upstream_version",
]

#: The pin file.
PINS = Path(__file__).with_name("sources.toml")


class PinError(_Base):
    """The pins cannot be read, fetched or updated."""


@dataclasses.dataclass(frozen=True)
class Component:
    """Something a runtime is built from: its key (``openssl``, ``python-3.13``; the key of
    ``--source NAME=`` for libraries), the Debian package it comes from, and the release line
    it keeps to (``3.5``: OpenSSL's LTS; None: the newest)."""

    name: str
    package: str
    line: str | None = None
    #: A binary package (``x11proto-dev``: the X protocol's headers, whose source the mirror
    #: may not serve), not a source package.
    binary: bool = False
    #: Which file of the source package: its upstream release (``orig``) or Debian's part
    #: (``debian``: the patch series of ``patches-3.11``).
    part: str = "orig"


#: What runtimes are built from. CPython per minor version (``python-3.X``), the patch series
#: of a release Debian patches (``patches-3.X``), the libraries (:data:`ingot.runtime.recipes.
#: LIBRARIES`' names) and the build's tools (compiler-rt, for PGO's training run).
COMPONENTS: tuple[Component, ...] = (
    Component("python-3.11", "python3.11"),
    Component("patches-3.11", "python3.11", part="debian"),
    Component("python-3.12", "python3.12"),
    Component("python-3.13", "python3.13"),
    Component("python-3.14", "python3.14"),
    Component("python-3.15", "python3.15"),
    Component("zlib", "zlib"),
    Component("bzip2", "bzip2"),
    Component("xz", "xz-utils"),
    Component("expat", "expat"),
    Component("mpdecimal", "mpdecimal"),
    Component("libuuid", "util-linux"),
    Component("libffi", "libffi"),
    Component("sqlite", "sqlite3"),
    Component("openssl", "openssl", line="3.5"),
    Component("ncurses", "ncurses"),
    Component("readline", "readline"),
    Component("xorgproto", "x11proto-dev", binary=True),
    Component("libx11", "libx11"),
    Component("tcl", "tcl8.6"),
    Component("tk", "tk8.6"),
    # (of the LLVM release zig's clang is: ziglang 0.17.1's clang 22.1.8)
    Component("compiler-rt", "llvm-toolchain-22", line="22.1.8"),
)


@dataclasses.dataclass(frozen=True)
class Pin:
    """One line of the pin file."""

    name: str
    package: str
    debian: str  # Debian's version of the package
    version: str  # the upstream release
    file: str
    sha256: str

    def line(self) -> str:
        """The pin as its line in the pin file."""
        fields = ", ".join(
            f'{key} = "{getattr(self, key)}"'
            for key in ("package", "debian", "version", "file", "sha256")
        )
        return f'"{self.name}" = {{ {fields} }}'


@dataclasses.dataclass(frozen=True)
class Offer:
    """A release of a package the mirror's index lists: its Debian version, its files (name:
    sha256), and whether the mirror serves the component's file (None: not asked)."""

    debian: str
    files: dict[str, str]
    served: bool | None = None


def read_pins(path: Path = PINS) -> dict[str, Pin]:
    """The pins by name."""
    text = path.read_text()
    if sys.version_info >= (3, 11):
        import tomllib

        data = tomllib.loads(text)
    else:  # (Python 3.10: ingot's reader, tomli)
        from ingot import toml

        data = toml.tomllib_for(path).loads(text)
    pins = {}
    for name, entry in data.get("pins", {}).items():
        try:
            pins[name] = Pin(name=name, **entry)
        except TypeError as error:
            raise PinError(f"{path}: pin {name!r}: {error}") from None
    return pins


def pins_for(python_version: str, pins: dict[str, Pin] | None = None) -> dict[str, Pin]:
    """What a runtime of ``python_version`` (``3.13``) is built from, keyed as
    :func:`ingot.runtime.sources.resolve_sources` keys its files: ``python``, ``patches`` (if
    that release is patched), each library and tool. PinError when CPython ``python_version``
    has no pin (the mirror serves no source of it)."""
    pins = read_pins() if pins is None else pins
    chosen = {
        name: pin for name, pin in pins.items() if not name.startswith(("python-", "patches-"))
    }
    if f"python-{python_version}" not in pins:
        pinned = sorted(name.removeprefix("python-") for name in pins if name.startswith("python-"))
        raise PinError(
            f"no source of CPython {python_version} is pinned (the Debian mirror serves none: "
            "`ingot runtime outdated` shows what it lists)",
            hint=f"build for a pinned version ({', '.join(pinned)}: `--python {pinned[-1]}`), "
            "or give a source release with --source python=FILE",
        )
    chosen["python"] = pins[f"python-{python_version}"]
    if f"patches-{python_version}" in pins:
        chosen["patches"] = pins[f"patches-{python_version}"]
    return chosen


# Debian versions (deb-version(7)): [epoch:]upstream[-revision], compared part by part; in each,
# runs of non-digits lexically (letters before other characters, `~` before anything, even the
# end) and runs of digits numerically.


def _order(character: str) -> int:
    if character == "~":
        return -1
    if character.isalpha():
        return ord(character)
    return ord(character) + 256


def _compare_part(a: str, b: str) -> int:
    while a or b:
        text_a = re.match(r"[^0-9]*", a)[0]  # type: ignore[index]
        text_b = re.match(r"[^0-9]*", b)[0]  # type: ignore[index]
        for x, y in zip(text_a + "\0", text_b + "\0"):
            order_x = 0 if x == "\0" else _order(x)
            order_y = 0 if y == "\0" else _order(y)
            if order_x != order_y:
                return -1 if order_x < order_y else 1
            if x == "\0" or y == "\0":
                break
        a, b = a[len(text_a) :], b[len(text_b) :]
        digits_a = re.match(r"[0-9]*", a)[0]  # type: ignore[index]
        digits_b = re.match(r"[0-9]*", b)[0]  # type: ignore[index]
        number_a, number_b = int(digits_a or 0), int(digits_b or 0)
        if number_a != number_b:
            return -1 if number_a < number_b else 1
        a, b = a[len(digits_a) :], b[len(digits_b) :]
    return 0


def _split(version: str) -> tuple[int, str, str]:
    epoch, _, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
    return int(epoch or 0), upstream, revision


def debian_compare(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian version ``a`` is older than, the same as or newer than ``b``."""
    (epoch_a, upstream_a, revision_a), (epoch_b, upstream_b, revision_b) = _split(a), _split(b)
    if epoch_a != epoch_b:
        return -1 if epoch_a < epoch_b else 1
    return _compare_part(upstream_a, upstream_b) or _compare_part(revision_a, revision_b)


#: A source release's file name: ``NAME-VERSION.tar.gz`` (upstream's), ``NAME_VERSION.orig.tar.gz``
#: (Debian's), with what follows the version.
_SOURCE_FILE = re.compile(
    r"^(?P<name>.+?)[-_](?P<version>\d[\w.+~:]*?)(\.orig)?([-.]src)?"
    r"\.(tar\.(gz|xz|bz2|zst)|tgz|zip)$"
)


def source_version(file: str, sha256: str = "", pins: dict[str, Pin] | None = None) -> str | None:
    """The upstream release a runtime's source file is of: its pin's version when it is a pinned
    file (by sha256, else by name), else read from the file's name (``openssl-3.5.7.tar.gz``,
    ``zlib_1.3.dfsg+really1.3.2.orig.tar.gz``, ``sqlite-autoconf-3460000.tar.gz``); None when the
    name says none."""
    pinned = read_pins() if pins is None else pins
    for pin in pinned.values():
        if (sha256 and pin.sha256 == sha256) or (not sha256 and pin.file == file):
            return pin.version
    package = re.fullmatch(r"[^_]+_(?P<version>[^_]+)_[^_]+\.deb", file)  # (Debian's binary)
    if package is not None:
        return upstream_version(package["version"])
    match = _SOURCE_FILE.match(re.sub(r"^(tcl|tk)(\d)", r"\1-\2", file))  # (tcl8.6.14-src)
    if match is None:
        return None
    version = match["version"]
    if match["name"].startswith("sqlite") and re.fullmatch(r"\d{7}", version):
        # (SQLite's own file names: 3XXYYZZ)
        return f"{version[0]}.{int(version[1:3])}.{int(version[3:5])}"
    if "_" in file and match[3]:  # (a Debian .orig file: its upstream part)
        return upstream_version(version)
    return version


def upstream_version(debian: str) -> str:
    """The upstream release a Debian version packages: no epoch, no Debian revision, no
    repacking suffix (``1:1.3.dfsg+really1.3.2-4``: ``1.3.2``; ``8.6.18+dfsg-1``: ``8.6.18``)."""
    _, upstream, _ = _split(debian)
    if "+really" in upstream:
        upstream = upstream.rsplit("+really", 1)[1]
    return re.sub(r"[.+~](dfsg|ds)[0-9]*$", "", upstream)


def _apt(*argv: str) -> str:
    if shutil.which(argv[0]) is None:
        raise PinError(
            f"{argv[0]} is not installed: the pinned sources come from Debian's mirror through apt",
            hint="on a machine without apt, give the source releases with --sources DIR",
        )
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0 and "Unable to locate" not in result.stderr:
        raise PinError(f"`{' '.join(argv)}` failed: {result.stderr.strip()[-500:]}")
    return result.stdout


def _stanzas(text: str) -> Iterable[dict[str, list[str]]]:
    """The stanzas of an apt index (``Field: value`` lines, continued by indented ones)."""
    for block in text.split("\n\n"):
        fields: dict[str, list[str]] = {}
        key = None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key is not None:
                fields[key].append(line.strip())
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = [value.strip()] if value.strip() else []
        if fields:
            yield fields


def offers(component: Component) -> list[Offer]:
    """The releases of ``component``'s package the mirror's index lists, newest first."""
    found: dict[str, Offer] = {}
    if component.binary:
        for fields in _stanzas(_apt("apt-cache", "show", "--no-all-versions", component.package)):
            # (every version apt knows: `apt-cache madison` would list them; show's first is
            # the candidate, which is what a binary pin follows)
            if fields.get("Package", [""])[0] != component.package:
                continue
            file = fields.get("Filename", [""])[0].rsplit("/", 1)[-1]
            found[fields["Version"][0]] = Offer(
                fields["Version"][0], {file: fields.get("SHA256", [""])[0]}
            )
    else:
        for fields in _stanzas(_apt("apt-cache", "showsrc", component.package)):
            if fields.get("Package", [""])[0] != component.package:
                continue
            files = {}
            for line in fields.get("Checksums-Sha256", []):
                sha256, _size, name = line.split()
                files[name] = sha256
            found[fields["Version"][0]] = Offer(fields["Version"][0], files)
    by_version = functools.cmp_to_key(debian_compare)
    ordered = sorted(found.values(), key=lambda offer: by_version(offer.debian), reverse=True)
    return [offer for offer in ordered if _in_line(component, offer.debian)]


def _in_line(component: Component, debian: str) -> bool:
    if component.line is None:
        return True
    version = upstream_version(debian)
    return version == component.line or version.startswith(component.line + ".")


def component_file(component: Component, offer: Offer) -> str | None:
    """The file of ``offer`` a pin of ``component`` names: the upstream tarball, Debian's part,
    or the binary package."""
    for name in sorted(offer.files):
        if name.endswith((".asc", ".dsc")) or "orig-" in name:
            continue
        if component.binary or (component.part == "orig" and ".orig.tar." in name):
            return name
        if component.part == "debian" and ".debian.tar." in name:
            return name
    return None


def uris(component: Component, debian: str) -> dict[str, str]:
    """Where the mirror apt is configured with serves the files of ``component``'s package at
    ``debian`` (file name: URI), as ``apt-get --print-uris`` says."""
    spec = f"{component.package}={debian}"
    if component.binary:
        text = _apt("apt-get", "download", "--print-uris", "-qq", spec)
    else:
        text = _apt("apt-get", "source", "--print-uris", "-qq", spec)
    found = {}
    for line in text.splitlines():
        match = re.match(r"'([^']+)' (\S+) ", line)
        if match:
            found[match[2]] = match[1]
    return found


def _served(uri: str) -> bool:
    if not uri:
        return False
    try:
        with urllib.request.urlopen(urllib.request.Request(uri, method="HEAD"), timeout=30):
            return True
    except (urllib.error.URLError, OSError):
        return False


def newest(component: Component, check_served: bool = True) -> tuple[Offer | None, Offer | None]:
    """The newest release of ``component`` the mirror lists, and the newest it serves (its file
    there: a HEAD request), within its line."""
    listed = offers(component)
    if not listed or not check_served:
        return (listed[0] if listed else None), None
    for offer in listed:
        file = component_file(component, offer)
        uri = uris(component, offer.debian).get(file or "")
        if file and uri and _served(uri):
            return listed[0], dataclasses.replace(offer, served=True)
    return listed[0], None


def pin_of(component: Component, offer: Offer) -> Pin:
    file = component_file(component, offer)
    if file is None:
        raise PinError(f"{component.package} {offer.debian}: no file to pin for {component.name}")
    return Pin(
        name=component.name,
        package=component.package,
        debian=offer.debian,
        version=upstream_version(offer.debian),
        file=file,
        sha256=offer.files[file],
    )


@dataclasses.dataclass(frozen=True)
class Outdated:
    """A component for which the mirror lists a newer release than its pin (or has one where
    there is no pin): ``served`` is the newest it serves, None when it serves none newer."""

    component: Component
    pin: Pin | None
    listed: Offer
    served: Offer | None

    def describe(self) -> str:
        now = f"{self.pin.version} ({self.pin.debian})" if self.pin else "not pinned"
        listed = f"{upstream_version(self.listed.debian)} ({self.listed.debian})"
        if self.served is None and self.pin is None:
            newer = f"lists {listed}, but serves none of its releases' files"
        elif self.served is None:
            newer = f"lists {listed}, but serves no newer file"
        elif self.served.debian == self.listed.debian:
            newer = f"serves {listed}"
        else:
            served = f"{upstream_version(self.served.debian)} ({self.served.debian})"
            newer = f"serves {served}; lists {listed}, whose files it does not serve"
        return f"{self.component.name}: {now}; the mirror {newer}"


def compare(
    pins: dict[str, Pin], newest_of: Callable[[Component], tuple[Offer | None, Offer | None]]
) -> list[Outdated]:
    """The components whose newest release (``newest_of``: listed, served) is newer than their
    pin's, or that have none pinned but a release listed."""
    found = []
    for component in COMPONENTS:
        pin = pins.get(component.name)
        listed, served = newest_of(component)
        if listed is None:
            continue
        if pin is not None and debian_compare(listed.debian, pin.debian) <= 0:
            continue
        if (
            served is not None
            and pin is not None
            and debian_compare(served.debian, pin.debian) <= 0
        ):
            served = None
        found.append(Outdated(component, pin, listed, served))
    return found


def outdated(pins: dict[str, Pin] | None = None) -> list[Outdated]:
    """:func:`compare` against the mirror apt is configured with."""
    return compare(read_pins() if pins is None else pins, newest)


def update(path: Path = PINS, say: Callable[[str], None] = print) -> list[Pin]:
    """Pins each component to the newest release the mirror serves, rewriting its line in
    ``path`` (the rest of the file is kept); returns the pins that changed."""
    pins = read_pins(path)
    changed = []
    for component in COMPONENTS:
        if component.part == "debian":
            continue  # (follows its release's pin, below)
        _listed, served = newest(component)
        if served is None:
            if component.name in pins:
                say(f"{component.name}: the mirror serves no release of {component.package}")
            continue
        pin = pin_of(component, served)
        if pins.get(component.name) != pin:
            changed.append(pin)
            pins[component.name] = pin
    for component in COMPONENTS:
        release = pins.get(f"python-{component.name.removeprefix('patches-')}")
        if component.part != "debian" or release is None:
            continue
        # Debian's patch series of the pinned release: the newest the mirror serves (a newer
        # one may be listed whose files it does not serve).
        patches = next(
            (
                pin_of(component, offer)
                for offer in offers(component)
                if upstream_version(offer.debian) == release.version
                and _served(
                    uris(component, offer.debian).get(component_file(component, offer) or "", "")
                )
            ),
            None,
        )
        if patches is not None and pins.get(component.name) != patches:
            pins[component.name] = patches
            changed.append(patches)
    _write(path, pins)
    for pin in changed:
        say(f"pinned {pin.name} {pin.version} ({pin.package} {pin.debian})")
    return changed


def _write(path: Path, pins: dict[str, Pin]) -> None:
    lines = path.read_text().splitlines()
    header = []
    for line in lines:
        if line.startswith("[pins]"):
            break
        header.append(line)
    order = [component.name for component in COMPONENTS]
    body = [pins[name].line() for name in order if name in pins]
    path.write_text("\n".join([*header, "[pins]", *body]) + "\n")


def sha256_of(path: Path) -> str:
    """The sha256 of the file at ``path``, in hex (here, where a script without ingot installed
    can use it; :mod:`ingot.runtime.store` re-exports it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(
    directory: Path,
    pins: Iterable[Pin],
    say: Callable[[str], None] = print,
) -> list[Path]:
    """Downloads each pinned file into ``directory`` (unless it is there with its pinned sha256)
    from the mirror apt is configured with, each checked against its pin."""
    directory.mkdir(parents=True, exist_ok=True)
    by_name = {component.name: component for component in COMPONENTS}
    found = []
    for pin in pins:
        target = directory / pin.file
        if target.is_file() and sha256_of(target) == pin.sha256:
            found.append(target)
            continue
        component = by_name.get(pin.name, Component(pin.name, pin.package))
        uri = uris(component, pin.debian).get(pin.file)
        if uri is None:
            raise PinError(
                f"{pin.name}: apt knows no {pin.file} of {pin.package} {pin.debian}",
                hint="add deb-src entries for the suite that has it (scripts/runtime-sources "
                "does, as root), then `apt-get update`",
            )
        say(f"  {pin.name}: {pin.file}")
        partial = target.with_name(target.name + ".part")
        try:
            with urllib.request.urlopen(uri, timeout=120) as response, open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
        except (urllib.error.URLError, OSError) as error:
            partial.unlink(missing_ok=True)
            raise PinError(
                f"{pin.name}: cannot download {pin.file} from the mirror: {error}",
                hint="`ingot runtime outdated` shows what the mirror serves; pin a release it "
                "serves (`ingot runtime sources --update`)",
            ) from None
        got = sha256_of(partial)
        if got != pin.sha256:
            partial.unlink()
            raise PinError(
                f"{pin.name}: {pin.file} from the mirror has sha256 {got}, not the pinned "
                f"{pin.sha256}",
                hint="the mirror's file is not the one pinned: check the mirror, or pin again",
            )
        partial.replace(target)
        found.append(target)
    return found


def main(argv: list[str]) -> int:
    """``pins.py fetch DIR [3.X ...]``, ``pins.py outdated``, ``pins.py update``."""
    try:
        if argv[:1] == ["fetch"] and len(argv) >= 2:
            pins = read_pins()
            wanted: dict[str, Pin] = {}
            for version in argv[2:] or sorted(
                name.removeprefix("python-") for name in pins if name.startswith("python-")
            ):
                wanted.update({pin.name: pin for pin in pins_for(version, pins).values()})
            fetch(Path(argv[1]), wanted.values())
        elif argv == ["outdated"]:
            for entry in outdated():
                print(entry.describe())
        elif argv == ["update"]:
            update()
        else:
            print("usage: pins.py fetch DIR [3.X ...] | outdated | update", file=sys.stderr)
            return 2
    except PinError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
