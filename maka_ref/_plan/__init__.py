"""Planning over committed RuntimeEvents — pure: may this prefix be replayed, and how may a run continue? (spec 20 §1, §3).

Rooms, lowest first:

* :mod:`.provider`     — the provider-item projection: committed events → model history
                         items plus diagnostics (§1.10 step 3);
* :mod:`.phase0`       — the Phase 0 ResumePlan, its provider-replay assembly and the P0–P11
                         crash contract (§1.1–§1.8, §2);
* :mod:`.prefix`       — immutable prefixes, segments and boundary cursors, their digests,
                         and continuation segment replay (§1.9, §1.10);
* :mod:`.continuation` — the Phase 1 safe-boundary continuation planner (§3).

Everything here is pure: plain values in, plain values out; no file, clock, randomness or
environment; the planners never raise.

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._events``,
``maka_ref._ledger``.
"""
