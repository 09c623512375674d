"""The vocabulary every part of the crash lab shares: what a trial is, what it found.

Why one small module: the catalogue, the drivers, the fault modes, the sweep, the failure
bundles and the conformance clauses all pass trials and results around; if each had its own
notion of "a check that failed" the reports would disagree. Everything here is plain data
that round-trips through JSON (a failure bundle stores a :class:`TrialSpec` and its
:class:`TrialResult`; ``crashlab replay`` rebuilds the spec from it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

__all__ = ["FAULTS", "MODES", "OUTCOMES", "Check", "TrialResult", "TrialSpec"]

#: How the implementation is driven to the point: ``prefix`` appends the committed prefix
#: through the store operations and kills the idle process (spec 30 §6.3, the upstream way);
#: ``live`` runs a scripted turn and is killed inside the real tool loop (issue 6 item 2).
MODES: tuple[str, ...] = ("prefix", "live")
#: What happens to the process at the point (issue 6 item 3): ``kill`` SIGKILL; ``torn`` kill
#: then tear the un-synced tail of the WAL / JSONL; ``pause`` SIGSTOP inside a tool, repair
#: and resume in a second process, then SIGCONT; ``race`` N processes resume one boundary;
#: ``powerloss`` / ``powerloss-torn`` (issue 15) SIGKILL on the power-loss filesystem, then
#: everything not made durable is lost (torn: a prefix of the last write survives).
FAULTS: tuple[str, ...] = ("kill", "torn", "pause", "race", "powerloss", "powerloss-torn")
#: ``unreached``: the armed point was never announced (a must-hit point that did not fire is
#: a failure, never a pass); ``not_claimed``: the implementation lacks a needed capability;
#: ``not_run``: this machine cannot run the trial (no FUSE for a power-loss fault): the message
#: says why; never a pass, never a failure.
OUTCOMES: tuple[str, ...] = ("passed", "failed", "unreached", "not_claimed", "error", "not_run")


@dataclass(frozen=True)
class TrialSpec:
    """One trial: drive ``command`` to ``point`` in ``mode``, apply ``fault``, check.

    ``seed`` makes every random choice of the trial (torn offsets, race timing jitter, the
    script's content) reproducible; ``repetition`` numbers repeated trials of one
    (point, mode, fault). ``command`` is the implementation's command line (``None``: the
    reference adapter).
    """

    point: str
    mode: str
    fault: str = "kill"
    seed: int = 0
    repetition: int = 0
    command: tuple[str, ...] | None = None
    protocol: str = "t1_after_preflight_v1"  # the script protocol for live trials
    options: Mapping[str, Any] = field(default_factory=dict)  # fault-specific knobs (e.g. racers)

    @property
    def trial_id(self) -> str:
        proto = "" if self.mode == "prefix" else f"-{'t1' if self.protocol.startswith('t1') else 'legacy'}"
        return f"{self.point}-{self.mode}{proto}-{self.fault}-s{self.seed}-r{self.repetition}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["command"] = list(self.command) if self.command is not None else None
        data["options"] = dict(self.options)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TrialSpec":
        command = data.get("command")
        return cls(point=data["point"], mode=data["mode"], fault=data.get("fault", "kill"), seed=int(data.get("seed", 0)),
                   repetition=int(data.get("repetition", 0)), command=tuple(command) if command else None,
                   protocol=data.get("protocol", "t1_after_preflight_v1"), options=dict(data.get("options") or {}))


@dataclass(frozen=True)
class Check:
    """One oracle's verdict: ``name`` is stable (``kill_was_real``, ``projection_stable``,
    ``reading_never_writes``, ``allowed_prefix``, ``decision_table``, ``repair_idempotent``,
    ``resume_outcome``, ``effect_log``, ``no_half_event``, ``single_continuation``, …)."""

    name: str
    ok: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class TrialResult:
    """What one trial found. ``outcome`` is ``passed`` iff every check is ok."""

    spec: TrialSpec
    outcome: str
    checks: list[Check] = field(default_factory=list)
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""
    duration_s: float = 0.0
    bundle: str | None = None  # path of the failure bundle, when one was written

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json(), "trialId": self.spec.trial_id, "outcome": self.outcome,
                "checks": [c.to_json() for c in self.checks], "message": self.message, "evidence": self.evidence,
                "stderrTail": self.stderr_tail, "durationS": self.duration_s, "bundle": self.bundle}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TrialResult":
        return cls(spec=TrialSpec.from_json(data["spec"]), outcome=data["outcome"],
                   checks=[Check(c["name"], bool(c["ok"]), c.get("detail", "")) for c in data.get("checks", [])],
                   message=data.get("message", ""), evidence=dict(data.get("evidence") or {}),
                   stderr_tail=data.get("stderrTail", ""), duration_s=float(data.get("durationS", 0.0)),
                   bundle=data.get("bundle"))
