"""Real windows for GUI apps: an X server of their own (Debian's ``Xvfb``) and screenshots of
a window by its title (``xwd``, from ``x11-apps``), read into pixels here.

    with xvfb_display() as display:
        seen, shot = run_window(executable, display, "ingot pygame", tmp_path)
        assert shot.pixel(50, 50) == (200, 30, 30)

An app of this kind takes a directory: once its window is drawn it writes ``DIR/ready`` and waits
for ``DIR/done``, which :func:`run_window` writes after the screenshot.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import proclimit

__all__ = ["Screenshot", "run_window", "xvfb_display"]


def _require(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        message = f"{tool} is not installed (scripts/test installs xvfb and x11-apps)"
        if os.environ.get("INGOT_REQUIRE_PYTHONS"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@contextlib.contextmanager
def xvfb_display(width: int = 640, height: int = 480):
    """An Xvfb server on a free display number, for the ``with`` block: yields ``":N"``."""
    xvfb = _require("Xvfb")
    _require("xwd")
    _require("xwininfo")
    read, write = os.pipe()
    server = subprocess.Popen(
        [
            xvfb,
            "-displayfd",
            str(write),
            "-screen",
            "0",
            f"{width}x{height}x24",
            "-nolisten",
            "tcp",
        ],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        number = b""
        deadline = time.monotonic() + 30
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read, 16)
            if not chunk:
                break
            number += chunk
        if not number.strip().isdigit():
            raise AssertionError(f"Xvfb did not start (exit {server.poll()})")
        yield f":{number.strip().decode()}"
    finally:
        os.close(read)
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class Screenshot:
    """A window's pixels, as ``xwd`` read them from the X server."""

    width: int
    height: int
    rows: list[bytes]  # per row, width * 3 bytes of RGB

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row = self.rows[y]
        return (row[3 * x], row[3 * x + 1], row[3 * x + 2])

    def count(self, box: tuple[int, int, int, int], test) -> int:
        """How many pixels of ``box`` (x0, y0, x1, y1; exclusive ends) pass ``test(rgb)``."""
        x0, y0, x1, y1 = box
        return sum(1 for y in range(y0, y1) for x in range(x0, x1) if test(self.pixel(x, y)))


def screenshot(display: str, title: str) -> Screenshot:
    """The window called ``title`` on ``display``, from ``xwd -id`` (a ZPixmap of depth 24). The
    window is found by ``xwininfo -tree``: ``xwd -name`` misses a title set as UTF-8 (SDL's)."""
    tree = subprocess.run(
        ["xwininfo", "-display", display, "-root", "-tree"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    found = re.search(rf'^\s*(0x[0-9a-f]+) "{re.escape(title)}":', tree, re.MULTILINE)
    if found is None:
        raise AssertionError(f"no window {title!r} on {display}:\n{tree}")
    dump = subprocess.run(
        ["xwd", "-display", display, "-id", found.group(1), "-silent"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    fields = struct.unpack(">25I", dump[:100])
    header_size, _version, pixmap_format, depth, width, height = fields[:6]
    byte_order, bits_per_pixel, bytes_per_line = fields[7], fields[11], fields[12]
    red_mask, green_mask, blue_mask, ncolors = fields[14], fields[15], fields[16], fields[19]
    assert pixmap_format == 2 and depth == 24 and bits_per_pixel == 32, fields
    start = header_size + 12 * ncolors
    order = "<" if byte_order == 0 else ">"
    rows = []
    for y in range(height):
        line = dump[start + y * bytes_per_line : start + y * bytes_per_line + 4 * width]
        row = bytearray()
        for (value,) in struct.iter_unpack(f"{order}I", line):
            for mask in (red_mask, green_mask, blue_mask):
                shift = (mask & -mask).bit_length() - 1
                row.append((value & mask) >> shift)
        rows.append(bytes(row))
    return Screenshot(width, height, rows)


def run_window(executable, display: str, title: str, workdir: Path, *, env=None, timeout=120):
    """Runs a window app (``executable DIR``) under a process limit on ``display``; once it
    says its window is drawn, takes the screenshot and lets it exit. Returns the completed
    process and the screenshot (None if the app never said ready)."""
    workdir.mkdir(parents=True, exist_ok=True)
    taken: dict[str, object] = {}

    def photographer():
        deadline = time.monotonic() + timeout
        while not (workdir / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if (workdir / "ready").exists():
            time.sleep(0.3)  # (the last frame reaches the server)
            try:
                taken["shot"] = screenshot(display, title)
            except (subprocess.SubprocessError, AssertionError) as error:
                taken["error"] = error
        (workdir / "done").write_text("")

    thread = threading.Thread(target=photographer, daemon=True)
    thread.start()
    environment = {"DISPLAY": display, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    environment.update(env or {})
    result = proclimit.run(
        [executable, workdir], env=environment, timeout=timeout, max_processes=32
    )
    thread.join(10)
    if "error" in taken:
        raise AssertionError(f"no screenshot of {title!r}: {taken['error']}")
    return result, taken.get("shot")
