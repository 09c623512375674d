"""``store.*``: the durable canonical store over the wire (``docs/protocol.md`` §4.2).

Why a session object: the protocol lets an implementation keep a store open between
requests, and the harness checks that *reading* leaves the ledger files byte-identical; an
open writer connection never checkpoints on a read, whereas reopening and closing per request
would checkpoint the WAL into the main file. So each workspace's ``RuntimeStore`` (and, when
needed, its ``AgentRunStore`` on the same file) stays open until ``store.close`` or the end of
the session. Write operations open a writer implicitly when none is open.

``ledgerFiles``: ``runtime.sqlite`` and ``runtime.sqlite-wal`` when they exist. The WAL holds
committed transactions not yet checkpointed, so it is durable data. The ``-shm`` file is not:
it is a shared-memory index that SQLite rebuilds from the WAL, and readers write read marks
into it, so it is deliberately not listed.

``store.project`` is :func:`maka_ref._inspect.inspect_workspace` (a private snapshot copy, so
SQLite never opens the workspace's files) reduced to the shape of protocol §4.2.1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from maka_ref._store import RuntimeStore, StoreError, T1Input, T2Input
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref.adapter._errors import OpError
from maka_ref.adapter._params import opt_bool, opt_str, req, req_int, req_object, req_str, workspace
from maka_ref.adapter._workspace import owned_workspace

__all__ = ["LEDGER_FILE_NAMES", "StoreSession"]

#: Files that hold durable facts, in the order reported (``-shm`` excluded: module docstring).
LEDGER_FILE_NAMES = ("runtime.sqlite", "runtime.sqlite-wal")

Params = Mapping[str, Any]


@dataclass
class _Open:
    store: RuntimeStore
    runs: AgentRunStore | None = None

    def close(self) -> None:
        if self.runs is not None:
            self.runs.close()
        self.store.close()


@dataclass
class StoreSession:
    """The stores this session holds open, keyed by the workspace's real path."""

    _open: dict[str, _Open] = field(default_factory=dict)

    # -- plumbing ---------------------------------------------------------------------------

    def close_all(self) -> None:
        for key in list(self._open):
            self._open.pop(key).close()

    def release(self, path: str) -> None:
        """Close the stores of ``path`` (before runtime ops open their own connections)."""
        opened = self._open.pop(os.path.realpath(path), None)
        if opened is not None:
            opened.close()

    def _writer(self, path: str) -> _Open:
        key = os.path.realpath(path)
        opened = self._open.get(key)
        if opened is None:
            owned_workspace(path)  # an implicit writer open: the same rule as store.open
            opened = self._open[key] = _Open(RuntimeStore.open(key))
        return opened

    def _runs(self, path: str) -> AgentRunStore:
        opened = self._writer(path)
        if opened.runs is None:
            opened.runs = AgentRunStore.open_read_only(opened.store.db_path.parent) if opened.store.read_only \
                else AgentRunStore.open(opened.store.db_path.parent)
        return opened.runs

    # -- operations -------------------------------------------------------------------------

    def open(self, params: Params) -> dict[str, Any]:
        path = owned_workspace(workspace(params))  # never created here (protocol §4.2)
        read_only = opt_bool(params, "readOnly", False)
        self.release(path)
        key = os.path.realpath(path)
        if read_only:
            try:
                store = RuntimeStore.open_read_only(key)
            except StoreError as exc:
                if exc.code == "store_missing":
                    raise OpError("store_not_found", exc.message) from None
                raise
        else:
            store = RuntimeStore.open(key)
        self._open[key] = _Open(store)
        return {"ledgerFiles": ledger_files(key), "schemaVersion": store.schema_version()}

    def close(self, params: Params) -> dict[str, Any]:
        self.release(workspace(params))
        return {}

    def create_run(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        return {"header": self._runs(path).create_run(req_object(params, "header"))}

    def update_run(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        header = self._runs(path).update_run(
            req_str(params, "sessionId"), req_str(params, "runId"), req_object(params, "patch")
        )
        return {"header": header}

    def append(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        return self._writer(path).store.append(req(params, "event")).to_json()

    def commit_tool_prepared(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        data = T1Input(
            operation_id=req_str(params, "operationId"),
            journal_event_id=req_str(params, "journalEventId"),
            runtime_event=req(params, "callEvent"),
            dispatch_runtime_event=req(params, "dispatchEvent"),
            provider_tool_call_id=req_str(params, "providerToolCallId"),
            tool_name=req_str(params, "toolName"),
            canonical_args_hash=req_str(params, "canonicalArgsHash"),
            recovery_mode=req_str(params, "recoveryMode"),
            committed_at=req_int(params, "committedAt"),
            evidence=req_object(params, "evidence") if "evidence" in params else None,
        )
        return self._writer(path).store.commit_tool_prepared(data).to_json()

    def commit_tool_outcome(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        data = T2Input(
            operation_id=req_str(params, "operationId"),
            journal_event_id=req_str(params, "journalEventId"),
            runtime_event=req(params, "responseEvent"),
            committed_at=req_int(params, "committedAt"),
        )
        return self._writer(path).store.commit_tool_outcome(data).to_json()

    def commit_recovery_bundle(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        self._writer(path).store.commit_tool_recovery_bundle(
            req_str(params, "operationId"), req(params, "reconcileEvent"), req(params, "decisionEvent"),
            params.get("outcomeEvent"),
        )
        return {}

    def claim_continuation(self, params: Params) -> dict[str, Any]:
        """Protocol §4.2.2: ``claimContinuation`` (spec 30 §2.6); ``{"kind"}``."""
        path = workspace(params)
        result = self._writer(path).store.claim_continuation(req_object(params, "claim"))
        return {"kind": result.kind}

    def commit_continuation_start(self, params: Params) -> dict[str, Any]:
        """Protocol §4.2.2: the live (``runtime_admission``) or repair (``claim_repair``) start
        writer (spec 30 §2.6); ``{"created", "runtimeEventSeq"}``."""
        path = workspace(params)
        provenance = opt_str(params, "provenance") or "runtime_admission"
        if provenance not in ("runtime_admission", "claim_repair"):
            raise OpError("invalid_params", "params.provenance must be runtime_admission or claim_repair")
        result = self._writer(path).store.commit_continuation_start(
            req_object(params, "claim"), req(params, "event"), provenance)
        return {"created": result.created, "runtimeEventSeq": result.event_seq}

    def read_events(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        events = self._writer(path).store.read_run_events(req_str(params, "sessionId"), req_str(params, "runId"))
        return {"events": list(events)}

    def read_tool_evidence(self, params: Params) -> dict[str, Any]:
        """spec-phase3 §3.4, §6 (capability ``runtime.reconcile``): the operation's evidence as
        committed with its T1, ``null`` when T1 committed none (or the operation is unknown), and
        a damaged row as the error value of its §2.2 code — a signal about that operation only."""
        from maka_ref._reconcile import Invalid, evidence_digest

        path = workspace(params)
        found = self._writer(path).store.read_tool_evidence(req_str(params, "operationId"))
        if found is None:
            return {"evidence": None}
        if isinstance(found, Invalid):
            raise OpError(found.code, f"the stored evidence does not decode: {found.code}", {"detail": found.detail})
        return {"evidence": found.to_json(), "evidenceDigest": evidence_digest(found)}

    def rebuild_projections(self, params: Params) -> dict[str, Any]:
        path = workspace(params)
        return self._writer(path).store.rebuild_tool_projections(opt_str(params, "sessionId")).to_json()

    def project(self, params: Params) -> dict[str, Any]:
        from maka_ref._inspect import inspect_workspace

        return project_document(inspect_workspace(workspace(params)))

    def operations(self) -> dict[str, Callable[[Params], dict[str, Any]]]:
        return {
            "store.open": self.open,
            "store.close": self.close,
            "store.create_run": self.create_run,
            "store.update_run": self.update_run,
            "store.append": self.append,
            "store.commit_tool_prepared": self.commit_tool_prepared,
            "store.commit_tool_outcome": self.commit_tool_outcome,
            "store.commit_recovery_bundle": self.commit_recovery_bundle,
            "store.read_events": self.read_events,
            "store.project": self.project,
            "store.rebuild_projections": self.rebuild_projections,
            "store.claim_continuation": self.claim_continuation,
            "store.commit_continuation_start": self.commit_continuation_start,
        }


def ledger_files(path: str) -> list[str]:
    return [name for name in LEDGER_FILE_NAMES if os.path.isfile(os.path.join(path, name))]


_RUN_KEYS = ("sessionId", "runId", "header", "events", "resolution", "plan", "toolOperations", "toolJournalEvents")


def project_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The inspection document (docs/inspect.md) reduced to protocol §4.2.1."""
    return {
        "storage": document["storage"]["kind"],
        "health": document["health"],
        "runs": [{key: run[key] for key in _RUN_KEYS} for run in document["runs"]],
        "unsettledOperations": list(document["unsettledOperations"]),
    }
