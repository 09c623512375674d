"""After the kill: fresh processes reopen, project, repair, resume, and the oracles judge.

Why in this order (issue 6 item 2; spec 20 §2 [test], §4.8; spec 30 §6.3 steps 5–8): what a
fresh process reads *before* anyone writes is the committed state the crash left, so it is
judged first (two projections identical, ledger files byte-identical across the reads, the
state one the catalogue allows, the decision the table requires); only then does repair run
(twice: the second must change nothing), then resume, and the effect log is judged over the
whole story.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping

from crashlab._lab.catalogue import CrashPoint, variant_of
from crashlab._lab.drive import Driven, ok
from crashlab._lab.effects import check_effects, notes_allowed, read_effects
from crashlab._lab.oracles import find_run, match_state, operation_ids, reference_check, subject_run

__all__ = ["after_kill", "ledger_digests", "source_of"]


def ledger_digests(client: Any, ws: str) -> tuple[list[str], dict[str, str | None]]:
    """``store.open`` read-only (protocol §4.2) and the SHA-256 of every ``ledgerFiles`` file."""
    files = list(ok(client.call("store.open", {"workspace": ws, "readOnly": True}), "store.open").get("ledgerFiles") or [])
    out: dict[str, str | None] = {}
    for name in files:
        path = Path(ws) / name
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return files, out


def source_of(projection: Mapping[str, Any]) -> tuple[str, str] | None:
    """The crashed run: the one run that is nobody's continuation."""
    runs = [r for r in projection.get("runs") or [] if not (r.get("header") or {}).get("continuationSource")]
    return (runs[0]["sessionId"], runs[0]["runId"]) if len(runs) == 1 else None


def _project(client: Any, ws: str) -> dict[str, Any]:
    return dict(ok(client.call("store.project", {"workspace": ws}), "store.project"))


def _resume_check(ctx: Any, reply: Any, want: Mapping[str, Any], name: str) -> None:
    if not want:
        ctx.record(name, True, f"any outcome allowed; got ok={reply.ok} {reply.result if reply.ok else reply.error}")
        return
    if not reply.ok:
        ctx.record(name, False, f"runtime.resume answered ok:false {reply.code} where the contract requires "
                                f"parked={want.get('parked')} {want.get('rejectionReasons', '')}")
        return
    problems = []
    if "parked" in want and reply.result.get("parked") is not want["parked"]:
        problems.append(f"parked={reply.result.get('parked')!r}, required {want['parked']}")
    if "rejectionReasons" in want and reply.result.get("rejectionReasons") != want["rejectionReasons"]:
        problems.append(f"rejectionReasons {reply.result.get('rejectionReasons')!r}, required {want['rejectionReasons']}")
    ctx.record(name, not problems, "; ".join(problems) or f"parked={reply.result.get('parked')}")


