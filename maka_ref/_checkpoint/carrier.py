"""The Git checkpoint carrier: one object, seven operations (spec-phase4 §3).

Why a facade: every operation needs the same preamble — find ``git``, make a private scratch
directory, locate the repository, bind explicit paths — and the same postamble (remove the
scratch, whatever happened). The operations themselves live in their own modules
(``capture``, ``verify``, ``compare``, ``restore``, ``refs``); this class only sequences them
and holds the configuration: the policy, the per-call timeout, where to look for ``git``,
the ``on_step`` hook for crash tests, and the clock and randomness that name refs (injected,
so tests can pin them).

What it never does (§3.1): approve resume, read or write facts, or touch the user's index,
refs, stash or worktree. Each call is independent: instances are safe to share between
threads.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from maka_ref._checkpoint.capture import CaptureResult, capture_checkpoint
from maka_ref._checkpoint.compare import Drift, compare_workspace
from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import (
    DEFAULT_TIMEOUT_SECONDS,
    Git,
    GitProgram,
    GitScratch,
    find_git,
)
from maka_ref._checkpoint.policy import DEFAULT_POLICY, CheckpointPolicy, policy_hash
from maka_ref._checkpoint.refs import (
    CollectResult,
    ListedCheckpoint,
    collect_orphans,
    identity_uuid,
    list_checkpoints,
    make_ref,
)
from maka_ref._checkpoint.repository import (
    Repository,
    check_steady_state,
    check_workspace_path,
    locate_repository,
)
from maka_ref._checkpoint.restore import RestoreResult, check_destination, materialize
from maka_ref._checkpoint.survey import survey
from maka_ref._checkpoint.verify import VerifiedCheckpoint, verify_checkpoint

__all__ = ["DEFAULT_GRACE_SECONDS", "Eligibility", "GitCheckpointCarrier"]

#: §3.8: a ref younger than this is never collected (its fact may be committing elsewhere).
DEFAULT_GRACE_SECONDS = 600


@dataclass(frozen=True, slots=True)
class Eligibility:
    """The answer of :meth:`GitCheckpointCarrier.eligibility`: eligible, or the refusal."""

    failure: CheckpointError | None

    @property
    def eligible(self) -> bool:
        return self.failure is None

    def as_json(self) -> dict[str, object]:
        if self.failure is None:
            return {"eligible": True}
        return {"eligible": False, "code": self.failure.code, "details": dict(self.failure.details)}


class GitCheckpointCarrier:
    """Capture, verify, compare, restore, list and collect checkpoints of Git workspaces."""

    def __init__(
        self,
        *,
        policy: CheckpointPolicy = DEFAULT_POLICY,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        git_search_path: str | None = None,
        on_step: Callable[[str], None] | None = None,
        clock_ms: Callable[[], int] | None = None,
        token: Callable[[], str] | None = None,
    ) -> None:
        self.policy = policy
        self.policy_hash = policy_hash(policy)
        self.timeout = timeout
        self.git_search_path = git_search_path
        self.on_step = on_step
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self._token = token or (lambda: secrets.token_hex(16))
        self._program: GitProgram | None = None

    def _git_program(self) -> GitProgram:
        if self._program is None:
            self._program = find_git(self.git_search_path)
        return self._program

    @contextmanager
    def _session(self, workspace: str) -> Iterator[tuple[Repository, Git]]:
        check_workspace_path(workspace)  # §3.3 check 1 comes before looking for git
        program = self._git_program()
        with GitScratch(self.policy) as scratch:
            git = Git(program, scratch, self.timeout)
            yield locate_repository(workspace, git), git

    def eligibility(self, workspace: str) -> Eligibility:
        """§3.3: eligible, or the first ineligibility code. Other failures raise."""
        try:
            with self._session(workspace) as (repository, git):
                check_steady_state(repository)
                survey(repository, git, self.policy)
        except CheckpointError as exc:
            if exc.ineligible:
                return Eligibility(exc)
            raise
        return Eligibility(None)

    def capture(self, workspace: str, workspace_identity: str) -> CaptureResult:
        """§3.4: a new ref ``refs/maka/checkpoints/<uuid>/<time>-<random>``."""
        identity_uuid(workspace_identity)
        with self._session(workspace) as (repository, git):
            check_steady_state(repository)
            ref = make_ref(workspace_identity, self._clock_ms(), self._token())
            return capture_checkpoint(repository, git, self.policy, workspace_identity=workspace_identity,
                                      checkpoint_ref=ref, on_step=self.on_step)

    def verify(self, workspace: str, checkpoint_ref: str, expected_policy_hash: str) -> VerifiedCheckpoint:
        """§3.5: the artifact exists, every object hashes to its name, the tree obeys the policy."""
        with self._session(workspace) as (repository, git):
            return verify_checkpoint(repository, git, self.policy, checkpoint_ref=checkpoint_ref,
                                     expected_policy_hash=expected_policy_hash)

    def compare(self, workspace: str, checkpoint_ref: str, expected_policy_hash: str) -> Drift:
        """§3.7: verify, then the workspace's differences from the checkpoint (writes nothing)."""
        with self._session(workspace) as (repository, git):
            verified = verify_checkpoint(repository, git, self.policy, checkpoint_ref=checkpoint_ref,
                                         expected_policy_hash=expected_policy_hash)
            return compare_workspace(repository, git, verified)

    def restore(self, workspace: str, checkpoint_ref: str, expected_policy_hash: str,
                destination: str) -> RestoreResult:
        """§3.6: a verified checkpoint materialized into a new directory (never the workspace)."""
        with self._session(workspace) as (repository, git):
            target = check_destination(repository, destination)
            verified = verify_checkpoint(repository, git, self.policy, checkpoint_ref=checkpoint_ref,
                                         expected_policy_hash=expected_policy_hash)
            return materialize(repository, git, verified, target, on_step=self.on_step)

    def check_restore_target(self, workspace: str, destination: str) -> str:
        """§3.6 step 1 alone (writes nothing): the checked destination, or the step's code. A
        runtime asks before it claims a continuation that will restore there (spec-phase4 §7.2)."""
        with self._session(workspace) as (repository, _):
            return check_destination(repository, destination)

    def list(self, workspace: str, workspace_identity: str | None = None) -> tuple[ListedCheckpoint, ...]:
        """§3.8: the namespace's refs (one identity's, when given), sorted by name."""
        uuid = identity_uuid(workspace_identity) if workspace_identity is not None else None
        with self._session(workspace) as (_, git):
            return list_checkpoints(git, uuid)

    def collect(
        self,
        workspace: str,
        workspace_identity: str,
        live_refs: Collection[str],
        *,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        now_ms: int | None = None,
    ) -> CollectResult:
        """§3.8: delete the orphans of one identity's namespace (not live, older than the grace)."""
        uuid = identity_uuid(workspace_identity)
        if not grace_seconds >= 0:
            raise ValueError("grace_seconds must be >= 0")
        with self._session(workspace) as (_, git):
            return collect_orphans(git, uuid, live_refs, grace_ms=int(grace_seconds * 1000),
                                   now_ms=self._clock_ms() if now_ms is None else now_ms, on_step=self.on_step)
