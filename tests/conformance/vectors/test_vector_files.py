"""The golden vector files themselves: format, provenance, freshness and the checker.

* every file validates against ``vector.schema.json`` and ids are unique (loader);
* every vector cites the spec; the coverage promised in the README holds
  (spec 10 §7 scenarios 1–96, §2.6 table, §2.2 goldens; spec 20 §2 P0–P11, §8 items 1–8, 26–31);
* the generator's ``--check`` passes and the README's count table is current;
* the generator imports nothing from ``maka_ref`` but the fixture families;
* :func:`conformance.vectors.check_vector` really reports mismatches (so a green run means
  something), and the number semantics of :func:`parse_json_text` / :func:`json_equal`.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import pytest

from conformance.vectors import (
    Vector,
    VectorFormatError,
    check_vector,
    iter_vectors,
    json_equal,
    load_schema,
    load_vector_files,
    parse_json_text,
)

ROOT = Path(__file__).resolve().parents[3]
VECTORS_DIR = ROOT / "conformance" / "vectors"
README = VECTORS_DIR / "README.md"
GENERATOR_DIR = ROOT / "conformance" / "_vectorgen"
VECTOR_FILES = sorted(p for p in VECTORS_DIR.glob("*.json") if p.name != "vector.schema.json")
ALL = list(iter_vectors())


# ---------------------------------------------------------------------------------------
# Format and provenance
# ---------------------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema())


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_file_validates_against_schema(path: Path) -> None:
    doc = parse_json_text(path.read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(load_schema()).iter_errors(doc))
    assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]]
    assert doc["group"] + ".json" == path.name
    assert all(v["id"].startswith(doc["group"] + "/") for v in doc["vectors"])


def test_files_are_written_as_the_generator_writes_them() -> None:
    for path in VECTOR_FILES:
        text = path.read_text(encoding="utf-8")
        assert text.endswith("}\n") and "\r" not in text, path.name
        assert text.startswith('{\n  "$schema": "./vector.schema.json",\n'), path.name


def test_loader_finds_every_file_and_ids_are_unique() -> None:
    files = load_vector_files()
    assert [f.name for f in files] == [p.name for p in VECTOR_FILES]
    ids = [v.id for v in ALL]
    assert len(ids) == len(set(ids))
    assert len(ALL) >= 200


def test_iter_vectors_filters_by_group() -> None:
    resolver = list(iter_vectors("resolver"))
    assert resolver and all(v.group == "resolver" for v in resolver)
    assert list(iter_vectors("no-such-group")) == []


SPEC_REF = re.compile(r"^(10|20|spec-phase3|spec-phase4) (§\d|Conventions)")


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.id) for v in ALL])
def test_vector_cites_the_spec(vector: Vector) -> None:
    parts = vector.spec.split("; ")
    assert parts and all(SPEC_REF.match(p) for p in parts), vector.spec
    assert vector.description.strip() and "\n" not in vector.description


def _load_generator() -> Any:
    from conformance._vectorgen import build

    return build


def test_spec10_scenarios_1_to_96_are_covered_or_explained() -> None:
    build = _load_generator()
    covered: set[int] = set()
    for v in ALL:
        for m in re.finditer(r"10 §7\.\d+ ((?:#\d+(?:, )?)+)", v.spec):
            covered.update(int(n) for n in re.findall(r"#(\d+)", m.group(1)))
    skipped = set(build.SKIPPED_SCENARIOS)
    assert not covered & skipped
    assert set(range(1, 97)) == covered | skipped
    readme = README.read_text(encoding="utf-8")
    for n in skipped | set(build.PARTIAL_SCENARIOS):
        assert f"* #{n}: " in readme


def test_spec10_hash_table_and_goldens_are_all_present() -> None:
    hash_rows = [v for v in ALL if v.operation == "args_hash" and "§2.6 table" in v.spec and "hash" in v.expect]
    assert len({(v.input["toolName"], v.input["argsJson"]) for v in hash_rows}) == 26  # 25 rows + row 1 reordered
    goldens = {m.group(1) for v in ALL for m in re.finditer(r"§2\.2 golden line (\d+)", v.spec)}
    assert goldens == {str(n) for n in range(1, 11)}


def test_spec20_items_and_failpoints_are_covered() -> None:
    items = {int(n) for v in ALL for n in re.findall(r"20 §8 items? (\d+)", v.spec)}
    assert set(range(1, 9)) | set(range(26, 32)) <= items
    failpoints = {v.input["failpoint"] for v in ALL if v.operation == "plan" and "failpoint" in v.input}
    assert failpoints == {f"P{n}" for n in range(12)}


# ---------------------------------------------------------------------------------------
# Generator and README freshness
# ---------------------------------------------------------------------------------------


def test_generator_check_passes() -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance._vectorgen.build", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_readme_count_table_is_current() -> None:
    readme = README.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)\.json` \| (\d+) \|", readme, flags=re.M))
    files = load_vector_files()
    assert rows == {f.group: str(len(f.vectors)) for f in files}
    total = re.search(r"^\| \*\*total\*\* \| \*\*(\d+)\*\* \|", readme, flags=re.M)
    assert total and int(total.group(1)) == len(ALL)


def test_generator_imports_only_the_fixture_families_from_maka_ref() -> None:
    modules = sorted(GENERATOR_DIR.glob("*.py"))
    assert GENERATOR_DIR / "build.py" in modules and len(modules) > 2
    imported: list[str] = []
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported += [f"{node.module}.{a.name}" for a in node.names]
    from_maka = {name for name in imported if name.split(".")[0] == "maka_ref"}
    assert from_maka == {"maka_ref.testing.families"}


# ---------------------------------------------------------------------------------------
# The schema constrains what it should
# ---------------------------------------------------------------------------------------


def _doc(vector: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "./vector.schema.json", "group": "g", "description": "d", "vectors": [vector]}


GOOD = {"id": "g/one", "spec": "10 §2.6", "description": "d.", "operation": "args_hash",
        "input": {"toolName": "X", "argsJson": "null"},
        "expect": {"hash": "sha256:6dc46f9f4e99c4224c2be66356156527206902d447ad81837d2cf33b835329fb"}}


@pytest.mark.parametrize(
    "change",
    [
        {"operation": "retry"},
        {"spec": "somewhere"},
        {"id": "Not/An Id"},
        {"expect": {}},
        {"expect": {"lane": "ordinary"}},  # a matcher the operation may not use
        {"expect": {"hash": "sha256:XYZ"}},
        {"input": {"toolName": "X"}},
        {"input": {"toolName": "X", "argsJson": "null", "extra": 1}},
        {"description": ""},
    ],
    ids=lambda c: next(iter(c)) + "=" + json.dumps(next(iter(c.values())))[:30],
)
def test_schema_rejects_malformed_vectors(change: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(load_schema())
    assert validator.is_valid(_doc(GOOD))
    assert not validator.is_valid(_doc({**GOOD, **change}))


def test_schema_rejects_encode_input_with_both_forms() -> None:
    validator = jsonschema.Draft202012Validator(load_schema())
    bad = {**GOOD, "operation": "encode", "input": {"event": {}, "eventJson": "{}"}, "expect": {"canonicalJson": "{}"}}
    assert not validator.is_valid(_doc(bad))


# ---------------------------------------------------------------------------------------
# Number semantics and equality
# ---------------------------------------------------------------------------------------


def test_parse_json_text_uses_double_semantics() -> None:
    assert parse_json_text("12345678901234567890") == 12345678901234567000.0
    assert isinstance(parse_json_text("9007199254740992"), int)
    assert isinstance(parse_json_text("9007199254740993"), float)
    negative_zero = parse_json_text("-0")
    assert negative_zero == 0 and math.copysign(1.0, negative_zero) == -1.0
    assert parse_json_text("[1e400]") == [math.inf]
    assert parse_json_text('"a\\ud800b"') == "a\ud800b"
    with pytest.raises(ValueError):
        parse_json_text("NaN")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (0.0, -0.0, False),
        (True, 1, False),
        ({"a": None}, {}, False),
        ({"a": [1, {"b": "x"}]}, {"a": [1.0, {"b": "x"}]}, True),
        ([1, 2], [2, 1], False),
        ("1", 1, False),
        (None, None, True),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


# ---------------------------------------------------------------------------------------
# The checker reports mismatches
# ---------------------------------------------------------------------------------------


def _vector(operation: str, expect: dict[str, Any], input_: dict[str, Any] | None = None) -> Vector:
    return Vector("g", "g/x", "10 §6", "d.", operation, input_ if input_ is not None else {"events": []}, expect)


def _const(result: Any) -> Any:
    return lambda operation, input_: copy.deepcopy(result)


RESOLUTION = {"toolBoundaryProtocol": "t1_after_preflight_v1",
              "decisions": [{"toolCallId": "c", "status": "indeterminate", "reason": "dispatch_without_response",
                             "operationId": "op"}],
              "issues": [{"code": "duplicate_event_id", "eventId": "e"}], "hasCorruption": True,
              "requiresReconciliation": False}


@pytest.mark.parametrize(
    ("expect", "fails"),
    [
        ({"resolution": RESOLUTION}, False),
        ({"resolution": {**RESOLUTION, "hasCorruption": False}}, True),
        ({"resolutionSubset": {"hasCorruption": True}}, False),
        ({"resolutionSubset": {"requiresReconciliation": True}}, True),
        ({"resolutionSubset": {"missing": 1}}, True),
        ({"absentKeys": ["toolBoundaryProtocol"]}, True),
        ({"presentKeys": ["toolBoundaryProtocol"]}, False),
        ({"decisions": [{"subset": {"status": "indeterminate"}}]}, False),
        ({"decisions": [{"subset": {"status": "indeterminate"}, "absent": ["operationId"]}]}, True),
        ({"decisions": [{"subset": {"status": "corruption"}}]}, True),
        ({"decisions": []}, True),
        ({"issueCodes": ["duplicate_event_id"]}, False),
        ({"issueCodes": []}, True),
        ({"issueCodesInclude": ["semantic_lane_conflict"]}, True),
    ],
)
def test_checker_on_resolutions(expect: dict[str, Any], fails: bool) -> None:
    assert bool(check_vector(_vector("resolve", expect), _const(RESOLUTION))) is fails


def test_checker_on_errors_and_hashes() -> None:
    good = {"hash": "sha256:" + "0" * 64}
    hash_vector = _vector("args_hash", {"hash": "sha256:" + "0" * 64}, {"toolName": "X", "argsJson": "1"})
    assert check_vector(hash_vector, _const(good)) == []
    assert check_vector(hash_vector, _const({"hash": "sha256:" + "1" * 64}))
    assert check_vector(hash_vector, _const({"error": {"message": "boom"}}))
    err_vector = _vector("args_hash", {"error": {"message": "boom"}}, {"toolName": "X", "argsJson": "1"})
    assert check_vector(err_vector, _const({"error": {"message": "boom"}})) == []
    assert check_vector(err_vector, _const({"error": {"message": "other"}}))
    assert check_vector(err_vector, _const(good))
    contains = _vector("args_hash", {"error": {"messageContains": "tool name"}}, {"toolName": "", "argsJson": "1"})
    assert check_vector(contains, _const({"error": {"message": "canonicalArgsHash requires a tool name"}})) == []

    def by_input(operation: str, input_: Mapping[str, Any]) -> Any:
        return {"hash": "sha256:" + ("1" if input_["argsJson"] == "1" else "2") * 64}

    same = _vector("args_hash", {"sameHashAs": {"toolName": "X", "argsJson": "1.0"}}, {"toolName": "X", "argsJson": "1"})
    assert check_vector(same, by_input)
    assert check_vector(replace(same, expect={"sameHashAs": {"toolName": "X", "argsJson": "1"}}), by_input) == []


def test_checker_reports_input_mutation_and_nondeterminism() -> None:
    def mutating(operation: str, input_: Any) -> Any:
        input_["events"].append({"id": "x"})
        return {"disposition": "safe_replay"}

    plan = _vector("plan", {"planSubset": {"disposition": "safe_replay"}})
    assert check_vector(plan, _const({"disposition": "safe_replay"})) == []
    assert check_vector(plan, mutating) == ["the operation modified its input"]

    counter = iter(range(10))

    def flaky(operation: str, input_: Any) -> Any:
        return {"disposition": "blocked", "n": next(counter)}

    assert check_vector(_vector("plan", {"deterministic": True}), flaky)


def test_checker_on_plans_and_segments() -> None:
    plan = {"disposition": "blocked", "requiresVerification": True, "directive": "Do not retry. Use read-only tools.",
            "operations": [{"toolCallId": "t", "status": "indeterminate", "callRuntimeEventId": "c"}],
            "diagnostics": [{"code": "pending_tool_result", "message": "m"}], "rejectionReasons": ["dangling_tool_state"],
            "replayRuntimeEvents": [{"id": "user-1"}]}
    ok = {"planSubset": {"disposition": "blocked"}, "directiveContains": ["do not RETRY", "Read-Only"],
          "operations": [{"subset": {"status": "indeterminate"}, "absent": ["responseRuntimeEventId"]}],
          "diagnosticCodes": ["pending_tool_result"], "replayEventIds": ["user-1"],
          "rejectionReasonsInclude": ["dangling_tool_state"]}
    assert check_vector(_vector("plan", ok), _const(plan)) == []
    for bad in ({"directiveContains": ["retry later"]}, {"replayEventIds": []}, {"diagnosticCodes": []},
                {"operations": [{"subset": {"status": "failed"}}]}, {"rejectionReasonsInclude": ["x"]},
                {"absentKeys": ["directive"]}, {"diagnosticCodesInclude": ["tool_not_dispatched"]}):
        assert check_vector(_vector("plan", bad), _const(plan)), bad

    replay = {"blocked": False, "trimmedSuffixEventIds": ["a"], "replayEventIds": ["u"], "providerItemEventIds": ["u"]}
    assert check_vector(_vector("segment_replay", {"trimmedSuffixEventIds": ["a"]}), _const(replay)) == []
    assert check_vector(_vector("segment_replay", {"trimmedSuffixEventIds": []}), _const(replay))
    assert check_vector(_vector("segment_replay", {"blockReason": "tool_recovery_unsettled"}), _const(replay))
    blocked = {"blocked": True, "blockReason": "tool_recovery_unsettled"}
    assert check_vector(_vector("segment_replay", {"blockReason": "tool_recovery_unsettled"}), _const(blocked)) == []
    assert check_vector(_vector("segment_replay", {"replayEventIds": ["u"]}), _const(blocked))


def test_checker_on_scans() -> None:
    scan = {"issues": [{"code": "identity_conflict", "eventId": "e", "toolCallId": "t"}], "operations": [{}], "hasCorruption": True}
    assert check_vector(_vector("scan", {"issuesBrief": [{"code": "identity_conflict", "eventId": "e"}],
                                         "operationCount": 1, "hasCorruption": True}), _const(scan)) == []
    assert check_vector(_vector("scan", {"issues": [{"code": "identity_conflict", "eventId": "e"}]}), _const(scan))
    assert check_vector(_vector("scan", {"issuesInclude": [{"code": "identity_conflict", "eventId": "e"}]}), _const(scan))
    assert check_vector(_vector("scan", {"operationCount": 2}), _const(scan))


def test_load_vector_files_rejects_a_broken_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance import vectors as module

    (tmp_path / "vector.schema.json").write_text((VECTORS_DIR / "vector.schema.json").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "g.json").write_text(json.dumps(_doc({**GOOD, "operation": "nope"})), encoding="utf-8")
    monkeypatch.setattr(module, "_vectors_dir", lambda: tmp_path)
    with pytest.raises(VectorFormatError):
        module.load_vector_files()
    (tmp_path / "g.json").write_text(json.dumps(_doc(GOOD)), encoding="utf-8")
    (tmp_path / "h.json").write_text(json.dumps({**_doc(GOOD), "group": "h"}).replace('"g/one"', '"h/one"'), encoding="utf-8")
    assert [f.group for f in module.load_vector_files()] == ["g", "h"]
    (tmp_path / "h.json").write_text(json.dumps({**_doc(GOOD), "group": "h"}), encoding="utf-8")
    with pytest.raises(VectorFormatError):
        module.load_vector_files()


# ---------------------------------------------------------------------------------------
# Phase 3 / Phase 4 families (spec-phase3 §2, §4; spec-phase4 §1.2, §2.4)
# ---------------------------------------------------------------------------------------

#: spec-phase3 §2.2 rows 1–16 and §2.3 rows 1–4, transcribed from the tables.
EVIDENCE_CODES = [
    "evidence_not_json", "evidence_not_strict_json", "evidence_not_object", "evidence_protocol_unsupported",
    "evidence_unknown_key", "evidence_missing_key", "evidence_identity_invalid", "evidence_tool_unsupported",
    "evidence_transform_unsupported", "evidence_digest_invalid", "evidence_workspace_invalid",
    "evidence_target_invalid", "evidence_state_invalid", "evidence_size_limit", "evidence_transform_conflict",
    "evidence_result_invalid",
]
BINDING_CODES = ["evidence_operation_conflict", "evidence_recovery_mode_conflict", "evidence_args_conflict",
                 "evidence_result_conflict"]
#: spec-phase3 §4.3 (closed) and §4.1 (observed types), §4.4 (rows).
UNREADABLE_REASONS = ["target_invalid", "workspace_unreachable", "ancestor_not_directory", "permission_denied",
                      "changed_during_observation", "io_error", "resource_exhausted", "sync_failed",
                      "unsupported_platform"]
OBSERVED_TYPES = ["absent", "regular", "directory", "symlink", "other", "unreadable"]
OBSERVATIONS = ["unreadable", "matches_expected_state", "matches_prior_state", "diverged"]


def test_every_evidence_code_has_a_decode_vector() -> None:
    """A clause for every validation code: each §2.2 code is the answer of at least one decode vector."""
    codes = {v.expect["resultSubset"].get("code") for v in iter_vectors("evidence") if v.operation == "evidence_decode"}
    assert set(EVIDENCE_CODES) <= codes
    binding = {v.expect["resultSubset"].get("code") for v in iter_vectors("evidence") if v.operation == "evidence_binding"}
    assert set(BINDING_CODES) <= binding and None in binding  # and some records that bind


def test_every_row_reason_and_type_of_the_observation_table_has_a_vector() -> None:
    rows = [v for v in iter_vectors("observation") if v.expect["resultSubset"]["ok"]]
    assert {v.expect["resultSubset"]["observation"] for v in rows} == set(OBSERVATIONS)
    assert {v.input["observed"]["type"] for v in rows} == set(OBSERVED_TYPES)
    reasons = {v.input["observed"]["reason"]: v.expect["resultSubset"]["transient"] for v in rows
               if v.input["observed"]["type"] == "unreadable"}
    assert reasons == {r: r in ("resource_exhausted", "sync_failed", "unsupported_platform") for r in UNREADABLE_REASONS}
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", v.expect["resultSubset"]["observationDigest"]) for v in rows)


def test_checkpoint_vectors_cover_spec_phase4_items_1_to_5() -> None:
    items = {int(n) for v in iter_vectors("checkpoint") for n in re.findall(r"§12 item (\d+)", v.spec)}
    assert items == {1, 2, 3, 4, 5}
    pinned = [v for v in iter_vectors("checkpoint") if v.id == "checkpoint/policy-hash-default"]
    assert pinned[0].expect["resultSubset"]["policyHash"] == \
        "sha256:ab23d8c63ab28bcb66cec95a5d51d191a3b21ab579c6058ba3b6eb96386c5eca"  # spec-phase4 §2.5


def test_the_worked_evidence_digest_follows_the_spec_construction() -> None:
    """spec-phase3 §2.1, recomputed here from the vector's own text with hashlib alone."""
    import hashlib

    (worked,) = [v for v in iter_vectors("evidence") if v.id == "evidence/write-canonical-text-and-digest"]
    text = worked.expect["resultSubset"]["evidenceJson"]
    h = hashlib.sha256()
    for part in (b"maka.file-evidence.v1", text.encode("utf-8")):
        h.update(len(part).to_bytes(8, "big") + part)
    assert worked.expect["resultSubset"]["evidenceDigest"] == "sha256:" + h.hexdigest()
    assert json.loads(text) == worked.input["evidence"]


