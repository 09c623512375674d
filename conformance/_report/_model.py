"""The result model of ``maka-conformance certify``: one :class:`ClauseResult` per clause,
gathered into one :class:`RunReport` per run.

Why plain dataclasses of JSON values: the pytest plugin builds them in worker processes, the
CLI merges them, and ``report.json`` must round-trip exactly (``from_json(to_json(r)) == r``)
so that reports from several platforms can be merged later into a matrix without the run.
Anything that is not JSON (tuples, non-finite floats, objects in ``evidence``) is turned into
JSON on the way out, see :func:`to_jsonable`.
"""

from __future__ import annotations

import json
import math
import platform as _platform
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, Mapping

from ._levels import CAPABILITIES, LEVELS, OPTIONAL_CAPABILITIES, LevelVerdict, compute_level

__all__ = [
    "OUTCOMES",
    "PROTOCOL_VERSION",
    "REPORT_FORMAT",
    "SPEC_COMMIT",
    "ClauseResult",
    "RunReport",
    "current_platform",
    "to_jsonable",
    "utc_now_iso",
]

#: Every outcome a clause can have, in the order the reports show them.
OUTCOMES: tuple[str, ...] = ("passed", "failed", "not_claimed", "error", "not_run")
#: The spec commit the clauses are transcribed from (see docs/spec-choices.md).
SPEC_COMMIT = "f19eede03"
#: The wire-protocol version (docs/protocol.md §3).
PROTOCOL_VERSION = 1
#: Version of the ``report.json`` layout itself; bumped on incompatible changes.
REPORT_FORMAT = 1


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data (dict/list/str/int/float/bool/None).

    Mappings get string keys, tuples and other sequences become lists, non-finite floats
    become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no such numbers and
    ``json.dumps`` would otherwise write invalid JSON), anything else becomes its ``repr``.
    ``-0.0`` is kept: the vectors distinguish it from ``0``.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return repr(value)