def after_kill(ctx: Any, point: CrashPoint, driven: Driven) -> None:
    spec = ctx.spec
    variant = variant_of(spec.mode, spec.protocol)
    ws = str(ctx.workspace)
    at_kill, problem = read_effects(ctx.workspace)
    if problem:
        ctx.record("effect_log", False, problem)
    notes = (ctx.workspace / "notes.txt").read_text(encoding="utf-8") if (ctx.workspace / "notes.txt").exists() else None

    reader = ctx.spawn()
    _files, before = ledger_digests(reader, ws)
    first, second = _project(reader, ws), _project(reader, ws)
    _files, after = ledger_digests(reader, ws)
    ctx.record("projection_stable", first == second, "" if first == second else "two store.project differ")
    changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    ctx.record("reading_never_writes", not changed, f"ledger files changed by reading: {changed}" if changed else
               f"{sorted(before)} byte-identical")
    health = first.get("health") or {}
    ctx.record("store_healthy", health.get("status") == "healthy", f"health {health}")
    source = driven.source or source_of(first)
    ctx.evidence["source"] = list(source) if source else None
    if source is None:
        ctx.record("allowed_prefix", False, "cannot tell the crashed run: not exactly one non-continuation run")
        return
    state, verdicts = match_state(point.allowed(variant), first, source, f"after a kill at {point.id} ({variant})")
    for name, good, detail in verdicts:
        ctx.record(name, good, detail)
    src = find_run(first, *source) or {"events": []}
    indeterminate = operation_ids(src, {"indeterminate"})
    completed = operation_ids(src, {"completed"})
    if state is not None:
        run = subject_run(first, state.get("subject", "source"), source)
        if run is not None and run.get("events") is not None:
            for name, good, detail in reference_check(run, state.get("decision"), f"at {point.id}"):
                ctx.record(name, good, detail)
        if "effects" in state:
            good = len(at_kill) == state["effects"]
            ctx.record("effects_at_kill", good, f"{len(at_kill)} effect start(s) at the kill, the point allows "
                                                f"{state['effects']}")
        if "notes" in state:
            ctx.record("world_at_kill", notes_allowed(state["notes"], notes),
                       f"notes.txt {notes!r} (rule {state['notes']})")
        if state.get("marker"):
            marker = ctx.workspace / "effect.marker"
            good = marker.exists() and marker.read_text(encoding="utf-8") == "effect-happened"
            ctx.record("world_at_kill", good, "effect.marker holds effect-happened" if good else "effect.marker missing")
    ok(reader.call("store.close", {"workspace": ws}), "store.close")
    # the reader never wrote; it now becomes the recovering process (one spawn fewer per trial)
    _recover(ctx, reader, point, variant, first, source, at_kill, indeterminate, completed)


def _recover(ctx: Any, worker: Any, point: CrashPoint, variant: str, first: Mapping[str, Any], source: tuple[str, str],
             at_kill: list[Any], indeterminate: list[str], completed: list[str]) -> None:
    rec = point.recovery(variant)
    ws = {"workspace": str(ctx.workspace)}
    caps = set(ctx.handshake.capabilities)
    timeout = min(60.0, ctx.remaining())
    if "resumeBeforeRepair" in rec and "runtime.continuation" in caps:
        reply = worker.call("runtime.resume", ws, timeout=timeout)
        _resume_check(ctx, reply, rec["resumeBeforeRepair"], "resume_before_repair")
        same = _project(worker, ws["workspace"]) == first
        ctx.record("park_writes_nothing", same, "" if same else "a parked resume before repair changed the projection")
    if "runtime.repair" in caps:
        one = ok(worker.call("runtime.repair", ws, timeout=timeout), "runtime.repair")
        actions = [r.get("action") for r in one.get("repairs") or []]
        if "repair" in rec:
            ctx.record("repair_report", actions == rec["repair"], f"repair actions {actions}, required {rec['repair']}")
        repaired = _project(worker, ws["workspace"])
        two = ok(worker.call("runtime.repair", ws, timeout=timeout), "runtime.repair")
        again = _project(worker, ws["workspace"])
        good = not two.get("repairs") and again == repaired
        ctx.record("repair_idempotent", good, "" if good else f"a second repair wrote: {two.get('repairs')}")
        if "afterRepair" in rec:
            state, verdicts = match_state([rec["afterRepair"]], repaired, source, "after repair")
            ctx.record("repair_outcome", state is not None, verdicts[0][2])
    if "runtime.continuation" in caps:
        _resume_check(ctx, worker.call("runtime.resume", ws, timeout=timeout), rec.get("resume", {}), "resume_outcome")
    final_projection = _project(worker, ws["workspace"])
    ok(worker.call("store.close", ws), "store.close")
    final, problem = read_effects(ctx.workspace)
    if problem:
        ctx.record("effect_log", False, problem)
        return
    src = find_run(final_projection, *source) or {"events": []}
    proven = [d for d in operation_ids(src, {"completed"}) if d in indeterminate and _bundle_settled(src, d)]
    good, detail = check_effects(at_kill, final, indeterminate=indeterminate, completed=completed, proven=proven)
    ctx.record("effect_log", good, detail)
    ctx.evidence["effectLog"] = final


def _bundle_settled(run: Mapping[str, Any], op: str) -> bool:
    from crashlab._lab.oracles import label

    return any(label(e) == "decision" and (e.get("refs") or {}).get("operationId") == op for e in run.get("events") or [])
