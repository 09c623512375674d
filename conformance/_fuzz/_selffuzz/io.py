"""Self-fuzz targets with I/O: the store's read path on corrupted files, the adapter's parser.

Store (target ``store``): two *images* are built once per run with the reference's own writers
(family W of spec 10 §7: a marker, T1, T2, a second operation left at T1, an AgentRun header):
``closed`` (the writer closed: ``runtime.sqlite`` only) and ``wal`` (copied while the writer
was open with auto-checkpoint off: committed frames live only in ``runtime.sqlite-wal``). Each
example copies one image into a fresh workspace, corrupts it (bit flips, truncation, zeroed
pages, overwrites, appended junk at seeded offsets), hashes every file, then runs
``RuntimeStore.open_read_only`` with every read, and ``inspect_workspace``. Each must give a
result or a ``StoreError`` with a stable code, and every file must be byte-identical afterwards
with no file created (``runtime.sqlite-shm`` excepted: SQLite's shared-memory index, not data,
``maka_ref/adapter/_store_ops.py``).

Adapter (target ``adapter``): request lines into :func:`maka_ref.adapter._server.respond` of a
fresh :class:`Dispatcher` (all capabilities, as ``_server.main`` builds it) in a fresh
workspace: arbitrary bytes, mutated valid requests, and ``{id, op, params}`` for every
operation with params drawn from the keys the operations read (arbitrary JSON values, real
ledgers, the workspace path). The response must validate (``conformance.protocol.validate_response``),
echo the id, and never be ``internal_error``. ``faults.arm`` is left out: an armed failpoint
blocks the calling thread until the process is killed, which is its contract.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Any, Callable

from hypothesis import strategies as st

from conformance._fuzz._selffuzz.targets import Finding, call, edited_ledgers, stable_code
from maka_ref.testing.strategies import json_values, ledgers

__all__ = ["FILES", "adapter_lines", "build_images", "check_adapter", "check_store", "store_cases"]

FILES = ("runtime.sqlite", "runtime.sqlite-wal")
PAGE = 4096
_KINDS = ("flip", "truncate", "zero_page", "overwrite", "append")


# --------------------------------------------------------------------------- 3. store read path

def _populate(root: str, keep_open: bool) -> None:
    from maka_ref._store import RuntimeStore, T1Input, T2Input
    from maka_ref._store.agent_runs.store import AgentRunStore
    from maka_ref.testing import families as fam

    def t1(n: str, call_: Any, dispatch: Any) -> T1Input:
        return T1Input(operation_id=f"operation-{n}", journal_event_id=f"operation-{n}_prepared", runtime_event=call_,
                       dispatch_runtime_event=dispatch, provider_tool_call_id=f"provider-call-{n}", tool_name="Write",
                       canonical_args_hash=fam.WRITE_NOTES_HASH, recovery_mode="reconcile", committed_at=10)

    store = RuntimeStore.open(root)
    runs = AgentRunStore.open(root)
    if keep_open:
        store.connection.execute("PRAGMA wal_autocheckpoint = 0")
    runs.create_run({"runId": "run-1", "sessionId": "session-1", "turnId": "turn-1", "status": "running",
                     "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace",
                     "permissionMode": "ask", "createdAt": 1, "updatedAt": 2})
    store.append(fam.w_marker())
    store.commit_tool_prepared(t1("1", fam.w_call(), fam.w_dispatch()))
    store.commit_tool_outcome(T2Input(operation_id="operation-1", journal_event_id="operation-1_outcome",
                                      runtime_event=fam.w_outcome(), committed_at=20))
    call2 = fam.w_call(id="call-event-2")
    call2["content"]["id"] = "provider-call-2"
    dispatch2 = fam.w_dispatch(id="dispatch-event-2")
    dispatch2["actions"]["toolDispatch"].update(operationId="operation-2", providerToolCallId="provider-call-2")
    dispatch2["refs"] = {"operationId": "operation-2", "toolCallId": "provider-call-2"}
    store.commit_tool_prepared(t1("2", call2, dispatch2))  # a second operation, left unsettled
    if keep_open:
        image = root + ".wal-image"
        os.makedirs(image)
        for name in FILES:
            if os.path.exists(os.path.join(root, name)):
                shutil.copyfile(os.path.join(root, name), os.path.join(image, name))
    runs.close()
    store.close()
    if keep_open:
        shutil.rmtree(root)
        os.rename(root + ".wal-image", root)


def build_images(root: str) -> dict[str, dict[str, bytes]]:
    """``{"closed": {file: bytes}, "wal": {…}}`` written by the reference's own writers."""
    images: dict[str, dict[str, bytes]] = {}
    for name, keep_open in (("closed", False), ("wal", True)):
        where = os.path.join(root, f"image-{name}")
        shutil.rmtree(where, ignore_errors=True)
        _populate(where, keep_open)
        images[name] = {}
        for f in FILES:
            path = os.path.join(where, f)
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    images[name][f] = handle.read()
        shutil.rmtree(where, ignore_errors=True)
    return images


