"""Phase 3 reconcile clauses (``runtime.reconcile``, docs/protocol.md §4.3.1, spec-phase3 §6):
every row of the observation table (spec-phase3 §4.4) driven over the wire against real files
after a real crash.

Each clause starts like the live crash clauses (:func:`test_runtime_crash.crash_turn`): a
dedicated process armed at a live point runs "Write ``sub/notes.txt``" under
``t1_after_preflight_v1`` and is SIGKILLed there, so T1 — and with it the file evidence of
spec-phase3 §3.3 — is committed and T2 is not. P2 (T1 committed, implementation not started)
leaves the file in its ``before`` state, P4 (side effect done, no T2) in ``expectedAfter``.
The harness may then change the target from outside (the rows ``diverged`` and
``unreadable``), and asks the worker's shared process — which never touched the workspace —
to ``runtime.reconcile`` that one operation. It checks:

* the item: ``outcome``, ``observation`` and ``reasonCode`` of the row (spec-phase3 §4.4, §6);
* finalize only (spec-phase3 §5.1, §5.4): the target and everything on the way to it are
  identical afterwards — bytes, type, inode and ``mtime`` — and the effect log gained no start;
* the committed bundle (spec-phase3 §5.2, spec 30 §2.5): the run gained exactly the facts of
  one recovery bundle for this operation — a decision with the row's disposition and reason,
  and for ``completed`` one outcome whose result is a function response of the Write;
* idempotence: a second ``runtime.reconcile`` of the operation commits nothing
  (``already_settled``).

The target lives in a subdirectory ``sub/`` so that the ``unreadable`` row can be reached
portably: ``sub`` replaced by a symlink (spec-phase3 §4.3 ``ancestor_not_directory``; never
followed, §4.2) — here to a directory *outside* the workspace that holds exactly the
expected-after bytes, so an observer that follows links (skips the confinement of §4.2)
would wrongly complete the operation.

Choices where the contract is silent: the clause compares codes and dispositions, never
``detail`` prose; a parked bundle carries no outcome event, as spec-phase3 §5.2 says; an
implementation that does not claim ``runtime.reconcile`` has every clause here *not claimed*.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite._store_support import WRITE_HASH, expect_created, expect_rejected, nothing_written, open_store
from conformance.suite.test_runtime_crash import (
    RUN_TIMEOUT,
    crash_turn,
    effect_lines,
    label,
    operation_id_of,
    project,
    release,
    source_run,
    workspace_dir,
)

#: What the crashed Write writes, and where (inside ``sub/``, which exists before the turn).
TARGET_DIR, TARGET_NAME, CONTENT = "sub", "notes.txt", "port = 8080\n"
TARGET = f"{TARGET_DIR}/{TARGET_NAME}"
#: Bytes an outside writer puts there between the crash and the reconcile.
OUTSIDE = b"port = 9999  # changed by hand after the crash\n"
NEEDS = ("runtime.loop", "faults", "store")
SPEC = "spec-phase3 §4.4; spec-phase3 §5.1; spec-phase3 §5.2; spec-phase3 §6; 30 §2.5"


def write_script() -> dict[str, Any]:
    return {"userMessage": "set the port", "protocol": "t1_after_preflight_v1", "steps": [
        {"toolCalls": [{"id": "call-write", "name": "Write", "args": {"path": TARGET, "content": CONTENT}}]},
        {"text": "done"},
    ]}


def edit_script(old: str, new: str) -> dict[str, Any]:
    return {"userMessage": "set the port", "protocol": "t1_after_preflight_v1", "steps": [
        {"toolCalls": [{"id": "call-edit", "name": "Edit", "args": {"path": TARGET, "old": old, "new": new}}]},
        {"text": "done"},
    ]}


def crashed_write(maka: Any, tmp_path: Path, point: str, *, script: Mapping[str, Any] | None = None,
                  before: bytes | None = None) -> tuple[str, dict[str, Any], str]:
    """A workspace whose file tool (the Write of :func:`write_script` unless ``script``) was
    killed at ``point``: (workspace, crashed run, operation id). ``before``: the target's bytes
    before the turn (absent when ``None``)."""
    workspace = workspace_dir(tmp_path)
    (Path(workspace) / TARGET_DIR).mkdir()
    if before is not None:
        (Path(workspace) / TARGET).write_bytes(before)
    crash_turn(maka, workspace, script or write_script(), point)
    try:
        run = source_run(project(maka, workspace))
    finally:
        release(maka, workspace)
    dispatched = [operation_id_of(e) for e in run["events"] if label(e) == "dispatch"]
    if len(dispatched) != 1 or not dispatched[0]:
        raise ClauseMismatch(f"expected one dispatched Write after a kill at {point}",
                             evidence={"events": [label(e) for e in run["events"]]})
    return workspace, run, str(dispatched[0])


def file_state(workspace: str) -> dict[str, Any]:
    """Everything a finalize-only reconciler must leave alone: the target and its directory
    (no link followed), with bytes, inode and mtime."""
    state: dict[str, Any] = {}
    for name in (TARGET_DIR, TARGET):
        path = Path(workspace) / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            state[name] = None
            continue
        entry: dict[str, Any] = {"mode": info.st_mode, "ino": info.st_ino, "mtimeNs": info.st_mtime_ns,
                                 "size": info.st_size}
        if os.path.islink(path):
            entry["link"] = os.readlink(path)
        elif path.is_file():
            entry["bytes"] = path.read_bytes().hex()
        state[name] = entry
    return state


def reconcile(maka: Any, workspace: str, operation_id: str) -> dict[str, Any]:
    result = expect_ok(maka.call("runtime.reconcile", {"workspace": workspace, "operationId": operation_id},
                                 timeout=RUN_TIMEOUT), "runtime.reconcile")
    items = [dict(i) for i in result.get("operations", []) if isinstance(i, Mapping)]
    if len(items) != 1 or items[0].get("operationId") != operation_id:
        raise ClauseMismatch("runtime.reconcile with an operationId must answer exactly that operation",
                             evidence={"result": dict(result)})
    return items[0]


def recovery_facts(events: list[Mapping[str, Any]], operation_id: str) -> list[Mapping[str, Any]]:
    """The ``toolRecovery`` facts of ``operation_id`` (spec 30 §2.5)."""
    out = []
    for event in events:
        recovery = (event.get("actions") or {}).get("toolRecovery") if isinstance(event.get("actions"), Mapping) else None
        if isinstance(recovery, Mapping) and (recovery.get("payload") or {}).get("operationId") == operation_id:
            out.append(recovery)
    return out


def check_reconciled(maka: Any, workspace: str, crashed: Mapping[str, Any], operation_id: str,
                     want: tuple[str, str | None, str | None], *, outside_change: Any = None) -> None:
    """Reconcile the operation once and check item, files, effect log, bundle and idempotence.

    ``want`` = (outcome, observation, reasonCode)."""
    before_files, before_effects = file_state(workspace), effect_lines(workspace)
    item = reconcile(maka, workspace, operation_id)
    outcome, observation, reason = want
    expect_equal([outcome, observation, reason], [item.get("outcome"), item.get("observation"), item.get("reasonCode")],
                 what="runtime.reconcile [outcome, observation, reasonCode] (spec-phase3 §4.4)")
    expect_equal(before_files, file_state(workspace),
                 what="the target and its directory across runtime.reconcile (finalize only: spec-phase3 §5.1, §5.4)")
    expect_equal(before_effects, effect_lines(workspace),
                 what="the effect log across runtime.reconcile (a reconciler never runs a tool)")
    run = source_run(project(maka, workspace), crashed["runId"])
    prefix = [e["id"] for e in crashed["events"]]
    expect_equal(prefix, [e["id"] for e in run["events"]][:len(prefix)],
                 what="the committed prefix after runtime.reconcile (a bundle only appends)")
    added = run["events"][len(prefix):]
    decisions = [f["payload"] for f in recovery_facts(added, operation_id)
                 if f.get("kind") == "maka.tool.recovery_decision"]
    if outcome in ("completed", "parked"):
        expect_equal([[outcome, reason]], [[d.get("disposition"), d.get("reasonCode")] for d in decisions],
                     what="the recovery decisions the bundle committed (spec-phase3 §5.2)")
        responses = [e for e in added if label(e) == "response"]
        if outcome == "completed":
            if len(responses) != 1 or (responses[0].get("content") or {}).get("name") != "Write":
                raise ClauseMismatch("a completed bundle must carry exactly one outcome: the Write's function "
                                     "response (spec-phase3 §5.2)", evidence={"added": added})
        elif responses:
            raise ClauseMismatch("a parked bundle carries no outcome event (spec-phase3 §5.2)", evidence={"added": added})
    else:
        expect_equal([], [e.get("id") for e in added], what=f"events committed by a {outcome} reconcile (must be none)")
    again = reconcile(maka, workspace, operation_id)
    if outcome in ("completed", "parked"):
        expect_equal("already_settled", again.get("outcome"), what="a second runtime.reconcile of a settled operation")
    after = source_run(project(maka, workspace), crashed["runId"])
    expect_equal([e["id"] for e in run["events"]], [e["id"] for e in after["events"]],
                 what="the run after a second runtime.reconcile (commits nothing)")
    expect_equal(before_files, file_state(workspace), what="the target after a second runtime.reconcile")
    release(maka, workspace)


def _clause(cid: str, title: str, spec: str = SPEC) -> Any:
    return clause(cid, spec=spec, capability="runtime.reconcile", needs=NEEDS, title=title)


@_clause("RECONCILE-ROW-001", "a Write killed after its effect (P4) reconciles matches_expected_state into a "
                              "completed bundle and the file is left untouched")
def test_matches_expected_state_completes(maka: Any, tmp_path: Path) -> None:
    workspace, crashed, op = crashed_write(maka, tmp_path, "P4")
    if (Path(workspace) / TARGET).read_bytes() != CONTENT.encode():
        raise ClauseMismatch("after a kill at P4 the Write's effect must be done (spec 20 §2 P4)")
    check_reconciled(maka, workspace, crashed, op,
                     ("completed", "matches_expected_state", "reconcile_matches_expected_state"))


@_clause("RECONCILE-ROW-002", "a Write killed before its effect (P2) reconciles matches_prior_state: parked "
                              "reconcile_matches_prior_state, never redone",
         spec=SPEC + "; spec-phase3 §5.4")
def test_matches_prior_state_parks(maka: Any, tmp_path: Path) -> None:
    workspace, crashed, op = crashed_write(maka, tmp_path, "P2")
    if (Path(workspace) / TARGET).exists():
        raise ClauseMismatch("after a kill at P2 the Write must not have started (spec 20 §2 P2)")
    check_reconciled(maka, workspace, crashed, op,
                     ("parked", "matches_prior_state", "reconcile_matches_prior_state"))


@_clause("RECONCILE-ROW-003", "a target changed from outside after the crash reconciles diverged: parked "
                              "reconcile_diverged, the outside change kept byte for byte")
def test_diverged_parks_and_keeps_the_outside_change(maka: Any, tmp_path: Path) -> None:
    workspace, crashed, op = crashed_write(maka, tmp_path, "P4")
    (Path(workspace) / TARGET).write_bytes(OUTSIDE)
    check_reconciled(maka, workspace, crashed, op, ("parked", "diverged", "reconcile_diverged"))
    expect_equal(OUTSIDE.hex(), (Path(workspace) / TARGET).read_bytes().hex(), what="the outside change")


@_clause("RECONCILE-ROW-004", "a target whose directory became a symlink out of the workspace reconciles "
                              "unreadable (ancestor_not_directory): parked reconcile_unreadable, the link never followed",
         spec=SPEC + "; spec-phase3 §4.2; spec-phase3 §4.3")
def test_unreadable_parks_without_following_links(maka: Any, tmp_path: Path) -> None:
    workspace, crashed, op = crashed_write(maka, tmp_path, "P4")
    outside = tmp_path / "outside"
    os.rename(Path(workspace) / TARGET_DIR, outside)  # holds exactly the expected-after bytes
    os.symlink(outside, Path(workspace) / TARGET_DIR)
    check_reconciled(maka, workspace, crashed, op, ("parked", "unreadable", "reconcile_unreadable"))
    expect_equal(CONTENT.encode().hex(), (outside / TARGET_NAME).read_bytes().hex(), what="the file outside the workspace")


@_clause("RECONCILE-EVIDENCE-001", "an Edit whose text to replace is absent has no evidence (no expected-after "
                                   "state); killed after T1 it is skipped with reconcile_no_evidence, nothing committed",
         spec="spec-phase3 §1.1; spec-phase3 §5.1; spec-phase3 §5.3; spec-phase3 §6; 30 §2.5")
def test_no_evidence_commits_nothing(maka: Any, tmp_path: Path) -> None:
    # spec-phase3 §1.1 item 3: an Edit whose transform would fail MUST NOT get evidence, so
    # every conforming runtime commits this T1 without it; after the crash it keeps parking.
    workspace, crashed, op = crashed_write(maka, tmp_path, "P2", script=edit_script("port = 1234", "port = 8080"),
                                           before=b"port = 80\n")
    check_reconciled(maka, workspace, crashed, op, ("skipped", None, None))
    item = reconcile(maka, workspace, op)
    expect_equal("reconcile_no_evidence", item.get("code"), what="the code of a reconcile without evidence")
    release(maka, workspace)


@_clause("RECONCILE-REPAIR-001", "runtime.repair with reconcile: true reconciles the killed run's Write before "
                                 "sealing it (completed), and a plain runtime.repair stays spec 20 §4",
         spec="spec-phase3 §5.5; spec-phase3 §6; 20 §4.1")
def test_repair_reconciles_when_asked(maka: Any, tmp_path: Path) -> None:
    workspace, crashed, op = crashed_write(maka, tmp_path, "P4")
    before_files = file_state(workspace)
    repaired = expect_ok(maka.call("runtime.repair", {"workspace": workspace, "reconcile": True}, timeout=RUN_TIMEOUT),
                         "runtime.repair")
    run = source_run(project(maka, workspace), crashed["runId"])
    decisions = [f["payload"] for f in recovery_facts(run["events"], op) if f.get("kind") == "maka.tool.recovery_decision"]
    expect_equal([["completed", "reconcile_matches_expected_state"]],
                 [[d.get("disposition"), d.get("reasonCode")] for d in decisions],
                 what="the recovery decisions after runtime.repair with reconcile (spec-phase3 §5.5)")
    if not repaired.get("repairs"):
        raise ClauseMismatch("runtime.repair did not seal the killed run", evidence={"repair": dict(repaired)})
    expect_equal(before_files, file_state(workspace), what="the target across runtime.repair with reconcile")
    release(maka, workspace)


# -- the two reads of spec-phase3 §6: what T1 recorded, and what the observer sees ------------------

def _sha256(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def _identity(state: Any) -> Any:
    """A file state without its optional ``mode`` (spec-phase3 §1.3: optional per state)."""
    return {k: state.get(k) for k in ("type", "size", "contentDigest")} if isinstance(state, Mapping) else state


def _workspace_bytes(workspace: str) -> dict[str, Any]:
    """Every entry below the workspace (no link followed) with its bytes, mode and ``mtime``,
    except SQLite's ``-shm`` index, which readers may write by design (protocol §4.2,
    ``ledgerFiles``) and which holds no durable fact."""
    found: dict[str, Any] = {}
    for directory, dirs, files in os.walk(workspace):
        for name in sorted(dirs + files):
            path = os.path.join(directory, name)
            if name.endswith("-shm"):
                continue
            info = os.lstat(path)
            entry: dict[str, Any] = {"mode": info.st_mode, "mtimeNs": info.st_mtime_ns, "size": info.st_size}
            if os.path.isfile(path) and not os.path.islink(path):
                entry["sha256"] = _sha256(Path(path).read_bytes())
            found[os.path.relpath(path, workspace)] = entry
    return found


@_clause("RECONCILE-READ-001", "store.read_tool_evidence answers the record T1 committed for a Write killed after its "
         "effect: its identity, target, the before and expected-after digests of the bytes the harness knows, an "
         "evidence digest equal to the codec's; null for an operation without evidence; and it writes nothing",
         spec="spec-phase3 §1.2; spec-phase3 §1.3; spec-phase3 §2.1; spec-phase3 §3.4; spec-phase3 §6")
def test_read_tool_evidence(maka: Any, tmp_path: Path) -> None:
    before = b"port = 80\n"
    workspace, run, operation_id = crashed_write(maka, tmp_path, "P4", before=before)
    calls = [e for e in run["events"] if label(e) == "call"]
    dispatches = [e for e in run["events"] if label(e) == "dispatch"]
    files = _workspace_bytes(workspace)
    try:
        answer = expect_ok(maka.call("store.read_tool_evidence", {"workspace": workspace, "operationId": operation_id}),
                           "store.read_tool_evidence")
        missing = expect_ok(maka.call("store.read_tool_evidence",
                                      {"workspace": workspace, "operationId": "op-that-was-never-dispatched"}),
                            "store.read_tool_evidence of an unknown operation")
        expect_equal(files, _workspace_bytes(workspace),
                     what="the workspace across store.read_tool_evidence (reading never writes)")
    finally:
        release(maka, workspace)
    expect_equal(None, missing.get("evidence"), what="the evidence of an operation T1 never committed (spec-phase3 §6)")
    evidence = answer.get("evidence")
    if not isinstance(evidence, Mapping):
        raise ClauseMismatch("a Write of t1_after_preflight_v1 over an existing regular file must have evidence "
                             "committed with its T1 (spec-phase3 §1.1, §3.3)", evidence={"answer": dict(answer)})
    expect_equal(
        {"protocol": "file_evidence_v1", "operationId": operation_id, "toolName": "Write", "targetPath": TARGET,
         "transform": "write_whole_file_v1",
         "callEventId": calls[0]["id"] if calls else None, "dispatchEventId": dispatches[0]["id"] if dispatches else None,
         "before": {"type": "regular", "size": len(before), "contentDigest": _sha256(before)},
         "expectedAfter": {"type": "regular", "size": len(CONTENT.encode()), "contentDigest": _sha256(CONTENT.encode())}},
        {"protocol": evidence.get("protocol"), "operationId": evidence.get("operationId"),
         "toolName": evidence.get("toolName"), "targetPath": evidence.get("targetPath"),
         "transform": evidence.get("transform"), "callEventId": evidence.get("callEventId"),
         "dispatchEventId": evidence.get("dispatchEventId"),
         "before": _identity(evidence.get("before")), "expectedAfter": _identity(evidence.get("expectedAfter"))},
        what="the committed evidence (spec-phase3 §1.2, §1.3: digests of the raw bytes)")
    # a recorded mode is a promise about the file (§1.3): the harness chmod-ed nothing, so the
    # before mode is the file's as it was created here
    if isinstance(evidence["before"], Mapping) and "mode" in evidence["before"]:
        expect_equal(0o666 & ~_umask(), evidence["before"]["mode"], what="before.mode (spec-phase3 §1.3)")
    decoded = expect_ok(maka.call("reconcile.decode_evidence", {"evidence": evidence}), "reconcile.decode_evidence")
    expect_equal([True, decoded.get("evidenceDigest")], [decoded.get("ok"), answer.get("evidenceDigest")],
                 what="the evidence digest store.read_tool_evidence answers = the codec's (spec-phase3 §2.1)")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@_clause("RECONCILE-OBSERVE-001", "reconcile.observe answers the spec-phase3 §4.1 state of regular, absent, directory, "
         "symlink, FIFO and over-the-limit targets, refuses to follow a linked directory on the way, and leaves every "
         "file byte- and mtime-identical",
         spec="spec-phase3 §4.1; spec-phase3 §4.2; spec-phase3 §4.3; spec-phase3 §6")
def test_observe_states(maka: Any, tmp_path: Path) -> None:
    workspace = workspace_dir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_bytes(CONTENT.encode())
    root = Path(workspace)
    (root / "sub").mkdir()
    data = b"hello, observer\n"
    (root / "sub" / "file.txt").write_bytes(data)
    os.chmod(root / "sub" / "file.txt", 0o640)
    (root / "sub" / "dir").mkdir()
    os.symlink("file.txt", root / "sub" / "link")
    os.mkfifo(root / "sub" / "fifo")
    with open(root / "sub" / "big.bin", "wb") as fh:  # sparse: 16 MiB + 1 bytes, never read (§4.1)
        fh.truncate(16 * 1024 * 1024 + 1)
    os.symlink(str(outside), root / "linked")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("sub/file.txt", {"type": "regular", "size": len(data), "links": 1, "mode": 0o640,
                          "contentDigest": _sha256(data)}),
        ("sub/missing.txt", {"type": "absent"}),
        ("nowhere/missing.txt", {"type": "absent"}),
        ("sub/dir", {"type": "directory"}),
        ("sub/link", {"type": "symlink"}),
        ("sub/fifo", {"type": "other"}),
        ("sub/big.bin", {"type": "regular", "size": 16 * 1024 * 1024 + 1, "links": 1, "mode": 0o666 & ~_umask()}),
        ("linked/notes.txt", {"type": "unreadable", "reason": "ancestor_not_directory"}),
        ("sub/file.txt/x", {"type": "unreadable", "reason": "ancestor_not_directory"}),
    ]
    files = _workspace_bytes(workspace)
    outside_before = _workspace_bytes(str(outside))
    got = {}
    for target, _ in cases:
        answer = expect_ok(maka.call("reconcile.observe", {"workspace": workspace, "targetPath": target}),
                           f"reconcile.observe of {target}")
        got[target] = answer.get("observed")
    expect_equal({t: want for t, want in cases}, got, what="the observed states (spec-phase3 §4.1, §4.3)")
    expect_equal(files, _workspace_bytes(workspace), what="the workspace across reconcile.observe (§4.2 item 5)")
    expect_equal(outside_before, _workspace_bytes(str(outside)), what="the directory outside the workspace")


#: spec-phase3 §1.2 for the Write of ``_store_support`` (spec 30 Appendix A's ``call_event`` and
#: ``dispatch_event``: ``notes.txt`` ← ``"after"`` onto nothing), written out by hand; the digest
#: is sha256 of the five bytes ``after`` (§1.3: no domain prefix, so ``sha256sum`` gives it).
T1_EVIDENCE: dict[str, Any] = {
    "protocol": "file_evidence_v1", "operationId": "operation-1", "sessionId": "session-1",
    "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1", "providerToolCallId": "provider-call-1",
    "callEventId": "call-event-1", "dispatchEventId": "dispatch-event-1", "toolName": "Write",
    "canonicalArgsHash": WRITE_HASH, "workspaceIdentity": "workspace:v1:123e4567-e89b-42d3-a456-426614174000",
    "targetPath": "notes.txt", "transform": "write_whole_file_v1", "before": {"type": "absent"},
    "expectedAfter": {"type": "regular", "size": 5,
                      "contentDigest": "sha256:f39592393ef0859cb196a52693d2cea00fb2df784b3c04ae54aa7cadb8e562f8"},
    "result": {"path": "notes.txt", "bytesWritten": 5},
}


@clause("RECONCILE-T1-001", spec="spec-phase3 §2.2; spec-phase3 §2.3; spec-phase3 §3.3; spec-phase3 §3.4; "
        "spec-phase3 §6; 30 §2.3", capability="runtime.reconcile", needs=("store",),
        title="store.commit_tool_prepared with evidence commits it in T1's transaction and reads it back; a record "
              "that does not decode or bind refuses the whole T1 with its code; an exact retry with other evidence is "
              "evidence_conflict; an exact retry with the same evidence is created: false")
def test_t1_with_evidence(maka: Any, tmp_path: Path) -> None:
    from conformance.suite._store_support import t1_params

    store = open_store(maka, tmp_path)
    # refusals first, on an empty run: nothing may be written by any of them (§3.3 step 9)
    refusals: list[tuple[str, dict[str, Any], set[str]]] = [
        ("an unknown key", {**T1_EVIDENCE, "extra": 1}, {"evidence_unknown_key"}),
        ("a transform that is not the tool's", {**T1_EVIDENCE, "transform": "append_utf8_v1"},
         {"evidence_transform_unsupported"}),
        ("another operation's id", {**T1_EVIDENCE, "operationId": "operation-2"}, {"evidence_operation_conflict"}),
        ("another call event", {**T1_EVIDENCE, "callEventId": "call-event-9"}, {"evidence_operation_conflict"}),
        ("an expected size the content contradicts", {**T1_EVIDENCE, "expectedAfter": {
            **T1_EVIDENCE["expectedAfter"], "size": 6}}, {"evidence_args_conflict"}),
        ("another result", {**T1_EVIDENCE, "result": {"path": "notes.txt", "bytesWritten": 4}},
         {"evidence_result_conflict"}),
    ]
    for what, evidence, codes in refusals:
        reply = maka.call("store.commit_tool_prepared", {**t1_params(store.ws), "evidence": evidence})
        expect_rejected(reply, "store.commit_tool_prepared", codes, f"T1 with evidence carrying {what}")
        nothing_written(store, [], f"T1 with evidence carrying {what}")
    created = expect_ok(maka.call("store.commit_tool_prepared", {**t1_params(store.ws), "evidence": T1_EVIDENCE}),
                        "store.commit_tool_prepared with evidence")
    expect_created(created, True, "T1 with evidence", runtimeEventSeq=2)
    read = expect_ok(maka.call("store.read_tool_evidence", {"workspace": store.ws, "operationId": "operation-1"}),
                     "store.read_tool_evidence")
    expect_equal(T1_EVIDENCE, read.get("evidence"), what="the evidence read back (spec-phase3 §3.4)")
    retry = expect_ok(maka.call("store.commit_tool_prepared", {**t1_params(store.ws, committed_at=99),
                                                               "evidence": T1_EVIDENCE}), "exact T1 retry")
    expect_created(retry, False, "an exact T1 retry with the same evidence", runtimeEventSeq=2)
    other = {**T1_EVIDENCE, "workspaceIdentity": "workspace:v1:00000000-0000-4000-8000-000000000000"}
    for what, params in (("other evidence", {**t1_params(store.ws), "evidence": other}),
                         ("no evidence", t1_params(store.ws))):
        reply = maka.call("store.commit_tool_prepared", params)
        expect_rejected(reply, "store.commit_tool_prepared", "evidence_conflict", f"an exact T1 retry with {what}")
    read = expect_ok(maka.call("store.read_tool_evidence", {"workspace": store.ws, "operationId": "operation-1"}),
                     "store.read_tool_evidence")
    expect_equal(T1_EVIDENCE, read.get("evidence"), what="the evidence after the refused retries")
    store.close()
