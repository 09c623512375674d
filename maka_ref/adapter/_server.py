"""The stdin/stdout loop of ``python -m maka_ref.adapter`` (``docs/protocol.md`` §1–§2).

Why the file-descriptor dance: stdout must carry nothing but protocol lines, yet parts of the
reference write to file descriptor 1 directly (the continuation crash points write
``READY:<name>`` with ``os.write(1, …)``) or print. So at start-up the real stdout is
duplicated to a private descriptor used only for protocol output, and descriptor 1 (and
``sys.stdout``) are pointed at stderr. Protocol lines are written with one ``os.write`` each
under a lock, so the failpoint announcement (written from whatever thread reaches the point)
can never interleave with a response.

One request, one response, in order; end-of-file on stdin closes the stores and exits 0.

Bounded requests: a line may not exceed :data:`MAX_LINE_BYTES` (§1.3). A longer one is
answered ``request_too_large`` (``id`` null: the id is somewhere in bytes never parsed) as
soon as the cap is passed, its remaining bytes up to the next newline are read in small
chunks and dropped, and the loop goes on with the next request. So the adapter's memory for
one request is the cap, not what a client sends.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, BinaryIO, Callable, Iterator

from maka_ref.adapter import _faults
from maka_ref.adapter._dispatch import CAPABILITIES, Dispatcher
from maka_ref.adapter._errors import OpError
from maka_ref.adapter._wire import decode_line, encode_message

__all__ = ["MAX_LINE_BYTES", "ProtocolOutput", "main", "read_requests", "serve"]

#: Longest request line, without its ``\n`` (protocol §1.3).
MAX_LINE_BYTES = 16 * 1024 * 1024
_DISCARD_CHUNK = 64 * 1024


class ProtocolOutput:
    """The private protocol stdout: whole lines, one ``os.write`` loop each, under a lock."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: Any) -> None:
        data = encode_message(message)
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]

    def announce(self, name: str) -> None:
        """Protocol §2.3: ``{"failpoint": "<id>"}``; the caller then blocks until killed."""
        self.send({"failpoint": name})


def _valid_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def respond(dispatcher: Dispatcher, line: bytes) -> dict[str, Any]:
    """The response to one request line (``id`` is ``null`` when the line has no usable id)."""
    try:
        message = decode_line(line)
    except (ValueError, UnicodeDecodeError) as exc:  # InvalidJSONTextError is a ValueError
        return {"id": None, "ok": False, "error": OpError("invalid_params", f"request is not JSON: {exc}").to_json()}
    if not isinstance(message, dict) or not _valid_id(message.get("id")):
        error = OpError("invalid_params", "a request is an object with a non-negative integer id")
        return {"id": None, "ok": False, "error": error.to_json()}
    request_id = message["id"]
    op = message.get("op")
    params = message.get("params", {})
    if not isinstance(op, str):
        return {"id": request_id, "ok": False, "error": OpError("invalid_params", "op must be a string").to_json()}
    if not isinstance(params, dict):
        return {"id": request_id, "ok": False, "error": OpError("invalid_params", "params must be an object").to_json()}
    return {"id": request_id, **dispatcher.handle(op, params)}


