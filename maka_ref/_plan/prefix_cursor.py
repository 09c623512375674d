"""Boundary cursor rules and builder (spec 20 §1.9): ``[oldest … immediate source]`` segments.

Split out of :mod:`maka_ref._plan.prefix` because the cursor only combines already-decoded
segments (one session, no repeated run / invocation / turn id) and never reads events;
``segment_replay`` reuses :func:`cursor_problem` to report instead of raise.
Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from maka_ref._plan.digests import manifest_digest
from maka_ref._plan.prefix_values import RuntimeBoundaryCursor, RuntimePrefixSegment, _fail, decode_segment

__all__ = ["build_boundary_cursor", "cursor_problem"]


def cursor_problem(segments: Sequence[RuntimePrefixSegment]) -> tuple[int, str, str] | None:
    """The first cursor rule ``segments`` break, as ``(segment index, code, message)``.

    Rules (spec 20 §1.9): non-empty; one ``sessionId``; no ``runId``, ``invocationId`` or
    ``turnId`` repeated across segments. Checked per segment in order, in that order.
    """
    if not segments:
        return (0, "boundary_empty", "Runtime boundary cursor needs at least one segment")
    session_id = segments[0].identity.session_id
    run_ids: set[str] = set()
    invocation_ids: set[str] = set()
    turn_ids: set[str] = set()
    for index, segment in enumerate(segments):
        ident = segment.identity
        if ident.session_id != session_id:
            return (index, "boundary_session_mismatch", "Runtime boundary segments must belong to the same session")
        if ident.run_id in run_ids:
            return (index, "boundary_duplicate_run_id", "Runtime boundary lineage contains a duplicate runId")
        run_ids.add(ident.run_id)
        if ident.invocation_id in invocation_ids:
            return (
                index,
                "boundary_duplicate_invocation_id",
                "Runtime boundary lineage contains a duplicate invocationId",
            )
        invocation_ids.add(ident.invocation_id)
        if ident.turn_id in turn_ids:
            return (index, "boundary_duplicate_turn_id", "Runtime boundary lineage contains a duplicate turnId")
        turn_ids.add(ident.turn_id)
    return None


def build_boundary_cursor(segments: Iterable[RuntimePrefixSegment | Mapping[str, Any]]) -> RuntimeBoundaryCursor:
    """A :class:`RuntimeBoundaryCursor` over ``[oldest … immediate source]`` (spec 20 §1.9).

    Each segment is decoded (``segment_invalid``), then :func:`cursor_problem` is applied;
    a violation raises ``PrefixError`` with its code and the offending segment index as
    ``detail``.
    """
    decoded = tuple(decode_segment(segment) for segment in segments)
    problem = cursor_problem(decoded)
    if problem is not None:
        index, code, message = problem
        raise _fail(code, message, f"segments[{index}]")
    return RuntimeBoundaryCursor(segments=decoded, manifest_digest=manifest_digest(decoded))
