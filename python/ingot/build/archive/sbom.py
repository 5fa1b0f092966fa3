"""The bill of materials an executable carries, ``__ingot__/sbom.cdx.json``: a CycloneDX 1.6 JSON
document of what it is made of, which ``ingot inspect --sbom`` prints and scanners read.

- CPython (a runtime's release and the sha256 of its source, else the build machine's Python)
  and each library a runtime is built from, with its version and the sha256 of its source;
- every distribution carried: name, version, licence (its metadata's ``License-Expression``,
  else its licence classifiers, else its ``License`` field), the wheel it was installed from
  (the URL and sha256 pip reported);
- the shared libraries carried (``numpy.libs/libopenblas...so``), with the distribution that
  brought them, or the build machine's path they were taken from;
- what the target system must provide (``ingot:`` properties of the document's metadata): the
  oldest glibc, the libraries the executable takes from the system.

The archive's document is the same whatever launcher the archive is put behind (and whatever the
output is called): ``ingot inspect --sbom`` of an executable completes it with the launcher's
sha256 and the oldest glibc of the whole (:func:`with_launcher`).

The document is written here, by hand, from the standard library alone: a build under a
runtime runs in that runtime's interpreter, where ingot's own code is importable and third-party
packages are not. The tests check it against the CycloneDX schema (cyclonedx-python-lib's
validator). It holds no time and nothing of the build's temporary paths: the same inputs give the
same bytes (its serial number is derived from its content).
"""

from __future__ import annotations

import email.message
import email.parser
import email.policy
import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ingot._ingot import RESERVED_PREFIX, __version__
from ingot.elf import GlibcFloor, VersionNeeds, archive_floor

__all__ = ["SBOM", "Carried", "Facts", "document", "requirements", "with_launcher"]

#: The archive entry the document is written to (stored, never run or imported).
SBOM = f"{RESERVED_PREFIX}sbom.cdx.json"
SPEC_VERSION = "1.6"
_PROPERTY = "ingot"

Json = dict[str, Any]


@dataclass(frozen=True)
class Facts:
    """What the build knows of the executable besides what its archive carries."""

    name: str  # the application's
    machine: str = ""  # the architecture it runs on
    runtime: str | None = None  # the runtime's name, when built with one
    #: The runtime's sources: (name, version, file, sha256, what it is for), CPython's first.
    runtime_sources: tuple[tuple[str, str, str, str, str], ...] = ()
    #: The wheels pip installed, by normalized name: name, version, url, sha256.
    wheels: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Carried:
    """What the archive carries, as the packer knows it."""

    python: str  # the CPython release whose standard library it holds
    #: (``*.dist-info`` directory, its METADATA), of each distribution carried.
    distributions: list[tuple[str, bytes]]
    #: (file name, the ``*.dist-info`` directory whose RECORD lists it or None, where it was
    #: taken from: its path in the import root, on the build machine, or the package URL of one
    #: ingot carries itself; its file's sha256).
    libraries: list[tuple[str, str | None, str, str]]
    native_needs: list[VersionNeeds] = field(default_factory=list)
    system_first: dict[str, list[str]] = field(default_factory=dict)
    desktop_libraries: dict[str, str] = field(default_factory=dict)
    plugin_needs: dict[str, str] = field(default_factory=dict)


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares it (and as a ``pkg:pypi`` purl spells it)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _properties(*pairs: tuple[str, str]) -> list[Json]:
    return [{"name": f"{_PROPERTY}:{name}", "value": value} for name, value in pairs]


def _hashes(sha256: str) -> list[Json]:
    return [{"alg": "SHA-256", "content": sha256}] if re.fullmatch(r"[0-9a-f]{64}", sha256) else []


def _licenses(metadata: email.message.Message) -> list[Json]:
    """A distribution's licence: its ``License-Expression``, else its licence classifiers, else
    the first line of its ``License`` field."""
    expression = str(metadata.get("License-Expression") or "").strip()
    if expression:
        return [{"expression": expression}]
    classifiers = sorted(
        {
            str(classifier).split("::")[-1].strip()
            for classifier in metadata.get_all("Classifier") or []
            if str(classifier).startswith("License ::")
            and str(classifier).split("::")[-1].strip() != "OSI Approved"
        }
    )
    if classifiers:
        return [{"license": {"name": name}} for name in classifiers]
    text = str(metadata.get("License") or "").strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return [{"license": {"name": first[:200]}}] if first and first != "UNKNOWN" else []


