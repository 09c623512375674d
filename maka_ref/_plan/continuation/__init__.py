"""Phase 1 safe-boundary continuation planning — the pure part (spec 20 §3.1–§3.8, §3.14–§3.16).

Modules (lower ones never import higher ones):

* :mod:`.codes`    — the exact code tables of §3.16 (and §3.9 revalidation codes) as data;
* :mod:`.terminal` — §4.3 terminal classification and ``terminalRepairSucceeded`` (§3.3);
* :mod:`.shapes`   — the plan shape of §3.7 (frozen dataclasses, ``to_json()`` camelCase);
* :mod:`.gates`    — ``build_safe_boundary_continuation_plan`` (§3.6, gates a→n);
* :mod:`.claims`   — start/claim matching (§3.12) and existing-claim classification (§3.5);
* :mod:`.lineage`  — the lineage walk over a reader protocol (§3.4);
* :mod:`.planner`  — ``RuntimeContinuationPlanner.plan`` (§3.3) over an injected world, and
  the host wrappers ``plan_latest`` / ``plan_authoritative`` (§3.2).

Everything here is pure: inputs are plain values, events, headers and callbacks; no file,
network, clock, randomness or environment access. Execution (§3.9–§3.13) and startup repair
(§4) are not here. Choices: ``docs/choices/continuation-planner.md``.

May import: ``maka_ref._codec``, ``maka_ref._events``, ``maka_ref._plan.phase0``,
``maka_ref._plan.prefix``.
"""

from .claims import (
    ClaimClassification,
    ClaimState,
    classify_existing_claim,
    start_matches_claim,
    target_header_compatible,
)
from .codes import DIAGNOSTIC_CODES, REJECTION_REASONS, SEGMENT_BLOCK_REASONS
from .gates import build_safe_boundary_continuation_plan, normalize_cwd
from .lineage import (
    MAX_LINEAGE_SEGMENTS,
    LineageError,
    LineageReader,
    LineageResult,
    walk_lineage,
)
from .planner import (
    ContinuationWorld,
    RuntimeContinuationPlanner,
    SafetyObservation,
    plan_authoritative,
    plan_latest,
    select_resume_candidate,
)
from .shapes import (
    ContinuationIdentity,
    RuntimeContinuation,
    SafeBoundaryContinuationPlan,
    SafetySnapshot,
    WorkspaceCheckpoint,
    continuation_envelope_problem,
)
from .terminal import (
    TerminalClassification,
    classify_terminal,
    header_matches_fact,
    terminal_repair_succeeded,
)

__all__ = [
    "DIAGNOSTIC_CODES",
    "MAX_LINEAGE_SEGMENTS",
    "REJECTION_REASONS",
    "SEGMENT_BLOCK_REASONS",
    "ClaimClassification",
    "ClaimState",
    "ContinuationIdentity",
    "ContinuationWorld",
    "LineageError",
    "LineageReader",
    "LineageResult",
    "RuntimeContinuation",
    "RuntimeContinuationPlanner",
    "SafeBoundaryContinuationPlan",
    "SafetyObservation",
    "SafetySnapshot",
    "TerminalClassification",
    "WorkspaceCheckpoint",
    "build_safe_boundary_continuation_plan",
    "classify_existing_claim",
    "classify_terminal",
    "continuation_envelope_problem",
    "header_matches_fact",
    "normalize_cwd",
    "plan_authoritative",
    "plan_latest",
    "select_resume_candidate",
    "start_matches_claim",
    "target_header_compatible",
    "terminal_repair_succeeded",
    "walk_lineage",
]
