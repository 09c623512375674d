"""The wire-protocol schemas of ``conformance/protocol/`` (docs/protocol.md).

Checks that every schema file is valid draft 2020-12, that every operation has a params and a
result schema, that garbage is rejected with a readable JSON path, and that the generated /
copied files are in sync with ``maka_ref``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conformance import protocol
from conformance.protocol import (
    CAPABILITIES,
    OPERATIONS,
    load_schema,
    validate_announcement,
    validate_request,
    validate_response,
)
from conformance.protocol._failpoints_gen import render

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILES = sorted(p.name for p in resources.files("conformance.protocol").iterdir() if p.name.endswith(".schema.json"))


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_expected_files_exist() -> None:
    for name in ("envelope.request.schema.json", "envelope.response.schema.json", "announcement.schema.json",
                 "hello.params.schema.json", "hello.result.schema.json", "script.schema.json"):
        assert name in SCHEMA_FILES
    assert json.loads(resources.files("conformance.protocol").joinpath("failpoints.json").read_text())["failpoints"]


def test_capabilities_and_operations_agree() -> None:
    assert protocol.PROTOCOL_VERSION == 1
    assert set(OPERATIONS) == {op for ops in CAPABILITIES.values() for op in ops}
    assert all(OPERATIONS[op] == cap for cap, ops in CAPABILITIES.items() for op in ops)
    assert len(OPERATIONS) == 53


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_operation_has_params_and_result_schema(op: str) -> None:
    defs = load_schema(protocol.ops_schema_file(op))["$defs"]
    assert f"{op}.params" in defs and f"{op}.result" in defs
    # The references resolve (a dangling $ref would raise here).
    validate_response(op, {"id": 1, "ok": True, "result": {}})
    validate_request({"id": 1, "op": op, "params": {}})


def test_operations_match_the_protocol_page() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for op in OPERATIONS:
        assert f"`{op}`" in text, op


def test_script_schema_is_a_copy_of_the_runtime_schema() -> None:
    ours = (ROOT / "conformance" / "protocol" / "script.schema.json").read_bytes()
    assert ours == (ROOT / "maka_ref" / "_runtime" / "script.schema.json").read_bytes()


def test_failpoints_json_is_in_sync_with_maka_ref() -> None:
    committed = (ROOT / "conformance" / "protocol" / "failpoints.json").read_text(encoding="utf-8")
    assert committed == render(), "stale: run python -m conformance.protocol._failpoints_gen"


def test_failpoints_json_covers_every_known_id() -> None:
    from maka_ref import FAILPOINTS
    from maka_ref._runtime.livepoints import CONTINUATION_FAILPOINTS
    from maka_ref._store.engine.failpoints import FAILPOINT_NAMES

    entries = json.loads((ROOT / "conformance" / "protocol" / "failpoints.json").read_text())["failpoints"]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(FAILPOINT_NAMES) | set(CONTINUATION_FAILPOINTS) | {fp.id for fp in FAILPOINTS}
    for entry in entries:
        assert entry["capability"] in CAPABILITIES and entry["description"]
        assert set(entry["reachableBy"]) <= set(OPERATIONS)


# --------------------------------------------------------------------------- garbage


def test_valid_messages_pass() -> None:
    assert validate_request({"id": 0, "op": "hello", "params": {"protocol": 1}}) == []
    assert validate_response("ledger.lane", {"id": 3, "ok": True, "result": {"lane": "ordinary"}}) == []
    assert validate_response("ledger.lane", {"id": 3, "ok": False, "error": {"code": "invalid_params", "message": "x"}}) == []
    assert validate_response("faults.arm", {"id": None, "ok": False, "error": {"code": "invalid_params", "message": ""}}) == []
    assert validate_announcement({"failpoint": "P3"}) == []


@pytest.mark.parametrize(
    ("op", "message", "fragment"),
    [
        ("ledger.lane", {"id": 3, "ok": True, "result": {"lane": "sideways"}}, "$.result.lane"),
        ("ledger.resolve", {"id": 3, "ok": True, "result": {"decisions": [{"toolCallId": 1}], "issues": [],
                                                           "hasCorruption": False, "requiresReconciliation": False}},
         "$.result.decisions[0]"),
        ("ledger.args_hash", {"id": 3, "ok": True, "result": {"hash": "md5:00"}}, "$.result.hash"),
        ("store.append", {"id": 3, "ok": True, "result": {"created": "yes"}}, "$.result.created"),
        ("store.project", {"id": 3, "ok": True, "result": {"storage": "sqlite", "health": {"status": "healthy"},
                                                           "runs": [{"sessionId": "s"}], "unsettledOperations": []}},
         "$.result.runs[0]"),
        ("runtime.run_turn", {"id": 3, "ok": True, "result": {"sessionId": "s", "runId": "r", "status": "exploded",
                                                              "toolCalls": []}}, "$.result.status"),
        ("runtime.resume", {"id": 3, "ok": True, "result": {"parked": True}}, "$.result"),
        ("faults.arm", {"id": 3, "ok": True}, "$"),
        ("faults.arm", {"id": -1, "ok": True, "result": {"armed": "P3"}}, "$"),
        ("faults.arm", {"id": 3, "ok": False, "error": {"code": "Not Snake", "message": "m"}}, "$"),
        ("hello", {"id": 0, "ok": True, "result": {"protocol": 2, "implementation": {"name": "x", "version": "1"},
                                                  "capabilities": []}}, "$.result.protocol"),
    ],
)
def test_garbage_responses_are_rejected_with_a_path(op: str, message: dict, fragment: str) -> None:
    errors = validate_response(op, message)
    assert errors, message
    assert all(isinstance(e, str) for e in errors)
    assert any(e.startswith(fragment) for e in errors), errors


def test_garbage_requests_and_announcements() -> None:
    assert validate_request({"id": "1", "op": "hello", "params": {}})
    assert validate_request({"id": 1, "op": "ledger.frobnicate", "params": {}}) == ["$.op: unknown operation 'ledger.frobnicate'"]
    assert any(e.startswith("$.params") for e in validate_request({"id": 1, "op": "faults.arm", "params": {"hit": 0}}))
    assert validate_announcement({"failpoint": ""})
    assert validate_announcement({"failpoint": "P3", "extra": 1})
    assert validate_response("ledger.frobnicate", {"id": 1, "ok": True, "result": {}})
