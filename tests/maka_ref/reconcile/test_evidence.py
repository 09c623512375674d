"""The evidence record's codec (docs/spec-phase3.md §1.2–§1.5, §2.1, §2.2, §2.4).

Every §2.2 code is produced from a hand-written input; golden text and digests are written out
or computed here with ``hashlib``, never by the code under test; a Hypothesis property checks
that decoding never raises on any input (spec-phase3 §2.2: "they never raise on any input").
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._reconcile import evidence as evidence_module
from maka_ref._reconcile.evidence import (
    EVIDENCE_CODES,
    MAX_FILE_BYTES,
    EvidenceError,
    FileEvidence,
    FileState,
    Invalid,
    decode_evidence,
    decode_evidence_text,
    encode_evidence,
    evidence_digest,
    target_path_problem,
)
from tests.maka_ref.reconcile.support import (
    ABSENT,
    WORKSPACE_IDENTITY,
    evidence,
    regular,
)

# The canonical text of support.evidence("Write") (spec 10 §2.3 two-tier key order), written out.
GOLDEN_WRITE_TEXT = (
    '{"before":{"type":"absent"},"callEventId":"op-1_call",'
    '"canonicalArgsHash":"sha256:6a3c0e0fe9c1b2b07ccb2dc3b2ea2e5f1fd2aef3e43b8fb2c4f8a1bd0e4f4d67",'
    '"dispatchEventId":"op-1_dispatch",'
    '"expectedAfter":{"contentDigest":"sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",'
    '"mode":420,"size":5,"type":"regular"},'
    '"invocationId":"inv-1","operationId":"op-1","protocol":"file_evidence_v1",'
    '"providerToolCallId":"call-1","result":{"bytesWritten":5,"path":"dir/f.txt"},"runId":"run-1",'
    '"sessionId":"sess-1","targetPath":"dir/f.txt","toolName":"Write","transform":"write_whole_file_v1",'
    '"turnId":"turn-1","workspaceIdentity":"workspace:v1:123e4567-e89b-42d3-a456-426614174000"}'
)


def _golden_record() -> dict[str, Any]:
    record = evidence("Write")
    record["canonicalArgsHash"] = "sha256:6a3c0e0fe9c1b2b07ccb2dc3b2ea2e5f1fd2aef3e43b8fb2c4f8a1bd0e4f4d67"
    return record


def _lp(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _code(value: Any) -> str | None:
    decoded = decode_evidence(value)
    return decoded.code if isinstance(decoded, Invalid) else None


# --------------------------------------------------------------------------- round trips (§2.1, §2.4)


@pytest.mark.parametrize("tool", ["Write", "Edit", "Append"])
def test_decode_encode_round_trip(tool: str) -> None:
    """spec-phase3 §2.4: ``decode(parse(encode(r))) == r`` and the text is canonical JSON."""
    record = decode_evidence(evidence(tool))
    assert isinstance(record, FileEvidence)
    text = encode_evidence(record)
    assert decode_evidence_text(text) == record
    assert json.loads(text) == evidence(tool)
    assert encode_evidence(decode_evidence_text(text)) == text  # type: ignore[arg-type]


def test_canonical_text_and_digest_are_the_golden_bytes() -> None:
    """spec-phase3 §2.1: stable_json (spec 10 §2.3) and SHA256(LP(domain) ‖ LP(text))."""
    record = decode_evidence(_golden_record())
    assert isinstance(record, FileEvidence)
    assert encode_evidence(record) == GOLDEN_WRITE_TEXT
    expected = hashlib.sha256(_lp(b"maka.file-evidence.v1") + _lp(GOLDEN_WRITE_TEXT.encode())).hexdigest()
    assert evidence_digest(record) == "sha256:" + expected


def test_decode_normalises_to_one_record() -> None:
    """spec-phase3 §2.1: equal records have equal canonical text, whatever the input layout."""
    record = _golden_record()
    shuffled = json.dumps(dict(reversed(list(record.items()))), indent=2)
    assert encode_evidence(decode_evidence_text(shuffled)) == GOLDEN_WRITE_TEXT  # type: ignore[arg-type]
    record["expectedAfter"]["size"] = 5.0  # the same JSON number (spec 10 §2.4)
    assert encode_evidence(decode_evidence(record)) == GOLDEN_WRITE_TEXT  # type: ignore[arg-type]


def test_record_fields_and_states() -> None:
    """spec-phase3 §1.2/§1.3: the decoded record exposes the states and a frozen result."""
    record = decode_evidence(evidence("Edit", target="a/é 😀.txt"))
    assert isinstance(record, FileEvidence)
    assert record.tool_name == "Edit" and record.transform == "edit_replace_unique_v1"
    assert record.target_path == "a/é 😀.txt"
    assert record.before == FileState("regular", 10, regular(b"port=3000\n")["contentDigest"], 0o600)
    assert record.expected_after.mode == 0o600
    with pytest.raises(TypeError):
        record.result["path"] = "x"  # deep-frozen


def test_encode_refuses_an_invalid_record() -> None:
    """spec-phase3 §2.4: a record that does not decode is never written (EvidenceError, its code)."""
    record = decode_evidence(evidence("Write"))
    assert isinstance(record, FileEvidence)
    bad = FileEvidence(**{**{f: getattr(record, f) for f in FileEvidence.__slots__}, "target_path": "../x"})
    with pytest.raises(EvidenceError) as caught:
        encode_evidence(bad)
    assert caught.value.code == "evidence_target_invalid"


def test_file_state_of_bytes() -> None:
    """spec-phase3 §1.3: the digest is plain SHA-256 of the bytes, as sha256sum prints it."""
    state = FileState.of_bytes(b"hello", 0o644)
    assert state.to_json() == {"type": "regular", "size": 5, "mode": 420,
                               "contentDigest": "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}
    assert FileState.absent().to_json() == {"type": "absent"}


# --------------------------------------------------------------------------- every code (§2.2)


def _with(change: Callable[[dict[str, Any]], Any], tool: str = "Write") -> dict[str, Any]:
    record = evidence(tool)
    change(record)
    return record


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.__setitem__(key, value)


def _set_in(outer: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record[outer].__setitem__(key, value)


def _delete(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.pop(key)


CODE_CASES: list[tuple[str, str, Any]] = [
    ("evidence_not_strict_json", "NaN inside result", _with(_set("result", {"x": math.nan}))),
    ("evidence_not_strict_json", "-0 inside result", _with(_set("result", {"x": -0.0}))),
    ("evidence_not_strict_json", "a set", {1, 2}),
    ("evidence_not_strict_json", "a tuple", ("protocol",)),
    ("evidence_not_strict_json", "a non-string key", {1: "x"}),
    ("evidence_not_object", "a number", 42),
    ("evidence_not_object", "an array", [evidence("Write")]),
    ("evidence_not_object", "null", None),
    ("evidence_protocol_unsupported", "v2", _with(_set("protocol", "file_evidence_v2"))),
    ("evidence_protocol_unsupported", "absent protocol", _with(_delete("protocol"))),
    ("evidence_protocol_unsupported", "v2 with a new key", _with(lambda r: r.update(protocol="file_evidence_v2", extra=1))),
    ("evidence_unknown_key", "extra key", _with(_set("x", 1))),
    ("evidence_missing_key", "no result", _with(_delete("result"))),
    ("evidence_missing_key", "no before", _with(_delete("before"))),
    ("evidence_identity_invalid", "empty operationId", _with(_set("operationId", ""))),
    ("evidence_identity_invalid", "numeric runId", _with(_set("runId", 7))),
    ("evidence_identity_invalid", "null dispatchEventId", _with(_set("dispatchEventId", None))),
    ("evidence_tool_unsupported", "Bash", _with(_set("toolName", "Bash"))),
    ("evidence_tool_unsupported", "Read", _with(_set("toolName", "Read"))),
    ("evidence_tool_unsupported", "lowercase write", _with(_set("toolName", "write"))),
    ("evidence_transform_unsupported", "Edit with Write's transform", _with(_set("transform", "write_whole_file_v1"), "Edit")),
    ("evidence_transform_unsupported", "unknown transform", _with(_set("transform", "write_whole_file_v2"))),
    ("evidence_digest_invalid", "uppercase hex", _with(_set("canonicalArgsHash", "sha256:" + "A" * 64))),
    ("evidence_digest_invalid", "short", _with(_set("canonicalArgsHash", "sha256:abc"))),
    ("evidence_workspace_invalid", "v2 prefix", _with(_set("workspaceIdentity", WORKSPACE_IDENTITY.replace("v1", "v2")))),
    ("evidence_workspace_invalid", "not a UUID", _with(_set("workspaceIdentity", "workspace:v1:nope"))),
    ("evidence_target_invalid", "parent reference", _with(_set("targetPath", "a/../b"))),
    ("evidence_target_invalid", "absolute", _with(_set("targetPath", "/etc/passwd"))),
    ("evidence_target_invalid", "empty component", _with(_set("targetPath", "a//b"))),
    ("evidence_target_invalid", "dot component", _with(_set("targetPath", "./a"))),
    ("evidence_target_invalid", "trailing slash", _with(_set("targetPath", "a/"))),
    ("evidence_target_invalid", "reserved .git", _with(_set("targetPath", ".git/config"))),
    ("evidence_target_invalid", "reserved, other case", _with(_set("targetPath", "RUNTIME.SQLITE"))),
    ("evidence_target_invalid", "backslash", _with(_set("targetPath", "a\\b"))),
    ("evidence_target_invalid", "NUL", _with(_set("targetPath", "a\x00b"))),
    ("evidence_target_invalid", "lone surrogate", _with(_set("targetPath", "a\ud800"))),
    ("evidence_target_invalid", "component of 256 bytes", _with(_set("targetPath", "a" * 256))),
    ("evidence_target_invalid", "path of 4097 bytes", _with(_set("targetPath", "/".join(["b" * 200] * 20) + "/" + "c" * 77))),
    ("evidence_state_invalid", "expectedAfter absent", _with(_set("expectedAfter", ABSENT))),
    ("evidence_state_invalid", "fractional size", _with(_set_in("expectedAfter", "size", 1.5))),
    ("evidence_state_invalid", "negative size", _with(_set_in("expectedAfter", "size", -1))),
    ("evidence_state_invalid", "boolean size", _with(_set_in("expectedAfter", "size", True))),
    ("evidence_state_invalid", "mode 4096", _with(_set_in("expectedAfter", "mode", 4096))),
    ("evidence_state_invalid", "extra key in a state", _with(_set_in("expectedAfter", "inode", 7))),
    ("evidence_state_invalid", "absent with a size", _with(_set("before", {"type": "absent", "size": 0}))),
    ("evidence_state_invalid", "directory before", _with(_set("before", {"type": "directory"}))),
    ("evidence_state_invalid", "bad content digest", _with(_set_in("expectedAfter", "contentDigest", "md5:x"))),
    ("evidence_state_invalid", "before not an object", _with(_set("before", "absent"))),
    ("evidence_size_limit", "expectedAfter one byte over", _with(_set_in("expectedAfter", "size", MAX_FILE_BYTES + 1))),
    ("evidence_size_limit", "before over", _with(_set_in("before", "size", MAX_FILE_BYTES + 1), "Edit")),
    ("evidence_transform_conflict", "Edit of an absent file", _with(_set("before", ABSENT), "Edit")),
    ("evidence_transform_conflict", "Append shrinking", _with(_set("expectedAfter", regular(b"ab", 0o640)), "Append")),
    ("evidence_transform_conflict", "mode changed", _with(_set_in("expectedAfter", "mode", 0o644), "Edit")),
    ("evidence_transform_conflict", "created file not 0644", _with(_set_in("expectedAfter", "mode", 0o600))),
    ("evidence_result_invalid", "array result", _with(_set("result", []))),
    ("evidence_result_invalid", "string result", _with(_set("result", "ok"))),
]


@pytest.mark.parametrize(("code", "case", "value"), CODE_CASES, ids=[f"{c}-{n}" for c, n, _ in CODE_CASES])
def test_every_decode_code(code: str, case: str, value: Any) -> None:
    """spec-phase3 §2.2: each hand-written input yields its code (first failing check wins)."""
    assert _code(value) == code


def test_every_code_is_exercised() -> None:
    """spec-phase3 §2.2 is a closed vocabulary; every code has a case above (text: below)."""
    exercised = {code for code, _, _ in CODE_CASES} | {"evidence_not_json"}
    assert exercised == set(EVIDENCE_CODES)


@pytest.mark.parametrize("text", ["{", "", "[1,]", "NaN", '{"a":1} x', b"{}", None, 3])
def test_not_json_text(text: Any) -> None:
    """spec-phase3 §2.2 rule 1: text form only — not one JSON document, or not text."""
    decoded = decode_evidence_text(text)
    assert isinstance(decoded, Invalid) and decoded.code == "evidence_not_json"


def test_text_with_negative_zero_or_overflow_is_not_strict() -> None:
    """spec-phase3 §2.2 rule 2 on text: ``-0`` and ``1e400`` parse but are not strict JSON."""
    for literal in ("-0", "1e400"):
        text = GOLDEN_WRITE_TEXT.replace('"bytesWritten":5', f'"bytesWritten":{literal}')
        decoded = decode_evidence_text(text)
        assert isinstance(decoded, Invalid) and decoded.code == "evidence_not_strict_json"


def test_order_protocol_before_key_set_before_fields() -> None:
    """spec-phase3 §2.2: the first failing check wins (protocol, then keys, then fields)."""
    record = evidence("Write")
    record.update(protocol="x", extra=1, operationId="")
    assert _code(record) == "evidence_protocol_unsupported"
    record["protocol"] = "file_evidence_v1"
    assert _code(record) == "evidence_unknown_key"
    del record["extra"]
    del record["result"]
    assert _code(record) == "evidence_missing_key"
    record["result"] = []
    assert _code(record) == "evidence_identity_invalid"


def test_depth_is_row_2_and_malformed_text_row_1() -> None:
    """spec-phase3 §2.2: one JSON document nested beyond 500 is ``evidence_not_strict_json``
    (row 2), however deep; text that is not one document stays ``evidence_not_json`` (row 1)."""
    for depth in (501, 600, 5000):
        assert decode_evidence_text("[" * depth + "]" * depth).code == "evidence_not_strict_json"  # type: ignore[union-attr]
    for text in ("[" * 600, "[" * 600 + "]" * 599, "[" * 600 + "]" * 600 + "x", "[" * 5000 + "1,]" + "]" * 4999):
        assert decode_evidence_text(text).code == "evidence_not_json"  # type: ignore[union-attr]


def test_size_limit_boundary() -> None:
    """spec-phase3 §1.6: exactly MAX_FILE_BYTES is allowed, one more is not."""
    record = evidence("Write")
    record["expectedAfter"]["size"] = MAX_FILE_BYTES
    assert _code(record) is None
    record["expectedAfter"]["size"] = MAX_FILE_BYTES + 1
    assert _code(record) == "evidence_size_limit"


def test_path_length_boundary() -> None:
    """spec-phase3 §1.5: a path of exactly 4096 UTF-8 bytes and components of 255 are allowed."""
    assert target_path_problem("/".join(["b" * 200] * 20) + "/" + "c" * 76) is None
    assert target_path_problem("é" * 127 + "a") is None  # 255 bytes
    assert target_path_problem("é" * 128) is not None  # 256 bytes
    # §1.5's syntax is a closed list without drive forms: "C:x" is a plain POSIX name (the
    # reference's tools refuse such an argument, so its own evidence never holds one)
    assert target_path_problem("C:x") is None and target_path_problem("a/C:/b") is None


def test_mode_is_optional() -> None:
    """spec-phase3 §1.3: a state without ``mode`` binds no mode."""
    record = evidence("Edit", before=regular(b"port=3000\n"), after=regular(b"port=4000\n"))
    decoded = decode_evidence(record)
    assert isinstance(decoded, FileEvidence) and decoded.before.mode is None
    assert "mode" not in json.loads(encode_evidence(decoded))["expectedAfter"]


def test_hostile_mapping_does_not_raise() -> None:
    """spec-phase3 §2.2: never raises — not even for a mapping whose methods raise."""

    class Hostile(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise RuntimeError("boom")

        def keys(self) -> Any:
            raise RuntimeError("boom")

        def __iter__(self) -> Any:
            raise RuntimeError("boom")

    decoded = decode_evidence(Hostile(evidence("Write")))
    assert isinstance(decoded, (Invalid, FileEvidence))
    cyclic: dict[str, Any] = evidence("Write")
    cyclic["result"] = {"self": cyclic}
    assert _code(cyclic) == "evidence_not_strict_json"
    deep: Any = {}
    for _ in range(2000):
        deep = {"d": deep}
    assert _code(_with(_set("result", deep))) == "evidence_not_strict_json"


# --------------------------------------------------------------------------- never raises (property)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_KEYS = sorted(evidence("Write"))


@st.composite
def _mutated_records(draw: st.DrawFn) -> Any:
    record = evidence(draw(st.sampled_from(["Write", "Edit", "Append"])))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "drop", "nest"]))
        key = draw(st.sampled_from(_KEYS))
        if action == "drop":
            record.pop(key, None)
        elif action == "set":
            record[key] = draw(_JSON)
        elif isinstance(record.get(key), dict):
            record[key][draw(st.sampled_from(["type", "size", "contentDigest", "mode", "x"]))] = draw(_JSON)
    return record


@settings(max_examples=300, deadline=None)
@given(st.one_of(_JSON, _mutated_records()))
def test_decode_never_raises(value: Any) -> None:
    """spec-phase3 §2.2: any value yields a record or one closed code, never an exception; a
    record re-encodes to text that decodes to itself."""
    decoded = decode_evidence(value)
    if isinstance(decoded, Invalid):
        assert decoded.code in EVIDENCE_CODES
    else:
        assert decode_evidence_text(encode_evidence(decoded)) == decoded


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), _mutated_records().map(lambda r: json.dumps(r, allow_nan=True))))
def test_decode_text_never_raises(text: str) -> None:
    """spec-phase3 §2.2: the text form never raises either."""
    decoded = decode_evidence_text(text)
    assert isinstance(decoded, FileEvidence) or decoded.code in EVIDENCE_CODES


_NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\\\x00"), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..") and len(s.encode()) <= 255
)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(_NAME, min_size=1, max_size=4).filter(lambda p: target_path_problem("/".join(p)) is None),
    size=st.integers(0, MAX_FILE_BYTES),
    mode=st.none() | st.integers(0, 0o7777),
    result=st.dictionaries(st.text(max_size=5), _JSON.filter(lambda v: _strict(v)), max_size=3),
)
def test_valid_records_round_trip(parts: list[str], size: int, mode: int | None, result: dict[str, Any]) -> None:
    """spec-phase3 §2.4 on generated valid Edit records: decode(text(encode(r))) == r."""
    state: dict[str, Any] = {"type": "regular", "size": size, "contentDigest": "sha256:" + "0" * 64}
    if mode is not None:
        state["mode"] = mode
    record = evidence("Edit", target="/".join(parts), before=state, after=dict(state, contentDigest="sha256:" + "1" * 64),
                      result=result)
    decoded = decode_evidence(record)
    assert isinstance(decoded, FileEvidence), decoded
    assert decode_evidence_text(encode_evidence(decoded)) == decoded


def _strict(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return not (isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0) and "-0.0" not in json.dumps(value)


# --------------------------------------------------------------------------- boundaries of the package


def test_reserved_names_match_the_runtime() -> None:
    """spec-phase3 §1.5: the reserved names are the tools' own (docs/adapter-guide.md §6)."""
    from maka_ref._runtime.paths import RESERVED_NAMES

    assert evidence_module.RESERVED_NAMES == RESERVED_NAMES


def test_package_imports_only_what_its_docstring_allows() -> None:
    """maka_ref/_reconcile/__init__.py: only the standard library, _codec, _durable (the sync), _events, _errors and
    itself — never the store, planner, ledger or runtime."""
    package = Path(evidence_module.__file__).parent
    allowed = ("maka_ref._codec", "maka_ref._durable", "maka_ref._events", "maka_ref._errors", "maka_ref._reconcile")
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in getattr(node, "names", [])] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("maka_ref"):
                    assert name.startswith(allowed), f"{path.name} imports {name}"
