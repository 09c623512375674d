"""The list of clauses, as collected by pytest (so parametrised clauses, ``-k`` and
``--level`` are honoured exactly as in a run), for ``maka-conformance clauses`` and
``docs/clauses.md``.

Why collect in a child process: collection imports the suite modules, which is cheap but
should not leave state in the caller (the same isolation as ``certify``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Any

__all__ = ["collect_clauses", "render_markdown"]


def collect_clauses(*, level: str | None = None, keyword: str | None = None, timeout: float = 300.0) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="maka-clauses-") as tmp:
        out = os.path.join(tmp, "clauses.json")
        ini = os.path.join(tmp, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as fh:
            fh.write("[pytest]\n")
        argv = [sys.executable, "-m", "pytest", "-p", "conformance.plugin", "-p", "no:cacheprovider", "-c", ini,
                "--rootdir", tmp, "--collect-only", "-q", "--maka-list-clauses", out]
        if level:
            argv += ["--maka-level", level]
        if keyword:
            argv += ["-k", keyword]
        argv += ["--pyargs", "conformance.suite"]
        env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        done = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        if not os.path.exists(out):
            raise RuntimeError(f"collecting the suite failed (pytest exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        with open(out, encoding="utf-8") as fh:
            return list(json.load(fh))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(clauses: list[dict[str, Any]]) -> str:
    """Counts per area and capability, then every non-vector clause; vector clauses are
    summarised per vector file (their ids are ``LEDGER-VEC:<vector id>``)."""
    lines = ["| level | capability | clauses |", "|---|---|---:|"]
    per_cap = Counter((c["level"], c["capability"]) for c in clauses)
    for (level, capability), n in sorted(per_cap.items(), key=lambda kv: (["ledger", "durable", "live", "recovery"].index(kv[0][0]), kv[0][1])):
        lines.append(f"| {level} | `{capability}` | {n} |")
    lines.append(f"| | **total** | **{len(clauses)}** |")
    vectors = Counter(c["clauseId"].split(":", 1)[1].split("/", 1)[0] for c in clauses if c["clauseId"].startswith("LEDGER-VEC:"))
    lines += ["", "Golden-vector clauses (`LEDGER-VEC:<vector id>`, one per vector; spec section = the vector's):", "",
              "| vector file | clauses |", "|---|---:|"]
    lines += [f"| `{group}.json` | {n} |" for group, n in sorted(vectors.items())]
    lines += ["", "Every other clause:", "", "| clause | spec | capability | level | title |", "|---|---|---|---|---|"]
    for c in sorted((c for c in clauses if not c["clauseId"].startswith("LEDGER-VEC:")), key=lambda c: c["clauseId"]):
        needs = f" (+{', '.join(c['needs'])})" if c.get("needs") else ""
        lines.append(f"| `{c['clauseId']}` | {_cell(c['spec'])} | `{c['capability']}`{needs} | {c['level']} | {_cell(c['title'])} |")
    return "\n".join(lines) + "\n"
