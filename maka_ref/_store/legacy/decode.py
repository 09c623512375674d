"""The line decoder of the legacy JSONL profile and the errors it raises (spec 30 §5.2 rules 5–7; spec 20 §1.8).

Why a module of its own: it is the pure core of the profile (no file system, no store),
bytes → events, shared by the legacy parse, the strict parse and the ``jsonl`` reader. The
profile's exceptions are defined here because this decoder is what raises them; the tree
import and the strict import (:mod:`~maka_ref._store.legacy.profile`) let them propagate and
callers (``_inspect``, the mutants, tests) catch them. The callers reach ``_decode_lines``
through the profile module's namespace, which is where the crash mutant
``crash-jsonl-torn-tail-accepted`` wraps it.
"""

from __future__ import annotations

from typing import Any, Literal

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError, MakaRefError
from maka_ref._events.encode import encode_runtime_event
from maka_ref._store.errors import StoreError
from maka_ref._store.legacy.json_prefix import classify_json_bytes

__all__ = [
    "Flavour",
    "LegacyIdentityMismatchError",
    "LegacyJsonlCorruptionError",
    "LegacyPartialEventError",
]


class LegacyJsonlCorruptionError(StoreError):
    """A legacy JSONL line cannot be read (§5.2 rules 6–7; spec 20 §1.8).

    ``code`` is ``legacy_jsonl_torn_tail`` when the offending line is the file's unterminated
    last line and an incomplete prefix of a JSON document (a crash tore the append), and
    ``legacy_jsonl_invalid_line`` for anything else (garbage, a newline-terminated fragment, a
    line that is JSON but not a RuntimeEvent). ``line`` is 1-based and counts every physical
    line, blank ones included; ``run_id`` is the run directory's id.
    """

    TORN_TAIL = "legacy_jsonl_torn_tail"
    INVALID_LINE = "legacy_jsonl_invalid_line"

    def __init__(self, message: str, *, code: str, line: int, run_id: str, detail: str | None = None) -> None:
        super().__init__(message, code=code, detail=detail)
        self.line = line
        self.run_id = run_id

    @property
    def torn_tail(self) -> bool:
        return self.code == self.TORN_TAIL


class LegacyIdentityMismatchError(StoreError):
    """An event's session/run differs from the directory or argument it is imported under."""

    code = "legacy_import_identity_mismatch"

    def __init__(self, session_id: str, run_id: str, *, event_id: object = None) -> None:
        super().__init__(
            f"RuntimeEvent import identity mismatch for session {session_id}, run {run_id}",
            detail=None if event_id is None else f"event {event_id}",
        )
        self.session_id = session_id
        self.run_id = run_id
        self.event_id = event_id


class LegacyPartialEventError(StoreError):
    """Rule 7: the strict single-run import refuses every partial event."""

    code = "legacy_jsonl_partial_event"

    def __init__(self, event_id: object) -> None:
        super().__init__(f"Partial RuntimeEvent {event_id} cannot be imported as immutable JSONL")
        self.event_id = event_id


_JSON_WS_BYTES = b" \t\r\n"

# Legacy permission requests (before the ``kind`` discriminator) gain these on decode (rule 5).
_LEGACY_PERMISSION_KIND = "tool_permission"


def _upgrade_legacy_shapes(value: Any) -> Any:
    """Rule 5: the persisted-event decoder upgrades old shapes before the schema check.

    Old permission requests (no ``kind``) gain ``kind: "tool_permission"`` and
    ``rememberForTurnAllowed: false``. Returns ``value`` itself when nothing changes (the
    input is never mutated).
    """
    if not isinstance(value, dict):
        return value
    actions = value.get("actions")
    if not isinstance(actions, dict):
        return value
    request = actions.get("permissionRequest")
    if not isinstance(request, dict) or "kind" in request:
        return value
    upgraded_request = {**request, "kind": _LEGACY_PERMISSION_KIND}
    upgraded_request.setdefault("rememberForTurnAllowed", False)
    return {**value, "actions": {**actions, "permissionRequest": upgraded_request}}


def _is_legacy_stream_partial(value: Any) -> bool:
    """Rule 5: a legacy stream-partial snapshot row: ``partial === true``, no status/actions."""
    return (
        isinstance(value, dict)
        and value.get("partial") is True
        and "status" not in value
        and "actions" not in value
    )


Flavour = Literal["legacy", "reader", "strict"]


def _line_error(flavour: Flavour, line: int, run_id: str, *, torn: bool, cause: str) -> LegacyJsonlCorruptionError:
    code = LegacyJsonlCorruptionError.TORN_TAIL if torn else LegacyJsonlCorruptionError.INVALID_LINE
    reason = "torn last line (an incomplete JSON prefix without a trailing newline)" if torn else cause
    if flavour == "legacy":
        message = f"Invalid legacy RuntimeEvent JSONL line {line} for run {run_id}"
    elif flavour == "reader":
        message = f"Invalid RuntimeEvent JSONL line {line} for run {run_id}: {reason}"
    else:
        message = f"Invalid RuntimeEvent JSONL line {line} for run {run_id}"
    return LegacyJsonlCorruptionError(message, code=code, line=line, run_id=run_id, detail=reason)


def _split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Physical lines and whether the last one is unterminated (no trailing ``\\n``)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return lines, False
    return lines, True


def _decode_lines(
    data: bytes,
    session_id: str,
    run_id: str,
    *,
    flavour: Flavour,
    skip_legacy_partials: bool,
) -> list[FrozenDict]:
    lines, unterminated = _split_lines(data)
    events: list[FrozenDict] = []
    last = len(lines)
    for number, raw in enumerate(lines, start=1):
        if raw.strip(_JSON_WS_BYTES) == b"":
            continue  # blank lines are ignored
        is_tail = unterminated and number == last
        try:
            text = raw.decode("utf-8")
            value = parse_json(text)
        except (UnicodeDecodeError, InvalidJSONTextError) as exc:
            # Rule 6: only the unterminated last line can be torn; the classifier decides.
            torn = is_tail and classify_json_bytes(raw) == "incomplete_prefix"
            raise _line_error(flavour, number, run_id, torn=torn, cause=str(exc)) from exc
        if skip_legacy_partials and _is_legacy_stream_partial(value):
            continue
        try:
            event = encode_runtime_event(_upgrade_legacy_shapes(value)).event
        except MakaRefError as exc:
            raise _line_error(flavour, number, run_id, torn=False, cause=str(exc)) from exc
        if event["sessionId"] != session_id or event["runId"] != run_id:
            raise LegacyIdentityMismatchError(session_id, run_id, event_id=event["id"])
        events.append(event)
    return events
