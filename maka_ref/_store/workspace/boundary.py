"""The workspace boundary writer: a Phase 4 boundary fact committed atomically with its checks
(spec-phase4 §1.3, §4.1–§4.3, §7.3).

Why a writer of its own: a boundary fact is resume authority over the user's files. The generic
append path refuses it (``reserved_workspace_boundary``), so the only way in is this writer, which
checks — inside the one ``BEGIN IMMEDIATE`` transaction that inserts the row — the five
§1.3 rules and the §4.2 pre-commit artifact check:

1. ``immutableRuntimeHighWater`` = the carrying run's ``lastEventSeq`` (the fact goes at H+1),
   else ``workspace_boundary_high_water_changed``;
2. ``immutableRuntimeDigest`` = the prefix digest recomputed from the store's own rows ``1..H``,
   else ``workspace_boundary_digest_mismatch``;
3. the epoch: the session's current epoch for ``boundary_captured``, current + 1 for the two
   transitions, else ``workspace_epoch_conflict``;
4. the ref's ``<uuid>`` = the UUID of the boundary's identity (``from``'s for ``restored``), else
   ``invalid_workspace_fact``;
5. an exact retry is a no-op, anything else reusing the id is a conflict;

and, last before the insert, ``artifact_check(ref)`` — the caller's "the ref still resolves to
the captured commit" — else ``workspace_checkpoint_missing`` and nothing is committed: the
artifact is then an orphan (§4.1), collected later; a fact never names a missing artifact.

The store does not call Git: the check is the caller's callable (the carrier is a room above
the store's rules of import), run while the write lock is held, so a collector that reads
``liveRefs`` under the same lock (§9) cannot delete the ref between the check and the commit.

Choice where the contract is silent (§7.3 says "per session lineage"): the current epoch is the
largest ``workspaceEpoch`` of any boundary fact stored in the carrying event's session, 0 when
there is none; a first ``boundary_captured`` has epoch 1, and a transition with no previous
boundary has epoch 1 (0 + 1).

Transition kinds (``rebaselined``, ``restored``) share the continuation-start transaction
(§4.3); :func:`insert_boundary_fact` is the in-transaction step such a writer calls after it
inserted the continuation-start at seq 1.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from maka_ref._events.boundary import (
    BOUNDARY_CAPTURED_KIND,
    REBASELINED_KIND,
    RESTORED_KIND,
    boundary_fact_issue,
    ref_uuid,
    workspace_uuid,
)
from maka_ref._events.encode import (
    EncodedRuntimeEvent,
    encode_runtime_event,
    json_strict_equal,
)
from maka_ref._store.engine.rows import read_event_row
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.primitive import (
    check_identity,
    check_run_sealed,
    insert_event,
)
from maka_ref._store.reads import read_immutable_prefix
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.writers.generic import WORKSPACE_AUTHORITY_SESSION_ID, pre_validate_generic

__all__ = [
    "ArtifactCheck",
    "BoundaryCommitResult",
    "commit_workspace_boundary",
    "current_epoch",
    "insert_boundary_fact",
    "insert_transition_notice",
    "newest_restored_run",
    "session_boundary_facts",
    "validate_boundary_event",
]

#: ``artifact_check(checkpointRef) -> bool``: True iff the ref still resolves to the captured commit.
ArtifactCheck = Callable[[str], bool]

_FORBIDDEN_FIELDS = ("content", "status", "branch")


@dataclass(frozen=True, slots=True)
class BoundaryCommitResult:
    """``event_seq`` of the fact; ``created`` is False for an exact retry."""

    event_id: str
    event_seq: int
    created: bool


def _fail(message: str, code: str, detail: str | None = None) -> StoreError:
    return StoreError(message, code=code, detail=detail)


def validate_boundary_event(raw: Any) -> EncodedRuntimeEvent:
    """Schema, envelope and lane of a boundary-fact event (before any lock).

    The lane (§1.3): role and author ``system``, ``partial: false``, no ``content``, ``status`` or
    ``branch``, ``actions`` exactly ``{workspaceBoundary}``, never the reserved authority session.
    """
    actions = raw.get("actions") if isinstance(raw, Mapping) else None
    fact = actions.get("workspaceBoundary") if isinstance(actions, Mapping) else None
    if fact is None:
        raise _fail("Event carries no workspace boundary fact", "invalid_workspace_fact")
    issue = boundary_fact_issue(fact)
    if issue is not None:
        raise _fail(f"Invalid workspace boundary fact: {issue[1]}", "invalid_workspace_boundary", issue[0])
    try:
        encoded = encode_runtime_event(raw)
    except (ValueError, TypeError) as error:
        raise _fail("Invalid workspace boundary event", "invalid_workspace_fact", str(error)) from None
    event = encoded.event
    if (
        event.get("role") != "system"
        or event.get("author") != "system"
        or event.get("partial") is not False
        or any(field in event for field in _FORBIDDEN_FIELDS)
        or set(event["actions"]) != {"workspaceBoundary"}
        or event.get("sessionId") == WORKSPACE_AUTHORITY_SESSION_ID
    ):
        raise _fail("Workspace boundary fact violates its lane", "invalid_workspace_fact")
    return encoded


def session_boundary_facts(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str, int, Any]]:
    """``(run_id, event_id, event_seq, fact)`` of every stored boundary fact of a session."""
    rows = conn.execute(
        "SELECT run_id, event_id, event_seq, json_extract(payload_json, '$.actions.workspaceBoundary') "
        "FROM runtime_events WHERE session_id = ? AND "
        "json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL "
        "ORDER BY run_id, event_seq",
        (session_id,),
    ).fetchall()
    return [(run_id, event_id, seq, json.loads(text)) for run_id, event_id, seq, text in rows]


def current_epoch(conn: sqlite3.Connection, session_id: str) -> int:
    """The session's current epoch: the largest boundary epoch stored, 0 when none (§7.3)."""
    epochs = [int(fact["payload"]["boundary"]["workspaceEpoch"]) for *_, fact in session_boundary_facts(conn, session_id)]
    return max(epochs, default=0)


