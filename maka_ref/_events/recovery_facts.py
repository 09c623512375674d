"""The ``actions.toolRecovery`` fact envelope, validated exactly as spec 10 §5.1.

Why a public module: the decoder validates recovery facts at decode time (§2.1), so a decoded
event can never carry a malformed recovery payload; but the bundle validator also meets
*un-decoded* events (§8 item 22: a never-decoded payload with duplicate evidence must become
``decision_fact_invalid``), so it calls :func:`decode_tool_recovery` directly. Therefore this
function accepts any Python value and raises nothing but :class:`RuntimeEventSchemaError`.

Envelope: exactly ``{kind, version, payload}``, ``version`` exactly the number 1.

* ``maka.tool.reconcile_result`` payload: exactly ``{protocol: "tool_reconcile_v1",
  operationId: non-empty, observation: one of four, observationSchema: "state_identity_v1",
  observationDigest: sha256-digest}``.
* ``maka.tool.recovery_decision`` payload: ``protocol: "tool_recovery_v1"``, ``operationId``
  non-empty, ``disposition`` ``completed`` (exact keys incl. ``outcomeEventId``, reason
  ``reconcile_matches_expected_state``) or ``parked`` (exact keys, no ``outcomeEventId``, a
  park reason); ``evidenceEventIds`` a non-empty array of non-empty, pairwise-distinct
  strings.

Depends on: ``_events.checkers`` (checkers), ``_events.constants``.
"""

from __future__ import annotations

from typing import Any

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._errors import RuntimeEventSchemaError
from maka_ref._events.checkers import (
    Checker,
    check_digest,
    check_nonempty_str,
    fail,
    frozen_dict,
    frozen_list,
    is_sha256_digest,
    literal,
    number_literal,
    object_of,
    one_of,
)
from maka_ref._events.constants import (
    COMPLETED_REASON_CODE,
    DISPOSITION_COMPLETED,
    DISPOSITION_PARKED,
    DISPOSITIONS,
    OBSERVATIONS,
    PARK_REASON_CODES,
    RECONCILE_RESULT_KIND,
    STATE_IDENTITY_SCHEMA,
    TOOL_RECONCILE_PROTOCOL,
    TOOL_RECOVERY_KINDS,
    TOOL_RECOVERY_PROTOCOL,
    TOOL_RECOVERY_VERSION,
)

__all__ = ["decode_tool_recovery", "is_sha256_digest"]

#: Default location of the envelope inside a RuntimeEvent, used in ``detail`` paths.
TOOL_RECOVERY_PATH = "$.actions.toolRecovery"


def _evidence_ids(value: Any, path: str) -> FrozenList:
    if not issubclass(type(value), list):
        fail(path, "must be an array")
    items = list(list.__iter__(value))
    if not items:
        fail(path, "must not be empty")
    seen: set[str] = set()
    for index, item in enumerate(items):
        check_nonempty_str(item, f"{path}[{index}]")
        if item in seen:
            fail(f"{path}[{index}]", f"duplicate evidence event id {item!r}")
        seen.add(item)
    return frozen_list(items)


_RECONCILE_PAYLOAD: dict[str, Checker] = {
    "protocol": literal(TOOL_RECONCILE_PROTOCOL),
    "operationId": check_nonempty_str,
    "observation": one_of(OBSERVATIONS),
    "observationSchema": literal(STATE_IDENTITY_SCHEMA),
    "observationDigest": check_digest,
}
_DECISION_COMMON: dict[str, Checker] = {
    "protocol": literal(TOOL_RECOVERY_PROTOCOL),
    "operationId": check_nonempty_str,
    "disposition": one_of(DISPOSITIONS),
    "evidenceEventIds": _evidence_ids,
}
_COMPLETED_DECISION: dict[str, Checker] = {
    **_DECISION_COMMON,
    "reasonCode": literal(COMPLETED_REASON_CODE),
    "outcomeEventId": check_nonempty_str,
}
_PARKED_DECISION: dict[str, Checker] = {**_DECISION_COMMON, "reasonCode": one_of(PARK_REASON_CODES)}
_NO_KEYS: dict[str, Checker] = {}


def _payload_any(value: Any, path: str) -> Any:
    # Placeholder for the envelope walk: the payload is validated once ``kind`` is known.
    return value


_ENVELOPE: dict[str, Checker] = {
    "kind": one_of(TOOL_RECOVERY_KINDS),
    "version": number_literal(TOOL_RECOVERY_VERSION),
    "payload": _payload_any,
}


def _decision_payload(value: Any, path: str) -> FrozenDict:
    if not issubclass(type(value), dict):
        fail(path, "must be a JSON object")
    disposition = dict.get(value, "disposition")
    if type(disposition) is str and disposition == DISPOSITION_COMPLETED:
        return object_of(value, path, _COMPLETED_DECISION, _NO_KEYS)
    if type(disposition) is str and disposition == DISPOSITION_PARKED:
        if dict.__contains__(value, "outcomeEventId"):
            fail(f"{path}.outcomeEventId", "a parked decision must not name an outcome event")
        return object_of(value, path, _PARKED_DECISION, _NO_KEYS)
    # Unknown or missing disposition: let the common table report the first problem
    # precisely (a missing key, a wrong protocol...), else report the disposition itself.
    object_of(value, path, _DECISION_COMMON, _NO_KEYS, extra=_payload_any)
    fail(f"{path}.disposition", "must be one of completed, parked")


def decode_tool_recovery(value: Any, path: str = TOOL_RECOVERY_PATH) -> FrozenDict:
    """Validate an ``actions.toolRecovery`` value and return it deep-frozen.

    Accepts any input; raises only :class:`RuntimeEventSchemaError` (``detail`` = where).
    """
    try:
        envelope = object_of(value, path, _ENVELOPE, _NO_KEYS, build=dict)
        payload_path = f"{path}.payload"
        if envelope["kind"] == RECONCILE_RESULT_KIND:
            payload = object_of(envelope["payload"], payload_path, _RECONCILE_PAYLOAD, _NO_KEYS)
        else:  # RECOVERY_DECISION_KIND: ``one_of`` admitted nothing else
            payload = _decision_payload(envelope["payload"], payload_path)
    except RuntimeEventSchemaError:
        raise
    except Exception as exc:  # defensive: hostile objects must not leak other errors
        raise RuntimeEventSchemaError(detail=f"{path}: undecodable value ({type(exc).__name__})") from None
    envelope["payload"] = payload
    return frozen_dict(envelope)
