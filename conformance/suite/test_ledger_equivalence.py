"""Resolver equivalence (spec 10 §6, spec 20 §1): the implementation's resolution, scan and
Phase 0 plan equal the reference runtime's, on every vector ledger and on ledgers generated
with the foundation's Hypothesis strategies (healthy, crash-cut, recovered and corrupted).

The reference is ``maka_ref`` in this process; both sides see the same JSON text (numbers
with double semantics), so a big integer cannot make them disagree by accident. A mismatch
is reported as the first differing JSON path; for generated ledgers Hypothesis shrinks the
ledger first, so the report shows the smallest ledger that still disagrees.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.vectors import iter_vectors
from maka_ref.testing.contract import answer_form

#: Examples per generated-ledger clause; enough to meet every corruption and recovery shape
#: of the strategies at least once in a derandomised run, small enough for a 5-minute run.
EXAMPLES = 60


def _wire(value: Any) -> Any:
    """``value`` as the implementation receives it: JSON text parsed with double semantics."""
    from maka_ref import parse_json, thaw

    return thaw(parse_json(json.dumps(value, ensure_ascii=True)))


def _plain(value: Any) -> Any:
    from maka_ref import thaw

    return json.loads(json.dumps(thaw(value)))


def _reference(op: str, events: Any) -> Any:
    from maka_ref import build_resume_plan, resolve_recovery, scan_tool_ledger

    if op == "resolve":
        return _plain(resolve_recovery(events).to_json())
    if op == "plan":
        return _plain(build_resume_plan(events).to_json())
    return _plain(scan_tool_ledger(events).to_json())


def _compare(maka: Any, op: str, events: Any, label: str) -> None:
    events = _wire(events)
    reply = maka.call(f"ledger.{op}", {"events": events})
    actual = expect_ok(reply, f"ledger.{op}")
    # Spec 20 §1.1/§1.3 fix a plan's codes and order, not its wording (maka_ref.testing.contract).
    expect_equal(answer_form(f"ledger.{op}", _reference(op, events)), answer_form(f"ledger.{op}", actual),
                 what=f"{op} of {label}", evidence={"ledger": label, "events": events})


def _vector_ledgers() -> list[tuple[str, Any]]:
    return [(v.id, v.input["events"]) for v in iter_vectors()
            if isinstance(v.input.get("events"), list) and v.operation in ("resolve", "plan", "scan", "interpret", "code_mode_commits")]


def _every_vector(maka: Any, op: str) -> None:
    for label, events in _vector_ledgers():
        _compare(maka, op, events, f"vector {label}")


@clause("LEDGER-EQUIV-001", spec="10 §6.1", capability="ledger.resolver",
        title="the resolution of every vector ledger equals the reference's, field for field")
def test_resolve_equals_reference_on_vectors(maka: Any) -> None:
    _every_vector(maka, "resolve")


@clause("LEDGER-EQUIV-002", spec="20 §1.1", capability="ledger.plan",
        title="the Phase 0 plan of every vector ledger equals the reference's, field for field")
def test_plan_equals_reference_on_vectors(maka: Any) -> None:
    _every_vector(maka, "plan")


@clause("LEDGER-EQUIV-003", spec="10 §4.3", capability="ledger.resolver",
        title="the tool-ledger scan of every vector ledger equals the reference's")
def test_scan_equals_reference_on_vectors(maka: Any) -> None:
    _every_vector(maka, "scan")


def _property(strategy: Callable[[], Any], check: Callable[[Any], None], label: str) -> None:
    """Run ``check`` on ``EXAMPLES`` derandomised examples of ``strategy``; Hypothesis shrinks
    a failing example before the :class:`ClauseMismatch` of the smallest one propagates."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy())
    def prop(example: Any) -> None:
        check(example)

    try:
        prop()
    except ClauseMismatch:
        raise
    except Exception as exc:  # e.g. Hypothesis reporting a flaky implementation
        raise ClauseMismatch(f"{label}: {type(exc).__name__}: {exc}") from None


def _generated(maka: Any, op: str, strategy: Callable[[], Any], label: str) -> None:
    _property(strategy, lambda ledger: _compare(maka, op, ledger.events, label), label)


def _healthy() -> Any:
    from maka_ref.testing.strategies import ledgers

    return ledgers()


def _corrupt() -> Any:
    from maka_ref.testing.strategies import corrupt_ledgers

    return corrupt_ledgers()


@clause("LEDGER-EQUIV-004", spec="10 §6.1; 10 §7", capability="ledger.resolver",
        title="resolution equals the reference's on generated healthy, crash-cut and recovered ledgers")
