"""What the one-rule checkpoint clauses share: a byte-level snapshot of a directory tree, the
harness's own ``git`` with standard input, a policy document with chosen limits, and an
artifact written by the harness in the exact §3.4 step 8 layout.

Why the harness writes artifacts itself: §3.5 step 5 (``checkpoint_policy_violation``) and
step 3 (``commit_malformed``) concern artifacts a correct carrier never produces — a tree
with a gitlink, an excluded path, a non-UTF-8 name, or more than the policy allows, or a
commit whose layout is not §3.4's. ``git mktree`` and ``git hash-object -t commit`` write
such objects into a real repository; the harness then names them with a ref under
``refs/maka/checkpoints/<uuid>/`` and asks ``checkpoint.verify``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.clauses import ClauseMismatch, expect_ok
from conformance.suite.test_checkpoint import _GIT_ENV, DEFAULT_POLICY
from conformance.suite.test_runtime_crash import call_on

__all__ = [
    "RUN_TIMEOUT",
    "checkpoint_ref",
    "expect_error",
    "expect_same_tree",
    "git_bytes",
    "policy_hash_of",
    "policy_with",
    "tree_snapshot",
    "write_artifact",
]

RUN_TIMEOUT = 120.0


def git_bytes(ws: str | Path, *args: str, stdin: bytes | None = None, index: str | None = None) -> bytes:
    """The harness's hermetic ``git`` (as in ``test_checkpoint.git``) with bytes in and out;
    ``index`` names a private index file (never the user's)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(_GIT_ENV)
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    done = subprocess.run(["git", "-C", str(ws), *args], env=env, input=stdin if stdin is not None else b"",
                          capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise ClauseMismatch(f"harness git {' '.join(args)} failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


def tree_snapshot(root: str | Path) -> dict[str, Any]:
    """Every path under ``root`` (``.git`` and its objects included): kind, mode, content hash or
    link target. Reading is not writing (§3.5 "verify writes nothing anywhere"; §3.9): a refusal
    must leave this identical, object database included."""
    out: dict[str, Any] = {}
    base = os.fspath(root)
    for folder, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, base)
            info = os.lstat(path)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as handle:
                    out[rel] = (oct(info.st_mode & 0o7777), hashlib.sha256(handle.read()).hexdigest())
        for name in dirs:
            rel = os.path.relpath(os.path.join(folder, name), base)
            out.setdefault(rel + "/", ("dir",))
    return out


def expect_same_tree(before: Mapping[str, Any], root: str | Path, what: str) -> None:
    after = tree_snapshot(root)
    changed = sorted(set(before) ^ set(after) | {k for k in set(before) & set(after) if before[k] != after[k]})
    if changed:
        raise ClauseMismatch(f"{what} changed files under {root} (spec-phase4 §3.9: reading is not writing)",
                             evidence={"changed": changed[:50]})


def expect_error(reply: Any, code: str, what: str, **details: str) -> Mapping[str, Any]:
    """An ``ok: false`` with exactly ``code`` (and the given ``details`` values): codes, never prose."""
    if reply.ok:
        raise ClauseMismatch(f"{what}: answered ok, expected {code}", evidence={"result": reply.result})
    error = reply.error or {}
    if error.get("code") != code:
        raise ClauseMismatch(f"{what}: answered {error.get('code')}, expected {code}", evidence={"error": error})
    found = error.get("details") or {}
    for key, value in details.items():
        if found.get(key) != value:
            raise ClauseMismatch(f"{what}: details.{key} is {found.get(key)!r}, expected {value!r}",
                                 evidence={"error": error})
    return error


def policy_with(**limits: int) -> dict[str, Any]:
    """The §2.5 document with other limits (``maxFiles``, ``maxFileBytes``, ``maxTotalBytes``)."""
    return {**DEFAULT_POLICY, **limits}


def policy_hash_of(maka: Any, policy: Mapping[str, Any]) -> str:
    return str(expect_ok(call_on(maka, "checkpoint.policy_hash", {"policy": dict(policy)}),
                         "checkpoint.policy_hash")["policyHash"])


def checkpoint_ref(identity: str, created_ms: int | None = None) -> str:
    """A well-formed §3.4.6 ref of ``identity``'s namespace (the time defaults to now)."""
    millis = int(time.time() * 1000) if created_ms is None else created_ms
    return f"refs/maka/checkpoints/{identity.rsplit(':', 1)[1]}/{millis:013d}-{secrets.token_hex(16)}"


def write_artifact(ws: str, identity: str, policy_hash: str, entries: Sequence[tuple[str, bytes, bytes]], *,
                   commit_text: bytes | None = None, ref: str | None = None) -> tuple[str, str]:
    """Write a tree of ``(mode, path bytes, content or oid)`` entries and a commit in the §3.4
    step 8 layout (or ``commit_text`` with ``{tree}`` replaced), name it with a ref; returns
    ``(ref, commit oid)``. Mode ``160000`` takes a commit oid (a gitlink), the others content."""
    lines = b""
    for mode, path, payload in entries:
        oid = payload if mode == b"160000" else git_bytes(ws, "hash-object", "-w", "--stdin", stdin=payload).strip()
        lines += mode + b" " + oid + b"\t" + path + b"\0"
    with tempfile.TemporaryDirectory() as scratch:  # a private index: nested paths, any mode
        index = os.path.join(scratch, "index")
        git_bytes(ws, "update-index", "--add", "-z", "--index-info", stdin=lines, index=index)
        tree = git_bytes(ws, "write-tree", "--missing-ok", index=index).strip().decode("ascii")
    base = git_bytes(ws, "rev-parse", "--verify", "HEAD").strip().decode("ascii")
    text = commit_text if commit_text is not None else (
        b"tree {tree}\n"
        b"author Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
        b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
        b"\n"
        b"maka checkpoint v1\n"
        b"\n"
        b"Maka-Checkpoint-Policy: " + policy_hash.encode() + b"\n"
        b"Maka-Workspace-Identity: " + identity.encode() + b"\n"
        b"Maka-Base-Commit: " + base.encode() + b"\n")
    commit = git_bytes(ws, "hash-object", "-t", "commit", "-w", "--stdin",
                       stdin=text.replace(b"{tree}", tree.encode())).strip().decode("ascii")
    name = ref or checkpoint_ref(identity)
    git_bytes(ws, "update-ref", name, commit, "0" * len(commit))
    return name, commit
