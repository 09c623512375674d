"""Run every golden vector in ``conformance/vectors/`` against ``maka_ref``.

The vectors (and their expectations, transcribed from spec 10 and spec 20) are described in
``conformance/vectors/README.md``; :func:`conformance.vectors.check_vector` does the
comparison. The mapping of each vector operation onto ``maka_ref`` lives in the product, in
:mod:`maka_ref.adapter._ledger_ops` (the wire protocol's ``ledger.*`` operations are the same
operations), so there is one copy; ``tests/maka_ref/adapter/test_protocol.py`` runs the same vectors
through a real adapter process.
"""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from conformance.protocol import OPERATIONS
from conformance.vectors import FAILING_OPERATIONS, PROTOCOL_OPERATIONS, Vector, check_vector, iter_vectors
from maka_ref.adapter import VECTOR_RUNNERS, run_vector_operation
from maka_ref.adapter._dispatch import Dispatcher

RUNNERS = VECTOR_RUNNERS
#: The Phase 3/4 vector operations run through the adapter's own operation table (in process):
#: their protocol ops (``reconcile.*``, ``checkpoint.*``) are thin handlers with no vector runner.
_DISPATCHER = Dispatcher()


def run_maka_ref(operation: str, input_: Mapping[str, Any]) -> Any:
    if operation in RUNNERS:
        return run_vector_operation(operation, input_)
    reply = _DISPATCHER.handle(PROTOCOL_OPERATIONS[operation], input_)
    if reply["ok"]:
        return reply["result"]
    error = reply["error"]
    assert operation in FAILING_OPERATIONS, f"{operation} must not fail: {error}"
    out = {"message": error["message"], "code": error["code"]}
    if "detail" in (error.get("details") or {}):
        out["detail"] = error["details"]["detail"]
    return {"error": out}


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------

VECTORS = list(iter_vectors())


def test_every_operation_has_a_runner() -> None:
    assert {v.operation for v in VECTORS} <= set(PROTOCOL_OPERATIONS)
    assert set(RUNNERS) <= set(PROTOCOL_OPERATIONS)
    assert set(PROTOCOL_OPERATIONS.values()) <= set(OPERATIONS)
    assert {op for op in PROTOCOL_OPERATIONS if op not in RUNNERS} <= {op for op, wire in PROTOCOL_OPERATIONS.items()
                                                                      if wire in _DISPATCHER.table}


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.id) for v in VECTORS])
def test_golden_vector(vector: Vector) -> None:
    """One vector: ``vector.spec`` names the spec text its expectation is copied from."""
    mismatches = check_vector(vector, run_maka_ref)
    assert not mismatches, f"{vector.id} ({vector.spec}): {vector.description}\n  " + "\n  ".join(mismatches)


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.id) for v in VECTORS if "failpoint" in v.input])
def test_reference_crash_ledger_matches_vector(vector: Vector) -> None:
    """Spec 20 §2: maka_ref's reference crash ledger is the vector's ledger (event ids aside).

    The spec names the four events ``user``/``call``/``response``/``terminal``; an
    implementation may make ids unique per failpoint, so only the label prefix is compared.
    """
    from maka_ref import reference_crash_ledger

    ours = reference_crash_ledger(vector.input["failpoint"])
    theirs = vector.input["events"]
    assert len(ours) == len(theirs)
    for mine, spec in zip(ours, theirs):
        assert str(mine["id"]).startswith(spec["id"])
        assert {k: v for k, v in mine.items() if k not in ("id", "ts")} == {k: v for k, v in spec.items() if k not in ("id", "ts")}