def store_cases() -> st.SearchStrategy[dict[str, Any]]:
    """``{"image", "corruptions": [{kind, file, offset, length, data}]}`` (offsets are taken modulo the size)."""
    offsets = st.one_of(st.integers(0, 100), st.integers(0, 64).map(lambda p: p * PAGE),
                        st.integers(0, 64).map(lambda p: p * PAGE + 32), st.integers(0, 1 << 20))
    corruption = st.fixed_dictionaries({
        "kind": st.sampled_from(_KINDS), "file": st.sampled_from(FILES), "offset": offsets,
        "length": st.integers(1, 512), "data": st.binary(min_size=1, max_size=32)})
    return st.fixed_dictionaries({"image": st.sampled_from(("closed", "wal")),
                                  "corruptions": st.lists(corruption, min_size=1, max_size=3)})


def corrupt(data: bytes, c: dict[str, Any]) -> bytes:
    """One corruption applied to one file's bytes (a missing file only gains ``append``ed junk)."""
    buf = bytearray(data)
    kind, off = c["kind"], (c["offset"] % len(buf) if buf else 0)
    if kind == "flip" and buf:
        buf[off] ^= c["data"][0] or 0x01
    elif kind == "truncate":
        del buf[off:]
    elif kind == "zero_page" and buf:
        start = off - off % PAGE
        buf[start:start + PAGE] = bytes(len(buf[start:start + PAGE]))
    elif kind == "overwrite" and buf:
        buf[off:off + len(c["data"])] = c["data"]
    elif kind == "append":
        buf += c["data"] * max(1, c["length"] // len(c["data"]))
    return bytes(buf)


def _tree(root: str) -> dict[str, str]:
    out = {}
    for name in sorted(os.listdir(root)):
        with open(os.path.join(root, name), "rb") as handle:
            out[name] = hashlib.sha256(handle.read()).hexdigest()
    return out


def check_store(case: dict[str, Any], images: dict[str, dict[str, bytes]], scratch: str) -> None:
    from maka_ref._inspect import inspect_workspace
    from maka_ref._store import RuntimeStore, StoreError

    files = dict(images[case["image"]])
    for c in case["corruptions"]:
        if c["file"] in files or c["kind"] == "append":
            files[c["file"]] = corrupt(files.get(c["file"], b""), c)
    ws = tempfile.mkdtemp(prefix="ws-", dir=scratch)
    try:
        for name, data in files.items():
            with open(os.path.join(ws, name), "wb") as handle:
                handle.write(data)
        before = _tree(ws)
        t = "store"
        store = call(t, "RuntimeStore.open_read_only", case, lambda: RuntimeStore.open_read_only(ws), (StoreError,))
        if not isinstance(store, StoreError):
            try:
                reads: list[tuple[str, Callable[[], Any]]] = [
                    ("schema_version", store.schema_version),
                    ("read_run_events", lambda: store.read_run_events("session-1", "run-1")),
                    ("read_session_events", lambda: store.read_session_events("session-1")),
                    ("list_unsettled_operations", store.list_unsettled_operations),
                    ("read_tool_operation", lambda: store.read_tool_operation("operation-1")),
                    ("read_tool_journal", lambda: store.read_tool_journal("operation-1")),
                    ("list_claims", lambda: store.list_claims("session-1")),
                ]
                for name, read in reads:
                    call(t, f"RuntimeStore.{name}", case, read, (StoreError,))
            finally:
                call(t, "RuntimeStore.close", case, store.close, (StoreError,))
        call(t, "inspect_workspace", case, lambda: inspect_workspace(ws), (StoreError,))
        after = _tree(ws)
        after.pop("runtime.sqlite-shm", None)
        if after != before:
            changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
            raise Finding(t, "read-never-writes", case, f"files changed or created by a read: {changed}")
    finally:
        shutil.rmtree(ws, ignore_errors=True)


# --------------------------------------------------------------------------- 4. adapter request parser

#: Keys the operations read (protocol §4): drawn more often than random keys, to get past the checks.
_PARAM_KEYS = ("event", "eventJson", "events", "toolName", "argsJson", "existing", "candidates", "kind", "identity",
               "callEvent", "dispatchEvent", "reconcileEvent", "outcomeEvent", "decisionEvent", "responseEvent",
               "operationIndex", "now", "toolMode", "expectedRuntimeEventHighWater", "segments", "highWater",
               "providerProjectionVersion", "sessionId", "runId", "header", "patch", "operationId", "journalEventId",
               "providerToolCallId", "canonicalArgsHash", "recoveryMode", "committedAt", "readOnly", "script",
               "protocol", "requests", "op", "params")
_SKIPPED_OPS = frozenset({"faults.arm"})


def adapter_ops() -> list[str]:
    from maka_ref.adapter._dispatch import Dispatcher

    dispatcher = Dispatcher()
    try:
        return sorted(op for op in dispatcher.table if op not in _SKIPPED_OPS)
    finally:
        dispatcher.close()


_WORKSPACE = "\x00workspace"  # replaced by the example's workspace path at check time


def _values() -> st.SearchStrategy[Any]:
    events = st.builds(lambda l: [dict(e) for e in l.events], ledgers(max_turns=1))
    return st.one_of(json_values(max_leaves=6), events, edited_ledgers(), st.just(_WORKSPACE),
                     events.map(lambda e: e[0] if e else {}))


@st.composite
def _request(draw: Callable[[Any], Any], ops: list[str]) -> dict[str, Any]:
    op = draw(st.one_of(st.sampled_from(ops), st.text(max_size=12)))
    params: dict[str, Any] = draw(st.dictionaries(st.one_of(st.sampled_from(_PARAM_KEYS), st.text(max_size=6)),
                                                  _values(), max_size=5))
    if draw(st.booleans()):
        params["workspace"] = _WORKSPACE
    if op == "batch":
        params["requests"] = draw(st.lists(st.fixed_dictionaries(
            {"op": st.sampled_from([o for o in ops if o != "batch"]),
             "params": st.dictionaries(st.sampled_from(_PARAM_KEYS), _values(), max_size=3)}), max_size=3))
    request: dict[str, Any] = {"id": draw(st.one_of(st.integers(0, 2**53), json_values(max_leaves=1))), "op": op}
    if draw(st.integers(0, 9)):
        request["params"] = params
    return request


@st.composite
def _mutated(draw: Callable[[Any], Any], ops: list[str]) -> bytes:
    data = bytearray(json.dumps(draw(_request(ops))).encode("utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(0, len(data) - 1)))
        data[i:i + draw(st.integers(0, 2))] = draw(st.binary(max_size=3))
    return bytes(data)


def adapter_lines(ops: list[str]) -> st.SearchStrategy[Any]:
    """A request line (bytes), or a request object to encode (with the workspace placeholder)."""
    return st.one_of(st.binary(max_size=120), _mutated(ops), _request(ops), _request(ops))


def _substitute(value: Any, workspace: str) -> Any:
    if value == _WORKSPACE:
        return workspace
    if isinstance(value, dict):
        return {k: _substitute(v, workspace) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, workspace) for v in value]
    return value


def check_adapter(case: Any, scratch: str) -> None:
    from conformance.protocol import validate_response
    from maka_ref import parse_json
    from maka_ref.adapter._dispatch import Dispatcher
    from maka_ref.adapter._server import respond

    ws = tempfile.mkdtemp(prefix="ws-", dir=scratch)
    dispatcher = Dispatcher()
    try:
        line = case if isinstance(case, bytes) else \
            json.dumps(_substitute(case, ws), ensure_ascii=True).encode("utf-8")
        response = call("adapter", "respond", case, lambda: respond(dispatcher, line))
        try:
            request = parse_json(line.decode("utf-8").rstrip("\r\n"))
        except (ValueError, UnicodeDecodeError):
            request = None
        valid_id = isinstance(request, dict) and isinstance(request.get("id"), int) \
            and not isinstance(request.get("id"), bool) and request["id"] >= 0
        op = request.get("op") if isinstance(request, dict) and isinstance(request.get("op"), str) else ""
        if not isinstance(response, dict):
            raise Finding("adapter", "envelope", case, f"respond returned {type(response).__name__}")
        problems = call("adapter", "validate_response", case, lambda: validate_response(op, response))
        if problems:
            raise Finding("adapter", "envelope", case, f"invalid response to {op!r}: {problems[:3]}")
        if response.get("id") != (request["id"] if valid_id else None):
            raise Finding("adapter", "id", case, f"response id {response.get('id')!r} for request id "
                                                 f"{request.get('id') if isinstance(request, dict) else None!r}")
        answers = [response]
        if op == "batch" and response.get("ok"):
            answers += list(response["result"].get("responses", []))
        for answer in answers:
            error = answer.get("error") or {}
            if not answer.get("ok") and (error.get("code") == "internal_error" or not stable_code(error.get("code"))):
                raise Finding("adapter", f"{op or '?'}:{error.get('code')}", case, str(error.get("message"))[:500])
    finally:
        call("adapter", "Dispatcher.close", case, dispatcher.close)
        shutil.rmtree(ws, ignore_errors=True)
