"""Build ``failpoints.json`` from ``maka_ref`` (``python -m conformance.protocol._failpoints_gen``).

Why generated but committed: the catalogue is part of the protocol (an implementer in another
language reads the file, not our Python), while its source of truth is the reference runtime's
registries. ``tests/conformance/test_protocol_schemas.py`` fails when the committed file is stale.

Sources: ``maka_ref.FAILPOINTS`` (P0–P11, with their spec 20 §2 boundary),
``maka_ref._store.engine.failpoints.FAILPOINT_NAMES`` (store hooks, spec 30 §6) and
``maka_ref._runtime.livepoints.CONTINUATION_FAILPOINTS`` (spec 20 §4.9) and
``maka_ref._store.engine.failpoints.CHECKPOINT_FAILPOINTS`` (spec-phase4 §8). ``reachableBy`` lists
the protocol operations whose reference code path reaches the point (empty: no operation does,
so an adapter must not list it in ``hello``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["build_failpoints", "render"]

PATH = Path(__file__).with_name("failpoints.json")

_STORE_HOOKS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "after_runtime_event_insert": ("store", "inside T1/T2/a recovery bundle: the RuntimeEvent row is inserted, its journal row not yet (spec 30 §6)", ("store.commit_tool_prepared", "store.commit_tool_outcome", "store.commit_recovery_bundle", "runtime.run_turn")),
    "after_journal_event_insert": ("store", "inside T1/T2/a recovery bundle: the journal row is inserted, the projection update not yet (spec 30 §6)", ("store.commit_tool_prepared", "store.commit_tool_outcome", "store.commit_recovery_bundle", "runtime.run_turn")),
    "after_recovery_reconcile": ("store", "inside a recovery bundle: reconcile fact written, outcome/decision not yet (spec 30 §6.2)", ("store.commit_recovery_bundle",)),
    "after_recovery_outcome": ("store", "inside a completed recovery bundle: outcome written, decision not yet (spec 30 §6.2)", ("store.commit_recovery_bundle",)),
    "after_recovery_decision": ("store", "inside a recovery bundle: every fact written, COMMIT not yet (spec 30 §6.2)", ("store.commit_recovery_bundle",)),
    "after_continuation_claim_insert": ("runtime.continuation", "inside the continuation claim transaction: claim row inserted, not committed (spec 30 §2.6)", ("runtime.resume",)),
    "after_continuation_start_insert": ("runtime.continuation", "inside the continuation-start transaction: start event inserted, not committed (spec 30 §2.6)", ("runtime.resume",)),
    "after_workspace_canonical_scan": ("store", "after a canonical scan of the workspace authority stream (spec 30 §2.7)", ()),
    "after_workspace_epoch_event_insert": ("store", "inside a workspace baseline commit: epoch-opened event inserted (spec 30 §2.7)", ()),
    "after_workspace_version_event_insert": ("store", "inside a workspace baseline commit: baseline-accepted event inserted (spec 30 §6.2)", ()),
    "after_workspace_epoch_projection_insert": ("store", "inside a workspace baseline commit: epoch projection row inserted (spec 30 §2.7)", ()),
    "after_workspace_version_projection_insert": ("store", "inside a workspace baseline commit: version projection row inserted (spec 30 §2.7)", ()),
    "after_workspace_head_projection_insert": ("store", "inside a workspace baseline commit: head projection row inserted, COMMIT not yet (spec 30 §2.7)", ()),
    # Phase 3 (docs/spec-phase3.md §5.6, §6): the reconciler of runtime.reconcile, also run by
    # runtime.repair {"reconcile": true}; armable by an implementation that claims it.
    "reconcile_after_observation": ("runtime.reconcile", "Phase 3 reconciler: the target observed, nothing decided or committed (spec-phase3 §5.6)", ("runtime.reconcile", "runtime.repair")),
    "reconcile_after_decision": ("runtime.reconcile", "Phase 3 reconciler: the bundle built, not committed (spec-phase3 §5.6)", ("runtime.reconcile", "runtime.repair")),
    "reconcile_inside_bundle": ("runtime.reconcile", "Phase 3 reconciler: inside its bundle transaction, the reconcile fact inserted, not committed (spec-phase3 §5.6)", ("runtime.reconcile", "runtime.repair")),
}


#: spec-phase4 §8 points: description and the ``checkpoint.*`` operations that reach them.
_CHECKPOINT_POINTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "after_checkpoint_objects_written": ("carrier capture: tree and commit objects written, no ref yet (spec-phase4 §3.4 step 8, §8)", ("checkpoint.capture", "checkpoint.run_turn", "checkpoint.resume")),
    "after_checkpoint_ref_created": ("carrier capture: the ref published, no fact names it yet (spec-phase4 §3.4 step 9, §8; in a rebaseline: after_rebaseline_captured)", ("checkpoint.capture", "checkpoint.run_turn", "checkpoint.resume")),
    "after_workspace_boundary_committed": ("the boundary_captured fact committed, before the provider call (spec-phase4 §5.1, §8)", ("checkpoint.run_turn", "checkpoint.resume")),
    "after_workspace_transition_committed": ("the continuation-start and its rebaselined (or restored) fact committed in one transaction, before the provider call (spec-phase4 §7.1 step 4, §8)", ("checkpoint.resume",)),
    "after_restore_materialized": ("restore: the staging directory verified, not renamed to the destination (spec-phase4 §3.6 step 4, §8)", ("checkpoint.restore",)),
    "after_restore_published": ("restore: the destination published, no transition fact (spec-phase4 §3.6 step 5, §8)", ("checkpoint.restore",)),
    "after_checkpoint_ref_deleted": ("collect: one orphan ref deleted, the others not yet (spec-phase4 §3.8, §8)", ("checkpoint.collect",)),
}


def _live(fp: Any) -> dict[str, Any]:
    number = int(fp.id[1:])
    if number <= 9:
        capability, ops = "runtime.loop", ("runtime.run_turn", "runtime.resume")
    elif number == 10:
        capability, ops = "runtime.repair", ("runtime.repair",)
    else:
        capability, ops = "runtime.continuation", ("runtime.resume",)
    return {"id": fp.id, "kind": "live", "capability": capability,
            "description": f"{fp.boundary} (spec 20 §2; committedPrefix {fp.committed_prefix})", "reachableBy": list(ops)}


def build_failpoints() -> dict[str, Any]:
    """The catalogue document, from the reference runtime's registries."""
    from maka_ref import FAILPOINTS
    from maka_ref._runtime.livepoints import CONTINUATION_FAILPOINTS
    from maka_ref._store.engine.failpoints import CHECKPOINT_FAILPOINTS, FAILPOINT_NAMES

    if set(_CHECKPOINT_POINTS) != CHECKPOINT_FAILPOINTS:
        raise ValueError(f"checkpoint failpoints without a description here: {sorted(CHECKPOINT_FAILPOINTS ^ set(_CHECKPOINT_POINTS))}")
    entries = [_live(fp) for fp in FAILPOINTS]
    live_ids = {fp.id for fp in FAILPOINTS}
    hooks = sorted(FAILPOINT_NAMES - live_ids - set(CONTINUATION_FAILPOINTS) - set(_CHECKPOINT_POINTS))
    unknown = set(hooks) - set(_STORE_HOOKS)
    if unknown:
        raise ValueError(f"store failpoints without a description here: {sorted(unknown)}")
    for name in hooks:
        capability, description, ops = _STORE_HOOKS[name]
        kind = "reconcile" if capability == "runtime.reconcile" else "store"  # spec-phase3 §6
        entries.append({"id": name, "kind": kind, "capability": capability, "description": description, "reachableBy": list(ops)})
    for name, description in CONTINUATION_FAILPOINTS.items():
        entries.append({"id": name, "kind": "continuation", "capability": "runtime.continuation",
                        "description": f"after commit: {description} (spec 20 §4.9)", "reachableBy": ["runtime.resume"]})
    for name, (description, ops) in _CHECKPOINT_POINTS.items():
        entries.append({"id": name, "kind": "checkpoint", "capability": "workspace.checkpoint",
                        "description": description, "reachableBy": list(ops)})
    return {
        "description": "Every failpoint id of protocol v1 (docs/protocol.md §4.4). kind: live = P0–P11 of spec 20 §2; store = a hook inside a store write transaction (spec 30 §6); reconcile = a point of the Phase 3 reconciler (spec-phase3 §5.6, §6); continuation = an after-commit point of Phase 1 continuation (spec 20 §4.9); checkpoint = a workspace checkpoint point of spec-phase4 §8. capability: what an implementation must claim to arm it. reachableBy: the protocol operations that can reach it. Generated by python -m conformance.protocol._failpoints_gen.",
        "failpoints": entries,
    }


def render() -> str:
    return json.dumps(build_failpoints(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
    sys.exit(0)
