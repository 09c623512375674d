"""Live tool-loop clauses (``runtime.loop``): ``runtime.run_turn`` with scripted models.

Every clause runs its script under **both** tool-boundary protocols (``t1_after_preflight_v1``
and ``legacy``, script schema) in the worker's shared process and names the protocol in any
failure. Oracles: the workspace files, the effect log ``.maka-effects.jsonl`` (protocol §4.3),
and the events read back with ``store.project`` (protocol §4.2.1; hence ``needs=("store",)``).

Tool semantics checked here are the ones the protocol fixes (§4.3: the four tools, workspace
confinement — no path outside the workspace, none onto the runtime's own files — one effect-log
line before each real start) and spec 30 §6.5 (preflight → T1 → implementation → T2 → publish;
preflight refusals never reach T1; thrown/failed tools are committed as error results, never a
crash). Result *shapes* beyond "an error result is
``isError``" and "Read returns the file's text" are not checked: they are the reference's
choices (``docs/choices/runtime.md``), not the protocol's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.test_runtime_crash import (
    PROTOCOLS,
    RUN_TIMEOUT,
    effect_lines,
    expect_no_double_start,
    label,
    operation_id_of,
    project,
    reference_resolution,
    release,
    source_run,
)


def _run(maka: Any, tmp_path: Path, name: str, protocol: str, steps: list[dict[str, Any]],
         prepare: Any = None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Run one turn in a new workspace ``tmp_path/<name>-<protocol>/ws``; returns the
    workspace, the run_turn result and the projected run."""
    base = tmp_path / f"{name}-{protocol}"
    base.mkdir()
    ws = base / "ws"
    ws.mkdir()
    workspace = os.path.realpath(ws)
    if prepare is not None:
        prepare(base, Path(workspace))
    script = {"userMessage": f"clause {name}", "protocol": protocol, "steps": steps}
    result = dict(expect_ok(maka.call("runtime.run_turn", {"workspace": workspace, "script": script}, timeout=RUN_TIMEOUT),
                            "runtime.run_turn"))
    try:
        run = source_run(project(maka, workspace), result.get("runId"))
    finally:
        release(maka, workspace)
    return workspace, result, run


