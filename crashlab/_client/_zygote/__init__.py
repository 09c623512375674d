"""Pre-forked children: a warm interpreter (a zygote) forks ``python -m MODULE`` per spawn.

* :mod:`.client`  — ``prefork_argv`` and the client side: when to use a zygote, starting one,
                    asking it to fork, handing over the pipes;
* :mod:`.server`  — the zygote process itself (``python -m crashlab._client._zygote.server``);
* :mod:`.child`   — process-level helpers of a forked child: its exit code, interpreter
                    shutdown, the fd limit;
* :mod:`.preload` — what the zygote imports before it forks (``MODULE`` and what its
                    ``__main__`` imports);
* :mod:`.status`  — the zygote's end of one child's status socket.

May import: ``crashlab._client._lifeline``.
"""
