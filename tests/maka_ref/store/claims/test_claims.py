"""Continuation authority: claims, starts and their effect on appends (spec 30 §2.6, §2.8,
§9 items 70–86, §7.3 C4–C6; spec 20 §3.10–§3.12)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from maka_ref._store import ContinuationClaimError, RunSealedError, StoreError, arm
from maka_ref._store.claims.codec import ContinuationClaimSchemaError, decode_claim
from maka_ref._store.engine.failpoints import FailpointTriggered
from maka_ref.testing import families as fam
from maka_ref.testing import race_worker as rw
from maka_ref.testing.process_race import run_race
from tests.maka_ref.store.support import open_store, raw

GOLDEN_PREFIX = "sha256:316557ba0aa070940fd890417e2777d4c5149974110a013e67d3e9c581124eec"
GOLDEN_MANIFEST = "sha256:3a976ce5d55eccb0cea1c4de5c9cbdc2f46177a8ba3f63ddc36bd0dc031e7bf4"
TARGET = ("target-invocation", "target-run", "target-turn")


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    rw.prepare_database(tmp_path, with_continuation_source=True)
    return tmp_path


@pytest.fixture()
def store(root: Path):
    with open_store(root) as s:
        yield s


def claim_of(store, claim_id="claim-1", target=TARGET, **kw):
    return rw.continuation_claim(store, claim_id, target, **kw)


def start_event(claim: dict, provenance="runtime_admission", *, marker=True, ts=None, id="start-1", **over):
    source = claim["boundary"]["segments"][-1]
    target = claim["target"]
    body = {
        "protocol": "continuation_start_v2",
        "provenance": provenance,
        "claimId": claim["claimId"],
        "boundaryDigest": claim["boundaryDigest"],
        "immediateSource": {
            **source["identity"],
            "highWater": source["position"]["lastEventSeq"],
            "prefixDigest": source["prefixDigest"],
        },
        "replayManifestDigest": claim["boundary"]["manifestDigest"],
        "providerProjectionVersion": 1,
        "providerReplayDigest": claim["providerReplayDigest"],
    }
    body.update(over)
    actions = {"continuationStart": body}
    if marker:
        actions["runtimeProtocol"] = {"toolBoundary": "t1_after_preflight_v1"}
    return {"id": id, **target, "partial": False, "role": "system", "author": "system",
            "ts": claim["claimedAt"] if ts is None else ts, "actions": actions}


def target_text(id="target-text", ts=40, target=TARGET, **over):
    invocation, run_id, turn = target
    return fam.event(id, ts=ts, role="model", author="agent", content={"kind": "text", "text": id},
                     invocationId=invocation, runId=run_id, turnId=turn, **over)


def source_text(id="source-late", ts=50):
    return fam.event(id, ts=ts, role="model", author="agent", content={"kind": "text", "text": id},
                     **rw.SOURCE_IDENTITY)


def claim_rows(root: Path) -> int:
    with raw(root) as conn:
        return conn.execute("SELECT COUNT(*) FROM runtime_continuation_claims").fetchone()[0]


def msg(excinfo) -> str:
    return excinfo.value.message


# ------------------------------------------------------------------ codec


def test_golden_digests_through_the_store(store):
    """Spec 30 §2.6 golden: the prepared source run's prefix and manifest digests."""
    claim = claim_of(store)
    assert claim["boundary"]["segments"][0]["prefixDigest"] == GOLDEN_PREFIX
    assert claim["boundaryDigest"] == GOLDEN_MANIFEST


def test_codec_round_trip_and_strictness(store):
    """Spec 20 §3.10 decode-time validation."""
    claim = claim_of(store)
    decoded = decode_claim(claim)
    assert decoded.to_json() == decode_claim(decoded.to_json()).to_json()
    for mutate in (
        lambda c: c.update(extra=1),
        lambda c: c.update(providerProjectionVersion=2),
        lambda c: c.update(providerProjectionVersion=True),
        lambda c: c.update(claimedAt=-1),
        lambda c: c.update(boundaryDigest="sha256:" + "0" * 64),
        lambda c: c["target"].update(sessionId="session-2"),
        lambda c: c["target"].update(runId="continuation-source-run"),
        lambda c: c["targetRunHeader"].update(status="running"),
        lambda c: c["targetRunHeader"].update(updatedAt=21),
        lambda c: c["targetRunHeader"]["continuationSource"].update(claimId="other"),
        lambda c: c["boundary"]["segments"][0]["position"].update(lastEventSeq=3, eventCount=3),
    ):
        bad = copy.deepcopy(claim)
        mutate(bad)
        with pytest.raises(ContinuationClaimSchemaError):
            decode_claim(bad)


