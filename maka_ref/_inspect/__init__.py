"""Read-only inspection of a workspace's durable store (issue 3 item 7; docs/inspect.md).

``inspect_workspace(path) -> dict`` returns everything the store knows — storage kind,
schema versions, runs (AgentRun headers, immutable events, the RecoveryResolver result and
Phase 0 plan of each), tool projections and the health scan — as one JSON-ready document, and
leaves every file of the workspace byte-identical (SQLite only ever opens a private copy).
``maka-ref inspect --workspace DIR`` prints it.

Modules: ``api`` (entry point, workspace checks, error codes), ``snapshot`` (the private
consistent copy, type-checked and bounded), ``private_dirs`` (where the copy lives and how a
killed inspection's leftovers are swept), ``sqlite_view`` / ``jsonl_view`` (one per storage kind), ``document``
(the shared run shape and health result).

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._ledger``,
``maka_ref._plan.phase0``, ``maka_ref._store.agent_runs``, ``maka_ref._store.engine``,
``maka_ref._store.errors``, ``maka_ref._store.insert``, ``maka_ref._store.legacy``,
``maka_ref._store.partials``, ``maka_ref._store.runtime_store``, ``maka_ref._store.workspace``.
"""

from maka_ref._inspect.api import inspect_workspace
from maka_ref._inspect.document import FORMAT

__all__ = ["FORMAT", "inspect_workspace"]