def test_resolve_equals_reference_generated(maka: Any) -> None:
    _generated(maka, "resolve", _healthy, "a generated ledger")


@clause("LEDGER-EQUIV-005", spec="20 §1.1; 20 §8", capability="ledger.plan",
        title="the Phase 0 plan equals the reference's on generated ledgers")
def test_plan_equals_reference_generated(maka: Any) -> None:
    _generated(maka, "plan", _healthy, "a generated ledger")


@clause("LEDGER-EQUIV-006", spec="10 §4.3; 10 §6.2", capability="ledger.resolver",
        title="resolution equals the reference's on generated corrupted ledgers (every named corruption)")
def test_resolve_equals_reference_corrupt(maka: Any) -> None:
    _generated(maka, "resolve", _corrupt, "a corrupted ledger")


@clause("LEDGER-EQUIV-007", spec="20 §1.2", capability="ledger.plan",
        title="the Phase 0 plan equals the reference's on generated corrupted ledgers")
def test_plan_equals_reference_corrupt(maka: Any) -> None:
    _generated(maka, "plan", _corrupt, "a corrupted ledger")


# ---------------------------------------------------------------------------------------
# Codec equivalence: decode and encode of generated events, healthy and mutated
# ---------------------------------------------------------------------------------------


def _codec_reference(op: str, event: Any) -> Any:
    """The reference's answer in the protocol's form: the result, or ``{"error": message}``
    (spec 10 §2: the messages of decode and encode are normative, their codes are not)."""
    from maka_ref import MakaRefError, decode_runtime_event, encode_runtime_event

    try:
        if op == "decode":
            return {"event": _plain(decode_runtime_event(event))}
        return {"canonicalJson": encode_runtime_event(event).canonical_json}
    except MakaRefError as exc:
        return {"error": getattr(exc, "message", str(exc))}


def _compare_codec(maka: Any, op: str, event: Any, label: str) -> None:
    event = _wire(event)
    reply = maka.call(f"ledger.{op}", {"event": event})
    actual = reply.result if reply.ok else {"error": (reply.error or {}).get("message")}
    expect_equal(_codec_reference(op, event), actual, what=f"{op} of {label}", evidence={"event": event})


def _mutated_events() -> Any:
    """A healthy event with one field replaced by an arbitrary JSON value, or removed: the
    closed schema must refuse (or normalise) it exactly as the reference does."""
    from hypothesis import strategies as st

    from maka_ref.testing.strategies import json_values, runtime_events

    def mutate(pair: tuple[dict[str, Any], Any, bool]) -> dict[str, Any]:
        event, value, drop = pair
        out = dict(event)
        keys = sorted(out)
        key = keys[len(repr(value)) % len(keys)]
        if drop:
            out.pop(key)
        else:
            out[key] = value
        return out

    return st.tuples(runtime_events(), json_values(), st.booleans()).map(mutate).filter(_sendable)


def _sendable(value: Any) -> bool:
    """JSON has no NaN or infinity: a value that is (or, parsed as doubles, becomes) one cannot
    reach an implementation through the protocol."""
    try:
        json.dumps(_wire(value), allow_nan=False)
    except ValueError:
        return False
    return True


def _codec_generated(maka: Any, op: str, strategy: Callable[[], Any], label: str) -> None:
    _property(strategy, lambda event: _compare_codec(maka, op, event, label), label)


def _healthy_events() -> Any:
    from maka_ref.testing.strategies import runtime_events

    return runtime_events()


@clause("LEDGER-EQUIV-008", spec="10 §2.1; 10 §1", capability="ledger.codec",
        title="decode of generated healthy events equals the reference's (normalised event, field for field)")
def test_decode_equals_reference_generated(maka: Any) -> None:
    _codec_generated(maka, "decode", _healthy_events, "a generated event")


@clause("LEDGER-EQUIV-009", spec="10 §2.1; 10 §1", capability="ledger.codec",
        title="decode of mutated events (a field replaced or removed) is refused or normalised exactly as by the reference, with the same message")
def test_decode_equals_reference_mutated(maka: Any) -> None:
    _codec_generated(maka, "decode", _mutated_events, "a mutated event")


@clause("LEDGER-EQUIV-010", spec="10 §2.2; 10 §2.3", capability="ledger.codec",
        title="the canonical encoding of generated healthy and mutated events equals the reference's byte for byte")
def test_encode_equals_reference_generated(maka: Any) -> None:
    from hypothesis import strategies as st

    _codec_generated(maka, "encode", lambda: st.one_of(_healthy_events(), _mutated_events()), "a generated event")
