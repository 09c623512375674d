"""Immutable prefixes, segments, boundary cursors and their digests (spec 20 §1.9).

Also: spec 20 §9 items 3 (v2 high-water) and 26 (canonical JSON for digests), spec 30 §2.6
(golden prefix / manifest digests of the concurrency fixture), spec 10 §2.1 (legacy
automation origin rewrite, whose bytes the prefix digest must undo).

Expected digests are either copied from the spec or computed *here* by an independent
construction (``hashlib`` + ``struct.pack`` + ``json.dumps(sort_keys=True)`` on ASCII-only
data, where that equals the spec's canonical JSON) — never by the code under test.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import struct

import pytest

from maka_ref._errors import PrefixError
from maka_ref._plan.prefix.digests import (
    length_prefixed,
    manifest_digest,
    prefix_digest,
    provider_replay_digest,
)
from maka_ref._plan.prefix.immutable import (
    PREFIX_ERROR_CODES,
    ImmutableRuntimePrefix,
    PrefixIdentity,
    PrefixPosition,
    RuntimePrefixSegment,
    build_boundary_cursor,
    build_immutable_prefix,
    segment_of,
    v2_high_water,
    verify_segment,
)

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")  # spec 20 §1.9
IDENTITY = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
T1 = "t1_after_preflight_v1"


def ev(id: str, ts: int = 1, identity: dict | None = None, **fields) -> dict:
    out = {"id": id, **(identity or IDENTITY), "ts": ts, "partial": False, "role": "user", "author": "user"}
    out.update(fields)
    return out


def user(id: str, ts: int = 1, identity: dict | None = None, **fields) -> dict:
    return ev(id, ts, identity, content={"kind": "text", "text": id}, **fields)


def rows(*events: dict) -> list[tuple[int, dict]]:
    return [(index + 1, event) for index, event in enumerate(events)]


def sj_ascii(value) -> bytes:
    """Canonical JSON for ASCII-only, integer-only, non-index-key data (spec 10 §2.3)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def lp(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def hand_prefix_digest(identity: dict, events: list[dict]) -> str:
    h = hashlib.sha256()
    h.update(lp(b"maka.runtime-prefix.v1"))
    h.update(lp(sj_ascii(identity)))
    for seq, event in enumerate(events, start=1):
        h.update(struct.pack(">Q", seq))
        h.update(lp(sj_ascii(event)))
    return "sha256:" + h.hexdigest()


def code_of(excinfo: pytest.ExceptionInfo) -> str:
    assert isinstance(excinfo.value, PrefixError)
    assert excinfo.value.code in PREFIX_ERROR_CODES
    return excinfo.value.code


# ---------------------------------------------------------------------------------------
# Length prefix and golden vectors
# ---------------------------------------------------------------------------------------


def test_length_prefix_layout_is_8_byte_big_endian_length_then_bytes():
    """Spec 20 §1.9: LP(b) = 8-byte big-endian unsigned length of b, then b."""
    assert length_prefixed(b"") == b"\x00\x00\x00\x00\x00\x00\x00\x00"
    assert length_prefixed(b"abc") == b"\x00\x00\x00\x00\x00\x00\x00\x03abc"
    assert length_prefixed(b"abc") == struct.pack(">Q", 3) + b"abc"
    payload = b"x" * 258
    assert length_prefixed(payload) == b"\x00\x00\x00\x00\x00\x00\x01\x02" + payload
    domain = "maka.runtime-prefix.v1".encode()
    assert length_prefixed(domain)[:8] == struct.pack(">Q", 22)


def test_golden_prefix_and_manifest_digest_of_the_concurrency_fixture():
    """Spec 30 §2.6 golden: user event ts 10 + failed terminal ts 11 (runtime_interrupted)."""
    identity = {
        "sessionId": "session-1",
        "invocationId": "continuation-source-invocation",
        "runId": "continuation-source-run",
        "turnId": "continuation-source-turn",
    }
    source_user = ev(
        "continuation-source-user",
        10,
        identity,
        content={"kind": "text", "text": "continue after this completed boundary"},
    )
    terminal = ev(
        "continuation-source-terminal",
        11,
        identity,
        role="system",
        author="system",
        status="failed",
        actions={"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}},
    )
    prefix = build_immutable_prefix(rows(source_user, terminal))
    assert prefix.prefix_digest == "sha256:316557ba0aa070940fd890417e2777d4c5149974110a013e67d3e9c581124eec"
    cursor = build_boundary_cursor([segment_of(prefix)])
    assert cursor.manifest_digest == "sha256:3a976ce5d55eccb0cea1c4de5c9cbdc2f46177a8ba3f63ddc36bd0dc031e7bf4"
    assert prefix_digest(identity, rows(source_user, terminal)) == prefix.prefix_digest


def test_prefix_digest_matches_an_independent_construction():
    """Spec 20 §1.9 formula, built by hand with hashlib/struct."""
    events = [user("user-1"), ev("terminal-1", 2, role="system", author="system", status="failed")]
    assert build_immutable_prefix(rows(*events)).prefix_digest == hand_prefix_digest(IDENTITY, events)


def test_manifest_digest_matches_an_independent_construction():
    """Spec 20 §1.9: LP(domain) ‖ LP(SJ({protocol, segments}))."""
    prefix = build_immutable_prefix(rows(user("user-1")))
    segment_json = {
        "protocol": "runtime_prefix_segment_v1",
        "identity": IDENTITY,
        "position": {"lastEventSeq": 1, "eventCount": 1, "lastEventId": "user-1"},
        "prefixDigest": hand_prefix_digest(IDENTITY, [user("user-1")]),
    }
    h = hashlib.sha256()
    h.update(lp(b"maka.runtime-boundary-manifest.v1"))
    h.update(lp(sj_ascii({"protocol": "runtime_boundary_cursor_v1", "segments": [segment_json]})))
    expected = "sha256:" + h.hexdigest()
    assert manifest_digest([segment_of(prefix)]) == expected
    assert manifest_digest([segment_json]) == expected
    assert build_boundary_cursor([segment_of(prefix)]).manifest_digest == expected


def test_provider_replay_digest_has_no_length_prefix():
    """Spec 20 §1.9: SHA256(SJ({protocol, providerProjectionVersion: 1, items}))."""
    items = [{"kind": "text", "role": "user", "content": "hi", "eventId": "user-1", "ts": 1}]
    body = {"protocol": "provider_replay_plan_v1", "providerProjectionVersion": 1, "items": items}
    assert provider_replay_digest(items) == "sha256:" + hashlib.sha256(sj_ascii(body)).hexdigest()
    empty = {"protocol": "provider_replay_plan_v1", "providerProjectionVersion": 1, "items": []}
    assert provider_replay_digest([]) == "sha256:" + hashlib.sha256(sj_ascii(empty)).hexdigest()


def test_negative_zero_is_hashed_as_zero():
    """Spec 20 §9 item 26: the digest canonicaliser writes -0 as 0."""
    assert provider_replay_digest([{"ts": -0.0}]) == provider_replay_digest([{"ts": 0}])


def test_legacy_automation_origin_is_hashed_with_its_pre_rewrite_bytes():
    """Spec 20 §1.9 / spec 30 §2.6 legacy quirk; spec 10 §2.1 decoder rewrite."""
    origin_in = {"kind": "automation", "automationId": "auto-1"}
    event = ev("user-1", content={"kind": "text", "text": "scheduled", "origin": origin_in})
    prefix = build_immutable_prefix(rows(event))
    # The decoded (canonical) event carries the renamed kind...
    assert prefix.events[0]["content"]["origin"]["kind"] == "legacy_automation"
    # ...but the digest is over the bytes older writers produced: kind "automation".
    assert prefix.prefix_digest == hand_prefix_digest(IDENTITY, [event])
    renamed = copy.deepcopy(event)
    renamed["content"]["origin"] = {"kind": "legacy_automation", "automationId": "auto-1"}
    assert build_immutable_prefix(rows(renamed)).prefix_digest == prefix.prefix_digest
    # Only kind and automationId survive in the hashed origin (spec formula / anchor).
    extra = copy.deepcopy(event)
    extra["content"]["origin"] = {"kind": "automation", "automationId": "auto-1", "note": "x"}
    assert build_immutable_prefix(rows(extra)).prefix_digest == prefix.prefix_digest
    # Other origins are hashed exactly as their canonical bytes.
    other = ev("user-1", content={"kind": "text", "text": "scheduled", "origin": {"kind": "goal", "goalId": "g"}})
    assert build_immutable_prefix(rows(other)).prefix_digest == hand_prefix_digest(IDENTITY, [other])


# ---------------------------------------------------------------------------------------
# Digest properties
# ---------------------------------------------------------------------------------------


def test_digest_properties_stability_and_sensitivity():
    """Spec 20 §1.9 harness note: same input → same digest; any change → another digest."""
    base = [user("user-1"), ev("terminal-1", 2, role="system", author="system", status="failed")]
    d = build_immutable_prefix(rows(*base)).prefix_digest
    assert DIGEST.match(d)
    assert build_immutable_prefix(rows(*copy.deepcopy(base))).prefix_digest == d

    changed_text = copy.deepcopy(base)
    changed_text[0]["content"]["text"] = "user-1!"
    changed_ts = copy.deepcopy(base)
    changed_ts[1]["ts"] = 3
    longer = copy.deepcopy(base) + [ev("extra", 3)]
    other_identity = {**IDENTITY, "runId": "run-9"}
    moved = [dict(e, runId="run-9") for e in copy.deepcopy(base)]
    digests = {
        d,
        build_immutable_prefix(rows(*changed_text)).prefix_digest,
        build_immutable_prefix(rows(*changed_ts)).prefix_digest,
        build_immutable_prefix(rows(*longer[:2])).prefix_digest,
        build_immutable_prefix(rows(*longer)).prefix_digest,
        build_immutable_prefix(rows(*moved), identity=other_identity).prefix_digest,
    }
    assert len(digests) == 5  # longer[:2] is base itself
    assert all(DIGEST.match(x) for x in digests)


def test_manifest_digest_depends_on_segment_order_and_position():
    """Spec 20 §1.9: segment order matters."""
    a = segment_of(build_immutable_prefix(rows(user("root-user"))))
    b_identity = {**IDENTITY, "invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}
    b = segment_of(build_immutable_prefix(rows(user("child-user", identity=b_identity))))
    b2 = segment_of(
        build_immutable_prefix(rows(user("child-user", identity=b_identity), user("more", 2, b_identity)))
    )
    ab, ba, ab2 = manifest_digest([a, b]), manifest_digest([b, a]), manifest_digest([a, b2])
    assert len({ab, ba, ab2}) == 3
    assert all(DIGEST.match(x) for x in (ab, ba, ab2))
    assert manifest_digest([a, b]) == ab


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------


def test_prefix_segment_and_cursor_shapes():
    """Spec 20 §1.9: exact keys of prefix, segment and cursor."""
    prefix = build_immutable_prefix(rows(user("user-1"), user("user-2", 2), user("user-3", 3)))
    doc = prefix.to_json()
    assert list(doc) == ["protocol", "identity", "position", "prefixDigest", "events"]
    assert doc["protocol"] == "immutable_runtime_prefix_v1"
    assert doc["identity"] == IDENTITY
    assert doc["position"] == {"lastEventSeq": 3, "eventCount": 3, "lastEventId": "user-3"}
    assert [e["id"] for e in doc["events"]] == ["user-1", "user-2", "user-3"]

    segment = segment_of(prefix).to_json()
    assert segment == {
        "protocol": "runtime_prefix_segment_v1",
        "identity": IDENTITY,
        "position": {"lastEventSeq": 3, "eventCount": 3, "lastEventId": "user-3"},
        "prefixDigest": prefix.prefix_digest,
    }
    cursor = build_boundary_cursor([segment_of(prefix)]).to_json()
    assert set(cursor) == {"protocol", "segments", "manifestDigest"}
    assert cursor["protocol"] == "runtime_boundary_cursor_v1"
    assert cursor["segments"] == [segment]
    assert DIGEST.match(cursor["manifestDigest"])


def test_v2_high_water_is_last_event_seq():
    """Spec 20 §1.9 and §9 item 3: v2 high-water = position.lastEventSeq."""
    prefix = build_immutable_prefix(rows(user("user-1"), user("user-2", 2)), high_water=2)
    assert v2_high_water(prefix) == 2
    assert v2_high_water(segment_of(prefix)) == 2


def test_prefix_events_are_canonical_and_frozen_and_input_is_untouched():
    """Spec 20 §1.9 (canonical event encoding); spec 10 §2.1 normalisation; non-mutation."""
    raw = ev("user-1", content={"kind": "text", "text": "hi", "displayText": "hi", "attachments": []})
    before = copy.deepcopy(raw)
    prefix = build_immutable_prefix(rows(raw))
    assert raw == before
    assert prefix.events[0]["content"] == {"kind": "text", "text": "hi"}
    with pytest.raises(TypeError):
        prefix.events[0]["id"] = "x"


def test_rows_may_be_event_seq_objects():
    """Spec 20 §1.9 rows {eventSeq, event} (the anchor's row shape)."""
    prefix = build_immutable_prefix([{"eventSeq": 1, "event": user("user-1")}])
    assert prefix.position == PrefixPosition(1, 1, "user-1")


# ---------------------------------------------------------------------------------------
# Every §1.9 rule has its own PrefixError code
# ---------------------------------------------------------------------------------------


def test_empty_prefix_is_an_error():
    """Spec 20 §1.9: an empty prefix is an error."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix([])
    assert code_of(excinfo) == "prefix_empty"


@pytest.mark.parametrize(
    "seqs",
    [(2,), (1, 3), (1, 1), (0,), (1, 2, 4), (True,), ("1",), (1.5,)],
    ids=["starts-at-2", "gap", "repeat", "zero", "late-gap", "bool", "string", "fraction"],
)
def test_event_seq_must_be_1_to_n_without_gap(seqs):
    """Spec 20 §1.9: event_seq values MUST be 1, 2, 3, … with no gap."""
    events = [user(f"user-{i}", i + 1) for i in range(len(seqs))]
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(list(zip(seqs, events)))
    assert code_of(excinfo) == "prefix_seq_gap"
    assert "event_seq gap" in excinfo.value.message


def test_row_must_be_a_pair():
    """Spec 20 §1.9: rows are (event_seq, event)."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix([user("user-1")])
    assert code_of(excinfo) == "prefix_row_invalid"


@pytest.mark.parametrize("high_water", [3, 1])
def test_prefix_must_end_exactly_at_the_requested_high_water(high_water):
    """Spec 20 §1.9: a prefix read up to H MUST end exactly at H ("high-water unavailable")."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1"), user("user-2", 2)), high_water=high_water)
    assert code_of(excinfo) == "prefix_high_water_unavailable"
    assert "high-water unavailable" in excinfo.value.message


@pytest.mark.parametrize("high_water", [0, -1, True, "2", 1.5])
def test_requested_high_water_must_be_a_positive_integer(high_water):
    """Spec 20 §1.9 / spec 10 §1.3.2: a high-water is a safe integer > 0."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1")), high_water=high_water)
    assert code_of(excinfo) == "prefix_high_water_invalid"


