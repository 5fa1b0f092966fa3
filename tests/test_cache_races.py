"""A cache root made where another user races for its parent's name (``HOME=/tmp``, or
``INGOT_CACHE_DIR`` under /tmp, whose ``.cache`` does not exist yet): each missing directory is
made relative to a checked descriptor of its parent, so the cache never ends up inside a
directory the other user slipped in (who could then move it aside and plant a tree, extension
modules included, or build-cache entries, bytecode included). The other user is real (`nobody`)
and races for real, in a loop, for 200 tries of each cache.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import squatter

TRIES = 200


def _race(make_cache) -> None:
    """Runs ``make_cache(root)`` TRIES times while nobody squats ``<base>/.cache``; fails on a
    cache made below a directory of theirs, or refused for another reason than theirs."""
    squatter.need_a_second_user()
    made = refused = 0
    with squatter.shared_sticky_dir() as base, squatter.squatting(base, ".cache"):
        # At least TRIES tries, and on until the other user got in the way at least once (a
        # loaded machine may run the two in step for a while), at most 20 times as many.
        attempt = -1
        while attempt + 1 < TRIES or (not refused and attempt + 1 < 20 * TRIES):
            attempt += 1
            shutil.rmtree(base / ".cache", ignore_errors=True)
            root = base / ".cache" / "ingot"
            try:
                made_at = make_cache(root)
            except Exception as error:  # (every refusal is checked: it must name the other user)
                # Theirs seen in the way, or made and removed under us round after round.
                refusal = str(error)
                assert "belongs to user 65534" in refusal or "keeps changing" in refusal, (
                    attempt,
                    error,
                )
                refused += 1
                continue
            owners = squatter.owners_from(Path(made_at), base)
            assert all(uid == 0 for _, uid in owners), (attempt, owners)
            made += 1
    assert made, "no try made the cache: the race says nothing"
    assert refused, "the other user never got in the way: the race says nothing"


@pytest.mark.fast
def test_the_extraction_cache_is_never_made_inside_another_users_directory():
    from ingot._ingot import write_tree

    _race(lambda root: write_tree(root, "t" * 16, [("pkg/ext.so", b"\x7fELF not really")]))


@pytest.mark.fast
def test_the_build_cache_is_never_made_inside_another_users_directory():
    from ingot.build.archive.buildcache import open_memo

    def make(root: Path) -> Path:
        open_memo(root / "build")
        return root / "build" / "entries"

    _race(make)
