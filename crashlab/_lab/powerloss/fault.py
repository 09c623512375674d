"""The ``powerloss`` and ``powerloss-torn`` faults: a power cut at a catalogued crash point.

Why a fault of its own beside ``torn``: ``torn`` cuts the tail of the reference's own WAL after
a kill, which cannot tell a runtime that fsyncs its T1 from one that does not, and works for no
other store. Here the implementation runs on the power-loss filesystem (:mod:`.mount`) mounted
over the workspace the harness gives it, so whatever it writes — SQLite, JSONL, its own files
— is judged by what it made durable (spec 30 §6: T1 durable before the side effect starts, T2
before the result is used; protocol §3 capability ``faults.powerloss``).

A trial: the capability gate (``faults.powerloss`` claimed, else *not claimed*), FUSE here
(else *not run: <reason>*, never passed), the mount, the same drive as ``kill`` (prefix or
live) ending in a SIGKILL proved real, then the cut (``powerloss-torn``: a prefix of the last
non-durable write survives, at 512 B or 4 KiB, seeded or ``options["granularity"]``), the
unmount, and the very oracles of the ``kill`` fault on the plain directory the cut left
(:func:`crashlab._lab.aftermath.after_kill`): committed prefix, decision table, repair, resume,
effect log. The effect log is the harness's instrument and is never cut (:mod:`.fs`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

from crashlab._lab.powerloss.model import GRANULARITIES

__all__ = ["CAPABILITY", "POWERLOSS_FAULTS", "granularity_for", "run_powerloss"]

#: The handshake capability an implementation claims to run on the power-loss filesystem: it
#: keeps every durable file under the workspace the harness gives it and makes them durable
#: with ordinary POSIX calls (protocol §3, §4.4).
CAPABILITY = "faults.powerloss"
POWERLOSS_FAULTS = ("powerloss", "powerloss-torn")


def granularity_for(spec: Any) -> int | None:
    """The torn sector size of a trial: ``options["granularity"]`` or drawn from the seed."""
    if spec.fault != "powerloss-torn":
        return None
    given = spec.options.get("granularity")
    if given is not None:
        if int(given) not in GRANULARITIES:
            raise ValueError(f"options.granularity must be one of {GRANULARITIES}, not {given!r}")
        return int(given)
    return random.Random(f"granularity-{spec.seed}").choice(GRANULARITIES)


def run_powerloss(ctx: Any, point: Any, missing: Callable[[], list[str]]) -> tuple[str, str]:
    """One power-loss trial; ``(outcome hint, message)`` as the engine's ``_body`` returns.
    ``missing()`` lists the catalogue capabilities the handshake lacks: it starts the first
    implementation process, so the filesystem is launched first and mounts meanwhile."""
    from crashlab._lab.powerloss.mount import MountError, PowerLossMount, unavailable

    def not_claimed() -> list[str]:
        return [*missing(), *([CAPABILITY] if CAPABILITY not in set(ctx.handshake.capabilities) else [])]

    reason = unavailable()
    if reason:
        gaps = not_claimed()
        return ("not_claimed", f"capabilities not claimed: {gaps}") if gaps else ("not_run", f"not run: {reason}")
    granularity = granularity_for(ctx.spec)
    mount = PowerLossMount(Path(ctx.workspace), Path(ctx.workspace).parent / "powerloss").launch()
    try:
        gaps = not_claimed()
        if gaps:
            return "not_claimed", f"capabilities not claimed: {gaps}"
        try:
            mount.wait_ready()
        except MountError as exc:
            if exc.permission:
                return "not_run", f"not run: the system refused the FUSE mount: {exc.message}"
            return "error", f"harness error: {exc.message}"
        from crashlab._lab.drive import drive_live
        from crashlab._lab.drive import drive_prefix

        driven = (drive_prefix if ctx.spec.mode == "prefix" else drive_live)(ctx, point)
        ctx.evidence["killedPid"] = driven.pid
        report = mount.lose_power(granularity, ctx.spec.seed)
        ctx.evidence["powerCut"] = report
        lost = sum(r["lostBytes"] for r in report["reverted"])
        torn = report["torn"]
        detail = (f"{len(report['reverted'])} file(s) reverted ({lost} byte(s) not durable), "
                  f"{len(report['undone'])} namespace operation(s) undone"
                  + (f", torn: {torn['kept']} of {torn['length']} byte(s) of the last write to {torn['path']} kept "
                     f"({torn['granularity']} B sectors)" if torn else "")
                  + (f"; problems: {report['problems']}" if report["problems"] else ""))
        ctx.record("power_cut", not report["problems"], detail)
    finally:
        leftovers = mount.close()
        if leftovers:
            ctx.record("no_survivors", False, f"processes of the power-loss filesystem outlived it (killed): {leftovers}")
    from crashlab._lab.aftermath import after_kill

    after_kill(ctx, point, driven)
    return "", ""
