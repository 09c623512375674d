"""A real SIGKILL at each spec-phase4 §8 point the wire reaches (``CHECKPOINT-CRASH-<point>``),
then what §8's table says must hold after reopen, checked by a process that never touched the
repository (§4.1, §4.2, §8, §12 item 37).

Each trial arms the point with ``faults.arm`` in a dedicated process, sends the operation that
reaches it (``checkpoint.capture``, ``checkpoint.run_turn``, ``checkpoint.restore``,
``checkpoint.collect``), waits for the announcement, SIGKILLs the process group and proves the
kill was real (exit by SIGKILL, no survivor). Then the worker's shared process reads the
repository and the store back. Common to every point (§8, "invariant over every point"): no
committed boundary fact names a ref that does not resolve, and the user's state (§3.9: index,
refs outside ``refs/maka/``, ``HEAD``, stash, config, worktree files, lock files) is what it was
before the request (for ``run_turn``, the runtime's own files in the worktree excepted).

The rebaseline's points are reached by ``checkpoint.resume`` with ``workspaceIntent:
"rebaseline"`` on a drifted workspace: ``after_rebaseline_captured`` is the carrier's
``after_checkpoint_ref_created`` there (hit 1: the resume captures nothing before it), and
``after_workspace_transition_committed`` follows the start + fact transaction (§7.1 step 4).

Protocol §4.6: an implementation that claims ``workspace.checkpoint`` and ``faults`` lists the
§8 points its operations reach in ``hello``; an unlisted point fails its clause, a listed one
that is never announced fails as *unreached*. The isolated-restore transition's
``after_workspace_transition_committed`` is not driven here (protocol v1's ``checkpoint.resume``
carries ``"rebaseline"`` only).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.checkpoint._support import (
    RUN_TIMEOUT,
    checkpoint_ref,
    expect_error,
)
from conformance.suite.test_checkpoint import (
    CAP,
    FIRST_ONLY,
    _write,
    capture,
    expect_untouched,
    git,
    identity,
    maka_refs,
    new_repo,
    user_state,
)
from conformance.suite.test_runtime_crash import (
    call_on,
    failure,
    release,
    workspace_dir,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the checkpoint clauses need the git program")


def crash_at(maka: Any, point: str, op: str, params: Mapping[str, Any], *, hit: int = 1) -> None:
    """Arm ``point`` in a dedicated process, send ``op`` until the announcement, SIGKILL it and
    prove the kill was real."""
    from crashlab import ProtocolFailure

    offered = tuple(maka.handshake.failpoints)
    if point not in offered:
        raise ClauseMismatch(f"failpoint {point} is not listed in the handshake; protocol §4.6 makes the spec-phase4 "
                             "§8 points part of the crash contract of an implementation claiming workspace.checkpoint "
                             "and faults", evidence={"failpoints": list(offered)})
    with maka.fresh() as client:
        try:
            expect_ok(client.call("faults.arm", {"failpoint": point, "hit": hit}), "faults.arm")
            outcome = client.call_until_failpoint(op, dict(params), failpoint=point, timeout=RUN_TIMEOUT)
        except ProtocolFailure as exc:
            raise failure(exc, f"{op} armed at {point}") from None
        if not isinstance(outcome, str):
            raise ClauseMismatch(f"unreached: failpoint {point} is listed in the handshake but {op} answered without "
                                 "announcing it", evidence={"reply": {"ok": outcome.ok, "result": outcome.result,
                                                                      "error": outcome.error}})
        proof = client.kill()
    if not proof.killed_by_sigkill or proof.survivors:
        raise ClauseMismatch(f"the kill at {point} was not a real SIGKILL of the whole tree",
                             evidence={"returncode": proof.returncode, "survivors": list(proof.survivors)})


def boundary_facts(maka: Any, ws: str) -> list[dict[str, Any]]:
    """Every committed boundary of the workspace's store (§1.3: ``actions.workspaceBoundary``),
    read by the shared process."""
    try:
        projection = expect_ok(call_on(maka, "store.project", {"workspace": ws}), "store.project")
    finally:
        release(maka, ws)
    found: list[dict[str, Any]] = []
    for run in projection.get("runs", []):
        for event in run.get("events") or []:
            fact = (event.get("actions") or {}).get("workspaceBoundary")
            if fact is not None:
                found.append(dict(fact["payload"]["boundary"]))
    return found


def expect_no_fact_names_a_missing_artifact(maka: Any, ws: str, facts: list[dict[str, Any]]) -> None:
    """§4.2, §8 invariant: each committed boundary's ref verifies under its policy."""
    for boundary in facts:
        params = {"workspace": ws, "checkpointRef": boundary["checkpointRef"],
                  "policyHash": boundary["checkpointPolicyHash"]}
        reply = call_on(maka, "checkpoint.verify", params, timeout=RUN_TIMEOUT)
        if not reply.ok:
            raise ClauseMismatch(f"a committed boundary names an artifact that does not verify: {reply.error}",
                                 evidence={"boundary": boundary, "error": reply.error})


