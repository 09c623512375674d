"""Draw the anchor ledgers, ask an implementation, write its answers (see the package docstring).

Why the families: the anchors must cover what real ledgers look like, not only the spec's
catalogue — healthy runs of both protocols (crash-cut and recovered), prefixes cut anywhere,
every named corruption, the edge families of ``maka_ref.testing.strategies.edge_ledgers``
(call ids reused across invocations, responses in another run, identity drift, empty tool
names, duplicate operations…), and the ledgers of the golden vectors. Only ledgers in the
contract's well-typed domain are recorded (``docs/spec-choices.md``): outside it any answer is
acceptable, so there is nothing to anchor.

Determinism: the cases are drawn by Hypothesis from a fixed seed with generation only (no
shrinking, no database), so the same seed and the same Hypothesis version give the same
ledgers; the files hold the ledgers themselves, so checking never depends on regenerating them.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from conformance.anchors import FORMAT_VERSION, HEADER_KIND, ask, expectation, requests_of

__all__ = ["FAMILIES", "RecordResult", "draw_cases", "record_anchors"]

#: Family → cases recorded by default (``vectors``: every vector ledger; its count is ignored).
FAMILIES: dict[str, int] = {"vectors": 0, "healthy": 1000, "truncated": 700, "corrupt": 1000, "edge": 2500}

def _hypothesis_examples(strategy: Any, n: int, seed: int) -> list[Any]:
    """``n`` examples of ``strategy`` drawn with ``seed`` (generation only: no shrinking, no database)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seed_

    out: list[Any] = []

    @seed_(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    collect()
    return out[:n]


def _plain(events: Any) -> list[Any]:
    from conformance._fuzz._values import wire

    return wire(list(events))


def _in_domain(events: list[Any]) -> bool:
    """Sendable as JSON (no NaN/infinity after double parsing) and JSON-object entries only."""
    try:
        json.dumps(events, allow_nan=False)
    except ValueError:
        return False
    return all(isinstance(e, dict) for e in events)


def draw_cases(family: str, n: int, seed: int) -> list[tuple[str, tuple[str, ...], list[Any]]]:
    """``(id, tags, events)`` of ``family`` (see :data:`FAMILIES`)."""
    from hypothesis import strategies as st

    from maka_ref.testing.strategies import corrupt_ledgers, edge_ledgers, ledgers

    cases: list[tuple[tuple[str, ...], list[Any]]] = []
    if family == "vectors":
        from conformance.vectors import iter_vectors

        seen: set[str] = set()
        for v in iter_vectors():
            events = v.input.get("events")
            if isinstance(events, list) and v.operation in ("resolve", "plan", "scan", "interpret", "code_mode_commits"):
                key = json.dumps(events, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    cases.append(((v.id,), events))
    elif family == "healthy":
        for ledger in _hypothesis_examples(ledgers(), n, seed):
            cases.append((("t1" if ledger.new_protocol else "legacy",), list(ledger.events)))
    elif family == "truncated":
        strategy = ledgers(crash=False, recovery=False).flatmap(
            lambda l: st.integers(0, len(l.events)).map(lambda k: (l.new_protocol, list(l.events[:k]))))
        for new_protocol, events in _hypothesis_examples(strategy, n, seed):
            cases.append((("t1" if new_protocol else "legacy",), events))
    elif family == "corrupt":
        for ledger in _hypothesis_examples(corrupt_ledgers(), n, seed):
            cases.append(((ledger.corruption,), list(ledger.events)))
    elif family == "edge":
        for ledger in _hypothesis_examples(edge_ledgers(), n, seed):
            cases.append((tuple(ledger.families) or ("no_edit",), list(ledger.events)))
    else:
        raise KeyError(f"unknown anchor family {family!r}; expected one of {', '.join(FAMILIES)}")
    out = []
    for index, (tags, events) in enumerate(cases):
        plain = _plain(events)
        if _in_domain(plain):
            out.append((f"{family}/{index:05d}", tags, plain))
    return out


@dataclass
class RecordResult:
    files: dict[str, int] = field(default_factory=dict)  # path → cases
    #: Cases the implementation refused on a well-typed ledger (``ok: false`` where the contract
    #: requires a result): not recorded, listed so a person looks at them.
    refused: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        total = sum(self.files.values())
        lines = [f"recorded {total} anchor cases in {len(self.files)} files in {self.seconds:.1f} s"]
        lines += [f"  {path}: {n}" for path, n in self.files.items()]
        if self.refused:
            lines.append(f"{len(self.refused)} case(s) refused by the implementation (not recorded):")
            lines += [f"  {r['id']}: {r['op']}: {r['error']}" for r in self.refused[:20]]
        return "\n".join(lines)


def _handshake_facts(client: Any) -> dict[str, Any]:
    impl = dict(client.handshake.raw.get("implementation") or {})
    needed = {"ledger.codec", "ledger.resolver", "ledger.plan"}
    missing = needed - set(client.handshake.raw.get("capabilities") or ())
    if missing:
        raise RuntimeError(f"the implementation does not claim {sorted(missing)}; anchors need all three")
    return impl


def record_anchors(impl: str, out_dir: str, *, counts: dict[str, int] | None = None, seed: int = 20261202,
                   out: TextIO | None = None, progress: Callable[[str], None] | None = None) -> RecordResult:
    """Record every family of ``counts`` (default :data:`FAMILIES`) from the implementation
    ``impl`` into ``out_dir`` (one ``<family>.jsonl.gz`` each; existing files are replaced
    only once the new one is complete)."""
    import shlex

    from conformance.protocol import validate_response
    from crashlab import ProtocolClient

    out = out if out is not None else sys.stderr
    counts = dict(FAMILIES if counts is None else counts)
    result = RecordResult()
    started = time.monotonic()
    os.makedirs(out_dir, exist_ok=True)
    with ProtocolClient.start(shlex.split(impl), request_timeout=300, validator=validate_response) as client:
        implementation = _handshake_facts(client)
        for family, n in counts.items():
            cases = draw_cases(family, n, seed)
            print(f"{family}: {len(cases)} ledgers drawn; asking {implementation.get('name')} …", file=out, flush=True)
            requests = [requests_of(events) for _, _, events in cases]
            flat = [r for rs in requests for r in rs]
            answers = iter(ask(client, flat))
            lines = []
            for (case_id, tags, events), case_requests in zip(cases, requests):
                answered = [(request, next(answers)) for request in case_requests]
                refused = [(r[0], a.get("error")) for r, a in answered
                           if not a.get("ok") and r[0] not in ("ledger.encode", "ledger.args_hash")
                           and not (r[0] == "ledger.prefix_digest")]
                if refused:
                    result.refused += [{"id": case_id, "op": op, "error": error} for op, error in refused]
                    continue
                lines.append({"id": case_id, "tags": list(tags), "events": events,
                              "expect": expectation(events, answered)})
            header = {"kind": HEADER_KIND, "version": FORMAT_VERSION, "family": family,
                      "upstream": implementation, "command": impl,
                      "generator": {"seed": seed, "requested": n, "hypothesis": _hypothesis_version(),
                                    "python": platform.python_version()},
                      "cases": len(lines)}
            path = os.path.join(out_dir, f"{family}.jsonl.gz")
            _write(path, header, lines)
            result.files[path] = len(lines)
            print(f"{family}: wrote {len(lines)} cases to {path}", file=out, flush=True)
    result.seconds = time.monotonic() - started
    return result


def _hypothesis_version() -> str:
    import hypothesis

    return hypothesis.__version__


def _write(path: str, header: dict[str, Any], lines: list[dict[str, Any]]) -> None:
    """Atomically: a temporary file beside ``path``, then rename (an interrupted run leaves the
    old file whole). ``mtime=0`` keeps the bytes reproducible."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as handle:
        for item in (header, *lines):
            handle.write((json.dumps(item, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode())
    os.replace(tmp, path)
