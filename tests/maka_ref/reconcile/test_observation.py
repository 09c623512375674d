"""The observation table and observed states, as pure values (docs/spec-phase3.md §4.1, §4.3–§4.5).

Real files are in ``test_observer.py``; here every row of §4.4 is reached with hand-written
observed states, including the cases only a value can show cleanly (a second link, a mode
bound or not, before equal to expected-after).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_ref._reconcile.evidence import (
    MAX_FILE_BYTES,
    FileEvidence,
    Invalid,
    decode_evidence,
    encode_evidence,
)
from maka_ref._reconcile.observation import (
    OBSERVED_STATE_INVALID,
    TRANSIENT_REASONS,
    UNREADABLE_REASONS,
    ObservedState,
    classify,
    decode_observed_state,
    observation_digest,
)
from tests.maka_ref.reconcile.support import evidence, regular, sha


def _record(**kwargs: Any) -> FileEvidence:
    decoded = decode_evidence(evidence(**kwargs))
    assert isinstance(decoded, FileEvidence), decoded
    return decoded


def _regular(data: bytes, mode: int = 0o644, links: int = 1) -> ObservedState:
    return ObservedState.regular(len(data), links, mode, sha(data))


WRITE = {"tool": "Write", "before": regular(b"old", 0o644), "after": regular(b"hello", 0o644)}

# (case, record kwargs, observed, observation, disposition, reasonCode) — spec-phase3 §4.4 / spec 10 §5.1
ROWS: list[tuple[str, dict[str, Any], ObservedState, str, str, str]] = [
    ("expected-after", WRITE, _regular(b"hello"), "matches_expected_state", "completed", "reconcile_matches_expected_state"),
    ("before", WRITE, _regular(b"old"), "matches_prior_state", "parked", "reconcile_matches_prior_state"),
    ("other content", WRITE, _regular(b"hellO"), "diverged", "parked", "reconcile_diverged"),
    ("deleted, before existed", WRITE, ObservedState.of_type("absent"), "diverged", "parked", "reconcile_diverged"),
    ("deleted, before absent", {"tool": "Write"}, ObservedState.of_type("absent"), "matches_prior_state", "parked",
     "reconcile_matches_prior_state"),
    ("symlink", WRITE, ObservedState.of_type("symlink"), "diverged", "parked", "reconcile_diverged"),
    ("directory", WRITE, ObservedState.of_type("directory"), "diverged", "parked", "reconcile_diverged"),
    ("fifo", WRITE, ObservedState.of_type("other"), "diverged", "parked", "reconcile_diverged"),
    ("oversize", WRITE, ObservedState.regular(MAX_FILE_BYTES + 1, 1, 0o644, None), "diverged", "parked", "reconcile_diverged"),
    ("second hard link", WRITE, _regular(b"hello", links=2), "diverged", "parked", "reconcile_diverged"),
    ("mode changed, bound", WRITE, _regular(b"hello", mode=0o600), "diverged", "parked", "reconcile_diverged"),
    ("mode changed, not bound", {"tool": "Write", "before": regular(b"old"), "after": regular(b"hello")},
     _regular(b"hello", mode=0o600), "matches_expected_state", "completed", "reconcile_matches_expected_state"),
    ("torn append", {"tool": "Append"}, _regular(b"abchel", mode=0o640), "diverged", "parked", "reconcile_diverged"),
    ("append done", {"tool": "Append"}, _regular(b"abchello", mode=0o640), "matches_expected_state", "completed",
     "reconcile_matches_expected_state"),
    ("append not started", {"tool": "Append"}, _regular(b"abc", mode=0o640), "matches_prior_state", "parked",
     "reconcile_matches_prior_state"),
    ("unreadable", WRITE, ObservedState.unreadable("permission_denied"), "unreadable", "parked", "reconcile_unreadable"),
    ("same bytes as before", {"tool": "Write", "before": regular(b"hello", 0o644), "after": regular(b"hello", 0o644)},
     _regular(b"hello"), "matches_expected_state", "completed", "reconcile_matches_expected_state"),
]


@pytest.mark.parametrize(("case", "kwargs", "observed", "observation", "disposition", "reason"), ROWS,
                         ids=[row[0] for row in ROWS])
def test_observation_table(case: str, kwargs: dict[str, Any], observed: ObservedState, observation: str,
                           disposition: str, reason: str) -> None:
    """spec-phase3 §4.4, rows 1–4 and their consequences; the decision is spec 10 §5.1's."""
    found = classify(_record(**kwargs), observed)
    assert (found.observation, found.disposition, found.reason_code) == (observation, disposition, reason)
    assert found.transient is False


@pytest.mark.parametrize("reason", UNREADABLE_REASONS)
def test_unreadable_reasons_and_transience(reason: str) -> None:
    """spec-phase3 §4.3: every reason is row 1; exactly three are transient (no bundle)."""
    found = classify(_record(**WRITE), ObservedState.unreadable(reason))
    assert found.observation == "unreadable" and found.reason_code == "reconcile_unreadable"
    assert found.transient is (reason in {"resource_exhausted", "sync_failed", "unsupported_platform"})
    assert TRANSIENT_REASONS == {"resource_exhausted", "sync_failed", "unsupported_platform"}


