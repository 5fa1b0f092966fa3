"""The build cache (ingot.build.archive.buildcache): a rebuild after an edit of the application's own code
takes what earlier builds derived from unchanged inputs, and writes the bytes a build without
the cache writes; a damaged entry is found and computed again; `ingot cache` lists and prunes
it. Dependencies come from wheels made here, installed by the build's real pip from a local
folder (PIP_FIND_LINKS, no index)."""

import os
import re
import subprocess
import sys

import pytest
from test_prefix_data import make_wheel

APP = """\
import json
import demo_dep
print(json.dumps({"greeting": demo_dep.GREETING, "version": VERSION}))
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An app script needing demo_dep==1.0 from a local wheel folder, and a cache of its own."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(
        wheels,
        "demo_dep",
        {
            "demo_dep/__init__.py": "import email.message, textwrap\nGREETING = 'hi'\n",
            "demo_dep/data.txt": "some data\n",
        },
        {},
    )
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("INGOT_CACHE_DIR", str(cache))
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    app = tmp_path / "app.py"
    app.write_text("VERSION = 1\n" + APP)
    return app


def _one_cpu():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def build(app, out, *options, check=True, one_cpu=False):
    """``one_cpu``: no pool (ingot.build.archive.prefetch), so that what is looked up is what the packer
    needs, whatever the timing."""
    command = [sys.executable, "-m", "ingot", "build", str(app), "--archive-only", "-o", str(out)]
    command += ["--dependency", "demo_dep==1.0", *options]
    run = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=app.parent,
        timeout=600,
        preexec_fn=_one_cpu if one_cpu else None,
    )
    if check:
        assert run.returncode == 0, run.stderr
    return run


def reused(run):
    """(results reused, results looked up) from the build's cache line."""
    found = re.search(r"build cache: (\d+) of (\d+) results reused", run.stdout + run.stderr)
    assert found, run.stdout + run.stderr
    return int(found.group(1)), int(found.group(2))


def entry_files(cache):
    return [
        path
        for path in (cache / "build" / "entries").rglob("*")
        if path.is_file() and not path.name.startswith(".")
    ]


def records(cache):
    """The entries store's newest record of each key, as (segment, value offset, value size), in
    the segments' format (crates/ingot-importer/src/buildcache.rs: magic, then key, size,
    checksum and value per record; a later record of a key wins)."""
    newest = {}
    for segment in sorted((cache / "build" / "entries").glob("*.seg")):
        data = segment.read_bytes()
        assert data[:8] == b"ingotsg1"
        at = 8
        while at + 32 <= len(data):
            key, size = data[at : at + 16], int.from_bytes(data[at + 16 : at + 24], "little")
            newest[key] = (segment, at + 32, size)
            at += 32 + size
        assert at == len(data), segment
    return list(newest.values())


def test_a_rebuild_after_an_edit_takes_the_cache_and_writes_what_a_clean_build_writes(project):
    first = build(project, project.parent / "first.ingot")
    hits, looked = reused(first)
    assert looked > 500 and hits < looked / 10  # a cold cache
    assert "pip: installing demo_dep==1.0" in first.stderr + first.stdout
    if (
        len(os.sched_getaffinity(0)) > 1
    ):  # a pool compiled the modules (ingot.build.archive.prefetch)
        assert re.search(r"compiled and scanned \d+ modules in \d+ process", first.stderr)

    # The app's own code changes (what it imports stays: a new import of a module not carried
    # before changes the dictionary's training, and with it every blob compressed with it).
    project.write_text("VERSION = 2\ndef unused():\n    return 3\n" + APP)
    again = build(project, project.parent / "again.ingot")
    hits, looked = reused(again)
    assert hits >= 0.9 * looked, (hits, looked)
    output = again.stdout + again.stderr
    assert "demo_dep==1.0 installed as on" in output and "from the build cache" in output
    assert "pip: installing" not in output

    clean = build(project, project.parent / "clean.ingot", "--no-cache")
    assert "build cache:" not in clean.stdout + clean.stderr
    rebuilt = (project.parent / "again.ingot").read_bytes()
    assert rebuilt == (project.parent / "clean.ingot").read_bytes()
    assert rebuilt != (project.parent / "first.ingot").read_bytes()


