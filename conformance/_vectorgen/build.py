"""Build the golden vectors in ``conformance/vectors/`` (spec 10 §2, §7; spec 20 §1, §2, §8).

Run ``python -m conformance._vectorgen.build`` to (re)write the files and
``python -m conformance._vectorgen.build --check`` to verify that the files on disk are
exactly what this generator writes (exit status 1 and a list of stale files otherwise).

Rules this generator follows (they are what makes the vectors trustworthy):

* Every ``expect`` value is transcribed by hand from the spec text (a scenario, a table row,
  or a rule the scenario names) and written literally below. Nothing is computed by the
  reference runtime: the only import from ``maka_ref`` is :mod:`maka_ref.testing.families`,
  the spec's fixture families as builders of plain dicts (inputs only).
* Where the spec states only part of an answer, the vector uses a partial matcher
  (``resolutionSubset``, ``decisions``, ``issueCodes``, ``planSubset``, ...) and leaves the
  rest unchecked; it never fills in values the spec does not state.
* Output is deterministic: files are written in the order vectors are listed here, with
  two-space indentation, non-ASCII characters kept raw (UTF-8) and a trailing newline.
  Strings that cannot be written raw (lone surrogates) and numbers whose JSON spelling
  matters (``-0``, ``1.0``, integers beyond 2^53) only ever appear inside ``argsJson`` /
  ``eventJson`` *text* inputs.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from maka_ref.testing import families as F

PACKAGE_DIR = Path(__file__).resolve().parent.parent
VECTORS_DIR = PACKAGE_DIR / "vectors"
README = VECTORS_DIR / "README.md"
SCHEMA_REF = "./vector.schema.json"

T1 = F.T1
BASH_HASH = F.BASH_DO_IT_HASH  # 10 §2.6: hash(Bash, {"command":"do-it"})
WRITE_HASH = F.WRITE_NOTES_HASH  # 10 §2.6: hash(Write, {"content":"after","path":"notes.txt"})
#: 10 §2.6: hash(Write, {"path":"other.txt","content":"after"}).
WRITE_OTHER_HASH = "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838"
#: 10 §2.6: hash(exec, {"code":"work()"}).
EXEC_HASH = "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761"
#: 10 §2.6: hash(Read, {"path":"prepared.txt"}).
READ_PREPARED_HASH = "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2"
STRICT_ARGS_MESSAGE = "Tool arguments must be strict JSON values"  # 10 §2.6 "Errors"
SCHEMA_MESSAGE = "Invalid RuntimeEvent schema"  # 10 §2.1
NOT_SERIALIZABLE_MESSAGE = "RuntimeEvent is not losslessly serializable"  # 10 §2.2
CODE_MODE_MESSAGE = "Code Mode execution was interrupted by runtime recovery."  # 10 §6.5

# ---------------------------------------------------------------------------------------
# Vector helpers
# ---------------------------------------------------------------------------------------


def vec(vid: str, spec: str, description: str, operation: str, input_: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    """One vector, keys in reading order."""
    return {
        "id": vid,
        "spec": spec,
        "description": description,
        "operation": operation,
        "input": copy.deepcopy(input_),
        "expect": copy.deepcopy(expect),
    }


def err(message: str) -> dict[str, Any]:
    return {"error": {"message": message}}


def dm(absent: Iterable[str] = (), **subset: Any) -> dict[str, Any]:
    """A per-record partial matcher: keys compared exactly, ``absent`` keys must be missing."""
    out: dict[str, Any] = {"subset": subset}
    if absent:
        out["absent"] = list(absent)
    return out


def decision(
    tool_call_id: str,
    status: str,
    reason: str,
    *,
    toolName: str | None = None,
    operationId: str | None = None,
    settlementOrigin: str | None = None,
    call: str | None = None,
    dispatch: str | None = None,
    response: str | None = None,
    isError: bool | None = None,
) -> dict[str, Any]:
    """A full Decision object (10 §6.1) in the spec's key order, absent fields omitted."""
    out: dict[str, Any] = {"toolCallId": tool_call_id}
    if toolName is not None:
        out["toolName"] = toolName
    if operationId is not None:
        out["operationId"] = operationId
    out["status"] = status
    out["reason"] = reason
    if settlementOrigin is not None:
        out["settlementOrigin"] = settlementOrigin
    if call is not None:
        out["callRuntimeEventId"] = call
    if dispatch is not None:
        out["dispatchRuntimeEventId"] = dispatch
    if response is not None:
        out["responseRuntimeEventId"] = response
        out["responseIsError"] = bool(isError)
    return out


def resolution(decisions: list[dict[str, Any]], issues: list[tuple[str, str]], corr: bool, recon: bool, *, t1: bool) -> dict[str, Any]:
    """A full Resolution object (10 §6.1)."""
    out: dict[str, Any] = {}
    if t1:
        out["toolBoundaryProtocol"] = T1
    out["decisions"] = decisions
    out["issues"] = [{"code": c, "eventId": e} for c, e in issues]
    out["hasCorruption"] = corr
    out["requiresReconciliation"] = recon
    return out


def iss(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"code": c, "eventId": e} for c, e in pairs]


# ---------------------------------------------------------------------------------------
# Event builders beyond the fixture families
# ---------------------------------------------------------------------------------------

E = F.event
W = F.with_fields


def drop(event: dict[str, Any], *keys: str) -> dict[str, Any]:
    out = copy.deepcopy(event)
    for key in keys:
        out.pop(key, None)
    return out


