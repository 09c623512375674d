"""Agreement with upstream on thousands of ledgers (issue 12): LEDGER-ANCHOR-*.

Why: the anchor vectors (``conformance/vectors/anchor/``, format in :mod:`conformance.anchors`)
are upstream Maka's own answers — resolution, scan, Phase 0 plan (its free wording set
aside), canonical encodings, argument hashes, prefix digests — on 5,000+ ledgers of every
family the generators reach: healthy and crash-cut runs of both protocols, every named
corruption, the real-ledger edge families (call ids reused across invocations, responses in
another run, identity drift, empty tool names, duplicate operations…) and the golden vectors'
ledgers. Where the spec is silent, upstream's answer *is* the contract, so an implementation
must give the same answers. Each clause checks one chunk of one family, so a certification
spreads them over its workers; a failure lists the first cases that differ with their first
differing JSON path and the ledger.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.anchors import anchor_headers, ask, check_anchor_case, load_anchor_file, requests_of
from conformance.clauses import ClauseMismatch, clause

#: Cases per clause: small enough for a certification's workers to share the families.
CHUNK = 500
#: Differences shown in a failure message (all of them go into the evidence, up to this many).
SHOWN = 5


def _chunks() -> list[Any]:
    params = []
    for header in anchor_headers():
        family, count = header["family"], header["cases"]
        for start in range(0, count, CHUNK):
            part = start // CHUNK + 1
            clause_id = f"LEDGER-ANCHOR-{family}-{part}"
            params.append(pytest.param(
                family, start, id=f"{family}-{part}",
                marks=clause(clause_id, spec="10 §2; 10 §4.3; 10 §6; 20 §1; 20 §1.9", capability="ledger.plan",
                             needs=("ledger.codec", "ledger.resolver"),
                             title=f"resolution, scan, plan, encodings and hashes equal upstream's on anchor ledgers "
                                   f"{family} #{start + 1}–{min(start + CHUNK, count)}")))
    return params


@pytest.mark.parametrize("family,start", _chunks())
def test_agrees_with_upstream(maka: Any, family: str, start: int) -> None:
    """Spec 10 §2 (encode, args hash), §4.3 (scan), §6 (resolution); spec 20 §1 (plan, wording
    aside: ``maka_ref.testing.contract``), §1.9 (prefix digest): each answer equals upstream's
    recorded one (``conformance/vectors/anchor/<family>.jsonl.gz``; upstream commit in its header)."""
    anchor_file = load_anchor_file(family)
    cases = anchor_file.cases[start:start + CHUNK]
    plans = [requests_of(case.events) for case in cases]
    answers = iter(ask(maka, [r for rs in plans for r in rs]))
    failures = []
    for case, requests in zip(cases, plans):
        answered = [(request, next(answers)) for request in requests]
        diffs = check_anchor_case(case, answered)
        if diffs:
            failures.append({"case": case.id, "tags": list(case.tags), **diffs[0], "events": case.events})
    if failures:
        first = failures[0]
        commit = (anchor_file.header.get("upstream") or {}).get("commit", "?")
        lines = [f"{len(failures)} of {len(cases)} anchor ledgers differ from upstream ({commit[:9]}); first: "
                 f"{first['case']} ({', '.join(first['tags'])}): {first['op']} at {first['path']}"]
        lines += [f"  {f['case']}: {f['op']} at {f['path']}" for f in failures[1:SHOWN]]
        raise ClauseMismatch("\n".join(lines), diff={k: first[k] for k in ("path", "expected", "actual")},
                             evidence={"differences": failures[:SHOWN], "upstream": anchor_file.header.get("upstream")})
