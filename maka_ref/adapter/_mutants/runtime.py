"""Live runtime mutants (spec 30 §6.5 tool loop; spec 20 §2 P0–P9; spec 20 §4 repair)."""

from __future__ import annotations

import importlib
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap, wrap_method
from maka_ref.adapter._mutants._registry import mutant


@mutant("runtime-result-before-t2", layer="runtime", spec="00 tool loop; 30 §6.5; 20 §2 P5–P6",
        family="RUNTIME-CRASH-P5/P6-t1, CRASH-P5/P6-live-*", keyword="RUNTIME-CRASH-P5 or RUNTIME-CRASH-P6 or RUNTIME-LOOP-003")
def apply_result_before_t2() -> None:
    """A tool's result is handed to the model before its outcome transaction (T2) commits: T2
    is deferred until after the next provider step.

    Rule "result published after T2" (spec 00 tool loop; spec 30 §6.5). A crash after the
    model saw the result but before T2 leaves a dispatch without a response, so a resume would
    re-ask the model about a result it already acted on. Killed by the P5/P6 crash clauses.
    """
    provider_mod = importlib.import_module("maka_ref._runtime.provider")
    run_turn_mod = importlib.import_module("maka_ref._runtime.run_turn")
    from maka_ref._runtime.tool_runtime import ToolRuntime

    pending: list[Any] = []

    class _DeferringStore:
        def __init__(self, store: Any) -> None:
            self._store = store

        def __getattr__(self, name: str) -> Any:
            return getattr(self._store, name)

        def commit_tool_outcome(self, data: Any) -> Any:
            pending.append((self._store, data))  # the mutation: T2 waits for the next model step
            return None

    def flush() -> None:
        while pending:
            store, data = pending.pop(0)
            store.commit_tool_outcome(data)

    def execute_factory(original: Any) -> Any:
        def _execute_t1(self: Any, *args: Any) -> Any:
            real = self.store
            self.store = _DeferringStore(real)
            try:
                return original(self, *args)
            finally:
                self.store = real
        return _execute_t1

    wrap_method(ToolRuntime, "_execute_t1", execute_factory)

    def next_step_factory(original: Any) -> Any:
        def next_step(self: Any, history: Any) -> Any:
            step = original(self, history)  # the model has now seen every result
            flush()
            return step
        return next_step

    wrap_method(provider_mod.ScriptedProvider, "next_step", next_step_factory)

    def finalize_factory(original: Any) -> Any:
        def finalize(self: Any, status: str, error: Any) -> None:
            flush()
            original(self, status, error)
        return finalize

    wrap_method(run_turn_mod._Turn, "finalize", finalize_factory)


@mutant("runtime-tool-runs-when-t1-fails", layer="runtime", spec="30 §6.5; 30 §2.3", family="MUTANT-GAP-RUNTIME-001",
        keyword="MUTANT-GAP-RUNTIME-001")
def apply_tool_runs_when_t1_fails() -> None:
    """When T1 (``commitToolPrepared``) fails, the tool implementation is called anyway (and
    its result discarded) instead of running zero times.

    Spec 30 §6.5: T1 failed → the implementation must run zero times. Reached when a stale
    writer resumes after another process sealed its run (T1 refused ``run_sealed``). Killed by
    MUTANT-GAP-RUNTIME-001 (a pause at P0 while another process repairs and resumes).
    """
    from maka_ref._runtime.tool_runtime import ToolRuntime

    def factory(original: Any) -> Any:
        def _execute_t1(self: Any, step_index: int, call: Any, tool: Any, operation_id: str) -> Any:
            try:
                return original(self, step_index, call, tool, operation_id)
            except Exception as exc:
                if getattr(exc, "code", None) in ("t1_failed", "t1_already_claimed"):
                    from maka_ref._codec.argshash import canonical_args_hash

                    self._run_implementation(tool, call, operation_id, canonical_args_hash(call.name, call.args))
                raise
        return _execute_t1

    wrap_method(ToolRuntime, "_execute_t1", factory)


@mutant("runtime-effect-before-t1", layer="runtime", spec="30 §6.5; 20 §2 P1–P2", family="RUNTIME-CRASH-P1/P2-t1, CRASH-inside-t1-*",
        keyword="RUNTIME-CRASH-P1 or RUNTIME-CRASH-P2 or RUNTIME-TOOLS-003")
