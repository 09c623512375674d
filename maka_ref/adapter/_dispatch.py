"""The operation table: every protocol operation, its capability and its handler.

Why a table: ``hello`` must list the capabilities, an unknown ``op`` must be ``unknown_op``,
and every handler has the same signature ``params -> result`` so the server can turn any
failure into one error value in one place (:func:`Dispatcher.handle`).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

from maka_ref import MakaRefError, __version__
from maka_ref._durable import sync_call
from maka_ref._store.engine.faults import fault_of
from maka_ref.adapter import _faults, _runtime_ops
from maka_ref.adapter._checkpoint_ops import CHECKPOINT_OPERATIONS
from maka_ref.adapter._errors import OpError, invalid_params
from maka_ref.adapter._params import usable_path
from maka_ref.adapter._ledger_ops import REQUIRED_KEYS, VECTOR_RUNNERS
from maka_ref.adapter._reconcile_ops import RECONCILE_OPERATIONS
from maka_ref.adapter._store_ops import StoreSession

__all__ = ["CAPABILITIES", "PROTOCOL_VERSION", "Dispatcher"]

PROTOCOL_VERSION = 1
IMPLEMENTATION = {"name": "maka-ref", "version": __version__}
#: How the reference makes its files durable: the handshake's ``durability`` (protocol §3),
#: per platform: ``F_FULLFSYNC`` on macOS (whose ``fsync`` stops at the drive's cache) with
#: SQLite's ``fullfsync``/``checkpoint_fullfsync``, ``fsync`` elsewhere (``maka_ref._durable``).
DURABILITY: dict[str, Any] = {
    "sync": sync_call(),
    "directorySync": True,
    "details": "SQLite in WAL mode with synchronous=FULL (every commit synced"
               + ("; PRAGMA fullfsync=ON and checkpoint_fullfsync=ON" if sys.platform == "darwin" else "")
               + "); tool targets, the effect log and the script sidecars synced, their directory synced "
               "after a create or rename",
}

Params = Mapping[str, Any]
Handler = Callable[[Params], Any]

_LEDGER_CAPABILITY = {
    **dict.fromkeys(("args_hash", "encode", "decode", "predicates"), "ledger.codec"),
    **dict.fromkeys(
        ("lane", "generic_append", "scan", "validate_transition", "validate_bundle", "interpret", "resolve",
         "code_mode_commits"),
        "ledger.resolver",
    ),
    **dict.fromkeys(("plan", "failpoint_catalog", "segment_replay", "composite_replay", "prefix_digest"), "ledger.plan"),
}
assert set(_LEDGER_CAPABILITY) == set(VECTOR_RUNNERS)

#: Every capability this implementation claims (protocol §3), in the protocol's order.
CAPABILITIES: tuple[str, ...] = (
    "ledger.codec", "ledger.resolver", "ledger.plan", "store", "store.continuation", "runtime.loop",
    "runtime.repair", "runtime.continuation", "faults",
    # the finalize-only reconciler of Phase 3 (spec-phase3 §6; optional, no level requires it)
    "runtime.reconcile",
    # every durable file under the workspace it is given, made durable with plain POSIX calls:
    # the crash lab may run it on its power-loss filesystem (protocol §3, docs/crashlab-powerloss.md)
    "faults.powerloss",
    # spec-phase4 §10: the Git checkpoint carrier and the checkpoint-mode run and resume
    "workspace.checkpoint",
)
_RUNTIME_CAPABILITY = {"runtime.run_turn": "runtime.loop", "runtime.repair": "runtime.repair",
                       "runtime.resume": "runtime.continuation", "runtime.reconcile": "runtime.reconcile"}


def _ledger_handler(name: str) -> Handler:
    runner = VECTOR_RUNNERS[name]
    required = REQUIRED_KEYS.get(name, ())

    def handle(params: Params) -> Any:
        if name in ("encode", "decode") and "event" not in params and "eventJson" not in params:
            raise invalid_params("params.event or params.eventJson is required")
        for key in required:
            if key not in params:
                raise invalid_params(f"params.{key} is required")
        try:
            return runner(params)
        except KeyError as exc:
            raise invalid_params(f"missing key {exc}") from None
        except ValueError as exc:  # e.g. an unknown transition kind; coded core errors pass through
            if isinstance(exc, MakaRefError):
                raise
            raise invalid_params(str(exc)) from None

    return handle


class Dispatcher:
    """One protocol session: its open stores and its operation table."""

    def __init__(self, claims: tuple[str, ...] = CAPABILITIES) -> None:
        unknown = set(claims) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities: {sorted(unknown)}")
        self.claims = tuple(c for c in CAPABILITIES if c in claims)
        self.stores = StoreSession()
        self.table: dict[str, tuple[str, Handler]] = {"hello": ("", self.hello)}
        for name in VECTOR_RUNNERS:
            self.table[f"ledger.{name}"] = (_LEDGER_CAPABILITY[name], _ledger_handler(name))
        for op, handler in self.stores.operations().items():
            self.table[op] = ("store.continuation" if "continuation" in op else "store", handler)
        for op, handler in _runtime_ops.RUNTIME_OPERATIONS.items():
            self.table[op] = (_RUNTIME_CAPABILITY[op], self._releasing(handler))
        self.table["faults.arm"] = ("faults", _faults.arm)
        for op, handler in RECONCILE_OPERATIONS.items():
            self.table[op] = ("runtime.reconcile", handler)
        # spec-phase3 §6: reading the evidence T1 committed is part of the reconciler's capability
        self.table["store.read_tool_evidence"] = ("runtime.reconcile", self.stores.read_tool_evidence)
        self.table["store.commit_tool_prepared"] = ("store", self._evidence_needs_reconcile(self.stores.commit_tool_prepared))
        for op, handler in CHECKPOINT_OPERATIONS.items():
            handle = self._releasing(handler) if op in ("checkpoint.run_turn", "checkpoint.resume") else handler
            self.table[op] = ("workspace.checkpoint", handle)
        self.table["batch"] = ("", self.batch)

    def _evidence_needs_reconcile(self, handler: Handler) -> Handler:
        """T1's ``evidence`` parameter (spec-phase3 §3.3, §6) belongs to ``runtime.reconcile``:
        unclaimed, the request is ``not_claimed`` rather than a T1 silently without evidence."""

        def handle(params: Params) -> Any:
            if "evidence" in params and "runtime.reconcile" not in self.claims:
                raise OpError("not_claimed", "params.evidence needs the capability runtime.reconcile")
            return handler(params)

        return handle

    def _releasing(self, handler: Handler) -> Handler:
        """Runtime ops open their own connections: close this session's stores of that workspace first."""

        def handle(params: Params) -> Any:
            workspace = params.get("workspace")
            if params.get("reconcile") is not None and "runtime.reconcile" not in self.claims:
                raise OpError("not_claimed", "params.reconcile needs the capability runtime.reconcile")
            if isinstance(workspace, str) and usable_path(workspace):  # else the handler refuses it
                self.stores.release(workspace)
            return handler(params)

        return handle

    def hello(self, params: Params) -> dict[str, Any]:
        version = params.get("protocol")
        if not isinstance(version, int) or isinstance(version, bool):
            raise invalid_params("params.protocol must be an integer")
        if version != PROTOCOL_VERSION:
            raise OpError("protocol_version_unsupported",
                          f"this implementation speaks protocol {PROTOCOL_VERSION}, not {version}")
        result: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "implementation": dict(IMPLEMENTATION),
            "capabilities": list(self.claims),
            "durability": dict(DURABILITY),
        }
        if "faults" in self.claims:
            # the reconciler's points are reachable only through runtime.reconcile (protocol §4.3.1)
            unreachable = _faults.RECONCILER_FAILPOINTS if "runtime.reconcile" not in self.claims else frozenset()
            result["failpoints"] = [name for name in _faults.ANNOUNCED_FAILPOINTS if name not in unreachable]
        return result

    def batch(self, params: Params) -> dict[str, Any]:
        """Protocol §4.5 ``batch``: many requests in one line, answered in order.

        Why: a differential fuzzer sends thousands of small pure requests; one line per request
        makes the pipe round trip, not the work, the cost. Each item is answered exactly as
        :meth:`handle` would answer it alone (errors are values, one item never fails the
        batch); ``hello`` and a nested ``batch`` are refused per item with ``invalid_params``.
        """
        requests = params.get("requests")
        if not isinstance(requests, list):
            raise invalid_params("params.requests must be an array")
        responses: list[dict[str, Any]] = []
        for index, item in enumerate(requests):
            if not isinstance(item, Mapping) or not isinstance(item.get("op"), str):
                responses.append(_error(invalid_params(f"requests[{index}] must be an object with a string op")))
                continue
            op, item_params = item["op"], item.get("params", {})
            if op in ("hello", "batch"):
                responses.append(_error(invalid_params(f"requests[{index}]: {op} cannot be batched")))
            elif not isinstance(item_params, Mapping):
                responses.append(_error(invalid_params(f"requests[{index}].params must be an object")))
            else:
                responses.append(self.handle(op, item_params))
        return {"responses": responses}

    def handle(self, op: str, params: Params) -> dict[str, Any]:
        """``{"ok": true, "result"}`` or ``{"ok": false, "error"}`` (never raises ``Exception``)."""
        entry = self.table.get(op)
        if entry is None:
            return _error(OpError("unknown_op", f"no operation {op}"))
        if entry[0] and entry[0] not in self.claims:
            return _error(OpError("not_claimed", f"capability {entry[0]} of {op} was not claimed"))
        try:
            return {"ok": True, "result": entry[1](params)}
        except OpError as exc:
            return _error(exc)
        except MakaRefError as exc:
            details = {"detail": exc.detail} if exc.detail else None
            return _error(OpError(exc.code, exc.message, details))
        except Exception as exc:  # noqa: BLE001 - protocol §5: anything else is internal_error
            fault = fault_of(exc)  # a store fault met mid-operation keeps its stable code
            if fault is not None:
                return _error(OpError(fault.code, fault.message))
            return _error(OpError("internal_error", f"{type(exc).__name__}: {exc}"))

    def close(self) -> None:
        self.stores.close_all()


def _error(exc: OpError) -> dict[str, Any]:
    return {"ok": False, "error": exc.to_json()}
