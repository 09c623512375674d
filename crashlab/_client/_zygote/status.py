"""The zygote's end of one child's status socket: read the request, send a line, report
the exit of a reaped child, notice that the client closed its end.

Separate from :mod:`crashlab._client._zygote.server` because it is the wire format of that
socket (see the protocol there), not the fork loop that multiplexes the sockets.
"""

from __future__ import annotations

import os
import socket

# Private helpers only: imported by name into crashlab._client._zygote.server.
__all__: list[str] = []


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            raise EOFError("status socket closed during the request")
        buf += chunk
    return bytes(buf)


def _send(sock: socket.socket, text: str) -> None:
    try:
        sock.sendall(text.encode("utf-8"))
    except OSError:
        pass  # the client dropped the handle; the child is still reaped


def _reap(children: dict[int, socket.socket | None]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        if os.WIFSTOPPED(status) or os.WIFCONTINUED(status):
            continue
        sock = children.pop(pid, None)
        if sock is not None:
            _send(sock, f"exit {os.waitstatus_to_exitcode(status)}\n")
            sock.close()


def _on_status_readable(sock: socket.socket, children: dict[int, socket.socket | None]) -> None:
    """The client never writes after the request: readable means it closed its end."""
    try:
        data = sock.recv(64)
    except OSError:
        data = b""
    if data:
        return
    for pid, known in list(children.items()):
        if known is sock:
            children[pid] = None
    sock.close()
