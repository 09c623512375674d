"""``StoreWorld``: the pure planner's world (``_plan.continuation.ContinuationWorld``) over the
real stores of one workspace, plus the §3.8 safety inspector.

Why an adapter: the planner is pure and reads everything through a protocol. Here each reader
is one store call:

==========================  ==========================================================
planner dependency          store call
==========================  ==========================================================
``read_run_header``         ``AgentRunStore.read_run`` (strictly decoded header)
``read_prefix``             ``RuntimeStore.read_immutable_prefix`` (v2 prefix, digest)
``read_claim_state``        ``RuntimeStore.read_claim_by_boundary`` → ``{claim, startEventId?, startKind?}``
``list_session_runs``       ``AgentRunStore.list_session_runs``
``read_session_cwd``        the canonical workspace path (there is no session store: the
                            session's current cwd is the workspace ``resume`` was given),
                            except after an isolated restore: the ``cwd`` of the run carrying
                            the session's newest ``maka.workspace.restored`` fact
                            (docs/spec-phase4.md §7.2 step 5, §14 "store/cwd split")
``inspect``                 §3.8: workspace identity of that cwd (``resolve_workspace_identity``),
                            ``backgroundOperationsSettled`` (always true: the reference runtime
                            has no background operations), ``availableToolNames`` = the
                            runtime's tool catalog, sorted and de-duplicated, and
                            ``workspaceCheckpoint`` when a Phase 4 observer is given
                            (docs/spec-phase4.md §6.2: present only when every check passed)
==========================  ==========================================================

The three safety facts are injectable callables so tests can change them between planning and
execution (§8 items 102–103). Every reader signals failure by raising (the planner maps it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from maka_ref._plan.continuation import SafetyObservation
from maka_ref._plan.continuation.shapes import utf16_sorted_unique
from maka_ref._plan.prefix.immutable import ImmutableRuntimePrefix
from maka_ref._runtime.tools import TOOLS
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.boundary import newest_restored_run
from maka_ref._store.workspace.identity import resolve_workspace_identity

__all__ = ["StoreWorld", "default_tool_catalog"]


def default_tool_catalog() -> tuple[str, ...]:
    """The live runtime's tool names (``maka_ref._runtime.tools.TOOLS``)."""
    return tuple(TOOLS)


class StoreWorld:
    """Planner world + safety inspector over ``RuntimeStore`` and ``AgentRunStore``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        store: RuntimeStore,
        runs: AgentRunStore,
        *,
        resolve_identity: Callable[[str], str] | None = None,
        tool_catalog: Callable[[], Iterable[str]] = default_tool_catalog,
        background_settled: Callable[[str], bool] = lambda _session_id: True,
        workspace_checkpoint: Callable[[StoreWorld, str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.store = store
        self.runs = runs
        self._resolve_identity = resolve_identity or (lambda path: resolve_workspace_identity(path).identity)
        self._tool_catalog = tool_catalog
        self._background_settled = background_settled
        #: spec 20 §3.8 "optionally read checkpoint facts": the Phase 4 inspector part
        #: (docs/spec-phase4.md §6.2) — ``{ref, restored, runtimeEventHighWater}`` or None.
        self._workspace_checkpoint = workspace_checkpoint
        #: ``(cwd, identity)`` an isolated restore authorized for the continuation it executes
        #: (docs/spec-phase4.md §7.2): the session's working directory and identity from then on,
        #: reported without touching the destination (it is created only after the claim).
        self.transition_workspace: tuple[str, str] | None = None

    # -- planner readers ---------------------------------------------------------------

    def read_run_header(self, session_id: str, run_id: str) -> Mapping[str, Any]:
        return self.runs.read_run(session_id, run_id)

    def read_prefix(self, session_id: str, run_id: str, up_to_event_seq: int | None = None) -> ImmutableRuntimePrefix:
        return self.store.read_immutable_prefix(session_id, run_id, up_to_event_seq)

    def read_claim_state(self, boundary_digest: str) -> Mapping[str, Any] | None:
        record = self.store.read_claim_by_boundary(boundary_digest)
        return None if record is None else record.to_json()

    def list_session_runs(self, session_id: str) -> list[Mapping[str, Any]]:
        return list(self.runs.list_session_runs(session_id))

    def list_session_ids(self) -> list[str]:
        """Sessions of the workspace, oldest first (same order as startup repair)."""
        rows = self.runs.connection.execute(
            "SELECT session_id FROM agent_runs GROUP BY session_id ORDER BY MIN(created_at), session_id"
        ).fetchall()
        return [str(row[0]) for row in rows]

    # -- host wrapper readers (§3.2, §3.8) -------------------------------------------------

    def read_session_cwd(self, session_id: str) -> str:
        if self.transition_workspace is not None:
            return self.transition_workspace[0]
        with self.store.read() as conn:
            restored = newest_restored_run(conn, session_id)
        if restored is not None:  # the lineage moved to its restore destination (spec-phase4 §7.2)
            return str(self.runs.read_run(session_id, restored)["cwd"])
        # canonical (§3.8, §8 item 32): a world opened through a symlink must report the same
        # cwd as the header of a run started there (``run_turn`` records the resolved path)
        return os.path.realpath(self.root)

    def tool_names(self) -> tuple[str, ...]:
        return utf16_sorted_unique(self._tool_catalog())

    def inspect(self, session_id: str) -> SafetyObservation:
        cwd = self.read_session_cwd(session_id)
        moved = self.transition_workspace
        return SafetyObservation(
            workspace_identity=moved[1] if moved is not None else self._resolve_identity(cwd),
            background_operations_settled=self._background_settled(session_id) is True,
            available_tool_names=self.tool_names(),
            workspace_path=cwd,
            workspace_checkpoint=(None if self._workspace_checkpoint is None
                                  else self._workspace_checkpoint(self, session_id)),
        )
