"""The implementation under test, as the clauses see it: one shared protocol session per
worker for stateless requests, and fresh processes for clauses that kill or reopen.

Why two kinds: the ledger clauses send hundreds of pure requests, and starting a process for
each would dominate the run; store and runtime clauses need a process of their own because
they kill it, or because a fresh process must reopen the files (the whole point of the
contract). Either way, every process is reaped through :mod:`crashlab`'s client, and a
process that misbehaves fails the clause with the client's verdict, never hangs it.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from typing import Any, Iterator, Mapping, Sequence

from conformance._suite.clause import ClauseMismatch

__all__ = ["DEFAULT_TIMEOUT", "ImplementationSession", "default_command", "ImplementationUnavailable"]

DEFAULT_TIMEOUT = 30.0


def default_command() -> list[str]:
    """The bundled reference runtime's adapter, run by the current interpreter."""
    return [sys.executable, "-m", "maka_ref.adapter"]


class ImplementationUnavailable(Exception):
    """The implementation could not be started or failed its handshake (carries the verdict)."""

    def __init__(self, verdict: str, message: str, stderr_tail: str = "") -> None:
        super().__init__(f"{verdict}: {message}")
        self.verdict = verdict
        self.message = message
        self.stderr_tail = stderr_tail


def shutdown_problem(report: Any) -> str | None:
    """What was wrong with how a session ended (protocol §1.2, §1.7), or ``None``.

    Why every close is judged: the protocol says the implementation MUST exit with status 0
    within 5 s of end-of-file on stdin and leave no process behind. A session that needed
    SIGTERM or SIGKILL (``shutdown_timeout``), exited with another status (``exited``) or
    left a process running (``survivors``) fails the clause that closed it. A session the
    clause killed on purpose (``report.killed``) is judged only on survivors.
    """
    verdict = report.verdict
    if verdict == "survivors":
        return f"survivors: processes of the implementation outlived it (killed): {list(report.survivors)}"
    if verdict == "shutdown_timeout":
        return (f"shutdown_timeout: the implementation did not exit within 5 s of end-of-file on stdin "
                f"(needed {report.escalated.upper() if report.escalated else 'a signal'}; exit status {report.exit_status})")
    if verdict == "exited":
        return f"exited: the implementation exited with status {report.exit_status} at end of session (protocol §1.7 wants 0)"
    return None


def _validator() -> Any:
    from conformance.protocol import validate_response

    return validate_response


class ImplementationSession:
    """Spawns implementation processes for one pytest worker.

    ``handshake`` is taken once (lazily) from the shared process; it decides which clauses are
    claimed. ``call`` sends one request over the shared process and respawns it after a
    failure, so one crashing request fails one clause, not the rest of the run.
    """

    def __init__(self, command: str | Sequence[str] | None, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if command is None or (isinstance(command, str) and not command.strip()):
            self.command: list[str] = default_command()
        elif isinstance(command, str):
            self.command = shlex.split(command)
        else:
            self.command = list(command)
        self.timeout = timeout
        self._shared: Any = None
        self._handshake: Any = None
        self._unavailable: ImplementationUnavailable | None = None
        self.survivor_reports: list[str] = []

    # -- processes --------------------------------------------------------------------------

    def spawn(self, *, cwd: str | None = None, env: Mapping[str, str] | None = None) -> Any:
        """A new :class:`crashlab.ProtocolClient` (handshake done); the caller closes it."""
        from crashlab import ProtocolClient, ProtocolFailure

        try:
            client = ProtocolClient.start(self.command, cwd=cwd, env=dict(env) if env else None,
                                          request_timeout=self.timeout, validator=_validator())
        except ProtocolFailure as exc:
            raise ImplementationUnavailable(exc.verdict, exc.message, exc.stderr_tail) from None
        except OSError as exc:
            raise ImplementationUnavailable("spawn_failed", f"{self.command!r}: {exc}") from None
        if self._handshake is None:
            self._handshake = client.handshake
        return client

    @property
    def handshake(self) -> Any:
        """The implementation's handshake; raises :class:`ImplementationUnavailable`."""
        if self._handshake is None:
            self._ensure_shared()
        return self._handshake

    def claims(self, capability: str) -> bool:
        return capability in self.handshake.capabilities

    def _ensure_shared(self) -> Any:
        if self._unavailable is not None:
            raise self._unavailable
        if self._shared is None:
            try:
                self._shared = self.spawn()
            except ImplementationUnavailable as exc:
                self._unavailable = exc
                raise
        return self._shared

    def call(self, op: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """One request on the shared process; a protocol failure is re-raised as a clause
        failure (the client has already killed and reaped the process; the next call
        starts a new one)."""
        from crashlab import ProtocolFailure

        for attempt in (1, 2):
            client = self._ensure_shared()
            try:
                return client.call(op, params or {}, timeout=timeout)
            except RuntimeError:
                # the client had already ended the session (e.g. a harness-side error killed
                # it): start a new process and send the request once more
                if attempt == 2:
                    raise
                self._shared = None
            except ProtocolFailure as exc:
                self._shared = None
                raise ClauseMismatch(f"the implementation misbehaved on {op}: {exc.verdict}: {exc.message}",
                                     evidence={"verdict": exc.verdict, "stderrTail": exc.stderr_tail}) from None
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def fresh(self, *, cwd: str | None = None, env: Mapping[str, str] | None = None) -> Iterator[Any]:
        """A dedicated process for one clause; closed and checked for survivors afterwards
        (a survivor fails the clause, as the protocol says)."""
        client = self.spawn(cwd=cwd, env=env)
        try:
            yield client
        finally:
            report = client.close()
            problem = shutdown_problem(report)
            if problem is not None:
                raise ClauseMismatch(problem, evidence={"verdict": report.verdict, "exitStatus": report.exit_status,
                                                        "stderrTail": client.stderr_tail})

    def close(self) -> None:
        """End the shared session; a shutdown that broke protocol §1.7 (or left processes
        behind) is recorded in :attr:`survivor_reports`, which the report lists as a harness
        error (so the run fails: no single clause closed the shared process)."""
        if self._shared is not None:
            report = self._shared.close()
            self._shared = None
            problem = shutdown_problem(report)
            if problem is not None:
                self.survivor_reports.append(f"shared session: {problem}")

    @property
    def stderr_tail(self) -> str:
        return self._shared.stderr_tail if self._shared is not None else ""
