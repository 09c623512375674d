"""Fault modes beyond the plain kill (issue 6 item 3): ``torn`` (here), ``pause`` and ``race``
(each a module with ``run(ctx)``; the engine imports them lazily).

May import: ``crashlab._client``, ``crashlab._lab.drive``, ``crashlab._lab.effects``,
``crashlab._lab.oracles``, ``maka_ref``.
"""
