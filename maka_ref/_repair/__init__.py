"""Startup repair (spec 20 §4, minus the continuation claim saga of §4.5).

``repair_workspace(root) -> RepairReport`` brings every run of a workspace to a consistent
end: the terminal RuntimeEvent first, then the terminal header (§4.1). Modules:

* :mod:`.classify`  — §4.3 terminal classification (pure);
* :mod:`.diagnose`  — §4.6 case C diagnostic from the operational event log (pure);
* :mod:`.terminal`  — §4.2 recovered terminal events, deterministic ids, §4.1 commit;
* :mod:`.runs`      — §4.6 per-run repair and §4.7 terminal-fact repair;
* :mod:`.workspace` — §4.4 per-session / per-workspace driver;
* :mod:`.claims`    — the extension point where the §4.5 claim saga plugs in;
* :mod:`.claim_saga` — the §4.5 claim saga (the default ``claim_saga``);
* :mod:`.reconcile` — the Phase 3 finalize-only reconciler (docs/spec-phase3.md §5), run before
  each run is sealed and by ``maka-ref reconcile``;
* :mod:`.report`    — the camelCase report.

Choices: docs/choices/repair.md.

May import: ``maka_ref._codec``, ``maka_ref._events``, ``maka_ref._plan.continuation``, ``maka_ref._reconcile``,
``maka_ref._store.agent_runs``, ``maka_ref._store.engine``, ``maka_ref._store.errors``,
``maka_ref._store.runtime_store``, ``maka_ref._store.workspace``, ``maka_ref._store.writers``.
"""

from maka_ref._repair.claims import NO_CLAIM_SAGA, ClaimAuthorityUnavailable, ClaimSaga, ClaimSagaContext, ClaimSagaOutcome
from maka_ref._repair.reconcile import RECONCILE_CODES, ReconcileResult, reconcile_operation, reconcile_store
from maka_ref._repair.report import RepairReport, RunRepair, SkippedRun
from maka_ref._repair.runs import RepairSkipped, repair_run, repair_terminal_header
from maka_ref._repair.workspace import check_workspace, reconcile_workspace, repair_session, repair_workspace

__all__ = [
    "NO_CLAIM_SAGA",
    "RECONCILE_CODES",
    "ReconcileResult",
    "ClaimAuthorityUnavailable",
    "ClaimSaga",
    "ClaimSagaContext",
    "ClaimSagaOutcome",
    "RepairReport",
    "RepairSkipped",
    "RunRepair",
    "SkippedRun",
    "check_workspace",
    "reconcile_operation",
    "reconcile_store",
    "reconcile_workspace",
    "repair_run",
    "repair_session",
    "repair_terminal_header",
    "repair_workspace",
]
