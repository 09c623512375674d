"""Every golden vector, sent through the wire protocol (spec 10 §2–§7, spec 20 §1–§2, §8).

One clause per vector: ``LEDGER-VEC:<vector id>``; the spec section is the vector's own
``spec`` field, and the capability is the one its operation belongs to (docs/protocol.md
§4.1). The comparison is :func:`conformance.vectors.check_vector`, the same one
implementers in other languages reproduce from ``conformance/vectors/README.md``.
"""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause
from conformance.vectors import Vector, check_vector, iter_vectors

#: Vector operation → protocol capability (docs/protocol.md §4.1).
OPERATION_CAPABILITY = {
    "args_hash": "ledger.codec", "encode": "ledger.codec", "decode": "ledger.codec", "predicates": "ledger.codec",
    "lane": "ledger.resolver", "generic_append": "ledger.resolver", "scan": "ledger.resolver",
    "validate_transition": "ledger.resolver", "validate_bundle": "ledger.resolver", "interpret": "ledger.resolver",
    "resolve": "ledger.resolver", "code_mode_commits": "ledger.resolver",
    "plan": "ledger.plan", "failpoint_catalog": "ledger.plan", "segment_replay": "ledger.plan",
    "composite_replay": "ledger.plan", "prefix_digest": "ledger.plan",
}
#: The only operations whose failure is a result (their messages are normative, spec 10 §2).
FAILING_OPERATIONS = frozenset({"args_hash", "encode", "decode"})
#: Whole-result matchers for which a structured first-difference diff is meaningful.
_WHOLE = ("resolution", "transition", "bundle", "interpretation", "appendCheck")


def _params() -> list[Any]:
    out = []
    for vector in iter_vectors():
        mark = clause(f"LEDGER-VEC:{vector.id}", spec=vector.spec, capability=OPERATION_CAPABILITY[vector.operation],
                      title=vector.description)
        out.append(pytest.param(vector, id=vector.id, marks=mark))
    return out


def _runner(maka: Any, answers: list[Any]) -> Any:
    def run(operation: str, input_: Mapping[str, Any]) -> Any:
        reply = maka.call(f"ledger.{operation}", dict(input_))
        if reply.ok:
            answers.append(reply.result)
            return reply.result
        error = reply.error or {}
        if operation in FAILING_OPERATIONS:
            answers.append({"error": dict(error)})
            return {"error": {"message": error.get("message")}}
        raise ClauseMismatch(f"ledger.{operation} must not fail, but answered {error.get('code')}: {error.get('message')}",
                             evidence={"error": dict(error)})

    return run


@pytest.mark.parametrize("vector", _params())
def test_golden_vector(vector: Vector, maka: Any) -> None:
    answers: list[Any] = []
    mismatches = check_vector(vector, _runner(maka, answers))
    if not mismatches:
        return
    diff = None
    actual = answers[-1] if answers else None
    for key in _WHOLE:
        if key in vector.expect:
            from conformance.reports import diff_json

            diff = diff_json(vector.expect[key], actual)
            break
    raise ClauseMismatch("; ".join(mismatches), diff=diff,
                         evidence={"vector": vector.id, "operation": vector.operation, "input": vector.input, "actual": actual})
