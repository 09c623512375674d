"""Live mode: arm the point, run the real operation, kill at the announcement.

Why three drives: the catalogue's live points sit in three operations (protocol §4.3).

* ``turn`` (P0–P9, the in-transaction store hooks of a turn): ``runtime.run_turn`` with the
  crash script — Write ``notes.txt``, Append to it, say done — killed inside the real tool loop;
* ``repair`` (P10): a run first crashed at the setup point (P7: a settled Write, no terminal),
  then ``runtime.repair`` in a new process, killed between repair's terminal fact and header;
* ``resume`` (P11, the continuation points of spec 20 §4.9 and the claim/start hooks): the
  same crashed run, repaired in a new process, then ``runtime.resume`` killed at the point.

A point the operation finishes without announcing is *unreached* (a must-hit point that did
not fire is never a pass).
"""

from __future__ import annotations

from typing import Any, Mapping

from crashlab._lab.drive_common import Driven, DriveError, Unreached, arm, kill_and_prove, ok
from crashlab._lab.effects import FIRST, MORE

__all__ = ["crash_script", "drive_live"]

FINAL_TEXT = "done"


def crash_script(protocol: str) -> dict[str, Any]:
    """Write ``notes.txt``, Append to it, then a text step (three provider steps)."""
    return {"userMessage": "write the notes", "protocol": protocol, "steps": [
        {"toolCalls": [{"id": "call-write", "name": "Write", "args": {"path": "notes.txt", "content": FIRST}}]},
        {"toolCalls": [{"id": "call-append", "name": "Append", "args": {"path": "notes.txt", "content": MORE}}]},
        {"text": FINAL_TEXT},
    ]}


def _until(ctx: Any, client: Any, op: str, params: Mapping[str, Any], failpoint: str, hit: int) -> Driven:
    arm(client, failpoint, hit)
    got = client.call_until_failpoint(op, dict(params), failpoint=failpoint, timeout=ctx.remaining())
    if not isinstance(got, str):
        raise Unreached(f"unreached: {failpoint}#{hit} is listed in the handshake but {op} answered without "
                        f"announcing it (ok={got.ok}, {str(got.result if got.ok else got.error)[:300]})",
                        reply={"ok": got.ok, "result": got.result, "error": got.error})
    return kill_and_prove(ctx, client, None, f"kill at {failpoint}#{hit} inside {op}")


def crash_turn(ctx: Any, failpoint: str, hit: int, protocol: str) -> Driven:
    client = ctx.spawn()
    params = {"workspace": str(ctx.workspace), "script": crash_script(protocol)}
    return _until(ctx, client, "runtime.run_turn", params, failpoint, hit)


def drive_live(ctx: Any, point: Any) -> Driven:
    info = point.mode_info("live")
    protocol = ctx.spec.protocol
    if info["drive"] == "turn":
        return crash_turn(ctx, point.failpoint, point.hit, protocol)
    setup = crash_turn(ctx, info.get("setup", "P7"), 1, protocol)  # the run repair / resume start from
    ctx.evidence["setupPid"] = setup.pid
    ws = {"workspace": str(ctx.workspace)}
    if info["drive"] == "repair":
        return _until(ctx, ctx.spawn(), "runtime.repair", ws, point.failpoint, point.hit)
    if info["drive"] != "resume":
        raise DriveError(f"catalogue: unknown live drive {info['drive']!r}")
    client = ctx.spawn()  # repairs, then (armed only afterwards) resumes
    ok(client.call("runtime.repair", ws, timeout=ctx.remaining()), "runtime.repair (setup)")
    return _until(ctx, client, "runtime.resume", ws, point.failpoint, point.hit)
