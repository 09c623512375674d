"""Vectors of ``observation.json``: the observation table (docs/spec-phase3.md §4.1, §4.3–§4.5,
§7 items 19–32).

One ``classify`` vector per row of the §4.4 table, per unreadable reason of §4.3 (with whether
it is transient) and per observed type of §4.1, plus every "consequence" §4.4 lists. Each vector
states the row, the decision of spec 10 §5.1 it requires, and the ``observationDigest`` of §4.5,
computed here with :mod:`hashlib` from the construction the spec fixes (never by the reference).
"""

from __future__ import annotations

from typing import Any

from ._common import vec
from ._evidence import (
    AFTER_DIGEST,
    APPEND_RECORD,
    EDIT_RECORD,
    MAX_FILE_BYTES,
    WRITE_RECORD,
    canonical,
    evidence_digest_of,
    lp_digest,
    regular,
    sha256_of,
    with_,
)

G = "observation"

#: spec-phase3 §4.3: reason → transient.
REASONS: list[tuple[str, bool]] = [
    ("target_invalid", False), ("workspace_unreachable", False), ("ancestor_not_directory", False),
    ("permission_denied", False), ("changed_during_observation", False), ("io_error", False),
    ("resource_exhausted", True), ("sync_failed", True), ("unsupported_platform", True),
]
#: spec-phase3 §4.4 → spec 10 §5.1: observation → (disposition, reasonCode).
DECISION = {
    "unreadable": ("parked", "reconcile_unreadable"),
    "matches_expected_state": ("completed", "reconcile_matches_expected_state"),
    "matches_prior_state": ("parked", "reconcile_matches_prior_state"),
    "diverged": ("parked", "reconcile_diverged"),
}


def observation_digest_of(record: dict[str, Any], observed: dict[str, Any]) -> str:
    """spec-phase3 §4.5: LP("maka.file-observation.v1") ‖ LP(stable_json({evidenceDigest, observed}))."""
    body = canonical({"evidenceDigest": evidence_digest_of(canonical(record)), "observed": observed})
    return lp_digest("maka.file-observation.v1", body)


def seen(size: int, digest: str | None, *, links: int = 1, mode: int = 420) -> dict[str, Any]:
    """A regular observed state (§4.1); ``contentDigest`` only when given."""
    out: dict[str, Any] = {"type": "regular", "size": size, "links": links, "mode": mode}
    if digest is not None:
        out["contentDigest"] = digest
    return out


