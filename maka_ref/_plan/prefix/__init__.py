"""Immutable prefixes and their replay: what a v2 continuation stands on (spec 20 §1.9, §1.10).

* :mod:`.digests`   — the SHA-256 digests of the v2 protocol (prefix, manifest, provider
                      replay; spec 30 §2.6);
* :mod:`.immutable` — ``ImmutableRuntimePrefix``, ``RuntimePrefixSegment``,
                      ``RuntimeBoundaryCursor``: values, codes, builders and verifiers (the
                      only v2 functions that raise, with a stable ``PrefixError`` code);
* :mod:`.replay`    — continuation segment replay and the composite replay plan (§1.10),
                      over the provider projection; never raises.

Pure: no I/O, clock, randomness or global state.

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._events``,
``maka_ref._ledger``, ``maka_ref._plan.provider``.
"""
