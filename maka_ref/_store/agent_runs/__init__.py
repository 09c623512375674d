"""AgentRun headers and operational events: the runs' own store beside the ledger (spec 20 §5).

* :mod:`.header` — the AgentRun header and operational-event codec (§5.1, §5.2, §5.4; pure);
* :mod:`.codec`  — key checks, JSON text and row decoding of the operational store (§5.3);
* :mod:`.schema` — the ``agent_runs`` schema scope: DDL, version check, migration;
* :mod:`.store`  — the operational store in ``runtime.sqlite``: headers and events.

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._events``,
``maka_ref._store.engine``, ``maka_ref._store.errors``.
"""
