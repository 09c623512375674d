"""Recording the anchor vectors (``conformance/vectors/anchor/``) from a running implementation.

``python -m conformance._anchor record --impl CMD`` draws ledgers of every family the
generators know (:data:`FAMILIES`), sends them to the implementation — in practice the upstream
adapter, ``examples/maka-ts-adapter`` over a build of ``maka-agent/maka-agent`` — and writes
its answers as anchor files (format: :mod:`conformance.anchors`). Loading and checking the
files is :mod:`conformance.anchors`; this package is only needed to regenerate them.

May import: ``conformance._fuzz``, ``conformance.anchors``, ``conformance.protocol``,
``conformance.vectors``, ``crashlab``, ``maka_ref.testing``.
"""

from conformance._anchor._record import FAMILIES, RecordResult, draw_cases, record_anchors

__all__ = ["FAMILIES", "RecordResult", "draw_cases", "record_anchors"]
