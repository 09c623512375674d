"""The handshake declares how the implementation makes its files durable (issue 15 item 4;
protocol §3 ``durability``): STORE-DURABILITY-*.

Why a clause, and why at the ``durable`` level: a durable store is a promise about what
survives a power cut (spec 30 §2.3–§2.4: T1 durable before the side effect, T2 before its
result is used), and what "durable" costs differs per platform — on macOS ``fsync`` stops at
the drive's cache and only ``F_FULLFSYNC`` reaches the disk (docs/crashlab-powerloss.md, "What
durable means per platform"). The crash lab can test the promise only where FUSE runs (Linux);
everywhere else the declaration is what a reader of the certification and the platform matrix
has. The protocol keeps the field optional so older adapters still speak it, but an
implementation that claims ``store`` and says nothing about how it syncs fails this clause with
the fix in the message: a silent pass would show "durable" on a machine where nobody said what
durable meant. ``sync: "none"`` fails too: a store that never syncs is not durable.
"""

from __future__ import annotations

from typing import Any

from conformance.clauses import ClauseMismatch, clause

EXAMPLE = '{"sync": "fsync", "directorySync": true, "details": "..."}'


@clause("STORE-DURABILITY-001", spec="protocol §3; 30 §2.3–§2.4", capability="store",
        title="the handshake declares how the store is made durable (durability.sync, directorySync)")
def test_the_handshake_declares_durability(maka: Any) -> None:
    """protocol §3: ``hello``'s ``durability`` says which call makes a file durable and whether
    directories are synced after a create or rename; required of an implementation claiming
    ``store``, and it must name a real sync."""
    raw = dict(maka.handshake.raw)
    durability = raw.get("durability")
    if durability is None:
        raise ClauseMismatch(
            "the handshake declares no durability: an implementation claiming 'store' must say how it makes its "
            f"files durable (protocol §3), e.g. \"durability\": {EXAMPLE}; on macOS fsync does not reach the disk, "
            "declare F_FULLFSYNC if that is what you use (docs/crashlab-powerloss.md)",
            evidence={"durability": None})
    sync = durability.get("sync") if isinstance(durability, dict) else None
    if not isinstance(sync, str) or not sync.strip():
        raise ClauseMismatch(f"durability.sync must name the call that makes a file durable, got {sync!r}",
                             evidence={"durability": durability})
    if sync.strip().lower() == "none":
        raise ClauseMismatch("durability.sync is 'none': a store whose files are never synced is not durable "
                             "(spec 30 §2.3: T1 must be durable before the tool's side effect starts)",
                             evidence={"durability": durability})
    if not isinstance(durability.get("directorySync"), bool):
        raise ClauseMismatch(f"durability.directorySync must be true or false, got {durability.get('directorySync')!r}",
                             evidence={"durability": durability})
