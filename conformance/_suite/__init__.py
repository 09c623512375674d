"""Machinery behind the conformance suite: clause metadata, the implementation session, result
recording and progress events. Private; the public faces are :mod:`conformance.plugin` (the
pytest plugin), :mod:`conformance.clauses` (helpers for writing clauses) and
:mod:`conformance.certify` (the library behind ``maka-conformance certify``).

May import: ``conformance.deviations``, ``conformance.protocol``, ``conformance.reports``,
``crashlab``.
"""
