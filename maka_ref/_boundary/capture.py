"""Capture a checkpoint and commit its boundary fact, in the §4.1 order; the §5.1 capture
points (spec-phase4 §4.1, §4.2, §5.1, §8).

Order (§4.1): the carrier publishes the ref first (its ``on_step`` names
``after_checkpoint_objects_written`` and ``after_checkpoint_ref_created`` are failpoints here),
then the store commits the fact in one transaction whose last check is that the ref still
resolves to the captured commit (§4.2). A death between the two leaves an orphan ref that
``collect`` deletes after the grace period; no fact ever names a missing artifact.

Capture points (§5.1) without touching the tool loop: :class:`CapturingProvider` wraps the
provider and, before each provider call, captures when the run has no boundary yet (B0: the user
message or continuation start is committed, no provider call made) or when a mutating tool call
was committed after the run's last boundary (B1: every outcome of the step is committed, since
the loop calls the provider only then). A failed capture commits nothing and is recorded as a
diagnostic; the run continues with an uncovered suffix (§5.1, last paragraph).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maka_ref._boundary.lineage import READ_ONLY_TOOLS, boundary_facts, breaks_coverage
from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from maka_ref._events.boundary import BOUNDARY_CAPTURED_KIND
from maka_ref._store.engine.failpoints import block_forever, failpoint
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.boundary import (
    BoundaryCommitResult,
    commit_workspace_boundary,
    current_epoch,
)

__all__ = [
    "CHECKPOINT_FAILPOINT_ENV",
    "CaptureFailure",
    "CapturingProvider",
    "capture_and_commit",
    "carrier_failpoints",
    "checkpoint_failpoint",
    "ref_resolver",
]

#: spec-phase4 §8: runtime failpoint after the fact, before the provider call.
AFTER_BOUNDARY_COMMITTED = "after_workspace_boundary_committed"


@dataclass(frozen=True, slots=True)
class CaptureFailure:
    """A capture point that committed nothing: the code and where (§5.1 diagnostic)."""

    code: str
    message: str
    run_id: str
    high_water: int

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "runId": self.run_id, "highWater": self.high_water}


#: Arms one spec-phase4 §8 point by name (read at each step): the process writes
#: ``MAKA_FAILPOINT <name>`` to stderr and blocks until killed, like ``MAKA_REF_FAILPOINT``.
#: A separate variable so that the store's closed failpoint registry stays spec 30's.
CHECKPOINT_FAILPOINT_ENV = "MAKA_REF_CHECKPOINT_FAILPOINT"


def checkpoint_failpoint(name: str) -> None:
    """A §8 point: blocks here when ``MAKA_REF_CHECKPOINT_FAILPOINT`` names it."""
    if os.environ.get(CHECKPOINT_FAILPOINT_ENV) == name:
        os.write(2, f"MAKA_FAILPOINT {name}\n".encode())
        block_forever()
    failpoint(name)


def carrier_failpoints(name: str) -> None:
    """``on_step`` of the carrier: each §8 carrier step is a checkpoint failpoint."""
    checkpoint_failpoint(name)


def ref_resolver(carrier: GitCheckpointCarrier, workspace: str, identity: str, commit_oid: str) -> Callable[[str], bool]:
    """§4.2's pre-commit check: the ref is listed in its namespace and still names the commit."""

    def check(ref: str) -> bool:
        try:
            listed = carrier.list(workspace, identity)
        except CheckpointError:
            return False
        return any(item.checkpoint_ref == ref and item.commit_oid == commit_oid for item in listed)

    return check


def capture_and_commit(
    store: RuntimeStore,
    carrier: GitCheckpointCarrier,
    workspace: str,
    identity: str,
    run: Mapping[str, str],
    *,
    now_ms: int | None = None,
) -> BoundaryCommitResult:
    """Capture ``workspace`` and commit a ``boundary_captured`` fact at the run's H+1.

    ``run`` holds ``sessionId``, ``invocationId``, ``runId``, ``turnId``. Raises
    :class:`CheckpointError` (capture refused) or :class:`StoreError` (fact refused: the ref is
    then an orphan).
    """
    session_id, run_id = run["sessionId"], run["runId"]
    prefix = store.read_immutable_prefix(session_id, run_id)
    high_water = len(prefix.events)
    with store.read() as conn:
        epoch = max(current_epoch(conn, session_id), 1)
    captured = carrier.capture(workspace, identity)
    last_ts = prefix.events[-1].get("ts", 0)
    ts = max(int(last_ts) if isinstance(last_ts, (int, float)) else 0, now_ms if now_ms is not None else int(time.time() * 1000))
    boundary = {
        "workspaceIdentity": identity,
        "workspaceEpoch": epoch,
        "immutableRuntimeHighWater": high_water,
        "immutableRuntimeDigest": prefix.prefix_digest,
        "checkpointRef": captured.checkpoint_ref,
        "checkpointPolicyHash": captured.policy_hash,
    }
    event = {
        "id": f"{run_id}_workspace_boundary_{high_water + 1}",
        "sessionId": session_id, "invocationId": run["invocationId"], "runId": run_id, "turnId": run["turnId"],
        "ts": ts, "partial": False, "role": "system", "author": "system",
        "actions": {"workspaceBoundary": {"kind": BOUNDARY_CAPTURED_KIND, "version": 1, "payload": {
            "protocol": "workspace_boundary_captured_v1", "boundary": boundary}}},
    }
    result = commit_workspace_boundary(
        store, event, ref_resolver(carrier, workspace, identity, captured.commit_oid))
    checkpoint_failpoint(AFTER_BOUNDARY_COMMITTED)
    return result