def _distribution(
    directory: str, metadata_bytes: bytes, wheels: dict[str, dict[str, str]]
) -> Json | None:
    parser = email.parser.Parser(policy=email.policy.compat32)
    metadata = parser.parsestr(metadata_bytes.decode("utf-8", "replace"), headersonly=True)
    name, version = str(metadata.get("Name") or ""), str(metadata.get("Version") or "")
    if not name or not version:
        return None
    key = normalize(name)
    component: Json = {
        "type": "library",
        "bom-ref": f"pypi:{key}",
        "name": name,
        "version": version,
        "purl": f"pkg:pypi/{key}@{quote(version, safe='.-_~!')}",
    }
    licenses = _licenses(metadata)
    if licenses:
        component["licenses"] = licenses
    wheel = wheels.get(key)
    if wheel is not None and wheel.get("version") == version:
        hashes = _hashes(wheel.get("sha256", ""))
        if hashes:
            component["hashes"] = hashes
        if wheel.get("url"):
            component["externalReferences"] = [
                {"type": "distribution", "url": wheel["url"], "hashes": hashes}
                if hashes
                else {"type": "distribution", "url": wheel["url"]}
            ]
    component["properties"] = _properties(("dist-info", directory))
    return component


def _runtime(facts: Facts, carried: Carried) -> list[Json]:
    """CPython and the libraries of the runtime (or the build machine's Python)."""
    sources = {name: rest for name, *rest in facts.runtime_sources}
    release = sources["python"][0] if sources.get("python", [""])[0] else carried.python
    python: Json = {
        "type": "framework",
        "bom-ref": "runtime:cpython",
        "name": "CPython",
        "version": release,
        "purl": f"pkg:generic/cpython@{release}",
        "licenses": [{"expression": "Python-2.0"}],
    }
    if "python" in sources:
        _, file, sha256, _ = sources["python"]
        python["externalReferences"] = [_source(file, sha256)]
        extra = [("runtime", facts.runtime or "")]
        if "patches" in sources:
            _, file, sha256, _ = sources["patches"]
            extra.append(("patches", f"{file} sha256:{sha256}"))
        python["properties"] = _properties(*extra)
    else:
        python["properties"] = _properties(("runtime", "the build machine's Python"))
    found = [python]
    for name, (version, file, sha256, purpose) in sources.items():
        if name in ("python", "patches"):
            continue
        library: Json = {"type": "library", "bom-ref": f"runtime:{name}", "name": name}
        if version:
            library["version"] = version
            library["purl"] = f"pkg:generic/{quote(name)}@{quote(version, safe='.-_~!')}"
        library["description"] = f"built into the runtime for {purpose}"
        library["externalReferences"] = [_source(file, sha256)]
        found.append(library)
    return found


def _source(file: str, sha256: str) -> Json:
    reference: Json = {"type": "source-distribution", "url": quote(file, safe="+~!")}
    if _hashes(sha256):
        reference["hashes"] = _hashes(sha256)
    return reference


def _libraries(carried: Carried, dists: dict[str, Json]) -> tuple[list[Json], list[Json]]:
    """The shared libraries carried, and which distribution depends on which of them
    (``dists``: the components of the distributions, by ``*.dist-info`` directory)."""
    found: list[Json] = []
    depends: dict[str, list[str]] = {}
    for name, owner, origin, sha256 in sorted(carried.libraries):
        library: Json = {
            "type": "library",
            "bom-ref": f"library:{name}",
            "name": name,
            "hashes": _hashes(sha256),
        }
        dist = dists.get(owner or "")
        ref = dist["bom-ref"] if dist else None
        where = f"from {dist['name']} {dist['version']}" if dist else "from the build machine"
        if origin.startswith("pkg:"):
            # (one ingot carries itself: a distribution's package, named by its package URL)
            where = "carried by ingot, from the package"
            library["purl"] = origin
        library["description"] = f"shared library, {where}: {origin}"
        library["properties"] = _properties(("taken-from", origin))
        if not library["hashes"]:
            del library["hashes"]
        found.append(library)
        if ref:
            depends.setdefault(ref, []).append(library["bom-ref"])
    return found, [{"ref": ref, "dependsOn": refs} for ref, refs in sorted(depends.items())]


