"""The checkpoint policy: what a capture takes, and its hash (spec-phase4 §2).

Why a hashed document: a workspace boundary says "the workspace held this tree *under this
policy*". If the rule of what is captured (ignored files, the runtime's own files, symlinks,
limits) could change without changing the boundary, a later verify or compare would judge an
old artifact by a new rule and call honest content drift — or miss real drift. So every rule
is a value in one JSON document, and the boundary carries ``checkpointPolicyHash`` =
``sha256(LP("maka.checkpoint-policy.v1") ‖ LP(SJ(document)))`` (§2.4).

In v1 only ``excludedPaths`` and the three limits may vary; every other key has exactly one
legal value (it names the rule, so a future rule gets a new value and a new hash).

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._codec import stable_json

__all__ = [
    "DEFAULT_EXCLUDED_PATHS",
    "DEFAULT_POLICY",
    "DEFAULT_POLICY_HASH",
    "FIXED_RULES",
    "POLICY_HASH_DOMAIN",
    "POLICY_PROTOCOL",
    "CheckpointPolicy",
    "decode_policy",
    "exclude_file_text",
    "exclusion_matcher",
    "first_components",
    "is_excluded",
    "policy_document",
    "policy_hash",
]

POLICY_PROTOCOL: Final = "maka_checkpoint_policy_v1"
POLICY_HASH_DOMAIN: Final = "maka.checkpoint-policy.v1"
_MAX_SAFE: Final = 2**53 - 1

#: The keys whose v1 value is fixed (§2.1), with that value.
FIXED_RULES: Final[Mapping[str, str]] = {
    "protocol": POLICY_PROTOCOL,
    "trackedFiles": "worktree_content",
    "untrackedFiles": "included_unless_ignored",
    "ignoredFiles": "excluded",
    "ignoreRules": "gitignore_files_and_info_exclude",
    "symlinks": "recorded_as_links",
    "executableBit": "recorded",
    "emptyDirectories": "not_recorded",
    "specialFiles": "not_recorded",
    "submodules": "reject",
    "attributes": "reject_conversion",
    "pathEncoding": "utf8_required",
}
_LIMIT_KEYS: Final = ("maxFiles", "maxFileBytes", "maxTotalBytes")
_ALL_KEYS: Final = frozenset(FIXED_RULES) | {"excludedPaths", *_LIMIT_KEYS}

#: The reference runtime's own durable state (``maka_ref/_runtime/paths.py`` reserved names,
#: ``.git`` aside — Git never records it): never workspace content (§2.5).
DEFAULT_EXCLUDED_PATHS: Final = (
    ".maka-effects.jsonl",
    ".maka-workspace.json",
    ".maka/",
    "runtime.sqlite",
    "runtime.sqlite-journal",
    "runtime.sqlite-shm",
    "runtime.sqlite-wal",
)


def _path_problem(entry: Any) -> str | None:
    if not isinstance(entry, str) or not entry:
        return "an excluded path is a non-empty string"
    if "\0" in entry or "\n" in entry or "\r" in entry or "\\" in entry:
        return f"excluded path {entry!r} holds NUL, a line break or a backslash"
    body = entry.removesuffix("/")
    if not body or body.startswith("/"):
        return f"excluded path {entry!r} is not a relative path"
    if any(part in ("", ".", "..") for part in body.split("/")):
        return f"excluded path {entry!r} has an empty, '.' or '..' component"
    try:
        entry.encode("utf-8")
    except UnicodeEncodeError:
        return f"excluded path {entry!r} is not UTF-8"
    return None


def _limit_ok(value: Any) -> bool:
    return type(value) is int and 1 <= value <= _MAX_SAFE


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """The variable part of a v1 policy; construct through :func:`decode_policy` or the
    constructor (which validates the same rules)."""

    excluded_paths: tuple[str, ...] = DEFAULT_EXCLUDED_PATHS
    max_files: int = 100_000
    max_file_bytes: int = 100 * 1024 * 1024
    max_total_bytes: int = 2 * 1024 * 1024 * 1024

    def __post_init__(self) -> None:
        paths = self.excluded_paths
        if not isinstance(paths, tuple):
            raise CheckpointError("invalid_checkpoint_policy", "excludedPaths is a tuple of strings")
        for entry in paths:
            problem = _path_problem(entry)
            if problem is not None:
                raise CheckpointError("invalid_checkpoint_policy", problem)
        encoded = [entry.encode("utf-8") for entry in paths]
        if encoded != sorted(set(encoded)):
            raise CheckpointError("invalid_checkpoint_policy", "excludedPaths are sorted by UTF-8 bytes and unique")
        for name, value in (("maxFiles", self.max_files), ("maxFileBytes", self.max_file_bytes),
                            ("maxTotalBytes", self.max_total_bytes)):
            if not _limit_ok(value):
                raise CheckpointError("invalid_checkpoint_policy", f"{name} is an integer in [1, 2^53-1]")


def policy_document(policy: CheckpointPolicy) -> dict[str, Any]:
    """The §2.1 JSON document of ``policy`` (a fresh dict)."""
    return {
        **FIXED_RULES,
        "excludedPaths": list(policy.excluded_paths),
        "maxFiles": policy.max_files,
        "maxFileBytes": policy.max_file_bytes,
        "maxTotalBytes": policy.max_total_bytes,
    }


def decode_policy(document: Any) -> CheckpointPolicy:
    """A policy from its JSON document; anything that breaks §2.1 → ``invalid_checkpoint_policy``."""
    if not isinstance(document, Mapping) or set(document) != _ALL_KEYS:
        raise CheckpointError("invalid_checkpoint_policy", "a policy has exactly the keys of spec-phase4 §2.1")
    for key, value in FIXED_RULES.items():
        if document[key] != value or not isinstance(document[key], str):
            raise CheckpointError("invalid_checkpoint_policy", f"{key} must be {value!r} in policy v1")
    paths = document["excludedPaths"]
    if not isinstance(paths, (list, tuple)):
        raise CheckpointError("invalid_checkpoint_policy", "excludedPaths is an array")
    return CheckpointPolicy(
        excluded_paths=tuple(paths),
        max_files=document["maxFiles"],
        max_file_bytes=document["maxFileBytes"],
        max_total_bytes=document["maxTotalBytes"],
    )


def _lp(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def policy_hash(policy: CheckpointPolicy) -> str:
    """``checkpointPolicyHash`` of spec-phase4 §2.4."""
    body = stable_json(policy_document(policy)).encode("utf-8")
    digest = hashlib.sha256(_lp(POLICY_HASH_DOMAIN.encode("utf-8")) + _lp(body)).hexdigest()
    return f"sha256:{digest}"


def is_excluded(path: str, policy: CheckpointPolicy) -> bool:
    """``path`` (relative, ``/``-separated) is an excluded entry or lies under an excluded directory."""
    for entry in policy.excluded_paths:
        if entry.endswith("/"):
            if path == entry[:-1] or path.startswith(entry):
                return True
        elif path == entry:
            return True
    return False


def exclusion_matcher(policy: CheckpointPolicy) -> Callable[[bytes], bool]:
    """:func:`is_excluded` for UTF-8 path bytes, fast enough for every entry of a large index:
    one C-level ``startswith`` over the entries' first components rules out almost every path."""
    encoded = [entry.encode("utf-8") for entry in policy.excluded_paths]
    exact = frozenset(entry for entry in encoded if not entry.endswith(b"/"))
    directories = tuple(entry for entry in encoded if entry.endswith(b"/"))
    firsts = tuple(sorted({entry.rstrip(b"/").split(b"/", 1)[0] for entry in encoded}))

    def excluded(path: bytes) -> bool:
        if not firsts or not path.startswith(firsts):
            return False
        return path in exact or any(path == d[:-1] or path.startswith(d) for d in directories)

    return excluded


