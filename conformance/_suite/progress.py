"""Progress of a certification run, from the plugin's event stream.

Why a file of JSON events rather than pytest's own output: the run happens in a child pytest
process (so a crashing implementation or plugin can never take the CLI down with it), and the
CLI wants a display of its own — a live bar on a terminal, plain lines in CI logs — that does
not depend on how pytest formats its output.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Mapping, TextIO

__all__ = ["PlainProgress", "RichProgress", "make_progress"]


class PlainProgress:
    """One line per failure as it happens, and a count line every ``every`` clauses or
    ``interval`` seconds: readable in a CI log, never a wall of 600 lines."""

    def __init__(self, out: TextIO, every: int = 100, interval: float = 10.0) -> None:
        self.out = out
        self.every = every
        self.interval = interval
        self.total = 0
        self.counts: dict[str, int] = {}
        self._last = time.monotonic()
        self._last_done = 0

    def start(self, implementation: str) -> None:
        print(f"maka-conformance: certifying {implementation}", file=self.out, flush=True)

    def on_event(self, event: Mapping[str, Any]) -> None:
        if event.get("event") == "collected":
            self.total = int(event.get("total", 0))
            print(f"maka-conformance: {self.total} clauses", file=self.out, flush=True)
            return
        if event.get("event") != "clause":
            return
        outcome = str(event.get("outcome"))
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        done = int(event.get("done", 0))
        if outcome in ("failed", "error"):
            message = event.get("message") or ""
            print(f"  {outcome.upper()} {event.get('clauseId')}: {message}", file=self.out, flush=True)
        now = time.monotonic()
        if done - self._last_done >= self.every or now - self._last >= self.interval:
            self._line(done)

    def _line(self, done: int) -> None:
        self._last, self._last_done = time.monotonic(), done
        summary = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        print(f"  [{done}/{self.total or '?'}] {summary}", file=self.out, flush=True)

    def finish(self) -> None:
        if self._last_done != sum(self.counts.values()):
            self._line(sum(self.counts.values()))


class RichProgress:
    """A live bar with per-outcome counts; failures are printed above it as they happen."""

    def __init__(self, out: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(file=out)
        self.progress = Progress(TextColumn("[bold]certifying[/bold]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), console=self.console,
                                 transient=False)
        self.task: Any = None
        self.counts: dict[str, int] = {}

    def start(self, implementation: str) -> None:
        self.console.print(f"maka-conformance: certifying [bold]{implementation}[/bold]")
        self.progress.start()
        self.task = self.progress.add_task("clauses", total=None, counts="")

    def on_event(self, event: Mapping[str, Any]) -> None:
        if event.get("event") == "collected":
            self.progress.update(self.task, total=int(event.get("total", 0)))
            return
        if event.get("event") != "clause":
            return
        outcome = str(event.get("outcome"))
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if outcome in ("failed", "error"):
            self.console.print(f"  [red]{outcome.upper()}[/red] {event.get('clauseId')}: {event.get('message') or ''}",
                               markup=False if "[" in str(event.get("message")) else True)
        counts = "  ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        self.progress.update(self.task, completed=int(event.get("done", 0)), counts=counts)

    def finish(self) -> None:
        self.progress.stop()


def make_progress(out: TextIO | None = None, *, mode: str = "auto") -> Any:
    """``mode``: ``auto`` (a live bar on a terminal outside CI, else plain), ``plain``,
    ``rich`` or ``none``."""
    out = out if out is not None else sys.stderr
    if mode == "none":
        return None
    if mode == "auto":
        mode = "rich" if out.isatty() and not os.environ.get("CI") else "plain"
    if mode == "rich":
        try:
            return RichProgress(out)
        except ImportError:
            pass
    return PlainProgress(out)
