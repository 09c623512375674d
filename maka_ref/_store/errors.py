"""Exceptions of the durable stores (spec 30 §1, §2, §2.9, §3, §4).

Why a module of its own: every store module (and the runtime loop, adapter and crash lab
above them) maps failures to *stable codes*, while upstream tests match on *message
fragments*. So every error here carries both: a snake_case ``code`` that is our contract, and
the spec's exact message text.

The behavioural contract of §2.9 is kept by the class tree: ``ToolLedgerRejectionError`` (a
bad *candidate*; the store stays healthy) and ``ToolLedgerCorruptionError`` (the *existing*
ledger is damaged) are siblings, never one a subclass of the other, because the runtime
exempts only rejections from "latch the store as unavailable".
"""

from __future__ import annotations

from maka_ref._errors import MakaRefError

__all__ = [
    "CONTINUATION_CAPABILITY",
    "CURRENT_SCHEMA_VERSION",
    "RECOVERY_CAPABILITY",
    "WORKSPACE_CAPABILITY",
    "RunSealedError",
    "StoreError",
    "ToolLedgerCorruptionError",
    "ToolLedgerRejectionError",
    "ToolRecoveryBundleValidationError",
    "capability_unavailable",
    "row_payload_identity_mismatch",
]

#: The runtime schema version this code writes and reads (spec 30 §1.3).
CURRENT_SCHEMA_VERSION = 12

RECOVERY_CAPABILITY = "runtime_recovery_authority"
CONTINUATION_CAPABILITY = "runtime_continuation_authority"
WORKSPACE_CAPABILITY = "runtime_workspace_version_authority"


class StoreError(MakaRefError):
    """Base of every store failure: ``code`` is stable, ``message`` is the spec's wording."""

    code = "store_error"

    def __init__(self, message: str, *, code: str | None = None, detail: str | None = None) -> None:
        super().__init__(message, detail=detail)
        if code is not None:
            self.code = code


class ToolLedgerRejectionError(StoreError):
    """A tool-bearing *candidate* violates the ledger invariants; the store is healthy (§2.1)."""

    def __init__(self, code: str, event_id: str) -> None:
        super().__init__(f"Tool ledger transition rejected: {code} at {event_id}", code=code)
        self.event_id = event_id


class ToolLedgerCorruptionError(StoreError):
    """The *existing* ledger scans as corrupt; every tool-bearing write fails closed (§2.1)."""

    def __init__(self, code: str, event_id: str) -> None:
        super().__init__(f"Tool ledger is corrupt: {code} at {event_id}", code=code)
        self.event_id = event_id


class RunSealedError(StoreError):
    """A new event for a run that already holds its terminal fact (§2.1 step 4)."""

    code = "run_sealed"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"RuntimeEvent run {run_id} is sealed by its terminal fact")
        self.run_id = run_id


class ToolRecoveryBundleValidationError(StoreError):
    """A recovery bundle failed one of the ordered checks of §2.5 step 2; ``code`` says which."""

    def __init__(self, code: str, message: str | None = None) -> None:
        super().__init__(message or f"Tool recovery bundle validation failed: {code}", code=code)


def row_payload_identity_mismatch(event_id: object) -> StoreError:
    """§1.2: a stored row whose identity columns disagree with its payload (fail closed)."""
    return StoreError(f"RuntimeEvent row/payload identity mismatch for {event_id}", code="row_payload_identity_mismatch")


_CAPABILITY_LABEL = {
    RECOVERY_CAPABILITY: "recovery",
    CONTINUATION_CAPABILITY: "continuation",
    WORKSPACE_CAPABILITY: "workspace version",
}


def capability_unavailable(capability: str) -> StoreError:
    """§1.4: ``SQLite runtime <label> capability <name>@1 is unavailable``."""
    label = _CAPABILITY_LABEL.get(capability, "")
    return StoreError(
        f"SQLite runtime {label} capability {capability}@1 is unavailable",
        code="capability_unavailable",
    )
