"""The self-fuzz targets: what is fed to each entry point of the reference, and what must hold.

Why these four (issue 7 item 4, ``docs/fuzzing.md`` "Fuzzing the reference itself"): they are
the places where bytes or JSON from outside enter ``maka_ref``. Each target is a Hypothesis
strategy and a check; the check calls the reference and raises :class:`Finding` when

* an exception escapes that is not the entry point's *stable* error (a
  :class:`~maka_ref.MakaRefError` for the codec, a ``StoreError`` for the store's read path,
  nothing at all for the resolver, the planners and the adapter's ``respond``), or its ``code``
  is not a stable snake_case code (the base classes' defaults ``maka_ref_error`` /
  ``store_error`` count as unstable: nobody chose them);
* an input was mutated (resolver, planners), or a file changed on a read (store);
* the adapter answered with an envelope that does not validate, or with ``internal_error``.

Store images and the adapter's workspaces live under a root the runner passes in.
"""

from __future__ import annotations

import copy
import math
import re
import traceback
from typing import Any, Callable, Mapping

from hypothesis import strategies as st

from conformance._fuzz._search import Disagreement
from maka_ref.testing.strategies import corrupt_ledgers, garbage_event_lists, json_values, ledgers

__all__ = ["Finding", "call", "codec_inputs", "check_codec", "check_ledger_lists", "jsonify", "ledger_lists",
           "stable_code", "to_wire"]

_CODE = re.compile(r"^[a-z][a-z0-9_]*$")
_UNSTABLE = frozenset({"maka_ref_error", "store_error"})


class Finding(Disagreement):
    """The reference broke its promise on one input (a :class:`Disagreement` for the search)."""

    def __init__(self, target: str, check: str, input_: Any, message: str, exc: BaseException | None = None) -> None:
        Exception.__init__(self, f"{target}/{check}: {message}")
        self.prop, self.op, self.case, self.input = target, check, target, input_
        self.message = message
        self.exc_type = f"{type(exc).__module__}.{type(exc).__qualname__}" if exc is not None else None
        self.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)) if exc else None
        self.expected, self.actual, self.diff = None, None, {"path": check, "expected": None, "actual": message}
        self.size = (len(repr(input_)), 0)
        self.reference_failed, self.step = True, None


def stable_code(code: Any) -> bool:
    return isinstance(code, str) and bool(_CODE.match(code)) and code not in _UNSTABLE


def call(target: str, check: str, input_: Any, fn: Callable[[], Any], allowed: tuple[type, ...] = ()) -> Any:
    """``fn()``; an allowed exception (with a stable code) is returned, anything else is a finding."""
    try:
        return fn()
    except allowed as exc:
        code = getattr(exc, "code", None)
        if not stable_code(code):
            raise Finding(target, check, input_, f"{type(exc).__name__} with unstable code {code!r}: {exc}", exc) from exc
        return exc
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - the point: nothing else may escape
        raise Finding(target, check, input_, f"raised {type(exc).__name__}: {exc}", exc) from exc


def jsonify(value: Any) -> Any:
    """A JSON copy of ``value``: mappings/sequences rebuilt, non-JSON leaves (NaN, opaque objects) → null."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else repr(k): jsonify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonify(v) for v in value]
    return None


def to_wire(value: Any) -> Any:
    """Bytes as ``{"base64": …}`` (bundles are JSON)."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return value


# --------------------------------------------------------------------------- shared edits

@st.composite
def edited_event(draw: Callable[[Any], Any], event: Mapping[str, Any]) -> Any:
    """``event`` with one field replaced by arbitrary JSON, dropped, or one nested value replaced."""
    if not isinstance(event, Mapping):  # an earlier edit already made it garbage
        return draw(json_values(max_leaves=4))
    event = copy.deepcopy(dict(event))
    keys = sorted(event)
    how = draw(st.sampled_from(("replace", "drop", "nested", "add")))
    if how == "add" or not keys:
        event[draw(st.text(max_size=8))] = draw(json_values(max_leaves=4))
        return event
    key = draw(st.sampled_from(keys))
    if how == "drop":
        del event[key]
    elif how == "nested" and isinstance(event[key], dict) and event[key]:
        inner = draw(st.sampled_from(sorted(event[key])))
        event[key][inner] = draw(json_values(max_leaves=4))
    else:
        event[key] = draw(json_values(max_leaves=4))
    return event


@st.composite
def edited_ledgers(draw: Callable[[Any], Any]) -> list[Any]:
    """A healthy ledger with one to three edits: a field, a dropped / duplicated / swapped event."""
    events = [dict(e) for e in draw(ledgers(max_turns=2)).events]
    for _ in range(draw(st.integers(1, 3))):
        if not events:
            break
        i = draw(st.integers(0, len(events) - 1))
        how = draw(st.sampled_from(("field", "field", "drop", "dup", "swap", "garbage")))
        if how == "field":
            events[i] = draw(edited_event(events[i]))
        elif how == "drop":
            del events[i]
        elif how == "dup":
            events.insert(draw(st.integers(0, len(events))), copy.deepcopy(events[i]))
        elif how == "swap":
            j = draw(st.integers(0, len(events) - 1))
            events[i], events[j] = events[j], events[i]
        else:
            events[i] = draw(json_values(max_leaves=4))
    return events