@pytest.mark.parametrize(
    "identity",
    [
        {**IDENTITY, "runId": ""},
        {**IDENTITY, "sessionId": 1},
        {k: v for k, v in IDENTITY.items() if k != "turnId"},
        {**IDENTITY, "extra": "x"},
        "session-1",
    ],
    ids=["empty-run", "non-string", "missing-key", "extra-key", "not-object"],
)
def test_identity_must_be_four_non_empty_strings(identity):
    """Spec 20 §1.9: identity {sessionId, invocationId, runId, turnId}, all non-empty."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1")), identity=identity)
    assert code_of(excinfo) == "prefix_identity_invalid"
    with pytest.raises(PrefixError):
        PrefixIdentity("session-1", "invocation-1", "", "turn-1")


@pytest.mark.parametrize("field", ["sessionId", "invocationId", "runId", "turnId"])
def test_every_event_must_carry_the_prefix_identity(field):
    """Spec 20 §1.9: any session/invocation/run/turn drift → error."""
    drifted = user("user-2", 2)
    drifted[field] = "other"
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1"), drifted))
    assert code_of(excinfo) == "prefix_identity_drift"
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1")), identity={**IDENTITY, field: "other"})
    assert code_of(excinfo) == "prefix_identity_drift"


def test_partial_events_are_never_part_of_a_prefix():
    """Spec 20 §1.9 and §9 item 3: partial snapshots can never be in an immutable prefix."""
    partial = ev("model-1", 2, role="model", author="agent", partial=True, content={"kind": "text", "text": "x"})
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(user("user-1"), partial))
    assert code_of(excinfo) == "prefix_partial_event"


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x"},
        dict(user("user-1"), unknownKey=1),
        dict(user("user-1"), ts=-0.0),
        dict(user("user-1"), ts=float("nan")),
        "not an event",
        None,
    ],
    ids=["missing-fields", "unknown-key", "negative-zero", "nan", "string", "none"],
)
def test_every_event_must_encode_canonically(bad):
    """Spec 20 §1.9 (canonical event JSON) / spec 10 §2.2: unencodable rows are refused."""
    with pytest.raises(PrefixError) as excinfo:
        build_immutable_prefix(rows(bad))
    assert code_of(excinfo) == "prefix_event_not_encodable"


# ---------------------------------------------------------------------------------------
# Segments cannot be forged
# ---------------------------------------------------------------------------------------


def _prefix3() -> ImmutableRuntimePrefix:
    return build_immutable_prefix(rows(user("user-1"), user("user-2", 2), user("user-3", 3)))


def test_segment_is_rebuilt_from_the_prefix_events():
    """Spec 20 §1.9: a segment MUST be re-derived from the prefix's events."""
    prefix = _prefix3()
    segment = segment_of(prefix)
    assert verify_segment(segment, prefix) == segment
    assert verify_segment(segment.to_json(), prefix.to_json()) == segment
    assert segment_of(prefix.to_json()) == segment


