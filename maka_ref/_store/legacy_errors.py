"""The exceptions of the legacy JSONL profile (spec 30 §5.2 rules 6–7; spec 20 §1.8).

Why a module of their own: the line decoder raises them, the tree import and the strict import
let them propagate, and callers (``_inspect``, the mutants, tests) catch them; keeping them
apart lets each of those modules import the errors without importing one another.
"""

from __future__ import annotations

from maka_ref._store.errors import StoreError

__all__ = [
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
