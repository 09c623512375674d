"""Crash-lab clauses: one real trial per catalogue point × mode × fault (issue 6 items 2, 3, 5).

Clause ``CRASH-<point>-<mode>-<fault>`` runs :func:`crashlab.run_trial` once (seed 0; live
trials under ``t1_after_preflight_v1``) against the implementation under test: a fresh
workspace, a child process driven to the point (prefix: the committed prefix through the store
operations, spec 30 §6.3 / §6.2; live: ``faults.arm`` + the real operation, protocol §4.4),
a SIGKILL proved real, then fresh processes reopen, project twice, repair twice, resume, and
the oracles of ``docs/crashlab.md`` judge (allowed prefix and decision table from
``crashlab/catalogue.json``, effect log, torn tails, paused and racing writers). Every failed
check of the trial becomes the clause's :class:`ClauseMismatch`; an armed point that never
fired fails as *unreached*. The capability of a clause is the catalogue's for that mode, so an
implementation without faults or a runtime loop gets "not claimed", not "failed".

The ``powerloss`` / ``powerloss-torn`` clauses (issue 15, docs/crashlab-powerloss.md) belong to
the optional capability ``faults.powerloss`` (no level requires it) and need the catalogue's
capabilities too; where FUSE is missing (not Linux, no ``/dev/fuse``, no permission, no
``mfusepy``) they are reported "not run: <reason>", never passed.

Every clause carries its cell of the crash matrix (``crash``: point, mode, fault, trial id), so
the reports draw it whatever its outcome. A failing trial's evidence holds its timeline, and
when the run writes reports (``--maka-report-dir``) its failure bundle goes to
``<report dir>/crash-bundles/<trial id>/`` (``crashlab replay`` re-runs it).

``crashlab sweep`` runs the same trials with repetitions and seeds; these clauses are its one
trial per cell, sized to keep a certification well under five minutes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import crashlab
from conformance.clauses import ClauseMismatch, clause

#: Torn variants per clause (the sweep's default is more); enough to cut a frame boundary and
#: a byte offset of the WAL.
CLAUSE_TORN_VARIANTS = 2
#: Where a failing trial's bundle goes, under the run's report directory.
BUNDLE_DIR = "crash-bundles"


def _params() -> list[Any]:
    out = []
    for spec in crashlab.default_specs(protocols=["t1"]):
        point = crashlab.crash_point(spec.point)
        capability, *needs = point.capabilities(spec.mode)
        if spec.fault.startswith("powerloss"):  # an optional capability on top of the catalogue's
            capability, needs = "faults.powerloss", [capability, *needs]
        cid = f"CRASH-{spec.point.replace('_', '-')}-{spec.mode}-{spec.fault}"
        title = f"{spec.fault} at {spec.point} ({spec.mode}): {point.boundary}"
        cell = {"point": spec.point, "mode": crashlab.variant_of(spec.mode, spec.protocol), "fault": spec.fault,
                "trialId": spec.trial_id}
        out.append(pytest.param(spec, id=f"{spec.point}-{spec.mode}-{spec.fault}",
                                marks=clause(cid, spec=point.spec, capability=capability, needs=tuple(needs), title=title,
                                             crash=cell)))
    return out


def _bundle_dir(config: pytest.Config) -> Path | None:
    """``<report dir>/crash-bundles`` (per xdist worker under ``--dist each``, where every
    target runs the same trials), or ``None`` when the run writes no reports."""
    directory = config.getoption("maka_report_dir")
    if not directory:
        return None
    root = Path(directory) / BUNDLE_DIR
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return root / worker if worker and config.getoption("dist", "no") == "each" else root


@pytest.mark.parametrize("spec", _params())
def test_crash_trial(maka: Any, spec: crashlab.TrialSpec, pytestconfig: pytest.Config) -> None:
    from dataclasses import replace

    options = {"variants": CLAUSE_TORN_VARIANTS} if spec.fault == "torn" else {}
    result = crashlab.run_trial(replace(spec, command=tuple(maka.command), options=options),
                                timeout=max(60.0, 4 * maka.timeout), bundle_dir=_bundle_dir(pytestconfig))
    if result.outcome == "passed":
        return
    if result.outcome == "not_claimed":
        pytest.skip(f"not claimed: {result.message}")
    if result.outcome == "not_run":  # no FUSE here: "not run: <reason>", never passed
        pytest.skip(result.message)
    failed = result.failed_checks
    summary = "; ".join(f"{c.name}: {c.detail}" for c in failed) or result.message
    raise ClauseMismatch(f"{result.outcome}: {summary}"[:2000],
                         evidence={"trialId": spec.trial_id, "outcome": result.outcome, "message": result.message,
                                   "checks": [c.to_json() for c in result.checks], "stderrTail": result.stderr_tail[-4000:],
                                   "seed": spec.seed, "timeline": result.evidence.get("timeline", []),
                                   "bundle": str(Path(result.bundle).resolve()) if result.bundle else None})