def test_reserved_workspace_stream_refused(store):
    """Spec 30 §2.6: refused before the transaction (after decoding), nothing written."""
    from maka_ref._plan.prefix.immutable import build_boundary_cursor

    claim = claim_of(store)
    reserved = "maka_workspace_authority"
    segment = copy.deepcopy(claim["boundary"]["segments"][0])
    segment["identity"]["sessionId"] = reserved
    boundary = build_boundary_cursor([segment]).to_json()
    claim.update(boundary=boundary, boundaryDigest=boundary["manifestDigest"])
    claim["target"]["sessionId"] = reserved
    header = claim["targetRunHeader"]
    header["sessionId"] = reserved
    header["continuationSource"].update(boundaryDigest=boundary["manifestDigest"],
                                        replayManifestDigest=boundary["manifestDigest"])
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim)
    assert msg(excinfo) == "Continuation cannot target the reserved workspace authority stream"
    assert excinfo.value.code == "continuation_reserved_stream"
    assert store.list_claims(reserved) == []


# ------------------------------------------------------------------ §9 items 70–86


def test_item_70_claim_twice_acquired_then_existing(store):
    claim = claim_of(store)
    assert store.claim_continuation(claim).kind == "acquired"
    again = store.claim_continuation(claim)
    assert again.kind == "existing" and again.claim.claim_id == "claim-1"
    other = store.claim_continuation(claim_of(store, "claim-2", ("i2", "r2", "t2")))
    assert other.kind == "existing" and other.claim.claim_id == "claim-1"  # keyed by boundary
    assert [r.claim_id for r in store.list_claims("session-1")] == ["claim-1"]


def test_item_71_no_source_events(root, store):
    claim = claim_of(store)
    with raw(root) as conn:
        conn.execute("DELETE FROM runtime_events WHERE run_id = 'continuation-source-run'")
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim)
    assert msg(excinfo) == "Continuation source boundary is missing"
    assert excinfo.value.code == "continuation_source_missing"


def test_item_72_non_terminal_source_then_terminated(store):
    claim = claim_of(store, source_run="run-1", up_to=2)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim)
    assert msg(excinfo) == "Continuation source boundary must end with exactly one terminal RuntimeEvent"
    assert excinfo.value.code == "continuation_source_not_terminal"
    assert store.ensure_terminal_durable(fam.event("run-1-end", ts=9, status="failed")).created


def test_item_73_raw_suffix_after_terminal(root, store):
    with raw(root) as conn:
        conn.execute(
            "INSERT INTO runtime_events SELECT 'suffix', session_id, invocation_id, run_id, turn_id, 3, "
            "'text', replace(payload_json, 'continuation-source-user', 'suffix'), committed_at "
            "FROM runtime_events WHERE event_id = 'continuation-source-user'"
        )
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim_of(store))
    assert msg(excinfo) == "Continuation source boundary must end with exactly one terminal RuntimeEvent"


def test_item_74_source_advanced_after_planning(store):
    claim = claim_of(store, source_run="run-1", up_to=2)
    store.ensure_terminal_durable(fam.event("run-1-end", ts=9, status="failed"))
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim)
    assert msg(excinfo) == "Continuation source boundary changed"
    assert excinfo.value.code == "continuation_source_changed"