# --------------------------------------------------------------------------- 1. codec

@st.composite
def _mutated_json_bytes(draw: Callable[[Any], Any]) -> bytes:
    import json

    event = draw(st.one_of(ledgers(max_turns=1, min_events=1).map(lambda l: l.events[-1]), json_values(max_leaves=6)))
    data = bytearray(json.dumps(event, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 3))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(("flip", "delete", "insert", "cut")))
        if how == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "delete":
            del data[i]
        elif how == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[i:]
    return bytes(data)


@st.composite
def _edited_events(draw: Callable[[Any], Any]) -> Any:
    events = draw(ledgers(max_turns=1, min_events=1)).events
    return draw(edited_event(events[draw(st.integers(0, len(events) - 1))]))


def codec_inputs() -> st.SearchStrategy[Any]:
    """JSON values, bytes (random or a mutated JSON text), and healthy events with one field edited."""
    return st.one_of(json_values(), st.binary(max_size=160), _mutated_json_bytes(), _edited_events())


def check_codec(value: Any) -> None:
    from maka_ref import MakaRefError, decode_runtime_event, encode_runtime_event, parse_json

    original = value
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("utf-8", "surrogateescape")  # lone surrogates: still a str to parse
        value = call("codec", "parse_json", original, lambda: parse_json(text), (MakaRefError,))
        if isinstance(value, MakaRefError):
            return
    snapshot = copy.deepcopy(value)
    decoded = call("codec", "decode_runtime_event", original, lambda: decode_runtime_event(value), (MakaRefError,))
    encoded = call("codec", "encode_runtime_event", original, lambda: encode_runtime_event(value), (MakaRefError,))
    if not isinstance(decoded, MakaRefError):
        call("codec", "encode(decode(x))", original, lambda: encode_runtime_event(decoded), (MakaRefError,))
    if not isinstance(encoded, MakaRefError):
        call("codec", "decode(parse(encode(x)))", original,
             lambda: decode_runtime_event(parse_json(encoded.canonical_json)), (MakaRefError,))
    if value != snapshot:
        raise Finding("codec", "no-mutation", original, "decode/encode mutated their input")


# --------------------------------------------------------------------------- 2. resolver and planners

def ledger_lists() -> st.SearchStrategy[tuple[list[Any], Any, list[int]]]:
    """(events, expectedRuntimeEventHighWater, segment cut points)."""
    events = st.one_of(garbage_event_lists().map(jsonify), st.lists(json_values(max_leaves=6), max_size=6),
                       corrupt_ledgers().map(lambda c: [dict(e) for e in c.events]), edited_ledgers())
    high_water = st.one_of(st.none(), st.integers(-2, 40), json_values(max_leaves=2))
    return st.tuples(events, high_water, st.lists(st.integers(0, 40), max_size=2))


def check_ledger_lists(case: tuple[list[Any], Any, list[int]]) -> None:
    from maka_ref import PrefixError, build_resume_plan, interpret_operation, resolve_recovery, scan_tool_ledger
    from maka_ref._plan.prefix.immutable import build_immutable_prefix
    from maka_ref._plan.prefix.replay import build_composite_replay_plan, build_segment_replay

    events, high_water, cuts = case
    snapshot = copy.deepcopy(case)
    t = "ledger"
    scan = call(t, "scan_tool_ledger", case, lambda: scan_tool_ledger(events))
    call(t, "scan_tool_ledger.to_json", case, scan.to_json)
    order = {e["id"]: i for i, e in enumerate(events) if isinstance(e, Mapping) and isinstance(e.get("id"), str)}
    for operation in scan.operations:
        call(t, "interpret_operation", case, lambda: interpret_operation(operation, order).to_json())
    call(t, "resolve_recovery", case, lambda: resolve_recovery(events).to_json())
    call(t, "build_resume_plan", case, lambda: build_resume_plan(events, high_water).to_json())

    def prefix(part: list[Any], hw: Any = None) -> Any:
        rows = [(i + 1, e) for i, e in enumerate(part)]
        return call(t, "build_immutable_prefix", case, lambda: build_immutable_prefix(rows, high_water=hw), (PrefixError,))

    whole = prefix(events, high_water if isinstance(high_water, int) and not isinstance(high_water, bool) else None)
    if not isinstance(whole, PrefixError):
        call(t, "build_segment_replay", case, lambda: build_segment_replay(whole).to_json())
    call(t, "build_segment_replay(garbage)", case, lambda: build_segment_replay(events))
    bounds = sorted({min(c, len(events)) for c in cuts} | {0, len(events)})
    prefixes = [prefix(events[a:b]) for a, b in zip(bounds, bounds[1:])] or [prefix([])]
    if not any(isinstance(p, PrefixError) for p in prefixes):
        call(t, "build_composite_replay_plan", case, lambda: build_composite_replay_plan(prefixes).to_json())
    if case != snapshot:
        raise Finding(t, "no-mutation", snapshot, "the resolver or a planner mutated its input")
