"""Protocol strings and enum tuples shared by every part of the strategies.

They live apart so that the value objects, the event builders and the corruptions agree on
one spelling without importing each other. Re-exported by :mod:`maka_ref.testing.strategies`
(except the underscored ones).
"""

from __future__ import annotations

from typing import Literal

T1 = "t1_after_preflight_v1"
MAX_SAFE_INTEGER = 2**53
RECOVERY_MODES = ("replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry")
Protocol = Literal["t1", "legacy"]

_PARK_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}