def _by_call_id(events: Sequence[Mapping[str, Any]], kind: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if label(event) == kind:
            out[str(event["content"].get("id"))] = event
    return out


def _dispatches(events: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {e["actions"]["toolDispatch"].get("providerToolCallId"): e for e in events if label(e) == "dispatch"}


def _response(run: Mapping[str, Any], call_id: str, protocol: str) -> Mapping[str, Any]:
    responses = _by_call_id(run["events"], "response")
    if call_id not in responses:
        raise ClauseMismatch(f"[{protocol}] no function_response for call {call_id!r} was committed",
                             evidence={"eventIds": [e.get("id") for e in run["events"]]})
    return responses[call_id]["content"]


def _expect_completed(result: Mapping[str, Any], run: Mapping[str, Any], protocol: str) -> None:
    if result.get("status") != "completed":
        raise ClauseMismatch(f"[{protocol}] the turn ended {result.get('status')!r}, not 'completed' (a tool error "
                             "result must be handed to the model, not end the run)", evidence={"result": dict(result)})
    found = [label(e) for e in run["events"]]
    if found[-1:] != ["terminal"] or run["events"][-1].get("status") != "completed":
        raise ClauseMismatch(f"[{protocol}] the run's last event is not a completed terminal", evidence={"labels": found})
    if (run.get("header") or {}).get("status") != "completed":
        raise ClauseMismatch(f"[{protocol}] the run header is not 'completed'", evidence={"header": run.get("header")})


def _expect_error(run: Mapping[str, Any], call_id: str, protocol: str, what: str) -> None:
    content = _response(run, call_id, protocol)
    if content.get("isError") is not True:
        raise ClauseMismatch(f"[{protocol}] {what}: the response to {call_id!r} is not an error result (isError true)",
                             evidence={"response": dict(content)})


def _expect_ok_result(run: Mapping[str, Any], call_id: str, protocol: str) -> Mapping[str, Any]:
    content = _response(run, call_id, protocol)
    if content.get("isError"):
        raise ClauseMismatch(f"[{protocol}] the call {call_id!r} failed: {content.get('result')}",
                             evidence={"response": dict(content)})
    return content


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            out[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return out


def _t1_shape(run: Mapping[str, Any], protocol: str, admitted: Sequence[str], refused: Sequence[str]) -> None:
    """Spec 30 §6.5 and spec 20 §0: T1 marker, call → dispatch → response per admitted call
    with one operation id; refusals on the generic lane (no dispatch, no operation id)."""
    events = run["events"]
    first_actions = events[0].get("actions") or {}
    dispatches = _dispatches(events)
    if protocol == "legacy":
        if first_actions.get("runtimeProtocol") is not None or dispatches:
            raise ClauseMismatch("[legacy] a legacy run carries the T1 marker or a toolDispatch",
                                 evidence={"labels": [label(e) for e in events]})
        expect_equal([], run.get("toolOperations") or [], what="[legacy] tool operations (no T1 under legacy)")
        return
    if (first_actions.get("runtimeProtocol") or {}).get("toolBoundary") != "t1_after_preflight_v1":
        raise ClauseMismatch("[t1] the user event lacks actions.runtimeProtocol.toolBoundary = t1_after_preflight_v1",
                             evidence={"event": events[0]})
    calls = _by_call_id(events, "call")
    responses = _by_call_id(events, "response")
    index = {e["id"]: i for i, e in enumerate(events)}
    ops = {o.get("operationId"): o for o in run.get("toolOperations") or []}
    for call_id in admitted:
        call, dispatch, response = calls.get(call_id), dispatches.get(call_id), responses.get(call_id)
        if call is None or dispatch is None or response is None:
            raise ClauseMismatch(f"[t1] the admitted call {call_id!r} lacks its call, dispatch or response event",
                                 evidence={"labels": [label(e) for e in events]})
        if not index[call["id"]] < index[dispatch["id"]] < index[response["id"]]:
            raise ClauseMismatch(f"[t1] call {call_id!r}: events are not in the order call, dispatch, response")
        op = dispatch["actions"]["toolDispatch"].get("operationId")
        for event in (call, dispatch, response):
            if (event.get("refs") or {}).get("operationId") != op:
                raise ClauseMismatch(f"[t1] call {call_id!r}: event {event['id']} does not carry refs.operationId {op}")
        if dispatch["actions"]["toolDispatch"].get("protocol") != "t1_after_preflight_v1":
            raise ClauseMismatch(f"[t1] call {call_id!r}: the dispatch protocol is not t1_after_preflight_v1")
        if (ops.get(op) or {}).get("currentState") != "outcome_committed":
            raise ClauseMismatch(f"[t1] operation {op} is not outcome_committed after a completed turn",
                                 evidence={"toolOperations": run.get("toolOperations")})
    for call_id in refused:
        for event in (calls.get(call_id), responses.get(call_id)):
            if event is None:
                raise ClauseMismatch(f"[t1] the refused call {call_id!r} was not committed as a call/response pair")
            if "operationId" in (event.get("refs") or {}):
                raise ClauseMismatch(f"[t1] the refused call {call_id!r} carries an operation id (spec 30 §6.5: "
                                     "preflight refusals are written on the generic lane)", evidence={"event": event})
        if call_id in dispatches:
            raise ClauseMismatch(f"[t1] the refused call {call_id!r} was dispatched (reached T1)")


# --------------------------------------------------------------------------- clauses

_HAPPY = [
    {"toolCalls": [{"id": "w1", "name": "Write", "args": {"path": "notes.txt", "content": "alpha\n"}},
                   {"id": "w2", "name": "Write", "args": {"path": "deep/er/b.txt", "content": "bee"}}]},
    {"toolCalls": [{"id": "a1", "name": "Append", "args": {"path": "notes.txt", "content": "beta\n"}}]},
    {"toolCalls": [{"id": "e1", "name": "Edit", "args": {"path": "notes.txt", "old": "alpha", "new": "ALPHA"}}]},
    {"toolCalls": [{"id": "r1", "name": "Read", "args": {"path": "notes.txt"}}]},
    {"text": "all done"},
]


@clause("RUNTIME-LOOP-001", spec="protocol §4.3; 00 tool loop; 30 §6.5", capability="runtime.loop", needs=("store",),
        title="Write, Append, Edit and Read produce the right files and results under both protocols")
def test_tools_happy_path(maka: Any, tmp_path: Path) -> None:
    for protocol in PROTOCOLS.values():
        workspace, result, run = _run(maka, tmp_path, "happy", protocol, _HAPPY)
        _expect_completed(result, run, protocol)
        expect_equal("ALPHA\nbeta\n", (Path(workspace) / "notes.txt").read_text(encoding="utf-8"),
                     what=f"[{protocol}] notes.txt after Write, Append, Edit")
        expect_equal("bee", (Path(workspace) / "deep/er/b.txt").read_text(encoding="utf-8"),
                     what=f"[{protocol}] deep/er/b.txt (Write creates parent directories)")
        for call_id in ("w1", "w2", "a1", "e1"):
            _expect_ok_result(run, call_id, protocol)
        read = _expect_ok_result(run, "r1", protocol)
        if "ALPHA\nbeta\n" not in set(_strings(read.get("result"))):
            raise ClauseMismatch(f"[{protocol}] the Read result does not carry the file's text 'ALPHA\\nbeta\\n'",
                                 evidence={"response": dict(read)})
        statuses = [c.get("status") for c in result.get("toolCalls", [])]
        expect_equal(5, len(statuses), what=f"[{protocol}] number of toolCalls in the run_turn result")
        final = [e for e in run["events"] if label(e) == "text"]
        if not final or final[-1]["content"].get("text") != "all done":
            raise ClauseMismatch(f"[{protocol}] the final model text was not committed", evidence={"labels": [label(e) for e in run["events"]]})


@clause("RUNTIME-LOOP-002", spec="30 §6.5; 20 §0.1; 10 §1.6", capability="runtime.loop", needs=("store",),
        title="the ledger shape per protocol: T1 marker, call→dispatch→response per operation; legacy has no dispatch")
def test_ledger_shape_per_protocol(maka: Any, tmp_path: Path) -> None:
    steps = [
        {"toolCalls": [{"id": "w1", "name": "Write", "args": {"path": "a.txt", "content": "x"}},
                       {"id": "bad", "name": "Write", "args": {"path": "a.txt"}}]},
        {"text": "ok"},
    ]
    for protocol in PROTOCOLS.values():
        _, result, run = _run(maka, tmp_path, "shape", protocol, steps)
        _expect_completed(result, run, protocol)
        _t1_shape(run, protocol, admitted=["w1"], refused=["bad"])
        resolution = reference_resolution(run["events"])
        if resolution.get("hasCorruption") or resolution.get("issues"):
            raise ClauseMismatch(f"[{protocol}] the ledger of a completed turn has resolver issues",
                                 evidence={"resolution": resolution})
        expect_equal(["completed", "completed"], [d.get("status") for d in resolution.get("decisions", [])],
                     what=f"[{protocol}] resolver decisions of a completed turn (admitted and refused call)")
        expect_equal(resolution, run.get("resolution"), what=f"[{protocol}] the projected resolution vs maka_ref")


@clause("RUNTIME-LOOP-003", spec="00 tool loop rule 'result published after T2'; 30 §6.5", capability="runtime.loop",
        needs=("store",),
        title="the model never sees a result before T2: every response is committed before the next model step")
def test_result_committed_before_next_step(maka: Any, tmp_path: Path) -> None:
    steps = [
        {"toolCalls": [{"id": "s0a", "name": "Write", "args": {"path": "one.txt", "content": "1"}},
                       {"id": "s0b", "name": "Read", "args": {"path": "one.txt"}}]},
        {"toolCalls": [{"id": "s1a", "name": "Append", "args": {"path": "one.txt", "content": "2"}}]},
        {"toolCalls": [{"id": "s2a", "name": "Edit", "args": {"path": "one.txt", "old": "12", "new": "3"}}]},
        {"text": "finished"},
    ]
    step_calls = [["s0a", "s0b"], ["s1a"], ["s2a"]]
    for protocol in PROTOCOLS.values():
        workspace, result, run = _run(maka, tmp_path, "order", protocol, steps)
        _expect_completed(result, run, protocol)
        events = run["events"]
        index = {e["id"]: i for i, e in enumerate(events)}
        calls, responses = _by_call_id(events, "call"), _by_call_id(events, "response")
        texts = [index[e["id"]] for e in events if label(e) == "text"]
        for k, ids in enumerate(step_calls):
            last_response = max(index[responses[c]["id"]] for c in ids)
            next_first = (min(index[calls[c]["id"]] for c in step_calls[k + 1]) if k + 1 < len(step_calls)
                          else min(texts) if texts else len(events))
            if not last_response < next_first:
                raise ClauseMismatch(f"[{protocol}] a result of model step {k} was committed after step {k + 1} began: "
                                     "the model saw a result before its T2",
                                     evidence={"eventIds": [e["id"] for e in events]})
            for c in ids:
                if not index[calls[c]["id"]] < index[responses[c]["id"]]:
                    raise ClauseMismatch(f"[{protocol}] the response to {c!r} precedes its call")
        if [label(e) for e in events].count("terminal") != 1:
            raise ClauseMismatch(f"[{protocol}] the run does not have exactly one terminal event")
        expect_equal("3", (Path(workspace) / "one.txt").read_text(encoding="utf-8"), what=f"[{protocol}] one.txt")


@clause("RUNTIME-TOOLS-001", spec="protocol §4.3; 30 §6.5 'thrown tool errors are committed through T2'",
        capability="runtime.loop", needs=("store",),
        title="Edit with an absent or ambiguous old text is an error result, leaves the file unchanged, the turn goes on")
def test_edit_errors_are_results(maka: Any, tmp_path: Path) -> None:
    steps = [
        {"toolCalls": [{"id": "w", "name": "Write", "args": {"path": "e.txt", "content": "same same\n"}}]},
        {"toolCalls": [{"id": "absent", "name": "Edit", "args": {"path": "e.txt", "old": "missing", "new": "x"}}]},
        {"toolCalls": [{"id": "ambiguous", "name": "Edit", "args": {"path": "e.txt", "old": "same", "new": "x"}}]},
        {"toolCalls": [{"id": "nofile", "name": "Edit", "args": {"path": "nope.txt", "old": "a", "new": "b"}},
                       {"id": "noread", "name": "Read", "args": {"path": "nope.txt"}}]},
        {"text": "handled"},
    ]
    for protocol in PROTOCOLS.values():
        workspace, result, run = _run(maka, tmp_path, "edit", protocol, steps)
        _expect_completed(result, run, protocol)
        for call_id, what in (("absent", "Edit of an absent text"), ("ambiguous", "Edit of a text found twice"),
                              ("nofile", "Edit of a missing file"), ("noread", "Read of a missing file")):
            _expect_error(run, call_id, protocol, what)
        expect_equal("same same\n", (Path(workspace) / "e.txt").read_text(encoding="utf-8"),
                     what=f"[{protocol}] e.txt after failed Edits")
        if (Path(workspace) / "nope.txt").exists():
            raise ClauseMismatch(f"[{protocol}] a failed Edit of a missing file created it")
        expect_no_double_start(effect_lines(workspace), f"[{protocol}]")


def _outside_setup(base: Path, ws: Path) -> None:
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n", encoding="utf-8")
    os.symlink(outside, ws / "link")


@clause("RUNTIME-TOOLS-002", spec="protocol §4.3 (workspace confinement); 30 §6.5 (boundary refusals)",
        capability="runtime.loop", needs=("store",),
        title="'..', absolute paths and symlink escapes are error results and touch nothing outside the workspace")
def test_confinement(maka: Any, tmp_path: Path) -> None:
    for protocol in PROTOCOLS.values():
        base = tmp_path / f"confine-{protocol}"
        outside = base / "outside"
        victim = os.path.realpath(base) + "/outside/abs.txt"
        escapes = [
            {"id": "dotdot", "name": "Write", "args": {"path": "../outside/dotdot.txt", "content": "x"}},
            {"id": "dotdot-mid", "name": "Append", "args": {"path": "sub/../../outside/secret.txt", "content": "x"}},
            {"id": "absolute", "name": "Write", "args": {"path": victim, "content": "x"}},
            {"id": "abs-read", "name": "Read", "args": {"path": os.path.realpath(base) + "/outside/secret.txt"}},
            {"id": "link-write", "name": "Write", "args": {"path": "link/escaped.txt", "content": "x"}},
            {"id": "link-edit", "name": "Edit", "args": {"path": "link/secret.txt", "old": "top", "new": "no"}},
            {"id": "link-read", "name": "Read", "args": {"path": "link/secret.txt"}},
        ]
        steps = [{"toolCalls": [call]} for call in escapes] + [{"text": "refused"}]
        base.mkdir()
        (base / "ws").mkdir()
        _outside_setup(base, base / "ws")
        before = _snapshot(outside)
        workspace = os.path.realpath(base / "ws")
        script = {"userMessage": "escape", "protocol": protocol, "steps": steps}
        result = dict(expect_ok(maka.call("runtime.run_turn", {"workspace": workspace, "script": script}, timeout=RUN_TIMEOUT),
                                "runtime.run_turn"))
        try:
            run = source_run(project(maka, workspace), result.get("runId"))
        finally:
            release(maka, workspace)
        _expect_completed(result, run, protocol)
        for call in escapes:
            _expect_error(run, call["id"], protocol, f"confinement violation {call['args']['path']!r}")
            content = _response(run, call["id"], protocol)
            if "top secret" in "".join(_strings(content.get("result"))):
                raise ClauseMismatch(f"[{protocol}] {call['id']}: a refused Read leaked the outside file's content")
        expect_equal(before, _snapshot(outside), what=f"[{protocol}] the directory outside the workspace")
        if (base / "dotdot.txt").exists() or (base / "ws" / "sub").exists():
            raise ClauseMismatch(f"[{protocol}] a confined-out call created files")
        # a refused confinement check starts no side effect: no effect-log line for it
        calls = _by_call_id(run["events"], "call")
        refused_ops = {operation_id_of(calls[c["id"]]) for c in escapes}
        logged = [line for line in effect_lines(workspace) if line["operationId"] in refused_ops]
        if logged:
            raise ClauseMismatch(f"[{protocol}] the effect log records a start for a confinement violation "
                                 "(no side effect may start for a path outside the workspace)", evidence={"lines": logged})


@clause("RUNTIME-TOOLS-003", spec="protocol §4.3 (effect log); 30 §6.5 (preflight refusals never reach T1)",
        capability="runtime.loop", needs=("store",),
        title="the effect log has exactly one line per real start (right tool, args hash, pid) and none for refusals")
def test_effect_log(maka: Any, tmp_path: Path) -> None:
    from maka_ref import canonical_args_hash

    steps = [
        {"toolCalls": [{"id": "w", "name": "Write", "args": {"path": "f.txt", "content": "one\n"}},
                       {"id": "unknown-tool", "name": "Frobnicate", "args": {"path": "f.txt"}},
                       {"id": "not-object", "name": "Write", "args": "f.txt"},
                       {"id": "missing-arg", "name": "Write", "args": {"path": "f.txt"}},
                       {"id": "extra-arg", "name": "Append", "args": {"path": "f.txt", "content": "z", "mode": 1}}]},
        {"toolCalls": [{"id": "a", "name": "Append", "args": {"path": "f.txt", "content": "two\n"}},
                       {"id": "e", "name": "Edit", "args": {"path": "f.txt", "old": "one", "new": "uno"}}]},
        {"text": "logged"},
    ]
    real = {"w": "Write", "a": "Append", "e": "Edit"}
    # Spec 30 §6.5 lists schema violations among the preflight refusals that never reach T1; a
    # call of a tool that does not exist is not on the list, so an implementation may refuse it
    # before T1 or admit it and commit an error result through T2 (upstream routes it to its
    # own ``invalid`` tool: packages/runtime/src/ai-sdk-backend.ts:2700). Either way it is an
    # error result and nothing starts.
    unknown = ["unknown-tool"]
    refused = ["not-object", "missing-arg", "extra-arg"]
    for protocol in PROTOCOLS.values():
        workspace, result, run = _run(maka, tmp_path, "effects", protocol, steps)
        _expect_completed(result, run, protocol)
        for call_id in refused:
            _expect_error(run, call_id, protocol, "a preflight refusal")
        for call_id in unknown:
            _expect_error(run, call_id, protocol, "a call of an unknown tool")
        expect_equal("uno\ntwo\n", (Path(workspace) / "f.txt").read_text(encoding="utf-8"), what=f"[{protocol}] f.txt")
        if protocol != "legacy":
            _t1_shape(run, protocol, admitted=list(real), refused=refused)
        lines = effect_lines(workspace)
        expect_no_double_start(lines, f"[{protocol}]")
        calls = _by_call_id(run["events"], "call")
        expected = {operation_id_of(calls[c]): (c, tool, canonical_args_hash(tool, calls[c]["content"]["args"]))
                    for c, tool in real.items()}
        refused_ops = {operation_id_of(calls[c]) for c in refused + unknown}
        by_op = {line["operationId"]: line for line in lines}
        for op, (call_id, tool, args_hash) in expected.items():
            line = by_op.get(op)
            if line is None:
                raise ClauseMismatch(f"[{protocol}] no effect-log line for the real start of {call_id!r} ({op})",
                                     evidence={"effectLog": lines})
            expect_equal({"tool": tool, "argsHash": args_hash}, {"tool": line["tool"], "argsHash": line["argsHash"]},
                         what=f"[{protocol}] effect-log line of {call_id!r}")
            if not isinstance(line["pid"], int) or isinstance(line["pid"], bool):
                raise ClauseMismatch(f"[{protocol}] effect-log pid is not an integer: {line['pid']!r}")
        stray = [line for line in lines if line["operationId"] in refused_ops or line["operationId"] not in expected]
        if stray:
            raise ClauseMismatch(f"[{protocol}] the effect log records starts that are not real starts "
                                 "(preflight refusals never start the implementation)", evidence={"stray": stray})
        expect_equal(len(expected), len(lines), what=f"[{protocol}] number of effect-log lines")
        if len({line["pid"] for line in lines}) != 1:
            raise ClauseMismatch(f"[{protocol}] one turn's starts carry different pids", evidence={"effectLog": lines})


# --------------------------------------------------------------------------- the runtime's own files

EFFECT_LOG = ".maka-effects.jsonl"  # protocol §4.3
WORKSPACE_MARKER = ".maka-workspace.json"  # spec 20 §6.1
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _turn(maka: Any, workspace: str, protocol: str, steps: list[dict[str, Any]], message: str,
          refused: Sequence[Mapping[str, Any]] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one turn in an existing workspace and project its run. The calls in ``refused`` must
    not report ``ok`` in the ``run_turn`` result; that is checked *before* the store is read, so
    that a store a tool has clobbered is reported as the call that clobbered it, not as an
    unreadable projection."""
    script = {"userMessage": message, "protocol": protocol, "steps": steps}
    result = dict(expect_ok(maka.call("runtime.run_turn", {"workspace": workspace, "script": script}, timeout=RUN_TIMEOUT),
                            "runtime.run_turn"))
    statuses = [c.get("status") for c in result.get("toolCalls") or []]
    ran = [call for call, status in zip(refused, statuses) if status == "ok"]
    if ran:
        raise ClauseMismatch(f"[{protocol}] tool calls naming the runtime's own files succeeded: "
                             f"{[(c['id'], c['name'], c['args']['path']) for c in ran]}",
                             evidence={"toolCalls": result.get("toolCalls")})
    try:
        run = source_run(project(maka, workspace), result.get("runId"))
    finally:
        release(maka, workspace)
    return result, run


def _ledger_files(maka: Any, workspace: str) -> list[str]:
    """``ledgerFiles`` of a read-only open (protocol §4.2): the files that hold durable facts."""
    opened = expect_ok(maka.call("store.open", {"workspace": workspace, "readOnly": True}), "store.open")
    release(maka, workspace)
    files = opened.get("ledgerFiles")
    if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        raise ClauseMismatch("store.open names no ledgerFiles for a workspace that holds a run",
                             evidence={"result": dict(opened)})
    return list(files)


def _store_names(files: list[str]) -> list[str]:
    """The store's files: ``ledgerFiles``, and for a SQLite store (spec 30 §1.1) SQLite's own
    sidecar names too, present or not: a file a tool creates under such a name is read by SQLite
    as a WAL or a hot journal at the next open."""
    names = list(files)
    if "runtime.sqlite" in files:
        names += [n for n in ("runtime.sqlite-wal", "runtime.sqlite-shm", "runtime.sqlite-journal") if n not in names]
    return names


def _hostile_calls(files: list[str], marker: bool) -> list[dict[str, Any]]:
    """One call per (tool, runtime file), directly and through the symlinks ``alias -> .``,
    ``store-link -> <first ledger file>`` and ``marker-link -> .maka-workspace.json``."""
    calls: list[dict[str, Any]] = []
    for i, name in enumerate(_store_names(files)):
        calls.append({"id": f"read-store-{i}", "name": "Read", "args": {"path": name}})
        calls.append({"id": f"append-store-{i}", "name": "Append", "args": {"path": name, "content": "clobbered"}})
        calls.append({"id": f"write-store-{i}", "name": "Write", "args": {"path": name, "content": "clobbered"}})
    calls += [
        {"id": "read-effects", "name": "Read", "args": {"path": EFFECT_LOG}},
        {"id": "append-effects", "name": "Append", "args": {"path": EFFECT_LOG, "content": "{}\n"}},
        {"id": "edit-effects", "name": "Edit", "args": {"path": "./" + EFFECT_LOG, "old": "operationId", "new": "x"}},
        {"id": "write-effects", "name": "Write", "args": {"path": EFFECT_LOG, "content": ""}},
        {"id": "alias-effects", "name": "Append", "args": {"path": "alias/" + EFFECT_LOG, "content": "{}\n"}},
        {"id": "alias-store", "name": "Write", "args": {"path": "alias/" + files[0], "content": "clobbered"}},
        {"id": "link-store", "name": "Append", "args": {"path": "store-link", "content": "clobbered"}},
    ]
    if marker:
        calls += [
            {"id": "read-marker", "name": "Read", "args": {"path": WORKSPACE_MARKER}},
            {"id": "write-marker", "name": "Write", "args": {"path": WORKSPACE_MARKER, "content": "{}"}},
            {"id": "edit-marker", "name": "Edit", "args": {"path": WORKSPACE_MARKER, "old": "{", "new": "["}},
            {"id": "link-marker", "name": "Write", "args": {"path": "marker-link", "content": "{}"}},
        ]
    return calls


@clause("RUNTIME-TOOLS-004", spec="protocol §4.3 (workspace confinement, effect log); 30 §1.1; 20 §6.1; 30 §6.5",
        capability="runtime.loop", needs=("store",),
        title="Read, Write, Edit and Append of the store's files, the effect log or the workspace marker (also "
              "through a symlink) are error results and leave those files as they were")
def test_runtime_files_are_not_tool_paths(maka: Any, tmp_path: Path) -> None:
    """Confinement (protocol §4.3, adapter guide §6): a tool path must not name the store's files
    or the effect log — a model that can rewrite the ledger, the workspace identity marker
    (spec 20 §6.1) or the harness's "ran twice" oracle can forge any recovery decision. Kills
    ``runtime-reserved-files-not-confined``.

    A first turn seeds the workspace (store, marker, one effect-log line); ``ledgerFiles`` names
    the store's files. A second turn calls Read / Append / Write on each of them (and on SQLite's
    sidecar names for a SQLite store), Read / Append / Edit / Write on the effect log, on the
    marker when it exists, and the same through symlinks inside the workspace. No call may
    report ``ok``; each response is an error result; no result leaks the files' content; the
    effect log and the marker are byte-identical (no line: nothing started), the database still
    starts with its SQLite header and the symlinks are untouched. Both protocols."""
    for protocol in PROTOCOLS.values():
        base = tmp_path / f"own-files-{protocol}"
        base.mkdir()
        workspace = os.path.realpath(base / "ws")
        os.mkdir(workspace)
        seed = [{"toolCalls": [{"id": "seed", "name": "Write", "args": {"path": "seed.txt", "content": "seed\n"}}]},
                {"text": "seeded"}]
        _turn(maka, workspace, protocol, seed, "seed the workspace")
        files = _ledger_files(maka, workspace)
        marker = os.path.isfile(os.path.join(workspace, WORKSPACE_MARKER))
        links = {"alias": ".", "store-link": files[0]}
        if marker:
            links["marker-link"] = WORKSPACE_MARKER
        for link, target in links.items():
            os.symlink(target, os.path.join(workspace, link))
        log_before = Path(workspace, EFFECT_LOG).read_bytes()
        marker_before = Path(workspace, WORKSPACE_MARKER).read_bytes() if marker else None
        databases = [name for name in files if Path(workspace, name).read_bytes()[:16] == SQLITE_HEADER]
        calls = _hostile_calls(files, marker)
        steps = [{"toolCalls": [call]} for call in calls] + [{"text": "refused"}]
        result, run = _turn(maka, workspace, protocol, steps, "touch the runtime's files", calls)
        _expect_completed(result, run, protocol)
        for call in calls:
            _expect_error(run, call["id"], protocol, f"a tool call naming a runtime file {call['args']['path']!r}")
        leaks = {"the effect log": log_before.decode("ascii").split("\n")[0]}
        if marker_before is not None:
            leaks["the workspace marker"] = marker_before.decode("utf-8", "replace").strip()
        for name in databases:
            leaks[name] = "SQLite format 3"
        for call in calls:
            text = "".join(_strings(_response(run, call["id"], protocol).get("result")))
            for what, secret in leaks.items():
                if secret and secret in text:
                    raise ClauseMismatch(f"[{protocol}] {call['id']}: a refused call's result carries {what}'s content",
                                         evidence={"call": call, "result": text[:2000]})
        expect_equal(log_before, Path(workspace, EFFECT_LOG).read_bytes(),
                     what=f"[{protocol}] the effect log after refused calls (no line, no change)")
        if marker_before is not None:
            expect_equal(marker_before, Path(workspace, WORKSPACE_MARKER).read_bytes(),
                         what=f"[{protocol}] the workspace marker after refused calls")
        for name in databases:
            path = Path(workspace, name)
            if not path.is_file() or path.read_bytes()[:16] != SQLITE_HEADER:
                raise ClauseMismatch(f"[{protocol}] {name} is no longer a SQLite database after the refused calls")
        for link, target in links.items():
            path = os.path.join(workspace, link)
            if not os.path.islink(path) or os.readlink(path) != target:
                raise ClauseMismatch(f"[{protocol}] the symlink {link} -> {target} was replaced by a tool call")
