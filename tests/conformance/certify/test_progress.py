"""The progress display of ``maka-conformance certify`` (issue 5 item 7): plain lines when
not a terminal (failures at once, counts periodically), a live bar on a terminal; both fed by
the plugin's event stream."""

from __future__ import annotations

import io

from conformance._suite.progress import PlainProgress, RichProgress, make_progress


def _events(n: int, failing: set[int]) -> list[dict]:
    out = [{"event": "collected", "total": n}]
    for i in range(1, n + 1):
        outcome = "failed" if i in failing else "passed"
        out.append({"event": "clause", "clauseId": f"C-{i:03d}", "outcome": outcome, "done": i, "total": n,
                    "message": f"differs at $.x[{i}]" if outcome == "failed" else ""})
    return out


def test_plain_progress_prints_failures_immediately_and_counts_periodically() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, every=10, interval=3600)
    progress.start("impl")
    for event in _events(25, {7}):
        progress.on_event(event)
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "maka-conformance: certifying impl"
    assert lines[1] == "maka-conformance: 25 clauses"
    assert "  FAILED C-007: differs at $.x[7]" in lines
    assert lines.index("  FAILED C-007: differs at $.x[7]") < lines.index("  [10/25] failed 1, passed 9")
    assert lines[-1] == "  [25/25] failed 1, passed 24"


def test_rich_progress_renders_a_bar_and_the_failures() -> None:
    out = io.StringIO()
    progress = RichProgress(out)
    progress.start("impl")
    for event in _events(5, {2}):
        progress.on_event(event)
    progress.finish()
    text = out.getvalue()
    assert "FAILED" in text and "C-002" in text
    assert "5/5" in text


def test_auto_mode_is_plain_off_a_terminal_and_in_ci(monkeypatch) -> None:
    assert isinstance(make_progress(io.StringIO()), PlainProgress)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    assert isinstance(make_progress(Tty()), RichProgress)
    monkeypatch.setenv("CI", "true")
    assert isinstance(make_progress(Tty()), PlainProgress)
    assert make_progress(io.StringIO(), mode="none") is None