def apply_effect_before_t1() -> None:
    """The effect-log line is written and the side effect performed *before* T1 commits
    (preflight → effect → T1 → T2 instead of preflight → T1 → effect → T2).

    Spec 30 §6.5 and spec 20 §2: at P1/P2 (T1 committed, implementation not started) no effect
    may exist; an effect before T1 leaves an effect nobody can account for after a crash.
    Killed by RUNTIME-CRASH-P1-t1 / P2-t1 (effect log at the kill).
    """
    from maka_ref._runtime.tool_runtime import ToolRuntime

    def factory(original: Any) -> Any:
        def _execute_t1(self: Any, step_index: int, call: Any, tool: Any, operation_id: str) -> Any:
            from maka_ref._codec.argshash import canonical_args_hash

            done = self._run_implementation(tool, call, operation_id, canonical_args_hash(call.name, call.args))
            real = self._run_implementation

            def already(*args: Any) -> Any:
                return done

            self._run_implementation = already
            try:
                return original(self, step_index, call, tool, operation_id)
            finally:
                self._run_implementation = real
        return _execute_t1

    wrap_method(ToolRuntime, "_execute_t1", factory)


@mutant("runtime-header-before-terminal", layer="runtime", spec="20 §2 P8–P9; 30 §6.5", family="RUNTIME-CRASH-P8-*, RECOVERY-REPAIR-003",
        keyword="RUNTIME-CRASH-P8 or RECOVERY-REPAIR")
def apply_header_before_terminal() -> None:
    """The run header is set terminal (``completed``) *before* the terminal RuntimeEvent is made
    durable, instead of after the terminal barrier.

    Spec 20 §2 (P8 before the terminal event, P9 after it) and the run_turn rule "terminal
    event before header": a crash between the two leaves a header claiming completion with no
    terminal fact. Killed by RUNTIME-CRASH-P8-* and RECOVERY-REPAIR-003.
    """
    run_turn_mod = importlib.import_module("maka_ref._runtime.run_turn")

    def factory(original: Any) -> Any:
        def finalize(self: Any, status: str, error: Any) -> None:
            ts = self.clock()
            patch: dict[str, Any] = {"status": status, "updatedAt": ts, "completedAt": ts}
            if status == "failed" and error is not None:
                patch["failureClass"] = error["code"]
                patch["failureMessage"] = (error.get("message") or "")[:2000]
            self.runs.update_run(self.ids.session_id, self.ids.run_id, patch)  # the mutation: header first
            original(self, status, error)
        return finalize

    wrap_method(run_turn_mod._Turn, "finalize", factory)


@mutant("runtime-repair-not-idempotent", layer="runtime", spec="20 §4.1; 20 §4.6", family="RECOVERY-REPAIR-*",
        keyword="RECOVERY-REPAIR")
def apply_repair_not_idempotent() -> None:
    """A second ``runtime.repair`` repairs again: a run whose header already matches its terminal
    fact is rewritten (``updatedAt`` bumped) and reported as repaired.

    Spec 20 §4.1/§4.6: startup repair is idempotent; a repaired workspace repairs to nothing.
    Killed by RECOVERY-REPAIR-* (the second repair must report no repairs).
    """
    runs_mod = importlib.import_module("maka_ref._repair.runs")

    def factory(original: Any) -> Any:
        def _repair_run(store: Any, runs: Any, header: Any, strict: bool, claim_owned: bool, clock: Any) -> Any:
            result = original(store, runs, header, strict, claim_owned, clock)
            if result is None and runs_mod.is_terminal_status(header["status"]):
                events, _ = runs_mod._read(store, runs, header, strict)
                fact = runs_mod.classify_terminal(header, events)
                if fact.kind == "fact" and fact.event is not None:
                    updated = runs.update_run(header["sessionId"], header["runId"],
                                              {"updatedAt": int(header.get("updatedAt") or 0) + 1})
                    return runs_mod._entry(header, "header_from_terminal_fact", updated, fact.event["id"],
                                           runs_mod.FACT_REASON)
            return result
        return _repair_run

    wrap("maka_ref._repair.runs", "_repair_run", factory)


@mutant("runtime-reserved-files-not-confined", layer="runtime", spec="protocol §4.3; adapter guide §6; 20 §6.1",
        family="RUNTIME-TOOLS-004", keyword="RUNTIME-TOOLS")
def apply_reserved_files_not_confined() -> None:
    """The tools may target the runtime's own files: ``runtime.sqlite`` and its sidecars,
    ``.maka-workspace.json`` and ``.maka-effects.jsonl`` (directly or through a symlink) are
    ordinary workspace paths.

    Protocol §4.3 / adapter guide §6 confinement: a path naming the store's files or the
    effect log is refused (a tool error result); a model that can rewrite the ledger, the
    workspace identity or the harness's "ran twice" oracle can forge any recovery decision.
    Killed by RUNTIME-TOOLS-004.
    """

    def _reserved(component: str) -> bool:
        return False  # the mutation: no name is reserved

    replace("maka_ref._runtime.paths", "_reserved", _reserved)
