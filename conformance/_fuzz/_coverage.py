"""How much of the spec's vocabulary the ledger generators reach (issue 12 item 4).

Why measure it: a differential search can only find a disagreement on a shape it generates. The
resolver's reasons, the scanner's issue codes, the plan's diagnostics... each is a branch of
the contract that an implementation may get wrong; a code the generators never produce is a
branch no equivalence clause and no fuzz run ever compares. So this module draws ``N``
examples from each generator the equivalence clauses and the fuzzer use (``valid``
``ledgers()``, ``corrupted`` ``corrupt_ledgers()``, ``truncated`` prefix cuts, ``edge``
``edge_ledgers()``, and the fuzzer's mix of all four, ``union``), runs the reference's
``resolve_recovery`` and ``build_resume_plan`` on each (in the wire's number semantics, as the
fuzzer sends them), and counts which codes of each category of :data:`CATEGORIES` the answers
contain, which pairs of codes occur together in one example, and which edge families were
applied.

The vocabularies are transcribed from the spec (the section is in each category); a code the
reference emits outside them is listed as ``unexpected`` (that would be a spec or reference
bug). :data:`UNREACHABLE` names the codes no ledger can produce, and why.

Pure apart from Hypothesis's generation: no I/O (the CLI writes ``coverage.json``). Same
``seed``, same numbers: the draw uses Hypothesis's ``@seed``, no example database, and no
constants of local modules (as a fuzz run, :func:`conformance._fuzz._runner._without_local_constants`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["CATEGORIES", "COVERAGE_FORMAT", "GENERATORS", "UNREACHABLE", "CoverageReport", "GeneratorCoverage",
           "codes_of", "measure_coverage", "render_coverage"]

COVERAGE_FORMAT = "maka-coverage/1"

#: Generator name → the :func:`~conformance._fuzz._ledgers.fuzz_ledgers` kinds it draws from.
GENERATORS: dict[str, tuple[str, ...]] = {
    "valid": ("valid",),
    "corrupted": ("corrupted",),
    "truncated": ("truncated",),
    "edge": ("edge",),
    "union": ("valid", "corrupted", "truncated", "edge"),
}

_SCANNER_CODES = ("duplicate_event_id", "invocation_identity_conflict", "semantic_lane_conflict", "duplicate_call",
                  "duplicate_operation", "duplicate_dispatch", "duplicate_response", "orphan_response",
                  "canonical_args_hash_conflict", "identity_conflict", "event_order_conflict")
#: Issue codes a plan reports under their own diagnostic code (spec 20 §1.3 item 3).
_OWN_DIAGNOSTIC = ("protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict")

#: Category → (spec section, its codes). A code is counted as ``"<category>:<code>"``.
CATEGORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "status": ("10 §6.1 Decision.status",
               ("completed", "parked", "definitely_not_dispatched", "indeterminate", "corruption")),
    "reason": ("10 §6.1 Reason",
               ("matching_response", "recovery_bundle_completed", "dispatch_without_response",
                "new_protocol_before_dispatch", "legacy_dispatch_unknown", "orphan_dispatch", "orphan_response",
                "duplicate_call", "duplicate_operation", "duplicate_dispatch", "duplicate_response",
                "canonical_args_hash_conflict", "identity_conflict", "event_order_conflict",
                "protocol_marker_invalid", "recovery_fact_corruption", "reconcile_matches_prior_state",
                "reconcile_diverged", "reconcile_unreadable")),
    "issue": ("10 §6.1 IssueCode; 10 §4.4", ("protocol_marker_invalid", *_SCANNER_CODES, "orphan_dispatch")),
    "origin": ("10 §6.1 settlementOrigin", ("normal_t2", "pre_t1_synthetic", "recovery_bundle")),
    "disposition": ("20 §1.1 disposition", ("safe_replay", "blocked")),
    "opstatus": ("20 §1.1 ToolOperation.status",
                 ("succeeded", "failed", "indeterminate", "not_dispatched", "parked", "corruption")),
    "diag": ("20 §1.3", ("runtime_offset_mismatch", "pending_tool_result", "tool_not_dispatched",
                         "tool_recovery_corruption", "tool_recovery_parked", "protocol_marker_invalid",
                         "duplicate_event_id", "semantic_lane_conflict", "tool_ledger_corruption",
                         "unmatched_tool_result", "tool_name_mismatch")),
    "diag-issue": ("20 §1.3 item 3 detail.issueCode",
                   tuple(c for c in (*_SCANNER_CODES, "orphan_dispatch") if c not in _OWN_DIAGNOSTIC)),
    "rejection": ("20 §1.4", ("dangling_tool_state", "runtime_offset_mismatch")),
}

#: Codes no input can produce, and why (they are in the spec's types, not in its algorithm).
UNREACHABLE: dict[str, str] = {
    "reason:protocol_marker_invalid": "spec 10 §6.1: in the Reason type, but no decision ever carries it "
                                      "(an invalid marker is a ledger-level issue, on no operation)",
    "issue:orphan_dispatch": "spec 10 §4.4: in the anchor's type list but never emitted; a dispatch without "
                             "a call is the issue event_order_conflict (and the decision reason orphan_dispatch)",
    "diag-issue:orphan_dispatch": "follows from issue:orphan_dispatch (spec 20 §1.3 item 3 reports resolver issues)",
}


def universe() -> list[str]:
    """Every code of every category, namespaced, in :data:`CATEGORIES` order."""
    return [f"{category}:{code}" for category, (_, codes) in CATEGORIES.items() for code in codes]


def reachable() -> list[str]:
    return [c for c in universe() if c not in UNREACHABLE]


def codes_of(resolution: Mapping[str, Any], plan: Mapping[str, Any]) -> set[str]:
    """The namespaced codes in one resolution (spec 10 §6.1) and one plan (spec 20 §1.1)."""
    out: set[str] = set()
    for d in resolution.get("decisions", ()):
        out.add(f"status:{d['status']}")
        out.add(f"reason:{d['reason']}")
        if "settlementOrigin" in d:
            out.add(f"origin:{d['settlementOrigin']}")
    out.update(f"issue:{i['code']}" for i in resolution.get("issues", ()))
    out.add(f"disposition:{plan['disposition']}")
    out.update(f"opstatus:{o['status']}" for o in plan.get("operations", ()))
    for diag in plan.get("diagnostics", ()):
        out.add(f"diag:{diag['code']}")
        detail = diag.get("detail")
        if diag["code"] == "tool_ledger_corruption" and isinstance(detail, Mapping) and "issueCode" in detail:
            out.add(f"diag-issue:{detail['issueCode']}")
    out.update(f"rejection:{r}" for r in plan.get("rejectionReasons", ()))
    return out


@dataclass
class GeneratorCoverage:
    """What ``examples`` examples of one generator reached: per code the number of examples
    that contained it, the pairs of codes seen together in one example, the edge families."""

    name: str
    examples: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    families: Counter[str] = field(default_factory=Counter)

    def add(self, codes: Iterable[str], families: Iterable[str] = ()) -> None:
        codes = sorted(set(codes))
        self.examples += 1
        self.counts.update(codes)
        self.pairs.update(itertools.combinations(codes, 2))
        self.families.update(set(families))

    def reached(self) -> set[str]:
        return set(self.counts)

    def missing(self) -> list[str]:
        """Reachable codes this generator never produced."""
        return [c for c in reachable() if c not in self.counts]

    def to_json(self) -> dict[str, Any]:
        known = set(universe())
        possible = reachable()
        categories = {}
        for category, (_, codes) in CATEGORIES.items():
            names = [f"{category}:{c}" for c in codes]
            want = [n for n in names if n not in UNREACHABLE]
            categories[category] = {"reached": sum(n in self.counts for n in want), "reachable": len(want),
                                    "missing": [n.split(":", 1)[1] for n in want if n not in self.counts]}
        pair_universe = len(possible) * (len(possible) - 1) // 2
        return {
            "examples": self.examples,
            "codes": {"reached": sum(c in self.counts for c in possible), "reachable": len(possible)},
            "categories": categories,
            "pairs": {"reached": len({p for p in self.pairs if p[0] in possible and p[1] in possible}),
                      "possible": pair_universe},
            "counts": {c: self.counts[c] for c in universe() if c in self.counts},
            "unexpected": sorted(c for c in self.counts if c not in known),
            "families": dict(sorted(self.families.items())),
        }


@dataclass
class CoverageReport:
    """One coverage measurement: per generator, what ``examples`` examples reached."""

    seed: int
    examples: int
    generators: dict[str, GeneratorCoverage]

    def missing(self, generator: str = "union") -> list[str]:
        return self.generators[generator].missing()

    def to_json(self) -> dict[str, Any]:
        from maka_ref.testing.strategies import EDGE_FAMILIES

        return {
            "format": COVERAGE_FORMAT,
            "seed": self.seed,
            "examplesPerGenerator": self.examples,
            "categories": {k: {"spec": spec, "codes": list(codes)} for k, (spec, codes) in CATEGORIES.items()},
            "unreachable": dict(UNREACHABLE),
            "edgeFamilies": list(EDGE_FAMILIES),
            "generators": {name: g.to_json() for name, g in self.generators.items()},
        }


def _draw(strategy: Any, examples: int, seed: int, body: Any) -> None:
    """Call ``body`` on ``examples`` examples of ``strategy``, reproducibly for ``seed``."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as seed_

    from conformance._fuzz._runner import _without_local_constants

    test = seed_(seed)(settings(max_examples=examples, database=None, deadline=None, derandomize=False,
                                suppress_health_check=list(HealthCheck), phases=(Phase.generate,),
                                verbosity=Verbosity.quiet, print_blob=False)(given(strategy)(body)))
    restore = _without_local_constants()
    try:
        test()
    finally:
        restore()


