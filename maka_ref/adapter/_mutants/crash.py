"""Crash-behaviour mutants: torn rows, lost accepted runs, stale writers, stale outputs
(spec 20 §1.8, §4; spec 30 §5, §6; and failure classes other durable-execution projects shipped)."""

from __future__ import annotations

import importlib
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap
from maka_ref.adapter._mutants._registry import mutant


@mutant("crash-jsonl-torn-tail-accepted", layer="crash", spec="30 §5.2 rule 6; 20 §1.8", family="MUTANT-GAP-CRASH-001",
        keyword="MUTANT-GAP-CRASH-001")
def apply_jsonl_torn_tail_accepted() -> None:
    """A legacy ``runtime-events.jsonl`` whose last line is torn (an unterminated JSON prefix, a
    crash mid-append) is read as the shorter healthy prefix: the torn row is silently dropped
    and everything before it imported as facts.

    Spec 20 §1.8 and the project decision on spec 30 §5.2 rule 6: a torn row is corruption,
    never a shorter prefix (upstream shipped the skip, spec 30 §9 item 142). Killed by
    MUTANT-GAP-CRASH-001 (``store.project`` of a legacy tree with a torn tail).
    """
    from maka_ref._store.legacy.profile import LegacyJsonlCorruptionError

    def factory(original: Any) -> Any:
        def _decode_lines(data: bytes, session_id: str, run_id: str, **kwargs: Any) -> Any:
            try:
                return original(data, session_id, run_id, **kwargs)
            except LegacyJsonlCorruptionError as exc:
                if not exc.torn_tail:
                    raise
                cut = bytes(data).rfind(b"\n")
                return original(bytes(data)[: cut + 1], session_id, run_id, **kwargs)  # the mutation
        return _decode_lines

    wrap("maka_ref._store.legacy.profile", "_decode_lines", factory)


@mutant("crash-before-first-event-drops-run", layer="crash", spec="20 §4.6 case C; 20 §4.1", family="MUTANT-GAP-CRASH-002",
        keyword="MUTANT-GAP-CRASH-002")
def apply_before_first_event_drops_run() -> None:
    """A run that was accepted (its header is durable, ``running``) but crashed before its first
    RuntimeEvent is silently skipped by repair: no recovered terminal, the header stays
    ``running`` forever and no repair or skip is reported.

    Spec 20 §4.6 case C: every interrupted run gets a recovered ``failed`` terminal. The
    failure class "a crash before the first checkpoint silently drops an accepted run" has
    shipped in other durable-execution engines. Killed by MUTANT-GAP-CRASH-002.
    """
    runs_mod = importlib.import_module("maka_ref._repair.runs")

    def factory(original: Any) -> Any:
        def _repair_run(store: Any, runs: Any, header: Any, strict: bool, claim_owned: bool, clock: Any) -> Any:
            if not runs_mod.is_terminal_status(header["status"]):
                events, _ = runs_mod._read(store, runs, header, strict)
                if not events:
                    return None  # the mutation: nothing was checkpointed, so nothing to repair
            return original(store, runs, header, strict, claim_owned, clock)
        return _repair_run

    wrap("maka_ref._repair.runs", "_repair_run", factory)


@mutant("crash-stale-writer-accepted", layer="crash", spec="30 §2.1 step 4; 30 §2.2; 30 §9 #18", family="STORE-APPEND-011, CRASH-P*-live-pause",
        keyword="STORE-APPEND-011")
def apply_stale_writer_accepted() -> None:
    """A sealed run (terminal RuntimeEvent committed) accepts late appends: the ``run_sealed``
    check is gone, so a stale concurrent writer (a paused process resumed after another one
    repaired the run) can still add facts after the terminal.

    Spec 30 §2.1 step 4 / §2.2: a sealed run refuses stragglers with ``run_sealed``. Killed by
    STORE-APPEND-011 (and the pause trials of the crash lab).
    """

    def check_run_sealed(conn: Any, session_id: str, run_id: str) -> None:
        return None

    replace("maka_ref._store.insert.primitive", "check_run_sealed", check_run_sealed)


@mutant("crash-old-output-replayed-after-cleanup", layer="crash", spec="20 §3.2; 20 §4.8", family="RECOVERY-RESUME-009",
        keyword="RECOVERY-RESUME-009")
def apply_old_output_replayed_after_cleanup() -> None:
    """A run whose clean-up was interrupted (killed at P9: terminal event durable, header not
    yet terminal) and then repaired to ``completed`` is still picked as a resume candidate, so
    a resume replays its old output into a new continuation.

    Spec 20 §3.2: only ``failed``/``cancelled`` runs are resume candidates; a completed run's
    output is final. Replaying an old output after an interrupted clean-up is a failure class
    other durable-execution engines shipped. Killed by RECOVERY-RESUME-009.
    """
    def factory(original: Any) -> Any:
        def select_resume_candidate(runs: Any) -> Any:
            runs = list(runs)
            widened = [dict(r, status="failed") if hasattr(r, "get") and r.get("status") == "completed" else r
                       for r in runs]
            chosen = original(widened)
            if chosen is None:
                return None
            for r in runs:
                if r.get("runId") == chosen.get("runId") and r.get("sessionId") == chosen.get("sessionId"):
                    return r
            return chosen
        return select_resume_candidate

    wrap("maka_ref._plan.continuation.planner", "select_resume_candidate", factory)