def test_forged_position_is_refused():
    """Spec 20 §1.9: a caller cannot forge position (rebuild and compare)."""
    prefix = _prefix3()
    position = PrefixPosition(2, 2, "user-2")
    forged = ImmutableRuntimePrefix(prefix.identity, position, prefix.prefix_digest, prefix.events)
    with pytest.raises(PrefixError) as excinfo:
        segment_of(forged)
    assert code_of(excinfo) == "prefix_position_mismatch"


def test_forged_digest_is_refused():
    """Spec 20 §1.9: a caller cannot forge the digest (rebuild and compare)."""
    prefix = _prefix3()
    forged = ImmutableRuntimePrefix(prefix.identity, prefix.position, "sha256:" + "0" * 64, prefix.events)
    with pytest.raises(PrefixError) as excinfo:
        segment_of(forged)
    assert code_of(excinfo) == "prefix_digest_mismatch"
    # Swapping in different events under the old digest is the same forgery.
    tampered = copy.deepcopy(prefix.to_json())
    tampered["events"][0] = user("user-1", 99)
    with pytest.raises(PrefixError) as excinfo:
        segment_of(tampered)
    assert code_of(excinfo) == "prefix_digest_mismatch"


def test_verify_segment_refuses_a_segment_of_another_prefix():
    """Spec 20 §1.9: a stated segment must equal the rebuilt one."""
    prefix = _prefix3()
    other = segment_of(build_immutable_prefix(rows(user("user-1"), user("user-2", 2))))
    with pytest.raises(PrefixError) as excinfo:
        verify_segment(other, prefix)
    assert code_of(excinfo) == "segment_mismatch"
    forged_digest = dict(segment_of(prefix).to_json(), prefixDigest="sha256:" + "1" * 64)
    with pytest.raises(PrefixError) as excinfo:
        verify_segment(forged_digest, prefix)
    assert code_of(excinfo) == "segment_mismatch"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(extra=1),
        lambda s: s.update(protocol="runtime_prefix_segment_v2"),
        lambda s: s.update(prefixDigest="sha256:" + "A" * 64),
        lambda s: s["position"].update(eventCount=2),
        lambda s: s["position"].update(lastEventSeq=0, eventCount=0),
        lambda s: s["identity"].update(runId=""),
    ],
    ids=["extra-key", "protocol", "uppercase-digest", "count-ne-seq", "zero", "empty-id"],
)
def test_malformed_segments_are_refused(mutate):
    """Spec 20 §1.9: segment keys are exact; digests lowercase; eventCount == lastEventSeq > 0."""
    segment = copy.deepcopy(segment_of(_prefix3()).to_json())
    mutate(segment)
    with pytest.raises(PrefixError) as excinfo:
        build_boundary_cursor([segment])
    assert code_of(excinfo) == "segment_invalid"


