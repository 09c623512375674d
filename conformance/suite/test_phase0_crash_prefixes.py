"""Phase 0 over the committed prefix of every failpoint P0–P11, after a real SIGKILL
(spec 20 §2; spec 30 §6.3, §9 #97–#101).

For each failpoint one clause ``PHASE0-CRASH-<Pk>``:

1. a fresh process opens a workspace of its own and appends the failpoint's committed prefix
   of the spec's 4-event reference ledger (``user``, ``call``, unbound ``response``,
   ``terminal``; spec 30 §6.3 step 2) through the *generic* append path — the reference ledger
   is the legacy one (no dispatch, no recovery facts), so spec 30 §6.3 step 3 appends it
   generically and no T1/T2/bundle is involved;
2. the idle process is killed with SIGKILL (the kill must be real: killed by SIGKILL, no
   survivor);
3. a second fresh process reopens the workspace, reads the run, projects it twice and reads
   it again: the events equal the prefix (canonical, in order), the two projections are
   identical, the ledger files are byte-identical across the reads (spec 30 §6.3 step 8), and
   no operation is unsettled (nothing was dispatched);
4. the projected plan meets the golden vector ``failpoints/p<k>-…`` (spec 20 §2's required
   decision: disposition, rejection reasons, operation status, replay ids, determinism —
   checked by :func:`conformance.vectors.check_vector`, the second "run" being the second
   projection), and the projected resolution and plan equal the reference's on the events
   read back.

These clauses arm no failpoint (the process is killed idle, after its writes returned), so
they need only ``store``; the in-transaction crash points are the live suite's business.
Workspaces are pytest's ``tmp_path``; prefixes come from the vectors, not from the
implementation.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal
from conformance.suite._store_support import (
    Store, canonical, expect_resolution_and_plan, expect_same_bytes, new_workspace,
)
from conformance.vectors import Vector, check_vector, iter_vectors


def _vectors() -> list[Any]:
    out = []
    for vector in iter_vectors(group="failpoints"):
        if vector.operation != "plan" or not vector.id.startswith("failpoints/p") or "highWater" in vector.input:
            continue
        fp = vector.input["failpoint"]
        mark = clause(f"PHASE0-CRASH-{fp}", spec=f"{vector.spec}; 30 §6.3", capability="store",
                      title=f"{fp}: after SIGKILL the committed prefix '{vector.input['committedPrefix']}' reopens intact "
                            f"and Phase 0 decides as spec 20 §2 requires")
        out.append(pytest.param(vector, id=fp, marks=mark))
    assert [p.id for p in out] == [f"P{n}" for n in range(12)], [p.id for p in out]
    return out


@pytest.mark.parametrize("vector", _vectors())
def test_crash_prefix(vector: Vector, maka: Any, tmp_path: Path) -> None:
    """spec 20 §2 (failpoint catalogue and required decisions), spec 30 §6.3 steps 1–8 and §9
    #97–#101: see the module docstring."""
    events = [dict(e) for e in vector.input["events"]]
    identity = {k: events[0][k] for k in ("sessionId", "runId")}
    ws = new_workspace(tmp_path)

    with maka.fresh() as writer:
        store = Store(writer, ws)
        store.open()
        for seq, event in enumerate(events, start=1):
            result = store.append(event)
            expect_equal(True, result.get("created"), what=f"created of {event['id']}")
            if "eventSeq" in result:
                expect_equal(seq, result["eventSeq"], what=f"eventSeq of {event['id']}")
        proof = writer.kill()
        if not proof.killed_by_sigkill or proof.survivors:
            raise ClauseMismatch("the SIGKILL of the idle writer was not real",
                                 evidence={"pid": proof.pid, "returncode": proof.returncode,
                                           "killedBySigkill": proof.killed_by_sigkill,
                                           "survivors": list(proof.survivors)})

    with maka.fresh() as reader:
        store = Store(reader, ws)
        store.open()
        before = store.file_bytes()
        read_back = store.events(identity)
        expect_equal([canonical(e) for e in events], read_back, what="events read back after the crash",
                     evidence={"failpoint": vector.input["failpoint"]})
        projections = [store.project(), store.project()]
        again = store.events(identity)
        expect_same_bytes(before, store.file_bytes(), "projecting and reading the reopened store")
        expect_equal(projections[0], projections[1], what="second projection")
        expect_equal(read_back, again, what="events re-read after projecting")
        store.close()

    runs = [store.run(identity, p) for p in projections]
    expect_equal(read_back, runs[0].get("events"), what="projected events")
    expect_equal([], projections[0].get("unsettledOperations"), what="unsettled operations (nothing dispatched)")
    expect_resolution_and_plan(runs[0], read_back, f"{vector.input['failpoint']} prefix")

    plans = iter(copy.deepcopy([r.get("plan") for r in runs]))

    def projected_plan(operation: str, _input: Mapping[str, Any]) -> Any:
        assert operation == "plan"
        return next(plans)

    mismatches = check_vector(vector, projected_plan)
    if mismatches:
        raise ClauseMismatch("; ".join(mismatches), evidence={"vector": vector.id, "plan": runs[0].get("plan")})