def _discard_rest_of_line(stdin: BinaryIO) -> None:
    """Drop bytes up to and including the next ``\n`` (or end-of-file), a chunk at a time."""
    while True:
        chunk = stdin.readline(_DISCARD_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def read_requests(stdin: BinaryIO, on_too_large: Callable[[], None]) -> Iterator[bytes]:
    """Every request line of ``stdin`` (at most :data:`MAX_LINE_BYTES` plus its ``\n``).
    For a longer line ``on_too_large`` is called once the cap is passed, then the rest of the
    line is discarded without being kept."""
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if not line.endswith(b"\n") and len(line) > MAX_LINE_BYTES:
            del line
            on_too_large()
            _discard_rest_of_line(stdin)
            continue
        yield line


def _too_large_response() -> dict[str, Any]:
    error = OpError(
        "request_too_large",
        f"a request line is longer than {MAX_LINE_BYTES} bytes (protocol §1.3); it was discarded",
        {"maxLineBytes": MAX_LINE_BYTES},
    )
    return {"id": None, "ok": False, "error": error.to_json()}


def serve(stdin: BinaryIO, output: ProtocolOutput, claims: tuple[str, ...] = CAPABILITIES) -> int:
    """Answer every request line of ``stdin``; return 0 at end-of-file."""
    dispatcher = Dispatcher(claims)
    _faults.install_announcer(output.announce)
    try:
        for line in read_requests(stdin, lambda: output.send(_too_large_response())):
            if not line.strip():
                continue
            output.send(respond(dispatcher, line))
    finally:
        dispatcher.close()
    return 0


def _private_stdout() -> ProtocolOutput:
    """Keep the real stdout for protocol lines; send descriptor 1 and ``sys.stdout`` to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return ProtocolOutput(protocol_fd)


def _parse_args(argv: list[str] | None) -> tuple[str, ...]:
    """``--claim CAP`` (repeatable) claims only those capabilities (default: all of them).

    Why: the harness's own tests need an implementation that claims less, to check that an
    unclaimed capability is reported "not claimed"; other operations answer ``not_claimed``.

    ``--mutant NAME`` applies one deliberately broken behaviour of the mutant corpus
    (``maka_ref/adapter/_mutants``, ``docs/selftest.md``) before serving; repeated, it applies
    each (an implementation with several independent bugs, which the fuzzer must report as
    separate disagreements); ``--list-mutants`` prints the corpus and exits. An unknown name
    exits 2 with the list. The corpus is imported only when one of these options is given: the
    normal code path never touches it.
    ``--variant NAME`` / ``--list-variants`` do the same for the legal-variant corpus
    (``maka_ref/adapter/_variants``): correct implementations the suite must pass.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m maka_ref.adapter", description=__doc__.splitlines()[0])
    parser.add_argument("--claim", action="append", choices=CAPABILITIES, metavar="CAPABILITY",
                        help="claim only this capability (repeatable; default: every capability)")
    parser.add_argument("--mutant", metavar="NAME", action="append",
                        help="apply a mutant of the self-test corpus (see --list-mutants; repeatable: several "
                             "independent bugs at once)")
    parser.add_argument("--list-mutants", action="store_true", help="list the mutant corpus and exit")
    parser.add_argument("--variant", metavar="NAME",
                        help="apply one legal variant of the self-test corpus (see --list-variants)")
    parser.add_argument("--list-variants", action="store_true", help="list the legal-variant corpus and exit")
    args = parser.parse_args(argv)
    if args.list_variants or args.variant is not None:
        from maka_ref.adapter import _variants

        if args.list_variants:
            sys.stdout.write(_variants.render_list())
            sys.exit(0)
        if args.variant not in _variants.VARIANTS:
            sys.stderr.write(f"python -m maka_ref.adapter: unknown variant {args.variant!r}; known variants:\n"
                             + _variants.render_list())
            sys.exit(2)
        _variants.apply(args.variant)
    if args.list_mutants or args.mutant is not None:
        from maka_ref.adapter import _mutants

        if args.list_mutants:
            sys.stdout.write(_mutants.render_list())
            sys.exit(0)
        for name in args.mutant:
            if name not in _mutants.MUTANTS:
                sys.stderr.write(f"python -m maka_ref.adapter: unknown mutant {name!r}; known mutants:\n"
                                 + _mutants.render_list())
                sys.exit(2)
        for name in dict.fromkeys(args.mutant):
            _mutants.apply(name)
    return tuple(args.claim) if args.claim else CAPABILITIES


def main(argv: list[str] | None = None) -> None:
    claims = _parse_args(argv)
    output = _private_stdout()
    os.environ.setdefault("MAKA_CONFORMANCE", "1")
    code = serve(sys.stdin.buffer, output, claims)
    sys.exit(code)