def _point(point: str, spec: str, title: str, needs: tuple[str, ...] = ("faults",)) -> Any:
    return clause(f"CHECKPOINT-CRASH-{point.replace('_', '-')}", spec=f"spec-phase4 {spec}", capability=CAP, needs=needs, title=title)


def _run_repo(tmp_path: Path) -> str:
    ws = workspace_dir(tmp_path)
    git(ws, "init", "-q", "-b", "main")
    _write(Path(ws) / "README.md", "hello\n")
    git(ws, "add", "README.md")
    git(ws, "commit", "-q", "-m", "initial")
    return ws


def _user_state_but_runtime_files(ws: str) -> dict[str, Any]:
    """§3.9 around a run: everything, and of the worktree only the harness's own file."""
    state = user_state(ws)
    state["worktree"] = {path: value for path, value in state["worktree"].items() if path == "README.md"}
    return state


@_point("after_checkpoint_objects_written", "§3.4 step 8, §8, §3.9",
        "SIGKILL after capture wrote its objects: no ref, the user's state byte-identical, and a new capture "
        "succeeds (no lock left)")
def test_kill_after_objects_written(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    ident = identity()
    before = user_state(ws)
    crash_at(maka, "after_checkpoint_objects_written", "checkpoint.capture", {"workspace": ws, "workspaceIdentity": ident})
    expect_equal([], maka_refs(ws), what="refs under refs/maka/ after the kill (§8: no new ref)")
    expect_untouched(before, ws, "a capture killed after its objects")
    result = capture(maka, ws, ident)
    expect_ok(call_on(maka, "checkpoint.verify", {"workspace": ws, "checkpointRef": result["checkpointRef"],
                                                  "policyHash": result["policyHash"]}, timeout=RUN_TIMEOUT),
              "checkpoint.verify")


@_point("after_checkpoint_ref_created", "§4.1, §8, §3.8", "SIGKILL between the ref and its fact: the ref is an orphan "
        "no fact names, collect deletes it after the grace period, the user's state is kept",
        needs=("faults", "store", "runtime.loop"))
def test_kill_between_ref_and_fact(maka: Any, tmp_path: Path) -> None:
    ws = _run_repo(tmp_path)
    before = _user_state_but_runtime_files(ws)
    crash_at(maka, "after_checkpoint_ref_created", "checkpoint.run_turn", {"workspace": ws, "script": FIRST_ONLY})
    refs = maka_refs(ws)
    facts = boundary_facts(maka, ws)
    if len(refs) != 1 or facts:
        raise ClauseMismatch("after a kill between the ref and the fact: expected one ref and no boundary fact (§8)",
                             evidence={"refs": refs, "facts": facts})
    after = _user_state_but_runtime_files(ws)
    expect_equal(before, after, what="the user's state after the kill (§3.9)")
    (orphan,) = refs
    ident = "workspace:v1:" + orphan.split("/")[3]
    listed = expect_ok(call_on(maka, "checkpoint.list", {"workspace": ws, "workspaceIdentity": ident}), "checkpoint.list")
    created = int(listed["checkpoints"][0]["createdAtMs"])
    params = {"workspace": ws, "workspaceIdentity": ident, "liveRefs": [], "graceSeconds": 600}
    young = expect_ok(call_on(maka, "checkpoint.collect", {**params, "nowMs": created}), "checkpoint.collect")
    expect_equal([], list(young["collected"]), what="collected within the grace period (§3.8)")
    old = expect_ok(call_on(maka, "checkpoint.collect", {**params, "nowMs": created + 601_000}), "checkpoint.collect")
    expect_equal([orphan], list(old["collected"]), what="collected after the grace period (§4.1)")
    expect_equal([], maka_refs(ws), what="refs under refs/maka/ after collect")


@_point("after_workspace_boundary_committed", "§4.1, §4.2, §8", "SIGKILL after the boundary fact: its ref is live "
        "(collect keeps it), verifies, and compare finds the untouched workspace clean",
        needs=("faults", "store", "runtime.loop"))
def test_kill_after_boundary_committed(maka: Any, tmp_path: Path) -> None:
    ws = _run_repo(tmp_path)
    before = _user_state_but_runtime_files(ws)
    crash_at(maka, "after_workspace_boundary_committed", "checkpoint.run_turn", {"workspace": ws, "script": FIRST_ONLY})
    facts = boundary_facts(maka, ws)
    refs = maka_refs(ws)
    expect_equal(refs, sorted(b["checkpointRef"] for b in facts), what="the refs named by boundary facts (one, live)")
    if len(facts) != 1:
        raise ClauseMismatch("expected exactly one committed boundary after the kill", evidence={"facts": facts})
    expect_equal(before, _user_state_but_runtime_files(ws), what="the user's state after the kill (§3.9)")
    (boundary,) = facts
    expect_no_fact_names_a_missing_artifact(maka, ws, facts)
    params = {"workspace": ws, "checkpointRef": boundary["checkpointRef"], "policyHash": boundary["checkpointPolicyHash"]}
    drift = expect_ok(call_on(maka, "checkpoint.compare", params, timeout=RUN_TIMEOUT), "checkpoint.compare")
    expect_equal(True, drift.get("clean"), what="compare of the untouched workspace against the boundary (§8: (h) passes)")
    kept = expect_ok(call_on(maka, "checkpoint.collect", {
        "workspace": ws, "workspaceIdentity": boundary["workspaceIdentity"], "liveRefs": refs, "graceSeconds": 0,
        "nowMs": 9_999_999_999_999}), "checkpoint.collect")
    expect_equal([], list(kept["collected"]), what="collect with the fact's ref live")
    expect_equal(refs, maka_refs(ws), what="refs after collect (no fact names a missing artifact)")


def _restore_setup(maka: Any, tmp_path: Path) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    ws = new_repo(tmp_path)
    result = capture(maka, ws, identity())
    params = {"workspace": ws, "checkpointRef": result["checkpointRef"], "policyHash": result["policyHash"]}
    destination = os.path.join(os.path.realpath(tmp_path), "restored")
    return ws, params, destination, dict(result)


def _tree_files(ws: str, ref: str) -> list[str]:
    return sorted(git(ws, "ls-tree", "-r", "--name-only", "-z", ref).split("\0")[:-1])


def _restored_files(destination: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(destination):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            found.append(os.path.relpath(os.path.join(folder, name), destination))
    return sorted(found)


@_point("after_restore_materialized", "§3.6 steps 3–5, §8", "SIGKILL after restore materialized its staging "
        "directory: no destination, the user's directory identical, and a retry to the same destination succeeds")
def test_kill_after_restore_materialized(maka: Any, tmp_path: Path) -> None:
    ws, params, destination, result = _restore_setup(maka, tmp_path)
    before = user_state(ws)
    crash_at(maka, "after_restore_materialized", "checkpoint.restore", {**params, "destination": destination})
    expect_equal(False, os.path.lexists(destination), what="the destination exists after the kill (§8: it must not)")
    expect_untouched(before, ws, "a restore killed before it published")
    retried = expect_ok(call_on(maka, "checkpoint.restore", {**params, "destination": destination},
                                timeout=RUN_TIMEOUT), "checkpoint.restore (retry)")
    expect_equal(result["treeOid"], retried["treeOid"], what="the retried restore's tree")
    expect_equal(_tree_files(ws, params["checkpointRef"]), _restored_files(destination), what="the restored files")


@_point("after_restore_published", "§3.6 step 5, §8", "SIGKILL after restore published the destination: it holds "
        "the checkpoint's files, the user's directory is identical, and a retry is restore_target_exists")
def test_kill_after_restore_published(maka: Any, tmp_path: Path) -> None:
    ws, params, destination, _ = _restore_setup(maka, tmp_path)
    before = user_state(ws)
    crash_at(maka, "after_restore_published", "checkpoint.restore", {**params, "destination": destination})
    expect_equal(_tree_files(ws, params["checkpointRef"]), _restored_files(destination),
                 what="the published destination's files (§8: complete)")
    expect_equal("hello, unstaged\n", (Path(destination) / "README.md").read_text(encoding="utf-8"),
                 what="README.md in the published destination")
    expect_untouched(before, ws, "a restore killed after it published")
    expect_error(call_on(maka, "checkpoint.restore", {**params, "destination": destination}, timeout=RUN_TIMEOUT),
                 "restore_target_exists", "a retry into the published destination (§8)")


@_point("after_checkpoint_ref_deleted", "§3.8, §8", "SIGKILL inside collect after one deletion: only an old orphan "
        "is gone, the live ref still verifies, and collect again deletes the remaining orphan")
def test_kill_inside_collect(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    ident = identity()
    live = capture(maka, ws, ident)
    commit = git(ws, "rev-parse", str(live["checkpointRef"])).strip()
    now = 2_000_000_000_000
    orphans = sorted(checkpoint_ref(ident, now - 700_000 - n) for n in range(2))
    for ref in orphans:
        git(ws, "update-ref", ref, commit)
    before = user_state(ws)
    params = {"workspace": ws, "workspaceIdentity": ident, "liveRefs": [live["checkpointRef"]], "graceSeconds": 600,
              "nowMs": now}
    crash_at(maka, "after_checkpoint_ref_deleted", "checkpoint.collect", params)
    left = maka_refs(ws)
    if live["checkpointRef"] not in left or len(set(orphans) & set(left)) != 1:
        raise ClauseMismatch("after a kill after one deletion: expected the live ref and exactly one orphan (§8)",
                             evidence={"refs": left, "orphans": orphans, "live": live["checkpointRef"]})
    expect_untouched(before, ws, "a collect killed after one deletion")
    expect_ok(call_on(maka, "checkpoint.verify", {"workspace": ws, "checkpointRef": live["checkpointRef"],
                                                  "policyHash": live["policyHash"]}, timeout=RUN_TIMEOUT),
              "checkpoint.verify of the live ref")
    again = expect_ok(call_on(maka, "checkpoint.collect", params, timeout=RUN_TIMEOUT), "checkpoint.collect (again)")
    expect_equal(sorted(set(orphans) & set(left)), sorted(again["collected"]), what="the second collect")
    expect_equal([live["checkpointRef"]], maka_refs(ws), what="refs after the second collect")


def _drifted_session(maka: Any, tmp_path: Path) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """A checkpoint-mode turn that stops after its Write (one boundary before it, one after),
    then the user edits README.md: the source of a rebaseline."""
    ws = _run_repo(tmp_path)
    try:
        summary = expect_ok(call_on(maka, "checkpoint.run_turn", {"workspace": ws, "script": FIRST_ONLY},
                                    timeout=RUN_TIMEOUT), "checkpoint.run_turn")
    finally:
        release(maka, ws)
    if not (summary.get("workspaceCheckpoints") or {}).get("boundaries"):
        raise ClauseMismatch("checkpoint.run_turn committed no boundary on an eligible repository (spec-phase4 §5.1)",
                             evidence={"summary": dict(summary)})
    _write(Path(ws) / "README.md", "edited by the user\n")
    return ws, boundary_facts(maka, ws), _user_state_but_runtime_files(ws)


def _resume(maka: Any, ws: str) -> Mapping[str, Any]:
    try:
        return expect_ok(call_on(maka, "checkpoint.resume", {"workspace": ws, "workspaceIntent": "none"},
                                 timeout=RUN_TIMEOUT), "checkpoint.resume")
    finally:
        release(maka, ws)


@_point("after_rebaseline_captured", "§7.1 step 2, §8, §4.1", "SIGKILL after the rebaseline captured its new ref: "
        "no transition fact, the epoch unchanged, the new ref an orphan that collect deletes; the user's state kept",
        needs=("faults", "store", "runtime.loop", "runtime.continuation"))
def test_kill_after_rebaseline_captured(maka: Any, tmp_path: Path) -> None:
    ws, facts, before = _drifted_session(maka, tmp_path)
    refs = maka_refs(ws)
    crash_at(maka, "after_checkpoint_ref_created", "checkpoint.resume", {"workspace": ws, "workspaceIntent": "rebaseline"})
    after = boundary_facts(maka, ws)
    expect_equal(facts, after, what="the boundary facts after the kill (§8: no transition fact)")
    expect_equal(1, max(int(b["workspaceEpoch"]) for b in after), what="the epoch after the kill (§8: unchanged)")
    new = sorted(set(maka_refs(ws)) - set(refs))
    if len(new) != 1:
        raise ClauseMismatch("expected exactly one new ref after a kill after the rebaseline's capture",
                             evidence={"before": refs, "after": maka_refs(ws)})
    expect_no_fact_names_a_missing_artifact(maka, ws, after)
    expect_equal(before, _user_state_but_runtime_files(ws), what="the user's state after the kill (§3.9)")
    ident = str(after[0]["workspaceIdentity"])
    collected = expect_ok(call_on(maka, "checkpoint.collect", {
        "workspace": ws, "workspaceIdentity": ident, "liveRefs": [b["checkpointRef"] for b in after],
        "graceSeconds": 0, "nowMs": 9_999_999_999_999}, timeout=RUN_TIMEOUT), "checkpoint.collect")
    expect_equal(new, sorted(collected["collected"]), what="collect after the kill (§8: the orphan only)")


@_point("after_workspace_transition_committed", "§7.1 step 4, §8; 20 §4.5", "SIGKILL after the rebaseline's start + "
        "fact transaction: the epoch-2 boundary is committed and its ref verifies, and resume parks "
        "continuation_started_indeterminate", needs=("faults", "store", "runtime.loop", "runtime.continuation"))
def test_kill_after_transition_committed(maka: Any, tmp_path: Path) -> None:
    ws, facts, before = _drifted_session(maka, tmp_path)
    crash_at(maka, "after_workspace_transition_committed", "checkpoint.resume",
             {"workspace": ws, "workspaceIntent": "rebaseline"})
    after = boundary_facts(maka, ws)
    # a set comparison: store.project lists runs in no order the protocol fixes (§4.2.1), so the
    # new boundary (carried by the continuation's run) need not come last
    old_keys = sorted(json.dumps(b, sort_keys=True) for b in facts)
    added = [b for b in after if json.dumps(b, sort_keys=True) not in old_keys]
    kept = sorted(json.dumps(b, sort_keys=True) for b in after if b not in added)
    if len(after) != len(facts) + 1 or len(added) != 1 or int(added[0]["workspaceEpoch"]) != 2 or kept != old_keys:
        raise ClauseMismatch("expected the earlier boundaries and one new boundary of epoch 2 after the kill (§7.1 "
                             "step 4: the start and the fact commit together)", evidence={"before": facts, "after": after})
    expect_no_fact_names_a_missing_artifact(maka, ws, after)
    expect_equal(before, _user_state_but_runtime_files(ws), what="the user's state after the kill (§3.9)")
    outcome = _resume(maka, ws)
    if outcome.get("parked") is not True or list(outcome.get("rejectionReasons") or []) != [
            "continuation_started_indeterminate"]:
        raise ClauseMismatch("resume after a kill after the transition: expected a park with "
                             "continuation_started_indeterminate (spec 20 §4.5, spec-phase4 §8)",
                             evidence={"outcome": dict(outcome)})