def test_ancestor_boundary_missing_and_changed(store):
    """§2.6 step 2 for ancestors (pinned to their high-water)."""
    store.ensure_terminal_durable(fam.event("run-1-end", ts=9, status="failed"))
    ancestor = claim_of(store, source_run="run-1")["boundary"]["segments"][0]
    good = claim_of(store, ancestors=(ancestor,))
    forged = copy.deepcopy(ancestor)
    forged["position"].update(lastEventSeq=4, eventCount=4)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim_of(store, ancestors=(forged,)))
    assert msg(excinfo) == "Continuation ancestor boundary is missing for run-1"
    forged = copy.deepcopy(ancestor)
    forged["prefixDigest"] = "sha256:" + "1" * 64
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim_of(store, ancestors=(forged,)))
    assert msg(excinfo) == "Continuation ancestor boundary changed for run-1"
    assert store.claim_continuation(good).kind == "acquired"
    with pytest.raises(ContinuationClaimError) as excinfo:  # ancestors are sealed too
        store.append(fam.event("run-1-late", ts=60, role="model", author="agent",
                               content={"kind": "text", "text": "x"}))
    assert excinfo.value.code == "continuation_source_sealed"


def test_item_75_source_append_sealed(store):
    store.claim_continuation(claim_of(store))
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.append(source_text())
    assert msg(excinfo) == "RuntimeEvent source boundary is sealed by continuation claim claim-1"
    assert excinfo.value.code == "continuation_source_sealed"
    user, terminal = rw.continuation_source_events()
    assert store.append(user).created is False  # exact retries keep dedup semantics (§2.8)


def test_item_76_failpoint_after_claim_insert(root, store):
    claim = claim_of(store)
    with arm("after_continuation_claim_insert", "raise"):
        with pytest.raises(FailpointTriggered):
            store.claim_continuation(claim)
    assert claim_rows(root) == 0 and store.read_claim("claim-1") is None
    assert store.claim_continuation(claim).kind == "acquired"


def test_item_77_second_boundary_reusing_target_conflicts(store):
    store.ensure_terminal_durable(fam.event("run-1-end", ts=9, status="failed"))
    first = claim_of(store)
    assert store.claim_continuation(first).kind == "acquired"
    second = store.claim_continuation(claim_of(store, "claim-2", TARGET, source_run="run-1"))
    assert second.kind == "conflict" and second.claim.claim_id == "claim-1"
    same_id = store.claim_continuation(claim_of(store, "claim-1", ("i3", "r3", "t3"), source_run="run-1"))
    assert same_id.kind == "conflict"
    assert len(store.list_claims("session-1")) == 1


def test_item_78_raw_edit_of_source_run_id(root, store):
    store.claim_continuation(claim_of(store))
    with raw(root) as conn:
        conn.execute("UPDATE runtime_continuation_claims SET source_run_id = 'edited'")
    expected = "Continuation claim row/payload identity mismatch for claim-1"
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.read_claim("claim-1")
    assert msg(excinfo) == expected and excinfo.value.code == "continuation_claim_row_mismatch"
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.append(source_text())
    assert msg(excinfo) == expected
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim_of(store, "claim-9", ("i9", "r9", "t9")))
    assert msg(excinfo) == expected


def test_item_79_target_not_empty(store):
    store.append(target_text())
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.claim_continuation(claim_of(store))
    assert msg(excinfo) == "Continuation claim target RuntimeEvent ledger is not empty"
    assert excinfo.value.code == "continuation_target_not_empty"


