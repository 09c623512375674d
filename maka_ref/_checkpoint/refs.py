"""The Maka-owned ref namespace and its lifecycle: naming, listing, orphan collection
(spec-phase4 §3.4.6, §3.8, §4.1).

Why one namespace per workspace identity (``refs/maka/checkpoints/<uuid>/…``): linked
worktrees share their repository's refs, each with its own identity marker; a collector that
swept the whole namespace with one workspace's live set would delete another workspace's live
checkpoints. Why the capture time in the ref name: commit objects carry a fixed date (they are
reproducible) and packed refs have no mtime, yet the collector needs an age so that it never
deletes a ref whose fact is about to commit in another process (the grace period).

Collection is by compare-and-swap on each ref's current value: a ref that changed meanwhile is
kept. The carrier never reads facts: the caller computes ``live_refs`` from committed facts
and passes them in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git

__all__ = [
    "IDENTITY_PREFIX",
    "REF_PREFIX",
    "CollectResult",
    "ListedCheckpoint",
    "ParsedRef",
    "collect_orphans",
    "identity_uuid",
    "list_checkpoints",
    "make_ref",
    "parse_ref",
]

REF_PREFIX: Final = "refs/maka/checkpoints/"
IDENTITY_PREFIX: Final = "workspace:v1:"
_UUID: Final = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
_UUID_RE: Final = re.compile(_UUID)
_REF_RE: Final = re.compile(rf"refs/maka/checkpoints/({_UUID})/([0-9]{{13}})-([0-9a-f]{{32}})")
_TOKEN_RE: Final = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class ParsedRef:
    uuid: str
    created_at_ms: int
    token: str


@dataclass(frozen=True, slots=True)
class ListedCheckpoint:
    checkpoint_ref: str
    commit_oid: str
    #: None for a ref in the namespace whose name breaks §3.4.6 (``malformed``: never collected).
    created_at_ms: int | None

    @property
    def malformed(self) -> bool:
        return self.created_at_ms is None

    def to_json(self) -> dict[str, Any]:
        """The listing's wire and CLI form: ``malformed`` instead of a creation time."""
        entry: dict[str, Any] = {"checkpointRef": self.checkpoint_ref, "commitOid": self.commit_oid}
        if self.created_at_ms is None:
            entry["malformed"] = True
        else:
            entry["createdAtMs"] = self.created_at_ms
        return entry


@dataclass(frozen=True, slots=True)
class CollectResult:
    collected: tuple[str, ...]
    kept: tuple[str, ...]


def identity_uuid(workspace_identity: str) -> str:
    """The UUID of a spec 20 §6.1 identity, verbatim; else ``invalid_workspace_identity``."""
    if (
        not isinstance(workspace_identity, str)
        or not workspace_identity.startswith(IDENTITY_PREFIX)
        or _UUID_RE.fullmatch(workspace_identity[len(IDENTITY_PREFIX):]) is None
    ):
        raise CheckpointError("invalid_workspace_identity", f"{workspace_identity!r} is not a workspace:v1 identity")
    return workspace_identity[len(IDENTITY_PREFIX):]


def make_ref(workspace_identity: str, created_at_ms: int, token: str) -> str:
    """``refs/maka/checkpoints/<uuid>/<13-digit ms>-<32 hex>``."""
    uuid = identity_uuid(workspace_identity)
    if type(created_at_ms) is not int or not 0 <= created_at_ms < 10**13 or _TOKEN_RE.fullmatch(token) is None:
        raise ValueError("a checkpoint id is a 13-digit millisecond time and 32 lowercase hex digits")
    return f"{REF_PREFIX}{uuid}/{created_at_ms:013d}-{token}"


def parse_ref(ref: object) -> ParsedRef | None:
    """The parts of a well-formed checkpoint ref, or None."""
    if not isinstance(ref, str):
        return None
    match = _REF_RE.fullmatch(ref)
    if match is None:
        return None
    return ParsedRef(match.group(1), int(match.group(2)), match.group(3))


def list_checkpoints(git: Git, uuid: str | None = None) -> tuple[ListedCheckpoint, ...]:
    """Every ref under the namespace (or one identity's part of it), sorted by name."""
    pattern = REF_PREFIX + (uuid + "/" if uuid is not None else "")
    _, out, _ = git.run(["for-each-ref", "--format=%(refname)%00%(objectname)", pattern])
    listed = []
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        name, _, oid = line.partition("\0")
        parsed = parse_ref(name)
        listed.append(ListedCheckpoint(name, oid, parsed.created_at_ms if parsed else None))
    return tuple(sorted(listed, key=lambda item: item.checkpoint_ref.encode("utf-8", "surrogateescape")))


def collect_orphans(
    git: Git,
    uuid: str,
    live_refs: Collection[str],
    *,
    grace_ms: int,
    now_ms: int,
    on_step: Callable[[str], None] | None = None,
) -> CollectResult:
    """Delete the well-formed refs of ``uuid``'s namespace that are not live and older than
    the grace period, each by compare-and-swap (§3.8)."""
    live = frozenset(live_refs)
    collected: list[str] = []
    kept: list[str] = []
    for item in list_checkpoints(git, uuid):
        old = item.created_at_ms is not None and item.created_at_ms < now_ms - grace_ms
        if item.malformed or item.checkpoint_ref in live or not old:
            kept.append(item.checkpoint_ref)
            continue
        status, _, _ = git.run(["update-ref", "-d", item.checkpoint_ref, item.commit_oid], ok=(0, 1, 128))
        if status == 0:
            collected.append(item.checkpoint_ref)
            if on_step is not None:
                on_step("after_checkpoint_ref_deleted")
        else:
            kept.append(item.checkpoint_ref)  # changed or vanished meanwhile: not ours to judge
    return CollectResult(tuple(collected), tuple(kept))
