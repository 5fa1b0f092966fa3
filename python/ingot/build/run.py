"""Running a build: ``ingot build`` runs its spec through :func:`build_and_report`, and so does
a build under a runtime (:mod:`ingot.build.under`), from the spec it is given as a file
(:func:`build_spec_file`). The pipeline (:mod:`ingot.build.pipeline`) does the work; the
progress goes to a ticker as it goes, and :mod:`ingot.build.report` says the rest at the end."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from ingot.build import pipeline, report
from ingot.build.interrupt import interrupts_stop, watch_parent
from ingot.build.progress import Ticker
from ingot.build.resolve.spec import Spec
from ingot.errors import IngotError
from ingot.runtime.pins import sha256_of

__all__ = ["build_and_report", "build_spec_file", "say_unless"]


#: The file beside the spec file into which a build under a runtime writes its result.
RESULT_FILE = "result.json"


def build_spec_file(path: str, *, quiet: bool, parent: int | None = None) -> int:
    """Builds the spec in the file at ``path`` and reports as ``ingot build`` does: what a build
    under a runtime runs, in the runtime's interpreter (:func:`ingot.build.under.build_under`).
    What it made goes back as JSON, into :data:`RESULT_FILE` beside the spec file (the output,
    its size and sha256). ``parent``: the pipe whose closing says that ``ingot build`` has
    ended, and this build must end too (:func:`ingot.build.interrupt.watch_parent`)."""
    with interrupts_stop():
        if parent is not None:
            watch_parent(parent)
        try:
            spec = Spec.from_json(Path(path).read_text())
            result = _build_spec(spec, quiet)
            made = {
                "output": str(result.output),
                "size": result.size,
                "sha256": sha256_of(result.output),
            }
            Path(path).with_name(RESULT_FILE).write_text(json.dumps(made))
            return 0
        except IngotError as error:
            return report.report_error(error)
        except KeyboardInterrupt as error:
            return report.report_interrupt(error)


def build_and_report(spec: Spec, *, quiet: bool) -> int:
    """The build of ``spec``, showing its progress as it goes unless ``quiet``."""
    _build_spec(spec, quiet)
    return 0


def _build_spec(spec: Spec, quiet: bool) -> pipeline.BuildResult:
    """Builds ``spec`` and says what it made (its progress as it goes unless ``quiet``)."""
    if quiet:
        return _built(spec, say_unless(quiet))
    ticker = Ticker(sys.stderr, plain=spec.environment.plain_progress)
    try:
        return _built(spec, ticker.say, ticker)
    finally:
        ticker.close()


def say_unless(quiet: bool) -> Callable[[str], None]:
    def say(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr)

    return say


def _built(
    spec: Spec, say: Callable[[str], None], ticker: Ticker | None = None
) -> pipeline.BuildResult:
    result = pipeline.build(spec, say, ticker)
    # (warnings are shown with --quiet too; through the ticker, off its status line)
    report.built(result, say, ticker.say if ticker else lambda text: print(text, file=sys.stderr))
    return result
