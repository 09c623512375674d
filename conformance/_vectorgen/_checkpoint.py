"""Vectors of ``checkpoint.json``: the WorkspaceBoundary codec and the checkpoint policy hash
(docs/spec-phase4.md §1.1–§1.2, §2.1, §2.4–§2.5, §12 items 1–5).

The worked boundary of §1.2 (its bytes are exact), decoded and re-encoded; each rejection of
§12 items 4–5 through both encode and decode, with the JSON pointer §1.2 requires; the §2.5
default policy and its pinned hash, which this module recomputes with :mod:`hashlib` from the
§2.5 bytes and the §2.4 construction before writing it (a check of the transcription, not a
source of values); a one-limit change (its hash computed the same way); and the policy
refusals of §12 item 2.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ._common import vec
from ._evidence import lp_digest

G = "checkpoint"

#: spec-phase4 §1.2, the worked example (bytes exact).
EXAMPLE = ('{"checkpointPolicyHash":"sha256:1111111111111111111111111111111111111111111111111111111111111111",'
           '"checkpointRef":"refs/maka/checkpoints/123e4567-e89b-42d3-a456-426614174000/1767225600000-'
           '0123456789abcdef0123456789abcdef","immutableRuntimeDigest":"sha256:22222222222222222222222222222222'
           '22222222222222222222222222222222","immutableRuntimeHighWater":7,"workspaceEpoch":1,'
           '"workspaceIdentity":"workspace:v1:123e4567-e89b-42d3-a456-426614174000"}')
BOUNDARY: dict[str, Any] = json.loads(EXAMPLE)

#: spec-phase4 §2.5: the canonical default policy document (bytes exact) and its pinned hash.
DEFAULT_POLICY_TEXT = (
    '{"attributes":"reject_conversion","emptyDirectories":"not_recorded","excludedPaths":[".maka-effects.jsonl",'
    '".maka-workspace.json",".maka/","runtime.sqlite","runtime.sqlite-journal","runtime.sqlite-shm",'
    '"runtime.sqlite-wal"],"executableBit":"recorded","ignoreRules":"gitignore_files_and_info_exclude",'
    '"ignoredFiles":"excluded","maxFileBytes":104857600,"maxFiles":100000,"maxTotalBytes":2147483648,'
    '"pathEncoding":"utf8_required","protocol":"maka_checkpoint_policy_v1","specialFiles":"not_recorded",'
    '"submodules":"reject","symlinks":"recorded_as_links","trackedFiles":"worktree_content",'
    '"untrackedFiles":"included_unless_ignored"}'
)
DEFAULT_POLICY_HASH = "sha256:ab23d8c63ab28bcb66cec95a5d51d191a3b21ab579c6058ba3b6eb96386c5eca"
POLICY_DOMAIN = "maka.checkpoint-policy.v1"  # spec-phase4 §2.4
DEFAULT_POLICY: dict[str, Any] = json.loads(DEFAULT_POLICY_TEXT)
if lp_digest(POLICY_DOMAIN, DEFAULT_POLICY_TEXT) != DEFAULT_POLICY_HASH:
    raise SystemExit("checkpoint: the §2.5 policy text or the §2.4 construction was transcribed wrongly")


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(copy.deepcopy(changes))
    return out


def group_checkpoint() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []

    # --- §1.2 round trip (§12 item 3) -------------------------------------------------------------
    vs.append(vec(f"{G}/boundary-decode-example", "spec-phase4 §1.2; spec-phase4 §12 item 3",
                  "The §1.2 worked example decodes to its six keys, values unchanged.",
                  "boundary_decode", {"text": EXAMPLE}, {"resultSubset": {"boundary": BOUNDARY}}))
    vs.append(vec(f"{G}/boundary-encode-example", "spec-phase4 §1.2; spec-phase4 §12 item 3",
                  "The example's boundary, keys given in reverse order, encodes to exactly the §1.2 bytes.",
                  "boundary_encode", {"boundary": dict(reversed(list(BOUNDARY.items())))},
                  {"resultSubset": {"canonical": EXAMPLE}}))
    upper = EXAMPLE.replace("workspace:v1:123e4567-e89b-42d3-a456-426614174000", "workspace:v1:123E4567-E89B-42D3-A456-426614174000")
    vs.append(vec(f"{G}/boundary-identity-kept-verbatim", "spec-phase4 §1.1; spec-phase4 §1.2",
                  "An identity with uppercase hex is valid and kept verbatim, never case-folded (decode never normalises).",
                  "boundary_decode", {"text": upper}, {"resultSubset": {"boundary": json.loads(upper)}}))
    vs.append(vec(f"{G}/boundary-high-water-max-safe", "spec-phase4 §1.1",
                  "immutableRuntimeHighWater 2^53−1 (9007199254740991) is the largest valid integer.",
                  "boundary_encode", {"boundary": _with(BOUNDARY, immutableRuntimeHighWater=2**53 - 1)},
                  {"resultSubset": {"canonical": EXAMPLE.replace('"immutableRuntimeHighWater":7',
                                                                 '"immutableRuntimeHighWater":9007199254740991')}}))

    # --- §1.2 rejections (§12 items 4–5), through encode and decode ---------------------------------
    ref = BOUNDARY["checkpointRef"]
    bad: list[tuple[str, Any, str, str]] = [
        ("extra-key", _with(BOUNDARY, extra=1), "/extra", "an extra key"),
        ("missing-key", {k: v for k, v in BOUNDARY.items() if k != "workspaceEpoch"}, "/workspaceEpoch", "a missing key"),
        ("epoch-0", _with(BOUNDARY, workspaceEpoch=0), "/workspaceEpoch", "workspaceEpoch 0"),
        ("epoch-true", _with(BOUNDARY, workspaceEpoch=True), "/workspaceEpoch", "workspaceEpoch true"),
        ("epoch-fraction", _with(BOUNDARY, workspaceEpoch=1.5), "/workspaceEpoch", "workspaceEpoch 1.5"),
        ("epoch-string", _with(BOUNDARY, workspaceEpoch="1"), "/workspaceEpoch", "workspaceEpoch \"1\""),
        ("epoch-2-53", _with(BOUNDARY, workspaceEpoch=2**53), "/workspaceEpoch", "workspaceEpoch 2^53"),
        ("ref-heads-main", _with(BOUNDARY, checkpointRef="refs/heads/main"), "/checkpointRef", "checkpointRef refs/heads/main"),
        ("ref-12-digits", _with(BOUNDARY, checkpointRef=ref.replace("/1767225600000-", "/176722560000-")), "/checkpointRef",
         "a checkpointRef with 12 digits"),
        ("digest-uppercase", _with(BOUNDARY, immutableRuntimeDigest="sha256:" + "A" * 64), "/immutableRuntimeDigest",
         "an uppercase immutableRuntimeDigest"),
        ("identity-v2", _with(BOUNDARY, workspaceIdentity="workspace:v2:123e4567-e89b-42d3-a456-426614174000"),
         "/workspaceIdentity", "a workspace:v2 identity"),
        ("not-an-object", [], "", "an array (not an object: the pointer is \"\")"),
    ]
    for slug, value, pointer, what in bad:
        spec = "spec-phase4 §1.1; spec-phase4 §1.2; spec-phase4 §12 item " + ("5" if "ref" in slug else "4")
        error = {"error": {"code": "invalid_workspace_boundary", "detail": pointer}}
        where = pointer or '""'
        vs.append(vec(f"{G}/boundary-encode-rejects-{slug}", spec,
                      f"Encoding a boundary with {what} fails with invalid_workspace_boundary at {where}.",
                      "boundary_encode", {"boundary": value}, error))
        vs.append(vec(f"{G}/boundary-decode-rejects-{slug}", spec,
                      f"Decoding a boundary with {what} fails with invalid_workspace_boundary at {where}.",
                      "boundary_decode", {"text": json.dumps(value, separators=(",", ":"))}, error))
    vs.append(vec(f"{G}/boundary-decode-rejects-negative-zero", "spec-phase4 §1.1; spec-phase4 §1.2",
                  "workspaceEpoch -0 (JSON text) is not an integer ≥ 1: invalid_workspace_boundary at /workspaceEpoch.",
                  "boundary_decode", {"text": EXAMPLE.replace('"workspaceEpoch":1', '"workspaceEpoch":-0')},
                  {"error": {"code": "invalid_workspace_boundary", "detail": "/workspaceEpoch"}}))
    vs.append(vec(f"{G}/boundary-decode-rejects-not-json", "spec-phase4 §1.2",
                  "Text that is not one JSON document is not a boundary: invalid_workspace_boundary.",
                  "boundary_decode", {"text": EXAMPLE[:-1]}, {"error": {"code": "invalid_workspace_boundary"}}))

    # --- §2.4 / §2.5 policy hash (§12 items 1–2) ------------------------------------------------------
    vs.append(vec(f"{G}/policy-hash-default", "spec-phase4 §2.4; spec-phase4 §2.5; spec-phase4 §12 item 1",
                  "The reference's default policy (§2.5) hashes to the pinned value.",
                  "policy_hash", {"policy": DEFAULT_POLICY}, {"resultSubset": {"policyHash": DEFAULT_POLICY_HASH}}))
    vs.append(vec(f"{G}/policy-hash-key-order", "spec-phase4 §2.4",
                  "The same document with its keys in reverse order has the same hash (SJ sorts the keys).",
                  "policy_hash", {"policy": dict(reversed(list(DEFAULT_POLICY.items())))},
                  {"resultSubset": {"policyHash": DEFAULT_POLICY_HASH}}))
    more_files = DEFAULT_POLICY_TEXT.replace('"maxFiles":100000', '"maxFiles":100001')
    vs.append(vec(f"{G}/policy-hash-max-files-plus-one", "spec-phase4 §2.4; spec-phase4 §12 item 1",
                  "maxFiles one higher gives another hash: SHA-256 of LP(\"maka.checkpoint-policy.v1\") ‖ LP(SJ(policy)).",
                  "policy_hash", {"policy": json.loads(more_files)},
                  {"resultSubset": {"policyHash": lp_digest(POLICY_DOMAIN, more_files)}}))
    paths = DEFAULT_POLICY["excludedPaths"]
    for slug, excluded, what in (("unsorted", list(reversed(paths)), "unsorted"),
                                 ("duplicated", paths + paths[-1:], "duplicated"),
                                 ("absolute", ["/etc"] + paths, "absolute"),
                                 ("dotdot", paths + ["x/../y"], "with a .. component")):
        vs.append(vec(f"{G}/policy-rejects-excluded-{slug}", "spec-phase4 §2.1; spec-phase4 §2.4; spec-phase4 §12 item 2",
                      f"A policy whose excludedPaths is {what} is refused (invalid_checkpoint_policy), never hashed.",
                      "policy_hash", {"policy": _with(DEFAULT_POLICY, excludedPaths=excluded)},
                      {"error": {"code": "invalid_checkpoint_policy"}}))
    for slug, policy, what in (
        ("extra-key", _with(DEFAULT_POLICY, extra=1), "an extra key"),
        ("protocol-v2", _with(DEFAULT_POLICY, protocol="maka_checkpoint_policy_v2"), "another protocol"),
        ("max-files-0", _with(DEFAULT_POLICY, maxFiles=0), "maxFiles 0"),
        ("symlinks-followed", _with(DEFAULT_POLICY, symlinks="followed"), "a v1 value changed (symlinks)"),
        ("not-an-object", [], "an array"),
    ):
        vs.append(vec(f"{G}/policy-rejects-{slug}", "spec-phase4 §2.1; spec-phase4 §2.4",
                      f"A policy document with {what} breaks §2.1: invalid_checkpoint_policy.",
                      "policy_hash", {"policy": policy}, {"error": {"code": "invalid_checkpoint_policy"}}))

    description = ("The WorkspaceBoundary codec (docs/spec-phase4.md §1.1-§1.2: the worked example's bytes, rejections "
                   "with their JSON pointer) and the checkpoint policy hash (§2.4 over the §2.5 default policy, "
                   "refusals of §2.1), §12 items 1-5.")
    return G, description, vs