def test_item_80_target_reserved_until_start(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.append(target_text())
    assert msg(excinfo) == "RuntimeEvent target sequence one is reserved for continuation-start by claim claim-1"
    assert excinfo.value.code == "continuation_target_reserved"
    result = store.commit_continuation_start("claim-1", start_event(claim))
    assert (result.created, result.event_seq) == (True, 1)
    assert store.append(target_text()).event_seq == 2


def test_target_identity_conflict(store):
    store.claim_continuation(claim_of(store))
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.append(target_text(target=("target-invocation", "other-run", "other-turn")))
    assert msg(excinfo) == "RuntimeEvent continuation target identity conflict for claim-1"
    assert excinfo.value.code == "continuation_target_identity_conflict"
    with pytest.raises(ContinuationClaimError):
        store.append(target_text(target=("other-inv", "other-run", "target-turn")))


def test_item_81_start_via_generic_append_and_twice(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    with pytest.raises(StoreError) as excinfo:
        store.append(start_event(claim))
    assert msg(excinfo) == "Continuation start facts require the continuation authority writer"
    assert store.commit_continuation_start(claim, start_event(claim)).created is True
    again = store.commit_continuation_start(claim, start_event(claim))
    assert (again.created, again.event_seq) == (False, 1)
    record = store.read_claim("claim-1")
    assert (record.start_event_id, record.start_kind) == ("start-1", "runtime_admission")
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_start(claim, start_event(claim, id="start-2"))
    assert msg(excinfo) == "Continuation claim already has a different start event"
    assert excinfo.value.code == "continuation_start_conflict"


def test_item_82_repair_provenance(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    repair = start_event(claim, "claim_repair", marker=False)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_start("claim-1", repair, "runtime_admission")
    assert msg(excinfo) == "Invalid continuation-start authority event"
    result = store.commit_continuation_repair_start("claim-1", repair)
    assert result.created and result.start_kind == "claim_repair"
    assert store.read_claim("claim-1").start_kind == "claim_repair"


def test_item_83_marker_only_on_admission(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_repair_start("claim-1", start_event(claim, "claim_repair", marker=True))
    assert msg(excinfo) == "Invalid continuation-start authority event"
    assert store.commit_continuation_start("claim-1", start_event(claim, marker=True)).created


def test_item_84_continuation_run_terminal(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    store.commit_continuation_start("claim-1", start_event(claim))
    terminal = fam.event("target-end", ts=41, status="completed", invocationId=TARGET[0], runId=TARGET[1],
                         turnId=TARGET[2])
    assert store.ensure_terminal_durable(terminal).created
    assert store.ensure_terminal_durable(terminal).created is False
    with pytest.raises(RunSealedError):
        store.append(target_text("target-late", ts=42))
    with pytest.raises(StoreError) as excinfo:
        store.append(target_text("target-fresh", ts=42, target=("fresh-inv", TARGET[1], TARGET[2])))
    assert msg(excinfo).startswith(("RuntimeEvent run identity conflict", "RuntimeEvent continuation target"))


def test_item_85_bad_replay_digest_or_early_ts(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    for bad in (
        start_event(claim, providerReplayDigest="sha256:" + "2" * 64),
        start_event(claim, ts=claim["claimedAt"] - 1),
    ):
        with pytest.raises(ContinuationClaimError) as excinfo:
            store.commit_continuation_start("claim-1", bad)
        assert msg(excinfo) == "Invalid continuation-start authority event"
        assert excinfo.value.code == "continuation_start_invalid"
    record = store.read_claim("claim-1")
    assert record.start_event_id is None and store.read_run_events("session-1", TARGET[1]) == []


def test_item_86_failpoint_after_start_insert(store):
    claim = claim_of(store)
    store.claim_continuation(claim)
    with arm("after_continuation_start_insert", "raise"):
        with pytest.raises(FailpointTriggered):
            store.commit_continuation_start("claim-1", start_event(claim))
    assert store.read_run_events("session-1", TARGET[1]) == []
    assert store.read_claim("claim-1").start_event_id is None
    assert store.commit_continuation_start("claim-1", start_event(claim)).created


def test_start_requires_claim_and_identical_claim(store):
    claim = claim_of(store)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_start("claim-1", start_event(claim))
    assert msg(excinfo) == "Continuation start requires an acquired durable claim"
    store.claim_continuation(claim)
    other = copy.deepcopy(claim)
    other["providerReplayDigest"] = "sha256:" + "3" * 64
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_start(other, start_event(other))
    assert msg(excinfo) == "Continuation start claim identity conflict"


def test_read_claim_for_target(store):
    store.claim_continuation(claim_of(store))
    assert store.read_claim_for_target("session-1", TARGET[1]).claim_id == "claim-1"
    assert store.read_claim_for_target("session-1", "nope") is None
    record = store.read_claim_by_boundary(GOLDEN_MANIFEST)
    assert record.to_json() == {"claim": decode_claim(claim_of(store)).to_json()}


# ------------------------------------------------------------------ C4–C6 (real processes)


@pytest.fixture()
def prepared(tmp_path: Path) -> Path:
    return rw.prepare_database(tmp_path, with_continuation_source=True)


def _race(db: Path, *modes: str):
    return run_race(list(modes), db, work_dir=db.parent)


def test_c4_claim_vs_claim(prepared: Path):
    outcome = _race(prepared, "claim", "claim")
    assert outcome.exit_codes == [0, 0], outcome.describe()
    kinds = sorted(line for w in outcome.workers for line in w.stdout.splitlines() if line.startswith("CLAIM "))
    assert kinds == ["CLAIM acquired", "CLAIM existing"], outcome.describe()


def test_c5_claim_nonterminal_vs_append_source(prepared: Path):
    outcome = _race(prepared, "claim_nonterminal", "append_source")
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    with open_store(prepared.parent) as store:
        assert len(store.read_run_events("session-1", "run-1")) == 3
        assert store.list_claims("session-1") == []


def test_c6_claim_fixed_target_vs_append_target(prepared: Path):
    outcome = _race(prepared, "claim_fixed_target", "append_target")
    assert outcome.sorted_exit_codes == [0, 2], outcome.describe()
    with open_store(prepared.parent) as store:
        claims = len(store.list_claims("session-1"))
        events = len(store.read_run_events("session-1", "fixed-target-run"))
    assert (claims, events) in ((1, 0), (0, 1))


CARRIER_VIOLATIONS = {
    "model role": {"role": "model"},
    "agent author": {"author": "agent"},
    "partial": {"partial": True},
    "status": {"status": "completed"},
    "content": {"content": {"kind": "text", "text": "x"}},
    "extra action": {"actions": "extra"},
}


@pytest.mark.parametrize("name", sorted(CARRIER_VIOLATIONS))
def test_the_start_writer_refuses_a_wrong_carrier(store, name):
    """Spec 10 §1.3.2 / 30 §2.6: the carrier of a continuation start is system/system, not
    partial, without content or status, with actions exactly {continuationStart[,
    runtimeProtocol]}. The *writer* enforces it (the decoder accepts such events, as upstream's
    does: decodeRuntimeEvent vs assertContinuationStartEvent, sqlite-runtime-store.ts:3245)."""
    claim = claim_of(store)
    store.claim_continuation(claim)
    event = start_event(claim)
    override = CARRIER_VIOLATIONS[name]
    if override.get("actions") == "extra":
        event["actions"]["endInvocation"] = False
    else:
        event.update(override)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_start("claim-1", event)
    assert excinfo.value.code == "continuation_start_invalid"
    assert list(store.read_run_events(*_target_session_run(claim))) == []
    assert store.commit_continuation_start("claim-1", start_event(claim)).created  # the claim is still free


def test_the_marker_rides_only_on_a_live_start(store):
    """Spec 10 §1.3.2: a ``claim_repair`` start must not carry the marker (upstream's
    'binds the durable tool boundary marker to a live continuation start only' store test);
    each start writer refuses the other provenance."""
    claim = claim_of(store)
    store.claim_continuation(claim)
    with pytest.raises(ContinuationClaimError) as excinfo:
        store.commit_continuation_repair_start("claim-1", start_event(claim, "claim_repair", marker=True))
    assert excinfo.value.code == "continuation_start_invalid"
    with pytest.raises(ContinuationClaimError):
        store.commit_continuation_start("claim-1", start_event(claim, "claim_repair", marker=False))
    assert store.commit_continuation_repair_start("claim-1", start_event(claim, "claim_repair", marker=False)).created


def test_refs_on_a_start_are_allowed(store):
    """Spec 10 §1.3.2 fixes role, author, partial, content, status and the action keys of the
    carrier, not ``refs``; upstream's writer accepts refs, and so does ours."""
    claim = claim_of(store)
    store.claim_continuation(claim)
    event = start_event(claim)
    event["refs"] = {"sourceRunId": "continuation-source-run"}
    assert store.commit_continuation_start("claim-1", event).created


def _target_session_run(claim: dict) -> tuple[str, str]:
    return claim["target"]["sessionId"], claim["target"]["runId"]