def _measure_into(coverage: GeneratorCoverage) -> Any:
    """The test body that adds one example's codes (and edge families) to ``coverage``."""
    from maka_ref import build_resume_plan, resolve_recovery

    from conformance._fuzz._values import wire

    def body(case: Any) -> None:
        events = wire(case.events)
        resolution = resolve_recovery(events).to_json()
        plan = build_resume_plan(events, case.high_water).to_json()
        coverage.add(codes_of(resolution, plan), case.families)

    return body


def _draw_fast(strategy: Any, examples: int, seed: int, body: Any) -> None:
    """:func:`_draw` with ``fuzz --search fast``'s generator (:mod:`._fast`)."""
    import itertools

    from conformance._fuzz._fast import fast_cases

    for _, case in itertools.islice(fast_cases(strategy, seed), examples):
        body(case)


def measure_coverage(examples: int = 1000, seed: int = 0,
                     generators: Sequence[str] = tuple(GENERATORS), search: str = "hypothesis") -> CoverageReport:
    """Draw ``examples`` examples of each of ``generators`` (names of :data:`GENERATORS`) with
    ``seed`` and count the codes the reference's answers reach (see the module docstring).
    ``search="fast"`` draws them as ``fuzz --search fast`` does."""
    from conformance._fuzz._ledgers import fuzz_ledgers

    unknown = [g for g in generators if g not in GENERATORS]
    if unknown:
        raise ValueError(f"unknown generators {unknown}; expected some of {list(GENERATORS)}")
    report = CoverageReport(seed, examples, {})
    for name in generators:
        report.generators[name] = GeneratorCoverage(name)
        draw = _draw_fast if search == "fast" else _draw
        draw(fuzz_ledgers(GENERATORS[name]), examples, seed, _measure_into(report.generators[name]))
    return report


