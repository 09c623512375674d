"""The power-loss filesystem (issue 15): a FUSE pass-through mount that knows which bytes and
directory entries are durable, and a power cut that keeps exactly those.

What it holds, one concept a module:

* :mod:`.model` — the durability model (pure: no I/O, no clock, no randomness): per file the
  durable size and an undo log of overwritten durable bytes, per directory the durable
  entries and the pending namespace operations; fsync / fdatasync / directory fsync /
  ``O_SYNC`` writes advance it; :meth:`~.model.Model.cut` says what a cut leaves;
* :mod:`.fs` — the FUSE operations (``mfusepy``) over a backing directory that feed the model,
  and the cut applied to the backing files; runs only in the server process;
* :mod:`.server` — that process (``python -m crashlab._lab.powerloss.server``): mounts, serves
  the control requests (stats, cut) on stdin/stdout;
* :mod:`.mount` — the harness's side: :func:`~.mount.unavailable` (why FUSE cannot run here),
  :class:`~.mount.PowerLossMount` (mount, lose power, unmount; never hangs, never leaks);
* :mod:`.fault` — the ``powerloss`` and ``powerloss-torn`` faults of the crash lab: mount the
  workspace, drive to the point, SIGKILL, cut, then the ``kill`` fault's after-crash oracles.

Besides the standard library and ``psutil``, only :mod:`.fs` imports ``mfusepy`` (the optional
``powerloss`` extra), inside the server. :mod:`.model`, :mod:`.fs` and :mod:`.server` import
nothing of the harness but each other, so the server starts without loading it; of the crash
lab, :mod:`.mount` uses the client's lifeline and zygote, :mod:`.fault` the drivers and the
aftermath of the ``kill`` fault. The model's promise, its sources and its limits:
docs/crashlab-powerloss.md.

May import: ``crashlab._client``, ``crashlab._lab.aftermath``, ``crashlab._lab.drive``,
``crashlab._lab.drive``.
"""