def test_checker_on_codes_pointers_and_result_subsets() -> None:
    boundary = Vector("g", "g/x", "spec-phase4 §1.2", "d.", "boundary_decode", {"text": "[]"},
                      {"error": {"code": "invalid_workspace_boundary", "detail": ""}})
    assert check_vector(boundary, _const({"error": {"message": "m", "code": "invalid_workspace_boundary", "detail": ""}})) == []
    assert check_vector(boundary, _const({"error": {"message": "m", "code": "invalid_workspace_boundary", "detail": "/x"}}))
    assert check_vector(boundary, _const({"error": {"message": "m", "code": "invalid_params", "detail": ""}}))
    assert check_vector(boundary, _const({"boundary": {}}))
    decode = Vector("g", "g/x", "spec-phase3 §2.2", "d.", "evidence_decode", {"evidence": 42},
                    {"resultSubset": {"ok": False, "code": "evidence_not_object"}})
    assert check_vector(decode, _const({"ok": False, "code": "evidence_not_object"})) == []
    assert check_vector(decode, _const({"ok": False, "code": "evidence_not_json"}))
    assert check_vector(decode, _const({"ok": True, "evidenceJson": "{}"}))
    # a result operation that *fails* is a mismatch, never an expected answer
    assert check_vector(decode, _const({"error": {"message": "m", "code": "evidence_not_object"}}))


