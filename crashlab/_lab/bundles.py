"""Failure bundles: everything needed to look at, and re-run, a trial that did not pass.

Why a directory and not a log line: a crash-consistency failure is only convincing with the
files the implementation left (``workspace/``, byte for byte, before any repair touched them
would be ideal, but the trial's last state is what we have), the exact trial description
(``trial.json``: the spec and the result; ``crashlab replay`` rebuilds the spec from it), the
implementation's stderr tail and the seed that reproduces every random choice.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from crashlab._lab.model import TrialResult, TrialSpec

__all__ = ["load_bundle", "write_bundle"]


def write_bundle(bundle_dir: Path, result: TrialResult, workspace: Path) -> Path:
    target = Path(bundle_dir) / result.spec.trial_id
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if workspace.exists():
        shutil.copytree(workspace, target / "workspace", symlinks=True)
    result.bundle = str(target)
    (target / "trial.json").write_text(json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (target / "stderr-tail.txt").write_text(result.stderr_tail, encoding="utf-8")
    (target / "seed").write_text(f"{result.spec.seed}\n", encoding="utf-8")
    return target


def load_bundle(path: str | Path) -> tuple[TrialSpec, TrialResult]:
    """The spec and the recorded result of a bundle (the directory or its ``trial.json``)."""
    path = Path(path)
    file = path / "trial.json" if path.is_dir() else path
    data = json.loads(file.read_text(encoding="utf-8"))
    result = TrialResult.from_json(data)
    return result.spec, result
