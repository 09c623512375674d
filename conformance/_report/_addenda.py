"""Parts of ``report.html`` and ``report.md`` drawn by a layer above these writers.

Why: the crash matrix picture and the timelines of failing crash trials are the crash lab's
drawings — its catalogue orders the rows, and ``crashlab sweep`` draws the very same
picture — while this package stays standard-library only, so that loading a report (a CI
dashboard, ``maka-conformance matrix``) never pulls in ``crashlab``. So the writers take the
finished pieces as plain strings: :mod:`conformance.reports` (which may import ``crashlab``,
and does so only for a report that has ``CRASH-*`` clauses) fills an :class:`Addenda` in,
and the writers place it — the sections after "Capabilities", a failure's note at the end of
its entry. Text from an implementation inside them is escaped by whoever drew them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["Addenda"]


@dataclass(frozen=True)
class Addenda:
    """``html_sections`` / ``markdown_sections``: whole sections (``<section>…`` / ``## …``),
    in order; ``html_failure_notes``: clause id → HTML appended to that clause's failure entry
    (a crash trial's timeline and bundle link); ``css``: the styles those parts need."""

    html_sections: tuple[str, ...] = ()
    markdown_sections: tuple[str, ...] = ()
    html_failure_notes: Mapping[str, str] = field(default_factory=dict)
    css: str = ""