def utc_now_iso() -> str:
    """Now, as ISO 8601 UTC with a ``Z`` suffix and second precision (stable in reports)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def current_platform() -> dict[str, str]:
    """``{"system", "release", "machine"}`` of this process, as :mod:`platform` names them."""
    return {
        "system": _platform.system() or "unknown",
        "release": _platform.release(),
        "machine": _platform.machine(),
    }


def _python_version() -> str:
    return f"{_platform.python_implementation()} {_platform.python_version()}"


@dataclass
class ClauseResult:
    """The result of one clause (one pytest test tied to a spec section) on one target.

    ``outcome`` is one of :data:`OUTCOMES`; ``level`` one of the level names. ``diff`` is
    ``None`` or the first difference found, ``{"path", "expected", "actual"}`` (see
    :func:`conformance.reports.diff_json`). ``stderr_tail`` is the end of the implementation's
    standard error, kept for failures; ``target`` the xdist ``--tx`` target or ``"local"``.
    ``crash`` places a crash-lab clause (``CRASH-*``) in the crash matrix whatever its outcome:
    ``{"point", "mode", "fault", "trialId"}``; ``None`` for every other clause.
    """

    clause_id: str
    capability: str
    level: str
    outcome: str
    title: str = ""
    spec: str = ""
    duration_s: float = 0.0
    message: str = ""
    diff: dict[str, Any] | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""
    target: str = "local"
    crash: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Fail at construction: a typo in an outcome would otherwise silently not count.
        if self.outcome not in OUTCOMES:
            raise ValueError(f"{self.clause_id}: unknown outcome {self.outcome!r}")
        if self.level not in LEVELS:
            raise ValueError(f"{self.clause_id}: unknown level {self.level!r}")

    @property
    def ran(self) -> bool:
        """True when the clause was executed against the implementation (pass or fail)."""
        return self.outcome in ("passed", "failed", "error")

    @property
    def bad(self) -> bool:
        """True for the outcomes that block a level and fail CI (``failed``, ``error``)."""
        return self.outcome in ("failed", "error")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["duration_s"] = float(self.duration_s)
        data["diff"] = None if self.diff is None else to_jsonable(self.diff)
        data["evidence"] = to_jsonable(self.evidence)
        data["crash"] = None if self.crash is None else to_jsonable(self.crash)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ClauseResult":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class RunReport:
    """Everything one ``certify`` run found, ready for the writers and the matrix.

    ``implementation`` is the handshake's result (docs/protocol.md §3) plus the ``command``
    that started the implementation. ``level_reached`` and ``levels`` are derived from
    ``clauses`` by :meth:`finalized`; the writers always work on a finalized copy so that the
    four report files agree. ``harness_errors`` are problems of the run itself (a worker that
    died, a handshake that failed): a run with any of them certifies nothing.
    """

    suite_version: str
    implementation: dict[str, Any]
    clauses: list[ClauseResult] = field(default_factory=list)
    spec_commit: str = SPEC_COMMIT
    protocol_version: int = PROTOCOL_VERSION
    platform: dict[str, str] = field(default_factory=current_platform)
    python: str = field(default_factory=_python_version)
    started_at: str = field(default_factory=utc_now_iso)
    duration_s: float = 0.0
    workers: int = 1
    selection: dict[str, Any] = field(default_factory=lambda: {"level": None, "keyword": None})
    level_reached: str | None = None
    harness_errors: list[str] = field(default_factory=list)
    levels: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The run was stopped (SIGINT) before every selected clause ran: a partial report.
    interrupted: bool = False

    # -- derived views -------------------------------------------------------------------

    @property
    def claimed(self) -> frozenset[str]:
        """The capabilities the implementation claimed in its handshake."""
        return frozenset(self.implementation.get("capabilities") or ())

    @property
    def unknown_capabilities(self) -> list[str]:
        """Claimed names the suite does not know (ignored, but listed: protocol §3)."""
        return sorted(c for c in self.claimed if c not in CAPABILITIES and c not in OPTIONAL_CAPABILITIES)

    def counts(self) -> dict[str, int]:
        """Number of clauses per outcome, every outcome present (zeros included)."""
        counts = dict.fromkeys(OUTCOMES, 0)
        for clause in self.clauses:
            counts[clause.outcome] += 1
        return counts

    def by_capability(self) -> dict[str, list[ClauseResult]]:
        """Clauses grouped by capability: known capabilities in protocol order, then others
        sorted; claimed capabilities without clauses are present with an empty list."""
        names = {c.capability for c in self.clauses} | set(self.claimed)
        order = [c for c in CAPABILITIES if c in names] + sorted(names - set(CAPABILITIES))
        groups: dict[str, list[ClauseResult]] = {name: [] for name in order}
        for clause in self.clauses:
            groups[clause.capability].append(clause)
        return groups

    def capability_counts(self) -> dict[str, dict[str, int]]:
        """Per capability, the number of clauses per outcome (the capability × outcome table)."""
        table: dict[str, dict[str, int]] = {}
        for name, clauses in self.by_capability().items():
            counts = dict.fromkeys(OUTCOMES, 0)
            for clause in clauses:
                counts[clause.outcome] += 1
            table[name] = counts
        return table

    def failures(self) -> list[ClauseResult]:
        """Clauses that failed or errored, in report order."""
        return [c for c in self.clauses if c.bad]

    def verdict(self) -> LevelVerdict:
        """The level verdict recomputed from the clauses (see docs/levels.md)."""
        return compute_level(self.clauses, self.claimed, harness_errors=self.harness_errors,
                             selection=self.selection)

    def finalized(self) -> "RunReport":
        """A copy whose ``level_reached`` and ``levels`` agree with its clauses."""
        verdict = self.verdict()
        return replace(self, level_reached=verdict.level_reached, levels=verdict.per_level)

    # -- JSON ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"report_format": REPORT_FORMAT}
        for f in fields(self):
            if f.name != "clauses":
                data[f.name] = to_jsonable(getattr(self, f.name))
        data["duration_s"] = float(self.duration_s)
        data["clauses"] = [c.to_dict() for c in self.clauses]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunReport":
        fmt = data.get("report_format", REPORT_FORMAT)
        if fmt != REPORT_FORMAT:
            raise ValueError(f"unsupported report_format {fmt!r} (expected {REPORT_FORMAT})")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known and k != "clauses"}
        kwargs["clauses"] = [ClauseResult.from_dict(c) for c in data.get("clauses", [])]
        return cls(**kwargs)

    def to_json(self, *, indent: int | None = 2, ensure_ascii: bool = False) -> str:
        """The report as JSON text (keys in field order, valid JSON only: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=ensure_ascii,
                          allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> "RunReport":
        return cls.from_dict(json.loads(text))
