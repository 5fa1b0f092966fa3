"""What a build is doing while it runs: the phase, how far it is (``340/901``) and for how long.

A build says each phase when it ends (``collected 901 entries ...``); a phase can take a minute
(compiling and compressing a scientific stack). :class:`Ticker` fills that time: on a terminal,
one status line rewritten in place (phase, a bar, the count, seconds since the build started);
elsewhere (a CI log, a pipe), a plain line every :data:`PLAIN_SECONDS` while a phase runs. It
says nothing for a build shorter than :data:`QUIET_SECONDS`, and nothing at all with ``--quiet``
(no ticker is made). Messages go through :meth:`Ticker.say`, so that they never land on the
status line's text."""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["PLAIN_SECONDS", "QUIET_SECONDS", "Ticker"]

#: Nothing is shown of a build before it has run this long.
QUIET_SECONDS = 2.0
#: How often a plain line is written while a phase runs (not a terminal).
PLAIN_SECONDS = 10.0
#: How often the status line is redrawn (a terminal).
TTY_SECONDS = 0.2
_BAR = 24


class Ticker:
    """The build's progress, drawn by a background thread (see the module)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool | None = None,
        plain: bool = False,
        quiet_seconds: float = QUIET_SECONDS,
        every: float | None = None,
    ) -> None:
        """``tty``: draw a status line (default: if ``stream`` is a terminal, unless ``plain``:
        ``TERM=dumb``, which the caller read)."""
        self.stream = stream
        if tty is None:
            isatty = getattr(stream, "isatty", None)
            tty = bool(isatty and isatty()) and not plain
        self.tty = tty
        self.quiet_seconds = quiet_seconds
        self.every = every if every is not None else (TTY_SECONDS if tty else PLAIN_SECONDS)
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._phase: str | None = None
        self._total: int | None = None
        self._count = 0
        self._phase_started = self.started
        self._drawn = False  # a status line is on the terminal
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ingot-progress", daemon=True)
        self._thread.start()

    def phase(self, name: str, total: int | None = None) -> None:
        """A new phase starts (``compiling modules``, of ``total`` items if counted)."""
        with self._lock:
            self._phase, self._total, self._count = name, total, 0
            self._phase_started = time.monotonic()

    def advance(self, count: int = 1) -> None:
        """``count`` more items of the phase are done."""
        self._count += count  # (read by the drawing thread; a late read only lags)

    def done(self) -> None:
        """The phase ended (its own message says how)."""
        with self._lock:
            self._phase = None
            self._clear()

    def say(self, message: str) -> None:
        """Writes ``message`` as a line of its own."""
        with self._lock:
            self._clear()
            self.stream.write(message + "\n")
            self.stream.flush()

    def close(self) -> None:
        """Stops drawing and takes the status line away."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._clear()

    def line(self) -> str | None:
        """What is shown now, or None (no phase, or too early)."""
        now = time.monotonic()
        if self._phase is None or now - self.started < self.quiet_seconds:
            return None
        count, total = self._count, self._total
        elapsed = f"{now - self.started:.0f} s"
        if total:
            done = min(count, total)
            if self.tty:
                filled = round(_BAR * done / total)
                bar = "#" * filled + "-" * (_BAR - filled)
                return f"  {self._phase} [{bar}] {done}/{total}, {elapsed}"
            return f"  {self._phase}: {done}/{total}, {elapsed}"
        return f"  {self._phase}, {elapsed}"

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                shown = self.line()
                if shown is None:
                    continue
                if self.tty:
                    self.stream.write("\r\x1b[2K" + shown)
                    self._drawn = True
                elif time.monotonic() - self._phase_started >= self.every:
                    self.stream.write(shown + "\n")
                self.stream.flush()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False
