"""Identities of one live run: the per-run seed, event ids and tool operation ids.

Why deterministic ids: the crash lab kills the loop at every failpoint and then compares the
reopened store with what the loop *would* have committed; that is only possible when every id
is a pure function of a few inputs. The only randomness is the per-run **seed** (``uuid4`` hex,
chosen by :func:`new_seed` unless the caller passes one); everything below is derived from it:

=====================  ==============================================  ====================
what                   id                                               rule
=====================  ==============================================  ====================
session                ``session_<seed>`` (or the caller's session id)  one session per run
run / invocation / turn ``run_<seed>`` / ``invocation_<seed>`` / ``turn_<seed>``
user event             ``<runId>_user``
model step *n*         step id ``<runId>_step<n>`` (``refs.stepId`` of its model events)
model text of step *n* ``<runId>_step<n>_text``
tool operation         ``toolop_<32 hex>`` of (invocationId, provider call id)  spec 30 §0.3
call / dispatch / response ``<op>_call`` / ``<op>_dispatch`` / ``<op>_response``  spec 30 §6.5
terminal event         ``<runId>_terminal``
operational event      ``<runId>_op<seq>_<type>``
=====================  ==============================================  ====================

The call / response ids use the derived operation id on every lane (T1, legacy, pre-T1
refusal) so they are unique per invocation and stable across processes; only the T1 lane
carries the operation id in ``refs``.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from typing import Final

from maka_ref._codec.jsontext import compact_json

__all__ = [
    "SEED_PATTERN",
    "RunIds",
    "new_seed",
    "operation_id",
]

#: A seed becomes part of run/session ids, whose store pattern is ``[A-Za-z0-9_-]{1,128}``.
SEED_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_seed() -> str:
    """A fresh per-run seed (32 lowercase hex characters)."""
    return uuid.uuid4().hex


def operation_id(invocation_id: str, provider_tool_call_id: str) -> str:
    """Spec 30 §0.3: ``toolop_`` + the first 32 hex of SHA-256 of the JSON array text
    ``[invocationId, providerToolCallId]`` (JavaScript ``JSON.stringify`` framing, so NUL-split
    inputs stay distinct). Both inputs must be non-empty strings."""
    if not isinstance(invocation_id, str) or not invocation_id:
        raise ValueError("operation id requires a non-empty invocation id")
    if not isinstance(provider_tool_call_id, str) or not provider_tool_call_id:
        raise ValueError("operation id requires a non-empty provider tool-call id")
    text = compact_json([invocation_id, provider_tool_call_id])
    return "toolop_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class RunIds:
    """Every id of one run, derived from ``seed`` (see the module docstring)."""

    seed: str
    session_id: str
    run_id: str
    invocation_id: str
    turn_id: str

    @classmethod
    def from_seed(cls, seed: str, session_id: str | None = None) -> "RunIds":
        if not isinstance(seed, str) or SEED_PATTERN.fullmatch(seed) is None:
            raise ValueError("run seed must match [A-Za-z0-9_-]{1,64}")
        return cls(
            seed=seed,
            session_id=session_id if session_id is not None else f"session_{seed}",
            run_id=f"run_{seed}",
            invocation_id=f"invocation_{seed}",
            turn_id=f"turn_{seed}",
        )

    @property
    def user_event_id(self) -> str:
        return f"{self.run_id}_user"

    @property
    def terminal_event_id(self) -> str:
        return f"{self.run_id}_terminal"

    def step_id(self, index: int) -> str:
        return f"{self.run_id}_step{index}"

    def text_event_id(self, index: int) -> str:
        return f"{self.step_id(index)}_text"

    def operation_id(self, provider_tool_call_id: str) -> str:
        return operation_id(self.invocation_id, provider_tool_call_id)

    def operational_event_id(self, seq: int, event_type: str) -> str:
        return f"{self.run_id}_op{seq}_{event_type}"