def render_coverage(report: CoverageReport) -> str:
    """A plain-text table of ``report``: per category, reached/reachable per generator."""
    from maka_ref.testing.strategies import EDGE_FAMILIES

    names = list(report.generators)
    data = {n: g.to_json() for n, g in report.generators.items()}
    width = max(12, *(len(n) + 2 for n in names))
    lines = [f"coverage of the spec's codes: {report.examples} examples per generator, seed {report.seed}",
             f"{'category':<14}{'spec':<44}" + "".join(f"{n:>{width}}" for n in names)]
    for category, (spec, _) in CATEGORIES.items():
        cells = "".join(f"{'%d/%d' % (data[n]['categories'][category]['reached'], data[n]['categories'][category]['reachable']):>{width}}"
                        for n in names)
        lines.append(f"{category:<14}{spec[:43]:<44}{cells}")
    cells = "".join(f"{'%d/%d' % (data[n]['codes']['reached'], data[n]['codes']['reachable']):>{width}}" for n in names)
    lines.append(f"{'all codes':<58}{cells}")
    cells = "".join(f"{'%d/%d' % (data[n]['pairs']['reached'], data[n]['pairs']['possible']):>{width}}" for n in names)
    lines.append(f"{'code pairs':<58}{cells}")
    cells = "".join(f"{'%d/%d' % (len(data[n]['families']), len(EDGE_FAMILIES)):>{width}}" for n in names)
    lines.append(f"{'edge families':<58}{cells}")
    for name in names:
        missing = report.generators[name].missing()
        if missing and name in ("edge", "union"):
            lines.append(f"not reached by {name}: {', '.join(missing)}")
        unexpected = data[name]["unexpected"]
        if unexpected:
            lines.append(f"UNEXPECTED codes from {name} (not in the spec's vocabulary): {', '.join(unexpected)}")
    lines.append("unreachable by design: " + "; ".join(f"{c} ({why})" for c, why in UNREACHABLE.items()))
    return "\n".join(lines) + "\n"
