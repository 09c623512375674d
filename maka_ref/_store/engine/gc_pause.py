"""Pause Python's cyclic garbage collector around bulk decodes of stored events.

Why: the full health scan at every writer open (spec 30 §2.1) and the projection rebuild
(§3.2) decode every ``runtime_events`` row into frozen, acyclic containers. While tens of
thousands of them are created, each young-generation collection walks the new objects and
never finds a cycle: with the collector paused a 100 065-event rebuild took 2.82 s instead
of 3.94 s (docs/performance.md, "Durable writes"). Reference counting still frees
everything as usual; only cycle detection waits until the batch is done.

The switch is process-wide, so it is kept to the decode-and-scan loops, used only for
batches large enough to matter, left alone when the collector is already off, and always
restored in ``finally`` (also when the decode raises).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MIN_ROWS", "cyclic_gc_paused"]

#: Smaller batches are decoded with the collector running (the pause would not pay).
MIN_ROWS = 1000


@contextmanager
def cyclic_gc_paused(rows: int) -> Iterator[None]:
    """Run the block with the cyclic GC off when ``rows`` ≥ :data:`MIN_ROWS` and it was on."""
    if rows < MIN_ROWS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
