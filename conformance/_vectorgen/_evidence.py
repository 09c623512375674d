"""Vectors of ``evidence.json``: the Phase 3 evidence codec (docs/spec-phase3.md §1.2–§1.5,
§2.1–§2.4, §7 items 1–16).

One decode vector per validation code of spec-phase3 §2.2 (most codes several times, one per
case the §7 catalogue names), vectors for the order of the checks where two rules meet, round
trips whose canonical text and ``evidenceDigest`` are stated, encode (§2.4) and the binding
rules of §2.3 against family W's T1 events.

Where the values come from: every code is the §2.2/§2.3 row the description names. The
canonical text of the worked record is written out by hand below and checked at build time
against the standard library's sorted-key JSON (``json.dumps(sort_keys=True)``: for ASCII keys
that are not array indexes and integer numbers it is ``stable_json`` of spec 10 §2.3);
digests are computed here with :mod:`hashlib` from the construction the spec fixes (§1.3:
plain SHA-256 of the bytes; §2.1: ``LP(domain) ‖ LP(text)``) — never by the reference.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from maka_ref.testing import families as F

from ._common import vec

G = "evidence"
MAX_FILE_BYTES = 16 * 1024 * 1024  # spec-phase3 conventions: 16 777 216
WORKSPACE = "workspace:v1:123e4567-e89b-42d3-a456-426614174000"  # a spec 20 §6.1 identity (UUID version 4)


# ---------------------------------------------------------------------------------------
# The constructions of the spec, from the standard library only
# ---------------------------------------------------------------------------------------


def sha256_of(data: bytes) -> str:
    """spec-phase3 §1.3: ``sha256:`` + lowercase hex SHA-256 of the raw bytes (no prefix)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def lp_digest(domain: str, text: str) -> str:
    """``sha256:`` + hex SHA-256 of ``LP(domain) ‖ LP(text)`` (LP = 8-byte big-endian length, then
    the UTF-8 bytes; spec 20 §1.9, used by spec-phase3 §2.1, §4.5 and spec-phase4 §2.4)."""
    h = hashlib.sha256()
    for part in (domain.encode("utf-8"), text.encode("utf-8")):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return "sha256:" + h.hexdigest()


