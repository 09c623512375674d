"""Resolver equivalence (spec 10 §6, spec 20 §1): the implementation's resolution, scan and
Phase 0 plan equal the reference runtime's, on every vector ledger and on ledgers generated
with the foundation's Hypothesis strategies (healthy, crash-cut, recovered, corrupted, and the
edge shapes of real stores: colliding identities, moved responses, drifting fields).

The reference is ``maka_ref`` in this process; both sides see the same JSON text (numbers
with double semantics), so a big integer cannot make them disagree by accident. A mismatch
is reported as the first differing JSON path; for generated ledgers Hypothesis shrinks the
ledger first, so the report shows the smallest ledger that still disagrees. Mismatches at
different paths (array indices aside) are different failures: Hypothesis shrinks each on its
own and the clause reports every one, with its example and its first difference.

Robustness (LEDGER-ROBUST-*): outside the contract's well-typed domain (wrong JSON types, a
recovery fact without payload, garbage) any protocol-valid answer is acceptable, so those
answers are never compared; the implementation must only answer, within its timeout.
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


#: Per kind of mismatch (:func:`_kind`), a :class:`ClauseMismatch` subclass of its own.
_MISMATCH_TYPES: dict[str, type[ClauseMismatch]] = {}
#: How much of one failure's example the message shows (the whole example is in the evidence).
_EXAMPLE_CHARS = 900
_VALUE_CHARS = 200


def _kind(mismatch: ClauseMismatch) -> str:
    """What makes two mismatches the same failure: the first differing path with array
    indices normalised, else the error code or verdict, else the message's first line."""
    import re

    if mismatch.diff is not None:
        return "path " + re.sub(r"\[\d+\]", "[*]", str(mismatch.diff.get("path", "$")))
    error = mismatch.evidence.get("error")
    if isinstance(error, dict) and error.get("code") is not None:
        return f"error {error.get('code')}"
    if mismatch.evidence.get("verdict") is not None:
        return f"verdict {mismatch.evidence['verdict']}"
    return "message " + mismatch.message.splitlines()[0] if mismatch.message else "message"


def _typed(mismatch: ClauseMismatch) -> ClauseMismatch:
    """``mismatch`` as an instance of its kind's own subclass: Hypothesis tells failures apart
    by exception type and line, so each kind is shrunk and reported on its own (raised from
    one line, plain mismatches would all count as one failure)."""
    kind = _kind(mismatch)
    cls = _MISMATCH_TYPES.get(kind)
    if cls is None:
        cls = _MISMATCH_TYPES[kind] = type(f"ClauseMismatch_{len(_MISMATCH_TYPES) + 1}", (ClauseMismatch,),
                                           {"__doc__": kind})
    typed = cls(mismatch.message, mismatch.diff, mismatch.evidence)
    typed.__notes__ = list(getattr(mismatch, "__notes__", []))
    return typed


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _example_of(mismatch: ClauseMismatch) -> Any:
    """The failing example: the input in the evidence, else Hypothesis's falsifying-example note."""
    for key in ("events", "event"):
        if key in mismatch.evidence:
            return {key: mismatch.evidence[key]}
    notes = [n for n in getattr(mismatch, "__notes__", []) if str(n).startswith("Falsifying example")]
    return notes[0] if notes else None


def _several(label: str, group: BaseException, failures: list[ClauseMismatch],
             others: list[BaseException]) -> ClauseMismatch:
    """One clause failure for Hypothesis's several distinct ones: each failure's message,
    first difference and example in the message (bounded), everything in the evidence; any
    other exception of the group (a harness problem) is named after them, never dropped."""
    flaky = " (flaky: the implementation answered the same input differently)" if \
        type(group).__name__ == "FlakyFailure" else ""
    lines = [f"{label}: Hypothesis found {len(failures) + len(others)} distinct failures{flaky}:"]
    evidence: list[dict[str, Any]] = []
    for index, failure in enumerate(failures, 1):
        example = _example_of(failure)
        lines.append(f"[{index}] {failure.message}")
        if failure.diff is not None:
            lines.append(f"    first difference at {failure.diff.get('path')}: expected "
                         f"{_short(failure.diff.get('expected'), _VALUE_CHARS)}, actual "
                         f"{_short(failure.diff.get('actual'), _VALUE_CHARS)}")
        if example is not None:
            lines.append(f"    example: {_short(example, _EXAMPLE_CHARS)}")
        evidence.append({"message": failure.message, "diff": failure.diff, "example": example,
                         "evidence": {k: v for k, v in failure.evidence.items() if k not in ("events", "event")}})
    for index, other in enumerate(others, len(failures) + 1):
        lines.append(f"[{index}] {type(other).__name__}: {_short(str(other), _EXAMPLE_CHARS)}")
        evidence.append({"message": f"{type(other).__name__}: {other}", "diff": None, "example": None, "evidence": {}})
    return ClauseMismatch("\n".join(lines), diff=failures[0].diff if failures else None,
                          evidence={"failures": evidence})


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside Hypothesis's exception groups (``exc`` itself when it is none)."""
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return [exc]
    return [leaf for e in inner for leaf in _leaves(e)]


