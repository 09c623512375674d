"""Phase 3 reconciler mutants (spec-phase3 §4.2, §4.4, §5.1–§5.4): each breaks one promise of
the finalize-only reconciler and is killed by a ``RECONCILE-*`` clause
(``conformance/suite/test_reconcile.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap
from maka_ref.adapter._mutants._registry import mutant

_RECONCILER = "maka_ref._repair.reconcile"


@mutant("runtime-reconcile-rewrites-file", layer="runtime", spec="spec-phase3 §5.1; §5.4", family="RECONCILE-ROW-001",
        keyword="RECONCILE-ROW-001")
def apply_rewrites_file() -> None:
    """After a completed reconcile the reconciler "finalizes" by writing the target again (its
    own bytes, through a temporary file and a rename) instead of only committing facts.

    spec-phase3 §5.1: the reconciler never writes, renames, deletes or re-modes a file — a
    rewrite races any writer that came after the crash (rename is no compare-and-swap, §5.4).
    Killed by RECONCILE-ROW-001 (the target's inode and mtime must not change)."""

    def factory(original: Any) -> Any:
        def reconcile_operation(store: Any, root: Any, operation_id: str, *, clock: Any) -> Any:
            result = original(store, root, operation_id, clock=clock)
            if result.outcome == "completed":
                evidence = store.read_tool_evidence(operation_id)
                target = Path(root) / evidence.target_path
                data = target.read_bytes()
                temporary = target.with_name(target.name + ".maka-rewrite")
                temporary.write_bytes(data)
                os.replace(temporary, target)  # the mutation: finalize by rewriting
            return result
        return reconcile_operation

    wrap(_RECONCILER, "reconcile_operation", factory)


@mutant("runtime-reconcile-prior-state-completes", layer="runtime", spec="spec-phase3 §4.4; §5.4", family="RECONCILE-ROW-002",
        keyword="RECONCILE-ROW-002")
def apply_prior_state_completes() -> None:
    """A file still in its ``before`` state is classified as if the effect had happened: the
    operation is finalized ``completed`` with the evidence's result.

    spec-phase3 §4.4 row 3: ``matches_prior_state`` parks ``reconcile_matches_prior_state``; a
    completed decision would tell the model a Write happened that never did. Killed by
    RECONCILE-ROW-002."""
    from maka_ref._reconcile import Classification

    def factory(original: Any) -> Any:
        def classify(evidence: Any, observed: Any) -> Any:
            verdict = original(evidence, observed)
            if verdict.observation == "matches_prior_state":  # the mutation
                return Classification("matches_expected_state", "completed", "reconcile_matches_expected_state", False)
            return verdict
        return classify

    wrap(_RECONCILER, "classify", factory)


@mutant("runtime-reconcile-observer-follows-links", layer="runtime", spec="spec-phase3 §4.2; §4.3",
        family="RECONCILE-ROW-004", keyword="RECONCILE-ROW-004")
def apply_observer_follows_links() -> None:
    """The observer opens directories and the target without ``O_NOFOLLOW``: it skips the
    confinement check and observes whatever a symlink on the way points at, even outside the
    workspace.

    spec-phase3 §4.2/§4.3: a link on the way is ``unreadable`` (``ancestor_not_directory``),
    never followed. Killed by RECONCILE-ROW-004 (a directory swapped for a link to an outside
    copy holding the expected-after bytes would be wrongly completed)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    observer = "maka_ref._reconcile.observer"
    import importlib

    module = importlib.import_module(observer)
    replace(observer, "_DIR_FLAGS", module._DIR_FLAGS & ~nofollow)
    replace(observer, "_FILE_FLAGS", module._FILE_FLAGS & ~nofollow)


@mutant("runtime-reconcile-bundle-without-evidence", layer="runtime", spec="spec-phase3 §1.1; §5.1 step 2; §5.3",
        family="RECONCILE-EVIDENCE-001", keyword="RECONCILE-EVIDENCE-001")
def apply_bundle_without_evidence() -> None:
    """An unsettled operation without evidence is finalized anyway: the reconciler commits a
    completed bundle with a made-up result instead of leaving it to park.

    spec-phase3 §5.1 step 2 and §5.3: without evidence nothing can be observed against, so
    nothing is committed (``reconcile_no_evidence``). Killed by RECONCILE-EVIDENCE-001."""
    import importlib

    reconciler = importlib.import_module(_RECONCILER)

    def factory(original: Any) -> Any:
        def reconcile_operation(store: Any, root: Any, operation_id: str, *, clock: Any) -> Any:
            result = original(store, root, operation_id, clock=clock)
            events = store.read_tool_t1_events(operation_id)
            if result.code != "reconcile_no_evidence" or events is None:
                return result
            call, dispatch = events
            content = call.get("content") or {}
            invented = SimpleNamespace(  # the mutation: a bundle with no evidence behind it
                operation_id=operation_id, provider_tool_call_id=content.get("id"), tool_name=content.get("name"),
                call_event_id=call["id"], dispatch_event_id=dispatch["id"],
                to_json=lambda: {"result": {"path": (content.get("args") or {}).get("path"), "replacements": 1}},
            )
            reconcile, decision, outcome = reconciler._bundle(
                invented, call, "matches_expected_state", "sha256:" + "0" * 64,
                ("completed", "reconcile_matches_expected_state"), max(clock(), int(dispatch["ts"])),
            )
            store.commit_tool_recovery_bundle(operation_id, reconcile, decision, outcome)
            return reconciler.ReconcileResult(operation_id, "completed", "matches_expected_state",
                                              "reconcile_matches_expected_state")
        return reconcile_operation

    wrap(_RECONCILER, "reconcile_operation", factory)


@mutant("runtime-reconcile-loser-claims-completed", layer="runtime", spec="spec-phase3 §5.7; protocol §4.3.1",
        family="CRASH-reconcile-*-live-race", keyword="CRASH-reconcile-after-decision-live-race")
def apply_loser_claims_completed() -> None:
    """A reconciler that loses a race — its bundle refused because another reconciler settled
    the operation meanwhile — reports the operation ``completed`` as if its own bundle had been
    committed.

    spec-phase3 §5.7: the second reconciler answers ``reconcile_already_settled``; protocol
    §4.3.1: ``completed`` means this call committed the one bundle, so two racers both saying so
    is a lie about one bundle. Only a real race reaches that path (a sequential rerun stops
    before the store). Killed by CRASH-reconcile-after-decision-live-race (and the race trials
    at the other two reconciler points, ``crashlab/_lab/faults/reconciler.py``)."""
    import importlib

    reconciler = importlib.import_module(_RECONCILER)

    def factory(original: Any) -> Any:
        def reconcile_operation(store: Any, root: Any, operation_id: str, *, clock: Any) -> Any:
            result = original(store, root, operation_id, clock=clock)
            if result.code == "reconcile_already_settled" and result.observed is not None:  # refused by the store
                return reconciler.ReconcileResult(operation_id, "completed", "matches_expected_state",  # the mutation
                                                  "reconcile_matches_expected_state", observed=result.observed)
            return result
        return reconcile_operation

    wrap(_RECONCILER, "reconcile_operation", factory)


@mutant("crash-reconcile-bundle-not-atomic", layer="crash", spec="spec-phase3 §5.6; 30 §2.5",
        family="CRASH-reconcile-inside-bundle-live-kill", keyword="CRASH-reconcile-inside-bundle-live-kill")
def apply_bundle_not_atomic() -> None:
    """The reconciler's bundle is committed in two transactions: the reconcile fact (and its
    journal row) first, the outcome and the decision after.

    spec-phase3 §5.6 and spec 30 §2.5: a kill inside the bundle rolls it back whole — events
    ``[call, dispatch]``, state ``prepared``. Here a kill at ``reconcile_inside_bundle`` leaves a
    reconcile fact without a decision, which a rerun cannot complete. Nothing but a real kill
    inside the transaction shows it. Killed by CRASH-reconcile-inside-bundle-live-kill (and
    CRASH-reconcile-after-decision-live-kill, whose second kill lands there)."""
    from maka_ref._store.engine.failpoints import reconciling

    def factory(original: Any) -> Any:
        def _compare_and_set(conn: Any, operation_id: str, sql: str, params: tuple[Any, ...]) -> None:
            original(conn, operation_id, sql, params)
            if reconciling():  # the mutation: the reconcile fact becomes durable on its own
                conn.execute("COMMIT")
                conn.execute("BEGIN IMMEDIATE")
        return _compare_and_set

    wrap("maka_ref._store.writers.bundle", "_compare_and_set", factory)


@mutant("runtime-reconcile-observer-follows-final-link", layer="runtime", spec="spec-phase3 §4.2 step 3; §4.4; §8 item 6",
        family="RECONCILE-STATES", keyword="RECONCILE-STATES")
def apply_observer_follows_final_link() -> None:
    """The observer follows a symlink found at the target itself (as the tools would) and
    observes the file it names: a target replaced by a link to a copy of the expected-after
    bytes is classified ``matches_expected_state`` and completed.

    spec-phase3 §4.2 step 3 and §8 item 6: the final component is ``lstat``-ed and never
    followed; a link at the target is ``{"type": "symlink"}``, row 4 ``diverged``. The
    directories on the way stay confined, so RECONCILE-ROW-004 (a link *on the way*) does not
    see it. Killed by RECONCILE-STATES-001..003 (kinds ``symlink-inside``, ``symlink-outside``)."""
    import hashlib
    import stat

    from maka_ref._reconcile.observation import ObservedState

    def factory(original: Any) -> Any:
        def observe(root: Any, target_path: str, *, durable: bool = False) -> Any:
            observed = original(root, target_path, durable=durable)
            if observed.type != "symlink":
                return observed
            path = Path(root) / target_path
            try:  # the mutation: follow the link to whatever it names
                info = os.stat(path)
                if not stat.S_ISREG(info.st_mode):
                    return observed
                digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                return observed
            return ObservedState.regular(info.st_size, info.st_nlink, stat.S_IMODE(info.st_mode), digest)
        return observe

    wrap("maka_ref._reconcile.observer", "observe", factory)


@mutant("store-t1-evidence-unbound", layer="store", spec="spec-phase3 §2.3; §3.3", family="RECONCILE-T1-001",
        keyword="RECONCILE-T1-001")
def apply_t1_evidence_unbound() -> None:
    """T1 decodes the evidence (§2.2) but never binds it to the call and dispatch it commits
    (§2.3): a record naming another operation, another call event, a size the content
    contradicts or another result is stored with the operation.

    spec-phase3 §3.3 step 9: any binding code refuses T1 and nothing is written — a record that
    does not describe its own call could later let a reconciler "complete" an operation from
    a state the call never promised. Killed by RECONCILE-T1-001 (the binding refusals)."""
    from maka_ref._store.evidence import (
        EVIDENCE_DIGEST_DOMAIN, FileEvidence, Invalid, PreparedEvidence, decode_evidence, domain_digest, stable_json,
    )

    def factory(original: Any) -> Any:
        def prepare_evidence(evidence: Any, call_event: Any, dispatch_event: Any) -> Any:
            decoded = decode_evidence(evidence.to_json() if isinstance(evidence, FileEvidence) else evidence)
            if isinstance(decoded, Invalid):
                return original(evidence, call_event, dispatch_event)  # the decode refusals stay
            text = stable_json(decoded.to_json())  # the mutation: no check_binding
            return PreparedEvidence(decoded, text, domain_digest(EVIDENCE_DIGEST_DOMAIN, text))
        return prepare_evidence

    wrap("maka_ref._store.evidence", "prepare_evidence", factory)
