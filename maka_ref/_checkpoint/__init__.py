"""Phase 4's Git checkpoint carrier (contract: docs/spec-phase4.md §2–§3, §8–§9).

Holds the hashed checkpoint policy (``policy``), the hermetic ``git`` invocation (``git``), a
read-only parser of Git's index file (``index_file``), repository location and steady-state
checks (``repository``), the pre-hash survey of what a capture would take (``survey``), capture
through a private index into ``refs/maka/checkpoints/<uuid>/…`` (``capture``), verification
(``verify``), the drift observation (``compare``), isolated restore into a new directory
(``restore``), the ref namespace with listing and orphan collection (``refs``), the closed
failure codes (``failure``) and the facade :class:`GitCheckpointCarrier` (``carrier``).

A carrier observes and materializes; it never approves resume and never reads or writes facts
(spec-phase4 §3.1). The boundary facts, capture points, resume checks and transitions belong
to the store and the runtime, which import this package — never the other way round.

Must not import ``maka_ref._store``, ``_plan``, ``_ledger``, ``_runtime`` or anything above
them.

May import: the standard library and ``maka_ref._codec``.
"""

from maka_ref._checkpoint.capture import CaptureResult
from maka_ref._checkpoint.carrier import (
    DEFAULT_GRACE_SECONDS,
    Eligibility,
    GitCheckpointCarrier,
)
from maka_ref._checkpoint.compare import DRIFT_KINDS, Change, Drift
from maka_ref._checkpoint.failure import (
    ELIGIBILITY_CODES,
    OPERATION_CODES,
    CheckpointError,
)
from maka_ref._checkpoint.policy import (
    DEFAULT_POLICY,
    DEFAULT_POLICY_HASH,
    CheckpointPolicy,
    decode_policy,
    policy_document,
    policy_hash,
)
from maka_ref._checkpoint.refs import (
    REF_PREFIX,
    CollectResult,
    ListedCheckpoint,
    make_ref,
    parse_ref,
)
from maka_ref._checkpoint.restore import RestoreResult
from maka_ref._checkpoint.verify import TreeEntry, VerifiedCheckpoint

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_POLICY",
    "DEFAULT_POLICY_HASH",
    "DRIFT_KINDS",
    "ELIGIBILITY_CODES",
    "OPERATION_CODES",
    "REF_PREFIX",
    "CaptureResult",
    "Change",
    "CheckpointError",
    "CheckpointPolicy",
    "CollectResult",
    "Drift",
    "Eligibility",
    "GitCheckpointCarrier",
    "ListedCheckpoint",
    "RestoreResult",
    "TreeEntry",
    "VerifiedCheckpoint",
    "decode_policy",
    "make_ref",
    "parse_ref",
    "policy_document",
    "policy_hash",
]
