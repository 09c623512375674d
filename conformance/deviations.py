"""Known deviations of upstream Maka from the contract: clauses the reference passes and upstream
fails on purpose, each with its reason (``docs/deviations.md``).

Why a table in the package: a conformance verdict is only useful when the report says *why*
it failed. Where upstream (``maka-agent/maka-agent`` at ``f19eede03``, the implementation the
spec was written from) breaks one of the spec's own rules, the harness keeps the rule and lets
the clause fail — but the failure message then names the rule, upstream's ``file:line`` and
the entry of ``docs/deviations.md``, so a Maka user reading the report learns that this is a
known difference, not a harness bug. For any other implementation the same note tells it which
rule it broke in the same way. Everything else in the spec that upstream does is, by the
project's rule, what the reference does (``docs/upstream.md``).

The recording step (:mod:`conformance._suite.recording`) appends :func:`note_for` to the
message of every failed clause that a deviation names; ``tests/test_deviations.py`` keeps this
table and ``docs/deviations.md`` in sync.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEVIATIONS", "Deviation", "deviation_for", "note_for"]


@dataclass(frozen=True)
class Deviation:
    """One rule upstream breaks. ``clauses``: clause ids (or id prefixes ending in ``-``/``:``)
    that fail on upstream because of it."""

    id: str
    title: str
    spec: str
    upstream: str
    why: str
    clauses: tuple[str, ...]

    def matches(self, clause_id: str) -> bool:
        return any(clause_id == c or (c.endswith(("-", ":")) and clause_id.startswith(c)) for c in self.clauses)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        id="D-1",
        title="a read-only open creates runtime.sqlite-wal and runtime.sqlite-shm (and leaves them when it refuses)",
        spec="spec 30 §1.1 (\"a read-only open never creates the file\"), §10 #33 (\"read-only openers must not "
             "create files or directories\"); protocol §4.2 (readOnly MUST NOT create, migrate or modify any file)",
        upstream="packages/storage/src/sqlite-runtime-store.ts:288 opens the WAL database with node:sqlite "
                 "{ readOnly: true }, which creates -wal/-shm when they are missing; the schema check at :293-297 "
                 "then refuses and closes, leaving both files behind (also through "
                 "runtime-event-persistence.ts:72 openRuntimeEventReadPersistence)",
        why="inspection of a workspace (another machine's copy, a read-only mount, a crash site kept as evidence) "
            "must not alter it; a left-over -wal also changes what a later writer open finds. The reference opens "
            "a private snapshot instead and creates nothing.",
        clauses=("STORE-SCHEMA-001", "STORE-SCHEMA-002", "STORE-REOPEN-005"),
    ),
)


def deviation_for(clause_id: str) -> Deviation | None:
    """The known upstream deviation behind ``clause_id``, if any."""
    return next((d for d in DEVIATIONS if d.matches(clause_id)), None)


def note_for(clause_id: str) -> str:
    """The text appended to a failure of ``clause_id`` ("" when no deviation names it)."""
    d = deviation_for(clause_id)
    if d is None:
        return ""
    return (f"Known upstream deviation {d.id} (docs/deviations.md): {d.title}. Rule: {d.spec}. "
            f"Upstream: {d.upstream}. Why the rule stands: {d.why}")
