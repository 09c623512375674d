"""Phase 4 wiring: the workspace boundary between the runtime's history and the user's files
(contract: docs/spec-phase4.md §4–§6, §11).

* :mod:`.lineage` — reading a lineage's boundary facts and the §5.2 coverage rule (pure over
  stored events);
* :mod:`.capture` — capture + fact commit in the §4.1 order, and the capture points of §5.1
  (a provider wrapper that captures before each provider call that needs it);
* :mod:`.gate`    — the §6.2 resume checks, as a park reason or nothing;
* :mod:`.transition` — the two transitions, rebaseline (§7.1) and isolated restore (§7.2): gate
  and in-transaction fact;
* :mod:`.commands` — the library behind ``maka-ref checkpoint …``, ``run --checkpoints`` and
  ``resume --rebaseline``.

Why a room of its own: it is the only place that sees both the checkpoint carrier (which may
not read facts, §3.1) and the store (which may not run Git); the runtime loop and the
continuation executor receive its work as callables, so neither learns about Git.

May import: ``maka_ref._checkpoint``, ``maka_ref._continuation``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._plan.continuation``, ``maka_ref._runtime``,
``maka_ref._store.agent_runs``, ``maka_ref._store.engine``, ``maka_ref._store.errors``, ``maka_ref._store.reads``,
``maka_ref._store.runtime_store``, ``maka_ref._store.workspace``.
"""
