"""Key checks, JSON text and row decoding of the AgentRun operational store (spec 20 §5.3).

Why a module of its own: these small pure helpers (id pattern, ``JSON.stringify`` text,
fail-closed decoding of a stored header, the §5.2 ``event_corrupt`` placeholder, the store's
error builder) are shared by the store (:mod:`maka_ref._store.agent_runs.store`) and its schema
scope (:mod:`maka_ref._store.agent_runs.schema`), and keep the store module short.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import compact_json, parse_json
from maka_ref._errors import InvalidJSONTextError, NotStrictJSONError
from maka_ref._store.agent_runs.header import RunHeaderSchemaError, decode_run_header
from maka_ref._store.errors import StoreError

__all__ = ["RUN_ID_PATTERN"]

#: §5.3: ``sessionId`` and ``runId`` of a stored run.
RUN_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _error(code: str, message: str, detail: str | None = None) -> StoreError:
    return StoreError(message, code=code, detail=detail)


def _not_found(session_id: str, run_id: str) -> StoreError:
    return _error("ENOENT", f"AgentRun {session_id}/{run_id} not found")


def _check_id(name: str, value: Any) -> None:
    if type(value) is not str or RUN_ID_PATTERN.fullmatch(value) is None:
        raise _error(
            "invalid_agent_run_id",
            f"AgentRun {name} must match ^[A-Za-z0-9_-]{{1,128}}$",
            detail=f"{name}: {value!r}"[:200],
        )


def _check_ids(session_id: Any, run_id: Any) -> None:
    _check_id("sessionId", session_id)
    _check_id("runId", run_id)


def _json_text(value: Any) -> str:
    # JSON.stringify semantics: own key order, -0 written as 0.
    return compact_json(value, negative_zero="zero")


def _same_json(a: Any, b: Any) -> bool:
    try:
        return _json_text(a) == _json_text(b)
    except NotStrictJSONError:
        return False


def _decode_header_row(session_id: str, run_id: str, text: Any) -> FrozenDict:
    try:
        header = decode_run_header(parse_json(text))
    except InvalidJSONTextError as exc:
        raise RunHeaderSchemaError(detail=f"stored header {session_id}/{run_id}: {exc.message}") from exc
    if header["sessionId"] != session_id or header["runId"] != run_id:
        raise _error(
            "agent_run_identity_mismatch",
            f"AgentRun {session_id}/{run_id} stores the header of "
            f"{header['sessionId']}/{header['runId']}",
        )
    return header



def _corrupt_placeholder(header: Mapping[str, Any], seq: int, exc: Exception) -> FrozenDict:
    """§5.2 ``event_corrupt``: keeps the position of an undecodable record visible."""
    return FrozenDict(
        {
            "type": "event_corrupt",
            "id": f"event-corrupt-{header['runId']}-{seq}",
            "runId": header["runId"],
            "sessionId": header["sessionId"],
            "turnId": header["turnId"],
            "ts": header["updatedAt"],
            "message": "Undecodable AgentRun operational event",
            "data": {"seq": seq, "reason": str(exc)[:500]},
        }
    )
