"""The wire-protocol client: one session with one implementation under test (protocol §1–§3).

Why it is shaped like this: the harness must never hang and never leave a process behind,
whatever the implementation does. So every wait has a deadline (a queue fed by reader
threads, a ``select``-bounded write), every misbehaviour is turned into a
:class:`ProtocolFailure` with a verdict of protocol §7 *after* the whole process tree is
killed and reaped, and the tree is tracked from the first reply on (see ``_process``).

The client is not thread-safe: one thread drives one session, as the protocol demands (one
request in flight at a time).
"""

from __future__ import annotations

import os
import queue
import secrets
import shlex
import signal
import time
import weakref
from typing import Any, Callable, Mapping, NoReturn, Sequence

from crashlab._client import _cgroup
from crashlab._client import _messages as msgs
from crashlab._client._errors import ProtocolFailure
from crashlab._client._lines import MAX_LINE_BYTES, Eof, Flood, LeaderGone, Line, LineReader
from crashlab._client._process import SESSION_ENV, ProcessTree, spawn, watch_exit, write_all
from crashlab._client._results import CloseReport, Handshake, KillProof, Reply
from crashlab._client._stderr import StderrTail

__all__ = ["ProtocolClient", "Validator"]

#: ``validator(op, message) -> list of problems``; an empty list means the response is valid.
Validator = Callable[[str, Mapping[str, Any]], list[str]]

_EXIT_GRACE_S = 2.0  # how long a process that closed stdout gets to report its exit status
_THREAD_JOIN_S = 1.0
_SIGTERM_GRACE_S = 2.0  # protocol §1.7
#: After the leader's exit: how long a response it wrote just before exiting may take to
#: come through the reader thread (it is already in the pipe; this is scheduling slack).
_LAST_WORDS_S = 0.5


