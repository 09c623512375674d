"""What the observer saw, and the observation table that turns it into a settlement
(spec-phase3 §4.1, §4.3–§4.5).

Why the table is a pure function of two values: a reconciler's only freedom must be *which*
row the file is in, never what a row means. Given the evidence (what the file was, what it must
become) and the observed state, :func:`classify` answers one of the four observations of spec
10 §5.1 and the decision the bundle must carry; nothing in it can write, and nothing in it can
turn "the file is as it was" into "so run the tool again" (spec-phase3 §5.4).

What this module holds:

* :class:`ObservedState` — the observer's answer (spec-phase3 §4.1), with its JSON form and
  :func:`decode_observed_state` (never raises; used by the protocol's ``reconcile.classify``);
* :data:`UNREADABLE_REASONS` and :data:`TRANSIENT_REASONS` — the closed reasons of
  spec-phase3 §4.3 (a transient reason says nothing about the file and settles nothing);
* :func:`state_matches`, :func:`classify` — the matching rule and the table of spec-phase3
  §4.4, evaluated top to bottom: unreadable, expected-after, before, otherwise diverged;
* :func:`observation_digest` — ``observationDigest`` of schema ``state_identity_v1``
  (spec-phase3 §4.5), binding the reconcile fact to the evidence and the observed state.

Pure: no I/O. Depends on ``maka_ref._codec``, ``maka_ref._events`` and the evidence module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from maka_ref._codec import parse_json, stable_json
from maka_ref._events import is_sha256_digest
from maka_ref._events.constants import DECISION_FOR_OBSERVATION
from maka_ref._reconcile.evidence import (
    MAX_FILE_BYTES,
    FileEvidence,
    FileState,
    Invalid,
    domain_digest,
    evidence_digest,
)

__all__ = [
    "OBSERVATION_DIGEST_DOMAIN",
    "OBSERVED_STATE_INVALID",
    "OBSERVED_TYPES",
    "TRANSIENT_REASONS",
    "UNREADABLE_REASONS",
    "Classification",
    "ObservedState",
    "classify",
    "decode_observed_state",
    "observation_digest",
    "state_matches",
]

#: Every ``type`` an observed state can have (spec-phase3 §4.1).
OBSERVED_TYPES: Final = ("absent", "regular", "directory", "symlink", "other", "unreadable")
#: The closed unreadable reasons of spec-phase3 §4.3.
UNREADABLE_REASONS: Final = (
    "target_invalid",
    "workspace_unreachable",
    "ancestor_not_directory",
    "permission_denied",
    "changed_during_observation",
    "io_error",
    "resource_exhausted",
    "sync_failed",
    "unsupported_platform",
)
#: Reasons about the observer's own situation, not the file: no bundle (spec-phase3 §4.3).
TRANSIENT_REASONS: Final = frozenset({"resource_exhausted", "sync_failed", "unsupported_platform"})
#: The one code :func:`decode_observed_state` answers.
OBSERVED_STATE_INVALID: Final = "observed_state_invalid"
#: Domain separator of :func:`observation_digest` (spec-phase3 §4.5).
OBSERVATION_DIGEST_DOMAIN: Final = "maka.file-observation.v1"

_MAX_SAFE_INTEGER: Final = 2**53 - 1
_KEYS: Final = {
    "absent": frozenset({"type"}),
    "directory": frozenset({"type"}),
    "symlink": frozenset({"type"}),
    "other": frozenset({"type"}),
    "unreadable": frozenset({"type", "reason"}),
}
_REGULAR_KEYS: Final = frozenset({"type", "size", "links", "mode", "contentDigest"})


@dataclass(frozen=True, slots=True)
class ObservedState:
    """One observation of the canonical target (spec-phase3 §4.1).

    ``regular`` carries ``size``, ``links``, ``mode`` and — only when ``size`` is at most
    ``MAX_FILE_BYTES`` — ``content_digest``; ``unreadable`` carries ``reason``; the other types
    carry nothing.
    """

    type: Literal["absent", "regular", "directory", "symlink", "other", "unreadable"]
    size: int | None = None
    links: int | None = None
    mode: int | None = None
    content_digest: str | None = None
    reason: str | None = None

    @classmethod
    def of_type(cls, kind: Literal["absent", "directory", "symlink", "other"]) -> ObservedState:
        return cls(kind)

    @classmethod
    def regular(cls, size: int, links: int, mode: int, content_digest: str | None) -> ObservedState:
        return cls("regular", size=size, links=links, mode=mode, content_digest=content_digest)

    @classmethod
    def unreadable(cls, reason: str) -> ObservedState:
        return cls("unreadable", reason=reason)

    @property
    def transient(self) -> bool:
        """True for an unreadable reason about the observer, not the file (spec-phase3 §4.3)."""
        return self.type == "unreadable" and self.reason in TRANSIENT_REASONS

    def to_json(self) -> dict[str, Any]:
        """The JSON object of spec-phase3 §4.1 (absent keys omitted)."""
        if self.type == "regular":
            out: dict[str, Any] = {"type": "regular", "size": self.size, "links": self.links, "mode": self.mode}
            if self.content_digest is not None:
                out["contentDigest"] = self.content_digest
            return out
        if self.type == "unreadable":
            return {"type": "unreadable", "reason": self.reason}
        return {"type": self.type}


@dataclass(frozen=True, slots=True)
class Classification:
    """A row of the observation table (spec-phase3 §4.4) and the decision it requires (spec 10
    §5.1): ``disposition`` ``completed`` or ``parked`` with its ``reason_code``. ``transient``
    marks an unreadable row the reconciler must not settle (spec-phase3 §5.1 step 6)."""

    observation: str
    disposition: str
    reason_code: str
    transient: bool


def decode_observed_state(value: object) -> ObservedState | Invalid:
    """Check a JSON observed state (spec-phase3 §4.1); never raises. Code:
    ``observed_state_invalid``."""
    try:
        plain = parse_json(stable_json(value))
    except Exception as exc:  # noqa: BLE001 - any non-JSON input is a code
        return Invalid(OBSERVED_STATE_INVALID, f"not strict JSON: {exc}")
    if not isinstance(plain, dict):
        return Invalid(OBSERVED_STATE_INVALID, "not an object")
    kind = plain.get("type")
    if kind == "regular":
        return _decode_regular(plain)
    if not isinstance(kind, str) or kind not in _KEYS:
        return Invalid(OBSERVED_STATE_INVALID, f"type {kind!r}")
    if set(plain) != _KEYS[kind]:
        return Invalid(OBSERVED_STATE_INVALID, f"keys of a {kind} state are exactly {sorted(_KEYS[kind])}")
    if kind == "unreadable":
        reason = plain["reason"]
        if not isinstance(reason, str) or reason not in UNREADABLE_REASONS:
            return Invalid(OBSERVED_STATE_INVALID, f"reason {reason!r}")
        return ObservedState.unreadable(reason)
    return ObservedState(kind)


def _decode_regular(plain: dict[str, Any]) -> ObservedState | Invalid:
    keys = set(plain)
    if not keys <= _REGULAR_KEYS or not (_REGULAR_KEYS - {"contentDigest"}) <= keys:
        return Invalid(OBSERVED_STATE_INVALID, f"keys of a regular state are {sorted(_REGULAR_KEYS)}")
    size, links, mode, digest = plain["size"], plain["links"], plain["mode"], plain.get("contentDigest")
    if not _is_count(size) or not _is_count(links):
        return Invalid(OBSERVED_STATE_INVALID, "size and links are safe integers >= 0")
    if not (_is_count(mode) and mode <= 0o7777):
        return Invalid(OBSERVED_STATE_INVALID, f"mode {mode!r} is not an integer 0..4095")
    if (size <= MAX_FILE_BYTES) != ("contentDigest" in plain):
        return Invalid(OBSERVED_STATE_INVALID, f"contentDigest is present exactly when size <= {MAX_FILE_BYTES}")
    if digest is not None and not is_sha256_digest(digest):
        return Invalid(OBSERVED_STATE_INVALID, "contentDigest is not a sha256-digest")
    return ObservedState.regular(size, links, mode, digest)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_SAFE_INTEGER


def state_matches(state: FileState, observed: ObservedState) -> bool:
    """The matching rule of spec-phase3 §4.4: same type; for ``regular`` equal size, a content
    digest present and equal, exactly one link, and equal mode only when ``state`` binds one."""
    if state.type != observed.type:
        return False
    if state.type == "absent":
        return True
    return (
        observed.size == state.size
        and observed.content_digest is not None
        and observed.content_digest == state.content_digest
        and observed.links == 1
        and (state.mode is None or observed.mode == state.mode)
    )


def classify(evidence: FileEvidence, observed: ObservedState) -> Classification:
    """The observation table of spec-phase3 §4.4, first match wins:

    1. unreadable → ``unreadable`` (parked ``reconcile_unreadable``; transient reasons settle
       nothing);
    2. matches ``expectedAfter`` → ``matches_expected_state`` (completed: finalize only);
    3. matches ``before`` → ``matches_prior_state`` (parked: never a redo, §5.4);
    4. anything else → ``diverged`` (parked: never overwrite an outside change).
    """
    if observed.type == "unreadable":
        observation = "unreadable"
    elif state_matches(evidence.expected_after, observed):
        observation = "matches_expected_state"
    elif state_matches(evidence.before, observed):
        observation = "matches_prior_state"
    else:
        observation = "diverged"
    disposition, reason_code = DECISION_FOR_OBSERVATION[observation]
    return Classification(observation, disposition, reason_code, observed.transient)


def observation_digest(evidence: FileEvidence, observed: ObservedState) -> str:
    """``observationDigest`` (schema ``state_identity_v1``, spec-phase3 §4.5):
    ``sha256:…`` of ``LP("maka.file-observation.v1") ‖ LP(stable_json({"evidenceDigest",
    "observed"}))``. Raises ``EvidenceError`` only for a record that does not decode."""
    body = stable_json({"evidenceDigest": evidence_digest(evidence), "observed": observed.to_json()})
    return domain_digest(OBSERVATION_DIGEST_DOMAIN, body)
