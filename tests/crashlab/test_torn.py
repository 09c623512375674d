"""The ``torn`` fault (issue 6 item 3) on a real WAL: cut points respect WAL framing, and the
reopened store is a committed prefix or fails closed."""

from __future__ import annotations

import random
import struct
import sys

import pytest

from crashlab import TrialSpec, run_trial
from crashlab._lab.faults.torn import WAL_FRAME_HEADER, WAL_HEADER, cut_points, wal_frames

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")


def _wal(page: int, frames: int) -> bytes:
    header = struct.pack(">IIII", 0x377F0682, 3007000, page, 0) + b"\0" * 16
    return header + b"\1" * (frames * (WAL_FRAME_HEADER + page))


def test_wal_framing_is_parsed_and_frame_cuts_land_on_boundaries() -> None:
    data = _wal(4096, 5)
    assert wal_frames(data) == (4096, 5)
    assert wal_frames(b"not a wal") == (0, 0)
    cuts = cut_points("runtime.sqlite-wal", data, random.Random(3), 8)
    assert len(cuts) == 8
    for kind, length in cuts:
        assert 0 < length < len(data)
        if kind == "wal_frame":
            assert (length - WAL_HEADER) % (WAL_FRAME_HEADER + 4096) == 0
    assert {k for k, _ in cuts} == {"wal_frame", "wal_byte"}
    assert cut_points("ledger.jsonl", b"x" * 100, random.Random(1), 3)[0][0] == "jsonl_byte"


def test_cuts_are_seeded() -> None:
    data = _wal(1024, 9)
    assert cut_points("a-wal", data, random.Random(5), 4) == cut_points("a-wal", data, random.Random(5), 4)


@pytest.mark.parametrize("spec", [TrialSpec("P9", "live", "torn", seed=11, options={"variants": 4}),
                                  TrialSpec("after_t2", "prefix", "torn", seed=2, options={"variants": 3})],
                         ids=lambda s: s.trial_id)
def test_torn_reference_store_is_a_prefix_or_fails_closed(spec: TrialSpec) -> None:
    result = run_trial(spec, timeout=90)
    assert result.outcome == "passed", result.message
    variants = result.evidence["tornVariants"]
    assert len(variants) == spec.options["variants"]
    assert all(v["file"].endswith("-wal") for v in variants)
    assert all(v["detail"] == "a committed prefix" or v["detail"].startswith("failed closed") for v in variants)
