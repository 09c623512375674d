"""Phase 1 safe-boundary continuation — the host layer (spec 20 §3.1–§3.2, §3.8–§3.14, §7).

The pure planner lives in :mod:`maka_ref._plan.continuation`; this package connects it to the
real stores and the live loop. Modules, each small:

* :mod:`.world`      — ``StoreWorld``: the planner's world + the §3.8 safety inspector;
* :mod:`.revalidate` — §3.9 revalidation, ``RuntimeContinuationRevalidationError`` (coded);
* :mod:`.execute`    — claim → target header → continuation-start → provider loop → terminal;
* :mod:`.resume`     — ``resume_session`` (flag, candidate, plan, lifecycle, execute);
* :mod:`.lifecycle`  — §7 lifecycle events and the JSON-lines sink ``.maka/lifecycle.jsonl``;
* :mod:`.sidecar`    — ``.maka/scripts/<runId>.json``: the script a continuation replays.

Choices: ``docs/choices/continuation-execution.md``.

May import: ``maka_ref._codec``, ``maka_ref._durable``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._plan.continuation``, ``maka_ref._plan.prefix``,
``maka_ref._runtime``, ``maka_ref._store.agent_runs``, ``maka_ref._store.claims``,
``maka_ref._store.engine``, ``maka_ref._store.errors``, ``maka_ref._store.runtime_store``,
``maka_ref._store.workspace``.
"""

from .execute import ContinuationExecutionError, ExecutionResult, build_claim, build_target_header, execute_continuation
from .lifecycle import LIFECYCLE_FILE, LifecycleLog, read_lifecycle_log
from .resume import FLAG_ENV_VAR, ResumeOutcome, resume_session
from .revalidate import RuntimeContinuationRevalidationError, revalidate_safety, revalidate_source
from .sidecar import read_script_sidecar, script_sidecar_path, write_script_sidecar
from .world import StoreWorld, default_tool_catalog

__all__ = [
    "FLAG_ENV_VAR",
    "LIFECYCLE_FILE",
    "ContinuationExecutionError",
    "ExecutionResult",
    "LifecycleLog",
    "ResumeOutcome",
    "RuntimeContinuationRevalidationError",
    "StoreWorld",
    "build_claim",
    "build_target_header",
    "default_tool_catalog",
    "execute_continuation",
    "read_lifecycle_log",
    "read_script_sidecar",
    "resume_session",
    "revalidate_safety",
    "revalidate_source",
    "script_sidecar_path",
    "write_script_sidecar",
]
