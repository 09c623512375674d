"""Certification levels: ledger ⊂ durable ⊂ live ⊂ recovery, and the rule that decides which
one a run reached (written out for people in docs/levels.md).

Why a level is decided per capability and not per clause count: an implementation certifies
what it *claims* (docs/protocol.md §3); a level is a promise that every capability it needs was
claimed, actually exercised, and never failed. Not-run clauses (a ``-k`` or ``--level``
subset) make a level uncertifiable rather than passed, so a partial run can never print a
level it did not fully check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol

__all__ = [
    "CAPABILITIES",
    "LEVELS",
    "OPTIONAL_CAPABILITIES",
    "LEVEL_CAPABILITIES",
    "LevelVerdict",
    "compute_level",
    "required_capabilities",
]

#: Levels, weakest first. Each includes the previous one.
LEVELS: tuple[str, ...] = ("ledger", "durable", "live", "recovery")

#: Capabilities each level *adds* to the previous one.
LEVEL_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "ledger": ("ledger.codec", "ledger.resolver", "ledger.plan"),
    "durable": ("store",),
    "live": ("runtime.loop", "faults"),
    "recovery": ("store.continuation", "runtime.repair", "runtime.continuation"),
}

#: Every capability the suite knows, in protocol order (docs/protocol.md §4).
CAPABILITIES: tuple[str, ...] = tuple(c for lvl in LEVELS for c in LEVEL_CAPABILITIES[lvl])

#: Capabilities the suite knows that no level requires: their clauses are run and reported,
#: never counted toward a level (``faults.powerloss``: the crash lab's power-loss trials,
#: docs/crashlab-powerloss.md, which need FUSE and are "not run" where it is missing;
#: ``runtime.reconcile``: the Phase 3 reconciler, spec-phase3 §6; ``workspace.checkpoint``: the
#: Phase 4 Git checkpoint carrier, spec-phase4 §10).
OPTIONAL_CAPABILITIES: tuple[str, ...] = ("faults.powerloss", "runtime.reconcile", "workspace.checkpoint")

_EXAMPLES = 3  # clause ids quoted in a reason before "…"


class _Clause(Protocol):
    clause_id: str
    capability: str
    level: str
    outcome: str


def required_capabilities(level: str) -> tuple[str, ...]:
    """All capabilities ``level`` needs, its own and those of the levels below it."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    upto = LEVELS[: LEVELS.index(level) + 1]
    return tuple(c for lvl in upto for c in LEVEL_CAPABILITIES[lvl])


@dataclass(frozen=True)
class LevelVerdict:
    """The highest level reached (or ``None``) and, per level, whether and why not.

    ``per_level[level] == {"reached": bool, "reasons": [str, ...]}``; ``reasons`` is empty
    exactly when the level is reached. A level the run's selection left out also has
    ``"selected": False`` (shown "not selected", not "not reached": nothing failed there).
    """

    level_reached: str | None
    per_level: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def certified(self) -> bool:
        return self.level_reached is not None

    def to_dict(self) -> dict[str, Any]:
        return {"level_reached": self.level_reached, "per_level": self.per_level}


def _ids(clauses: list[_Clause]) -> str:
    ids = [c.clause_id for c in clauses[:_EXAMPLES]]
    more = len(clauses) - len(ids)
    return ", ".join(ids) + (f", … (+{more})" if more else "")


def _capability_reasons(capability: str, clauses: list[_Clause], claimed: bool) -> list[str]:
    """Why ``capability`` does not hold at a level, given the clauses that count there."""
    if not claimed:
        return [f"{capability}: not claimed by the implementation"]
    reasons = []
    failed = [c for c in clauses if c.outcome == "failed"]
    errored = [c for c in clauses if c.outcome == "error"]
    not_run = [c for c in clauses if c.outcome in ("not_run", "not_claimed")]
    if failed:
        reasons.append(f"{capability}: {len(failed)} failed ({_ids(failed)})")
    if errored:
        reasons.append(f"{capability}: {len(errored)} error ({_ids(errored)})")
    if not_run:
        reasons.append(
            f"{capability}: {len(not_run)} not run ({_ids(not_run)}); "
            "a partial selection cannot certify this level"
        )
    if not any(c.outcome in ("passed", "failed", "error") for c in clauses):
        reasons.append(f"{capability}: no clause ran")
    return reasons


def _not_selected(level: str, clauses: list[_Clause], selection: Mapping[str, Any] | None) -> str | None:
    """Why the run's selection left ``level`` out, or ``None`` when it did not.

    ``--level X`` leaves out every level above X; ``-k EXPR`` leaves out a level that has no
    clause of its own in the run (none of its level, none of the capabilities it adds: the
    expression deselected them all)."""
    if not selection:
        return None
    limit = selection.get("level")
    if limit in LEVELS and LEVELS.index(level) > LEVELS.index(limit):
        return f"not selected: the run was limited to level {limit} (--level {limit})"
    keyword = selection.get("keyword")
    if keyword and not any(c.level == level or c.capability in LEVEL_CAPABILITIES[level] for c in clauses):
        return f"not selected: -k {keyword} selected none of its clauses"
    return None


def compute_level(
    clauses: Iterable[_Clause],
    claimed: Iterable[str],
    *,
    harness_errors: Iterable[str] = (),
    selection: Mapping[str, Any] | None = None,
) -> LevelVerdict:
    """Decide the level a run reached (rule in docs/levels.md).

    A level is reached iff the level below it is reached and every capability it adds is
    claimed, has at least one clause that ran, and none of its clauses failed, errored or did
    not run. A clause counts toward level L when its capability is required by L and its own
    ``level`` is at or below L: a recovery-level clause about the codec blocks recovery, not
    ledger. Any harness error means the run is not trustworthy: no level is reached.
    ``selection`` (the run's ``{"level", "keyword"}``) marks the levels it left out as not
    selected; it never makes a level reached.
    """
    clauses = list(clauses)
    claimed_set = frozenset(claimed)
    harness = list(harness_errors)
    per_level: dict[str, dict[str, Any]] = {}
    reached: str | None = None
    below_ok = True
    below_selected = True
    for index, level in enumerate(LEVELS):
        left_out = _not_selected(level, clauses, selection)
        if left_out is not None:
            per_level[level] = {"reached": False, "selected": False, "reasons": [left_out]}
            below_ok = below_selected = False
            continue
        counted = [c for c in clauses if c.level in LEVELS[: index + 1]]
        reasons: list[str] = []
        if harness:
            reasons.append(f"the run had {len(harness)} harness error(s); nothing is certified")
        if index and not below_ok:
            state = "reached" if below_selected else "selected"
            reasons.append(f"requires level {LEVELS[index - 1]}, which was not {state}")
        for capability in required_capabilities(level):
            mine = [c for c in counted if c.capability == capability]
            new = capability in LEVEL_CAPABILITIES[level]
            why = _capability_reasons(capability, mine, capability in claimed_set)
            # A capability of a lower level that already failed is reported there; only
            # report it again when it is this level's clauses that break it.
            if new or (below_ok and why):
                reasons.extend(why)
        ok = not reasons
        per_level[level] = {"reached": ok, "reasons": reasons}
        if ok:
            reached = level
        below_ok = ok
        below_selected = True
    return LevelVerdict(level_reached=reached, per_level=per_level)
