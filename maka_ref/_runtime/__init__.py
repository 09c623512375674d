"""The live reference runtime (issue 4): scripted provider, real tools, the T1/T2 tool loop.

Layering: this package sits above the stores (``maka_ref._store``) and the pure core, and
below the CLI. Modules, each small and single-purpose:

* :mod:`.provider`     script format (``script.schema.json``), step selection from history;
* :mod:`.tools`        ``Write``/``Edit``/``Read``/``Append`` on the workspace, recovery modes;
* :mod:`.paths`        workspace confinement of tool paths;
* :mod:`.effects`      the ``.maka-effects.jsonl`` effect log (fsynced before every effect);
* :mod:`.ids`          per-run seed, deterministic event ids, ``toolop_`` operation ids;
* :mod:`.events`       RuntimeEvent builders (producer conventions);
* :mod:`.tool_runtime` one tool call: preflight → T1 → implementation → T2;
* :mod:`.run_turn`     one turn: header → user event → loop → terminal event → header;
* :mod:`.livepoints`   the P0–P11 failpoint ids the loop reaches (and the pending ones).

May import: ``maka_ref._codec``, ``maka_ref._durable``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._reconcile``, ``maka_ref._store.agent_runs``, ``maka_ref._store.engine``,
``maka_ref._store.runtime_store``, ``maka_ref._store.workspace``.
"""

from maka_ref._runtime.effects import EFFECT_LOG_NAME, EffectLog, read_effect_log
from maka_ref._runtime.errors import RuntimeLoopError, ScriptError, ScriptExhaustedError, ToolBoundaryError
from maka_ref._runtime.ids import RunIds, new_seed, operation_id
from maka_ref._runtime.livepoints import LIVE_FAILPOINTS, NON_LOOP_FAILPOINTS
from maka_ref._runtime.paths import ConfinementError, confine
from maka_ref._runtime.provider import (
    LEGACY_PROTOCOL,
    T1_PROTOCOL,
    ModelStep,
    Script,
    ScriptedProvider,
    ToolCallRequest,
    count_model_steps,
    load_script,
    script_schema,
)
from maka_ref._runtime.run_turn import MillisecondClock, RunSummary, run_turn
from maka_ref._runtime.tool_runtime import ToolCallOutcome, ToolRuntime
from maka_ref._runtime.tools import TOOLS, Tool, ToolContext, ToolError

__all__ = [
    "EFFECT_LOG_NAME",
    "LEGACY_PROTOCOL",
    "LIVE_FAILPOINTS",
    "NON_LOOP_FAILPOINTS",
    "T1_PROTOCOL",
    "TOOLS",
    "ConfinementError",
    "EffectLog",
    "MillisecondClock",
    "ModelStep",
    "RunIds",
    "RunSummary",
    "RuntimeLoopError",
    "Script",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "Tool",
    "ToolBoundaryError",
    "ToolCallOutcome",
    "ToolCallRequest",
    "ToolContext",
    "ToolError",
    "ToolRuntime",
    "confine",
    "count_model_steps",
    "load_script",
    "new_seed",
    "operation_id",
    "read_effect_log",
    "run_turn",
    "script_schema",
]
