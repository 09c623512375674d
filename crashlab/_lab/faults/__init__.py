"""Fault modes beyond the plain kill (issue 6 item 3): ``torn`` (here), ``pause`` and ``race``
(each a module with ``run(ctx)``; the engine imports them lazily), and ``reconciler``: the
``kill``, ``race`` and ``pause`` trials at the Phase 3 reconciler's points (issue 16 item 3),
which crash a tool first and then the reconciler.

May import: ``crashlab._client``, ``crashlab._lab.drive``, ``crashlab._lab.effects``,
``crashlab._lab.oracles``, ``maka_ref``.
"""
