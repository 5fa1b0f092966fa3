"""`ingot cache`: listing the extraction cache and pruning what old builds left
(python/ingot/cachedir.py), on trees the importer's own writer made (`ingot._ingot.write_tree`)."""

import os
import subprocess
import sys
import time

import pytest

from ingot import cachedir, cli
from ingot._ingot import write_tree

from helpers import dead_pid

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

DAY = 86400


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("INGOT_CACHE_DIR", str(root))
    return root


def make_tree(cache, id, days_old, content=b"x" * 1000):
    tree = write_tree(str(cache), id, [("pkg/__init__.py", b""), ("pkg/data.bin", content)])
    then = time.time() - days_old * DAY
    os.utime(tree, (then, then))
    return tree


def test_prune_removes_old_unused_trees_and_dead_writers_leftovers(cache, capsys):
    old = make_tree(cache, "a" * 32, days_old=40)
    young = make_tree(cache, "b" * 32, days_old=2)
    leftover = cache / "trees" / f".tmp-{'c' * 32}-123-456"
    (leftover / "pkg").mkdir(parents=True)
    then = time.time() - 2 * 3600
    os.utime(leftover, (then, then))
    writing = cache / "trees" / f".tmp-{'d' * 32}-124-457"  # a writer at work right now
    writing.mkdir()
    foreign = cache / "trees" / "notes"  # not the importer's: left alone
    foreign.mkdir()

    assert cli.main(["cache", "prune", "--dry-run"]) == 0
    assert f"would remove {old} " in capsys.readouterr().out
    assert os.path.isdir(old)

    assert cli.main(["cache", "prune"]) == 0
    out = capsys.readouterr().out
    assert not os.path.exists(old) and not leftover.exists()
    assert os.path.isdir(young) and writing.is_dir() and foreign.is_dir()
    assert "removed 2 entries" in out

    assert cli.main(["cache", "prune", "--older-than", "1"]) == 0
    assert not os.path.exists(young)


def test_a_tree_a_process_uses_is_kept_and_listed_as_in_use(cache, capsys):
    tree = make_tree(cache, "e" * 32, days_old=90)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "f = open(sys.argv[1], 'rb'); print('open', flush=True)\n"
            "time.sleep(60)",
            os.path.join(tree, "pkg", "data.bin"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "open\n"
        assert cli.main(["cache", "list"]) == 0
        listing = capsys.readouterr().out
        assert "e" * 32 in listing and "in use" in listing and "90.0 days" in listing
        assert cachedir.prune(0) == [] and os.path.isdir(tree)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert [entry.path.name for entry in cachedir.prune(0)] == ["e" * 32]


def test_a_cache_others_can_write_is_refused(cache, capsys):
    make_tree(cache, "f" * 32, days_old=40)
    cache.chmod(0o777)
    try:
        assert cli.main(["cache", "prune"]) == 1
        assert "is not a private directory of this user" in capsys.readouterr().err
    finally:
        cache.chmod(0o700)


def test_cache_dir_prints_the_importers_root_and_a_missing_cache_lists_empty(
    cache, capsys, monkeypatch
):
    assert cli.main(["cache", "dir"]) == 0
    assert capsys.readouterr().out.strip() == str(cache)
    monkeypatch.setenv("INGOT_CACHE_DIR", str(cache / "nothing-yet"))
    assert cli.main(["cache", "list"]) == 0
    assert "0 entries" in capsys.readouterr().out
    assert not (cache / "nothing-yet").exists()
    # Relative: ignored, as XDG_CACHE_HOME would be.
    monkeypatch.setenv("INGOT_CACHE_DIR", "relative/path")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "xdg"))
    assert cli.main(["cache", "dir"]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "xdg" / "ingot")


def test_a_killed_writers_leftover_goes_at_once_and_a_live_ones_stays(cache, capsys):
    # Interrupted first starts left .tmp-* trees that stayed for an hour (72 MiB after 10 kills).
    dead = dead_pid()
    (cache / "trees").mkdir(mode=0o700)
    minute_ago = time.time() - 60

    def leftover(pid, nanos):
        path = cache / "trees" / f".tmp-{'e' * 32}-{pid}-{nanos}"
        (path / "pkg").mkdir(parents=True)
        os.utime(path, (minute_ago, minute_ago))
        return path

    killed, alive = leftover(dead, 1), leftover(os.getpid(), 2)
    assert cli.main(["cache", "prune"]) == 0
    assert not killed.exists() and alive.is_dir()
    # The importer's next write clears what a killed writer left, too.
    killed = leftover(dead, 3)
    write_tree(str(cache), "f" * 32, [("pkg/__init__.py", b"")])
    assert not killed.exists() and alive.is_dir()
