"""``python -m conformance._anchor record --impl CMD [--out DIR] [--count FAMILY=N ...] [--seed S]``."""

from __future__ import annotations

import argparse
import sys

from conformance._anchor._record import FAMILIES, record_anchors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance._anchor",
                                     description="record upstream's answers as anchor vectors")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="draw ledgers, ask the implementation, write the anchor files")
    rec.add_argument("--impl", required=True, help="command line of the implementation (the upstream adapter)")
    rec.add_argument("--out", default="conformance/vectors/anchor", help="directory of the anchor files")
    rec.add_argument("--seed", type=int, default=20261202, help="the generators' seed (default %(default)s)")
    rec.add_argument("--count", action="append", default=[], metavar="FAMILY=N",
                     help=f"cases of one family (default: {', '.join(f'{f}={n}' for f, n in FAMILIES.items())})")
    args = parser.parse_args(argv)
    counts = dict(FAMILIES)
    for item in args.count:
        family, _, n = item.partition("=")
        if family not in FAMILIES or not n.isdigit():
            parser.error(f"--count {item!r}: expected FAMILY=N with FAMILY one of {', '.join(FAMILIES)}")
        counts[family] = int(n)
    try:
        result = record_anchors(args.impl, args.out, counts=counts, seed=args.seed, out=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - a clear one-line error, never a traceback
        print(f"python -m conformance._anchor: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    return 1 if result.refused else 0


if __name__ == "__main__":
    sys.exit(main())
