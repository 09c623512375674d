"""Failure bundles: a shrunk disagreement written down so anyone can re-run it in seconds.

Why a file and not a log line: a disagreement found by a random search at 3 a.m. in CI must be
reproducible by a person at their desk, against the same or a fixed implementation, without
re-running the search. A bundle holds everything needed: the seed, the operation, the minimal
input (a ledger, or a write schedule), what the reference answered, what the implementation
answered, the first differing JSON path, who answered (command line and handshake), and the
bucket it stands for (a run writes one bundle per bucket, :mod:`._buckets`).
``maka-conformance replay`` re-runs it; ``--as-vector`` turns a ledger bundle into a golden
vector so the case becomes a permanent regression test (``docs/fuzzing.md``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any, Mapping

from conformance._fuzz._search import Disagreement

__all__ = ["BUNDLE_FORMAT", "bundle_as_vector", "load_bundle", "make_bundle", "replay_bundle", "write_bundle"]

BUNDLE_FORMAT = "maka-fuzz-bundle/1"

#: Ledger operation → (vector group, vector operation, spec reference, expect key).
_VECTOR_OPS = {
    "ledger.resolve": ("resolver", "resolve", "10 §6.1", "resolution"),
    "ledger.plan": ("phase0-plan", "plan", "20 §1.1", "planSubset"),
}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:12]


def make_bundle(d: Disagreement, *, seed: int, command: list[str], handshake: Mapping[str, Any] | None,
                shrink: str, stderr_tail: str = "", bucket: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bundle of ``d``; ``bucket`` (``{"op", "path", "count"}``) says which kind of
    disagreement it stands for and how often the search met it."""
    from conformance._fuzz._values import parse_like_client as plain  # frozen values, -0, lone surrogates

    return {
        "format": BUNDLE_FORMAT,
        "seed": seed,
        "property": d.prop,
        "case": d.case,
        "op": d.op,
        "step": d.step,
        "input": plain(d.input),
        "expected": plain(d.expected),
        "actual": plain(d.actual),
        "diff": plain(d.diff),
        "bucket": dict(bucket) if bucket is not None else None,
        "referenceFailed": d.reference_failed,
        "shrink": shrink,
        "implementation": {"command": list(command), "handshake": dict(handshake) if handshake else None},
        "stderrTail": stderr_tail[-4000:],
        "replay": "maka-conformance replay BUNDLE [--impl CMD]",
    }


def write_bundle(bundle: Mapping[str, Any], directory: str) -> str:
    """Write ``bundle`` as ``<directory>/<property>-<op>-<digest>.json``; returns the path."""
    os.makedirs(directory, exist_ok=True)
    name = f"{bundle['property']}-{bundle['op'].replace('.', '_')}-{_digest(bundle['input'])}.json"
    path = os.path.join(directory, name)
    text = json.dumps(bundle, indent=1, ensure_ascii=True, allow_nan=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".bundle-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path


def load_bundle(path: str) -> dict[str, Any]:
    """The bundle at ``path`` (``ValueError`` when it is not one)."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"{path}: not a {BUNDLE_FORMAT} file")
    if data.get("property") not in ("ledger", "schedule") or not isinstance(data.get("input"), dict):
        raise ValueError(f"{path}: property must be ledger or schedule, with an input object")
    return data


def replay_bundle(bundle: Mapping[str, Any], impl: Any, ref: Any, workspace_root: str) -> Disagreement | None:
    """Re-run ``bundle`` on ``impl`` against ``ref``; the disagreement, or ``None`` if they agree."""
    from conformance._fuzz._ledgers import HIGH_WATER, LedgerCase, check_ledger
    from conformance._fuzz._schedules import Workspaces, check_schedule

    try:
        if bundle["property"] == "ledger":
            input_ = bundle["input"]
            check_ledger(LedgerCase(bundle.get("case", "replay"), list(input_["events"]), input_.get(HIGH_WATER)),
                         impl, ref, (bundle["op"],))
        else:
            steps = [(s["op"], dict(s.get("params", {}))) for s in bundle["input"]["steps"]]
            check_schedule(steps, impl, ref, Workspaces(workspace_root), bundle.get("case", "schedule"))
    except Disagreement as d:
        return d
    return None


def _vector_input(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """The vector's input: the events, and for a plan the expected high-water the fuzzer sent."""
    from conformance._fuzz._ledgers import HIGH_WATER

    out = {"events": bundle["input"]["events"]}
    if bundle.get("op") == "ledger.plan" and bundle["input"].get(HIGH_WATER) is not None:
        out[HIGH_WATER] = bundle["input"][HIGH_WATER]
    return out


def bundle_as_vector(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """A golden vector (``conformance/vectors/vector.schema.json`` ``$defs/vector``) for a ledger
    bundle: the minimal ledger as input, the *reference's* answer as the expectation.

    ``ValueError`` for a schedule bundle (store behaviour has no vector operation) and for a
    bundle whose reference answer is not a result.
    """
    if bundle.get("property") != "ledger" or bundle.get("op") not in _VECTOR_OPS:
        raise ValueError("only ledger.resolve / ledger.plan bundles can become golden vectors; a write schedule "
                         "is store behaviour (add it as a store clause instead, docs/fuzzing.md)")
    expected = bundle.get("expected") or {}
    if not expected.get("ok") or not isinstance(expected.get("result"), dict):
        raise ValueError("the reference did not answer with a result; there is no expectation to record")
    group, operation, spec, key = _VECTOR_OPS[bundle["op"]]
    digest = _digest(bundle["input"])
    diff = bundle.get("diff") or {}
    return {
        "id": f"{group}/fuzz-{digest}",
        "spec": spec,
        "description": (f"Regression found by maka-conformance fuzz (seed {bundle.get('seed')}, {bundle.get('case')} "
                        f"ledger): the first difference was at {diff.get('path')}."),
        "operation": operation,
        "input": _vector_input(bundle),
        "expect": {key: expected["result"]},
    }
