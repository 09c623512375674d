"""``torn``: simulate power loss after the kill by tearing the un-synced tail of the ledger.

Why these cuts: a SIGKILL loses nothing that reached the OS page cache, but a power loss can
lose whatever was written after the last fsync — the tail of SQLite's write-ahead log, or the
tail of a JSONL ledger. So, after the kill, we take the committed baseline (``store.project``
in a fresh process), then for several seeded variants restore the pristine files and cut:

* ``*-wal``: at a frame boundary (the 32-byte WAL header gives the page size; a frame is a
  24-byte header plus one page), and at an arbitrary byte offset (a half-written frame);
* ``*.jsonl``: at an arbitrary byte offset (a half-written line).

A fresh process must then either **fail closed** (``ok: false`` with a code, or health
``corrupt`` / ``unreadable`` with a code — the same code twice) or present, for every run, an
event list that is a **prefix** of the baseline's, equal event by event (never a fact that was
not committed, never a half event). Which files are the ledger is the implementation's answer
to ``store.open`` (``ledgerFiles``); ``-shm`` is not one of them and is left as it was.
"""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path
from typing import Any, Mapping

from crashlab._lab.drive import ok

__all__ = ["WAL_FRAME_HEADER", "WAL_HEADER", "cut_points", "run_torn", "wal_frames"]

WAL_HEADER = 32
WAL_FRAME_HEADER = 24
DEFAULT_VARIANTS = 4


def wal_frames(data: bytes) -> tuple[int, int]:
    """``(page_size, whole frames)`` of a WAL image (0, 0 when it has no valid header)."""
    if len(data) < WAL_HEADER or struct.unpack(">I", data[:4])[0] not in (0x377F0682, 0x377F0683):
        return 0, 0
    page = struct.unpack(">I", data[8:12])[0]
    page = 65536 if page == 1 else page
    if page < 512:
        return 0, 0
    return page, (len(data) - WAL_HEADER) // (WAL_FRAME_HEADER + page)


def cut_points(name: str, data: bytes, rng: random.Random, count: int) -> list[tuple[str, int]]:
    """``count`` seeded ``(kind, new length)`` cuts of one ledger file's tail."""
    size = len(data)
    out: list[tuple[str, int]] = []
    if name.endswith("-wal"):
        page, frames = wal_frames(data)
        for n in range(count):
            if frames and n % 2 == 0:
                keep = rng.randrange(0, frames)  # drop at least the last frame
                out.append(("wal_frame", WAL_HEADER + keep * (WAL_FRAME_HEADER + page)))
            elif size > 1:
                out.append(("wal_byte", rng.randrange(1, size)))
    elif size > 1:
        out = [("jsonl_byte" if name.endswith(".jsonl") else "byte", rng.randrange(1, size)) for _ in range(count)]
    return out


def _snapshot(ws: Path, to: Path) -> None:
    shutil.copytree(ws, to, symlinks=True)


def _restore(pristine: Path, ws: Path) -> None:
    shutil.rmtree(ws)
    shutil.copytree(pristine, ws, symlinks=True)


def _runs(projection: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    return {(r.get("sessionId"), r.get("runId")): r.get("events") for r in projection.get("runs") or []}


def _judge(base: Mapping[tuple[str, str], Any], client: Any, ws: str) -> tuple[bool, str]:
    one = client.call("store.project", {"workspace": ws})
    if not one.ok:
        code = one.code
        two = client.call("store.project", {"workspace": ws})
        stable = (not two.ok) and two.code == code
        return stable, f"failed closed: {code}" + ("" if stable else f" (then {two.code if not two.ok else 'ok'}: unstable)")
    health = (one.result or {}).get("health") or {}
    if health.get("status") in ("corrupt", "unreadable"):
        return bool(health.get("code")), f"failed closed: health {health.get('status')} {health.get('code')}"
    for key, events in _runs(one.result or {}).items():
        if key not in base:
            return False, f"run {key} appeared that was not committed"
        if events is None:
            return False, f"run {key} is unreadable (null) while health says {health.get('status')!r}"
        committed = base[key] or []
        if list(events) != list(committed[:len(events)]) or len(events) > len(committed):
            ids = [e.get("id") for e in events]
            return False, f"run {key} shows {ids}, not a prefix of the committed {[e.get('id') for e in committed]}"
    return True, "a committed prefix"


def run_torn(ctx: Any) -> None:
    """Apply the variants to ``ctx.workspace`` (right after the kill) and record the checks."""
    ws = ctx.workspace
    pristine = Path(str(ws) + ".pristine")
    _snapshot(ws, pristine)
    base_client = ctx.spawn()
    files = list(ok(base_client.call("store.open", {"workspace": str(ws), "readOnly": True}), "store.open")
                 .get("ledgerFiles") or [])
    baseline = dict(ok(base_client.call("store.project", {"workspace": str(ws)}), "store.project"))
    base_client.close()
    base = _runs(baseline)
    ctx.evidence["tornBaseline"] = {f"{k[0]}/{k[1]}": len(v or []) for k, v in base.items()}
    rng = random.Random(ctx.spec.seed)
    count = int(ctx.spec.options.get("variants", DEFAULT_VARIANTS))
    tears: list[tuple[str, str, int]] = []
    for name in files:
        if name.endswith("-wal") or name.endswith(".jsonl"):
            path = pristine / name
            if path.exists():
                tears += [(name, kind, cut) for kind, cut in cut_points(name, path.read_bytes(), rng, count)]
    if not tears:
        ctx.record("torn_applicable", True, f"no WAL or JSONL tail among ledgerFiles {files}: nothing un-synced to tear")
    variants = []
    for name, kind, cut in tears:
        _restore(pristine, ws)
        with open(ws / name, "r+b") as handle:
            handle.truncate(cut)
        client = ctx.spawn()
        good, detail = _judge(base, client, str(ws))
        client.close()
        variants.append({"file": name, "kind": kind, "length": cut, "ok": good, "detail": detail})
        ctx.record("torn_prefix_or_fail_closed", good, f"{name} cut at {cut} ({kind}): {detail}")
    _restore(pristine, ws)
    shutil.rmtree(pristine, ignore_errors=True)
    ctx.evidence["tornVariants"] = variants