def _needs_capture(events: Sequence[Mapping[str, Any]], run_id: str, read_only: frozenset[str]) -> bool:
    """B0: a normal run without a boundary; B1: a mutating call after the run's last boundary.
    A continuation run starts covered by its lineage's boundary (the resume gate checked it), so
    it captures only once it has made a mutating call of its own."""
    facts = boundary_facts(run_id, events)
    if facts:
        return any(breaks_coverage(event, read_only) for event in events[facts[-1].event_seq:])
    first_actions = (events[0].get("actions") or {}) if events else {}
    if "continuationStart" in first_actions:
        return any(breaks_coverage(event, read_only) for event in events)
    return True


@dataclass
class CapturingProvider:
    """Wraps a provider (``next_step(history)``): captures at B0/B1 before delegating (§5.1)."""

    inner: Any
    root: str
    identity: str
    carrier: GitCheckpointCarrier
    read_only: frozenset[str] = READ_ONLY_TOOLS
    failures: list[CaptureFailure] = field(default_factory=list)
    committed: list[BoundaryCommitResult] = field(default_factory=list)

    #: Builds ``inner`` on the first call when it is None (a continuation's script is known
    #: only once the plan names the source run: the last history item is the start).
    make_inner: Any = None
    #: Capture only in a session already in checkpoint mode (one holding a boundary fact): a
    #: continuation never switches a session into checkpoint mode (§5.1, "never silently").
    require_checkpoint_mode: bool = False
    #: The session's mode, read once (it never changes during a run, §5.1).
    _mode: bool | None = None
    #: Where ``runtime.sqlite`` lives when it is not ``root`` (a continuation working in an
    #: isolated restore's destination keeps the store where it was, §7.2, §14).
    store_root: str | None = None
    #: Take ``root`` and ``identity`` from the running run's header (``cwd``,
    #: ``workspaceIdentity``) at the first capture point: a continuation's working directory is
    #: known only once the plan named it.
    from_header: bool = False

    def next_step(self, history: Sequence[Any]) -> Any:
        if history:
            # the newest history item always belongs to the running run (a user event, a
            # continuation start, or a tool response); older ones may be replayed source context
            self._capture_point(history[-1])
        if self.inner is None:
            self.inner = self.make_inner(history)
        return self.inner.next_step(history)

    def __getattr__(self, name: str) -> Any:  # script, calls… of the wrapped provider
        if name in ("inner", "make_inner"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _capture_point(self, first: Mapping[str, Any]) -> None:
        if self.require_checkpoint_mode and self._mode is False:
            return  # not a checkpoint-mode session: no store opened per provider call
        run = {key: str(first[key]) for key in ("sessionId", "invocationId", "runId", "turnId")}
        if self.from_header:
            self._adopt_header(run["sessionId"], run["runId"])
        store = RuntimeStore.open(self.store_root or self.root)
        try:
            if self.require_checkpoint_mode and self._mode is None:
                with store.read() as conn:
                    self._mode = current_epoch(conn, run["sessionId"]) > 0
                if not self._mode:
                    return
            events = store.read_run_events(run["sessionId"], run["runId"])
            if not _needs_capture(events, run["runId"], self.read_only):
                return
            try:
                self.committed.append(capture_and_commit(store, self.carrier, self.root, self.identity, run))
            except (CheckpointError, StoreError) as error:
                self.failures.append(CaptureFailure(error.code, str(error), run["runId"], len(events)))
        finally:
            store.close()


    def _adopt_header(self, session_id: str, run_id: str) -> None:
        from maka_ref._store.agent_runs.store import AgentRunStore

        runs = AgentRunStore.open(self.store_root or self.root)
        try:
            header = runs.read_run(session_id, run_id)
        finally:
            runs.close()
        self.root, self.identity = str(header["cwd"]), str(header["workspaceIdentity"])
        self.from_header = False


def default_carrier() -> GitCheckpointCarrier:
    """The reference carrier with its §8 steps wired to the store's failpoints."""
    return GitCheckpointCarrier(on_step=carrier_failpoints)


def workspace_path(root: str | os.PathLike[str]) -> str:
    return str(Path(os.path.realpath(os.fspath(root))))
