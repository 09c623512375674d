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
message of every failed clause that a deviation names; ``tests/conformance/test_deviations.py`` keeps this
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
    Deviation(
        id="D-2",
        title="under the legacy protocol a tool starts before its function_call is durable, so a crash mid-tool "
              "leaves no trace of the call and a resume runs the tool again",
        spec="spec 20 §2 (P1-P3: the committed prefix is after_function_call — the call is durable before the "
             "implementation starts), spec 10 §6.4 (a legacy call without a result is indeterminate and blocks); "
             "the product's first promise: never run a tool twice",
        upstream="packages/runtime/src/tool-runtime.ts:1045-1055 only queues the call event when no T1 commit sink "
                 "is wired; the implementation runs at :1279-1330 and the queued call is appended afterwards",
        why="a SIGKILL inside the tool leaves the ledger at [user]: Phase 0 sees no call, plans safe_replay, and a "
            "resume re-runs a Write whose start the effect log shows. The reference commits the legacy call "
            "before the implementation starts; under t1_after_preflight_v1 upstream is correct.",
        clauses=("RUNTIME-CRASH-P1-legacy", "RUNTIME-CRASH-P2-legacy", "RUNTIME-CRASH-P3-legacy",
                 "RECOVERY-RESUME-007"),
    ),
    Deviation(
        id="D-3",
        title="a workspace identity change between a continuation's claim and its provider call fails the "
              "continuation with an unrelated store error instead of workspace_identity_changed",
        spec="spec 20 §3.9 steps 7 and 12 (the revalidation failure is reported with its code), protocol §4.3 "
             "(a revalidation failure is ok:false with its code)",
        upstream="packages/runtime/src/runtime-kernel.ts:1771-1791: the revalidation throws "
                 "workspace_identity_changed, then finalizeFailedRunStart (:3691-3714) writes a fallback terminal "
                 "into the target run, which the store refuses (storage/src/sqlite-runtime-store.ts:2605-2608: "
                 "'target sequence one is reserved for continuation-start'), and that error replaces the first",
        why="upstream fails closed (no provider call), but with the wrong error: an operator or a supervising "
            "process cannot tell a changed workspace from a broken store. The reference reports the revalidation "
            "code and leaves the claim for startup repair.",
        clauses=("MUTANT-GAP-CONT-002",),
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
