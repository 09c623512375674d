"""The crash-point catalogue (``crashlab/catalogue.json``) as typed objects.

Why JSON with a thin loader: the catalogue is the contract a third-party implementer reads
(which points exist, what a kill there may leave, what repair and resume must then do), so it
is data anyone can open without Python; this module only gives it types and the few queries
the engine, the sweep and the conformance clauses need. The JSON cites its spec sections.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from crashlab._lab.model import FAULTS, MODES, TrialSpec

__all__ = ["CATALOGUE_PATH", "CrashPoint", "catalogue", "crash_point", "default_specs", "variant_of"]

CATALOGUE_PATH = Path(__file__).resolve().parents[1] / "catalogue.json"
#: Short protocol names (clause ids, trial ids) → the script's ``protocol`` value.
PROTOCOLS: Mapping[str, str] = {"t1": "t1_after_preflight_v1", "legacy": "legacy"}


#: Faults about the continuation claim, not the tool boundary: run under ``t1`` only.
T1_ONLY_FAULTS = frozenset({"pause", "race"})


def variant_of(mode: str, protocol: str) -> str:
    """The key of ``allowed`` / ``recovery`` for a trial: ``prefix``, ``live-t1``, ``live-legacy``."""
    if mode == "prefix":
        return "prefix"
    return "live-t1" if protocol.startswith("t1") else "live-legacy"


@dataclass(frozen=True)
class CrashPoint:
    """One catalogue entry (see ``catalogue.json``'s description for the fields)."""

    id: str
    group: str
    failpoint: str | None
    hit: int
    boundary: str
    spec: str
    capability: str
    raw: Mapping[str, Any]

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(m for m in MODES if m in self.raw.get("modes", {}))

    def faults(self, mode: str) -> tuple[str, ...]:
        return tuple(self.raw.get("faults", {}).get(mode, ()))

    def mode_info(self, mode: str) -> Mapping[str, Any]:
        return self.raw["modes"][mode]

    def capabilities(self, mode: str) -> tuple[str, ...]:
        """Every capability a trial in ``mode`` needs (the first one is the clause's)."""
        info = self.mode_info(mode)
        return (info["capability"], *info.get("needs", ()))

    def protocols(self, mode: str) -> tuple[str, ...]:
        return tuple(self.mode_info(mode).get("protocols", ("t1",))) if mode == "live" else ("t1",)

    def allowed(self, variant: str) -> list[Mapping[str, Any]]:
        return list(self.raw.get("allowed", {}).get(variant, ()))

    def recovery(self, variant: str) -> Mapping[str, Any]:
        return self.raw.get("recovery", {}).get(variant, {})

    @property
    def covers(self) -> tuple[str, ...]:
        """Every failpoint id of ``conformance/protocol/failpoints.json`` this entry stands for."""
        own = (self.failpoint,) if self.failpoint else ()
        return own + tuple(self.raw.get("covers", ()))

    @property
    def unreachable(self) -> str | None:
        return self.raw.get("unreachable")


@lru_cache(maxsize=1)
def _load() -> tuple[CrashPoint, ...]:
    data = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    out = []
    for p in data["points"]:
        out.append(CrashPoint(p["id"], p["group"], p.get("failpoint"), int(p.get("hit", 1)), p["boundary"], p["spec"],
                              p["capability"], p))
    ids = [p.id for p in out]
    if len(ids) != len(set(ids)):
        raise ValueError("crashlab/catalogue.json: duplicate point ids")
    for p in out:
        for mode in p.raw.get("faults", {}):
            bad = set(p.faults(mode)) - set(FAULTS)
            if bad:
                raise ValueError(f"crashlab/catalogue.json: {p.id} names unknown faults {sorted(bad)}")
    return tuple(out)


def catalogue() -> tuple[CrashPoint, ...]:
    """Every crash point, in catalogue order."""
    return _load()


def crash_point(point_id: str) -> CrashPoint:
    for p in _load():
        if p.id == point_id:
            return p
    raise KeyError(f"no crash point {point_id!r} in the catalogue")


def default_specs(*, points: Iterable[str] | None = None, modes: Iterable[str] | None = None,
                  faults: Iterable[str] | None = None, trials: int = 1, seed: int = 0,
                  command: tuple[str, ...] | None = None, protocols: Iterable[str] | None = None) -> list[TrialSpec]:
    """Every (point, mode, protocol, fault) the catalogue supports, filtered, ``trials`` times
    each. Seeds are ``seed + repetition`` so a failure's seed alone reproduces it."""
    wanted = set(points) if points is not None else None
    if wanted is not None:
        unknown = wanted - {p.id for p in _load()}
        if unknown:
            raise KeyError(f"unknown crash points: {sorted(unknown)}")
    out: list[TrialSpec] = []
    for p in _load():
        if wanted is not None and p.id not in wanted:
            continue
        for mode in p.modes:
            if modes is not None and mode not in set(modes):
                continue
            for short in p.protocols(mode):
                if protocols is not None and short not in set(protocols):
                    continue
                for fault in p.faults(mode):
                    if faults is not None and fault not in set(faults):
                        continue
                    if fault in T1_ONLY_FAULTS and short != "t1":
                        continue
                    for rep in range(trials):
                        out.append(TrialSpec(point=p.id, mode=mode, fault=fault, seed=seed + rep, repetition=rep,
                                             command=command, protocol=PROTOCOLS[short]))
    return out
