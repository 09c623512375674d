"""Property-based tests of the canonical codec, the args hash, decoding and torn input
(spec 10 §2.1–§2.6, §4.1; spec 20 §1.8).

Events come from ``maka_ref.testing.strategies`` (realistic events of every lane) and the
oracles are algebraic (idempotence, invariance, equality across representations), never
values computed by the code under test.
"""

from __future__ import annotations

import io
import json
import os
import random
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._cli.main import run
from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._codec.frozen import freeze
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._errors import (
    ArgsHashError,
    InvalidJSONTextError,
    NotStrictJSONError,
    RuntimeEventNotSerializableError,
    RuntimeEventSchemaError,
)
from maka_ref._events.encode import canonical_event_json, encode_runtime_event
from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.lanes import classify_lane
from maka_ref.testing.strategies import (
    Ledger,
    TornJsonl,
    garbage_event_lists,
    json_values,
    ledgers,
    runtime_events,
    tool_calls,
    torn_jsonl,
)

SOME = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in another insertion order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _expected_lane(event: dict[str, Any]) -> str:
    kind = (event.get("content") or {}).get("kind")
    actions = event.get("actions") or {}
    if kind in ("function_call", "function_response"):
        return kind
    if "toolDispatch" in actions:
        return "tool_dispatch"
    if "toolRecovery" in actions:
        return {"maka.tool.reconcile_result": "reconcile_result", "maka.tool.recovery_decision": "recovery_decision"}[
            actions["toolRecovery"]["kind"]
        ]
    return "ordinary"


# ---------------------------------------------------------------------------------------
# Canonical event JSON (spec 10 §2.1, §2.2, §2.5)
# ---------------------------------------------------------------------------------------


@MANY
@given(runtime_events())
def test_canonical_event_json_is_idempotent(event: dict[str, Any]) -> None:
    """Spec 10 §2.2 step 4 / §2.5: the canonical JSON of a healthy event re-encodes to the
    same bytes (encode(parse(canonical)) == canonical), and encoding returns the decoded
    form of those bytes."""
    canonical = canonical_event_json(event)
    assert canonical_event_json(parse_json(canonical)) == canonical
    encoded = encode_runtime_event(event)
    assert encoded.canonical_json == canonical
    assert encoded.event == decode_runtime_event(parse_json(canonical))


@SOME
@given(runtime_events(), st.randoms(use_true_random=False))
def test_canonical_event_json_ignores_key_order(event: dict[str, Any], rng: random.Random) -> None:
    """Spec 10 §2.3: keys are ordered by the two-tier rule at every depth, so insertion order
    never reaches the bytes (§2.5: same value, same canonical encoding)."""
    assert canonical_event_json(_shuffled(event, rng)) == canonical_event_json(event)


@MANY
@given(ledgers(min_events=1))
def test_healthy_events_decode_and_sit_on_their_lane(ledger: Ledger) -> None:
    """Spec 10 §2.1: every realistically produced event decodes; §4.1: each sits on the lane
    its shape names (never ``conflict``), and decoding does not change its lane."""
    for event in ledger.events:
        decoded = decode_runtime_event(event)
        lane = _expected_lane(event)
        assert classify_lane(event) == lane, event
        assert classify_lane(decoded) == lane


@SOME
@given(garbage_event_lists())
def test_decode_and_encode_fail_only_with_their_errors(values: list[Any]) -> None:
    """Spec 10 §2.1/§2.2 and docs/architecture.md "Errors": decoding refuses with
    "Invalid RuntimeEvent schema" and encoding additionally with "not losslessly
    serializable"; nothing else escapes, whatever the input."""
    for value in values:
        try:
            decode_runtime_event(value)
        except RuntimeEventSchemaError as exc:
            assert exc.message == "Invalid RuntimeEvent schema"
        try:
            encode_runtime_event(value)
        except RuntimeEventSchemaError:
            pass
        except RuntimeEventNotSerializableError as exc:
            assert exc.message == "RuntimeEvent is not losslessly serializable"


# ---------------------------------------------------------------------------------------
# stable_json and JSON text (spec 10 §2.3, §2.4)
# ---------------------------------------------------------------------------------------


@MANY
@given(json_values())
def test_stable_json_is_a_fixpoint_of_parse(value: Any) -> None:
    """Spec 10 §2.3/§2.4: stable_json(parse_json(stable_json(v))) == stable_json(v) — numbers
    are doubles (big integers print as the double they become), lone surrogates are escaped
    and come back, -0 prints ``0`` where allowed; a value with no JSON text (an integer
    beyond the double range) is refused, never printed."""
    try:
        text = stable_json(value, negative_zero="zero")
    except NotStrictJSONError:
        return
    assert stable_json(parse_json(text), negative_zero="zero") == text


# ---------------------------------------------------------------------------------------
# canonicalArgsHash (spec 10 §2.6, §7.1)
# ---------------------------------------------------------------------------------------


@MANY
@given(st.one_of(tool_calls(), st.tuples(st.sampled_from(("X", "Write", "ü")), json_values())), st.randoms(use_true_random=False))
def test_args_hash_ignores_key_order(call: tuple[str, Any], rng: random.Random) -> None:
    """Spec 10 §2.6 step 3 / §7.1 #1: the hash orders object keys itself, so any
    permutation of any object's keys hashes identically (or is refused identically)."""
    name, args = call
    permuted = _shuffled(args, rng)
    try:
        expected = canonical_args_hash(name, args)
    except ArgsHashError:
        with pytest.raises(ArgsHashError):
            canonical_args_hash(name, permuted)
        return
    assert expected.startswith("sha256:") and len(expected) == 71
    assert canonical_args_hash(name, permuted) == expected


@SOME
@given(tool_calls())
def test_args_hash_same_for_frozen_args(call: tuple[str, Any]) -> None:
    """Spec 10 §7.1 #6: any mapping with the same entries (here a deep-frozen copy, the form
    decoded events carry) hashes like the plain dict."""
    name, args = call
    assert canonical_args_hash(name, freeze(args)) == canonical_args_hash(name, args)


# ---------------------------------------------------------------------------------------
# Torn JSON lines (spec 20 §1.8)
# ---------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(torn_jsonl())
def test_torn_last_line_is_refused_not_truncated(torn: TornJsonl) -> None:
    """Spec 20 §1.8: a torn/undecodable row is storage corruption, not a committed prefix.
    The torn line is never JSON, and ``maka-ref plan`` refuses the file (exit 2,
    ``invalid_json`` at the torn line) instead of planning over the shorter ledger; the
    intact lines alone plan fine."""
    last = torn.data.rsplit(b"\n", 1)[-1]
    with pytest.raises(InvalidJSONTextError):
        parse_json(last.decode("utf-8", errors="replace"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ledger.jsonl")
        with open(path, "wb") as fh:
            fh.write(torn.data)
        out, err = io.StringIO(), io.StringIO()
        assert run(["plan", path], stdout=out, stderr=err) == 2
        error = json.loads(out.getvalue())["error"]
        assert error["code"] == "invalid_json"
        assert error["line"] == torn.torn_line_number
        intact = os.path.join(tmp, "intact.jsonl")
        with open(intact, "wb") as fh:
            fh.write(torn.data[: len(torn.data) - len(last)])
        out = io.StringIO()
        assert run(["plan", intact], stdout=out, stderr=io.StringIO()) == 0
        assert json.loads(out.getvalue())["sourceRuntimeEventHighWater"] == torn.intact_lines
