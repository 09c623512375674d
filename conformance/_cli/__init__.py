"""The ``maka-conformance`` command line: a thin layer over :mod:`conformance.certify`,
:mod:`conformance.reports` and :mod:`conformance.vectors`."""
