"""The effect-log oracle (protocol §4.3): ``<workspace>/.maka-effects.jsonl`` gets one line
``{"operationId", "tool", "argsHash", "pid"}``, fsynced, before every real start of a tool's
side effect.

Why a log the implementation writes and the harness reads: "ran twice" cannot be seen in the
ledger (a re-run that crashed again leaves no second fact), only in the world. The log is the
world's witness; these functions turn it into the lab's two promises: no completed operation
starts twice, and an indeterminate one is never re-run without a recovery bundle proving it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

__all__ = ["EFFECT_LOG", "check_effects", "iter_effect_log", "notes_allowed", "read_effects", "starts_by_operation"]

EFFECT_LOG = ".maka-effects.jsonl"
#: The live crash script's two effects (``drive_live.crash_script``).
FIRST = "first line\n"
MORE = "more\n"


def iter_effect_log(workspace: str | Path) -> Iterator[tuple[int, str, dict[str, Any] | None, str]]:
    """Every non-blank line of the effect log: ``(line number, text, parsed line or None,
    problem)``, where ``problem`` is ``''``, ``"is not JSON"`` or
    ``"lacks operationId/tool/argsHash/pid"``. No log: nothing."""
    path = Path(workspace) / EFFECT_LOG
    if not path.exists():
        return
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            yield n, line, None, "is not JSON"
            continue
        if not isinstance(value, dict) or not all(k in value for k in ("operationId", "tool", "argsHash", "pid")):
            yield n, line, None, "lacks operationId/tool/argsHash/pid"
            continue
        yield n, line, value, ""


def read_effects(workspace: Path) -> tuple[list[dict[str, Any]], str]:
    """The parsed lines up to the first malformed one, and a description of that one ('' when
    the log is well formed)."""
    out = []
    for n, line, value, problem in iter_effect_log(workspace):
        if value is None:
            return out, f"{EFFECT_LOG} line {n} {problem}: {line[:200]!r}"
        out.append(value)
    return out, ""


def starts_by_operation(lines: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        counts[line["operationId"]] = counts.get(line["operationId"], 0) + 1
    return counts


def notes_allowed(rule: str, content: str | None) -> bool:
    """``notes.txt`` after the kill, per the catalogue's ``notes`` rule."""
    if rule == "absent":
        return content is None
    if rule == "prefix_of_first":
        return content is None or FIRST.startswith(content)
    if rule == "first":
        return content == FIRST
    if rule == "both":
        return content == FIRST + MORE
    return True


def check_effects(at_kill: Sequence[Mapping[str, Any]], final: Sequence[Mapping[str, Any]], *,
                  indeterminate: Sequence[str], completed: Sequence[str], proven: Sequence[str]) -> tuple[bool, str]:
    """The whole-trial oracle. ``at_kill``: the log right after the kill; ``final``: after
    repair and resume. ``indeterminate`` / ``completed``: operations so decided on the
    committed prefix; ``proven``: operations a committed recovery bundle settled."""
    twice = {op: n for op, n in starts_by_operation(final).items() if n > 1}
    if twice:
        return False, f"an operation's side effect started more than once: {twice}"
    if list(final[:len(at_kill)]) != list(at_kill):
        return False, "the effect log was rewritten after the kill (it is append-only)"
    later = starts_by_operation(final[len(at_kill):])
    rerun_done = sorted(op for op in completed if op in later)
    if rerun_done:
        return False, f"a completed operation was started again after the crash: {rerun_done}"
    rerun_unknown = sorted(op for op in indeterminate if op in later and op not in proven)
    if rerun_unknown:
        return False, ("an indeterminate operation was re-run without a recovery bundle proving it: "
                       f"{rerun_unknown}")
    return True, f"{len(at_kill)} start(s) at the kill, {len(final) - len(at_kill)} after recovery, none repeated"