class ProtocolClient:
    """A running implementation that has answered ``hello``. Build it with :meth:`start`."""

    handshake: Handshake
    pid: int

    def __init__(
        self, tree: ProcessTree, *, request_timeout: float, validator: Validator | None
    ) -> None:
        popen = tree.popen
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self._tree = tree
        self.pid = tree.pid
        self._stdin = popen.stdin
        self._stdout = LineReader(popen.stdout.fileno())
        self._stderr = StderrTail(popen.stderr.fileno())
        self._request_timeout = request_timeout
        self._validator = validator
        self._next_id = 0
        self._state = "running"  # running | at_failpoint | dead | closed
        self._kill_proof: KillProof | None = None
        self._close_report: CloseReport | None = None
        self._leader_gone = False
        self._leader_gone_at = 0.0
        self._finalizer = weakref.finalize(self, tree.emergency_kill)
        items = self._stdout.items
        watch_exit(tree.pid, lambda: items.put(LeaderGone()))

    # ------------------------------------------------------------------ start

    @classmethod
    def start(
        cls,
        command: str | Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        request_timeout: float = 30.0,
        handshake_timeout: float = 15.0,
        validator: Validator | None = None,
        harness_name: str = "maka-conformance",
        harness_version: str | None = None,
        prefork: bool | None = None,
    ) -> "ProtocolClient":
        """Spawn ``command`` in a new session, shake hands, return the live client.

        ``env`` (default: this process's environment) gets ``MAKA_CONFORMANCE=1`` and the
        session token :data:`~crashlab._client._process.SESSION_ENV` added. On any failure
        the tree is reaped and :class:`ProtocolFailure` is raised (``spawn_failed``,
        ``handshake_failed``, or the specific verdict such as ``timeout``).
        """
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("empty command")
        child_env = dict(os.environ if env is None else env)
        child_env["MAKA_CONFORMANCE"] = "1"
        child_env[SESSION_ENV] = secrets.token_hex(16)
        cgroup = _cgroup.create(child_env[SESSION_ENV][:16])
        try:
            popen = spawn(argv, cwd=cwd, env=child_env, prefork=prefork, cgroup=cgroup)
        except (OSError, ValueError) as exc:
            if cgroup is not None:
                cgroup.remove()
            raise ProtocolFailure("spawn_failed", f"cannot start {argv!r}: {exc}", op="hello") from None
        if cgroup is not None and not cgroup.contains(popen.pid) and not cgroup.join(popen.pid):
            cgroup.remove()  # the kernel refused: track as without cgroups
            cgroup = None
        client = cls(
            ProcessTree(popen, child_env[SESSION_ENV], cgroup),
            request_timeout=request_timeout,
            validator=validator,
        )
        version = harness_version if harness_version is not None else msgs.default_harness_version()
        reply = client._exchange("hello", msgs.hello_params(harness_name, version), handshake_timeout)
        assert isinstance(reply, Reply)
        try:
            client.handshake = msgs.parse_handshake(reply)
        except ValueError as exc:
            client._fail("handshake_failed", str(exc), "hello")
        return client

    # ------------------------------------------------------------------ requests

    @property
    def stderr_tail(self) -> str:
        """The last 64 KiB the implementation wrote to stderr so far."""
        return self._stderr.text()

    def call(
        self, op: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> Reply:
        """Send one request and return its response; any misbehaviour raises :class:`ProtocolFailure`."""
        reply = self._exchange(op, params or {}, timeout)
        assert isinstance(reply, Reply)
        return reply

    def call_until_failpoint(
        self, op: str, params: Mapping[str, Any] | None, *, failpoint: str, timeout: float
    ) -> Reply | str:
        """Send a request that should reach the armed ``failpoint``.

        Returns the failpoint id once ``{"failpoint": id}`` is announced (the process is then
        blocked, waiting for :meth:`kill`), or the :class:`Reply` if the operation completed
        without reaching it (the caller decides: "unreached").
        """
        return self._exchange(op, params or {}, timeout, failpoint=failpoint)

    def _exchange(
        self, op: str, params: Mapping[str, Any], timeout: float | None, failpoint: str | None = None
    ) -> Reply | str:
        if self._state != "running":
            raise RuntimeError(f"cannot send {op!r}: the session is {self._state}")
        try:
            return self._exchange_unguarded(op, params, timeout, failpoint)
        except ProtocolFailure:
            raise
        except BaseException:
            self._reap_quietly()  # a harness bug or Ctrl-C: still leave nothing running
            raise

    def _exchange_unguarded(
        self, op: str, params: Mapping[str, Any], timeout: float | None, failpoint: str | None
    ) -> Reply | str:
        timeout = self._request_timeout if timeout is None else timeout
        request_id = self._next_id
        line = msgs.encode_request(request_id, op, params)  # bad params: TypeError, nothing sent
        self._next_id += 1
        self._check_quiet(op, request_id)
        deadline = time.monotonic() + timeout
        try:
            written = write_all(self._stdin.fileno(), line, deadline)
        except BrokenPipeError:
            self._fail_exited(op, f"closed stdin before request {request_id}", b"")
        if not written:
            self._fail("timeout", f"did not read request {request_id} within {timeout:g} s", op)
        item = self._next_item(deadline)
        if item is None:
            if self._leader_gone:
                self._fail_exited(op, f"exited before answering request {request_id}", b"")
            self._fail("timeout", f"no response to request {request_id} within {timeout:g} s", op)
        if isinstance(item, Eof):
            self._fail_exited(op, f"exited before answering request {request_id}", item.partial)
        if isinstance(item, Flood):
            self._fail_flood(op, item)
        try:
            message = msgs.parse_object(item.data)
        except ValueError as exc:
            self._fail("protocol_violation", f"{exc}: {msgs.preview(item.data)}", op)
        if msgs.is_announcement(message):
            return self._on_announcement(op, message, failpoint, item.data)
        problem = msgs.check_response(message, request_id)
        if problem is not None:
            self._fail("protocol_violation", f"{problem}: {msgs.preview(item.data)}", op)
        if self._validator is not None:
            errors = self._validator(op, message)
            if errors:
                self._fail("protocol_violation", msgs.describe_schema_errors(errors), op)
        self._tree.snapshot()
        return msgs.to_reply(message)

    def _on_announcement(
        self, op: str, message: Mapping[str, Any], failpoint: str | None, data: bytes
    ) -> str:
        announced = message.get("failpoint")
        if not isinstance(announced, str):
            self._fail("protocol_violation", f"malformed failpoint announcement: {msgs.preview(data)}", op)
        if failpoint is None or announced != failpoint:
            armed = f"{failpoint!r} was armed" if failpoint else "none was armed"
            self._fail("unexpected_failpoint", f"announced failpoint {announced!r} but {armed}", op)
        self._state = "at_failpoint"
        self._tree.snapshot()
        return announced

    def _next_item(self, deadline: float) -> Line | Eof | Flood | None:
        """The next item from stdout before ``deadline``, or ``None``.

        Once the leader has exited, waiting stops :data:`_LAST_WORDS_S` later whatever the
        deadline: a descendant holding stdout open must not make the request wait it out."""
        while True:
            if self._leader_gone:
                deadline = min(deadline, self._leader_gone_at + _LAST_WORDS_S)
            try:
                item = self._stdout.items.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                return None
            if not isinstance(item, LeaderGone):
                return item
            self._leader_gone = True
            self._leader_gone_at = time.monotonic()

    def _check_quiet(self, op: str, request_id: int) -> None:
        """Before a request: anything already on stdout is unsolicited (e.g. a second response)."""
        item = self._next_item(time.monotonic())
        if item is None:
            if self._leader_gone:
                self._fail_exited(op, f"exited before request {request_id}", b"")
            return
        if isinstance(item, Eof):
            self._fail_exited(op, f"exited before request {request_id}", item.partial)
        if isinstance(item, Flood):
            self._fail_flood(op, item)
        self._fail("protocol_violation", msgs.describe_unsolicited(item.data, request_id), op)

    # ------------------------------------------------------------------ failures

    def _fail(
        self, verdict: str, message: str, op: str | None, exit_status: int | None = None
    ) -> NoReturn:
        proof = self._terminate()
        raise ProtocolFailure(
            verdict,
            message,
            op=op,
            stderr_tail=self._stderr.text(),
            exit_status=proof.returncode if exit_status is None else exit_status,
            survivors=proof.survivors,
        )

    def _fail_exited(self, op: str, message: str, partial: bytes) -> NoReturn:
        status = self._tree.wait_leader(_EXIT_GRACE_S)
        if partial:
            message += f" after a partial line {msgs.preview(partial)}"
        if status is None:
            message += "; it closed stdout but kept running, so it was killed"
        elif status < 0:  # not its own exit: say so (a signal from outside, e.g. the OOM killer)
            message += f" (killed by signal {-status}{' SIGKILL' if status == -signal.SIGKILL else ''})"
        else:
            message += f" (exit status {status}{', e.g. end of input on stdin' if status == 0 else ''})"
        self._fail("exited", message, op, exit_status=status)

    def _fail_flood(self, op: str, item: Flood) -> NoReturn:
        size = f"more than {MAX_LINE_BYTES} bytes ({item.size} read)"
        self._fail("output_flood", f"a line of {size}: {msgs.preview(item.head)}", op)

    # ------------------------------------------------------------------ ending

    def kill(self) -> KillProof:
        """SIGKILL the process group, reap the leader and every straggler; prove it."""
        if self._kill_proof is not None:
            return self._kill_proof
        if self._state == "closed":
            raise RuntimeError("the session is already closed")
        return self._terminate()

    def _terminate(self) -> KillProof:
        survivors = self._tree.kill_all()
        returncode = self._tree.popen.returncode
        if returncode is None:  # survived SIGKILL for 5 s (uninterruptible sleep)
            survivors = tuple(sorted({*survivors, self.pid}))
            returncode = self._tree.wait_leader(1.0)
        proof = KillProof(
            pid=self.pid,
            returncode=returncode if returncode is not None else 0,
            killed_by_sigkill=returncode == -signal.SIGKILL,
            survivors=survivors,
        )
        self._kill_proof = proof
        self._state = "dead"
        self._release()
        return proof

    def _reap_quietly(self) -> None:
        try:
            if self._kill_proof is None:
                self._terminate()
        except Exception:  # pragma: no cover - never mask the original exception
            self._tree.emergency_kill()

    def close(self, timeout: float = 5.0) -> CloseReport:
        """End the session: EOF on stdin, then SIGTERM, then SIGKILL; reap the tree. Idempotent."""
        if self._close_report is not None:
            return self._close_report
        if self._state == "at_failpoint" or self._kill_proof is not None:
            proof = self.kill()
            report = CloseReport(proof.returncode, None, proof.survivors, killed=True)
        else:
            report = self._shutdown(timeout)
        self._close_report = report
        self._state = "closed"
        return report

    def _shutdown(self, timeout: float) -> CloseReport:
        self._tree.snapshot()
        try:
            self._stdin.close()  # end of session: EOF on stdin (protocol §1.7)
        except OSError:
            pass
        status, escalated, survivors = self._tree.shutdown(timeout, _SIGTERM_GRACE_S)
        self._release()
        return CloseReport(exit_status=status, escalated=escalated, survivors=survivors)

    def _release(self) -> None:
        """Join the reader threads and close our pipe ends (only those whose reader ended)."""
        self._finalizer.detach()
        self._tree.release()
        popen = self._tree.popen
        for reader, stream in ((self._stdout, popen.stdout), (self._stderr, popen.stderr)):
            if reader.join(_THREAD_JOIN_S) and stream is not None:
                stream.close()
        try:
            self._stdin.close()
        except OSError:
            pass

    def __enter__(self) -> "ProtocolClient":
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """Clean exit: :meth:`close`. Exception (a harness bug, Ctrl-C): kill at once, then
        close, so the original exception propagates without waiting out a shutdown."""
        if exc_type is not None:
            self._reap_quietly()
        try:
            self.close()
        except Exception:  # never replace the original exception (or raise from a clean exit)
            self._reap_quietly()
