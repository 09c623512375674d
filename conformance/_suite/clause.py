"""Clause metadata: every clause is a pytest test carrying one ``maka_clause`` marker.

Why a marker and not a registry: pytest already collects, selects (``-k``), parallelises and
reports tests; a clause only needs four facts attached to it (stable id, spec section,
capability, level) so that the plugin can gate it on the handshake and the reports can group
it. The level follows from the capability (``docs/levels.md``), so a clause cannot claim a
level that disagrees with what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pytest

__all__ = ["CAPABILITY_LEVEL", "ClauseInfo", "ClauseMismatch", "clause", "clause_info", "level_of"]

#: The level a clause of each capability belongs to (the lowest level that requires it).
CAPABILITY_LEVEL: Mapping[str, str] = {
    "ledger.codec": "ledger",
    "ledger.resolver": "ledger",
    "ledger.plan": "ledger",
    "store": "durable",
    "store.continuation": "recovery",
    "runtime.loop": "live",
    "faults": "live",
    "faults.powerloss": "live",  # optional: no level requires it (docs/levels.md)
    "runtime.repair": "recovery",
    "runtime.continuation": "recovery",
    "runtime.reconcile": "recovery",  # optional: no level requires it (docs/levels.md)
    "workspace.checkpoint": "recovery",  # optional: no level requires it (spec-phase4 §10)
}
LEVEL_ORDER = ("ledger", "durable", "live", "recovery")


def level_of(capability: str) -> str:
    try:
        return CAPABILITY_LEVEL[capability]
    except KeyError:
        raise ValueError(f"unknown capability {capability!r}") from None


@dataclass(frozen=True)
class ClauseInfo:
    """The facts a report needs about one clause."""

    clause_id: str
    title: str
    spec: str
    capability: str
    level: str
    needs: tuple[str, ...] = ()  # further capabilities the clause uses (all must be claimed)
    #: The crash-lab trial a ``CRASH-*`` clause runs — ``{"point", "mode", "fault",
    #: "trialId"}`` (``mode``: prefix, live-t1, live-legacy) — so the reports can place it in
    #: the crash matrix whatever its outcome; ``None`` for every other clause.
    crash: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"clauseId": self.clause_id, "title": self.title, "spec": self.spec,
                                "capability": self.capability, "level": self.level, "needs": list(self.needs)}
        if self.crash is not None:
            data["crash"] = dict(self.crash)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ClauseInfo":
        crash = data.get("crash")
        return cls(data["clauseId"], data["title"], data["spec"], data["capability"], data["level"],
                   tuple(data.get("needs", ())), dict(crash) if isinstance(crash, Mapping) else None)


def clause(clause_id: str, *, spec: str, capability: str, title: str, needs: tuple[str, ...] = (),
           crash: Mapping[str, str] | None = None) -> pytest.MarkDecorator:
    """Mark a test (or one ``pytest.param``) as the clause ``clause_id`` of ``spec``
    (``crash``: the crash-lab trial it runs, see :attr:`ClauseInfo.crash`)."""
    level = level_of(capability)
    for other in needs:
        level_of(other)  # validates the name
        if LEVEL_ORDER.index(level_of(other)) > LEVEL_ORDER.index(level):
            level = level_of(other)
    return pytest.mark.maka_clause(ClauseInfo(clause_id, title, spec, capability, level, tuple(needs),
                                              dict(crash) if crash is not None else None))


def clause_info(item: pytest.Item) -> ClauseInfo | None:
    marker = item.get_closest_marker("maka_clause")
    if marker is None or not marker.args or not isinstance(marker.args[0], ClauseInfo):
        return None
    return marker.args[0]


class ClauseMismatch(AssertionError):
    """The implementation's answer differs from the expected one.

    ``diff`` is the first differing JSON path with the expected and actual values there
    (``{"path", "expected", "actual"}``); the report prints it instead of a traceback.
    """

    def __init__(self, message: str, diff: Mapping[str, Any] | None = None, evidence: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.diff = dict(diff) if diff is not None else None
        self.evidence = dict(evidence) if evidence is not None else {}
