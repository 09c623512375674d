"""``checkpoint.*`` through the adapter's dispatcher (docs/protocol.md §4.6, spec-phase4 §10).

What the conformance clauses do not cover: bad input gets a stable code and never a
traceback, every answer validates against ``ops.checkpoint.schema.json``, and an adapter that
does not claim ``workspace.checkpoint`` answers ``not_claimed``.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol import validate_response
from maka_ref.adapter._dispatch import CAPABILITIES, Dispatcher

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")

ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x.invalid",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x.invalid", "PATH": "/usr/bin:/bin"}


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, env=ENV)


def _call(dispatcher: Dispatcher, op: str, params: dict[str, Any]) -> dict[str, Any]:
    response = dispatcher.handle(op, params)
    errors = validate_response(op, {"id": 1, **response})
    assert errors == [], errors
    return response


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("a\n", encoding="utf-8")
    _git(ws, "add", "a.txt")
    _git(ws, "commit", "-q", "-m", "one")
    return ws


def test_capture_verify_list_restore_collect_round_trip(repo: Path, tmp_path: Path) -> None:
    d = Dispatcher()
    identity = f"workspace:v1:{uuid.uuid4()}"
    assert _call(d, "checkpoint.eligibility", {"workspace": str(repo)})["result"] == {"eligible": True}
    captured = _call(d, "checkpoint.capture", {"workspace": str(repo), "workspaceIdentity": identity})["result"]
    ref, policy = captured["checkpointRef"], captured["policyHash"]
    three = {"workspace": str(repo), "checkpointRef": ref, "policyHash": policy}
    assert _call(d, "checkpoint.verify", three)["result"]["treeOid"] == captured["treeOid"]
    assert _call(d, "checkpoint.compare", three)["result"]["clean"] is True
    listed = _call(d, "checkpoint.list", {"workspace": str(repo)})["result"]["checkpoints"]
    assert [item["checkpointRef"] for item in listed] == [ref]
    restored = _call(d, "checkpoint.restore", {**three, "destination": str(tmp_path / "out")})["result"]
    assert (tmp_path / "out" / "a.txt").read_text(encoding="utf-8") == "a\n" and restored["fileCount"] == 1
    collected = _call(d, "checkpoint.collect", {"workspace": str(repo), "workspaceIdentity": identity, "liveRefs": [],
                                                "graceSeconds": 0, "nowMs": listed[0]["createdAtMs"] + 1})["result"]
    assert collected == {"collected": [ref], "kept": []}


@pytest.mark.parametrize(("op", "params", "code"), [
    ("checkpoint.capture", {"workspaceIdentity": "ws_x"}, "invalid_workspace_identity"),
    ("checkpoint.verify", {"checkpointRef": "refs/heads/main", "policyHash": "x"}, "invalid_checkpoint_ref"),
    ("checkpoint.restore", {"checkpointRef": "refs/heads/main", "policyHash": "x", "destination": "relative"},
     "restore_target_invalid"),
    ("checkpoint.collect", {"workspaceIdentity": "ws_x", "liveRefs": "no", "graceSeconds": 0, "nowMs": 0}, "invalid_params"),
    ("checkpoint.resume", {"workspaceIntent": "restore-please"}, "invalid_params"),
    ("checkpoint.resume", {"workspaceIntent": {"isolatedRestore": ""}}, "invalid_params"),
    ("checkpoint.resume", {"workspaceIntent": {"isolatedRestore": "/tmp/x", "extra": 1}}, "invalid_params"),
    ("checkpoint.resume", {"workspaceIntent": {"isolatedRestore": "relative/dir"}}, "restore_target_invalid"),
    ("checkpoint.boundary_decode", {"text": "[]"}, "invalid_workspace_boundary"),
    ("checkpoint.boundary_encode", {}, "invalid_params"),
    ("checkpoint.policy_hash", {"policy": {"protocol": "maka_checkpoint_policy_v1"}}, "invalid_checkpoint_policy"),
])
def test_bad_input_gets_a_stable_code(repo: Path, op: str, params: dict[str, Any], code: str) -> None:
    response = _call(Dispatcher(), op, {"workspace": str(repo), **params})
    assert response["ok"] is False and response["error"]["code"] == code, response


def test_not_a_repository_is_a_code(tmp_path: Path) -> None:
    response = _call(Dispatcher(), "checkpoint.eligibility", {"workspace": str(tmp_path)})
    assert response["ok"] is True and response["result"]["eligible"] is False
    assert response["result"]["code"] == "not_a_git_repository"


def test_unclaimed_capability_answers_not_claimed(repo: Path) -> None:
    d = Dispatcher(tuple(c for c in CAPABILITIES if c != "workspace.checkpoint"))
    response = d.handle("checkpoint.capture", {"workspace": str(repo), "workspaceIdentity": f"workspace:v1:{uuid.uuid4()}"})
    assert response["ok"] is False and response["error"]["code"] == "not_claimed"
    assert "workspace.checkpoint" not in d.hello({"protocol": 1})["capabilities"]


def _policy(**limits: int) -> dict[str, Any]:
    from maka_ref._checkpoint.policy import DEFAULT_POLICY, policy_document

    return {**policy_document(DEFAULT_POLICY), **limits}


def test_the_policy_param_sets_the_limits(repo: Path) -> None:
    """§10.2 ``policy?``: the carrier holds the given document — eligibility and capture apply
    its limits, verify accepts its hash and checks the tree against it; without it, the
    default policy; a bad one is ``invalid_checkpoint_policy`` before anything is read."""
    d = Dispatcher()
    identity = f"workspace:v1:{uuid.uuid4()}"
    (repo / "b.txt").write_text("b\n", encoding="utf-8")
    small = _policy(maxFiles=1)
    refused = _call(d, "checkpoint.eligibility", {"workspace": str(repo), "policy": small})["result"]
    assert refused["eligible"] is False and refused["code"] == "too_many_files"
    response = _call(d, "checkpoint.capture", {"workspace": str(repo), "workspaceIdentity": identity, "policy": small})
    assert response["error"]["code"] == "too_many_files"
    two = _policy(maxFiles=2)
    captured = _call(d, "checkpoint.capture", {"workspace": str(repo), "workspaceIdentity": identity, "policy": two})
    ref, policy_hash = captured["result"]["checkpointRef"], captured["result"]["policyHash"]
    assert policy_hash == _call(d, "checkpoint.policy_hash", {"policy": two})["result"]["policyHash"]
    three = {"workspace": str(repo), "checkpointRef": ref, "policyHash": policy_hash}
    assert _call(d, "checkpoint.verify", {**three, "policy": two})["ok"] is True
    # the carrier's own (default) policy is not the one the artifact names
    assert _call(d, "checkpoint.verify", three)["error"]["code"] == "checkpoint_policy_mismatch"
    other = _call(d, "checkpoint.verify", {**three, "policyHash": _call(d, "checkpoint.policy_hash", {
        "policy": small})["result"]["policyHash"], "policy": small})
    assert other["error"]["code"] == "checkpoint_policy_mismatch"  # the trailer names `two`
    bad = _call(d, "checkpoint.eligibility", {"workspace": str(repo / "missing"), "policy": {"maxFiles": 1}})
    assert bad["error"]["code"] == "invalid_checkpoint_policy"


def test_checkpoint_points_are_armable_and_listed() -> None:
    from maka_ref._store.engine import failpoints
    from maka_ref._store.engine.failpoints import CHECKPOINT_FAILPOINTS
    from maka_ref.adapter._faults import ANNOUNCED_FAILPOINTS

    assert CHECKPOINT_FAILPOINTS <= set(ANNOUNCED_FAILPOINTS)
    try:
        assert _call(Dispatcher(), "faults.arm", {"failpoint": "after_restore_published"})["result"] == {
            "armed": "after_restore_published"}
    finally:
        failpoints.disarm()
