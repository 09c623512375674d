"""Private implementation of :mod:`conformance.reports` (result model, levels, writers, matrix).

Import from :mod:`conformance.reports`; the module layout under ``_report`` may change. Every
module here uses the standard library only, so that loading a report (for a CI dashboard or
``maka-conformance matrix``) does not pull in pytest, ``maka_ref`` or ``crashlab``.

May import: ``conformance.vectors``.
"""
