"""Continuation claims: the durable claim value, its rows and the checks that read them (spec 20 §3.10–§3.12, spec 30 §2.6, §2.8).

* :mod:`.codec`    — the ``continuation_claim_v1`` value (pure);
* :mod:`.rows`     — the ``runtime_continuation_claims`` columns, decoder and reads;
* :mod:`.guard`    — the insert guard: what an acquired claim forbids on every insert;
* :mod:`.boundary` — the claim writer's boundary re-check against the stored ledger;
* :mod:`.start`    — the continuation-start event's own checks and its match to a claim.

The writer that commits claims and starts is :mod:`maka_ref._store.writers.continuation`; this
room sits below the insert primitive, which calls the guard on every insert.

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._events``,
``maka_ref._plan.prefix``, ``maka_ref._store.agent_runs``, ``maka_ref._store.engine``,
``maka_ref._store.errors``.
"""
