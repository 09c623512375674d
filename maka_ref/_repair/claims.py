"""Extension point for the continuation claim saga (spec 20 §4.5); the saga itself (the
default ``claim_saga``) is :mod:`maka_ref._repair.claim_saga`.

Startup repair runs, per session, the claim saga **before** generic run repair (§4.4 step 4)
and generic repair must skip any run that is the target of a claim and has no terminal event
(§4.6 "Claim-owned target without terminal"). A saga plugs in by passing an object with
this protocol as ``claim_saga=`` to :func:`maka_ref._repair.repair_workspace` /
:func:`maka_ref._repair.repair_session`:

* ``repair_claims(context)`` runs §4.5 for one session (it may write: target header from the
  claim, deterministic repair start, deterministic terminal via
  :func:`maka_ref._repair.terminal.commit_terminal`) and returns a :class:`ClaimSagaOutcome`:
  the report entries it produced (``RunRepair`` items, appended to the session's entries in
  order) and ``owned_run_ids``, the claim targets generic repair must treat as claim-owned;
* raising :class:`ClaimAuthorityUnavailable` quarantines the whole session in best-effort
  mode (no generic repair, no writes, session reported under ``skipped``) and propagates in
  strict mode — never a fallback to generic repair.

:data:`NO_CLAIM_SAGA` does nothing and owns nothing (exact for a workspace without continuation
claims). ``skipped`` entries of the outcome are reported as is and generic repair leaves those
runs alone; ``skip_reason`` of the raised exception names the session's skip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from maka_ref._store.errors import StoreError

if TYPE_CHECKING:
    from maka_ref._repair.report import RunRepair, SkippedRun
    from maka_ref._store.agent_runs.store import AgentRunStore
    from maka_ref._store.runtime_store import RuntimeStore

__all__ = ["NO_CLAIM_SAGA", "ClaimAuthorityUnavailable", "ClaimSaga", "ClaimSagaContext", "ClaimSagaOutcome"]


class ClaimAuthorityUnavailable(StoreError):
    """The durable claim authority of a session cannot be read (§4.4 step 4)."""

    code = "continuation_claim_authority_unavailable"
    skip_reason = "continuation_claims_unreadable"  # the session's ``skipped`` reason


@dataclass(frozen=True, slots=True)
class ClaimSagaContext:
    session_id: str
    store: "RuntimeStore"
    runs: "AgentRunStore"
    strict: bool


@dataclass(frozen=True, slots=True)
class ClaimSagaOutcome:
    repairs: "tuple[RunRepair, ...]" = ()
    owned_run_ids: frozenset[str] = field(default_factory=frozenset)
    skipped: "tuple[SkippedRun, ...]" = ()  # generic repair leaves these runs alone


class ClaimSaga(Protocol):
    def repair_claims(self, context: ClaimSagaContext) -> ClaimSagaOutcome: ...


class _NoClaimSaga:
    def repair_claims(self, context: ClaimSagaContext) -> ClaimSagaOutcome:
        return ClaimSagaOutcome()


NO_CLAIM_SAGA: ClaimSaga = _NoClaimSaga()
