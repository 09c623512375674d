"""The crash lab: real SIGKILLs at named crash points, then a fresh process checks the files.

What it will hold: the wire-protocol client that spawns an implementation in its own process
group, talks to it with a timeout on every request and reaps its whole process tree; the
machine-readable catalogue of crash points (P0–P11, continuation points, storage crash
modes, recovery-bundle steps); trials in prefix and live mode; the ``torn``, ``pause`` and
``race`` fault modes; and the per-platform capability matrix.

Dependencies: ``crashlab`` uses ``maka_ref`` (the oracle and the reference implementation)
and is used by ``conformance``. It never imports ``conformance``.

Status: a placeholder until issue 6. The Phase 0 failpoint catalogue it will build on already
exists as :data:`maka_ref.FAILPOINTS`.
"""