@pytest.mark.parametrize(
    "vector",
    [
        {**GOOD, "operation": "classify", "input": {"evidence": {}, "observed": {}}, "expect": {"hash": GOOD["expect"]["hash"]}},
        {**GOOD, "operation": "evidence_decode", "input": {"evidence": 1, "evidenceJson": "1"},
         "expect": {"resultSubset": {"ok": False}}},
        {**GOOD, "operation": "boundary_decode", "input": {"text": 1}, "expect": {"error": {"code": "x"}}},
        {**GOOD, "operation": "policy_hash", "input": {"policy": {}}, "expect": {"error": {"detail": "/x"}}},
        {**GOOD, "spec": "spec-phase5 §1", "operation": "policy_hash", "input": {"policy": {}},
         "expect": {"resultSubset": {"policyHash": "x"}}},
    ],
    ids=["foreign-matcher", "both-evidence-forms", "text-not-string", "error-without-code-or-message", "unknown-spec"],
)
def test_schema_rejects_malformed_phase3_and_phase4_vectors(vector: dict[str, Any]) -> None:
    assert not jsonschema.Draft202012Validator(load_schema()).is_valid(_doc(vector))


def test_every_vector_operation_is_a_protocol_operation_of_its_family_capability() -> None:
    """The runner sends each vector as its protocol op; the clause's capability is that op's
    (docs/protocol.md §4.1, §4.3.1, §4.6), so an implementation without the optional
    capability sees the Phase 3/4 families as *not claimed*."""
    from conformance.protocol import OPERATIONS
    from conformance.suite.ledger.test_vectors import OPERATION_WIRE
    from conformance.vectors import PROTOCOL_OPERATIONS

    expected = {"evidence": "runtime.reconcile", "observation": "runtime.reconcile", "checkpoint": "workspace.checkpoint"}
    for vector in ALL:
        wire, capability = OPERATION_WIRE[vector.operation]
        assert wire == PROTOCOL_OPERATIONS[vector.operation] and OPERATIONS[wire] == capability
        assert capability == expected.get(vector.group, capability), vector.id
        if vector.group not in expected:
            assert wire == f"ledger.{vector.operation}" and capability.startswith("ledger."), vector.id
