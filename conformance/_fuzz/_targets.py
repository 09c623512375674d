"""The two sides of a differential run: the reference in this process, the implementation over
the wire protocol in one long-lived process.

Why one long-lived process: starting an implementation costs far more than answering a
thousand pure requests, and the protocol is designed for many requests per session
(``docs/protocol.md`` §1). Why ``batch``: one protocol line per request makes the pipe round
trip the cost; the optional ``batch`` operation (§4.5) sends a whole example (a ledger's
``resolve`` and ``plan``, or a write schedule) in one line. An implementation that answers
``unknown_op`` is driven one request at a time, with the same answers expected.

An implementation that crashes, hangs or breaks the protocol does not stop the run: its
answer becomes ``{"verdict", "message"}`` (crashlab's verdict), which disagrees with every
reference answer, and the next request starts a fresh process.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from typing import Any, Mapping, Sequence

__all__ = ["Request", "ProtocolTarget", "ReferenceTarget", "command_line"]

#: One request: (op, params).
Request = tuple[str, Mapping[str, Any]]


def command_line(impl: str | Sequence[str] | None) -> list[str]:
    """The implementation's argv (default: the bundled reference adapter)."""
    if impl is None or (isinstance(impl, str) and not impl.strip()):
        return [sys.executable, "-m", "maka_ref.adapter"]
    return shlex.split(impl) if isinstance(impl, str) else list(impl)


class ReferenceTarget:
    """``maka_ref`` in this process, answering exactly what its adapter would answer.

    It is the adapter's own operation table (:class:`maka_ref.adapter._dispatch.Dispatcher`)
    without the pipe, so an error has the same code and a result the same shape. Answers are
    compared as they come (the comparison is JSON equality over any mapping / sequence, so a
    tuple equals a list); they are written and read back as the protocol client would read
    them only when they go into a bundle (:func:`~conformance._fuzz._values.parse_like_client`),
    because doing it for every answer would halve the in-process rate.
    """

    name = "reference (maka_ref in process)"

    def __init__(self) -> None:
        from maka_ref.adapter._dispatch import Dispatcher

        self._dispatcher = Dispatcher()

    def run(self, requests: Sequence[Request]) -> list[dict[str, Any]]:
        handle = self._dispatcher.handle
        return [handle(op, params) for op, params in requests]

    def close(self) -> None:
        self._dispatcher.close()


class ProtocolTarget:
    """The implementation under test, one process, batched when it offers ``batch``."""

    def __init__(self, command: list[str], *, cwd: str | None = None, timeout: float = 30.0,
                 max_batch: int = 256, use_batch: bool = True) -> None:
        self.command = command
        self.cwd = cwd
        self.timeout = timeout
        self.max_batch = max(1, max_batch)
        #: None until the first batch is tried; False after ``unknown_op`` (or ``use_batch=False``).
        self.batching: bool | None = None if use_batch else False
        self.handshake: dict[str, Any] | None = None
        self.restarts = 0
        self.round_trips = 0
        #: Requests sent per operation (the items of a batch, not the batch itself).
        self.sent: Counter[str] = Counter()
        self._client: Any = None

    @property
    def name(self) -> str:
        return shlex.join(self.command)

    def _started(self) -> Any:
        if self._client is None:
            from conformance.protocol import validate_response
            from crashlab import ProtocolClient

            self._client = ProtocolClient.start(self.command, cwd=self.cwd, request_timeout=self.timeout,
                                                validator=validate_response)
            self.handshake = dict(self._client.handshake.raw)
        return self._client

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.kill()
            except Exception:  # noqa: BLE001 - already dead or reaped: nothing to do
                pass
            self.restarts += 1

    def run(self, requests: Sequence[Request]) -> list[dict[str, Any]]:
        """One answer per request, in order (a verdict dict where the implementation failed)."""
        self.sent.update(op for op, _ in requests)
        out: list[dict[str, Any]] = []
        for start in range(0, len(requests), self.max_batch):
            out.extend(self._run_chunk(requests[start:start + self.max_batch]))
        return out

    def _run_chunk(self, chunk: Sequence[Request]) -> list[dict[str, Any]]:
        from crashlab import ProtocolFailure

        try:
            client = self._started()
        except ProtocolFailure as exc:
            return [_verdict(exc.verdict, exc.message)] * len(chunk)
        if self.batching is not False and len(chunk) > 1:
            try:
                self.round_trips += 1
                reply = client.call("batch", {"requests": [{"op": op, "params": dict(p)} for op, p in chunk]})
            except ProtocolFailure as exc:
                self._drop()
                return [_verdict(exc.verdict, exc.message)] * len(chunk)
            if reply.ok:
                responses = (reply.result or {}).get("responses")
                if isinstance(responses, list) and len(responses) == len(chunk):
                    self.batching = True
                    return [dict(r) if isinstance(r, dict) else _verdict("protocol_violation", "not an object")
                            for r in responses]
                return [_verdict("protocol_violation", "batch answered with the wrong number of responses")] * len(chunk)
            # ``unknown_op`` is the protocol's answer; any other refusal of the batch itself is
            # treated the same way (the items are then answered, and compared, one by one).
            self.batching = False
        return [self._one(op, params) for op, params in chunk]

    def _one(self, op: str, params: Mapping[str, Any]) -> dict[str, Any]:
        from crashlab import ProtocolFailure

        try:
            client = self._started()
            self.round_trips += 1
            reply = client.call(op, dict(params))
        except ProtocolFailure as exc:
            self._drop()
            return _verdict(exc.verdict, exc.message)
        if reply.ok:
            return {"ok": True, "result": reply.result}
        return {"ok": False, "error": dict(reply.error or {})}

    def stderr_tail(self) -> str:
        return self._client.stderr_tail if self._client is not None else ""

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - a failing shutdown is not a disagreement
                pass


def _verdict(verdict: str, message: str) -> dict[str, Any]:
    return {"verdict": verdict, "message": message}
