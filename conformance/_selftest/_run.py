"""The self-test runner and its report (see the package docstring)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["MutantOutcome", "SelftestResult", "VariantOutcome", "list_mutants", "list_variants", "mutant_command",
           "run_selftest", "variant_command"]

KILLING_OUTCOMES = ("failed", "error")


def list_mutants() -> list[dict[str, Any]]:
    """The corpus as JSON-able dicts, in layer order (imports the registry only)."""
    from maka_ref.adapter import _mutants

    return [_mutants.MUTANTS[name].to_json() for name in _mutants.names()]


def mutant_command(name: str | None) -> str:
    """The implementation command line of mutant ``name`` (``None``: the plain reference)."""
    argv = [sys.executable, "-m", "maka_ref.adapter"] + (["--mutant", name] if name else [])
    return shlex.join(argv)


def list_variants() -> list[dict[str, Any]]:
    """The legal-variant corpus as JSON-able dicts (imports the registry only)."""
    from maka_ref.adapter import _variants

    return [v.to_json() for v in _variants.VARIANTS.values()]


def variant_command(name: str) -> str:
    """The implementation command line of legal variant ``name``."""
    return shlex.join([sys.executable, "-m", "maka_ref.adapter", "--variant", name])


@dataclass
class VariantOutcome:
    """A legal variant (a correct implementation making a free choice differently): it must
    pass every clause it runs; each clause it fails is a *false alarm* of the suite."""

    name: str
    spec: str
    description: str
    selection: dict[str, Any]
    status: str  # "passed" | "false_alarm" | "error"
    false_alarms: list[str] = field(default_factory=list)
    clauses_run: int = 0
    duration_s: float = 0.0
    error: str | None = None
    report_dir: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "description": self.description, "selection": self.selection,
                "status": self.status, "falseAlarms": list(self.false_alarms), "clausesRun": self.clauses_run,
                "durationS": round(self.duration_s, 2), "error": self.error, "reportDir": self.report_dir}


@dataclass
class MutantOutcome:
    name: str
    layer: str
    spec: str
    family: str
    description: str
    selection: dict[str, Any]
    #: "not_gradable": a mutant that ``needs`` a capability this machine cannot exercise (the
    #: power-loss filesystem without FUSE) and whose every selected clause was *not run*: it
    #: is neither killed nor a survivor, and it is left out of the score (``error`` says why).
    status: str  # "killed" | "survived" | "error" | "not_gradable"
    killed_by: list[str] = field(default_factory=list)
    clauses_run: int = 0
    duration_s: float = 0.0
    error: str | None = None
    report_dir: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "layer": self.layer, "spec": self.spec, "family": self.family,
                "description": self.description, "selection": self.selection, "status": self.status,
                "killedBy": list(self.killed_by), "clausesRun": self.clauses_run,
                "durationS": round(self.duration_s, 2), "error": self.error, "reportDir": self.report_dir}


@dataclass
class SelftestResult:
    mode: str  # "default" | "full"
    workers: str
    mutants: list[MutantOutcome]
    clauses_run: list[str]  # every clause that ran against at least one mutant
    baseline_failures: dict[str, str] = field(default_factory=dict)  # clause -> outcome on the reference
    baseline_error: str | None = None
    duration_s: float = 0.0
    variants: list[VariantOutcome] = field(default_factory=list)
    #: SIGINT stopped the self-test: ``mutants`` are those whose certification finished (of
    #: ``planned``); the score is that of a partial run.
    interrupted: bool = False
    planned: int = 0

    @property
    def false_alarms(self) -> list[VariantOutcome]:
        return [v for v in self.variants if v.status == "false_alarm"]

    @property
    def killed(self) -> list[MutantOutcome]:
        return [m for m in self.mutants if m.status == "killed"]

    @property
    def survivors(self) -> list[MutantOutcome]:
        return [m for m in self.mutants if m.status == "survived"]

    @property
    def errors(self) -> list[MutantOutcome]:
        return [m for m in self.mutants if m.status == "error"]

    @property
    def not_gradable(self) -> list[MutantOutcome]:
        return [m for m in self.mutants if m.status == "not_gradable"]

    @property
    def graded(self) -> list[MutantOutcome]:
        """The mutants the score is over: every one this machine could grade."""
        return [m for m in self.mutants if m.status != "not_gradable"]

    @property
    def score(self) -> float:
        return len(self.killed) / len(self.graded) if self.graded else 0.0

    def kills_by_clause(self) -> dict[str, list[str]]:
        """Every clause that ran → the mutants it killed (possibly none), sorted by clause."""
        table: dict[str, list[str]] = {c: [] for c in self.clauses_run}
        for m in self.mutants:
            for clause_id in m.killed_by:
                table.setdefault(clause_id, []).append(m.name)
        return dict(sorted(table.items()))

    def clauses_killing_none(self) -> list[str]:
        return [c for c, names in self.kills_by_clause().items() if not names]

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        if self.errors or self.baseline_error or any(v.status == "error" for v in self.variants):
            return 2
        return 0 if not self.survivors and not self.false_alarms else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "workers": self.workers,
            "interrupted": self.interrupted,
            "planned": self.planned or len(self.mutants),
            "durationS": round(self.duration_s, 1),
            "score": {"killed": len(self.killed), "total": len(self.graded), "ratio": round(self.score, 4),
                      "survived": [m.name for m in self.survivors], "errors": [m.name for m in self.errors],
                      "notGradable": {m.name: m.error for m in self.not_gradable}},
            "baseline": {"failures": dict(self.baseline_failures), "error": self.baseline_error},
            "mutants": [m.to_json() for m in self.mutants],
            "clauses": {c: names for c, names in self.kills_by_clause().items()},
            "clausesKillingNone": self.clauses_killing_none(),
            "variants": [v.to_json() for v in self.variants],
            "falseAlarms": {v.name: list(v.false_alarms) for v in self.false_alarms},
        }

    def render_markdown(self) -> str:
        lines = [f"# Mutant self-test ({self.mode})", "",
                 f"Mutation score: **{len(self.killed)}/{len(self.graded)} = {self.score:.0%}** "
                 f"(survived: {', '.join(m.name for m in self.survivors) or 'none'}; "
                 f"errors: {', '.join(m.name for m in self.errors) or 'none'}; "
                 f"not gradable here: {', '.join(m.name for m in self.not_gradable) or 'none'}). "
                 f"Wall time {self.duration_s:.0f} s with {self.workers} worker(s).", ""]
        if self.interrupted:
            lines[2:2] = [f"**Interrupted (SIGINT)**: a partial self-test of the {len(self.mutants)} of "
                          f"{self.planned} mutants whose certification finished.", ""]
        if self.baseline_error:
            lines += [f"**Baseline error**: {self.baseline_error}", ""]
        if self.baseline_failures:
            lines += ["Clauses failing on the unmutated reference (not counted as kills): "
                      + ", ".join(f"`{c}` ({o})" for c, o in sorted(self.baseline_failures.items())), ""]
        lines += ["## Mutants", "", "| mutant | layer | spec | status | killed by | selection |", "|---|---|---|---|---|---|"]
        for m in self.mutants:
            shown = ", ".join(f"`{c}`" for c in m.killed_by[:6])
            if len(m.killed_by) > 6:
                shown += f" (+{len(m.killed_by) - 6} more)"
            if m.error:
                shown = f"error: {m.error.splitlines()[0][:120]}"
            sel = " ".join(f"{k}={v!r}" for k, v in m.selection.items() if v) or "whole suite"
            lines.append(f"| `{m.name}` | {m.layer} | {m.spec} | {m.status} | {shown} | {sel} |")
        kills = self.kills_by_clause()
        lines += ["", "## Clauses that kill mutants", "", "| clause | mutants killed |", "|---|---|"]
        for clause_id, names in kills.items():
            if names:
                lines.append(f"| `{clause_id}` | {', '.join(f'`{n}`' for n in names)} |")
        none = self.clauses_killing_none()
        lines += ["", f"## Clauses that kill no mutant ({len(none)} of {len(kills)} run)", ""]
        lines.append(", ".join(f"`{c}`" for c in none) if none else "none")
        if self.variants:
            lines += ["", "## Legal variants (must pass: a failing clause is a false alarm)", "",
                      "| variant | spec | status | clauses run | false alarms |", "|---|---|---|---|---|"]
            for v in self.variants:
                alarms = ", ".join(f"`{c}`" for c in v.false_alarms) or (f"error: {v.error.splitlines()[0][:120]}"
                                                                         if v.error else "none")
                lines.append(f"| `{v.name}` | {v.spec} | {v.status} | {v.clauses_run} | {alarms} |")
        return "\n".join(lines) + "\n"

    def write(self, directory: str | Path) -> dict[str, Path]:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "selftest.json", "markdown": out / "selftest.md"}
        paths["json"].write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        paths["markdown"].write_text(self.render_markdown(), encoding="utf-8")
        return paths


def _selection(mutant: Any, full: bool) -> dict[str, Any]:
    return {"level": None, "keyword": None} if full else {"level": mutant.level, "keyword": mutant.keyword}


def _union_keyword(selections: Sequence[dict[str, Any]]) -> str | None:
    """One ``-k`` expression selecting every clause of every selection (None: the whole suite)."""
    keywords = []
    for s in selections:
        if s.get("keyword") is None or s.get("level") is not None:
            return None
        keywords.append(f"({s['keyword']})")
    return " or ".join(dict.fromkeys(keywords)) or None


def _parallelism(workers: int | str) -> int:
    """How many mutants run at once: ``-n W`` (``auto``: the CPU count)."""
    import os

    if workers == "auto":
        return os.cpu_count() or 1
    try:
        return max(1, int(workers))
    except (TypeError, ValueError):
        return 1


def run_selftest(mutants: Sequence[str] | None = None, *, full: bool = False, workers: int | str = 2,
                 report_dir: str | Path = "maka-conformance-selftest", baseline: bool = True,
                 request_timeout: float = 30.0, run_timeout: float = 1800.0,
                 on_mutant: Callable[[MutantOutcome], None] | None = None,
                 variants: Sequence[str] | None = None,
                 on_variant: Callable[[VariantOutcome], None] | None = None) -> SelftestResult:
    """Certify every mutant (or those named) and grade the suite; writes nothing but the
    per-run report directories under ``report_dir`` (call :meth:`SelftestResult.write`).

    ``workers`` (``-n``): how many mutants are certified at once, each certification in one
    pytest process; the baseline run uses ``workers`` xdist workers.

    ``variants``: the legal variants to certify after the mutants (``None``: every one; an
    empty list: none). Each must pass every clause of its selection (the whole suite with
    ``full``); a clause it fails is a false alarm and makes the self-test fail."""
    from conformance.certify import interrupt_runs
    from maka_ref.adapter import _mutants

    try:
        return _run_selftest(mutants, full=full, workers=workers, report_dir=report_dir, baseline=baseline,
                             request_timeout=request_timeout, run_timeout=run_timeout, on_mutant=on_mutant,
                             variants=variants, on_variant=on_variant, registry=_mutants)
    finally:
        interrupt_runs(False)  # a later run in this process starts afresh


def _run_selftest(mutants: Sequence[str] | None, *, full: bool, workers: int | str, report_dir: str | Path,
                  baseline: bool, request_timeout: float, run_timeout: float,
                  on_mutant: Callable[[MutantOutcome], None] | None, variants: Sequence[str] | None,
                  on_variant: Callable[[VariantOutcome], None] | None, registry: Any) -> SelftestResult:
    """:func:`run_selftest`. SIGINT (``KeyboardInterrupt`` here, or a certification that comes
    back interrupted) stops every certification of the process; the result then holds the
    mutants that finished and is marked ``interrupted``."""
    from conformance.certify import certify, interrupt_runs

    _mutants = registry
    started = time.monotonic()
    names = list(mutants) if mutants else _mutants.names()
    unknown = [n for n in names if n not in _mutants.MUTANTS]
    if unknown:
        raise KeyError(f"unknown mutant(s): {', '.join(unknown)}")
    root = Path(report_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    result = SelftestResult("full" if full else "default", str(workers), [], [], planned=len(names))

    def stop() -> SelftestResult:
        result.interrupted = True
        result.mutants = [outcomes[name] for name in names if name in outcomes]
        result.clauses_run = sorted(clauses_run)
        result.duration_s = time.monotonic() - started
        return result

    outcomes: dict[str, MutantOutcome] = {}
    clauses_run: set[str] = set()
    if baseline:
        selections = [_selection(_mutants.MUTANTS[n], full) for n in names]
        levels = {s.get("level") for s in selections}
        keyword = _union_keyword(selections)
        level = levels.pop() if len(levels) == 1 and keyword is None else None
        base = certify(None, level=level, keyword=keyword, workers=workers, report_dir=root / "baseline",
                       request_timeout=request_timeout, run_timeout=run_timeout)
        if getattr(base, "interrupted", False):
            return stop()
        if base.harness_error is not None:
            result.baseline_error = base.harness_error
        for report in base.reports:
            for c in report.clauses:
                if c.outcome in KILLING_OUTCOMES:
                    result.baseline_failures[c.clause_id] = c.outcome

    parallel = _parallelism(workers)

    def certify_mutant(name: str) -> MutantOutcome:
        m = _mutants.MUTANTS[name]
        selection = _selection(m, full)
        directory = root / "mutants" / name
        # W mutants at a time, each certification in one process: on small selections the
        # xdist start-up would cost more than the clauses (docs/selftest.md, "Cost").
        run = certify(mutant_command(name), level=selection["level"], keyword=selection["keyword"],
                      workers=0, report_dir=directory,
                      request_timeout=request_timeout, run_timeout=run_timeout)
        if getattr(run, "interrupted", False):  # a stand-in result (tests) has no such field
            raise _Interrupted(name)
        outcome = MutantOutcome(m.name, m.layer, m.spec, m.family, m.description, selection, "survived",
                                duration_s=run.duration_s, report_dir=str(directory))
        if run.harness_error is not None:
            outcome.status, outcome.error = "error", run.harness_error
            return outcome
        killers: list[str] = []
        not_run: list[str] = []
        for report in run.reports:
            for c in report.clauses:
                if c.outcome in ("not_claimed", "skipped", "not_run"):
                    if c.outcome == "not_run":
                        not_run.append(c.message or "not run")
                    continue
                clauses_run.add(c.clause_id)
                outcome.clauses_run += 1
                if c.outcome in KILLING_OUTCOMES and c.clause_id not in result.baseline_failures:
                    killers.append(c.clause_id)
        outcome.killed_by = sorted(set(killers))
        if outcome.killed_by:
            outcome.status = "killed"
        elif m.needs and outcome.clauses_run == 0 and not_run:
            # nothing of its selection could run here (no FUSE): not a survivor, not a kill
            outcome.status, outcome.error = "not_gradable", f"{m.needs}: {not_run[0]}"
        elif any(r.harness_errors for r in run.reports):
            outcome.status = "error"
            outcome.error = "; ".join(str(e) for r in run.reports for e in r.harness_errors)
        return outcome

    if parallel > 1 and len(names) > 1:
        from concurrent.futures import ThreadPoolExecutor, as_completed
        from concurrent.futures import wait as wait_futures

        pool = ThreadPoolExecutor(max_workers=min(parallel, len(names)))
        futures = {pool.submit(certify_mutant, name): name for name in names}
        try:
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[outcome.name] = outcome
                if on_mutant is not None:
                    on_mutant(outcome)
        except (KeyboardInterrupt, _Interrupted):
            pool.shutdown(wait=False, cancel_futures=True)
            interrupt_runs()  # every certify() on the pool writes its partial report and returns
            wait_futures([f for f in futures if not f.cancelled()], timeout=60)
            return stop()
        finally:
            pool.shutdown(wait=False)
    else:
        for name in names:
            try:
                outcomes[name] = certify_mutant(name)
            except (_Interrupted, KeyboardInterrupt):
                interrupt_runs()
                return stop()
            if on_mutant is not None:
                on_mutant(outcomes[name])
    result.mutants = [outcomes[name] for name in names]
    result.clauses_run = sorted(clauses_run)
    try:
        result.variants = _certify_variants(variants, full=full, workers=workers, root=root,
                                            request_timeout=request_timeout, run_timeout=run_timeout,
                                            on_variant=on_variant)
    except (_Interrupted, KeyboardInterrupt):
        return stop()
    result.duration_s = time.monotonic() - started
    return result


class _Interrupted(Exception):
    """A certification came back interrupted (SIGINT): the self-test stops."""


def _certify_variants(names: Sequence[str] | None, *, full: bool, workers: int | str, root: Path,
                      request_timeout: float, run_timeout: float,
                      on_variant: Callable[[VariantOutcome], None] | None) -> list[VariantOutcome]:
    """Certify each legal variant on its selection; every failing clause is a false alarm."""
    from conformance.certify import certify
    from maka_ref.adapter import _variants

    chosen = list(_variants.VARIANTS) if names is None else list(names)
    unknown = [n for n in chosen if n not in _variants.VARIANTS]
    if unknown:
        raise KeyError(f"unknown variant(s): {', '.join(unknown)}")
    outcomes = []
    for name in chosen:
        v = _variants.VARIANTS[name]
        selection = {"level": None, "keyword": None if full else v.keyword}
        directory = root / "variants" / name
        run = certify(variant_command(name), keyword=selection["keyword"], workers=workers, report_dir=directory,
                      request_timeout=request_timeout, run_timeout=run_timeout)
        if getattr(run, "interrupted", False):  # a stand-in result (tests) has no such field
            raise _Interrupted(name)
        outcome = VariantOutcome(v.name, v.spec, v.description, selection, "passed", duration_s=run.duration_s,
                                 report_dir=str(directory))
        if run.harness_error is not None or any(r.harness_errors for r in run.reports):
            outcome.status = "error"
            outcome.error = run.harness_error or "; ".join(str(e) for r in run.reports for e in r.harness_errors)
        else:
            for report in run.reports:
                for c in report.clauses:
                    if c.outcome in ("not_claimed", "skipped", "not_run"):
                        continue
                    outcome.clauses_run += 1
                    if c.outcome in KILLING_OUTCOMES:
                        outcome.false_alarms.append(c.clause_id)
            if outcome.false_alarms:
                outcome.status = "false_alarm"
        outcomes.append(outcome)
        if on_variant is not None:
            on_variant(outcome)
    return outcomes
