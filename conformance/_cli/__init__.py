"""The ``maka-conformance`` command line: a thin layer over :mod:`conformance.certify`,
:mod:`conformance.reports` and :mod:`conformance.vectors`.

May import: ``conformance._fuzz``, ``conformance._selftest``, ``conformance._suite``,
``conformance.certify``, ``conformance.reports``, ``crashlab._lab``.
"""
