"""Build the golden vectors in ``conformance/vectors/`` (spec 10 §2, §7; spec 20 §1, §2, §8;
spec-phase3 §2, §4; spec-phase4 §1.2, §2.4).

Run ``python -m conformance._vectorgen.build`` to (re)write the files and
``python -m conformance._vectorgen.build --check`` to verify that the files on disk are
exactly what this generator writes (exit status 1 and a list of stale files otherwise).

This module is the entry point: it lists the vector groups, keeps the coverage bookkeeping
of spec 10 §7 and writes the files. The vectors themselves live in the private modules of
this package, one per spec area: ``_args_hash``, ``_encoding``, ``_lanes`` (predicates,
lanes, scanner, transition), ``_bundle``, ``_resolver``, ``_code_mode`` and ``_spec20``
(phase 0 plan, failpoints, segment replay), ``_evidence`` and ``_observation`` (the Phase 3
evidence codec and observation table) and ``_checkpoint`` (the Phase 4 boundary codec and
policy hash), over the shared ``_common`` (constants and vector helpers) and ``_events``
(event builders).

Rules this generator follows (they are what makes the vectors trustworthy):

* Every ``expect`` value is transcribed by hand from the spec text (a scenario, a table row,
  or a rule the scenario names) and written literally in the group modules. The Phase 3/4
  digests (evidence, observation, policy) are computed in the group modules with ``hashlib``
  from the constructions the spec fixes, over canonical texts written by hand or rendered by
  the standard library's sorted-key JSON. Nothing is
  computed by the reference runtime: the only import from ``maka_ref`` anywhere in this
  package is :mod:`maka_ref.testing.families`, the spec's fixture families as builders of
  plain dicts (inputs only).
* Where the spec states only part of an answer, the vector uses a partial matcher
  (``resolutionSubset``, ``decisions``, ``issueCodes``, ``planSubset``, ...) and leaves the
  rest unchecked; it never fills in values the spec does not state.
* Output is deterministic: files are written in the order of :data:`GROUPS` below, each
  with its vectors in the order its group function lists them, with two-space indentation,
  non-ASCII characters kept raw (UTF-8) and a trailing newline.
  Strings that cannot be written raw (lone surrogates) and numbers whose JSON spelling
  matters (``-0``, ``1.0``, integers beyond 2^53) only ever appear inside ``argsJson`` /
  ``eventJson`` *text* inputs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

from ._args_hash import group_args_hash
from ._bundle import group_bundle
from ._checkpoint import group_checkpoint
from ._code_mode import group_code_mode
from ._encoding import group_encoding
from ._evidence import group_evidence
from ._lanes import group_lanes, group_predicates, group_scanner, group_transition
from ._observation import group_observation
from ._resolver import group_resolver
from ._spec20 import group_failpoints, group_phase0, group_prefix_digest, group_segment_replay

PACKAGE_DIR = Path(__file__).resolve().parent.parent
VECTORS_DIR = PACKAGE_DIR / "vectors"
README = VECTORS_DIR / "README.md"
SCHEMA_REF = "./vector.schema.json"


# ---------------------------------------------------------------------------------------
# Coverage bookkeeping (spec 10 §7 scenarios 1–96)
# ---------------------------------------------------------------------------------------

#: Scenarios of 10 §7 (1–96) with no vector, and why. Printed into the README.
SKIPPED_SCENARIOS: dict[int, str] = {
    5: "sparse arrays, arrays with extra properties, accessors and custom prototypes cannot be written in JSON; "
       "every JSON array/object is plain",
    6: "a null-prototype object is a JavaScript notion; every JSON object is a plain object",
    8: "undefined optional fields cannot be written in JSON (absent keys are the JSON form, covered by the golden encodings)",
    9: "an undefined value cannot be written in JSON",
    18: "[T:store] store idempotency (the pure part, normalisation before comparison, is encoding/golden-text-normalized)",
    19: "[T:store] store refusal; args cannot be undefined in JSON (a missing args key is encoding/function-call-without-args)",
    20: "[T:store] serialization hooks are a JavaScript notion and the scenario is about the store",
}

#: Scenarios covered only in part, and what is left out. Printed into the README.
PARTIAL_SCENARIOS: dict[int, str] = {
    2: "undefined, bigint and symbol keys cannot be written in JSON; ±Infinity is reached by number literals that "
       "overflow a double (1e400)",
    12: "permissionClosureAccepted combined with permissionRequest: the spec does not fix the PermissionRequestPayload shape",
    13: "\"inherited property\" is JavaScript-only; permissionDecision: the spec does not fix the `decision` enum, so no "
        "valid base event can be built",
    17: "the legacy `automation` → `legacy_automation` origin rewrite: the spec does not fix the TurnOrigin shapes",
    59: "reopen and projection rebuild are store behaviour; the pure resolution is covered",
    60: "projection states are store behaviour; the decision statuses are covered",
}

SCENARIO_RE = re.compile(r"10 §7\.\d+ ((?:#\d+(?:, )?)+)")


def covered_scenarios(files: list[tuple[str, str, list[dict[str, Any]]]]) -> set[int]:
    out: set[int] = set()
    for _, _, vs in files:
        for v in vs:
            for m in SCENARIO_RE.finditer(v["spec"]):
                out.update(int(n) for n in re.findall(r"#(\d+)", m.group(1)))
    return out


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------

GROUPS: list[Callable[[], tuple[str, str, list[dict[str, Any]]]]] = [
    group_args_hash, group_encoding, group_predicates, group_lanes, group_scanner, group_transition, group_bundle,
    group_resolver, group_code_mode, group_phase0, group_failpoints, group_segment_replay, group_prefix_digest,
    group_evidence, group_observation, group_checkpoint,
]


def build_files() -> list[tuple[str, str, list[dict[str, Any]]]]:
    files = [group() for group in GROUPS]
    ids = [v["id"] for _, _, vs in files for v in vs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SystemExit(f"duplicate vector ids: {dupes}")
    covered = covered_scenarios(files)
    missing = [n for n in range(1, 97) if n not in covered and n not in SKIPPED_SCENARIOS]
    if missing:
        raise SystemExit(f"10 §7 scenarios neither covered nor skipped: {missing}")
    wrongly_skipped = sorted(n for n in SKIPPED_SCENARIOS if n in covered)
    if wrongly_skipped:
        raise SystemExit(f"scenarios listed as skipped but covered: {wrongly_skipped}")
    return files


def render_file(group: str, description: str, vectors: list[dict[str, Any]]) -> str:
    doc = {"$schema": SCHEMA_REF, "group": group, "description": description, "vectors": vectors}
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    text.encode("utf-8")  # raises on a lone surrogate: those belong in argsJson/eventJson text only
    return text


COUNTS_BEGIN = "<!-- vector-counts:begin (generated by python -m conformance._vectorgen.build) -->"
COUNTS_END = "<!-- vector-counts:end -->"
SKIPS_BEGIN = "<!-- skipped-scenarios:begin (generated by python -m conformance._vectorgen.build) -->"
SKIPS_END = "<!-- skipped-scenarios:end -->"


def render_counts(files: list[tuple[str, str, list[dict[str, Any]]]]) -> str:
    lines = ["| file | vectors | operations |", "|---|---:|---|"]
    total = 0
    for group, _, vs in files:
        ops = sorted({v["operation"] for v in vs})
        lines.append(f"| `{group}.json` | {len(vs)} | {', '.join(f'`{o}`' for o in ops)} |")
        total += len(vs)
    lines.append(f"| **total** | **{total}** | |")
    return "\n".join(lines)


def render_skips() -> str:
    lines = ["Not covered (no vector):", ""]
    lines += [f"* #{n}: {why}." for n, why in sorted(SKIPPED_SCENARIOS.items())]
    lines += ["", "Covered in part:", ""]
    lines += [f"* #{n}: {why}." for n, why in sorted(PARTIAL_SCENARIOS.items())]
    return "\n".join(lines)


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    start = text.index(begin) + len(begin)
    stop = text.index(end)
    return text[:start] + "\n" + body + "\n" + text[stop:]


def render_readme(current: str, files: list[tuple[str, str, list[dict[str, Any]]]]) -> str:
    text = replace_between(current, COUNTS_BEGIN, COUNTS_END, render_counts(files))
    return replace_between(text, SKIPS_BEGIN, SKIPS_END, render_skips())


def expected_outputs() -> dict[Path, str]:
    files = build_files()
    out = {VECTORS_DIR / f"{group}.json": render_file(group, description, vs) for group, description, vs in files}
    out[README] = render_readme(README.read_text(encoding="utf-8"), files)
    return out


def stale_files() -> list[Path]:
    stale = []
    for path, text in expected_outputs().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance._vectorgen.build", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files on disk differ from what would be written")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(PACKAGE_DIR.parent)}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in expected_outputs().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {path.relative_to(PACKAGE_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