def newest_restored_run(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The run carrying the session's newest ``maka.workspace.restored`` fact, or None.

    Why: after an isolated restore the session works in the destination (spec-phase4 §7.2 step
    5); that run's header records the destination as its ``cwd``, and the fact is what
    authorizes the move, so only a run carrying one may move the session's working directory.
    """
    row = conn.execute(
        "SELECT run_id FROM runtime_events WHERE session_id = ? AND "
        "json_extract(payload_json, '$.actions.workspaceBoundary.kind') = ? "
        "ORDER BY committed_at DESC, event_id DESC LIMIT 1",
        (session_id, RESTORED_KIND),
    ).fetchone()
    return None if row is None else str(row[0])


def _last_event_seq(conn: sqlite3.Connection, session_id: str, run_id: str) -> int:
    row = conn.execute(
        "SELECT MAX(event_seq) FROM runtime_events WHERE session_id = ? AND run_id = ?", (session_id, run_id)
    ).fetchone()
    return int(row[0] or 0)


def insert_boundary_fact(
    conn: sqlite3.Connection, encoded: EncodedRuntimeEvent, committed_at: float, artifact_check: ArtifactCheck
) -> BoundaryCommitResult:
    """The in-transaction steps (caller holds the write transaction); a failure raises, and the
    caller's rollback leaves nothing (§4.3)."""
    event = encoded.event
    session_id, run_id, event_id = event["sessionId"], event["runId"], event["id"]
    existing = read_event_row(conn, event_id)
    if existing is not None:
        if not json_strict_equal(existing.event, event):
            raise _fail(f"RuntimeEvent identity conflict for {event_id}", "event_identity_conflict")
        return BoundaryCommitResult(event_id, existing.event_seq, False)
    check_identity(conn, event)
    check_run_sealed(conn, session_id, run_id)
    fact = event["actions"]["workspaceBoundary"]
    kind, payload = fact["kind"], fact["payload"]
    boundary = payload["boundary"]
    high_water = int(boundary["immutableRuntimeHighWater"])
    if high_water != _last_event_seq(conn, session_id, run_id):
        raise _fail("Workspace boundary high-water is not the run's last event", "workspace_boundary_high_water_changed")
    prefix = read_immutable_prefix(conn, session_id, run_id, high_water)
    if prefix.prefix_digest != boundary["immutableRuntimeDigest"]:
        raise _fail("Workspace boundary digest does not match the stored prefix", "workspace_boundary_digest_mismatch")
    epoch = current_epoch(conn, session_id)
    wanted = max(epoch, 1) if kind == BOUNDARY_CAPTURED_KIND else epoch + 1
    if int(boundary["workspaceEpoch"]) != wanted:
        raise _fail(f"Workspace boundary epoch must be {wanted}", "workspace_epoch_conflict")
    owner = payload["from"] if kind == RESTORED_KIND else boundary
    if ref_uuid(boundary["checkpointRef"]) != workspace_uuid(owner["workspaceIdentity"]):
        raise _fail("Checkpoint ref namespace does not match the workspace identity", "invalid_workspace_fact")
    if not artifact_check(boundary["checkpointRef"]):
        raise _fail("Checkpoint artifact no longer resolves to the captured commit", "workspace_checkpoint_missing")
    seq, created = insert_event(conn, encoded, committed_at, allow_exact_duplicate=False)
    if seq != high_water + 1:
        raise _fail("Workspace boundary fact must directly follow its prefix", "workspace_boundary_high_water_changed")
    return BoundaryCommitResult(event_id, seq, created)


def insert_transition_notice(conn: sqlite3.Connection, raw: Any, committed_at: float) -> int:
    """The model notice of a rebaseline (spec-phase4 §7.1 step 5), in the transaction of its
    fact: a plain ``role: system`` text event (no ``actions``), at the seq right after a
    ``rebaselined`` fact of the same run (seq 3). Why in the same transaction: the notice is
    derived only from the fact, so it exists exactly when the fact does — no provider call can
    follow the transition without it. Returns the ``event_seq``."""
    encoded = pre_validate_generic(raw)
    event = encoded.event
    content = event.get("content")
    if (
        event.get("role") != "system"
        or event.get("author") != "system"
        or "actions" in event
        or not isinstance(content, Mapping)
        or content.get("kind") != "text"
    ):
        raise _fail("A transition notice is one system text event", "invalid_workspace_fact")
    session_id, run_id = event["sessionId"], event["runId"]
    last = _last_event_seq(conn, session_id, run_id)
    row = conn.execute(
        "SELECT json_extract(payload_json, '$.actions.workspaceBoundary.kind') FROM runtime_events "
        "WHERE session_id = ? AND run_id = ? AND event_seq = ?", (session_id, run_id, last)).fetchone()
    if row is None or row[0] != REBASELINED_KIND:
        raise _fail("A transition notice must directly follow its rebaselined fact", "invalid_workspace_fact")
    check_run_sealed(conn, session_id, run_id)
    seq, _created = insert_event(conn, encoded, committed_at, allow_exact_duplicate=False)
    return seq


def commit_workspace_boundary(
    store: RuntimeStore, raw: Any, artifact_check: ArtifactCheck, *, committed_at: float | None = None
) -> BoundaryCommitResult:
    """Commit one ``maka.workspace.boundary_captured`` fact (§1.3, §4.2) in one transaction.

    Transition kinds are refused here (``invalid_workspace_fact``): they belong in the
    continuation-start transaction (§4.3, :func:`insert_boundary_fact`).
    """
    encoded = validate_boundary_event(raw)
    if encoded.event["actions"]["workspaceBoundary"]["kind"] != BOUNDARY_CAPTURED_KIND:
        raise _fail("Transition facts commit with their continuation start", "invalid_workspace_fact")
    at = encoded.event["ts"] if committed_at is None else committed_at
    with store.write() as conn:
        return insert_boundary_fact(conn, encoded, at, artifact_check)
