"""JSON values as both sides of the differential fuzzer see them, and how answers compare.

Why a module of its own: a disagreement is only worth a person's time if it is real. Both the
implementation and the in-process reference must receive *the same* JSON (numbers with IEEE
double semantics, as every implementation parses them, ``docs/protocol.md`` §4.1), and their
answers must go through the same decoding before they are compared; otherwise a big integer
or a ``-0`` would make them "disagree" by accident. Comparison then keeps only what the
protocol fixes: for an error its ``code`` (never the free-text message), for the store the
keys whose values the contract defines (``store.open``'s file names, for example, are the
implementation's own business), and for a plan its codes, not its wording
(:mod:`maka_ref.testing.contract`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

__all__ = ["comparable", "drop_optional", "first_difference", "parse_like_client", "sendable", "size_of", "wire"]


def wire(value: Any) -> Any:
    """``value`` as an implementation receives it: JSON text parsed with double semantics."""
    from maka_ref import parse_json, thaw

    return thaw(parse_json(json.dumps(value, ensure_ascii=True)))


def sendable(value: Any) -> bool:
    """JSON has no NaN or infinity: a value that (parsed as doubles) becomes one cannot be sent."""
    try:
        json.dumps(wire(value), allow_nan=False)
    except ValueError:
        return False
    return True


def parse_like_client(message: Any) -> Any:
    """``message`` written as the reference adapter writes it and read back as the protocol
    client reads it (:mod:`crashlab`): the in-process reference's answers take the same path
    as the implementation's."""
    from crashlab._client._messages import parse_object
    from maka_ref.adapter._wire import encode_message

    return parse_object(encode_message({"m": message}))["m"]


#: Per store operation: the result keys the contract fixes (``None``: the whole result).
_STORE_KEYS: dict[str, tuple[str, ...] | None] = {
    "store.open": (),
    "store.close": (),
    "store.append": ("created", "eventSeq"),
    "store.commit_tool_prepared": ("created", "runtimeEventSeq"),
    "store.commit_tool_outcome": ("created", "runtimeEventSeq"),
    "store.commit_recovery_bundle": None,
    "store.rebuild_projections": None,
    "store.read_events": None,
    "store.project": ("health", "runs", "unsettledOperations"),
}


def comparable(op: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """The part of one response that must equal the reference's.

    ``{"ok": true, "result"}`` (the result reduced to the contract's keys for ``store.*``),
    ``{"ok": false, "code"}``, or ``{"verdict", "message"}`` when the implementation did not
    answer at all (it crashed, hung or broke the protocol: crashlab's verdicts).
    """
    if "verdict" in response:
        return {"verdict": response["verdict"]}
    if response.get("ok") is True:
        from maka_ref.testing.contract import answer_form

        result = answer_form(op, response.get("result"))  # free wording (plan messages) set aside
        keys = _STORE_KEYS.get(op)
        if keys is not None and isinstance(result, Mapping):
            # An optional key (``eventSeq``) is compared only when both sides give it.
            result = {k: result[k] for k in keys if k in result}
        return {"ok": True, "result": result}
    error = response.get("error") if isinstance(response.get("error"), Mapping) else {}
    return {"ok": False, "code": error.get("code")}


def drop_optional(expected: dict[str, Any], actual: dict[str, Any], op: str) -> None:
    """Protocol §4.2: ``eventSeq`` of ``store.append`` is optional; compare it only when both have it."""
    if op == "store.append" and expected.get("ok") and actual.get("ok"):
        e, a = expected.get("result"), actual.get("result")
        if isinstance(e, dict) and isinstance(a, dict) and ("eventSeq" in e) != ("eventSeq" in a):
            e.pop("eventSeq", None)
            a.pop("eventSeq", None)


def first_difference(expected: Any, actual: Any) -> dict[str, Any] | None:
    """The first differing JSON path (:func:`conformance.reports.diff_json`), or ``None``."""
    from conformance.reports import diff_json

    return diff_json(expected, actual)


def size_of(value: Any) -> tuple[int, int]:
    """How big a failing input is, to keep the smallest seen: (items, JSON length)."""
    items = len(value) if isinstance(value, list) else 1
    return items, len(json.dumps(value, ensure_ascii=True, default=str))