def first_components(policy: CheckpointPolicy) -> tuple[bytes, ...]:
    """The first path components of ``excludedPaths`` (UTF-8): a path whose first component is
    none of these is never excluded, which a C-level scan of a whole listing can decide."""
    return tuple(sorted({entry.rstrip("/").split("/", 1)[0].encode("utf-8") for entry in policy.excluded_paths}))


_GLOB_SPECIALS: Final = frozenset("*?[]\\!# ")


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _GLOB_SPECIALS else ch for ch in text)


def exclude_file_text(policy: CheckpointPolicy) -> bytes:
    """The private ``core.excludesFile`` (§3.2 item 3): one root-anchored, glob-escaped pattern
    per excluded path, so Git never even lists them as untracked."""
    lines = [
        "/" + _escape(entry[:-1]) + "/" if entry.endswith("/") else "/" + _escape(entry)
        for entry in policy.excluded_paths
    ]
    return ("".join(line + "\n" for line in lines)).encode("utf-8")


DEFAULT_POLICY: Final = CheckpointPolicy()
DEFAULT_POLICY_HASH: Final = policy_hash(DEFAULT_POLICY)

if __name__ == "__main__":  # pragma: no cover - prints the value pinned in spec-phase4 §14
    print(DEFAULT_POLICY_HASH)
