"""The durable stores of the reference runtime (issue 3; spec 30 §0–§5, §10).

The SQLite canonical store lives in one real file, ``<root>/runtime.sqlite``, accessed with the
standard-library ``sqlite3`` module. ``RuntimeStore`` is the facade; the rooms below it are
plain functions over a connection so that every rule lives in exactly one place (see
``docs/storage.md`` for the map). The stores reuse the pure core for every ledger rule.

Rooms, lowest first (a room imports only rooms above it in this list, never below):

* :mod:`.errors`, :mod:`.records` — the store's error classes (a stable ``code`` and the
  spec's message) and the values it returns;
* :mod:`.engine`       — connections, transactions, schema, faults, failpoints, rows;
* :mod:`.evidence`     — Phase 3's file evidence carrier: scope ``tool_evidence``, its row
  (written only inside T1) and its reads (docs/spec-phase3.md §3);
* :mod:`.partials`, :mod:`.projections` — partial snapshots (never authority) and the tool
  projections rebuilt from events;
* :mod:`.agent_runs`   — AgentRun headers and operational events;
* :mod:`.claims`       — continuation claim values, rows and checks;
* :mod:`.insert`       — the insert primitive and the gate every writer passes;
* :mod:`.reads`        — the read paths (§4);
* :mod:`.writers`      — generic, T1/T2, recovery bundle, continuation and copy writers;
* :mod:`.runtime_store` — the ``RuntimeStore`` facade;
* :mod:`.workspace`, :mod:`.legacy` — the workspace identity and baseline authority, and
  the legacy JSONL profile, both clients of the facade.

May import: ``maka_ref._codec``, ``maka_ref._durable``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._ledger``, ``maka_ref._plan.prefix``, ``maka_ref._reconcile``.
"""

from maka_ref._store.claims.codec import (
    ContinuationClaim,
    ContinuationClaimError,
    decode_claim,
)
from maka_ref._store.writers.continuation import ClaimRecord, ClaimResult, StartResult
from maka_ref._store.engine.connection import (
    connect,
    read_transaction,
    write_transaction,
)
from maka_ref._store.engine.failpoints import (
    FAILPOINT_NAMES,
    FailpointTriggered,
    arm,
    disarm,
    failpoint,
)
from maka_ref._store.errors import (
    CURRENT_SCHEMA_VERSION,
    RunSealedError,
    StoreError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolRecoveryBundleValidationError,
)
from maka_ref._store.reads import ScanBudget
from maka_ref._store.records import (
    AppendResult,
    CommitResult,
    RebuildReport,
    ToolJournalRecord,
    ToolOperationRecord,
)
from maka_ref._store.runtime_store import DB_FILE_NAME, RuntimeStore
from maka_ref._store.writers.tool import T1Input, T2Input

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
