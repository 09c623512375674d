"""Generated file states for the reconciler (issue 16 item 4, "equivalence on generated file
states"): ``RECONCILE-STATES-*`` drive ``runtime.reconcile`` (docs/protocol.md §4.3.1) over
many states of the target between the crash and the reconcile and compare every answer with
the row of spec-phase3 §4.4 for that state.

One *example* = a file tool (``Write``, ``Edit`` or ``Append``) × a *setup* (what the target
held before the turn and what the call asks, :data:`SETUPS`) × a live crash point (P2: T1
committed, the tool not started; P3: the tool in progress, Write only, :data:`POINTS`; P4: its
effect done, no T2 — spec 20 §2) × a *state kind* (:data:`KINDS`): what the harness leaves at
the target after the SIGKILL and before the reconcile. Each example:

1. kills a dedicated process at the point, exactly as ``RECONCILE-ROW-*`` do
   (:func:`conformance.suite.test_runtime_crash.crash_turn`), so T1 and the file evidence are
   committed and T2 is not;
2. puts the target into the kind's state from outside (a kind that is already there after the
   kill — the before state at P2, the expected-after state at P4 — is left as the kill left it);
3. asks the worker's shared process to ``runtime.reconcile`` that operation and checks
   (:func:`check_example`): the item's ``[outcome, observation, reasonCode]`` is the row the
   hand-written table :data:`ROWS` gives for the kind (transcribed from spec-phase3 §4.4 and its
   "consequences" list, never computed by ``maka_ref``) and its ``observed`` type, when present,
   the §4.1 state the kind makes; every file of the workspace outside the runtime's own names,
   and the links' outside directories, are identical afterwards — type, mode, inode, size,
   ``mtime`` and bytes (finalize only: spec-phase3 §5.1, §5.4); the effect log is unchanged and
   shows the tool started at most once (protocol §4.3); the run gained exactly one recovery
   bundle for the operation (one reconcile fact, one decision, and for ``completed`` one outcome:
   the tool's function response whose result is the §1.4 row — spec-phase3 §5.2); a second
   ``runtime.reconcile`` is ``already_settled`` and commits nothing.

Which examples run: :func:`schedule` is a fixed covering schedule, not a random draw, so a
certification is reproducible and never misses a kind: every kind once per tool (18 per tool,
54 in all). ``expected`` and ``mode-expected`` are killed at P4 and ``before`` at P2, where the
kill itself leaves the state (:data:`FIXED_POINT`); the other 15 kinds meet P2, P3 and P4 once
each across the three tools, and the setups rotate (:data:`FIXED_SETUP`, :func:`schedule`). The
bytes are drawn from a PRNG seeded by the example (binary ``before`` bytes, multi-byte UTF-8
content), so they vary between examples and never between runs. Why not Hypothesis: every
example costs a process and a kill, so a budget of a few dozen examples is spent better on a
guaranteed cover than on random draws, and shrinking a failure would cost a kill per step.
Measured cost against the reference (docs/reconcile.md): 0.35 s per example, 6–6.5 s per tool
clause at load 9 on a 2-core guest (14–22 s at load 14); the suite has no "deep" switch, so
there is none here either.

Choices where the contract leaves room (each said where it is used):

* whether a state binds ``mode`` (optional, spec-phase3 §1.3) is read from the committed
  record (``store.read_tool_evidence``, spec-phase3 §6), so each mode-only kind is held to the
  one row its binding gives: bound, a changed mode is ``diverged``; unbound, the state still
  matches. (Before that read existed on the wire the clause accepted both rows, narrowed by
  §1.7 item 3; that narrowing remains for a record it could not read);
* an implementation MAY record evidence for some file tools only (spec-phase3 §1.1 item 1): an
  example answered ``skipped`` / ``reconcile_no_evidence`` is checked to commit and touch
  nothing and counts as not covered; a tool clause with no covered example is "not applicable",
  never passed;
* mode 000 does not make a file unreadable for root (``CAP_DAC_OVERRIDE``), so
  ``RECONCILE-STATES-004`` is reported "not run: root reads any file" there, never passed.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.test_reconcile import NEEDS, reconcile, recovery_facts
from conformance.suite.test_runtime_crash import (
    crash_turn,
    effect_lines,
    label,
    operation_id_of,
    project,
    release,
    source_run,
    starts_by_operation,
)

#: spec-phase3 §1.6 / §0: the largest state evidence can describe (16 MiB).
MAX_FILE_BYTES = 16 * 1024 * 1024
TARGET_DIR, TARGET_NAME = "sub", "notes.txt"
TARGET = f"{TARGET_DIR}/{TARGET_NAME}"
#: The runtime's own names (spec-phase3 §1.5): the reconciler commits its bundle there, so they
#: are left out of the "nothing else changed" snapshot.
RESERVED = frozenset({"runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm", "runtime.sqlite-journal",
                      ".maka-workspace.json", ".maka-effects.jsonl", ".maka", ".git"})
SPEC = "spec-phase3 §4.1; spec-phase3 §4.2; spec-phase3 §4.4; spec-phase3 §5.1; spec-phase3 §5.2; spec-phase3 §6"
TOOLS = ("Write", "Edit", "Append")
#: Live points each tool is crashed at: P2 and P4 are every tool's (spec 20 §2); P3 ("tool
#: implementation in progress") is proven reachable elsewhere only inside a Write (RUNTIME-CRASH-P3-*
#: arm its first hit, the crash script's Write), so only the Write is killed there.
POINTS: Mapping[str, tuple[str, ...]] = {"Write": ("P2", "P3", "P4"), "Edit": ("P2", "P4"), "Append": ("P2", "P4")}

# --------------------------------------------------------------------------- the table (§4.4)

#: A row: [outcome, observation, reasonCode] of the runtime.reconcile item (spec-phase3 §4.4, §6).
Row = tuple[str, str, str]
EXPECTED: Row = ("completed", "matches_expected_state", "reconcile_matches_expected_state")
PRIOR: Row = ("parked", "matches_prior_state", "reconcile_matches_prior_state")
DIVERGED: Row = ("parked", "diverged", "reconcile_diverged")
UNREADABLE: Row = ("parked", "unreadable", "reconcile_unreadable")


@dataclass(frozen=True)
class Expect:
    """What spec-phase3 §4.4 says for a kind: the rows (one, or one per possible ``mode``
    binding), and the §4.1 ``observed`` type (``reason`` for ``unreadable``)."""

    rows: tuple[Row, ...]
    observed: str
    reason: str | None = None


#: kind → (before absent, before regular, before = expectedAfter) → Expect. Transcribed from
#: spec-phase3 §4.4 (rows 1–4, first match wins) and its consequences list; ``None``: the kind
#: does not exist for that setup (a mode-only change of a file that was absent, or of a state
#: that is both ``before`` and ``expectedAfter``, whose row would depend on two bindings).
ROWS: Mapping[str, tuple[Expect | None, Expect | None, Expect | None]] = {
    # row 2; row 2 before row 3 when the states are equal ("Row 2 before row 3")
    "expected": (Expect((EXPECTED,), "regular"),) * 3,
    # row 2 again: the expected bytes and mode rewritten from outside (a new inode and mtime,
    # which are not part of the identity, §1.3; "equal to expectedAfter by coincidence", §1.7)
    "expected-rewritten": (Expect((EXPECTED,), "regular"),) * 3,
    # row 3 ("a deleted file whose before was absent matches row 3"); equal states: row 2
    "before": (Expect((PRIOR,), "absent"), Expect((PRIOR,), "regular"), Expect((EXPECTED,), "regular")),
    # row 4 "other content"
    "other-bytes-same-size": (Expect((DIVERGED,), "regular"),) * 3,
    "other-bytes-other-size": (Expect((DIVERGED,), "regular"),) * 3,
    "empty": (Expect((DIVERGED,), "regular"),) * 3,
    # "a deleted file whose before existed" is row 4; whose before was absent, row 3
    "deleted": (Expect((PRIOR,), "absent"), Expect((DIVERGED,), "absent"), Expect((DIVERGED,), "absent")),
    # row 4 "a symlink, directory, FIFO ... at the target" (never followed, §4.2; §7 items 25–26)
    "symlink-inside": (Expect((DIVERGED,), "symlink"),) * 3,
    "symlink-outside": (Expect((DIVERGED,), "symlink"),) * 3,
    "directory": (Expect((DIVERGED,), "directory"),) * 3,
    "fifo": (Expect((DIVERGED,), "other"),) * 3,
    # row 4 "a second hard link" (links = 1 is part of "matches"; §8 item 16)
    "hardlink": (Expect((DIVERGED,), "regular"),) * 3,
    # row 4 "a file over the limit" (§8 item 8: diverged, not unreadable, never read)
    "oversize": (Expect((DIVERGED,), "regular"),) * 3,
    # row 1 "An ancestor_not_directory path is row 1, never absent" (§4.3; §7 item 27)
    "parent-symlink-inside": (Expect((UNREADABLE,), "unreadable", "ancestor_not_directory"),) * 3,
    "parent-symlink-outside": (Expect((UNREADABLE,), "unreadable", "ancestor_not_directory"),) * 3,
    "parent-file": (Expect((UNREADABLE,), "unreadable", "ancestor_not_directory"),) * 3,
    # "a changed mode where the state binds one" is row 4; unbound, the state still matches
    # (§1.3: mode is matched only when the state carries it; §7 item 31)
    "mode-expected": (Expect((EXPECTED, DIVERGED), "regular"), Expect((EXPECTED, DIVERGED), "regular"), None),
    "mode-before": (None, Expect((PRIOR, DIVERGED), "regular"), None),
}
#: Row 1 with permission_denied (§4.3; §7 item 28): RECONCILE-STATES-004, run only where mode
#: 000 is enforced.
UNREADABLE_EXPECT = Expect((UNREADABLE,), "unreadable", "permission_denied")
KINDS: tuple[str, ...] = tuple(ROWS)

# --------------------------------------------------------------------------- setups (§1.4)


@dataclass(frozen=True)
class Setup:
    """One call and the target before the turn; ``expected_after`` and ``result`` are the §1.4
    row for it (``write_whole_file_v1``, ``edit_replace_unique_v1``, ``append_utf8_v1``)."""

    tool: str
    name: str
    column: int  # 0: before absent, 1: before regular, 2: before = expectedAfter (index into ROWS)
    args: Mapping[str, str]
    before: bytes | None
    before_mode: int | None
    expected_after: bytes
    result: Mapping[str, Any]

    @property
    def bindable_mode(self) -> int:
        """``expectedAfter.mode`` if the implementation binds it (§1.4: ``before.mode``, or 420)."""
        return 0o644 if self.before_mode is None else self.before_mode


def _text(rng: random.Random, lo: int, hi: int) -> str:
    """Text with multi-byte UTF-8 (never a lone surrogate: §1.6 wants encodable arguments)."""
    alphabet = "abcxyz =\n#_0123456789é€𝄞"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def _binary(rng: random.Random, lo: int, hi: int) -> bytes:
    """Any bytes (not UTF-8 in general): a Write or Append accepts any ``before`` (§1.6)."""
    return bytes(rng.randrange(256) for _ in range(rng.randint(lo, hi)))


def make_setup(tool: str, name: str, rng: random.Random) -> Setup:
    mode = rng.choice((0o600, 0o640, 0o664))
    if tool == "Edit":
        old = "port = " + str(rng.randint(1000, 9999)) + "\n"
        new = old if name == "same" else _text(rng, 0, 12)
        head, tail = "# " + _text(rng, 0, 20) + "\n", _text(rng, 0, 20).replace("port", "")
        text = head + old + tail
        before = text.encode()
        after = before.replace(old.encode(), new.encode(), 1)
        return Setup(tool, name, 2 if name == "same" else 1, {"path": TARGET, "old": old, "new": new},
                     before, mode, after, {"path": TARGET, "replacements": 1})
    content = _text(rng, 1, 40)
    if name == "new":
        before, before_mode = None, None
    elif name == "same":
        before, before_mode = (content.encode() if tool == "Write" else _binary(rng, 1, 40)), mode
        if tool == "Append":
            content = ""
    else:
        before, before_mode = _binary(rng, 1, 40), mode
    data = content.encode()
    column = {"new": 0, "over": 1, "same": 2}[name]
    if tool == "Write":
        return Setup(tool, name, column, {"path": TARGET, "content": content}, before, before_mode, data,
                     {"path": TARGET, "bytesWritten": len(data)})
    return Setup(tool, name, column, {"path": TARGET, "content": content}, before, before_mode, (before or b"") + data,
                 {"path": TARGET, "bytesAppended": len(data)})


#: Setups per tool: Write/Append onto an absent file, over other bytes, with the same bytes as
#: result (Append of ""); Edit of a unique occurrence, and one whose ``new`` equals ``old``.
SETUPS: Mapping[str, tuple[str, ...]] = {"Write": ("new", "over", "same"), "Edit": ("edit", "same"),
                                        "Append": ("new", "over", "same")}


@dataclass(frozen=True)
class Example:
    tool: str
    kind: str
    setup: str
    point: str
    seed: str

    @property
    def label(self) -> str:
        return f"{self.tool}/{self.setup}/{self.point}/{self.kind}"


def _column(tool: str, setup: str) -> int:
    if tool == "Edit":
        return 2 if setup == "same" else 1
    return {"new": 0, "over": 1, "same": 2}[setup]


#: Kinds killed where the kill itself leaves the state (the tool's real effect, or none) rather
#: than the harness: every tool's P4 effect must complete (§7 items 20–21), its untouched
#: before state park (§5.4); a mode-only change after P4 can be narrowed to one row
#: (:func:`allowed_rows`).
FIXED_POINT: Mapping[str, str] = {"expected": "P4", "before": "P2", "mode-expected": "P4"}
#: Their setups: each tool's real effect over a real before state (Append: onto nothing); the
#: untouched before state of a Write of the same bytes completes (row 2 before row 3).
FIXED_SETUP: Mapping[tuple[str, str], str] = {
    ("expected", "Write"): "new", ("expected", "Edit"): "edit", ("expected", "Append"): "over",
    ("before", "Write"): "same", ("before", "Edit"): "edit", ("before", "Append"): "new",
}


def _point(tool: str, kind: str, index: int) -> str:
    """The crash point of ``kind`` (the ``index``-th) for ``tool``: :data:`FIXED_POINT`, else
    the Write at P3 and Edit and Append at P2 and P4 in turn (never the same one), so each such
    kind meets P2, P3 and P4 once across the three tools."""
    if kind in FIXED_POINT:
        return FIXED_POINT[kind]
    if tool == "Write":
        return "P3"
    return ("P2", "P4")[(index + (tool == "Append")) % 2]


def schedule(tool: str) -> list[Example]:
    """Every kind once for ``tool``, at :func:`_point`; the setup is :data:`FIXED_SETUP`'s or the
    ``i // 2``-th (rotated by the tool) of those for which the kind exists — ``i // 2`` because
    the points alternate with ``i``, so Edit's two setups meet both points."""
    shift = TOOLS.index(tool)
    out = []
    for i, kind in enumerate(KINDS):
        setups = [s for s in SETUPS[tool] if ROWS[kind][_column(tool, s)] is not None]
        setup = FIXED_SETUP.get((kind, tool), setups[(i // 2 + shift) % len(setups)])
        out.append(Example(tool, kind, setup, _point(tool, kind, i), f"{tool}-{kind}"))
    return out


# --------------------------------------------------------------------------- files


def _replace_bytes(path: Path, data: bytes, mode: int) -> None:
    """Put ``data`` at ``path`` with ``mode`` as an outside writer would (a new file renamed over)."""
    temp = path.with_name(path.name + ".outside")
    temp.write_bytes(data)
    os.chmod(temp, mode)
    os.replace(temp, path)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _other_bytes(rng: random.Random, size: int, avoid: Sequence[bytes]) -> bytes:
    while True:
        data = bytes(rng.randrange(256) for _ in range(size))
        if data not in avoid:
            return data


def apply_kind(kind: str, setup: Setup, point: str, workspace: Path, outside: Path, rng: random.Random) -> None:
    """Leave the target in ``kind``'s state after a kill at ``point`` (only ever touching the
    target, its directory ``sub`` and ``outside``)."""
    target = workspace / TARGET
    before, after = setup.before, setup.expected_after
    natural = (kind == "before" and point == "P2") or (kind == "expected" and point == "P4")
    if natural:
        return
    if kind == "expected-rewritten":
        _replace_bytes(target, after, setup.bindable_mode)
        return
    if kind in ("expected", "mode-expected", "hardlink", "oversize", "unreadable"):
        if not (point == "P4" and target.is_file() and target.read_bytes() == after):
            _replace_bytes(target, after, setup.bindable_mode)
        if kind == "mode-expected":
            current = stat.S_IMODE(os.lstat(target).st_mode)
            os.chmod(target, 0o600 if current != 0o600 else 0o640)
        elif kind == "hardlink":
            os.link(target, workspace / TARGET_DIR / "second-link.txt")
        elif kind == "oversize":
            with open(target, "r+b") as f:  # sparse: nothing beyond the expected bytes is written
                f.truncate(MAX_FILE_BYTES + 1 + len(after))
        elif kind == "unreadable":
            os.chmod(target, 0)
        return
    if kind in ("before", "deleted", "mode-before"):
        if kind == "deleted" or before is None:
            if os.path.lexists(target):
                _remove(target)
            return
        if not (point == "P2" and target.is_file()):
            _replace_bytes(target, before, setup.before_mode or 0o644)
        if kind == "mode-before":
            os.chmod(target, 0o600 if setup.before_mode != 0o600 else 0o640)
        return
    if kind in ("other-bytes-same-size", "other-bytes-other-size", "empty"):
        avoid = [after] + ([before] if before is not None else [])
        if kind == "empty":
            data = b""
        elif kind == "other-bytes-same-size":
            data = _other_bytes(rng, len(after) or 1, avoid)
        else:
            data = _other_bytes(rng, len(after) + rng.randint(1, 9), avoid)
        _replace_bytes(target, data, setup.bindable_mode)
        return
    if kind in ("symlink-inside", "symlink-outside", "directory", "fifo"):
        if os.path.lexists(target):
            _remove(target)
        if kind == "symlink-inside":  # a link to an in-workspace copy of the expected bytes
            copy = workspace / TARGET_DIR / "copy.txt"
            _replace_bytes(copy, after, setup.bindable_mode)
            os.symlink("copy.txt", target)
        elif kind == "symlink-outside":
            outside.mkdir(exist_ok=True)
            _replace_bytes(outside / TARGET_NAME, after, setup.bindable_mode)
            os.symlink(outside / TARGET_NAME, target)
        elif kind == "directory":
            target.mkdir()
            (target / "inside.txt").write_bytes(after)
        else:
            os.mkfifo(target)
        return
    if kind in ("parent-symlink-inside", "parent-symlink-outside", "parent-file"):
        # what the moved directory holds at the target's name is the expected-after state, so
        # following the link would wrongly complete the operation
        _replace_bytes(target, after, setup.bindable_mode)
        if kind == "parent-symlink-outside":
            os.rename(workspace / TARGET_DIR, outside)
            os.symlink(outside, workspace / TARGET_DIR)
        else:
            os.rename(workspace / TARGET_DIR, workspace / "moved")
            if kind == "parent-symlink-inside":
                os.symlink("moved", workspace / TARGET_DIR)
            else:
                (workspace / TARGET_DIR).write_bytes(b"not a directory\n")
        return
    raise AssertionError(f"unknown kind {kind}")


def snapshot(*roots: Path) -> dict[str, Any]:
    """Every entry below ``roots`` (the workspace's top-level reserved names left out), without
    following links or opening anything but regular files: type, mode, inode, size, mtime and
    a digest of the bytes. Never writes; a FIFO is never opened (it would block)."""
    out: dict[str, Any] = {}

    def visit(path: Path, key: str) -> None:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            out[key] = None
            return
        entry: dict[str, Any] = {"type": stat.S_IFMT(info.st_mode), "mode": stat.S_IMODE(info.st_mode),
                                 "ino": info.st_ino, "size": info.st_size, "mtimeNs": info.st_mtime_ns,
                                 "links": info.st_nlink}
        if stat.S_ISLNK(info.st_mode):
            entry["link"] = os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            try:
                with open(path, "rb") as f:
                    entry["sha256"] = hashlib.file_digest(f, "sha256").hexdigest()
            except PermissionError:  # mode 000 as non-root: lstat only
                entry["sha256"] = None
        out[key] = entry
        if stat.S_ISDIR(info.st_mode):
            for child in sorted(os.listdir(path)):
                visit(path / child, f"{key}/{child}")

    for index, root in enumerate(roots):
        if not os.path.lexists(root):
            out[f"root{index}"] = None
            continue
        if index == 0:  # the workspace: its own entry changes with the store's files
            for child in sorted(os.listdir(root)):
                if child not in RESERVED:
                    visit(root / child, child)
        else:
            visit(root, f"root{index}")
    return out


# --------------------------------------------------------------------------- one example


def script(setup: Setup) -> dict[str, Any]:
    return {"userMessage": "change the notes", "protocol": "t1_after_preflight_v1", "steps": [
        {"toolCalls": [{"id": "call-file", "name": setup.tool, "args": dict(setup.args)}]},
        {"text": "done"},
    ]}


def crashed(maka: Any, workspace: Path, setup: Setup, point: str) -> tuple[dict[str, Any], str]:
    """Kill ``setup``'s call at ``point``: (crashed run, operation id)."""
    (workspace / TARGET_DIR).mkdir()
    if setup.before is not None:
        _replace_bytes(workspace / TARGET, setup.before, setup.before_mode or 0o644)
    crash_turn(maka, str(workspace), script(setup), point)
    try:
        run = source_run(project(maka, str(workspace)))
    finally:
        release(maka, str(workspace))
    dispatched = [operation_id_of(e) for e in run["events"] if label(e) == "dispatch"]
    if len(dispatched) != 1 or not dispatched[0]:
        raise ClauseMismatch(f"expected one dispatched {setup.tool} after a kill at {point}",
                             evidence={"events": [label(e) for e in run["events"]]})
    return run, str(dispatched[0])


def allowed_rows(example: Example, setup: Setup, expect: Expect, mode_at_kill: int | None,
                 evidence: Mapping[str, Any] | None = None) -> tuple[Row, ...]:
    """``expect.rows``, narrowed for the mode-only kinds to the one row spec-phase3 §1.3 gives:
    the committed evidence (``store.read_tool_evidence``) says whether the state binds ``mode``
    — bound, a changed mode is row 4; unbound, the state still matches. Without the record,
    ``mode-expected`` is narrowed by §1.7 item 3: a state that binds ``expectedAfter.mode`` is
    produced with exactly that mode (``before.mode`` or 420, §1.4), so an effect that left
    another mode bound none and the file still matches."""
    if evidence is not None and example.kind in MODE_KINDS:
        key, unbound = MODE_KINDS[example.kind]
        state = evidence.get(key)
        return (DIVERGED,) if isinstance(state, Mapping) and "mode" in state else (unbound,)
    if example.kind == "mode-expected" and mode_at_kill is not None and mode_at_kill != setup.bindable_mode:
        return (EXPECTED,)
    return expect.rows


#: The mode-only kinds: the evidence state whose optional ``mode`` decides, and the row when it
#: is not bound (spec-phase3 §1.3, §4.4).
MODE_KINDS: Mapping[str, tuple[str, Row]] = {"mode-expected": ("expectedAfter", EXPECTED), "mode-before": ("before", PRIOR)}


def committed_evidence(maka: Any, workspace: Path, op: str) -> Mapping[str, Any] | None:
    """The record T1 committed for ``op`` (spec-phase3 §3.4, §6 ``store.read_tool_evidence``,
    part of ``runtime.reconcile``), or None when there is none (the example is then counted as
    having no evidence by the reconcile answer)."""
    try:
        answer = expect_ok(maka.call("store.read_tool_evidence", {"workspace": str(workspace), "operationId": op}),
                           "store.read_tool_evidence")
    finally:
        release(maka, str(workspace))
    evidence = answer.get("evidence")
    return evidence if isinstance(evidence, Mapping) else None


def check_example(maka: Any, tmp_path: Path, example: Example, expect: Expect | None = None) -> bool:
    """Run one example (module docstring, steps 1–3); ``False`` when the implementation recorded
    no evidence for the call (nothing to compare, checked to commit nothing)."""
    rng = random.Random(example.seed)
    setup = make_setup(example.tool, example.setup, rng)
    expect = expect or ROWS[example.kind][setup.column]
    assert expect is not None, example
    base = tmp_path / example.label.replace("/", "-")
    base.mkdir()
    workspace, outside = Path(os.path.realpath(base)) / "ws", Path(os.path.realpath(base)) / "outside"
    workspace.mkdir()
    run, op = crashed(maka, workspace, setup, example.point)
    target = workspace / TARGET
    mode_at_kill = (stat.S_IMODE(os.lstat(target).st_mode)
                    if example.point == "P4" and target.is_file() and target.read_bytes() == setup.expected_after else None)
    evidence = committed_evidence(maka, workspace, op) if example.kind in MODE_KINDS else None
    apply_kind(example.kind, setup, example.point, workspace, outside, rng)
    where = {"example": example.label, "args": dict(setup.args),
             "before": None if setup.before is None else setup.before.hex()}
    files, effects = snapshot(workspace, outside), effect_lines(str(workspace))
    try:
        item = reconcile(maka, str(workspace), op)
        if item.get("outcome") == "skipped" and item.get("code") == "reconcile_no_evidence":
            _check_settlement(maka, workspace, outside, run, op, setup, None, files, effects, where)
            return False
        answer = (item.get("outcome"), item.get("observation"), item.get("reasonCode"))
        rows = allowed_rows(example, setup, expect, mode_at_kill, evidence)
        if answer not in rows:
            raise ClauseMismatch(
                f"[{example.label}] runtime.reconcile answered {list(answer)}; spec-phase3 §4.4 gives "
                f"{' or '.join(str(list(r)) for r in rows)} for a target that is {example.kind}",
                evidence={**where, "item": item})
        observed = item.get("observed")
        if isinstance(observed, Mapping):
            got = [observed.get("type"), observed.get("reason")] if expect.reason else [observed.get("type")]
            want = [expect.observed, expect.reason] if expect.reason else [expect.observed]
            expect_equal(want, got, what=f"[{example.label}] the observed state's type (spec-phase3 §4.1)",
                         evidence={**where, "item": item})
            if example.kind == "oversize" and "contentDigest" in observed:
                raise ClauseMismatch(f"[{example.label}] a file over MAX_FILE_BYTES is never read: its observed state "
                                     "has no contentDigest (spec-phase3 §4.1, §8 item 8)", evidence={**where, "item": item})
        _check_settlement(maka, workspace, outside, run, op, setup, answer, files, effects, where)
    finally:
        release(maka, str(workspace))
    return True


def _check_settlement(maka: Any, workspace: Path, outside: Path, run: Mapping[str, Any], op: str, setup: Setup,
                      answer: Row | None, files: Mapping[str, Any], effects: list[dict[str, Any]],
                      where: Mapping[str, Any]) -> None:
    """Finalize only, the effect log, exactly one bundle (none without evidence), idempotence."""
    label_ = where["example"]
    expect_equal(files, snapshot(workspace, outside),
                 what=f"[{label_}] the workspace's files across runtime.reconcile (finalize only: spec-phase3 §5.1, §5.4)",
                 evidence=dict(where))
    expect_equal(effects, effect_lines(str(workspace)),
                 what=f"[{label_}] the effect log across runtime.reconcile (a reconciler never runs a tool)",
                 evidence=dict(where))
    starts = starts_by_operation(effects).get(op, 0)
    if starts > 1:
        raise ClauseMismatch(f"[{label_}] the {setup.tool} started {starts} times (protocol §4.3: at most once)",
                             evidence={**where, "effectLog": effects})
    after = source_run(project(maka, str(workspace)), run["runId"])
    prefix = [e["id"] for e in run["events"]]
    expect_equal(prefix, [e["id"] for e in after["events"]][:len(prefix)],
                 what=f"[{label_}] the committed prefix after runtime.reconcile (a bundle only appends)")
    added = after["events"][len(prefix):]
    facts = recovery_facts(added, op)
    kinds = sorted(str(f.get("kind")) for f in facts)
    responses = [e for e in added if label(e) == "response"]
    if answer is None:
        expect_equal([], [e.get("id") for e in added], what=f"[{label_}] events committed without evidence (must be none)")
    else:
        expect_equal(["maka.tool.reconcile_result", "maka.tool.recovery_decision"], kinds,
                     what=f"[{label_}] the recovery facts of the operation: exactly one bundle (spec-phase3 §5.2)",
                     evidence={**where, "added": added})
        decision = next(f["payload"] for f in facts if f.get("kind") == "maka.tool.recovery_decision")
        reconciled = next(f["payload"] for f in facts if f.get("kind") == "maka.tool.reconcile_result")
        expect_equal([answer[0], answer[2], answer[1]],
                     [decision.get("disposition"), decision.get("reasonCode"), reconciled.get("observation")],
                     what=f"[{label_}] the bundle's decision and observation vs the runtime.reconcile item")
        if answer[0] == "completed":
            got = [[(r.get("content") or {}).get("name"), (r.get("content") or {}).get("result")] for r in responses]
            expect_equal([[setup.tool, dict(setup.result)]], got,
                         what=f"[{label_}] the completed bundle's outcome: the tool's success result of spec-phase3 §1.4",
                         evidence=dict(where))
        elif responses:
            raise ClauseMismatch(f"[{label_}] a parked bundle carries no outcome event (spec-phase3 §5.2)",
                                 evidence={**where, "added": added})
    again = reconcile(maka, str(workspace), op)
    if answer is not None:
        expect_equal("already_settled", again.get("outcome"), what=f"[{label_}] a second runtime.reconcile")
    final = source_run(project(maka, str(workspace)), run["runId"])
    expect_equal([e["id"] for e in after["events"]], [e["id"] for e in final["events"]],
                 what=f"[{label_}] the run after a second runtime.reconcile (commits nothing)")
    expect_equal(files, snapshot(workspace, outside), what=f"[{label_}] the workspace after a second runtime.reconcile")


def run_examples(maka: Any, tmp_path: Path, examples: Sequence[Example], what: str,
                 expect: Callable[[Example], Expect | None] = lambda e: None) -> None:
    """Every example, then one failure naming every example that failed (they are independent,
    so one wrong row does not hide another); none covered is "not applicable", never a pass."""
    failures: list[ClauseMismatch] = []
    covered = 0
    for example in examples:
        try:
            covered += check_example(maka, tmp_path, example, expect(example))
        except ClauseMismatch as exc:
            failures.append(exc)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise ClauseMismatch(f"{len(failures)} of {len(examples)} generated states failed; first: {failures[0]}",
                             diff=failures[0].diff,
                             evidence={"failures": [{"message": str(f), "evidence": f.evidence} for f in failures]})
    if not covered:
        pytest.skip(f"not applicable: the implementation records no file evidence for {what} (spec-phase3 §1.1 "
                    "item 1: MAY), so every reconcile was reconcile_no_evidence")


# --------------------------------------------------------------------------- clauses


def _params() -> Iterator[Any]:
    for number, tool in enumerate(TOOLS, start=1):
        mark = clause(f"RECONCILE-STATES-00{number}", spec=SPEC + "; spec-phase3 §1.4; spec-phase3 §5.4; protocol §4.3",
                      capability="runtime.reconcile", needs=NEEDS,
                      title=f"{'an' if tool[0] in 'AEIOU' else 'a'} {tool} killed at P2–P4, its target then put into each of {len(KINDS)} generated "
                            "states, reconciles to the row of the observation table; the files untouched, one bundle")
        yield pytest.param(tool, id=tool, marks=mark)


@pytest.mark.parametrize("tool", list(_params()))
def test_generated_states(maka: Any, tmp_path: Path, tool: str) -> None:
    run_examples(maka, tmp_path, schedule(tool), tool)


def root_reads_anything(tmp_path: Path) -> bool:
    """Whether this process (and the implementation it starts, same user) reads a mode-000 file."""
    probe = tmp_path / "mode-000-probe"
    probe.write_bytes(b"x")
    os.chmod(probe, 0)
    try:
        with open(probe, "rb"):
            return True
    except PermissionError:
        return False
    finally:
        probe.unlink()


@clause("RECONCILE-STATES-004", spec="spec-phase3 §4.2; spec-phase3 §4.3; spec-phase3 §4.4; spec-phase3 §5.1",
        capability="runtime.reconcile", needs=NEEDS,
        title="a Write, Edit or Append whose target became unreadable (mode 000) after the kill reconciles unreadable "
              "(permission_denied): parked, the file untouched")
def test_unreadable_target(maka: Any, tmp_path: Path) -> None:
    if root_reads_anything(tmp_path):
        pytest.skip("not run: root reads any file (mode 000 is not enforced for this user), so the target cannot be "
                    "made unreadable")
    setups = {"Write": "over", "Edit": "edit", "Append": "new"}
    examples = [Example(tool, "unreadable", setups[tool], "P4", f"{tool}-unreadable") for tool in TOOLS]
    run_examples(maka, tmp_path, examples, "Write, Edit or Append", lambda e: UNREADABLE_EXPECT)