def _property(strategy: Callable[[], Any], check: Callable[[Any], None], label: str) -> None:
    """Run ``check`` on ``EXAMPLES`` derandomised examples of ``strategy``; Hypothesis shrinks
    a failing example before the :class:`ClauseMismatch` of the smallest one propagates. When
    mismatches of several kinds (:func:`_kind`) occur, each is shrunk on its own and one
    :class:`ClauseMismatch` reports them all (:func:`_several`)."""
    from hypothesis import HealthCheck, Phase, given, settings

    # Without Hypothesis's "explain" phase: it re-runs a shrunk failure hundreds of times to
    # annotate which arguments could vary, which the report never shows (3/4 of a failing
    # clause's time, against a process over the wire).
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False, report_multiple_bugs=True,
              phases=tuple(p for p in Phase if p is not Phase.explain))
    @given(strategy())
    def prop(example: Any) -> None:
        try:
            check(example)
            return
        except ClauseMismatch as exc:
            failure = _typed(exc)
        raise failure  # outside the handler: no chained context, so one origin per kind

    try:
        prop()
    except ClauseMismatch:
        raise
    except Exception as exc:  # several failures (an exception group), or e.g. a flaky implementation
        leaves = _leaves(exc)
        failures = [e for e in leaves if isinstance(e, ClauseMismatch)]
        others = [e for e in leaves if not isinstance(e, ClauseMismatch)]
        if len(failures) + len(others) > 1:
            raise _several(label, exc, failures, others) from None
        if failures and type(exc).__name__ != "FlakyFailure":
            raise failures[0] from None
        raise ClauseMismatch(f"{label}: {type(exc).__name__}: {exc}",
                             diff=failures[0].diff if failures else None,
                             evidence=failures[0].evidence if failures else None) from None


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


def _edge() -> Any:
    from maka_ref.testing.strategies import edge_ledgers

    return edge_ledgers()


@clause("LEDGER-EQUIV-011", spec="10 §4.3; 10 §6", capability="ledger.resolver",
        title="resolution equals the reference's on edge ledgers (colliding call ids, moved responses and "
              "dispatches, identity drift, empty tool names, duplicate operations, missing keys)")
def test_resolve_equals_reference_edge(maka: Any) -> None:
    _generated(maka, "resolve", _edge, "an edge ledger")


@clause("LEDGER-EQUIV-012", spec="20 §1.1; 20 §1.3; 20 §1.7", capability="ledger.plan",
        title="the Phase 0 plan equals the reference's on edge ledgers")
def test_plan_equals_reference_edge(maka: Any) -> None:
    _generated(maka, "plan", _edge, "an edge ledger")


@clause("LEDGER-EQUIV-013", spec="10 §4.3", capability="ledger.resolver",
        title="the tool-ledger scan equals the reference's on edge ledgers")
def test_scan_equals_reference_edge(maka: Any) -> None:
    _generated(maka, "scan", _edge, "an edge ledger")


# ---------------------------------------------------------------------------------------
# Robustness outside the well-typed domain: an answer, never compared
# ---------------------------------------------------------------------------------------


def _ill_typed_events() -> Any:
    """Ill-typed edge ledgers and garbage event lists (reduced to JSON: NaN and opaque objects
    become ``null``, as the self-fuzzer does), as lists of events the protocol can carry."""
    from hypothesis import strategies as st

    from conformance._fuzz._selffuzz.targets import jsonify
    from maka_ref.testing.strategies import edge_ledgers, garbage_event_lists

    return st.one_of(edge_ledgers(ill_typed=True).map(lambda l: l.events),
                     garbage_event_lists().map(jsonify)).filter(_sendable).filter(_utf8)


def _utf8(value: Any) -> bool:
    """A request line is UTF-8 (protocol §2.1) and the harness's client writes strings
    unescaped, so a lone surrogate (which garbage holds) cannot be sent: such lists are left out."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _answers(maka: Any, op: str, events: Any) -> None:
    """Protocol §2.2, §4.1: ``ok: true`` with a result of the operation's schema, or ``ok: false``
    with a non-empty code; the session already fails a hang, a crash or an invalid line."""
    from conformance.protocol import validate_response

    events = _wire(events)
    reply = maka.call(f"ledger.{op}", {"events": events})
    if reply.ok:
        errors = validate_response(f"ledger.{op}", {"id": 0, "ok": True, "result": reply.result})
        if errors:
            raise ClauseMismatch(f"ledger.{op} answered a result outside its schema: {errors[0]}",
                                 evidence={"events": events, "schemaErrors": errors[:5]})
        return
    code = (reply.error or {}).get("code")
    if not isinstance(code, str) or not code:
        raise ClauseMismatch(f"ledger.{op} answered ok: false without a code", evidence={"events": events,
                                                                                     "error": reply.error})


@clause("LEDGER-ROBUST-001", spec="10 §6; 10 §4.3", capability="ledger.resolver",
        title="resolve and scan of ill-typed edge ledgers and garbage event lists get a protocol-valid answer "
              "(a schema-valid result or an error code) within the timeout; never compared")
def test_resolve_and_scan_answer_ill_typed_ledgers(maka: Any) -> None:
    def check(events: Any) -> None:
        _answers(maka, "resolve", events)
        _answers(maka, "scan", events)

    _property(_ill_typed_events, check, "an ill-typed ledger")


@clause("LEDGER-ROBUST-002", spec="20 §1", capability="ledger.plan",
        title="the Phase 0 plan of ill-typed edge ledgers and garbage event lists gets a protocol-valid answer "
              "within the timeout; never compared")
def test_plan_answers_ill_typed_ledgers(maka: Any) -> None:
    _property(_ill_typed_events, lambda events: _answers(maka, "plan", events), "an ill-typed ledger")


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