def test_expected_row_comes_before_prior_row() -> None:
    """spec-phase3 §4.4: with before == expectedAfter the operation completes, never parks."""
    record = _record(tool="Append", before=regular(b"abc", 0o640), after=regular(b"abc", 0o640),
                     args={"path": "dir/f.txt", "content": ""}, result={"path": "dir/f.txt", "bytesAppended": 0})
    assert classify(record, _regular(b"abc", mode=0o640)).observation == "matches_expected_state"


# --------------------------------------------------------------------------- observed-state values (§4.1)

OBSERVED_JSON: list[tuple[ObservedState, dict[str, Any]]] = [
    (ObservedState.of_type("absent"), {"type": "absent"}),
    (ObservedState.of_type("symlink"), {"type": "symlink"}),
    (ObservedState.of_type("directory"), {"type": "directory"}),
    (ObservedState.of_type("other"), {"type": "other"}),
    (ObservedState.unreadable("io_error"), {"type": "unreadable", "reason": "io_error"}),
    (_regular(b"hello"), {"type": "regular", "size": 5, "links": 1, "mode": 420, "contentDigest": sha(b"hello")}),
    (ObservedState.regular(MAX_FILE_BYTES + 1, 1, 420, None), {"type": "regular", "size": MAX_FILE_BYTES + 1, "links": 1, "mode": 420}),
]


@pytest.mark.parametrize(("state", "as_json"), OBSERVED_JSON)
def test_observed_state_json_round_trip(state: ObservedState, as_json: dict[str, Any]) -> None:
    """spec-phase3 §4.1: the JSON shapes, and their decoder."""
    assert state.to_json() == as_json
    assert decode_observed_state(as_json) == state


@pytest.mark.parametrize(
    "value",
    [
        {"type": "regular", "size": 5, "links": 1, "mode": 420},  # digest missing below the limit
        {"type": "regular", "size": MAX_FILE_BYTES + 1, "links": 1, "mode": 420, "contentDigest": sha(b"")},
        {"type": "regular", "size": 5, "links": 1, "mode": 4096, "contentDigest": sha(b"hello")},
        {"type": "regular", "size": -1, "links": 1, "mode": 420, "contentDigest": sha(b"hello")},
        {"type": "regular", "size": 5, "mode": 420, "contentDigest": sha(b"hello")},
        {"type": "regular", "size": 5, "links": 1, "mode": 420, "contentDigest": "sha256:XYZ"},
        {"type": "unreadable", "reason": "tired"},
        {"type": "unreadable"},
        {"type": "absent", "size": 0},
        {"type": "socket"},
        {"type": "regular", "size": 5.5, "links": 1, "mode": 420, "contentDigest": sha(b"hello")},
        [],
        "absent",
        {"type": float("nan")},
    ],
)
def test_observed_state_decoder_refuses(value: Any) -> None:
    """spec-phase3 §4.1: closed shapes; one code, never an exception."""
    found = decode_observed_state(value)
    assert isinstance(found, Invalid) and found.code == OBSERVED_STATE_INVALID


_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["type", "size", "links", "mode", "contentDigest", "reason", "x"]) | st.text(max_size=4), c, max_size=5),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_ANY)
def test_observed_state_decoder_never_raises(value: Any) -> None:
    """spec-phase3 §6 ``reconcile.classify``: an invalid observed state is a code, never a crash."""
    found = decode_observed_state(value)
    assert isinstance(found, (ObservedState, Invalid))


# --------------------------------------------------------------------------- observationDigest (§4.5)


def _lp(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def test_observation_digest_construction() -> None:
    """spec-phase3 §4.5: SHA256(LP(domain) ‖ LP(stable_json({evidenceDigest, observed}))), computed here by hand."""
    record = _record(**WRITE)
    text = encode_evidence(record).encode()
    evidence_digest = "sha256:" + hashlib.sha256(_lp(b"maka.file-evidence.v1") + _lp(text)).hexdigest()
    observed = _regular(b"hello")
    body = json.dumps({"evidenceDigest": evidence_digest, "observed": observed.to_json()}, sort_keys=True,
                      separators=(",", ":")).encode()
    expected = "sha256:" + hashlib.sha256(_lp(b"maka.file-observation.v1") + _lp(body)).hexdigest()
    assert observation_digest(record, observed) == expected


def test_observation_digest_binds_evidence_and_state() -> None:
    """spec-phase3 §4.5: another observed state or another record gives another digest."""
    record, other = _record(**WRITE), _record(tool="Write")
    digests = {
        observation_digest(record, _regular(b"hello")),
        observation_digest(record, _regular(b"old")),
        observation_digest(record, ObservedState.unreadable("io_error")),
        observation_digest(record, ObservedState.unreadable("permission_denied")),
        observation_digest(other, _regular(b"hello")),
    }
    assert len(digests) == 5
