"""Every golden vector, sent through the wire protocol (spec 10 §2–§7, spec 20 §1–§2, §8,
spec-phase3 §2, §4, spec-phase4 §1.2, §2.4).

One clause per vector: ``LEDGER-VEC:<vector id>``; the spec section is the vector's own
``spec`` field. Each vector operation is sent as its protocol operation
(:data:`conformance.vectors.PROTOCOL_OPERATIONS`: ``ledger.<operation>`` for spec 10/20,
``reconcile.*`` for the Phase 3 evidence codec and observation table, ``checkpoint.*`` for the
Phase 4 boundary codec and policy hash), and the clause's capability is that operation's
(docs/protocol.md §4): an implementation that does not claim ``runtime.reconcile`` or
``workspace.checkpoint`` has those clauses reported *not claimed*, never failed. The comparison
is :func:`conformance.vectors.check_vector`, the same one implementers in other languages
reproduce from ``conformance/vectors/README.md``.
"""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause
from conformance.protocol import OPERATIONS
from conformance.vectors import FAILING_OPERATIONS, PROTOCOL_OPERATIONS, Vector, check_vector, iter_vectors

#: Vector operation → (protocol operation, capability) (docs/protocol.md §4).
OPERATION_WIRE: dict[str, tuple[str, str]] = {op: (wire, OPERATIONS[wire]) for op, wire in PROTOCOL_OPERATIONS.items()}
#: Whole-result matchers for which a structured first-difference diff is meaningful.
_WHOLE = ("resolution", "transition", "bundle", "interpretation", "appendCheck")


def _params() -> list[Any]:
    out = []
    for vector in iter_vectors():
        mark = clause(f"LEDGER-VEC:{vector.id}", spec=vector.spec, capability=OPERATION_WIRE[vector.operation][1],
                      title=vector.description)
        out.append(pytest.param(vector, id=vector.id, marks=mark))
    return out


def _runner(maka: Any, answers: list[Any]) -> Any:
    def run(operation: str, input_: Mapping[str, Any]) -> Any:
        wire = OPERATION_WIRE[operation][0]
        reply = maka.call(wire, dict(input_))
        if reply.ok:
            answers.append(reply.result)
            return reply.result
        error = reply.error or {}
        if operation in FAILING_OPERATIONS:
            answers.append({"error": dict(error)})
            failure: dict[str, Any] = {"message": error.get("message"), "code": error.get("code")}
            details = error.get("details")
            if isinstance(details, Mapping) and "detail" in details:
                failure["detail"] = details["detail"]
            return {"error": failure}
        raise ClauseMismatch(f"{wire} must not fail, but answered {error.get('code')}: {error.get('message')}",
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