def set_in(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``event`` with the dotted ``path`` set to ``value``."""
    out = copy.deepcopy(event)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)
    return out


def del_in(event: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(event)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]
    return out


# W family shorthands (10 §7 "Fixture families").
def C(**kw: Any) -> dict[str, Any]:
    return W(F.w_call(), **kw) if kw else F.w_call()


def D(**kw: Any) -> dict[str, Any]:
    return W(F.w_dispatch(), **kw) if kw else F.w_dispatch()


def RC(obs: str = "matches_expected_state", **kw: Any) -> dict[str, Any]:
    return W(F.w_reconcile(obs), **kw) if kw else F.w_reconcile(obs)


def O(err: bool = False, **kw: Any) -> dict[str, Any]:  # noqa: E741 - the spec's name
    return W(F.w_outcome(err), **kw) if kw else F.w_outcome(err)


def OU(err: bool = False, **kw: Any) -> dict[str, Any]:
    return W(F.w_outcome_unbound(err), **kw) if kw else F.w_outcome_unbound(err)


def DC(**kw: Any) -> dict[str, Any]:
    return W(F.w_decision_completed(), **kw) if kw else F.w_decision_completed()


def DP(reason: str = "reconcile_diverged", **kw: Any) -> dict[str, Any]:
    return W(F.w_decision_parked(reason), **kw) if kw else F.w_decision_parked(reason)


def M() -> dict[str, Any]:
    return F.w_marker()


def USER(id: str = "initial-1", **kw: Any) -> dict[str, Any]:
    """A legacy user event (the W family's ``M`` without the marker)."""
    return E(id, role="user", author="user", content={"kind": "text", "text": "run it"}, **kw)


def D_with_tool_dispatch(**changes: Any) -> dict[str, Any]:
    """``D`` with fields of ``actions.toolDispatch`` replaced."""
    d = F.w_dispatch()
    d["actions"]["toolDispatch"].update(copy.deepcopy(changes))
    return d


def payload_set(event: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A recovery fact with fields of ``actions.toolRecovery.payload`` replaced."""
    out = copy.deepcopy(event)
    out["actions"]["toolRecovery"]["payload"].update(copy.deepcopy(changes))
    return out


# Spec 20 ledgers: identity session-1/invocation-1/run-1/turn-1 unless overridden.
ID20 = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
ID20_RUN2 = {"sessionId": "session-1", "invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}


def ev20(id: str, ts: int, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id, **(identity or ID20), "ts": ts, "partial": False}
    out.update(copy.deepcopy(fields))
    return out


def user20(id: str = "user-1", ts: int = 1, *, text: str = "hello", marker: bool = False, identity: dict[str, str] | None = None) -> dict[str, Any]:
    e = ev20(id, ts, identity, role="user", author="user", content={"kind": "text", "text": text})
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def call20(id: str, ts: int, call_id: str, name: str, args: Any, *, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(
        id, ts, identity, role="model", author="agent",
        content={"kind": "function_call", "id": call_id, "name": name, "args": args}, **fields,
    )


def response20(id: str, ts: int, call_id: str, name: str, result: Any, *, is_error: bool = False,
               identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"kind": "function_response", "id": call_id, "name": name, "result": result}
    if is_error:
        content["isError"] = True
    return ev20(id, ts, identity, role="tool", author="tool", content=content, **fields)


def dispatch20(id: str, ts: int, op: str, call_id: str, name: str, args_hash: str, *, mode: str = "never_auto_retry",
               refs: dict[str, str] | None = None, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(
        id, ts, identity, role="system", author="system",
        actions={"toolDispatch": {"protocol": T1, "operationId": op, "providerToolCallId": call_id, "toolName": name,
                                  "canonicalArgsHash": args_hash, "recoveryMode": mode}},
        refs=refs if refs is not None else {"operationId": op, "toolCallId": call_id}, **fields,
    )


def text20(id: str, ts: int, role: str, author: str, text: str, *, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(id, ts, identity, role=role, author=author, content={"kind": "text", "text": text}, **fields)


def terminal20(id: str, ts: int, *, status: str = "failed", identity: dict[str, str] | None = None) -> dict[str, Any]:
    return ev20(id, ts, identity, role="system", author="system", status=status, actions={"endInvocation": True})


def continuation_start20(id: str, ts: int, *, marker: bool, identity: dict[str, str] | None = None,
                         provenance: str = "runtime_admission", version: int = 1) -> dict[str, Any]:
    """A ``continuation_start_v2`` event (10 §1.3.2, 20 §3.12) with well-formed placeholder digests."""
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": provenance,
            "claimId": "claim-2",
            "boundaryDigest": "sha256:" + "b" * 64,
            "immediateSource": {
                "sessionId": "session-1",
                "invocationId": "invocation-1",
                "runId": "run-1",
                "turnId": "turn-1",
                "highWater": 3,
                "prefixDigest": "sha256:" + "c" * 64,
            },
            "replayManifestDigest": "sha256:" + "d" * 64,
            "providerProjectionVersion": version,
            "providerReplayDigest": "sha256:" + "e" * 64,
        }
    }
    if marker:
        actions["runtimeProtocol"] = {"toolBoundary": T1}
    return ev20(id, ts, identity or ID20_RUN2, role="system", author="system", actions=actions)


# ---------------------------------------------------------------------------------------
# args-hash.json — 10 §2.6, §7.1
# ---------------------------------------------------------------------------------------

#: The 25 rows of the 10 §2.6 vector table: (slug, toolName, args JSON text, hash, scenario).
ARGS_HASH_ROWS: list[tuple[str, str, str, str, str]] = [
    ("write-notes", "Write", '{"content":"after","path":"notes.txt"}',
     "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9", "#1, #3"),
    ("x-path-prepared", "X", '{"path":"prepared.txt"}',
     "sha256:b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1", "#3"),
    ("x-required-sorted", "X", '{"required":["b","a"]}',
     "sha256:0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43", "#3"),
    ("x-nested-enum-sorted", "X", '{"nested":{"enum":["z","a"]}}',
     "sha256:a1545a7c4bb9197d99d49327067d31da23188091e1bf6641e2a1698d9a906eca", "#3"),
    ("x-proto-dropped", "X", '{"__proto__":{"admin":true}}',
     "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9", "#3, #4"),
    ("x-ordinary-array-kept", "X", '{"ordinaryArray":["b","a"]}',
     "sha256:4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351", "#3"),
    ("bash-do-it", "Bash", '{"command":"do-it"}',
     "sha256:83f3a7d12c96b30b1e7b8e8afc4e13829dc19a0fa0f893647a0e31375b0a0669", "#7"),
    ("write-empty", "Write", "{}",
     "sha256:9a3dd70ae85e22878030f346a283f4c208e57b432eed170a0143773fd334c9f6", "#7"),
    ("read-empty", "Read", "{}",
     "sha256:98f17b72526ca658f49b9421e725a2642b943a4e0cd249bebf931651e319dfe6", "#7"),
    ("exec-code", "exec", '{"code":"work()"}',
     "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761", "#7"),
    ("write-other", "Write", '{"path":"other.txt","content":"after"}',
     "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838", "#7"),
    ("read-prepared", "Read", '{"path":"prepared.txt"}',
     "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2", "#7"),
    ("collation-case", "X", '{"required":["B","a","b","A"]}',
     "sha256:a4e3053a4c26254b5652a507fe66787ff36b2412ebb3a19b0f2f5a9e981c5984", "#7"),
    ("collation-punctuation-digits", "X", '{"required":["a-b","ab","a_b","a b","a1","a10","a2"]}',
     "sha256:fe91ba6cfcc6f430333ad4e16891b30da45798be6cc37070802d21250c97c88e", "#7"),
    ("collation-mixed-types", "X", '{"enum":[10,9,1,"x",null,true]}',
     "sha256:cc5a983d5392f0168a2cfdc45bf5b16cded378e9549877a8fffc5b6eb0786c55", "#7"),
    ("collation-nested-arrays", "X", '{"required":[["b"],["a"]]}',
     "sha256:a8cb62a4ce0ba52e2b91c4b423565446aca635b9d98b296da4d12af3cb15d226", "#7"),
    ("required-object-nested-enum", "X", '{"required":{"enum":["b","a"]}}',
     "sha256:d538d428c1fb4256c7db06e101af5a2ffcfbf835bcce6710f5a912d5875a8a83", "#7"),
    ("number-text", "X", '{"n":1.0,"f":1.5,"big":1e21,"small":1e-7}',
     "sha256:fd79b143265ed94d2096cf6f698529a6f4051c0dc4dca05ebe53ce2e306d8b87", "#7"),
    ("utf16-key-order", "X", r'{"é":1,"z":2,"Z":3,"\ud83d\ude00":4,"\uff01":5}',
     "sha256:8936508bc7caeb62d3e746e5c1595fcbbaabc6669ce21ecde64c4ae6f898348f", "#7"),
    ("string-escapes", "X", r'{"s":"line\nbreak\u0001\u007f\u2028\"\\/"}',
     "sha256:866256c3ba406edde80cc112c0172cded11549e8e8127ba30abfb395e20f126f", "#7"),
    ("array-args", "X", '[1,{"b":1,"a":2}]',
     "sha256:fe52842902f94e18319df60a587073958e67425c37c8a51970bd94a73d499e94", "#7"),
    ("string-args", "X", '"plain string args"',
     "sha256:46a9a7e2e69f16e4623c2293de7832aadd1e2d67e1f89621e8ca34aaf037ca52", "#7"),
    ("null-args", "X", "null",
     "sha256:6dc46f9f4e99c4224c2be66356156527206902d447ad81837d2cf33b835329fb", "#7"),
    ("big-integer-double", "X", '{"big":12345678901234567890}',
     "sha256:c62174887c26654d600658e60826423ec0a07f2af9ce51d98f74c926f806873a", "#7"),
    ("array-index-key-order", "X", '{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,"4294967294":7,"4294967295":8,"1.5":9}',
     "sha256:3fbf2fda5e82c573a7673bbb2cdf31e998d35a3001a022bcb2fe48378848c689", "#7"),
]

ARGS_HASH_NOTES = {
    "write-notes": "the hash of Write with content/path in this key order",
    "number-text": "numbers print as ECMAScript text: body {\"args\":{\"big\":1e+21,\"f\":1.5,\"n\":1,\"small\":1e-7},\"toolName\":\"X\"}",
    "utf16-key-order": "object keys sort by UTF-16 code units: body key order Z, z, é, 😀, ！",
    "collation-case": "strings under required sort by ICU root collation: [\"a\",\"A\",\"b\",\"B\"]",
    "collation-punctuation-digits": "ICU root collation: [\"a b\",\"a_b\",\"a-b\",\"a1\",\"a10\",\"a2\",\"ab\"]",
    "collation-mixed-types": "elements under enum sort by collating their JSON text: [\"x\",1,10,9,null,true]",
    "collation-nested-arrays": "array elements under required sort by their JSON text: [[\"a\"],[\"b\"]]",
    "big-integer-double": "the integer parses as a double and the body prints 12345678901234567000",
    "array-index-key-order": "array-index keys first in numeric order, then the rest by UTF-16 order",
    "x-proto-dropped": "a key named __proto__ is skipped by the hash canonicalisation",
    "x-ordinary-array-kept": "arrays not under required/enum keep their order",
    "required-object-nested-enum": "an object under required is not sorted; the enum array inside it is",
}


def group_args_hash() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []
    for slug, tool, args_json, digest, scen in ARGS_HASH_ROWS:
        note = ARGS_HASH_NOTES.get(slug, "anchor-produced vector")
        vs.append(vec(
            f"args-hash/{slug}", f"10 §2.6 table; 10 §7.1 {scen}",
            f"canonicalArgsHash({tool}, {args_json}): {note}.",
            "args_hash", {"toolName": tool, "argsJson": args_json}, {"hash": digest},
        ))
    vs.insert(1, vec(
        "args-hash/write-notes-other-key-order", "10 §2.6 table row 1; 10 §7.1 #1",
        "The Write vector hashes the same whatever the key order of the arguments.",
        "args_hash", {"toolName": "Write", "argsJson": '{"path":"notes.txt","content":"after"}'},
        {"hash": "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"},
    ))
    vs += [
        vec("args-hash/x-empty-object-equals-proto", "10 §2.6 (\"{\\\"__proto__\\\":…} hash like {}\"); 10 §7.1 #4",
            "Empty arguments hash like arguments holding only a __proto__ key.",
            "args_hash", {"toolName": "X", "argsJson": "{}"},
            {"hash": "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9"}),
        vec("args-hash/nested-proto-dropped", "10 §2.6; 10 §7.1 #4",
            "A nested __proto__ key is skipped too, so the arguments hash like {\"nested\":{}}.",
            "args_hash", {"toolName": "X", "argsJson": '{"nested":{"__proto__":{"admin":true}}}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"nested":{}}'}}),
        vec("args-hash/proto-dropped-before-collation", "10 §2.6 step 3",
            "Elements under required are sorted by their JSON text after __proto__ keys are dropped.",
            "args_hash", {"toolName": "X", "argsJson": '{"required":[{"__proto__":{"z":1},"b":1},{"a":1}]}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"required":[{"a":1},{"b":1}]}'}}),
        vec("args-hash/negative-zero-hashes-as-zero", "10 §2.4",
            "In the args hash (unlike event encoding) -0 is accepted and printed as 0.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":-0}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"v":0}'}}),
        vec("args-hash/empty-tool-name", "10 §2.6 step 1 and \"Errors\"; 10 §7.1 #7",
            "An empty tool name is refused with the \"requires a tool name\" error.",
            "args_hash", {"toolName": "", "argsJson": "{}"},
            {"error": {"messageContains": "requires a tool name"}}),
        vec("args-hash/positive-infinity", "10 §2.6 \"Errors\"; 10 §7.1 #2",
            "A number literal that overflows to +Infinity as a double is not strict JSON.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":1e400}'}, err(STRICT_ARGS_MESSAGE)),
        vec("args-hash/negative-infinity", "10 §2.6 \"Errors\"; 10 §7.1 #2",
            "A number literal that overflows to -Infinity as a double is not strict JSON.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":[-1e400]}'}, err(STRICT_ARGS_MESSAGE)),
    ]
    return "args-hash", (
        "canonicalArgsHash (spec 10 §2.6): the 25 anchor-produced vectors of the table, equalities the "
        "spec states without a value, and the two refusal messages."
    ), vs


# ---------------------------------------------------------------------------------------
# encoding.json — 10 §1, §2.1–§2.4, §5.1, §7.2
# ---------------------------------------------------------------------------------------

#: The envelope of the 10 §2.2 golden encodings.
GOLDEN_ENVELOPE = {"id": "evt-1", "invocationId": "inv-1", "runId": "run-1", "sessionId": "sess-1", "turnId": "turn-1",
                   "ts": 100, "partial": False}


def golden_rest(role: str) -> str:
    """The envelope tail that follows ``content`` in a golden line (cf. 10 §2.2 line 1)."""
    return (',"id":"evt-1","invocationId":"inv-1","partial":false,"role":"%s","runId":"run-1",'
            '"sessionId":"sess-1","ts":100,"turnId":"turn-1"}' % role)


def golden_event(role: str, author: str, **fields: Any) -> dict[str, Any]:
    return {**copy.deepcopy(GOLDEN_ENVELOPE), "role": role, "author": author, **copy.deepcopy(fields)}


def golden_event_json(role: str, author: str, content_json: str) -> str:
    """Event JSON *text* (non-canonical key order on purpose) with a literal ``content``."""
    return ('{"id":"evt-1","sessionId":"sess-1","runId":"run-1","invocationId":"inv-1","turnId":"turn-1",'
            '"ts":100,"partial":false,"role":"%s","author":"%s","content":%s}' % (role, author, content_json))


def group_encoding() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []
    g = "encoding"

    # --- the golden encodings of 10 §2.2 ----------------------------------------------
    vs.append(vec(
        f"{g}/golden-minimal-system-event", "10 §2.2 golden line 1; 10 §7.2 #21",
        "A minimal system event encodes with sorted keys and no whitespace.",
        "encode", {"event": golden_event("system", "system")},
        {"canonicalJson": '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
                          '"runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-dispatch-event", "10 §2.2 golden line 2; 10 §7.2 #21",
        "A T1 dispatch event encodes with sorted keys at every depth.",
        "encode", {"event": golden_event(
            "system", "system", id="dispatch-event-1",
            actions={"toolDispatch": {"protocol": T1, "operationId": "operation-1", "providerToolCallId": "provider-call-1",
                                      "toolName": "Write", "canonicalArgsHash": WRITE_HASH, "recoveryMode": "reconcile"}},
            refs={"toolCallId": "provider-call-1", "operationId": "operation-1"})},
        {"canonicalJson": '{"actions":{"toolDispatch":{"canonicalArgsHash":"sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",'
                          '"operationId":"operation-1","protocol":"t1_after_preflight_v1","providerToolCallId":"provider-call-1",'
                          '"recoveryMode":"reconcile","toolName":"Write"}},"author":"system","id":"dispatch-event-1",'
                          '"invocationId":"inv-1","partial":false,"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},'
                          '"role":"system","runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-reconcile-event", "10 §2.2 golden line 3; 10 §7.2 #21",
        "A reconcile observation encodes with its fact envelope keys sorted.",
        "encode", {"event": golden_event(
            "system", "system", id="reconcile-event-1", ts=2,
            actions={"toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 1, "payload": {
                "protocol": "tool_reconcile_v1", "operationId": "operation-1", "observation": "diverged",
                "observationSchema": "state_identity_v1", "observationDigest": F.OBSERVATION_DIGEST}}},
            refs={"operationId": "operation-1", "toolCallId": "provider-call-1"})},
        {"canonicalJson": '{"actions":{"toolRecovery":{"kind":"maka.tool.reconcile_result","payload":{"observation":"diverged",'
                          '"observationDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",'
                          '"observationSchema":"state_identity_v1","operationId":"operation-1","protocol":"tool_reconcile_v1"},'
                          '"version":1}},"author":"system","id":"reconcile-event-1","invocationId":"inv-1","partial":false,'
                          '"refs":{"operationId":"operation-1","toolCallId":"provider-call-1"},"role":"system","runId":"run-1",'
                          '"sessionId":"sess-1","ts":2,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/golden-text-normalized", "10 §2.2 golden line 4; 10 §2.1 step 2",
        "displayText equal to text and empty attachments/quotes are dropped by normalisation.",
        "encode", {"event": golden_event("user", "user", content={
            "kind": "text", "text": "hi", "displayText": "hi", "attachments": [], "quotes": []})},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"hi"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-empty-inline-references-kept", "10 §2.2 golden line 5; 10 §2.1 step 2",
        "An empty inlineReferences array is kept (it is meaningful).",
        "encode", {"event": golden_event("user", "user", content={"kind": "text", "text": "hi", "inlineReferences": []})},
        {"canonicalJson": '{"author":"user","content":{"inlineReferences":[],"kind":"text","text":"hi"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-proto-is-data", "10 §2.2 golden line 6; 10 §7.1 #4",
        "A __proto__ key is ordinary data in event JSON (unlike the args hash).",
        "encode", {"eventJson": golden_event_json(
            "model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"b":1,"__proto__":{"admin":true}}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"__proto__":{"admin":true},"b":1},"id":"c1",'
                          '"kind":"function_call","name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-utf16-key-order", "10 §2.2 golden line 7; 10 §2.3",
        "Object keys sort by UTF-16 code units, so the astral 😀 sorts before U+FF01.",
        "encode", {"event": golden_event("model", "agent", content={
            "kind": "function_call", "id": "c1", "name": "X", "args": {"！": 1, "😀": 2, "a": 3}})},
        {"canonicalJson": '{"author":"agent","content":{"args":{"a":3,"😀":2,"！":1},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-number-text", "10 §2.2 golden line 8; 10 §2.3",
        "Numbers print as ECMAScript Number::toString: 1.0 as 1, 1e21 as 1e+21, 1e-7 as 1e-7.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"s":1e-7,"n":1e21,"f":1.0}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"f":1,"n":1e+21,"s":1e-7},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/golden-string-escapes", "10 §2.2 golden line 9; 10 §2.3",
        "Control characters are escaped as lowercase \\u00xx; U+007F, non-ASCII and / stay raw.",
        "encode", {"event": golden_event("user", "user", content={"kind": "text", "text": "a\x00b\x1f\x7fé😀\"\\/"})},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"a\\u0000b\\u001f\x7fé😀\\"\\\\/"}'
                          + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/golden-lone-surrogate", "10 §2.2 golden line 10; 10 §2.3",
        "A lone surrogate is written as a lowercase \\udxxx escape.",
        "encode", {"eventJson": golden_event_json("user", "user", '{"kind":"text","text":"a\\ud800b"}')},
        {"canonicalJson": '{"author":"user","content":{"kind":"text","text":"a\\ud800b"}' + golden_rest("user")},
    ))
    vs.append(vec(
        f"{g}/two-tier-key-order", "10 §2.3 (verified example)",
        "Array-index keys come first in numeric order, then all other keys in UTF-16 order.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent",
            '{"kind":"function_call","id":"c1","name":"X","args":{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,'
            '"4294967294":7,"4294967295":8,"1.5":9}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"2":3,"10":2,"4294967294":7,"-1":6,"01":5,"1.5":9,'
                          '"4294967295":8,"a":4,"b":1},"id":"c1","kind":"function_call","name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/number-text-edge-values", "10 §2.3; 10 §2.4",
        "Edge numbers print as in JavaScript, and an integer beyond 2^53 loses precision as a double.",
        "encode", {"eventJson": golden_event_json(
            "model", "agent",
            '{"kind":"function_call","id":"c1","name":"X","args":{"a":0.000001,"b":123456789012345680000,'
            '"c":5e-7,"d":1.7976931348623157e308,"e":12345678901234567890,"f":100.0}}')},
        {"canonicalJson": '{"author":"agent","content":{"args":{"a":0.000001,"b":123456789012345680000,"c":5e-7,'
                          '"d":1.7976931348623157e+308,"e":12345678901234567000,"f":100},"id":"c1","kind":"function_call",'
                          '"name":"X"}' + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/fractional-ts-accepted", "10 §1.1; 10 §7.2 #21",
        "A fractional ts is accepted.",
        "encode", {"event": golden_event("system", "system", ts=1.5)},
        {"canonicalJson": '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
                          '"runId":"run-1","sessionId":"sess-1","ts":1.5,"turnId":"turn-1"}'},
    ))
    vs.append(vec(
        f"{g}/null-args-accepted", "10 §1.2; 10 §7.2 #21",
        "function_call args may be null (the key must be present).",
        "encode", {"event": golden_event("model", "agent", content={"kind": "function_call", "id": "c1", "name": "X", "args": None})},
        {"canonicalJson": '{"author":"agent","content":{"args":null,"id":"c1","kind":"function_call","name":"X"}'
                          + golden_rest("model")},
    ))
    vs.append(vec(
        f"{g}/negative-zero-ts-not-encodable", "10 §2.4; 10 §7.2 #21",
        "ts -0 fails the canonical round trip.",
        "encode", {"eventJson": '{"id":"evt-1","invocationId":"inv-1","runId":"run-1","sessionId":"sess-1","turnId":"turn-1",'
                                '"ts":-0,"partial":false,"role":"system","author":"system"}'},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))
    vs.append(vec(
        f"{g}/negative-zero-args-not-encodable", "10 §2.4; 10 §7.2 #21",
        "-0 inside function_call args fails the canonical round trip.",
        "encode", {"eventJson": golden_event_json("model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":{"v":-0}}')},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))
    vs.append(vec(
        f"{g}/negative-zero-float-args-not-encodable", "10 §2.4",
        "-0.0 is the same double as -0 and is not encodable either.",
        "encode", {"eventJson": golden_event_json("model", "agent", '{"kind":"function_call","id":"c1","name":"X","args":[-0.0]}')},
        err(NOT_SERIALIZABLE_MESSAGE),
    ))

    # --- decode: accepted values ------------------------------------------------------
    def ok_decode(slug: str, spec: str, description: str, event: dict[str, Any], expected: dict[str, Any] | None = None) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "decode", {"event": event},
                      {"event": expected if expected is not None else event}))

    def bad_decode(slug: str, spec: str, description: str, event: dict[str, Any]) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "decode", {"event": event}, err(SCHEMA_MESSAGE)))

    ok_decode("reconcile-round-trips", "10 §5.1; 10 §7.2 #10",
              "A reconcile observation decodes unchanged.", RC())
    ok_decode("completed-decision-round-trips", "10 §5.1",
              "A completed recovery decision decodes unchanged.", DC())
    ok_decode("parked-decision-round-trips", "10 §5.1",
              "A parked recovery decision decodes unchanged.", DP())
    ok_decode("dispatch-empty-strings-decode", "10 §1.3.1; 10 §7.2 #21",
              "The decoder only type-checks dispatch strings: empty ids and a non-digest hash decode.",
              D_with_tool_dispatch(operationId="", providerToolCallId="", toolName="", canonicalArgsHash="not-a-digest"))
    ok_decode("continuation-start-v1-projection", "10 §1.3.2; 10 §7.2 #11",
              "A continuation-start event with providerProjectionVersion 1 decodes unchanged.",
              continuation_start20("continuation-start", 10, marker=True))
    ok_decode("permission-closure-sole-action", "10 §1.3; 10 §7.2 #12",
              "permissionClosureAccepted {requestId, reason: timed_out} as the only action decodes.",
              E("closure-1", actions={"permissionClosureAccepted": {"requestId": "request-1", "reason": "timed_out"}}))
    ok_decode("permission-answer-accepted", "10 §1.3; 10 §7.2 #13",
              "permissionAnswerAccepted with exactly {requestId} decodes.",
              E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "request-1"}}))
    ok_decode("user-question-answer-accepted", "10 §1.3; 10 §7.2 #13",
              "userQuestionAnswerAccepted with exactly {requestId} decodes.",
              E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "question-1"}}))
    ok_decode("code-mode-nested-call", "10 §1.5; 10 §7.2 #15",
              "A Code Mode nested call (origin code_mode, hidden, parent refs) decodes.",
              E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
                content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
                refs={"operationId": "nested-op", "toolCallId": "nested-1", "parentToolCallId": "exec-1",
                      "parentOperationId": "outer-op"}))
    ok_decode("source-message-digest-valid", "10 §1.4; 10 §7.2 #16",
              "refs.sourceMessageDigest accepts sha256: plus 64 lowercase hex characters.",
              E("event-1", refs={"sourceMessageDigest": "sha256:" + "0123456789abcdef" * 4}))
    ok_decode("text-display-text-differs-kept", "10 §2.1 step 2",
              "displayText is kept when it differs from text.",
              E("user-1", role="user", author="user", content={"kind": "text", "text": "hi", "displayText": "Hi there"}))
    ok_decode("text-normalization-quotes-kept", "10 §2.1 step 2; 10 §7.2 #17",
              "displayText equal to text and empty attachments are dropped; non-empty quotes are kept.",
              E("user-1", role="user", author="user", content={
                  "kind": "text", "text": "model", "displayText": "model", "attachments": [],
                  "quotes": [{"text": "earlier answer", "label": "Assistant"}]}),
              E("user-1", role="user", author="user", content={
                  "kind": "text", "text": "model", "quotes": [{"text": "earlier answer", "label": "Assistant"}]}))

    # --- decode: refused values -------------------------------------------------------
    base = E("event-1")
    bad_decode("status-null", "10 Conventions; 10 §7.2 #21",
               "An optional envelope field set to null is a schema violation.", W(base, status=None))
    bad_decode("model-visibility-null", "10 Conventions",
               "null never means absent: modelVisibility null is refused.", W(base, modelVisibility=None))
    bad_decode("unknown-top-level-key", "10 §1.1; 10 §7.2 #21",
               "Unknown top-level keys are rejected.", W(base, extra=1))
    bad_decode("empty-id", "10 §1.1; 10 §7.2 #21", "id must be non-empty.", W(base, id=""))
    bad_decode("missing-partial", "10 §1.1",
               "Required keys must be present even when falsy: partial is missing.", drop(base, "partial"))
    bad_decode("ts-string", "10 §1.1", "ts must be a number.", W(base, ts="1"))
    bad_decode("model-visibility-secret", "10 §1.1; 10 §7.2 #21",
               "modelVisibility is a closed enum.", W(base, modelVisibility="secret"))
    bad_decode("function-call-without-args", "10 §1.2",
               "function_call requires the args key (it may be null but must be present).",
               del_in(C(), "content.args"))
    bad_decode("function-response-without-result", "10 §1.2; 10 §7.2 #21",
               "function_response requires the result key.", del_in(O(), "content.result"))
    bad_decode("text-steering-false", "10 §1.2",
               "steering must be literally true when present.",
               E("user-1", role="user", author="user", content={"kind": "text", "text": "hi", "steering": False}))
    bad_decode("observation-digest-uppercase", "10 §5.1; 10 §7.2 #21",
               "observationDigest must be lowercase hex.",
               payload_set(RC(), observationDigest="sha256:" + "A" * 64))
    bad_decode("tool-recovery-version-999", "10 §5.1; 10 §7.2 #10",
               "A recovery fact envelope with version 999 is refused.",
               set_in(RC(), "actions.toolRecovery.version", 999))
    bad_decode("decision-duplicate-evidence", "10 §5.1; 10 §7.2 #21",
               "evidenceEventIds must be pairwise distinct.",
               payload_set(DP(), evidenceEventIds=["call-event-1", "call-event-1", "reconcile-event-1"]))
    bad_decode("parked-decision-with-outcome", "10 §5.1; 10 §7.2 #21",
               "A parked decision may not carry outcomeEventId.",
               payload_set(DP(), outcomeEventId="outcome-event-1"))
    bad_decode("completed-decision-park-reason", "10 §5.1; 10 §7.2 #21",
               "A completed decision must use reasonCode reconcile_matches_expected_state.",
               payload_set(DC(), reasonCode="reconcile_diverged"))
    bad_decode("marker-other-value", "10 §3; 10 §7.2 #21",
               "The decoder refuses a runtimeProtocol marker with another value.",
               set_in(M(), "actions.runtimeProtocol.toolBoundary", "future_protocol"))
    bad_decode("marker-extra-key", "10 §3; 10 §7.2 #21",
               "The decoder refuses a runtimeProtocol marker with an extra key.",
               set_in(M(), "actions.runtimeProtocol.extra", True))
    bad_decode("dispatch-recovery-mode-retry", "10 §1.3.1; 10 §7.2 #21",
               "recoveryMode is a closed enum: retry is refused.", D_with_tool_dispatch(recoveryMode="retry"))
    bad_decode("source-high-water-negative", "10 §1.4; 10 §7.2 #21",
               "refs.sourceRuntimeEventHighWater must be a safe integer >= 0.",
               W(base, refs={"sourceRuntimeEventHighWater": -1}))
    bad_decode("source-message-digest-uppercase", "10 §1.4; 10 §7.2 #16",
               "refs.sourceMessageDigest must be lowercase hex.",
               W(base, refs={"sourceMessageDigest": "sha256:" + "0123456789ABCDEF" * 4}))
    bad_decode("source-message-digest-no-prefix", "10 §1.4; 10 §7.2 #16",
               "refs.sourceMessageDigest must start with sha256:.",
               W(base, refs={"sourceMessageDigest": "0123456789abcdef" * 4}))
    bad_decode("provider-request-trace-id-number", "10 §1.4; 10 §7.2 #16",
               "refs.providerRequestTraceId must be a string.", W(base, refs={"providerRequestTraceId": 7}))
    bad_decode("continuation-start-v2-projection", "10 §1.3.2; 10 §7.2 #11",
               "providerProjectionVersion 2 is refused.",
               continuation_start20("continuation-start", 10, marker=True, version=2))
    bad_decode("continuation-start-claim-repair-with-marker", "10 §1.3.2",
               "A claim_repair continuation start must not carry the marker.",
               continuation_start20("continuation-start", 10, marker=True, provenance="claim_repair"))
    closure = {"requestId": "request-1", "reason": "timed_out"}
    bad_decode("permission-closure-extra-key", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted has exactly {requestId, reason}.",
               E("closure-1", actions={"permissionClosureAccepted": {**closure, "extra": 1}}))
    bad_decode("permission-closure-long-request-id", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted refuses an over-long (257-byte) requestId.",
               E("closure-1", actions={"permissionClosureAccepted": {"requestId": "r" * 257, "reason": "timed_out"}}))
    bad_decode("permission-closure-reason-cancelled", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted.reason must be exactly timed_out.",
               E("closure-1", actions={"permissionClosureAccepted": {"requestId": "request-1", "reason": "cancelled"}}))
    bad_decode("permission-closure-with-answer", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted must be the only action key (here with permissionAnswerAccepted).",
               E("closure-1", actions={"permissionClosureAccepted": closure,
                                       "permissionAnswerAccepted": {"requestId": "request-1"}}))
    bad_decode("permission-closure-with-end-invocation", "10 §1.3; 10 §7.2 #12",
               "permissionClosureAccepted must be the only action key (here with endInvocation).",
               E("closure-1", actions={"permissionClosureAccepted": closure, "endInvocation": True}))
    bad_decode("permission-answer-extra-key", "10 §1.3; 10 §7.2 #13",
               "permissionAnswerAccepted has exactly {requestId}.",
               E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "request-1", "extra": 1}}))
    bad_decode("permission-answer-long-request-id", "10 §1.3; 10 §7.2 #13",
               "permissionAnswerAccepted refuses a 257-byte requestId.",
               E("answer-1", actions={"permissionAnswerAccepted": {"requestId": "r" * 257}}))
    bad_decode("user-question-answer-extra-key", "10 §1.3; 10 §7.2 #13",
               "userQuestionAnswerAccepted has exactly {requestId}.",
               E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "question-1", "extra": 1}}))
    bad_decode("user-question-answer-long-request-id", "10 §1.3; 10 §7.2 #13",
               "userQuestionAnswerAccepted refuses a 257-byte requestId.",
               E("answer-1", actions={"userQuestionAnswerAccepted": {"requestId": "q" * 257}}))
    return "encoding", (
        "RuntimeEvent decode and lossless encode (spec 10 §1, §2.1–§2.4, §5.1): the golden canonical "
        "encodings of §2.2, number and key-order rules, and the accepted and refused shapes of §7.2."
    ), vs


# ---------------------------------------------------------------------------------------
# predicates.json — 10 §1.5, §7.2 #14–#15
# ---------------------------------------------------------------------------------------


def group_predicates() -> tuple[str, str, list[dict[str, Any]]]:
    g = "predicates"
    vs: list[dict[str, Any]] = []

    def p(slug: str, spec: str, description: str, event: dict[str, Any], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "predicates", {"event": event}, expect))

    for status, terminal in (("completed", True), ("failed", True), ("aborted", True), ("cancelled", True), ("streaming", False)):
        p(f"status-{status}", "10 §1.5; 10 §7.2 #14",
          f"status {status} {'makes the event terminal' if terminal else 'is not terminal'}.",
          E(f"{status}-1", status=status), terminal=terminal)
    p("end-invocation-true", "10 §1.5; 10 §7.2 #14", "endInvocation true makes the event terminal.",
      E("end-1", actions={"endInvocation": True}), terminal=True)
    p("end-invocation-false", "10 §1.5; 10 §7.2 #14", "endInvocation false is not terminal.",
      E("end-1", actions={"endInvocation": False}), terminal=False)
    p("plain-event-not-terminal", "10 §1.5", "An event with neither a terminal status nor endInvocation is not terminal.",
      E("event-1"), terminal=False)
    p("user-text-visible", "10 §1.5; 10 §7.2 #15", "Non-empty user text is model-visible.",
      E("user-1", role="user", author="user", content={"kind": "text", "text": "hi"}), modelVisible=True)
    p("thinking-visible", "10 §1.5; 10 §7.2 #15", "Thinking content is model-visible.",
      E("thinking-1", role="model", author="agent", content={"kind": "thinking", "text": "hmm"}), modelVisible=True)
    p("function-call-visible", "10 §1.5; 10 §7.2 #15", "A function_call is model-visible.", C(), modelVisible=True)
    p("function-response-error-visible", "10 §1.5; 10 §7.2 #15", "A function_response is model-visible even with isError.",
      O(err=True), modelVisible=True)
    p("empty-text-invisible", "10 §1.5; 10 §7.2 #15", "Empty text is not model-visible.",
      E("user-1", role="user", author="user", content={"kind": "text", "text": ""}), modelVisible=False)
    p("error-content-invisible", "10 §1.5; 10 §7.2 #15", "error content is never model-visible.",
      E("error-1", content={"kind": "error", "message": "boom"}), modelVisible=False)
    p("token-usage-only-invisible", "10 §1.5; 10 §7.2 #15", "A token-usage-only event has no content and is not model-visible.",
      E("usage-1", actions={"tokenUsage": {"input": 10, "output": 5}}), modelVisible=False)
    p("refs-only-invisible", "10 §1.5; 10 §7.2 #15", "A refs-only event is not model-visible.",
      E("refs-1", refs={"traceEventId": "trace-1"}), modelVisible=False)
    p("hidden-code-mode-call-invisible", "10 §1.5; 10 §7.2 #15",
      "A Code Mode nested call with modelVisibility hidden is not model-visible.",
      E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
        content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
        refs={"operationId": "nested-op", "toolCallId": "nested-1", "parentToolCallId": "exec-1", "parentOperationId": "outer-op"}),
      modelVisible=False)
    p("dispatch-visible-stamp-invisible", "10 §1.5",
      "A dispatch stamped modelVisibility visible still has no content, so it is not model-visible.",
      W(D(), modelVisibility="visible"), modelVisible=False)
    return "predicates", (
        "Derived event predicates (spec 10 §1.5): terminal event and model-visible content."
    ), vs


# ---------------------------------------------------------------------------------------
# lanes.json — 10 §4.1, §4.2, §7.3
# ---------------------------------------------------------------------------------------


def group_lanes() -> tuple[str, str, list[dict[str, Any]]]:
    g = "lanes"
    vs: list[dict[str, Any]] = []

    def lane(slug: str, spec: str, description: str, event: dict[str, Any], expected: str) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "lane", {"event": event}, {"lane": expected}))

    def generic(slug: str, spec: str, description: str, event: dict[str, Any], code: str | None) -> None:
        expect = {"appendCheck": {"ok": True} if code is None else {"ok": False, "code": code}}
        vs.append(vec(f"{g}/{slug}", spec, description, "generic_append", {"event": event}, expect))

    # The plain lanes (10 §4.1 list).
    lane("call", "10 §4.1", "A function_call event is on lane function_call.", C(), "function_call")
    lane("dispatch", "10 §4.1", "A T1 dispatch event is on lane tool_dispatch.", D(), "tool_dispatch")
    lane("response", "10 §4.1", "A bound function_response is on lane function_response.", O(), "function_response")
    lane("reconcile", "10 §4.1", "A reconcile observation is on lane reconcile_result.", RC(), "reconcile_result")
    lane("decision", "10 §4.1", "A recovery decision is on lane recovery_decision.", DC(), "recovery_decision")
    lane("plain-system-event", "10 §4.1; 10 §7.3 #29", "A plain system event is on lane ordinary.", E("event-1"), "ordinary")
    lane("marker-user-event", "10 §4.1", "The marker-carrying user event is ordinary.", M(), "ordinary")

    # Conflicts named by the scenarios.
    toolDispatch = F.w_dispatch()["actions"]["toolDispatch"]
    lane("call-with-tool-dispatch", "10 §4.1; 10 §7.3 #22", "A call that also carries toolDispatch is on two lanes: conflict.",
         W(C(), actions={"toolDispatch": toolDispatch}), "conflict")
    lane("dispatch-with-status", "10 §4.1; 10 §7.3 #23", "A dispatch with status completed is a conflict.",
         W(D(), status="completed"), "conflict")
    lane("reconcile-with-text", "10 §4.1; 10 §7.3 #24", "A reconcile event with text content is a conflict.",
         W(RC(), content={"kind": "text", "text": "smuggled"}), "conflict")
    lane("response-with-end-invocation", "10 §4.1; 10 §7.3 #25", "A response with actions.endInvocation is a conflict.",
         W(O(), actions={"endInvocation": True}), "conflict")
    lane("response-with-continuation-state", "10 §4.1; 10 §7.3 #25",
         "A response with stateDelta {continuationStart: true} is a conflict.",
         W(O(), actions={"stateDelta": {"continuationStart": True}}), "conflict")
    lane("call-with-artifact-delta", "10 §4.1; 10 §7.3 #25", "A call with actions.artifactDelta is a conflict.",
         W(C(), actions={"artifactDelta": {"notes.txt": "v2"}}), "conflict")
    lane("call-with-branch", "10 §4.1; 10 §7.3 #28", "Any tool fact with branch present is a conflict.",
         W(C(), branch="child-1"), "conflict")
    lane("partial-dispatch", "10 §4.1; 10 §7.3 #27", "A partial tool fact is a conflict.", W(D(), partial=True), "conflict")
    lane("partial-call", "10 §4.1; 10 §7.5 #43", "A partial call is a conflict.", W(C(), partial=True), "conflict")

    # 10 §7.3 #29 edge cases.
    lane("call-with-display-state", "10 §4.1; 10 §7.3 #29",
         "A call may carry stateDelta with only activityKind/displayName/intent strings.",
         W(C(), actions={"stateDelta": {"activityKind": "edit", "displayName": "Write notes", "intent": "save"}}),
         "function_call")
    lane("call-with-duration-state", "10 §4.1; 10 §7.3 #29", "A call with stateDelta {durationMs} is a conflict.",
         W(C(), actions={"stateDelta": {"durationMs": 12}}), "conflict")
    lane("call-with-empty-state", "10 §4.1; 10 §7.3 #29", "A call with stateDelta {} is a conflict.",
         W(C(), actions={"stateDelta": {}}), "conflict")
    lane("call-with-empty-actions", "10 §4.1; 10 §7.3 #29", "A call with actions {} is a conflict (absent actions is fine).",
         W(C(), actions={}), "conflict")
    lane("call-with-non-string-state", "10 §4.1", "Call stateDelta values must be strings.",
         W(C(), actions={"stateDelta": {"intent": 1}}), "conflict")
    lane("call-with-bound-refs", "10 §4.1 (refs unconstrained on calls)",
         "Call refs are unconstrained: a call carrying refs.operationId is still a function_call.",
         W(C(), refs=dict(F.W_REFS)), "function_call")
    lane("response-with-duration", "10 §4.1; 10 §7.3 #29", "A response may carry stateDelta {durationMs: 12}.",
         W(O(), actions={"stateDelta": {"durationMs": 12}}), "function_response")
    lane("response-with-duration-and-extra", "10 §4.1; 10 §7.3 #29", "A response stateDelta with a key besides durationMs is a conflict.",
         W(O(), actions={"stateDelta": {"durationMs": 12, "extra": "x"}}), "conflict")
    lane("response-with-string-duration", "10 §4.1", "durationMs must be a finite number.",
         W(O(), actions={"stateDelta": {"durationMs": "12"}}), "conflict")
    lane("response-role-model", "10 §4.1", "A response must be role tool / author tool.", W(O(), role="model"), "conflict")
    lane("call-role-tool", "10 §4.1; 10 §7.3 #29", "A call with role tool is a conflict.", W(C(), role="tool"), "conflict")
    lane("call-author-tool", "10 §4.1; 10 §7.3 #29", "A call with author tool is a conflict.", W(C(), author="tool"), "conflict")
    lane("call-with-status", "10 §4.1; 10 §7.3 #29", "A call with status is a conflict.", W(C(), status="completed"), "conflict")
    lane("dispatch-with-content", "10 §4.1; 10 §7.3 #29", "A dispatch with content is a conflict.",
         W(D(), content={"kind": "text", "text": "x"}), "conflict")
    lane("dispatch-role-model", "10 §4.1; 10 §7.3 #29", "A dispatch with role model is a conflict.", W(D(), role="model"), "conflict")
    lane("dispatch-extra-action", "10 §4.1; 10 §7.3 #29", "A dispatch whose actions has another key is a conflict.",
         set_in(D(), "actions.endInvocation", True), "conflict")
    lane("dispatch-refs-missing-tool-call-id", "10 §4.1; 10 §7.3 #29", "Dispatch refs missing toolCallId is a conflict.",
         W(D(), refs={"operationId": "operation-1"}), "conflict")
    lane("dispatch-refs-absent", "10 §4.1", "A dispatch without refs is a conflict.", drop(D(), "refs"), "conflict")
    lane("dispatch-refs-both-parents", "10 §4.1; 10 §7.3 #29", "Dispatch refs with both parent refs are allowed.",
         W(D(), refs={**F.W_REFS, "parentToolCallId": "exec-1", "parentOperationId": "outer-op"}), "tool_dispatch")
    lane("dispatch-refs-one-parent", "10 §4.1; 10 §7.3 #29", "Dispatch refs with only parentOperationId is a conflict.",
         W(D(), refs={**F.W_REFS, "parentOperationId": "outer-op"}), "conflict")
    lane("dispatch-refs-step-id", "10 §4.1; 10 §1.6", "Dispatch refs may not carry stepId.",
         W(D(), refs={**F.W_REFS, "stepId": "step-1"}), "conflict")
    lane("reconcile-refs-missing-tool-call-id", "10 §4.1; 10 §7.3 #29", "Reconcile refs missing toolCallId is a conflict.",
         W(RC(), refs={"operationId": "operation-1"}), "conflict")
    lane("decision-role-user", "10 §4.1", "A recovery decision must be role system / author system.",
         W(DC(), role="user", author="user"), "conflict")
    lane("origin-visibility-unconstrained", "10 §4.1", "origin, modelVisibility and ts are not lane-constrained.",
         W(D(), origin="code_mode", modelVisibility="hidden", ts=99), "tool_dispatch")

    # Generic-append reservations (10 §4.2).
    generic("generic-call", "10 §4.2; 10 §7.3 #26", "The generic path accepts a function_call.", C(), None)
    generic("generic-dispatch", "10 §4.2; 10 §7.3 #26", "The generic path refuses a dispatch.", D(), "reserved_tool_boundary_fact")
    generic("generic-bound-response", "10 §4.2; 10 §7.3 #26", "The generic path refuses a response bound to an operation.",
            O(), "reserved_tool_boundary_fact")
    generic("generic-reconcile", "10 §4.2; 10 §7.3 #26", "The generic path refuses a reconcile observation.", RC(), "reserved_recovery_fact")
    generic("generic-decision", "10 §4.2", "The generic path refuses a recovery decision.", DP(), "reserved_recovery_fact")
    generic("generic-unbound-response", "10 §4.2; 10 §7.3 #29", "The generic path accepts an unbound response.", OU(), None)
    generic("generic-bound-call", "10 §4.2", "The generic path accepts a bound call.", W(C(), refs=dict(F.W_REFS)), None)
    generic("generic-ordinary", "10 §4.2", "The generic path accepts an ordinary event.", M(), None)
    generic("generic-lane-conflict", "10 §4.2 step 1", "A lane conflict is reported before any reservation.",
            W(D(), status="completed"), "semantic_lane_conflict")
    generic("generic-response-end-invocation", "10 §4.2; 10 §7.5 #43", "A response with endInvocation is a lane conflict.",
            W(OU(), actions={"endInvocation": True}), "semantic_lane_conflict")
    return "lanes", (
        "Semantic lanes (spec 10 §4.1) and the generic-append reservations (§4.2)."
    ), vs


# ---------------------------------------------------------------------------------------
# scanner.json — 10 §4.3–§4.5, §7.3 #22/#27, §7.4
# ---------------------------------------------------------------------------------------


def group_scanner() -> tuple[str, str, list[dict[str, Any]]]:
    g = "scanner"
    vs: list[dict[str, Any]] = []

    def s(slug: str, spec: str, description: str, events: list[dict[str, Any]], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "scan", {"events": events}, expect))

    toolDispatch = F.w_dispatch()["actions"]["toolDispatch"]
    s("call-with-tool-dispatch", "10 §7.3 #22", "A call that also carries toolDispatch is reported as a lane conflict.",
      [W(C(), actions={"toolDispatch": toolDispatch})],
      issuesBrief=iss(("semantic_lane_conflict", "call-event-1")))
    s("partial-dispatch", "10 §7.3 #27", "Scanning a lone partial dispatch yields exactly one lane-conflict issue.",
      [W(D(), partial=True)], issues=[{"code": "semantic_lane_conflict", "eventId": "dispatch-event-1"}])
    s("issue-catalogue-example", "10 §7.4 #30",
      "Dispatch-first, duplicate call and a reused operationId give the three issues with their attachments.",
      [D(), C(), C(id="call-event-2"),
       C(id="call-event-other", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                         "args": {"path": "notes.txt", "content": "after"}}),
       W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-event-other",
         refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})],
      issues=[
          {"code": "event_order_conflict", "eventId": "dispatch-event-1", "operationId": "operation-1", "toolCallId": "provider-call-1"},
          {"code": "duplicate_call", "eventId": "call-event-2", "operationId": "operation-1", "toolCallId": "provider-call-1"},
          {"code": "duplicate_operation", "eventId": "dispatch-event-other", "operationId": "operation-1", "toolCallId": "provider-call-2"},
      ], hasCorruption=True)
    s("unbound-response-before-dispatch", "10 §7.4 #31", "A dispatch after an unbound response is an order and identity conflict.",
      [C(), OU(), D()], issueCodesInclude=["event_order_conflict", "identity_conflict"], hasCorruption=True)
    s("wrong-args-hash", "10 §7.4 #32", "A dispatch whose hash differs from the call's recomputed hash is reported.",
      [C(), D_with_tool_dispatch(canonicalArgsHash="sha256:wrong")],
      issuesInclude=[{"code": "canonical_args_hash_conflict", "eventId": "dispatch-event-1",
                      "operationId": "operation-1", "toolCallId": "provider-call-1"}], hasCorruption=True)
    s("call-key-is-a-tuple", "10 §7.4 #33",
      "Calls keyed (\"a\\u0000b\", \"c\") and (\"a\", \"b\\u0000c\") stay distinct: two operations, no issue.",
      [E("call-a", invocationId="a\x00b", role="model", author="agent",
         content={"kind": "function_call", "id": "c", "name": "Read", "args": {}}),
       E("call-b", invocationId="a", role="model", author="agent",
         content={"kind": "function_call", "id": "b\x00c", "name": "Read", "args": {}})],
      hasCorruption=False, issues=[], operationCount=2)
    s("invocation-spine-drift", "10 §7.4 #34", "An invocation seen with another run/turn is an invocation identity conflict.",
      [C(), C(id="call-event-2", runId="run-2", turnId="turn-2",
              content={"kind": "function_call", "id": "provider-call-2", "name": "Read", "args": {}})],
      issueCodesInclude=["invocation_identity_conflict"], hasCorruption=True)
    s("response-other-run", "10 §7.4 #35", "A response from another run of the invocation gives two issues on that response.",
      [C(), O(runId="run-2", refs={"toolCallId": "provider-call-1"})],
      issuesBrief=iss(("invocation_identity_conflict", "outcome-event-1"), ("identity_conflict", "outcome-event-1")))
    s("partial-non-tool-event-ignored", "10 §7.4 #36", "A partial text event is ignored: no issue, one operation.",
      [E("partial-text-1", role="model", author="agent", partial=True, content={"kind": "text", "text": "draft"}), C()],
      issues=[], operationCount=1, hasCorruption=False)
    s("partial-call-only", "10 §4.5; 10 §7.4 #36", "A ledger whose only call is partial has zero operations and one lane issue.",
      [W(C(), partial=True)], issuesBrief=iss(("semantic_lane_conflict", "call-event-1")), operationCount=0)
    s("same-call-id-two-invocations", "10 §7.4 #37", "The same call id in two invocations makes two operations and no issue.",
      [C(), C(id="call-event-2", invocationId="invocation-2")], issues=[], operationCount=2, hasCorruption=False)
    s("healthy-bundle", "10 §4.3", "A complete T1/recovery-bundle ledger scans without issues into one operation.",
      [C(), D(), RC(), O(), DC()], issues=[], operationCount=1, hasCorruption=False)
    s("dispatch-wrong-name-and-hash", "10 §4.5 (example [X])",
      "A dispatch with wrong name and wrong hash emits identity_conflict then canonical_args_hash_conflict.",
      [C(), D_with_tool_dispatch(toolName="Read", canonicalArgsHash="sha256:x")],
      issueCodes=["identity_conflict", "canonical_args_hash_conflict"])
    s("empty-ledger", "10 §4.3 step 9", "An empty ledger has no operations and no issues.", [],
      issues=[], operationCount=0, hasCorruption=False)
    return "scanner", (
        "The tool-ledger scanner (spec 10 §4.3–§4.5): issue codes, their attachments and emission order."
    ), vs


# ---------------------------------------------------------------------------------------
# transition.json — 10 §4.6, §7.5
# ---------------------------------------------------------------------------------------


def group_transition() -> tuple[str, str, list[dict[str, Any]]]:
    g = "transition"
    vs: list[dict[str, Any]] = []

    def t(slug: str, spec: str, description: str, existing: list, candidates: list, kind: str, **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "validate_transition",
                      {"existing": existing, "candidates": candidates, "kind": kind}, expect))

    OK = {"transition": {"ok": True}}

    def refused(code: str, event_id: str) -> dict[str, Any]:
        return {"transitionSubset": {"ok": False, "code": code, "eventId": event_id}}

    t("generic-duplicate-call", "10 §7.5 #38", "A second call for the same call id is refused duplicate_call, without operationId.",
      [C()], [C(id="call-event-duplicate")], "generic_append",
      transition={"ok": False, "code": "duplicate_call", "eventId": "call-event-duplicate", "toolCallId": "provider-call-1"})
    t("generic-unbound-response-after-dispatch", "10 §7.5 #39",
      "An unbound response after a dispatch is refused identity_conflict with the operation's ids.",
      [C(), D()], [OU()], "generic_append",
      transition={"ok": False, "code": "identity_conflict", "eventId": "outcome-event-1",
                  "operationId": "operation-1", "toolCallId": "provider-call-1"})
    t("t1-call-and-dispatch", "10 §7.5 #40", "t1_prepare [C, D] on an empty ledger is ok.", [], [C(), D()], "t1_prepare", **OK)
    t("t1-dispatch-after-existing-call", "10 §7.5 #40", "t1_prepare [D] when the call already exists is ok.",
      [C()], [D()], "t1_prepare", **OK)
    t("t1-exact-retry", "10 §7.5 #40", "An exact retry of [C, D] is ok.", [C(), D()], [C(), D()], "t1_prepare", **OK)
    t("t1-wrong-order", "10 §7.5 #40", "t1_prepare [D, C] is a shape conflict at the dispatch.",
      [], [D(), C()], "t1_prepare", **refused("transition_shape_conflict", "dispatch-event-1"))
    t("t1-call-alone", "10 §7.5 #40; 10 §4.6 step 3", "t1_prepare [C] alone is a shape conflict at the first candidate.",
      [], [C()], "t1_prepare", **refused("transition_shape_conflict", "call-event-1"))
    t("t1-bound-call", "10 §7.5 #40", "A call that already carries refs.operationId plus its dispatch is ok.",
      [], [W(C(), refs=dict(F.W_REFS)), D()], "t1_prepare", **OK)
    t("t1-id-reused-different-content", "10 §7.5 #40; 10 §4.6 step 2",
      "A candidate reusing an existing id with different content is refused duplicate_event_id.",
      [C()], [C(ts=9), D()], "t1_prepare", **refused("duplicate_event_id", "call-event-1"))
    t("t1-after-unbound-pair", "10 §7.5 #40", "A dispatch for a call already answered by an unbound response is an order conflict.",
      [C(), OU()], [C(), D()], "t1_prepare", **refused("event_order_conflict", "dispatch-event-1"))
    t("t2-bound-response", "10 §7.5 #41", "t2_outcome [O] after [C, D] is ok.", [C(), D()], [O()], "t2_outcome", **OK)
    t("t2-unbound-response", "10 §7.5 #41", "t2_outcome [O_unbound] is a shape conflict.",
      [C(), D()], [OU()], "t2_outcome", **refused("transition_shape_conflict", "outcome-event-1"))
    t("t2-two-responses", "10 §7.5 #41", "t2_outcome with two responses is a shape conflict.",
      [C(), D()], [O(), O(id="outcome-event-2")], "t2_outcome", **refused("transition_shape_conflict", "outcome-event-1"))
    for kind in ("generic_append", "t1_prepare", "t2_outcome", "recovery_bundle"):
        t(f"empty-candidates-{kind.replace('_', '-')}", "10 §7.5 #41; 10 §4.6 step 3",
          f"An empty candidate list is ok for {kind}.", [C(), D()], [], kind, **OK)
    t("bundle-completed", "10 §7.5 #42", "recovery_bundle [RC, O, DC] after [C, D] is ok.",
      [C(), D()], [RC(), O(), DC()], "recovery_bundle", **OK)
    t("bundle-parked", "10 §7.5 #42", "recovery_bundle [RC(diverged), DP] after [C, D] is ok.",
      [C(), D()], [RC("diverged"), DP()], "recovery_bundle", **OK)
    t("bundle-exact-retry", "10 §7.5 #42", "An exact retry of a stored completed bundle is ok.",
      [C(), D(), RC(), O(), DC()], [RC(), O(), DC()], "recovery_bundle", **OK)
    t("bundle-conflicting-retry", "10 §7.5 #42",
      "A completed bundle over a stored parked bundle is refused duplicate_event_id at the reconcile event.",
      [C(), D(), RC("diverged"), DP()], [RC(), O(), DC()], "recovery_bundle",
      **refused("duplicate_event_id", "reconcile-event-1"))
    t("bundle-wrong-order", "10 §7.5 #42", "recovery_bundle [RC, DC, O] is a shape conflict.",
      [C(), D()], [RC(), DC(), O()], "recovery_bundle", **refused("transition_shape_conflict", "reconcile-event-1"))
    t("bundle-with-ordinary-event", "10 §7.5 #42", "An ordinary event inside a bundle is a shape conflict.",
      [C(), D()], [RC("diverged"), E("note-1"), DP()], "recovery_bundle",
      **refused("transition_shape_conflict", "reconcile-event-1"))
    t("generic-dispatch-reserved", "10 §7.5 #43", "generic_append of D is refused reserved_tool_boundary_fact.",
      [C()], [D()], "generic_append", transitionSubset={"ok": False, "code": "reserved_tool_boundary_fact"})
    t("generic-reconcile-reserved", "10 §7.5 #43", "generic_append of RC is refused reserved_recovery_fact.",
      [C(), D()], [RC()], "generic_append", transitionSubset={"ok": False, "code": "reserved_recovery_fact"})
    t("generic-on-corrupt-ledger", "10 §7.5 #43; 10 §4.6 step 1",
      "Any candidate on an already corrupt ledger is refused with the ledger's first issue.",
      [C(), C(id="dup")], [E("note-1")], "generic_append", **refused("duplicate_call", "dup"))
    t("generic-exact-retry-on-corrupt-ledger", "10 §2.5; 10 §4.6 step 1",
      "Even an exact retry is refused while the existing ledger has an issue.",
      [C(), C(id="dup")], [C()], "generic_append", **refused("duplicate_call", "dup"))
    t("generic-unbound-pair", "10 §7.5 #43", "generic_append of the unbound pair [C, O_unbound] is ok.",
      [], [C(), OU()], "generic_append", **OK)
    t("generic-response-end-invocation", "10 §7.5 #43", "A response with endInvocation is refused as a lane conflict.",
      [C()], [W(OU(), actions={"endInvocation": True})], "generic_append",
      transitionSubset={"ok": False, "code": "semantic_lane_conflict"})
    t("generic-partial-call", "10 §7.5 #43", "A partial call is refused as a lane conflict.",
      [], [W(C(), partial=True)], "generic_append", transitionSubset={"ok": False, "code": "semantic_lane_conflict"})
    return "transition", (
        "Write-side transition validation (spec 10 §4.6): exact retries, shapes per kind, reservations and fail-closed refusal."
    ), vs


# ---------------------------------------------------------------------------------------
# bundle.json — 10 §5.3, §5.4, §7.6
# ---------------------------------------------------------------------------------------

W_IDENTITY = {
    "operationId": "operation-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1",
    "providerToolCallId": "provider-call-1", "toolName": "Write", "canonicalArgsHash": WRITE_HASH,
    "recoveryMode": "reconcile", "callEventId": "call-event-1", "dispatchEventId": "dispatch-event-1",
}


def group_bundle() -> tuple[str, str, list[dict[str, Any]]]:
    g = "bundle"
    vs: list[dict[str, Any]] = []

    def interp(slug: str, spec: str, description: str, events: list[dict[str, Any]], kind: str, code: str | None = None) -> None:
        expected: dict[str, Any] = {"kind": kind}
        if code is not None:
            expected["code"] = code
        vs.append(vec(f"{g}/{slug}", spec, description, "interpret", {"events": events}, {"interpretation": expected}))

    vs.append(vec(
        f"{g}/validate-completed-bundle", "10 §5.3; 10 §7.6 #45",
        "The W-family identity tuple with C, D, RC, O, DC validates and returns the two payloads.",
        "validate_bundle",
        {"identity": W_IDENTITY, "callEvent": C(), "dispatchEvent": D(), "reconcileEvent": RC(),
         "outcomeEvent": O(), "decisionEvent": DC()},
        {"bundle": {"ok": True, "reconcile": RC()["actions"]["toolRecovery"]["payload"],
                    "decision": DC()["actions"]["toolRecovery"]["payload"]}},
    ))
    vs.append(vec(
        f"{g}/validate-self-authenticating-hash", "10 §5.3 check 2; 10 §7.6 #44",
        "A dispatch and identity that agree on a wrong hash are refused: the hash is recomputed from the call.",
        "validate_bundle",
        {"identity": {**W_IDENTITY, "canonicalArgsHash": "sha256:wrong"}, "callEvent": C(),
         "dispatchEvent": D_with_tool_dispatch(canonicalArgsHash="sha256:wrong"), "reconcileEvent": RC(),
         "outcomeEvent": O(), "decisionEvent": DC()},
        {"bundleSubset": {"ok": False, "code": "canonical_args_hash_conflict"}},
    ))

    interp("completed-valid", "10 §5.4; 10 §7.6 #46", "A completed bundle in causal order is valid.", [C(), D(), RC(), O(), DC()], "valid")
    interp("parked-valid", "10 §5.4", "A parked bundle in causal order is valid.", [C(), D(), RC("diverged"), DP()], "valid")
    interp("no-recovery-facts", "10 §5.4", "An operation without recovery facts is absent.", [C(), D()], "absent")
    interp("response-before-reconcile", "10 §5.4; 10 §7.6 #46, #47",
           "A response before the reconcile violates causal order.", [C(), D(), O(), RC(), DC()], "corruption", "event_order_conflict")
    interp("outcome-for-parked", "10 §5.3 check 9; 10 §7.6 #47", "A parked bundle with an outcome is outcome_for_parked.",
           [C(), D(), RC("diverged"), O(), DP()], "corruption", "outcome_for_parked")
    interp("reconcile-only", "10 §5.4; 10 §7.6 #47", "A reconcile without a decision is a shape conflict.",
           [C(), D(), RC()], "corruption", "recovery_fact_shape_conflict")
    interp("two-reconciles", "10 §5.4; 10 §7.6 #47", "Two reconciles are a shape conflict.",
           [C(), D(), RC("diverged"), RC("diverged", id="reconcile-event-2"), DP()], "corruption", "recovery_fact_shape_conflict")
    interp("decision-only", "10 §5.4; 10 §7.6 #47", "A decision without a reconcile is a shape conflict.",
           [C(), D(), DP()], "corruption", "recovery_fact_shape_conflict")
    interp("mode-never-auto-retry", "10 §5.3 check 4; 10 §7.6 #47", "A bundle for a never_auto_retry dispatch is unsupported.",
           [C(), F.w_dispatch(recovery_mode="never_auto_retry"), RC("diverged"), DP()], "corruption", "recovery_mode_unsupported")
    interp("evidence-order", "10 §5.3 check 10; 10 §7.6 #47", "Evidence listed as [dispatch, call, reconcile] is an evidence order conflict.",
           [C(), D(), RC("diverged"), payload_set(DP(), evidenceEventIds=["dispatch-event-1", "call-event-1", "reconcile-event-1"])],
           "corruption", "evidence_order_conflict")
    interp("error-outcome", "10 §5.3 check 9; 10 §7.6 #47", "A completed bundle with an error outcome is outcome_not_successful.",
           [C(), D(), RC(), O(err=True), DC()], "corruption", "outcome_not_successful")
    interp("diverged-parked-unreadable", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation diverged with reason reconcile_unreadable is a reconcile/decision conflict.",
           [C(), D(), RC("diverged"), DP("reconcile_unreadable")], "corruption", "reconcile_decision_conflict")
    interp("expected-state-parked", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation matches_expected_state with a parked decision is a reconcile/decision conflict.",
           [C(), D(), RC(), DP()], "corruption", "reconcile_decision_conflict")
    interp("diverged-completed", "10 §5.3 check 9; 10 §7.6 #47",
           "Observation diverged with a completed decision is a reconcile/decision conflict.",
           [C(), D(), RC("diverged"), O(), DC()], "corruption", "reconcile_decision_conflict")
    interp("missing-outcome", "10 §5.3 check 9; 10 §7.6 #47", "A completed decision without an outcome is outcome_required.",
           [C(), D(), RC(), DC()], "corruption", "outcome_required")
    interp("wrong-outcome-reference", "10 §5.3 check 9; 10 §7.6 #47",
           "A completed decision naming another outcome event is outcome_reference_conflict.",
           [C(), D(), RC(), O(), payload_set(DC(), outcomeEventId="other")], "corruption", "outcome_reference_conflict")
    interp("reconcile-refs-tool-call", "10 §5.3 check 7; 10 §7.6 #47",
           "A reconcile whose refs.toolCallId is zzz is a recovery fact identity conflict.",
           [C(), D(), RC("diverged", refs={"operationId": "operation-1", "toolCallId": "zzz"}), DP()],
           "corruption", "recovery_fact_identity_conflict")
    interp("reconcile-refs-operation", "10 §5.3 check 7; 10 §7.6 #47",
           "A reconcile whose refs.operationId differs from its payload is a recovery fact identity conflict.",
           [C(), D(), RC("diverged", refs={"operationId": "operation-X", "toolCallId": "provider-call-1"}), DP()],
           "corruption", "recovery_fact_identity_conflict")
    interp("decision-refs-tool-call", "10 §5.3 check 7; 10 §7.6 #47",
           "A decision whose refs.toolCallId is other is a recovery fact identity conflict.",
           [C(), D(), RC(), O(), DC(refs={"operationId": "operation-1", "toolCallId": "other"})],
           "corruption", "recovery_fact_identity_conflict")
    interp("decision-before-reconcile", "10 §5.4; 10 §7.6 #47", "A decision before its reconcile violates causal order.",
           [C(), D(), DP(), RC("diverged")], "corruption", "event_order_conflict")
    interp("outcome-after-decision", "10 §5.4; 10 §7.6 #47", "An outcome after the decision violates causal order.",
           [C(), D(), RC(), DC(), O()], "corruption", "event_order_conflict")
    interp("undecoded-duplicate-evidence", "10 §5.3 check 6; 10 §7.6 #47; 10 §8 item 22",
           "An un-decoded decision whose evidence ids repeat is decision_fact_invalid.",
           [C(), D(), RC(), O(), payload_set(DC(), evidenceEventIds=[
               "call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "outcome-event-1"])],
           "corruption", "decision_fact_invalid")
    interp("self-authenticating-hash", "10 §5.3 check 2; 10 §7.6 #44",
           "A bundle over a dispatch with a wrong hash is a canonical args hash conflict.",
           [C(), D_with_tool_dispatch(canonicalArgsHash="sha256:wrong"), RC(), O(), DC()],
           "corruption", "canonical_args_hash_conflict")
    return "bundle", (
        "Recovery bundles (spec 10 §5.3–§5.4): direct validation against an identity tuple, and the "
        "interpretation of a scanned operation."
    ), vs


# ---------------------------------------------------------------------------------------
# resolver.json — 10 §3, §6, §7.7
# ---------------------------------------------------------------------------------------


def group_resolver() -> tuple[str, str, list[dict[str, Any]]]:
    g = "resolver"
    vs: list[dict[str, Any]] = []

    def r(slug: str, spec: str, description: str, events: list[dict[str, Any]], **expect: Any) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "resolve", {"events": events}, expect))

    I1 = F.r_initial(T1)
    FC = F.r_call()
    DI = F.r_dispatch()
    # --- family R (10 §7.7 #48–#58) ---------------------------------------------------
    r("s48-new-protocol-call-only", "10 §7.7 #48", "Under the marker a call without dispatch was definitely not dispatched.",
      [I1, FC], resolution=resolution(
          [decision("call-1", "definitely_not_dispatched", "new_protocol_before_dispatch", toolName="Bash", call="function-call-1")],
          [], False, False, t1=True))
    r("s49-dispatch-without-response", "10 §7.7 #49", "A dispatch without response is indeterminate and requires reconciliation.",
      [I1, FC, DI], resolution=resolution(
          [decision("call-1", "indeterminate", "dispatch_without_response", toolName="Bash", operationId="operation-1",
                    call="function-call-1", dispatch="dispatch-1")],
          [], False, True, t1=True))
    r("s50-pre-t1-synthetic-error", "10 §7.7 #50", "A call answered without dispatch is completed as pre_t1_synthetic, keeping isError.",
      [I1, FC, F.r_response(err=True)], resolutionSubset={
          "decisions": [decision("call-1", "completed", "matching_response", toolName="Bash", settlementOrigin="pre_t1_synthetic",
                                 call="function-call-1", response="function-response-1", isError=True)],
          "requiresReconciliation": False})
    r("s51-orphan-dispatch", "10 §7.7 #51", "A dispatch with no call is corruption/orphan_dispatch without callRuntimeEventId.",
      [I1, DI], resolutionSubset={
          "toolBoundaryProtocol": T1,
          "decisions": [decision("call-1", "corruption", "orphan_dispatch", toolName="Bash", operationId="operation-1",
                                 dispatch="dispatch-1")],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s52-orphan-response", "10 §7.7 #52", "A response with no call is corruption/orphan_response.",
      [I1, F.r_response()], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "orphan_response", toolName="Bash",
                                 response="function-response-1", isError=False)],
          "hasCorruption": True})
    r("s53-dispatch-name-mismatch", "10 §7.7 #53", "A dispatch naming another tool is corruption/identity_conflict.",
      [I1, FC, F.r_dispatch("Write")], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "identity_conflict", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1")],
          "hasCorruption": True})
    r("s54-duplicate-dispatch", "10 §7.7 #54", "A second dispatch is corruption/duplicate_dispatch and the first dispatch id is kept.",
      [I1, FC, DI, F.r_dispatch(id="dispatch-2")], resolutionSubset={
          "decisions": [decision("call-1", "corruption", "duplicate_dispatch", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1")],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s55-duplicate-response", "10 §7.7 #55", "A second response is corruption/duplicate_response and the first response id is kept.",
      [I1, FC, DI, F.r_response(op="operation-1"), F.r_response(op="operation-1", id="function-response-2")],
      resolutionSubset={
          "decisions": [decision("call-1", "corruption", "duplicate_response", toolName="Bash", operationId="operation-1",
                                 call="function-call-1", dispatch="dispatch-1", response="function-response-1", isError=False)],
          "hasCorruption": True, "requiresReconciliation": False})
    r("s56-late-marker", "10 §7.7 #56", "A marker on a later event is protocol_marker_invalid and does not upgrade the run.",
      [F.r_initial(), E("late-marker", actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolution=resolution([], [("protocol_marker_invalid", "late-marker")], True, False, t1=False))
    r("s57-invalid-first-marker", "10 §7.7 #57", "A first marker with another value is an issue and the run is legacy.",
      [F.r_initial("future_protocol"), FC], resolution=resolution(
          [decision("call-1", "indeterminate", "legacy_dispatch_unknown", toolName="Bash", call="function-call-1")],
          [("protocol_marker_invalid", "initial-1")], True, False, t1=False))
    r("s58-response-other-operation", "10 §7.7 #58", "A response bound to another operation is corruption/identity_conflict.",
      [I1, FC, DI, F.r_response(op="another-operation")], resolutionSubset={"hasCorruption": True},
      decisions=[dm(status="corruption", reason="identity_conflict", responseRuntimeEventId="function-response-1")])

    # --- family W (10 §7.7 #59–#93) ---------------------------------------------------
    r("s59-completed-bundle", "10 §7.7 #59", "A completed recovery bundle settles the operation as recovery_bundle_completed.",
      [C(), D(), RC(), O(), DC()], resolution=resolution(
          [decision("provider-call-1", "completed", "recovery_bundle_completed", toolName="Write", operationId="operation-1",
                    settlementOrigin="recovery_bundle", call="call-event-1", dispatch="dispatch-event-1",
                    response="outcome-event-1", isError=False)],
          [], False, False, t1=False))
    r("s60-prepared", "10 §7.7 #60", "A store-produced [C, D] resolves indeterminate.", [C(), D()],
      decisions=[dm(status="indeterminate")])
    r("s60-outcome-committed", "10 §7.7 #60", "A store-produced [C, D, O] resolves completed.", [C(), D(), O()],
      decisions=[dm(status="completed")])
    r("s60-outcome-committed-error", "10 §7.7 #60", "A store-produced [C, D, O(err)] resolves completed.", [C(), D(), O(err=True)],
      decisions=[dm(status="completed")])
    r("s60-recovery-parked", "10 §7.7 #60", "A store-produced parked bundle resolves parked.", [C(), D(), RC("diverged"), DP()],
      decisions=[dm(status="parked")])
    r("s61-duplicate-id-and-lane-conflict", "10 §7.7 #61",
      "A duplicate id and an outcome smuggling toolDispatch are global issues; the call stays legacy indeterminate.",
      [C(), C(), W(O(), actions={"toolDispatch": F.w_dispatch()["actions"]["toolDispatch"]})],
      issueCodes=["duplicate_event_id", "semantic_lane_conflict"],
      resolutionSubset={"hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s62-parked-bundle", "10 §7.7 #62", "A parked bundle resolves parked with the decision's reason code.",
      [C(), D(), RC("diverged"), DP()], resolution=resolution(
          [decision("provider-call-1", "parked", "reconcile_diverged", toolName="Write", operationId="operation-1",
                    settlementOrigin="recovery_bundle", call="call-event-1", dispatch="dispatch-event-1")],
          [], False, False, t1=False))
    orphan_rc = W(RC(), id="orphan-reconcile-event", refs={"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"})
    orphan_rc["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    r("s63-unbound-recovery-fact", "10 §7.7 #63",
      "A recovery fact naming an unknown operation is a global order issue; the pre-T1 call stays completed.",
      [C(), O(), orphan_rc], resolutionSubset={
          "issues": iss(("event_order_conflict", "orphan-reconcile-event")), "hasCorruption": True},
      decisions=[dm(status="completed", settlementOrigin="pre_t1_synthetic")])
    r("s64-empty", "10 §7.7 #64", "An empty ledger resolves to nothing.", [],
      resolution=resolution([], [], False, False, t1=False))
    r("s65-legacy-call-only", "10 §7.7 #65", "In a legacy run a call without dispatch is indeterminate and requires reconciliation.",
      [USER(), C()], resolution=resolution(
          [decision("provider-call-1", "indeterminate", "legacy_dispatch_unknown", toolName="Write", call="call-event-1")],
          [], False, True, t1=False))
    r("s66-legacy-dispatch-without-response", "10 §7.7 #66", "In a legacy run a dispatch without response is indeterminate.",
      [USER(), C(), D()], resolution=resolution(
          [decision("provider-call-1", "indeterminate", "dispatch_without_response", toolName="Write", operationId="operation-1",
                    call="call-event-1", dispatch="dispatch-event-1")],
          [], False, True, t1=False))
    r("s67-normal-t2", "10 §7.7 #67", "A dispatched call with its bound response is completed/normal_t2.",
      [M(), C(), D(), O()], decisions=[dm(status="completed", reason="matching_response", settlementOrigin="normal_t2")])
    r("s67-legacy-normal-t2-error", "10 §7.7 #67", "A legacy error response keeps responseIsError true.",
      [C(), D(), O(err=True)],
      decisions=[dm(status="completed", settlementOrigin="normal_t2", responseIsError=True)])
    r("s68-dispatch-before-call", "10 §7.7 #68", "A dispatch before its call is corruption/event_order_conflict.",
      [M(), D(), C()], resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"))},
      decisions=[dm(status="corruption", reason="event_order_conflict",
                    callRuntimeEventId="call-event-1", dispatchRuntimeEventId="dispatch-event-1")])
    r("s69-response-before-call", "10 §7.7 #69", "A response before its call is corruption/orphan_response with the call id.",
      [M(), OU(), C()], decisions=[dm(status="corruption", reason="orphan_response", callRuntimeEventId="call-event-1")])
    r("s70-parked-with-outcome", "10 §7.7 #70",
      "A parked bundle with an outcome is recovery_fact_corruption; response ids stay, settlementOrigin goes.",
      [C(), D(), RC("diverged"), O(), DP()], resolutionSubset={"issues": [], "hasCorruption": True},
      decisions=[dm(["settlementOrigin"], status="corruption", reason="recovery_fact_corruption",
                    responseRuntimeEventId="outcome-event-1", responseIsError=False)])

    # --- 10 §7.7 #71 expanded ---------------------------------------------------------
    rfc_cases: list[tuple[str, str, list[dict[str, Any]]]] = [
        ("reconcile-only", "A reconcile without a decision", [C(), D(), RC()]),
        ("decision-only", "A decision without a reconcile", [C(), D(), DP()]),
        ("response-before-reconcile", "A normal T2 response before a completed bundle", [C(), D(), O(), RC(), DC()]),
        ("never-auto-retry", "A parked bundle for a never_auto_retry dispatch",
         [C(), F.w_dispatch(recovery_mode="never_auto_retry"), RC("diverged"), DP()]),
        ("evidence-order", "A parked decision with evidence [dispatch, call, reconcile]",
         [C(), D(), RC("diverged"),
          payload_set(DP(), evidenceEventIds=["dispatch-event-1", "call-event-1", "reconcile-event-1"])]),
        ("error-outcome", "A completed bundle whose outcome is an error", [C(), D(), RC(), O(err=True), DC()]),
        ("diverged-parked-unreadable", "Observation diverged with reason reconcile_unreadable",
         [C(), D(), RC("diverged"), DP("reconcile_unreadable")]),
        ("expected-state-parked", "Observation matches_expected_state with a parked decision", [C(), D(), RC(), DP()]),
        ("diverged-completed", "Observation diverged with a completed decision", [C(), D(), RC("diverged"), O(), DC()]),
        ("missing-outcome", "A completed decision without an outcome", [C(), D(), RC(), DC()]),
        ("wrong-outcome-reference", "A completed decision naming another outcome",
         [C(), D(), RC(), O(), payload_set(DC(), outcomeEventId="other")]),
        ("reconcile-refs-tool-call", "A reconcile with refs.toolCallId zzz",
         [C(), D(), RC("diverged", refs={"operationId": "operation-1", "toolCallId": "zzz"}), DP()]),
        ("reconcile-refs-operation", "A reconcile with refs.operationId operation-X",
         [C(), D(), RC("diverged", refs={"operationId": "operation-X", "toolCallId": "provider-call-1"}), DP()]),
        ("decision-refs-tool-call", "A decision with refs.toolCallId other",
         [C(), D(), RC(), O(), DC(refs={"operationId": "operation-1", "toolCallId": "other"})]),
        ("two-reconciles", "Two reconciles before a parked decision",
         [C(), D(), RC("diverged"), RC("diverged", id="reconcile-event-2"), DP()]),
        ("decision-before-reconcile", "A decision before its reconcile", [C(), D(), DP(), RC("diverged")]),
        ("outcome-after-decision", "An outcome after the decision", [C(), D(), RC(), DC(), O()]),
        ("undecoded-duplicate-evidence", "An un-decoded decision whose evidence ids repeat",
         [C(), D(), RC(), O(), payload_set(DC(), evidenceEventIds=[
             "call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "outcome-event-1"])]),
    ]
    for slug, what, events in rfc_cases:
        spec = "10 §7.7 #71" + ("; 10 §8 item 22" if slug.startswith("undecoded") else "")
        r(f"s71-{slug}", spec, f"{what} is recovery_fact_corruption, visible only via the decision (no resolver issue).",
          events, resolutionSubset={"issues": [], "hasCorruption": True, "requiresReconciliation": False},
          decisions=[dm(status="corruption", reason="recovery_fact_corruption")])

    r("s72-parked-prior-state", "10 §7.7 #72", "A matches_prior_state bundle parks with reason reconcile_matches_prior_state.",
      [C(), D(), RC("matches_prior_state"), DP("reconcile_matches_prior_state")],
      decisions=[dm(status="parked", reason="reconcile_matches_prior_state")])
    r("s72-parked-unreadable", "10 §7.7 #72", "An unreadable bundle parks with reason reconcile_unreadable.",
      [C(), D(), RC("unreadable"), DP("reconcile_unreadable")],
      decisions=[dm(status="parked", reason="reconcile_unreadable")])
    r("s73-other-run-in-invocation", "10 §7.7 #73",
      "An event of another run in the same invocation is a global issue; recon is false because the ledger is corrupt.",
      [M(), C(), D(), USER("other-run-user", runId="run-2")],
      resolutionSubset={"issues": iss(("invocation_identity_conflict", "other-run-user")),
                        "hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s74-duplicate-call-beats-duplicate-dispatch", "10 §7.7 #74", "duplicate_call wins over duplicate_dispatch by priority.",
      [C(), C(id="call-2"), D(), D(id="dispatch-2")],
      resolutionSubset={"issues": iss(("duplicate_call", "call-2"), ("duplicate_dispatch", "dispatch-2"))},
      decisions=[dm(status="corruption", reason="duplicate_call")])
    r("s75-priority-not-emission-order", "10 §7.7 #75",
      "identity_conflict is emitted first but canonical_args_hash_conflict wins by priority.",
      [C(), D_with_tool_dispatch(toolName="Read", canonicalArgsHash="sha256:x")],
      resolutionSubset={"issues": iss(("identity_conflict", "dispatch-event-1"), ("canonical_args_hash_conflict", "dispatch-event-1"))},
      decisions=[dm(status="corruption", reason="canonical_args_hash_conflict")])
    r("s76-unbound-response-other-name", "10 §7.7 #76", "An unbound response naming another tool is corruption/identity_conflict.",
      [C(), set_in(OU(), "content.name", "Read")], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s76-response-without-refs", "10 §7.7 #76", "A response without refs to an undispatched call is completed/pre_t1_synthetic.",
      [C(), drop(O(), "refs")],
      decisions=[dm(status="completed", reason="matching_response", settlementOrigin="pre_t1_synthetic")])
    r("s76-bound-refs-no-dispatch", "10 §7.7 #76; 10 §8 item 10",
      "operationId refs on a response to an undispatched call are not objected to: completed/pre_t1_synthetic.",
      [C(), O()], decisions=[dm(status="completed", reason="matching_response", settlementOrigin="pre_t1_synthetic")])
    r("s77-malformed-dispatch-legacy", "10 §7.7 #77; 10 §8 item 7",
      "A lane-conflicted dispatch vanishes from grouping; the call looks legacy-undispatched but the ledger is corrupt.",
      [C(), W(D(), refs={"operationId": "operation-1"})],
      resolutionSubset={"issues": iss(("semantic_lane_conflict", "dispatch-event-1")),
                        "hasCorruption": True, "requiresReconciliation": False},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s77-malformed-dispatch-new-protocol", "10 §7.7 #77",
      "Under the marker the call even looks definitely_not_dispatched, yet hasCorruption is true.",
      [M(), C(), W(D(), refs={"operationId": "operation-1"})],
      resolutionSubset={"hasCorruption": True}, decisions=[dm(status="definitely_not_dispatched")])
    r("s78-dispatch-refs-other-operation", "10 §7.7 #78", "Dispatch refs naming operation-X are corruption/identity_conflict.",
      [C(), W(D(), refs={"operationId": "operation-X", "toolCallId": "provider-call-1"})],
      decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s79-dispatch-parent-refs", "10 §7.7 #79", "Dispatch refs with both parent refs are healthy.",
      [C(), W(D(), refs={**F.W_REFS, "parentToolCallId": "exec-1", "parentOperationId": "outer-op"})],
      resolutionSubset={"issues": []}, decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s80-invalid-first-and-late-marker", "10 §7.7 #80", "An invalid first marker and a late marker are both reported, in order.",
      [F.r_initial("future"), C(), E("late", actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolutionSubset={"issues": iss(("protocol_marker_invalid", "initial-1"), ("protocol_marker_invalid", "late"))},
      absentKeys=["toolBoundaryProtocol"])
    r("s80-marker-on-call", "10 §7.7 #80; 10 §3",
      "A marker on a first-event call is honored but the call is a lane conflict: zero decisions.",
      [W(C(), actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolution=resolution([], [("semantic_lane_conflict", "call-event-1")], True, False, t1=True))
    r("s80-system-first-event-marker", "10 §7.7 #80; 10 §3", "A system first event carrying a valid marker is honored.",
      [E("initial-1", actions={"runtimeProtocol": {"toolBoundary": T1}}), C()],
      resolutionSubset={"toolBoundaryProtocol": T1},
      decisions=[dm(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")])
    r("s80-partial-first-event-marker", "10 §7.7 #80", "A partial first event's marker is still honored.",
      [W(M(), partial=True), C()], resolutionSubset={"toolBoundaryProtocol": T1},
      decisions=[dm(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")])
    r("s80-partial-late-marker", "10 §7.7 #80", "A marker on a partial later event is protocol_marker_invalid.",
      [USER(), E("late", partial=True, actions={"runtimeProtocol": {"toolBoundary": T1}})],
      resolutionSubset={"issues": iss(("protocol_marker_invalid", "late")), "hasCorruption": True},
      absentKeys=["toolBoundaryProtocol"])
    C2 = C(id="call-event-2", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                       "args": {"path": "notes.txt", "content": "after"}})
    D2 = W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-2",
           refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})
    r("s81-duplicate-operation", "10 §7.7 #81", "An operationId reused by a second call: both decisions duplicate_operation, one issue.",
      [C(), C2, D(), D2], resolutionSubset={"issues": iss(("duplicate_operation", "dispatch-2"))},
      decisions=[dm(status="corruption", reason="duplicate_operation", toolCallId="provider-call-1", operationId="operation-1"),
                 dm(["operationId"], status="corruption", reason="duplicate_operation", toolCallId="provider-call-2")])
    r("s82-duplicate-unbound-response", "10 §7.7 #82", "Two refs-less responses to one call are corruption/duplicate_response.",
      [C(), drop(O(), "refs"), W(drop(O(), "refs"), id="o2")],
      decisions=[dm(status="corruption", reason="duplicate_response")])
    r("s83-recovery-fact-before-dispatch", "10 §7.7 #83", "A reconcile before the dispatch binds nothing: global order issue.",
      [C(), RC(), D()], resolutionSubset={"issues": iss(("event_order_conflict", "reconcile-event-1")), "hasCorruption": True},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s84-orphan-dispatch-with-bundle", "10 §7.7 #84", "Recovery facts are never consulted for an orphan dispatch.",
      [D(), RC("diverged"), DP()], decisions=[dm(status="corruption", reason="orphan_dispatch")])
    dp_nope = payload_set(DP(refs={"operationId": "nope", "toolCallId": "provider-call-1"}), operationId="nope")
    r("s85-decision-unknown-operation", "10 §7.7 #85", "A decision naming an unknown operation is a global order issue.",
      [C(), dp_nope], resolutionSubset={"issues": iss(("event_order_conflict", "decision-event-1"))},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s86-creation-order", "10 §7.7 #86", "Decisions come in operation creation order.",
      [M(), C(), C(id="call-event-2", content={"kind": "function_call", "id": "p2", "name": "Read", "args": {}}),
       E("o3", role="tool", author="tool", content={"kind": "function_response", "id": "p3", "name": "Bash", "result": "ok"},
         refs={"toolCallId": "p3"}),
       D()],
      decisions=[dm(toolCallId="provider-call-1", status="indeterminate", reason="dispatch_without_response"),
                 dm(toolCallId="p2", status="definitely_not_dispatched"),
                 dm(toolCallId="p3", status="corruption", reason="orphan_response")])
    r("s87-unbound-response-after-dispatch", "10 §7.7 #87", "An unbound response to a dispatched call is corruption/identity_conflict.",
      [C(), D(), OU()], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s88-hash-of-other-args", "10 §7.7 #88", "A dispatch carrying the hash of other args is corruption/canonical_args_hash_conflict.",
      [C(), D_with_tool_dispatch(canonicalArgsHash=WRITE_OTHER_HASH)],
      decisions=[dm(status="corruption", reason="canonical_args_hash_conflict")])
    r("s89-dispatch-after-bound-response", "10 §7.7 #89", "A dispatch after a bound response is corruption/event_order_conflict.",
      [C(), O(), D()], decisions=[dm(status="corruption", reason="event_order_conflict")])
    r("s89-dispatch-after-unbound-response", "10 §7.7 #89",
      "A dispatch after an unbound response gives both issues; identity_conflict wins by priority.",
      [C(), OU(), D()],
      resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"), ("identity_conflict", "outcome-event-1"))},
      decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s90-exact-duplicate-call", "10 §7.7 #90", "The read side never dedups: an exact copy is duplicate_event_id.",
      [C(), C(), D()], resolutionSubset={"issues": iss(("duplicate_event_id", "call-event-1"))},
      decisions=[dm(status="indeterminate", reason="dispatch_without_response")])
    r("s90-dispatch-reusing-call-id", "10 §7.7 #90", "A dispatch reusing the call's event id is ignored: legacy_dispatch_unknown.",
      [C(), D(id="call-event-1")], resolutionSubset={"issues": iss(("duplicate_event_id", "call-event-1"))},
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown")])
    r("s91-recovery-fact-other-run", "10 §7.7 #91", "A reconcile from another run is an identity issue and recovery_fact_corruption.",
      [C(), D(), RC("diverged", runId="run-2"), DP()],
      resolutionSubset={"issues": iss(("invocation_identity_conflict", "reconcile-event-1"))},
      decisions=[dm(status="corruption", reason="recovery_fact_corruption")])
    r("s92-orphan-dispatch-with-response", "10 §7.7 #92", "An orphan dispatch keeps its response ids.",
      [D(), O()],
      resolutionSubset={"issues": iss(("event_order_conflict", "dispatch-event-1"), ("identity_conflict", "outcome-event-1"))},
      decisions=[dm(["callRuntimeEventId"], status="corruption", reason="orphan_dispatch",
                    dispatchRuntimeEventId="dispatch-event-1", responseRuntimeEventId="outcome-event-1")])
    r("s92-late-call-other-name", "10 §7.7 #92", "A late call naming another tool: identity_conflict beats event_order_conflict.",
      [D(), set_in(C(), "content.name", "Read")], decisions=[dm(status="corruption", reason="identity_conflict")])
    r("s92-orphan-response-then-dispatch", "10 §7.7 #92", "A response-first operation later dispatched stays orphan_response, with operationId.",
      [OU(), C(), D()], decisions=[dm(status="corruption", reason="orphan_response", operationId="operation-1")])
    r("s92-call-after-response-duplicate", "10 §7.7 #92", "A second call after a response is duplicate_call.",
      [C(), O(), C(id="call-dup")], decisions=[dm(status="corruption", reason="duplicate_call")])
    r("s93-call-and-dispatch-in-two-invocations", "10 §7.7 #93",
      "A call in invocation-2 and a dispatch in invocation-1 are two operations.",
      [C(invocationId="invocation-2"), D()],
      decisions=[dm(status="indeterminate", reason="legacy_dispatch_unknown"),
                 dm(status="corruption", reason="orphan_dispatch")])
    r("s30-issue-catalogue-decisions", "10 §7.4 #30",
      "The scanner example resolves provider-call-1 to duplicate_call and provider-call-2 to duplicate_operation.",
      [D(), C(), C(id="call-event-2"),
       C(id="call-event-other", content={"kind": "function_call", "id": "provider-call-2", "name": "Write",
                                         "args": {"path": "notes.txt", "content": "after"}}),
       W(D_with_tool_dispatch(providerToolCallId="provider-call-2"), id="dispatch-event-other",
         refs={"operationId": "operation-1", "toolCallId": "provider-call-2"})],
      decisions=[dm(toolCallId="provider-call-1", status="corruption", reason="duplicate_call", operationId="operation-1",
                    callRuntimeEventId="call-event-1", dispatchRuntimeEventId="dispatch-event-1"),
                 dm(["operationId"], toolCallId="provider-call-2", status="corruption", reason="duplicate_operation")])
    return "resolver", (
        "The RecoveryResolver (spec 10 §3, §6): the marker, the per-operation decision table and the "
        "ledger-level issues, over families R and W of §7."
    ), vs


# ---------------------------------------------------------------------------------------
# code-mode.json — 10 §6.5, §7.8
# ---------------------------------------------------------------------------------------


def code_mode_ledger(*, marker: bool = True, call_overrides: dict[str, Any] | None = None,
                     drop_call_keys: Iterable[str] = (), extra: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    outer_call = E("exec-call-1", role="model", author="agent", origin="provider", modelVisibility="visible",
                   content={"kind": "function_call", "id": "exec-1", "name": "exec", "args": {"code": "work()"}},
                   refs={"operationId": "outer-op", "toolCallId": "exec-1"})
    outer_call.update(copy.deepcopy(call_overrides or {}))
    for key in drop_call_keys:
        outer_call.pop(key, None)
    outer_dispatch = E("outer-op_dispatch", modelVisibility="visible", actions={"toolDispatch": {
        "protocol": T1, "operationId": "outer-op", "providerToolCallId": "exec-1", "toolName": "exec",
        "canonicalArgsHash": EXEC_HASH, "recoveryMode": "never_auto_retry"}},
        refs={"operationId": "outer-op", "toolCallId": "exec-1"})
    parent = {"parentToolCallId": "exec-1", "parentOperationId": "outer-op"}
    nested_call = E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
                    content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
                    refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent})
    nested_dispatch = E("nested-op_dispatch", origin="code_mode", modelVisibility="hidden", actions={"toolDispatch": {
        "protocol": T1, "operationId": "nested-op", "providerToolCallId": "nested-1", "toolName": "Read",
        "canonicalArgsHash": READ_PREPARED_HASH, "recoveryMode": "never_auto_retry"}},
        refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent})
    first = F.r_initial(T1 if marker else None)
    return [first, outer_call, outer_dispatch, nested_call, nested_dispatch, *copy.deepcopy(list(extra))]


#: The full commit of 10 §7.8 #96, transcribed from the template of 10 §6.5.
CODE_MODE_COMMIT = {
    "operationId": "outer-op",
    "journalEventId": "outer-op_outcome",
    "committedAt": 50,
    "runtimeEvent": {
        "id": "outer-op_response",
        "invocationId": "invocation-1",
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "ts": 50,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "origin": "provider",
        "modelVisibility": "visible",
        "content": {
            "kind": "function_response",
            "id": "exec-1",
            "name": "exec",
            "result": {"kind": "json", "value": {"kind": "code_mode", "status": "interrupted", "message": CODE_MODE_MESSAGE}},
            "isError": True,
        },
        "refs": {"operationId": "outer-op", "toolCallId": "exec-1"},
    },
}


def group_code_mode() -> tuple[str, str, list[dict[str, Any]]]:
    g = "code-mode"
    vs: list[dict[str, Any]] = []

    def cm(slug: str, spec: str, description: str, events: list[dict[str, Any]], tool_mode: str, commits: list) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "code_mode_commits",
                      {"events": events, "now": 50, "toolMode": tool_mode}, {"commits": commits}))

    cm("interrupted-exec", "10 §7.8 #94, #96; 10 §6.5",
       "An interrupted provider exec call gets exactly one interrupted-outcome commit; the hidden nested call gets none.",
       code_mode_ledger(), "code_mode", [CODE_MODE_COMMIT])
    cm("direct-tool-mode", "10 §7.8 #95", "Outside code_mode tool mode the helper returns nothing.",
       code_mode_ledger(), "direct", [])
    cm("without-marker", "10 §7.8 #96", "The helper does not require the marker.",
       code_mode_ledger(marker=False), "code_mode", [CODE_MODE_COMMIT])
    cm("with-global-corruption", "10 §7.8 #96; 10 §8 item 17",
       "The helper ignores corruption: a duplicate event id elsewhere does not stop the commit.",
       code_mode_ledger(extra=[F.r_initial(T1)]), "code_mode", [CODE_MODE_COMMIT])
    cm("call-without-origin-or-visibility", "10 §7.8 #96", "A call lacking origin and modelVisibility still qualifies.",
       code_mode_ledger(drop_call_keys=("origin", "modelVisibility")), "code_mode", [CODE_MODE_COMMIT])
    cm("call-origin-code-mode", "10 §7.8 #96", "An exec call with origin code_mode does not qualify.",
       code_mode_ledger(call_overrides={"origin": "code_mode"}), "code_mode", [])
    cm("call-hidden", "10 §7.8 #96", "An exec call with modelVisibility hidden does not qualify.",
       code_mode_ledger(call_overrides={"modelVisibility": "hidden"}), "code_mode", [])
    return "code-mode", (
        "The interrupted Code Mode outcome helper (spec 10 §6.5): which decisions get a T2 commit, and its exact shape."
    ), vs


# ---------------------------------------------------------------------------------------
# phase0-plan.json — 20 §1.1–§1.7, §8 items 2–8, 10; 10 §6.6, §7.7 #62–#63
# ---------------------------------------------------------------------------------------


def group_phase0() -> tuple[str, str, list[dict[str, Any]]]:
    g = "phase0-plan"
    vs: list[dict[str, Any]] = []

    def p(slug: str, spec: str, description: str, events: list[dict[str, Any]], expected_hw: int | None = None, **expect: Any) -> None:
        input_: dict[str, Any] = {"events": events}
        if expected_hw is not None:
            input_["expectedRuntimeEventHighWater"] = expected_hw
        vs.append(vec(f"{g}/{slug}", spec, description, "plan", input_, expect))

    call_tool1 = call20("call-1", 1, "tool-1", "Bash", {"command": "ls"})
    p("s2-failed-and-pending", "20 §8 item 2",
      "An error result makes the call failed; a call without result stays indeterminate; projection is deterministic.",
      [call_tool1, response20("result-1", 2, "tool-1", "Bash", "boom", is_error=True),
       call20("call-2", 3, "tool-2", "Read", {"path": "notes.txt"})],
      operations=[dm(toolCallId="tool-1", status="failed", responseRuntimeEventId="result-1"),
                  dm(["responseRuntimeEventId"], toolCallId="tool-2", status="indeterminate")],
      deterministic=True)
    p("s3-error-response-safe", "20 §8 item 3; 20 §9 item 1", "A call with an error response is failed and safe to replay.",
      [call_tool1, response20("result-1", 2, "tool-1", "Bash", "boom", is_error=True)],
      planSubset={"disposition": "safe_replay"}, operations=[dm(status="failed")])
    p("s3-call-only-blocked", "20 §8 item 3; 20 §1.5",
      "A call without result blocks, requires verification and carries the directive.",
      [call_tool1],
      planSubset={"disposition": "blocked", "requiresVerification": True, "rejectionReasons": ["dangling_tool_state"],
                  "sourceRuntimeEventHighWater": 1},
      operations=[dm(status="indeterminate")], presentKeys=["directive"], directiveContains=["Do not retry", "read-only"])
    p("s4-unresolved-call-not-replayed", "20 §8 item 4; 20 §1.7",
      "An unresolved call is left out of replay; system text is kept.",
      [user20(), call20("call-1", 2, "tool-1", "Bash", {"command": "ls"}), text20("system-1", 3, "system", "system", "note")],
      replayEventIds=["user-1", "system-1"])
    p("s5-hidden-code-mode-pair", "20 §8 item 5", "A hidden Code Mode call and result are not operations and not replayed.",
      [user20(),
       call20("call-1", 2, "nested-1", "Read", {"path": "notes.txt"}, origin="code_mode", modelVisibility="hidden"),
       response20("result-1", 3, "nested-1", "Read", "contents", origin="code_mode", modelVisibility="hidden")],
      planSubset={"disposition": "safe_replay", "operations": []}, replayEventIds=["user-1"])
    parent = {"parentToolCallId": "exec-1", "parentOperationId": "outer-op"}
    p("s6-hidden-nested-pending", "20 §8 item 6; 20 §1.5",
      "A hidden nested call dispatched without result blocks and requires verification.",
      [user20(marker=True),
       call20("exec-call", 2, "exec-1", "exec", {"code": "work()"}, refs={"operationId": "outer-op", "toolCallId": "exec-1"}),
       dispatch20("outer-op_dispatch", 2, "outer-op", "exec-1", "exec", EXEC_HASH),
       call20("nested-call", 3, "nested-1", "Read", {"path": "prepared.txt"}, origin="code_mode", modelVisibility="hidden",
              refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent}),
       dispatch20("nested-op_dispatch", 3, "nested-op", "nested-1", "Read", READ_PREPARED_HASH,
                  refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent},
                  origin="code_mode", modelVisibility="hidden"),
       response20("outer-op_response", 4, "exec-1", "exec", "boom", is_error=True,
                  refs={"operationId": "outer-op", "toolCallId": "exec-1"})],
      planSubset={"disposition": "blocked", "requiresVerification": True, "rejectionReasons": ["dangling_tool_state"]},
      presentKeys=["directive"], diagnosticCodesInclude=["pending_tool_result"])
    p("s7-response-only", "20 §8 item 7", "A response alone blocks without verification: ledger corruption and an unmatched result.",
      [response20("result-1", 1, "tool-1", "Bash", "ok")],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      diagnosticCodes=["tool_ledger_corruption", "unmatched_tool_result"], replayEventIds=[])
    p("s8-high-water-mismatch", "20 §8 item 8; 20 §1.6", "An expected high-water that differs from the event count blocks.",
      [user20()], expected_hw=2,
      planSubset={"disposition": "blocked", "rejectionReasons": ["runtime_offset_mismatch"]},
      diagnosticCodes=["runtime_offset_mismatch"])
    p("s10-t1-not-dispatched", "20 §8 item 10; 20 §9 items 2, 37",
      "Under the marker a call without dispatch is not_dispatched: blocked, but no verification.",
      [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "ls"})],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      operations=[dm(status="not_dispatched")], diagnosticCodes=["tool_not_dispatched"], absentKeys=["directive"])
    p("partial-counts-toward-high-water", "20 §1.6; 20 §9 item 3",
      "Phase 0 high-water counts partial events, which are never replayed.",
      [user20(), text20("partial-1", 2, "model", "agent", "draft", partial=True)],
      planSubset={"sourceRuntimeEventHighWater": 2}, replayEventIds=["user-1"])
    p("s62-parked-plan", "10 §7.7 #62; 10 §6.6", "A parked bundle blocks the plan with tool_recovery_parked.",
      [C(), D(), RC("diverged"), DP()],
      planSubset={"disposition": "blocked", "requiresVerification": False, "rejectionReasons": ["dangling_tool_state"]},
      diagnosticCodes=["tool_recovery_parked"])
    orphan_rc = W(RC(), id="orphan-reconcile-event", refs={"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"})
    orphan_rc["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    p("s63-unbound-recovery-fact-plan", "10 §7.7 #63; 10 §6.6",
      "An unbound recovery fact blocks the plan with tool_ledger_corruption naming event_order_conflict.",
      [C(), O(), orphan_rc],
      planSubset={"disposition": "blocked", "rejectionReasons": ["dangling_tool_state"]},
      diagnostics=[dm(code="tool_ledger_corruption", detail={"issueCode": "event_order_conflict"})])
    return "phase0-plan", (
        "The Phase 0 ResumePlan (spec 20 §1.1–§1.7): operations, diagnostics, rejection reasons, verification and replay."
    ), vs


# ---------------------------------------------------------------------------------------
# failpoints.json — 20 §2, §8 item 1
# ---------------------------------------------------------------------------------------

FAILPOINT_PREFIXES = [
    ("P0", "before_function_call"), ("P1", "after_function_call"), ("P2", "after_function_call"),
    ("P3", "after_function_call"), ("P4", "after_function_call"), ("P5", "after_function_response"),
    ("P6", "after_function_response"), ("P7", "after_function_response"), ("P8", "after_function_response"),
    ("P9", "after_terminal_event"), ("P10", "after_terminal_event"), ("P11", "after_terminal_event"),
]
PREFIX_SIZE = {"before_function_call": 1, "after_function_call": 2, "after_function_response": 3, "after_terminal_event": 4}


def crash_ledger(fp: str) -> list[dict[str, Any]]:
    """The reference crash ledger of 20 §2 for failpoint ``fp`` (full, four events)."""
    identity = {"sessionId": f"session-{fp}", "invocationId": f"invocation-run-{fp}", "runId": f"run-{fp}", "turnId": f"turn-run-{fp}"}
    return [
        ev20("user", 1, identity, role="user", author="user", content={"kind": "text", "text": "run the tool"}),
        call20("call", 2, "tool-1", "Bash", {"command": "touch marker"}, identity=identity),
        response20("response", 3, "tool-1", "Bash", {"exitCode": 0}, identity=identity),
        ev20("terminal", 4, identity, role="system", author="system", status="failed", actions={"endInvocation": True}),
    ]


#: 20 §2 "Required decisions", one row per committed prefix.
PREFIX_DECISIONS: dict[str, dict[str, Any]] = {
    "before_function_call": {"disposition": "safe_replay", "status": None, "reasons": [], "replay": ["user"]},
    "after_function_call": {"disposition": "blocked", "status": "indeterminate", "reasons": ["dangling_tool_state"], "replay": ["user"]},
    "after_function_response": {"disposition": "safe_replay", "status": "succeeded", "reasons": [],
                                "replay": ["user", "call", "response"]},
    "after_terminal_event": {"disposition": "safe_replay", "status": "succeeded", "reasons": [],
                             "replay": ["user", "call", "response", "terminal"]},
}


def group_failpoints() -> tuple[str, str, list[dict[str, Any]]]:
    g = "failpoints"
    vs: list[dict[str, Any]] = [vec(
        f"{g}/catalogue", "20 §2; 20 §8 item 1",
        "The failpoint catalogue lists P0..P11 in order with their committed prefixes.",
        "failpoint_catalog", {}, {"failpoints": [{"id": fp, "committedPrefix": prefix} for fp, prefix in FAILPOINT_PREFIXES]},
    )]
    for fp, prefix in FAILPOINT_PREFIXES:
        size = PREFIX_SIZE[prefix]
        row = PREFIX_DECISIONS[prefix]
        subset: dict[str, Any] = {"disposition": row["disposition"], "rejectionReasons": row["reasons"],
                                  "sourceRuntimeEventHighWater": size}
        expect: dict[str, Any] = {"planSubset": subset}
        if row["status"] is None:
            subset["operations"] = []
        else:
            expect["operations"] = [dm(status=row["status"])]
        expect["replayEventIds"] = row["replay"]
        expect["deterministic"] = True
        vs.append(vec(
            f"{g}/{fp.lower()}-{prefix.replace('_', '-')}", "20 §2",
            f"Crash at {fp}: Phase 0 over the {prefix} prefix of the reference ledger.",
            "plan", {"failpoint": fp, "committedPrefix": prefix, "events": crash_ledger(fp)[:size]}, expect,
        ))
    for prefix, size in PREFIX_SIZE.items():
        fp = next(f for f, p_ in FAILPOINT_PREFIXES if p_ == prefix)
        vs.append(vec(
            f"{g}/{prefix.replace('_', '-')}-high-water-mismatch", "20 §2 ([doc]); 20 §1.6",
            f"An expected high-water one past the reopened {prefix} prefix is runtime_offset_mismatch.",
            "plan", {"failpoint": fp, "committedPrefix": prefix, "events": crash_ledger(fp)[:size],
                     "expectedRuntimeEventHighWater": size + 1},
            {"planSubset": {"disposition": "blocked"}, "diagnosticCodesInclude": ["runtime_offset_mismatch"],
             "rejectionReasonsInclude": ["runtime_offset_mismatch"]},
        ))
    return "failpoints", (
        "The P0–P11 crash contract (spec 20 §2): the catalogue and Phase 0 over each failpoint's committed prefix "
        "of the reference ledger."
    ), vs


# ---------------------------------------------------------------------------------------
# segment-replay.json — 20 §1.10, §8 items 26–31
# ---------------------------------------------------------------------------------------


def group_segment_replay() -> tuple[str, str, list[dict[str, Any]]]:
    g = "segment-replay"
    vs: list[dict[str, Any]] = []

    def seg(slug: str, spec: str, description: str, events: list[dict[str, Any]], version: int | None = None, **expect: Any) -> None:
        input_: dict[str, Any] = {"events": events}
        if version is not None:
            input_["providerProjectionVersion"] = version
        vs.append(vec(f"{g}/{slug}", spec, description, "segment_replay", input_, expect))

    thinking = ev20("thinking-1", 2, role="model", author="agent", content={"kind": "thinking", "text": "plan", "signature": "sig-1"})
    assistant = text20("assistant-1", 3, "model", "agent", "partial answer")
    seg("s26-trim-interrupted-suffix", "20 §8 item 26; 20 §1.10 step 5",
        "Signed thinking and assistant text after the last user message are trimmed.",
        [user20(marker=True), thinking, assistant],
        trimmedSuffixEventIds=["thinking-1", "assistant-1"], replayEventIds=["user-1"], providerItemEventIds=["user-1"])
    seg("s27-hidden-event-dropped", "20 §8 item 27", "A hidden tool-role text is not replayed.",
        [user20(marker=True), text20("hidden-1", 2, "tool", "tool", "internal", modelVisibility="hidden")],
        replayEventIds=["user-1"])
    run2 = ID20_RUN2
    seg("s28-continuation-without-anchor", "20 §8 item 28; 20 §1.10 step 5",
        "With no user/tool-result anchor every provider item is trimmed; content-less facts stay.",
        [continuation_start20("continuation-start", 1, marker=False),
         ev20("thinking-1", 2, run2, role="model", author="agent",
              content={"kind": "thinking", "text": "plan", "signature": "sig-1"}),
         text20("assistant-1", 3, "model", "agent", "partial answer", identity=run2),
         terminal20("failed-terminal", 4, identity=run2)],
        trimmedSuffixEventIds=["thinking-1", "assistant-1"], replayEventIds=["continuation-start", "failed-terminal"],
        providerItemEventIds=[])
    seg("s29-undispatched-call-trimmed", "20 §8 item 29; 20 §2 (informative)",
        "Under a marker-carrying live start an undispatched call is trimmed, not blocking.",
        [continuation_start20("continuation-start", 1, marker=True),
         call20("call-1", 2, "tool-1", "Write", {"path": "notes.txt", "content": "after"}, identity=run2),
         terminal20("failed-terminal", 3, identity=run2)],
        trimmedSuffixEventIds=["call-1"], replayEventIds=["continuation-start", "failed-terminal"], providerItemEventIds=[])
    seg("s30-non-suffix-gap", "20 §8 item 30; 20 §1.10 step 4",
        "An unmatched call followed by a provider item is a non-suffix gap.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Read", {"path": "notes.txt"}), assistant],
        blockReason="provider_replay_non_suffix_gap")
    seg("p1-like-t1-call-trimmed", "20 §2 (informative); 20 §1.10",
        "A P1-like T1 ledger (call, no dispatch) trims the call and does not block.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "do-it"})],
        trimmedSuffixEventIds=["call-1"], replayEventIds=["user-1"], providerItemEventIds=["user-1"])
    seg("p2-like-dispatch-unsettled", "20 §2 (informative); 20 §1.10 step 1",
        "A P2–P4-like T1 ledger (call and dispatch, no response) is blocked tool_recovery_unsettled.",
        [user20(marker=True), call20("call-1", 2, "tool-1", "Bash", {"command": "do-it"}),
         dispatch20("operation-1_dispatch", 2, "operation-1", "tool-1", "Bash", BASH_HASH)],
        blockReason="tool_recovery_unsettled")
    seg("parked-unsettled", "20 §1.10 step 1", "A parked operation blocks the segment as tool_recovery_unsettled.",
        [M(), C(), D(), RC("diverged"), DP()], blockReason="tool_recovery_unsettled")
    seg("orphan-response-corruption", "20 §1.10 step 1", "A corrupt ledger blocks the segment as tool_recovery_corruption.",
        [user20(marker=True), response20("result-1", 2, "tool-1", "Bash", "ok")], blockReason="tool_recovery_corruption")
    seg("projection-version-2", "20 §1.10 step 2; 20 §1.9",
        "A requested provider projection version other than 1 is provider_replay_unsupported.",
        [user20(marker=True)], version=2, blockReason="provider_replay_unsupported")

    root = ID20
    vs.append(vec(
        f"{g}/s31-two-generations", "20 §8 item 31; 20 §1.10 (composite)",
        "An ancestor's trimmed suffix never reappears: runtime context concatenates each segment's replay.",
        "composite_replay",
        {"segments": [
            {"events": [user20("root-user", 1, identity=root),
                        ev20("root-thinking", 2, root, role="model", author="agent",
                             content={"kind": "thinking", "text": "plan", "signature": "sig-1"}),
                        text20("root-interrupted-text", 3, "model", "agent", "partial answer", identity=root)]},
            {"events": [user20("child-user", 4, identity=run2)]},
        ]},
        {"runtimeContextEventIds": ["root-user", "child-user"],
         "trimmedSuffixEventIds": [["root-thinking", "root-interrupted-text"], []],
         "boundaryRunIds": ["run-1", "run-2"]},
    ))
    return "segment-replay", (
        "v2 continuation segment replay and the composite replay plan (spec 20 §1.10): trimming, blocking reasons and "
        "the concatenated runtime context."
    ), vs


# ---------------------------------------------------------------------------------------
# Coverage bookkeeping (spec 10 §7 scenarios 1–96)
# ---------------------------------------------------------------------------------------

#: Scenarios of 10 §7 (1–96) with no vector, and why. Printed into the README.
SKIPPED_SCENARIOS: dict[int, str] = {
    5: "sparse arrays, arrays with extra properties, accessors and custom prototypes cannot be written in JSON; "
       "every JSON array/object is plain",
    6: "a null-prototype object is a JavaScript notion; every JSON object is a plain object",
    8: "undefined optional fields cannot be written in JSON (absent keys are the JSON form, covered by the golden encodings)",
    9: "an undefined value cannot be written in JSON",
    18: "[T:store] store idempotency (the pure part, normalisation before comparison, is encoding/golden-text-normalized)",
    19: "[T:store] store refusal; args cannot be undefined in JSON (a missing args key is encoding/function-call-without-args)",
    20: "[T:store] serialization hooks are a JavaScript notion and the scenario is about the store",
}

#: Scenarios covered only in part, and what is left out. Printed into the README.
PARTIAL_SCENARIOS: dict[int, str] = {
    2: "undefined, bigint and symbol keys cannot be written in JSON; ±Infinity is reached by number literals that "
       "overflow a double (1e400)",
    12: "permissionClosureAccepted combined with permissionRequest: the spec does not fix the PermissionRequestPayload shape",
    13: "\"inherited property\" is JavaScript-only; permissionDecision: the spec does not fix the `decision` enum, so no "
        "valid base event can be built",
    17: "the legacy `automation` → `legacy_automation` origin rewrite: the spec does not fix the TurnOrigin shapes",
    59: "reopen and projection rebuild are store behaviour; the pure resolution is covered",
    60: "projection states are store behaviour; the decision statuses are covered",
}

SCENARIO_RE = re.compile(r"10 §7\.\d+ ((?:#\d+(?:, )?)+)")


def covered_scenarios(files: list[tuple[str, str, list[dict[str, Any]]]]) -> set[int]:
    out: set[int] = set()
    for _, _, vs in files:
        for v in vs:
            for m in SCENARIO_RE.finditer(v["spec"]):
                out.update(int(n) for n in re.findall(r"#(\d+)", m.group(1)))
    return out


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------

GROUPS: list[Callable[[], tuple[str, str, list[dict[str, Any]]]]] = [
    group_args_hash, group_encoding, group_predicates, group_lanes, group_scanner, group_transition, group_bundle,
    group_resolver, group_code_mode, group_phase0, group_failpoints, group_segment_replay,
]


def build_files() -> list[tuple[str, str, list[dict[str, Any]]]]:
    files = [group() for group in GROUPS]
    ids = [v["id"] for _, _, vs in files for v in vs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SystemExit(f"duplicate vector ids: {dupes}")
    covered = covered_scenarios(files)
    missing = [n for n in range(1, 97) if n not in covered and n not in SKIPPED_SCENARIOS]
    if missing:
        raise SystemExit(f"10 §7 scenarios neither covered nor skipped: {missing}")
    wrongly_skipped = sorted(n for n in SKIPPED_SCENARIOS if n in covered)
    if wrongly_skipped:
        raise SystemExit(f"scenarios listed as skipped but covered: {wrongly_skipped}")
    return files


def render_file(group: str, description: str, vectors: list[dict[str, Any]]) -> str:
    doc = {"$schema": SCHEMA_REF, "group": group, "description": description, "vectors": vectors}
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    text.encode("utf-8")  # raises on a lone surrogate: those belong in argsJson/eventJson text only
    return text


COUNTS_BEGIN = "<!-- vector-counts:begin (generated by python -m conformance._vectorgen.build) -->"
COUNTS_END = "<!-- vector-counts:end -->"
SKIPS_BEGIN = "<!-- skipped-scenarios:begin (generated by python -m conformance._vectorgen.build) -->"
SKIPS_END = "<!-- skipped-scenarios:end -->"


def render_counts(files: list[tuple[str, str, list[dict[str, Any]]]]) -> str:
    lines = ["| file | vectors | operations |", "|---|---:|---|"]
    total = 0
    for group, _, vs in files:
        ops = sorted({v["operation"] for v in vs})
        lines.append(f"| `{group}.json` | {len(vs)} | {', '.join(f'`{o}`' for o in ops)} |")
        total += len(vs)
    lines.append(f"| **total** | **{total}** | |")
    return "\n".join(lines)


def render_skips() -> str:
    lines = ["Not covered (no vector):", ""]
    lines += [f"* #{n}: {why}." for n, why in sorted(SKIPPED_SCENARIOS.items())]
    lines += ["", "Covered in part:", ""]
    lines += [f"* #{n}: {why}." for n, why in sorted(PARTIAL_SCENARIOS.items())]
    return "\n".join(lines)


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    start = text.index(begin) + len(begin)
    stop = text.index(end)
    return text[:start] + "\n" + body + "\n" + text[stop:]


def render_readme(current: str, files: list[tuple[str, str, list[dict[str, Any]]]]) -> str:
    text = replace_between(current, COUNTS_BEGIN, COUNTS_END, render_counts(files))
    return replace_between(text, SKIPS_BEGIN, SKIPS_END, render_skips())


def expected_outputs() -> dict[Path, str]:
    files = build_files()
    out = {VECTORS_DIR / f"{group}.json": render_file(group, description, vs) for group, description, vs in files}
    out[README] = render_readme(README.read_text(encoding="utf-8"), files)
    return out


def stale_files() -> list[Path]:
    stale = []
    for path, text in expected_outputs().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance._vectorgen.build", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files on disk differ from what would be written")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(PACKAGE_DIR.parent)}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in expected_outputs().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {path.relative_to(PACKAGE_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