def canonical(value: Any) -> str:
    """Canonical JSON for the values these vectors use: objects with ASCII, non-index keys,
    strings and integers, where spec 10 §2.3's ``stable_json`` is sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def evidence_digest_of(text: str) -> str:
    """spec-phase3 §2.1: ``evidenceDigest`` of a canonical text."""
    return lp_digest("maka.file-evidence.v1", text)


# ---------------------------------------------------------------------------------------
# Records (family W's operation: Write notes.txt "after" as operation-1)
# ---------------------------------------------------------------------------------------

AFTER_DIGEST = sha256_of(b"after")
#: The §1.2 record of family W's Write (spec 10 §7 family W; spec-phase3 §1.4 row Write, before absent).
WRITE_RECORD: dict[str, Any] = {
    "protocol": "file_evidence_v1",
    "operationId": "operation-1",
    "sessionId": "session-1",
    "invocationId": "invocation-1",
    "runId": "run-1",
    "turnId": "turn-1",
    "providerToolCallId": "provider-call-1",
    "callEventId": "call-event-1",
    "dispatchEventId": "dispatch-event-1",
    "toolName": "Write",
    "canonicalArgsHash": F.WRITE_NOTES_HASH,
    "workspaceIdentity": WORKSPACE,
    "targetPath": "notes.txt",
    "transform": "write_whole_file_v1",
    "before": {"type": "absent"},
    "expectedAfter": {"type": "regular", "size": 5, "contentDigest": AFTER_DIGEST},
    "result": {"path": "notes.txt", "bytesWritten": 5},
}
#: Its canonical text, written out by hand (spec-phase3 §2.1; key order of spec 10 §2.3).
WRITE_CANONICAL = (
    '{"before":{"type":"absent"},"callEventId":"call-event-1",'
    '"canonicalArgsHash":"' + F.WRITE_NOTES_HASH + '",'
    '"dispatchEventId":"dispatch-event-1",'
    '"expectedAfter":{"contentDigest":"' + AFTER_DIGEST + '","size":5,"type":"regular"},'
    '"invocationId":"invocation-1","operationId":"operation-1","protocol":"file_evidence_v1",'
    '"providerToolCallId":"provider-call-1","result":{"bytesWritten":5,"path":"notes.txt"},'
    '"runId":"run-1","sessionId":"session-1","targetPath":"notes.txt","toolName":"Write",'
    '"transform":"write_whole_file_v1","turnId":"turn-1","workspaceIdentity":"' + WORKSPACE + '"}'
)
if canonical(WRITE_RECORD) != WRITE_CANONICAL:  # the hand-written text and the stdlib agree
    raise SystemExit("evidence: the hand-written canonical text of WRITE_RECORD is wrong")

#: Edit of "a.txt" ("hello world" → "hello there"; old "world", new "there"), mode recorded.
EDIT_RECORD: dict[str, Any] = {
    **copy.deepcopy(WRITE_RECORD),
    "toolName": "Edit", "transform": "edit_replace_unique_v1", "targetPath": "a.txt",
    "before": {"type": "regular", "size": 11, "contentDigest": sha256_of(b"hello world"), "mode": 420},
    "expectedAfter": {"type": "regular", "size": 11, "contentDigest": sha256_of(b"hello there"), "mode": 420},
    "result": {"path": "a.txt", "replacements": 1},
}
#: Append of "cd" to "log.txt" holding "ab".
APPEND_RECORD: dict[str, Any] = {
    **copy.deepcopy(WRITE_RECORD),
    "toolName": "Append", "transform": "append_utf8_v1", "targetPath": "log.txt",
    "before": {"type": "regular", "size": 2, "contentDigest": sha256_of(b"ab")},
    "expectedAfter": {"type": "regular", "size": 4, "contentDigest": sha256_of(b"abcd")},
    "result": {"path": "log.txt", "bytesAppended": 2},
}


def with_(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out.update(copy.deepcopy(changes))
    return out


def without(record: dict[str, Any], key: str) -> dict[str, Any]:
    out = copy.deepcopy(record)
    del out[key]
    return out


def regular(size: int, digest: str, mode: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "regular", "size": size, "contentDigest": digest}
    if mode is not None:
        out["mode"] = mode
    return out


def decoded(record: dict[str, Any]) -> dict[str, Any]:
    """The ``resultSubset`` of a record that decodes: its canonical text and digest (§2.1)."""
    text = canonical(record)
    return {"resultSubset": {"ok": True, "evidenceJson": text, "evidenceDigest": evidence_digest_of(text)}}


def refused(code: str) -> dict[str, Any]:
    return {"resultSubset": {"ok": False, "code": code}}


# ---------------------------------------------------------------------------------------
# evidence.json
# ---------------------------------------------------------------------------------------


def group_evidence() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []

    def dec(slug: str, spec: str, description: str, input_: dict[str, Any], expect: dict[str, Any]) -> None:
        vs.append(vec(f"{G}/{slug}", spec, description, "evidence_decode", input_, expect))

    def bad(slug: str, spec: str, description: str, record: Any, code: str) -> None:
        dec(slug, spec, description, {"evidence": record}, refused(code))

    # --- round trips and the digest (§2.1, §2.4, §7 item 1) ------------------------------
    vs.append(vec(f"{G}/write-canonical-text-and-digest", "spec-phase3 §2.1; spec-phase3 §7 item 1",
                  "Family W's Write record decodes; its canonical text is the sorted-key text written out by hand and "
                  "its evidenceDigest is SHA-256 of LP(\"maka.file-evidence.v1\") ‖ LP(text).",
                  "evidence_decode", {"evidence": WRITE_RECORD},
                  {"resultSubset": {"ok": True, "evidenceJson": WRITE_CANONICAL,
                                    "evidenceDigest": evidence_digest_of(WRITE_CANONICAL)}}))
    dec("canonical-text-decodes-to-itself", "spec-phase3 §2.1; spec-phase3 §2.4",
        "The canonical text, given as text, decodes to the same record: decode(parse(encode(r))) = r.",
        {"evidenceJson": WRITE_CANONICAL},
        {"resultSubset": {"ok": True, "evidenceJson": WRITE_CANONICAL, "evidenceDigest": evidence_digest_of(WRITE_CANONICAL)}})
    reordered = dict(reversed(list(WRITE_RECORD.items())))
    dec("key-order-does-not-matter", "spec-phase3 §2.1",
        "The same record with its keys in reverse order has the same canonical text and digest (two records are the "
        "same iff their canonical texts are equal).", {"evidence": reordered}, decoded(WRITE_RECORD))
    dec("text-with-whitespace", "spec-phase3 §2.1; spec-phase3 §2.2",
        "Non-canonical JSON text (indented) of a valid record decodes to the canonical text.",
        {"evidenceJson": json.dumps(WRITE_RECORD, indent=2)}, decoded(WRITE_RECORD))
    dec("edit-with-modes", "spec-phase3 §1.2; spec-phase3 §1.3; spec-phase3 §1.4",
        "An Edit record with before.mode and expectedAfter.mode both 420 (0o644) decodes; mode is part of the canonical "
        "text.", {"evidence": EDIT_RECORD}, decoded(EDIT_RECORD))
    dec("append-from-regular", "spec-phase3 §1.2; spec-phase3 §1.4",
        "An Append record growing a 2-byte file by 2 bytes decodes.", {"evidence": APPEND_RECORD}, decoded(APPEND_RECORD))
    created = with_(WRITE_RECORD, expectedAfter=regular(5, AFTER_DIGEST, 420))
    dec("write-create-mode-420", "spec-phase3 §1.4; spec-phase3 §2.2 row 15",
        "A Write that creates the file may bind expectedAfter.mode 420 (0o644, the §1.4 mode of a created file).",
        {"evidence": created}, decoded(created))
    at_limit = with_(WRITE_RECORD, expectedAfter=regular(MAX_FILE_BYTES, AFTER_DIGEST),
                     result={"path": "notes.txt", "bytesWritten": MAX_FILE_BYTES})
    dec("size-at-limit", "spec-phase3 §2.2 row 14; spec-phase3 §7 item 8",
        "expectedAfter.size = MAX_FILE_BYTES (16777216) is valid.", {"evidence": at_limit}, decoded(at_limit))
    same = with_(WRITE_RECORD, before=regular(5, AFTER_DIGEST))
    dec("before-equals-expected-after", "spec-phase3 §1.4; spec-phase3 §4.4",
        "A Write of the bytes the file already holds (before = expectedAfter) is a valid record.",
        {"evidence": same}, decoded(same))
    empty_append = with_(APPEND_RECORD, expectedAfter=regular(2, sha256_of(b"ab")),
                         result={"path": "log.txt", "bytesAppended": 0})
    dec("empty-append", "spec-phase3 §1.4; spec-phase3 §2.2 row 15",
        "An empty Append (expectedAfter = before) does not shrink the file and is valid.",
        {"evidence": empty_append}, decoded(empty_append))

    # --- rule 1: evidence_not_json (text form only) ----------------------------------------
    dec("not-json-truncated", "spec-phase3 §2.2 row 1; spec-phase3 §7 item 2",
        "The text `{` is not one JSON document: evidence_not_json.", {"evidenceJson": "{"}, refused("evidence_not_json"))
    dec("not-json-two-documents", "spec-phase3 §2.2 row 1",
        "Two JSON documents in one text: evidence_not_json.", {"evidenceJson": "{} {}"}, refused("evidence_not_json"))
    dec("not-json-not-text", "spec-phase3 §2.2 row 1",
        "evidenceJson that is not text (the number 42): evidence_not_json.", {"evidenceJson": 42},
        refused("evidence_not_json"))

    # --- rule 2: evidence_not_strict_json ---------------------------------------------------
    negative_zero = WRITE_CANONICAL.replace('"result":{"bytesWritten":5,', '"result":{"bytesWritten":5,"x":-0,')
    dec("negative-zero-in-result", "spec-phase3 §2.2 row 2; spec-phase3 §7 item 12",
        "`-0` inside result is not strict JSON (spec 10 §2.3): evidence_not_strict_json, before the object checks.",
        {"evidenceJson": negative_zero}, refused("evidence_not_strict_json"))
    infinity = WRITE_CANONICAL.replace('"result":{"bytesWritten":5,', '"result":{"bytesWritten":1e400,')
    dec("infinity-in-result", "spec-phase3 §2.2 row 2",
        "A number literal that overflows a double (1e400, +Infinity) is not strict JSON: evidence_not_strict_json.",
        {"evidenceJson": infinity}, refused("evidence_not_strict_json"))
    deep = "[" * 600 + "]" * 600
    dec("nesting-beyond-500", "spec-phase3 §2.2 row 2",
        "result holding 600 nested arrays is nested beyond 500 (spec 10 §2.3): evidence_not_strict_json.",
        {"evidenceJson": WRITE_CANONICAL.replace('"result":{"bytesWritten":5,', '"result":{"deep":' + deep + ',"bytesWritten":5,')},
        refused("evidence_not_strict_json"))
    dec("size-spelled-5-0", "spec-phase3 §2.1; 10 §2.4",
        "A size spelled 5.0 in the text is the number 5 (IEEE doubles): the record decodes to the canonical text with 5.",
        {"evidenceJson": WRITE_CANONICAL.replace('"size":5,', '"size":5.0,')},
        {"resultSubset": {"ok": True, "evidenceJson": WRITE_CANONICAL, "evidenceDigest": evidence_digest_of(WRITE_CANONICAL)}})
    dec("negative-zero-top-level", "spec-phase3 §2.2 row 2",
        "The text `-0`: strict-JSON check (row 2) comes before the object check (row 3).",
        {"evidenceJson": "-0"}, refused("evidence_not_strict_json"))

    # --- rule 3: evidence_not_object ----------------------------------------------------------
    bad("not-object-number", "spec-phase3 §2.2 row 3; spec-phase3 §7 item 2", "The value 42: evidence_not_object.",
        42, "evidence_not_object")
    bad("not-object-array", "spec-phase3 §2.2 row 3", "An array: evidence_not_object.", [WRITE_RECORD],
        "evidence_not_object")
    bad("not-object-null", "spec-phase3 §2.2 row 3", "null: evidence_not_object.", None, "evidence_not_object")
    dec("not-object-text", "spec-phase3 §2.2 row 3", "The text `\"x\"` (a JSON string): evidence_not_object.",
        {"evidenceJson": '"x"'}, refused("evidence_not_object"))

    # --- rule 4: evidence_protocol_unsupported ------------------------------------------------
    bad("protocol-v2", "spec-phase3 §2.2 row 4; spec-phase3 §7 item 2", "protocol file_evidence_v2: unsupported.",
        with_(WRITE_RECORD, protocol="file_evidence_v2"), "evidence_protocol_unsupported")
    bad("protocol-absent", "spec-phase3 §2.2 row 4", "No protocol key: unsupported (not missing_key).",
        without(WRITE_RECORD, "protocol"), "evidence_protocol_unsupported")
    bad("protocol-v2-with-new-key", "spec-phase3 §2.2 row 4",
        "A newer record with a key v1 does not know is unsupported, not unknown_key (row 4 before row 5).",
        with_(WRITE_RECORD, protocol="file_evidence_v2", newField=1), "evidence_protocol_unsupported")

    # --- rules 5 and 6: unknown and missing keys ------------------------------------------------
    bad("unknown-key", "spec-phase3 §2.2 row 5; spec-phase3 §7 item 3", "A valid record plus key x: evidence_unknown_key.",
        with_(WRITE_RECORD, x=1), "evidence_unknown_key")
    bad("missing-result", "spec-phase3 §2.2 row 6; spec-phase3 §7 item 3", "Without result: evidence_missing_key.",
        without(WRITE_RECORD, "result"), "evidence_missing_key")
    bad("unknown-before-missing", "spec-phase3 §2.2 rows 5-6",
        "An unknown key and a missing key: unknown_key wins (row 5 before row 6).",
        with_(without(WRITE_RECORD, "turnId"), x=1), "evidence_unknown_key")
    bad("missing-before-identity", "spec-phase3 §2.2 rows 6-7",
        "A missing key and an empty operationId: missing_key wins (row 6 before row 7).",
        with_(without(WRITE_RECORD, "result"), operationId=""), "evidence_missing_key")

    # --- rule 7: identity ----------------------------------------------------------------------
    bad("identity-empty-operation-id", "spec-phase3 §2.2 row 7; spec-phase3 §7 item 4", "operationId \"\": identity invalid.",
        with_(WRITE_RECORD, operationId=""), "evidence_identity_invalid")
    bad("identity-number-call-event-id", "spec-phase3 §2.2 row 7", "callEventId 7 (not a string): identity invalid.",
        with_(WRITE_RECORD, callEventId=7), "evidence_identity_invalid")
    bad("identity-null-session-id", "spec-phase3 §2.2 row 7", "sessionId null: identity invalid.",
        with_(WRITE_RECORD, sessionId=None), "evidence_identity_invalid")

    # --- rule 8: tool ----------------------------------------------------------------------------
    bad("tool-bash", "spec-phase3 §2.2 row 8; spec-phase3 §7 item 4", "toolName Bash: evidence_tool_unsupported.",
        with_(WRITE_RECORD, toolName="Bash"), "evidence_tool_unsupported")
    bad("tool-lowercase-write", "spec-phase3 §2.2 row 8", "toolName write (the names are exact): unsupported.",
        with_(WRITE_RECORD, toolName="write"), "evidence_tool_unsupported")

    # --- rule 9: transform ---------------------------------------------------------------------------
    bad("transform-of-another-tool", "spec-phase3 §2.2 row 9; spec-phase3 §7 item 4",
        "Edit with write_whole_file_v1: evidence_transform_unsupported.",
        with_(EDIT_RECORD, transform="write_whole_file_v1"), "evidence_transform_unsupported")
    bad("transform-unknown", "spec-phase3 §2.2 row 9", "transform write_whole_file_v2 (not a §1.4 name): unsupported.",
        with_(WRITE_RECORD, transform="write_whole_file_v2"), "evidence_transform_unsupported")
    bad("transform-not-string", "spec-phase3 §2.2 row 9", "transform 1 (not a string): unsupported.",
        with_(WRITE_RECORD, transform=1), "evidence_transform_unsupported")

    # --- rule 10: canonicalArgsHash ---------------------------------------------------------------
    bad("args-hash-uppercase", "spec-phase3 §2.2 row 10; spec-phase3 §7 item 5",
        "canonicalArgsHash in uppercase hex is not a sha256-digest: evidence_digest_invalid.",
        with_(WRITE_RECORD, canonicalArgsHash="sha256:" + F.WRITE_NOTES_HASH[7:].upper()), "evidence_digest_invalid")
    bad("args-hash-short", "spec-phase3 §2.2 row 10", "canonicalArgsHash with 63 hex characters: digest invalid.",
        with_(WRITE_RECORD, canonicalArgsHash=F.WRITE_NOTES_HASH[:-1]), "evidence_digest_invalid")

    # --- rule 11: workspaceIdentity --------------------------------------------------------------
    bad("workspace-v2", "spec-phase3 §2.2 row 11; spec-phase3 §7 item 5", "workspace:v2:<uuid>: evidence_workspace_invalid.",
        with_(WRITE_RECORD, workspaceIdentity=WORKSPACE.replace(":v1:", ":v2:")), "evidence_workspace_invalid")
    bad("workspace-uuid-version-0", "spec-phase3 §2.2 row 11",
        "A UUID whose version digit is 0 is not a spec 20 §6.1 UUID: evidence_workspace_invalid.",
        with_(WRITE_RECORD, workspaceIdentity="workspace:v1:123e4567-e89b-02d3-a456-426614174000"),
        "evidence_workspace_invalid")
    bad("workspace-bare-uuid", "spec-phase3 §2.2 row 11", "A UUID without the workspace:v1: prefix: invalid.",
        with_(WRITE_RECORD, workspaceIdentity=WORKSPACE.removeprefix("workspace:v1:")), "evidence_workspace_invalid")

    # --- rule 12: targetPath (§1.5) ----------------------------------------------------------------
    for slug, path, what in (
        ("dotdot", "a/../b", "a `..` component"),
        ("absolute", "/a", "a leading `/`"),
        ("empty-component", "a//b", "an empty component"),
        ("dot-component", "./a", "a `.` component"),
        ("trailing-slash", "a/", "a trailing `/` (an empty last component)"),
        ("git", ".git/x", "the reserved first component .git"),
        ("runtime-sqlite-uppercase", "RUNTIME.SQLITE", "the reserved name runtime.sqlite, compared case-insensitively"),
        ("maka-dir", ".maka/scripts/x", "the reserved first component .maka"),
        ("backslash", "a\\b", "a backslash"),
        ("nul", "a\u0000b", "a NUL"),
        ("empty", "", "the empty path"),
        ("component-256-bytes", "d/" + "x" * 256, "a component of 256 UTF-8 bytes"),
        ("path-4097-bytes", "/".join(["y" * 255] * 16) + "/" + "z", "4097 UTF-8 bytes in all"),
    ):
        bad(f"target-{slug}", "spec-phase3 §1.5; spec-phase3 §2.2 row 12; spec-phase3 §7 item 6",
            f"targetPath with {what}: evidence_target_invalid.", with_(WRITE_RECORD, targetPath=path),
            "evidence_target_invalid")
    deep_ok = with_(WRITE_RECORD, targetPath="src/.git-notes/x.txt")
    dec("target-reserved-name-deeper-is-fine", "spec-phase3 §1.5",
        "Only the first component is checked against the reserved names: src/.git-notes/x.txt is a canonical target.",
        {"evidence": deep_ok}, decoded(deep_ok))
    drive = with_(WRITE_RECORD, targetPath="C:x")
    dec("target-drive-letter-is-a-name", "spec-phase3 §1.5; spec-phase3 §2.2 row 12",
        "§1.5's syntax list has no drive forms: C:x is a canonical target (a file name on POSIX).",
        {"evidence": drive}, decoded(drive))
    dec("target-lone-surrogate", "spec-phase3 §1.5; spec-phase3 §2.2 row 12",
        "A targetPath holding a lone surrogate (JSON text \\ud800) is not valid Unicode: evidence_target_invalid.",
        {"evidenceJson": WRITE_CANONICAL.replace('"targetPath":"notes.txt"', '"targetPath":"a\\ud800b"')},
        refused("evidence_target_invalid"))
    long_ok = with_(WRITE_RECORD, targetPath="d/" + "x" * 255)
    dec("target-component-255-bytes", "spec-phase3 §1.5", "A component of exactly 255 bytes is allowed.",
        {"evidence": long_ok}, decoded(long_ok))

    # --- rule 13: states ---------------------------------------------------------------------------
    for slug, change, what in (
        ("expected-after-absent", {"expectedAfter": {"type": "absent"}}, "expectedAfter absent"),
        ("size-fraction", {"expectedAfter": regular(5, AFTER_DIGEST) | {"size": 1.5}}, "size 1.5"),
        ("size-negative", {"expectedAfter": regular(5, AFTER_DIGEST) | {"size": -1}}, "size -1"),
        ("size-string", {"expectedAfter": regular(5, AFTER_DIGEST) | {"size": "5"}}, "size \"5\""),
        ("mode-4096", {"expectedAfter": regular(5, AFTER_DIGEST, 4096)}, "mode 4096"),
        ("mode-negative", {"expectedAfter": regular(5, AFTER_DIGEST, -1)}, "mode -1"),
        ("extra-key", {"expectedAfter": regular(5, AFTER_DIGEST) | {"links": 1}}, "an extra key links"),
        ("missing-digest", {"expectedAfter": {"type": "regular", "size": 5}}, "no contentDigest"),
        ("digest-uppercase", {"expectedAfter": regular(5, "sha256:" + AFTER_DIGEST[7:].upper())}, "an uppercase digest"),
        ("type-directory", {"before": {"type": "directory"}}, "before of type directory"),
        ("absent-with-size", {"before": {"type": "absent", "size": 0}}, "an absent before with a size"),
        ("before-not-object", {"before": None}, "before null"),
    ):
        bad(f"state-{slug}", "spec-phase3 §1.3; spec-phase3 §2.2 row 13; spec-phase3 §7 item 7",
            f"A file state with {what}: evidence_state_invalid.", with_(WRITE_RECORD, **change), "evidence_state_invalid")

    # --- rule 14: size limit --------------------------------------------------------------------------
    bad("size-over-limit", "spec-phase3 §2.2 row 14; spec-phase3 §7 item 8",
        "expectedAfter.size = MAX_FILE_BYTES + 1 (16777217): evidence_size_limit.",
        with_(WRITE_RECORD, expectedAfter=regular(MAX_FILE_BYTES + 1, AFTER_DIGEST)), "evidence_size_limit")
    bad("before-size-over-limit", "spec-phase3 §2.2 row 14",
        "before.size over the limit: evidence_size_limit.",
        with_(APPEND_RECORD, before=regular(MAX_FILE_BYTES + 1, sha256_of(b"ab"))), "evidence_size_limit")
    bad("state-before-size-limit", "spec-phase3 §2.2 rows 13-14",
        "An invalid expectedAfter and an oversized before: state_invalid wins (row 13 before row 14).",
        with_(APPEND_RECORD, before=regular(MAX_FILE_BYTES + 1, sha256_of(b"ab")), expectedAfter={"type": "absent"}),
        "evidence_state_invalid")

    # --- rule 15: transform conflict -------------------------------------------------------------------
    bad("edit-before-absent", "spec-phase3 §2.2 row 15; spec-phase3 §7 item 9",
        "Edit with before absent: evidence_transform_conflict.", with_(EDIT_RECORD, before={"type": "absent"}),
        "evidence_transform_conflict")
    bad("append-shrinks", "spec-phase3 §2.2 row 15; spec-phase3 §7 item 9",
        "Append whose expectedAfter.size is below before.size: evidence_transform_conflict.",
        with_(APPEND_RECORD, expectedAfter=regular(1, sha256_of(b"a"))), "evidence_transform_conflict")
    bad("mode-differs-from-before", "spec-phase3 §2.2 row 15",
        "expectedAfter.mode 384 with before.mode 420: evidence_transform_conflict.",
        with_(EDIT_RECORD, expectedAfter=regular(11, sha256_of(b"hello there"), 384)), "evidence_transform_conflict")
    bad("created-mode-not-420", "spec-phase3 §1.4; spec-phase3 §2.2 row 15",
        "A created file (before absent) with expectedAfter.mode 384 (not 420): evidence_transform_conflict.",
        with_(WRITE_RECORD, expectedAfter=regular(5, AFTER_DIGEST, 384)), "evidence_transform_conflict")

    # --- rule 16: result -------------------------------------------------------------------------------
    bad("result-array", "spec-phase3 §2.2 row 16; spec-phase3 §7 item 10", "result []: evidence_result_invalid.",
        with_(WRITE_RECORD, result=[]), "evidence_result_invalid")
    bad("result-string", "spec-phase3 §2.2 row 16", "result \"ok\": evidence_result_invalid.",
        with_(WRITE_RECORD, result="ok"), "evidence_result_invalid")
    bad("conflict-before-result", "spec-phase3 §2.2 rows 15-16",
        "Edit with before absent and result []: transform_conflict wins (row 15 before row 16).",
        with_(EDIT_RECORD, before={"type": "absent"}, result=[]), "evidence_transform_conflict")

    # --- §2.4 encode ---------------------------------------------------------------------------------
    vs.append(vec(f"{G}/encode-write", "spec-phase3 §2.4; spec-phase3 §2.1",
                  "Encoding family W's record gives the hand-written canonical text and its digest.",
                  "evidence_encode", {"evidence": WRITE_RECORD},
                  {"resultSubset": {"evidenceJson": WRITE_CANONICAL, "evidenceDigest": evidence_digest_of(WRITE_CANONICAL)}}))
    for slug, record, code in (("unknown-key", with_(WRITE_RECORD, x=1), "evidence_unknown_key"),
                               ("result-array", with_(WRITE_RECORD, result=[]), "evidence_result_invalid"),
                               ("edit-before-absent", with_(EDIT_RECORD, before={"type": "absent"}),
                                "evidence_transform_conflict")):
        vs.append(vec(f"{G}/encode-refuses-{slug}", "spec-phase3 §2.4; spec-phase3 §2.2",
                      f"Encode runs the §2.2 checks and fails with their code ({code}): an invalid record is never written.",
                      "evidence_encode", {"evidence": record}, {"error": {"code": code}}))

    # --- §2.3 binding against family W's T1 events ----------------------------------------------------
    def bind(slug: str, spec: str, description: str, record: Any, call: dict[str, Any], dispatch: dict[str, Any],
             expect: dict[str, Any]) -> None:
        vs.append(vec(f"{G}/binding-{slug}", spec, description, "evidence_binding",
                      {"evidence": record, "callEvent": call, "dispatchEvent": dispatch}, expect))

    call, dispatch = F.w_call(), F.w_dispatch()
    bind("family-w-binds", "spec-phase3 §2.3", "Family W's record against family W's call C and dispatch D binds.",
         WRITE_RECORD, call, dispatch, {"resultSubset": {"ok": True}})
    bind("other-operation", "spec-phase3 §2.3 row 1; spec-phase3 §7 item 13",
         "The record of operation-2 against the T1 events of operation-1: evidence_operation_conflict.",
         with_(WRITE_RECORD, operationId="operation-2"), call, dispatch, refused("evidence_operation_conflict"))
    bind("other-call-event", "spec-phase3 §2.3 row 1", "callEventId naming another event: evidence_operation_conflict.",
         with_(WRITE_RECORD, callEventId="call-event-2"), call, dispatch, refused("evidence_operation_conflict"))
    bind("other-run", "spec-phase3 §2.3 row 1", "runId of another run: evidence_operation_conflict.",
         with_(WRITE_RECORD, runId="run-2"), call, dispatch, refused("evidence_operation_conflict"))
    bind("other-tool-name", "spec-phase3 §2.3 row 1",
         "An Append record (valid on its own) against a Write call: evidence_operation_conflict.",
         with_(APPEND_RECORD, targetPath="notes.txt", result={"path": "notes.txt", "bytesAppended": 5}),
         call, dispatch, refused("evidence_operation_conflict"))
    bind("never-auto-retry", "spec-phase3 §2.3 row 2; spec-phase3 §7 item 14",
         "A dispatch with recoveryMode never_auto_retry: evidence_recovery_mode_conflict.",
         WRITE_RECORD, call, F.w_dispatch(recovery_mode="never_auto_retry"), refused("evidence_recovery_mode_conflict"))
    bind("write-digest-not-of-content", "spec-phase3 §2.3 row 3; spec-phase3 §7 item 15",
         "Write evidence whose contentDigest is not SHA-256 of args.content: evidence_args_conflict.",
         with_(WRITE_RECORD, expectedAfter=regular(5, sha256_of(b"other"))), call, dispatch,
         refused("evidence_args_conflict"))
    bind("write-size-not-of-content", "spec-phase3 §2.3 row 3",
         "Write evidence whose expectedAfter.size is not len(args.content): evidence_args_conflict.",
         with_(WRITE_RECORD, expectedAfter=regular(6, AFTER_DIGEST)), call, dispatch, refused("evidence_args_conflict"))
    bind("write-bytes-written-off-by-one", "spec-phase3 §2.3 row 4; spec-phase3 §7 item 16",
         "Write evidence with bytesWritten 6 for 5 bytes: evidence_result_conflict.",
         with_(WRITE_RECORD, result={"path": "notes.txt", "bytesWritten": 6}), call, dispatch,
         refused("evidence_result_conflict"))
    bind("write-result-extra-key", "spec-phase3 §2.3 row 4; spec-phase3 §1.4",
         "A result with a key the §1.4 row does not have: evidence_result_conflict.",
         with_(WRITE_RECORD, result={"path": "notes.txt", "bytesWritten": 5, "ok": True}), call, dispatch,
         refused("evidence_result_conflict"))
    bind("record-does-not-decode", "spec-phase3 §2.3; spec-phase3 §2.2 row 5",
         "A record that does not decode answers its §2.2 code (evidence_unknown_key) before any binding rule.",
         with_(WRITE_RECORD, x=1), call, dispatch, refused("evidence_unknown_key"))
    bind("operation-before-mode", "spec-phase3 §2.3 rows 1-2",
         "Another operation and a never_auto_retry dispatch: operation_conflict wins (row 1 before row 2).",
         with_(WRITE_RECORD, operationId="operation-2"), call, F.w_dispatch(recovery_mode="never_auto_retry"),
         refused("evidence_operation_conflict"))

    # Append / Edit calls bound to family W's identity (the hash is bound by rule 1, not recomputed).
    def t1_for(name: str, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        c, d = F.w_call(), F.w_dispatch()
        c["content"] = {"kind": "function_call", "id": "provider-call-1", "name": name, "args": args}
        d["actions"]["toolDispatch"]["toolName"] = name
        return c, d

    append_call = t1_for("Append", {"path": "log.txt", "content": "cd"})
    bind("append-binds", "spec-phase3 §2.3; spec-phase3 §1.4 row Append",
         "Append of \"cd\" to a 2-byte file, expectedAfter 4 bytes, bytesAppended 2: binds.",
         APPEND_RECORD, *append_call, {"resultSubset": {"ok": True}})
    bind("append-size-arithmetic", "spec-phase3 §2.3 row 3",
         "Append whose expectedAfter.size is not before.size + len(C): evidence_args_conflict.",
         with_(APPEND_RECORD, expectedAfter=regular(5, sha256_of(b"abcde"))), *append_call,
         refused("evidence_args_conflict"))
    edit_call = t1_for("Edit", {"path": "a.txt", "old": "world", "new": "there"})
    bind("edit-binds", "spec-phase3 §2.3; spec-phase3 §1.4 row Edit",
         "Edit replacing \"world\" by \"there\" in 11 bytes, result {path, replacements: 1}: binds.",
         EDIT_RECORD, *edit_call, {"resultSubset": {"ok": True}})
    bind("edit-old-longer-than-before", "spec-phase3 §2.3 row 3",
         "Edit whose before.size is below len(old) (the text cannot occur): evidence_args_conflict.",
         with_(EDIT_RECORD, before=regular(3, sha256_of(b"abc"), 420),
               expectedAfter=regular(3, sha256_of(b"abc"), 420)), *edit_call, refused("evidence_args_conflict"))
    bind("edit-empty-old", "spec-phase3 §2.3 row 3", "Edit with an empty old: evidence_args_conflict.",
         EDIT_RECORD, *t1_for("Edit", {"path": "a.txt", "old": "", "new": "there"}), refused("evidence_args_conflict"))
    bind("edit-result-path-as-shown", "spec-phase3 §2.3 row 4; spec-phase3 §1.4",
         "The result's path is the argument path with `.` components dropped: ./a.txt is shown as a.txt, so a record "
         "saying ./a.txt is evidence_result_conflict.",
         with_(EDIT_RECORD, result={"path": "./a.txt", "replacements": 1}),
         *t1_for("Edit", {"path": "./a.txt", "old": "world", "new": "there"}), refused("evidence_result_conflict"))

    description = ("The Phase 3 file evidence codec (docs/spec-phase3.md §1.2-§1.5, §2.1-§2.4): one decode vector per "
                   "validation code of §2.2 and the order of its checks, canonical text and evidenceDigest of worked "
                   "records, encode, and the binding rules of §2.3 against family W's T1 events.")
    return G, description, vs