def group_observation() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []

    def row(slug: str, spec: str, description: str, record: dict[str, Any], observed: dict[str, Any],
            observation: str, *, transient: bool = False) -> None:
        disposition, reason = DECISION[observation]
        vs.append(vec(f"{G}/{slug}", spec, description, "classify", {"evidence": record, "observed": observed},
                      {"resultSubset": {"ok": True, "observation": observation, "disposition": disposition,
                                        "reasonCode": reason, "transient": transient,
                                        "observationDigest": observation_digest_of(record, observed)}}))

    # --- row 1: unreadable, one vector per reason of §4.3 ----------------------------------
    for reason, transient in REASONS:
        row(f"unreadable-{reason.replace('_', '-')}", "spec-phase3 §4.3; spec-phase3 §4.4 row 1",
            f"Observed unreadable ({reason}): row 1, parked reconcile_unreadable; "
            f"{'transient: the reconciler commits nothing' if transient else 'not transient'}.",
            WRITE_RECORD, {"type": "unreadable", "reason": reason}, "unreadable", transient=transient)

    # --- row 2: matches expectedAfter ----------------------------------------------------------
    after = seen(5, AFTER_DIGEST)
    row("matches-expected-write", "spec-phase3 §4.4 row 2; spec-phase3 §7 item 20",
        "The Write's target holds exactly the expected 5 bytes with one link: matches_expected_state, completed.",
        WRITE_RECORD, after, "matches_expected_state")
    row("matches-expected-any-mode-when-unbound", "spec-phase3 §4.4; spec-phase3 §7 item 31",
        "expectedAfter binds no mode, the file's mode is 384: still matches_expected_state (mode compared only when bound).",
        WRITE_RECORD, seen(5, AFTER_DIGEST, mode=384), "matches_expected_state")
    row("matches-expected-edit", "spec-phase3 §4.4 row 2; spec-phase3 §7 item 21",
        "The Edit's target holds the edited bytes with the bound mode 420: matches_expected_state.",
        EDIT_RECORD, seen(11, sha256_of(b"hello there")), "matches_expected_state")
    same = with_(WRITE_RECORD, before=regular(5, AFTER_DIGEST))
    row("expected-before-prior", "spec-phase3 §4.4 (row 2 before row 3); spec-phase3 §7 item 32",
        "before = expectedAfter (the same bytes written) and the file holds them: row 2 wins, matches_expected_state.",
        same, after, "matches_expected_state")

    # --- row 3: matches before --------------------------------------------------------------------
    row("prior-absent", "spec-phase3 §4.4 row 3; spec-phase3 §7 item 19",
        "A Write that created the file, target absent: matches_prior_state, parked (never a redo).",
        WRITE_RECORD, {"type": "absent"}, "matches_prior_state")
    row("prior-regular", "spec-phase3 §4.4 row 3",
        "An Append whose target still holds the before bytes: matches_prior_state, parked.",
        APPEND_RECORD, seen(2, sha256_of(b"ab"), mode=420), "matches_prior_state")
    row("prior-edit", "spec-phase3 §4.4 row 3",
        "An Edit whose target still holds the before bytes with mode 420: matches_prior_state.",
        EDIT_RECORD, seen(11, sha256_of(b"hello world")), "matches_prior_state")

    # --- row 4: diverged, every case §4.4 lists ------------------------------------------------------
    row("diverged-other-content", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 23",
        "Other content of the same size: diverged, parked (never overwrite the outside change).",
        WRITE_RECORD, seen(5, sha256_of(b"other")), "diverged")
    row("diverged-deleted-before-regular", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 24",
        "The target was deleted but before was a regular file: diverged.",
        APPEND_RECORD, {"type": "absent"}, "diverged")
    row("diverged-symlink", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 25",
        "A symlink at the target (never followed): diverged.", WRITE_RECORD, {"type": "symlink"}, "diverged")
    row("diverged-directory", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 26",
        "A directory at the target: diverged.", WRITE_RECORD, {"type": "directory"}, "diverged")
    row("diverged-other-type", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 26",
        "A FIFO, socket or device at the target (type other): diverged.", WRITE_RECORD, {"type": "other"}, "diverged")
    row("diverged-oversize", "spec-phase3 §4.1; spec-phase3 §4.4 row 4; spec-phase3 §7 item 29",
        "A file grown beyond MAX_FILE_BYTES (observed without contentDigest): diverged, no read needed.",
        WRITE_RECORD, seen(MAX_FILE_BYTES + 1, None), "diverged")
    row("diverged-second-hard-link", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 30",
        "The expected bytes with 2 links: diverged (links must be 1).",
        WRITE_RECORD, seen(5, AFTER_DIGEST, links=2), "diverged")
    row("diverged-mode-changed-when-bound", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 31",
        "The edited bytes with mode 384 where expectedAfter binds 420: diverged.",
        EDIT_RECORD, seen(11, sha256_of(b"hello there"), mode=384), "diverged")
    row("diverged-torn-append", "spec-phase3 §4.4 row 4; spec-phase3 §7 item 22",
        "A torn Append (before plus part of the bytes): diverged.",
        APPEND_RECORD, seen(3, sha256_of(b"abc")), "diverged")
    row("diverged-same-digest-other-size", "spec-phase3 §4.4",
        "The expected digest but another size: not a match (sizes must be equal), diverged.",
        WRITE_RECORD, seen(6, AFTER_DIGEST), "diverged")

    # --- inputs that do not decode (§6: {"ok": false, "code"}; the code is not named there) -------------
    for slug, record, observed, what in (
        ("observed-unknown-type", WRITE_RECORD, {"type": "fifo"}, "an observed type outside §4.1"),
        ("observed-unknown-reason", WRITE_RECORD, {"type": "unreadable", "reason": "ebusy"},
         "an unreadable reason outside §4.3"),
        ("observed-digest-missing", WRITE_RECORD, seen(5, None), "a regular state of at most MAX_FILE_BYTES without "
         "contentDigest (§4.1: present iff size ≤ MAX_FILE_BYTES)"),
        ("observed-digest-over-limit", WRITE_RECORD, seen(MAX_FILE_BYTES + 1, AFTER_DIGEST),
         "a regular state over MAX_FILE_BYTES with contentDigest"),
        ("observed-extra-key", WRITE_RECORD, {"type": "absent", "size": 0}, "an absent state with a key"),
        ("evidence-invalid", with_(WRITE_RECORD, result=[]), {"type": "absent"}, "evidence that does not decode"),
    ):
        vs.append(vec(f"{G}/refuses-{slug}", "spec-phase3 §4.1; spec-phase3 §6",
                      f"classify with {what} is refused as a result ok: false (never a table row).",
                      "classify", {"evidence": record, "observed": observed}, {"resultSubset": {"ok": False}}))

    description = ("The observation table of docs/spec-phase3.md §4.4 (evidence × observed state → observation, "
                   "decision, transient) with observationDigest (§4.5): one vector per row, per unreadable reason of "
                   "§4.3 and per observed type of §4.1, and refusals of inputs that do not decode.")
    return G, description, vs
