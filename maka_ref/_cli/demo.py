"""``maka-ref demo``: resolve and plan the example ledgers that ship with ``maka_ref``.

Why: the README's first command must show, on a fresh machine, what the reference runtime
decides for the classic crash shapes (completed, killed after T1, killed before T1, legacy,
recovery bundles, corruption) without the reader writing a ledger first.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, TextIO

from maka_ref._cli.ledger_input import InputError, load_ledger
from maka_ref._codec.jsontext import compact_json
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.phase0.plan import build_resume_plan


def bundled_examples() -> list[tuple[Path, str]]:
    """The bundled example ledgers with their one-line descriptions, in index order."""
    root = resources.files("maka_ref") / "examples"
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    return [(Path(str(root / item["file"])), item["description"]) for item in index["examples"]]


def _plan_summary(plan_json: dict[str, Any]) -> dict[str, Any]:
    """The plan JSON with the event lists replaced by their ids, so it fits on a screen."""
    summary = dict(plan_json)
    for key in ("runtimeEvents", "replayRuntimeEvents"):
        summary[key + "Ids"] = [e.get("id") if isinstance(e, dict) else None for e in summary.pop(key, [])]
    return summary


def run_demo(paths: Iterable[str], out: TextIO) -> int:
    """Print, per ledger, its resolution and its Phase 0 plan. Returns the exit code."""
    items = [(Path(p), "") for p in paths] or bundled_examples()
    status = 0
    for path, description in items:
        out.write(f"== {path.name}" + (f": {description}" if description else "") + "\n")
        try:
            events = load_ledger(str(path))
        except InputError as exc:
            out.write(f"   error: {exc.code}: {exc.message}\n\n")
            status = 2
            continue
        resolution = resolve_recovery(events)
        plan = build_resume_plan(events)
        verdict = ", ".join(f"{d.tool_call_id}={d.status}/{d.reason}" for d in resolution.decisions) or "no tool calls"
        out.write(f"   decisions: {verdict}; hasCorruption={str(resolution.has_corruption).lower()}\n")
        out.write(f"   plan: {plan.disposition}")
        if plan.rejection_reasons:
            out.write(f" ({', '.join(plan.rejection_reasons)})")
        out.write("\n")
        out.write("   resolution " + compact_json(resolution.to_json(), negative_zero="zero") + "\n")
        out.write("   plan       " + compact_json(_plan_summary(plan.to_json()), negative_zero="zero") + "\n\n")
    return status