def test_not_a_prefix_is_refused():
    """Spec 20 §1.9: only immutable_runtime_prefix_v1 values have segments."""
    with pytest.raises(PrefixError) as excinfo:
        segment_of({"protocol": "something_else", "events": []})
    assert code_of(excinfo) == "prefix_protocol_invalid"


# ---------------------------------------------------------------------------------------
# Boundary cursor rules
# ---------------------------------------------------------------------------------------


def _segment(session="session-1", invocation="invocation-1", run="run-1", turn="turn-1", event_id="user-1"):
    identity = {"sessionId": session, "invocationId": invocation, "runId": run, "turnId": turn}
    return segment_of(build_immutable_prefix(rows(user(event_id, identity=identity))))


def test_cursor_over_a_lineage():
    """Spec 20 §1.9: segments [oldest … immediate source], one sessionId."""
    a = _segment()
    b = _segment(invocation="invocation-2", run="run-2", turn="turn-2", event_id="child-user")
    cursor = build_boundary_cursor([a, b])
    assert [s.identity.run_id for s in cursor.segments] == ["run-1", "run-2"]
    assert cursor.immediate_source == b
    assert cursor.manifest_digest == manifest_digest([a, b])


@pytest.mark.parametrize(
    "second, code",
    [
        (dict(session="session-2", invocation="i2", run="r2", turn="t2"), "boundary_session_mismatch"),
        (dict(invocation="invocation-2", run="run-1", turn="turn-2"), "boundary_duplicate_run_id"),
        (dict(invocation="invocation-1", run="run-2", turn="turn-2"), "boundary_duplicate_invocation_id"),
        (dict(invocation="invocation-2", run="run-2", turn="turn-1"), "boundary_duplicate_turn_id"),
    ],
    ids=["session", "run", "invocation", "turn"],
)
def test_cursor_refuses_mixed_sessions_and_repeated_ids(second, code):
    """Spec 20 §1.9: one sessionId; no runId, invocationId or turnId repeated across segments."""
    with pytest.raises(PrefixError) as excinfo:
        build_boundary_cursor([_segment(), _segment(**second)])
    assert code_of(excinfo) == code


def test_cursor_needs_a_segment():
    """Spec 20 §1.9: segments [oldest … immediate source] is non-empty."""
    with pytest.raises(PrefixError) as excinfo:
        build_boundary_cursor([])
    assert code_of(excinfo) == "boundary_empty"


def test_segment_value_type_round_trip():
    """Spec 20 §1.9: RuntimePrefixSegment JSON form is exact."""
    segment = _segment()
    assert isinstance(segment, RuntimePrefixSegment)
    assert build_boundary_cursor([segment.to_json()]).segments == (segment,)
