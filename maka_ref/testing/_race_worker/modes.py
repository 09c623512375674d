"""The race worker's modes: what one worker does with the open store (spec 30 §7.1, §7.3).

:data:`MODES` maps each ``MAKA_SQLITE_RECOVERY_CONCURRENCY_MODE`` value to its body; kept
apart from the worker's main loop (:mod:`maka_ref.testing.race_worker`) so adding a race
scenario touches only this table and its small functions.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from maka_ref.testing import families as fam
from maka_ref.testing._race_worker.fixtures import (
    FIXED_TARGET,
    append_event,
    completed_bundle_events,
    continuation_claim,
    parked_bundle_events,
    t1_input,
    t2_input,
)
from maka_ref.testing._race_worker.protocol import ENV_COUNT, ENV_WORKER, _say

__all__ = ["MODES", "OPEN_ONLY_MODES"]

def _mode_completed(store: Any, env: dict[str, str]) -> dict[str, Any]:
    reconcile, outcome, decision = completed_bundle_events()
    store.commit_tool_recovery_bundle("operation-1", reconcile, decision, outcome=outcome)
    return {}


def _mode_parked(store: Any, env: dict[str, str]) -> dict[str, Any]:
    reconcile, decision = parked_bundle_events()
    store.commit_tool_recovery_bundle("operation-1", reconcile, decision)
    return {}


def _mode_rebuild(store: Any, env: dict[str, str]) -> dict[str, Any]:
    return store.rebuild_tool_projections().to_json()


def _t1(variant: str) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        return store.commit_tool_prepared(t1_input(variant)).to_json()

    return run


def _t2(response_id: str) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        return store.commit_tool_outcome(t2_input(response_id)).to_json()

    return run


def _mode_append(store: Any, env: dict[str, str]) -> dict[str, Any]:
    worker = int(env.get(ENV_WORKER, "0"))
    count = int(env.get(ENV_COUNT, "1"))
    seqs = [store.append(append_event(worker, index)).event_seq for index in range(count)]
    return {"eventSeqs": seqs}


def _claim(fixed: bool = False, nonterminal: bool = False) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        pid = os.getpid()
        target = FIXED_TARGET if fixed else (f"invocation-{pid}", f"run-{pid}", f"turn-{pid}")
        source = {"source_run": "run-1", "up_to": 2} if nonterminal else {}
        result = store.claim_continuation(continuation_claim(store, f"claim-{pid}", target, **source))
        _say(1, f"CLAIM {result.kind}\n")
        return {"kind": result.kind, "claimId": result.claim.claim_id}

    return run


def _mode_append_source(store: Any, env: dict[str, str]) -> dict[str, Any]:
    terminal = fam.event("run-1-terminal", ts=12, status="failed", actions={"endInvocation": True})
    seq = store.ensure_terminal_durable(terminal).event_seq
    _say(1, "APPEND committed\n")
    return {"eventSeq": seq}


def _mode_append_target(store: Any, env: dict[str, str]) -> dict[str, Any]:
    invocation, run_id, turn = FIXED_TARGET
    text = fam.event("fixed-target-text", ts=30, role="model", author="agent", invocationId=invocation,
                     runId=run_id, turnId=turn, content={"kind": "text", "text": "target text"})
    seq = store.append(text).event_seq
    _say(1, "TARGET_APPEND committed\n")
    return {"eventSeq": seq}


def _mode_open_only(store: Any, env: dict[str, str]) -> dict[str, Any]:
    return {"userVersion": store.schema_version()}


MODES: dict[str, Callable[[Any, dict[str, str]], dict[str, Any]]] = {
    "completed": _mode_completed,
    "parked": _mode_parked,
    "rebuild": _mode_rebuild,
    "t1": _t1("exact"),
    "t1_other_args": _t1("other_args"),
    "t1_fresh_ids": _t1("fresh_ids"),
    "t2": _t2("outcome-event-1"),
    "t2_conflict": _t2("outcome-event-2"),
    "append": _mode_append,
    "open_only": _mode_open_only,
    "claim": _claim(),
    "claim_fixed_target": _claim(fixed=True),
    "claim_nonterminal": _claim(nonterminal=True),
    "append_source": _mode_append_source,
    "append_target": _mode_append_target,
    "operational_open_only": _mode_open_only,
}
#: Modes that hold the store open until the stop file appears (spec 30 §7.1).
OPEN_ONLY_MODES = frozenset({"open_only", "operational_open_only"})
