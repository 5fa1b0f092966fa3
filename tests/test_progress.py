"""A build's progress as it goes (ingot.build.progress): a status line on a terminal, plain lines
in a log, nothing with --quiet or for a short build."""

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingot.build.progress import Ticker

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_log_gets_plain_lines_with_the_phase_the_count_and_the_time():
    stream = io.StringIO()
    ticker = Ticker(stream, tty=False, quiet_seconds=0, every=0.05)
    try:
        ticker.phase("compiling modules", 10)
        ticker.advance(3)
        assert wait_for(lambda: "  compiling modules: 3/10, 0 s\n" in stream.getvalue())
        ticker.say("collected 10 entries")
        ticker.done()
        ticker.phase("writing 10 entries")
        assert wait_for(lambda: "  writing 10 entries, 0 s\n" in stream.getvalue())
    finally:
        ticker.close()
    lines = stream.getvalue().splitlines()
    assert "collected 10 entries" in lines
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def test_a_terminal_gets_one_status_line_that_messages_never_land_on():
    stream = io.StringIO()
    ticker = Ticker(stream, tty=True, quiet_seconds=0, every=0.02)
    try:
        ticker.phase("compiling modules", 4)
        ticker.advance(2)
        assert wait_for(lambda: "[############------------] 2/4, 0 s" in stream.getvalue())
        ticker.say("a message")
    finally:
        ticker.close()
    text = stream.getvalue()
    # The status line is cleared before a message and at the end.
    assert "\r\x1b[2Ka message\n" in text
    last = text.rsplit("\n", 1)[-1]
    assert last == "" or last.endswith("\r\x1b[2K"), last


def test_nothing_is_shown_before_the_quiet_time_or_between_phases():
    stream = io.StringIO()
    ticker = Ticker(stream, tty=True, quiet_seconds=60, every=0.01)
    try:
        ticker.phase("compiling modules", 4)
        time.sleep(0.1)
    finally:
        ticker.close()
    assert stream.getvalue() == ""
    idle = Ticker(stream, tty=True, quiet_seconds=0, every=0.01)
    time.sleep(0.1)
    idle.close()
    assert stream.getvalue() == ""


def build_on_a_terminal(tmp_path, *options):
    """`ingot build` of a script carrying the whole standard library (several seconds), its
    stderr a terminal; returns what the terminal received."""
    script = tmp_path / "app.py"
    script.write_text("print('hi')\n")
    main, secondary = pty.openpty()
    build = ["build", str(script), "--archive-only", "--python", "local", "--include", "*"]
    build.append("--no-cache")  # (the session's cache would make it too quick to show)
    process = subprocess.Popen(
        [sys.executable, "-m", "ingot", *build, "-o", str(tmp_path / "app.ingot"), *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
        cwd=tmp_path,
        env={**os.environ, "TERM": "xterm"},
    )
    os.close(secondary)
    received = b""
    while True:
        ready, _, _ = select.select([main], [], [], 300)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the build closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(main)
    assert process.wait(timeout=300) == 0, received.decode(errors="replace")
    return received.decode(errors="replace")


def test_a_build_on_a_terminal_shows_its_phases_as_they_go(tmp_path):
    shown = build_on_a_terminal(tmp_path)
    assert "\r\x1b[2K  compiling, scanning and compressing entries [" in shown, shown[-2000:]
    assert "wrote " in shown


def test_a_quiet_build_shows_nothing(tmp_path):
    assert build_on_a_terminal(tmp_path, "-q") == ""
