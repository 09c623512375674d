"""Wording and truncation shared by the Markdown and HTML writers, so that both say the same
thing in the same order (verdict line, counts line, levels, outcome labels)."""

from __future__ import annotations

import json
import re
from typing import Any

from ._model import OUTCOMES, RunReport

#: Column labels of the capability × outcome table, in :data:`OUTCOMES` order.
OUTCOME_LABELS: dict[str, str] = {
    "passed": "passed",
    "failed": "failed",
    "not_claimed": "not claimed",
    "error": "error",
    "not_run": "not run",
}
assert tuple(OUTCOME_LABELS) == OUTCOMES

#: What the levels table says for a reached level (it has no reasons).
REACHED_TEXT = "every required capability claimed, run, and passing"
STDERR_LINES = 40
STDERR_CHARS = 6000
VALUE_CHARS = 4000
MESSAGE_CHARS = 4000
_PLATFORM_NAMES = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}


_INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def visible(text: object) -> str:
    """``text`` with control characters (other than tab and newlines), lone surrogates and
    non-characters shown as ``\\xNN``: they are invisible on screen and invalid in XML 1.0
    even when escaped, and stderr of a crashed process often holds some."""
    return _INVISIBLE.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def platform_label(system: str | None) -> str:
    """Column name of a ``platform.system()`` value: ``Darwin`` → ``macOS``."""
    if not system:
        return "unknown"
    return _PLATFORM_NAMES.get(system, system)


def verdict_line(report: RunReport) -> str:
    if report.level_reached:
        return f"CERTIFIED at level {report.level_reached}"
    return "NOT CERTIFIED"


def implementation_line(report: RunReport) -> str:
    impl = report.implementation
    name = impl.get("name") or "unknown implementation"
    version = impl.get("version")
    return f"{name} {version}" if version else str(name)


def durability_text(durability: Any) -> str:
    """The handshake's ``durability`` (protocol §3) in a few words: ``"F_FULLFSYNC, directories
    synced"``, or ``"not declared"`` when the implementation said nothing (issue 15 item 4: a
    matrix cell or a report line must never be blank where "durable" was left undefined)."""
    if not isinstance(durability, dict) or not isinstance(durability.get("sync"), str):
        return "not declared"
    dirs = durability.get("directorySync")
    tail = {True: ", directories synced", False: ", directories not synced"}.get(dirs, "")
    return f"{durability['sync']}{tail}"


def durability_line(report: RunReport) -> str:
    """How the implementation declared it makes files durable, with its details if any."""
    durability = report.implementation.get("durability")
    text = durability_text(durability)
    details = durability.get("details") if isinstance(durability, dict) else None
    return f"{text} ({details})" if isinstance(details, str) and details else text


def platform_line(report: RunReport) -> str:
    p = report.platform
    label = platform_label(p.get("system"))
    extra = " ".join(x for x in (p.get("release"), p.get("machine") and f"({p['machine']})") if x)
    return f"{label} {extra}".strip() + (f", {report.python}" if report.python else "")


def counts_line(report: RunReport) -> str:
    counts = report.counts()
    parts = [f"{counts[o]} {OUTCOME_LABELS[o]}" for o in OUTCOMES if counts[o]]
    return f"{len(report.clauses)} clauses: " + (", ".join(parts) if parts else "none")


def selection_line(report: RunReport) -> str:
    sel = {k: v for k, v in (report.selection or {}).items() if v not in (None, "", [])}
    return ", ".join(f"{k}={v}" for k, v in sel.items()) if sel else "all clauses"


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s"


def truncate(text: str, limit: int) -> str:
    """Keep the head of ``text`` (messages: the start says what went wrong)."""
    text = visible(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters)"


def stderr_tail(text: str, lines: int = STDERR_LINES, chars: int = STDERR_CHARS) -> str:
    """Keep the *end* of a stderr capture (the traceback is last), saying what was cut."""
    kept = visible(text).rstrip("\n").splitlines()
    cut = max(0, len(kept) - lines)
    body = "\n".join(kept[cut:])
    if len(body) > chars:
        cut_chars = len(body) - chars
        body = body[cut_chars:]
        return f"… ({cut} lines and {cut_chars} characters omitted)\n{body}"
    return (f"… ({cut} earlier lines omitted)\n" if cut else "") + body


def pretty(value: Any) -> str:
    """A JSON value pretty-printed for people (indent 2, non-ASCII kept), truncated."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return truncate(text, VALUE_CHARS)


def diff_sides(diff: dict[str, Any]) -> tuple[str, str]:
    """Pretty ``expected`` and ``actual`` of a diff, ``(missing)`` for an absent side."""
    missing = diff.get("missing")
    expected = "(missing)" if missing == "expected" else pretty(diff.get("expected"))
    actual = "(missing)" if missing == "actual" else pretty(diff.get("actual"))
    return expected, actual


def level_status(info: dict[str, Any]) -> str:
    """``reached``, ``not reached``, or ``not selected`` (a level the run's ``--level`` / ``-k``
    left out: nothing failed there, so it is not shown as a failure)."""
    if info.get("reached"):
        return "reached"
    return "not selected" if info.get("selected") is False else "not reached"