def _floor(floor: GlibcFloor) -> list[tuple[str, str]]:
    if floor.version is None:
        return []
    return [
        ("needs:glibc", f"{floor.version[0]}.{floor.version[1]} or later"),
        ("needs:glibc:set-by", str(floor.needed_by)),
    ]


def _system(facts: Facts, carried: Carried) -> list[Json]:
    """What the target system must provide: the oldest glibc (the archive's native code's:
    :func:`with_launcher` adds the launcher's), the libraries not carried."""
    floor = archive_floor(None, carried.native_needs, carried.system_first)
    pairs = [("target", facts.machine)] if facts.machine else []
    pairs += _floor(floor)
    for name, needed_by in sorted(carried.desktop_libraries.items()):
        pairs.append(("needs:library", f"{name} (for {needed_by})"))
    for name, plugin in sorted(carried.plugin_needs.items()):
        pairs.append(("needs:library-of-plugin", f"{name} (for {plugin})"))
    for name, versions in sorted(carried.system_first.items()):
        pairs.append(("prefers-system:library", f"{name} where it defines {', '.join(versions)}"))
    return _properties(*pairs)


def document(facts: Facts, carried: Carried) -> bytes:
    """The CycloneDX 1.6 JSON document of an executable (the same facts: the same bytes)."""
    distributions: list[Json] = []
    owners: dict[str, Json] = {}
    for directory, metadata in sorted(carried.distributions):
        component = _distribution(directory, metadata, facts.wheels)
        if component is not None and all(
            component["bom-ref"] != other["bom-ref"] for other in distributions
        ):
            distributions.append(component)
            owners[directory] = component
    distributions.sort(key=lambda component: str(component["bom-ref"]))
    libraries, depends = _libraries(carried, owners)
    bom: Json = {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "version": 1,
        "metadata": {
            "lifecycles": [{"phase": "build"}],
            "tools": {
                "components": [{"type": "application", "name": "ingot", "version": __version__}]
            },
            "component": {"type": "application", "bom-ref": "application", "name": facts.name},
            "properties": _system(facts, carried),
        },
        "components": [*_runtime(facts, carried), *distributions, *libraries],
        "dependencies": [
            {
                "ref": "application",
                "dependsOn": ["runtime:cpython", *(c["bom-ref"] for c in distributions)],
            },
            *depends,
        ],
    }
    return _written(bom)


def _written(bom: Json) -> bytes:
    """The document as JSON, its serial number derived from the rest of it."""
    bom = {key: value for key, value in bom.items() if key != "serialNumber"}
    body = json.dumps(bom, sort_keys=True).encode()
    serial = uuid.uuid5(uuid.NAMESPACE_URL, "ingot-sbom:" + hashlib.sha256(body).hexdigest())
    return (json.dumps({"serialNumber": serial.urn, **bom}, indent=2) + "\n").encode()


def with_launcher(text: bytes, launcher: bytes, floor: GlibcFloor) -> bytes:
    """The document of an archive (which is the same whatever launcher it is put behind)
    completed for the executable: its launcher (sha256) and the oldest glibc the whole runs on
    (``floor``: :func:`ingot.inspection.executable_glibc_floor`)."""
    bom = json.loads(text)
    metadata = bom.setdefault("metadata", {})
    kept = [
        item
        for item in metadata.get("properties", [])
        if not str(item.get("name", "")).startswith(f"{_PROPERTY}:needs:glibc")
    ]
    metadata["properties"] = _properties(*_floor(floor)) + kept
    launcher_component: Json = {
        "type": "application",
        "bom-ref": "launcher",
        "name": "ingot-launcher",
        "description": "the executable's launcher, which runs the archive appended to it",
        "hashes": _hashes(hashlib.sha256(launcher).hexdigest()),
    }
    components = [c for c in bom.get("components", []) if c.get("bom-ref") != "launcher"]
    bom["components"] = [launcher_component, *components]
    return _written(bom)


def requirements(text: bytes | str) -> list[str]:
    """The distributions a document lists, as ``name==version`` lines (``pip-audit -r``)."""
    bom = json.loads(text)
    return sorted(
        f"{component['name']}=={component['version']}"
        for component in bom.get("components", [])
        if str(component.get("purl", "")).startswith("pkg:pypi/")
    )
