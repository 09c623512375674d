"""The durable stores of the reference runtime (issue 3; spec 30 §0–§5, §10).

The SQLite canonical store lives in one real file, ``<root>/runtime.sqlite``, accessed with the
standard-library ``sqlite3`` module. ``RuntimeStore`` is the facade; the modules below it are
plain functions over a connection so that every rule lives in exactly one place (see
``docs/storage.md`` for the map). The stores reuse the pure core for every ledger rule.
"""

from maka_ref._store.claim_codec import ContinuationClaim, ContinuationClaimError, decode_claim
from maka_ref._store.connection import connect, read_transaction, write_transaction
from maka_ref._store.errors import (
    CURRENT_SCHEMA_VERSION,
    RunSealedError,
    StoreError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolRecoveryBundleValidationError,
)
from maka_ref._store.failpoints import FAILPOINT_NAMES, FailpointTriggered, arm, disarm, failpoint
from maka_ref._store.continuation_claims import ClaimRecord, ClaimResult, StartResult
from maka_ref._store.reads import ScanBudget
from maka_ref._store.records import (
    AppendResult,
    CommitResult,
    RebuildReport,
    ToolJournalRecord,
    ToolOperationRecord,
)
from maka_ref._store.runtime_store import DB_FILE_NAME, RuntimeStore
from maka_ref._store.tool_writers import T1Input, T2Input

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "DB_FILE_NAME",
    "FAILPOINT_NAMES",
    "AppendResult",
    "ClaimRecord",
    "ClaimResult",
    "ContinuationClaim",
    "ContinuationClaimError",
    "StartResult",
    "CommitResult",
    "FailpointTriggered",
    "RebuildReport",
    "RunSealedError",
    "RuntimeStore",
    "ScanBudget",
    "StoreError",
    "T1Input",
    "T2Input",
    "ToolJournalRecord",
    "ToolLedgerCorruptionError",
    "ToolLedgerRejectionError",
    "ToolOperationRecord",
    "ToolRecoveryBundleValidationError",
    "arm",
    "connect",
    "decode_claim",
    "disarm",
    "failpoint",
    "read_transaction",
    "write_transaction",
]