def test_a_damaged_entry_is_found_and_computed_again(project):
    build(project, project.parent / "first.ingot")
    cache = project.parent / "cache"
    found = [record for record in records(cache) if record[2] > 0]
    assert len(found) > 500
    flipped = found[::3]  # one in three: a changed byte of the value
    for segment, offset, size in flipped:
        with open(segment, "r+b") as file:
            file.seek(offset + size // 2)
            byte = file.read(1)[0]
            file.seek(offset + size // 2)
            file.write(bytes([byte ^ 0x01]))
    # and the largest segment cut short in the middle of a record
    largest = max({segment for segment, _, _ in found}, key=lambda path: path.stat().st_size)
    cut_at = max(offset + size // 2 for segment, offset, size in found if segment == largest)
    os.truncate(largest, cut_at)
    lost = [record for record in flipped if record[0] == largest and record[1] + record[2] > cut_at]
    (site,) = (cache / "build" / "deps").glob("*/site")
    (site / "demo_dep" / "__init__.py").write_text("GREETING = 'tampered'\n")

    # Without a pool, only what the packer needs is looked up: some of the flipped entries
    # (others are what the first build's pool computed ahead, for modules left out).
    again = build(project, project.parent / "again.ingot", one_cpu=True)
    output = again.stdout + again.stderr
    damaged = re.search(r"(\d+) damaged entries found and computed again", output)
    assert damaged and 0 < int(damaged.group(1)) <= len(flipped) - len(lost), output
    assert "were damaged: installing again" in output and "pip: installing" in output
    clean = build(project, project.parent / "clean.ingot", "--no-cache")
    assert clean.returncode == 0
    assert (project.parent / "again.ingot").read_bytes() == (
        project.parent / "clean.ingot"
    ).read_bytes()
    # Put right: the next build finds nothing damaged, and reuses what it computed again.
    third = build(project, project.parent / "third.ingot", one_cpu=True)
    output = third.stdout + third.stderr
    assert "damaged entries" not in output and "were damaged" not in output
    hits, looked = reused(third)
    assert hits >= 0.9 * looked, (hits, looked)


def test_refresh_installs_the_dependencies_again(project):
    build(project, project.parent / "first.ingot")
    refreshed = build(project, project.parent / "again.ingot", "--refresh")
    assert "pip: installing demo_dep==1.0" in refreshed.stdout + refreshed.stderr
    (site,) = (project.parent / "cache" / "build" / "deps").glob("*/site")
    assert (site / "demo_dep" / "data.txt").read_text() == "some data\n"


def test_cache_list_and_prune_cover_the_build_cache(project):
    build(project, project.parent / "first.ingot")

    def cache(*args):
        run = subprocess.run(
            [sys.executable, "-m", "ingot", "cache", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        return run.stdout + run.stderr

    listed = cache("list")
    assert re.search(r"^build\s.*\b\d+ files?\s.*entries$", listed, re.M), listed
    assert re.search(r"^deps\s.*\b[0-9a-f]{32}$", listed, re.M), listed
    # Used just now: a prune by age leaves it.
    assert "removed 0 entries" in cache("prune")
    pruned = cache("prune", "--older-than", "0")
    assert "build cache segments in" in pruned and "/build/deps/" in pruned
    assert entry_files(project.parent / "cache") == []
    assert not list((project.parent / "cache" / "build" / "deps").iterdir())
    # And a build after it fills it again, giving the same archive.
    again = build(project, project.parent / "again.ingot")
    assert reused(again)[0] < 50
    assert (project.parent / "again.ingot").read_bytes() == (
        project.parent / "first.ingot"
    ).read_bytes()


def test_a_build_cache_others_can_write_is_refused(project):
    build(project, project.parent / "first.ingot")
    entries = project.parent / "cache" / "build" / "entries"
    entries.chmod(0o777)
    refused = build(project, project.parent / "again.ingot", check=False)
    assert refused.returncode != 0
    assert (
        f"refusing the build cache: cache directory `{entries}` is writable by other users "
        "(mode 777)" in refused.stderr
    )
    assert "hint:" in refused.stderr and "--no-cache" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert build(project, project.parent / "again.ingot", "--no-cache").returncode == 0


def test_a_build_cache_below_another_users_directory_is_refused(project, monkeypatch):
    # Issue 39, item 4: with INGOT_CACHE_DIR below a directory another user owns, that user
    # could swap the cache in after the one-time check (forged bytecode ended up in root's
    # executable). The rule of the extraction cache's root: every directory above it is root's
    # or this user's, and not writable by others unless sticky.
    if os.geteuid() != 0:
        pytest.skip("needs root, to give a directory to another user")
    other = project.parent / "other-users"
    other.mkdir()
    os.chown(other, 65534, 65534)  # nobody
    monkeypatch.setenv("INGOT_CACHE_DIR", str(other / "cache"))
    refused = build(project, project.parent / "app.ingot", check=False)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert (
        "refusing the build cache" in refused.stderr and "belongs to user 65534" in refused.stderr
    )
    assert not (other / "cache").exists() and not (project.parent / "app.ingot").exists()
    assert build(project, project.parent / "app.ingot", "--no-cache").returncode == 0


def test_values_asked_with_different_sets_of_present_modules_are_each_kept(tmp_path):
    """The standard library's pool (started before pip) and the packer ask about present modules
    with different sets: each gets its own value back on the next build, none is computed
    again."""
    from ingot._ingot import BuildCache
    from ingot.build.archive.buildcache import BuildMemo

    computed = []

    def facts(present):
        computed.append(sorted(present.inner))
        return ["numpy"] if "numpy" in present else []

    def lookup(present):
        memo = BuildMemo(BuildCache(str(tmp_path)), b"salt")
        value = memo.with_present("facts", ["module"], present, facts)
        memo.flush()
        return value

    stdlib, everything = {"os"}, {"os", "numpy"}
    assert lookup(stdlib) == [] and lookup(everything) == ["numpy"]
    assert len(computed) == 2
    for _ in range(2):
        assert lookup(stdlib) == [] and lookup(everything) == ["numpy"]
    assert len(computed) == 2
