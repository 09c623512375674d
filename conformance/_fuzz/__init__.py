"""Differential fuzzing of an implementation against the reference (issue 7, ``docs/fuzzing.md``).

Why: the clauses check what we thought of; a search checks what we did not. Hypothesis
generates ledgers (valid, corrupted, crash-truncated, edge) and write schedules (a stateful
program of store writes), sends each to the implementation over the wire protocol (batched with
the optional ``batch`` operation, one long-lived process; only the operations its handshake
claims) and to ``maka_ref`` in this process, and compares resolution, plan and store
projections. The search goes on after the first disagreement: every disagreement is put in a
bucket (operation, first differing path), one example per bucket is shrunk to a minimal ledger
or schedule and written as a *failure bundle* that ``maka-conformance replay`` re-runs and can
turn into a golden vector. ``fuzz --coverage`` measures which of the spec's codes the ledger
generators reach.

Private modules (the CLI and the tests use these names; nothing here is a stable API):

* :mod:`._runner`    the run: seed, handshake, example database, time budget, reports (:func:`run_fuzz`);
* :mod:`._buckets`   replay, search and per-bucket shrinking (:func:`~._buckets.run_bucketed`);
* :mod:`._search`    the budget, :class:`Disagreement`; the self-fuzzer's one-failure search;
* :mod:`._coverage`  the coverage of the spec's codes (:func:`~._coverage.measure_coverage`);
* :mod:`._fast`      ``--search fast``: the same ledger strategies drawn by a seeded plain generator;
* :mod:`._ledgers`   ledger strategies and the resolve/plan comparison;
* :mod:`._schedules`, :mod:`._schedule_events` the write-schedule state machine;
* :mod:`._targets`   the reference in process and the implementation over the protocol;
* :mod:`._bundles`   failure bundles, replay, ``--as-vector``;
* :mod:`._values`    wire semantics and what is compared.

The names below are loaded on first use (PEP 562): importing a submodule such as
:mod:`._cli` to build ``maka-conformance``'s argument parser must not pull Hypothesis and the
search machinery into every command (≈ 0.13 s).

May import: ``conformance.protocol``, ``conformance.reports``, ``crashlab``, ``maka_ref``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the private module that defines it
_EXPORTS = {
    "bundle_as_vector": "_bundles", "load_bundle": "_bundles", "replay_bundle": "_bundles",
    "DB_ENV": "_runner", "FuzzConfig": "_runner", "FuzzResult": "_runner", "database_path": "_runner",
    "run_fuzz": "_runner",
}

__all__ = ["DB_ENV", "FuzzConfig", "FuzzResult", "bundle_as_vector", "database_path", "load_bundle",
           "replay_bundle", "run_fuzz"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
