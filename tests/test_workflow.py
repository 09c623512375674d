"""The release-proof workflow (issue 6 item 7) cannot run here, so its structure is checked.

`.github/workflows/release-proof.yml` certifies the reference runtime with the crash lab on
Linux and macOS (Windows best effort), uploads every report and merges them into one matrix
(docs/ci.md). No copy of GitHub's workflow JSON Schema is available offline, so these are
structural checks of what GitHub would reject or what would silently break the proof:

* the file is YAML without duplicate keys; triggers, jobs, steps and their keys are ones
  GitHub knows; every job has ``runs-on`` and ``timeout-minutes``; every action is pinned to a
  major version; ``needs`` names existing jobs;
* the platform matrix (expanded as GitHub does) and Windows' ``continue-on-error``;
* every ``maka-conformance`` / ``crashlab`` command line, per matrix entry with its ``${{ }}``
  expressions and step ``if:`` conditions evaluated, parses with the real CLI parser;
* the README's test command appears verbatim in the ``tests`` job;
* artifact paths equal the ``--report-dir`` of the steps that fill them, and the merge step
  reads exactly the ``report.json`` files the certify steps write.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import io
import itertools
import posixpath
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is in the 'test' extra (pip install '.[test]')")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "release-proof.yml"
README = ROOT / "README.md"
PYPROJECT = ROOT / "pyproject.toml"

REQUIRED_OS = ("ubuntu-latest", "macos-latest")
BEST_EFFORT_OS = ("windows-latest",)

# `crashlab sweep` as issue 6 item 6 specifies it:
#   crashlab sweep [--impl CMD] [--points P0,P3,…] [--mode prefix|live]
#                  [--fault kill|torn|pause|race] [--trials N] [--seed S] [-n WORKERS] [--report-dir DIR]
# Checked always; when crashlab exposes a real `build_parser`, its parser is checked as well.
CRASHLAB_SUBCOMMANDS = ("sweep", "replay")
CRASHLAB_SWEEP_FLAGS: dict[str, str | None] = {  # flag -> value kind (None: a plain switch)
    "--impl": "str", "--points": "points", "--mode": "mode", "--fault": "fault",
    "--trials": "int", "--seed": "int", "-n": "workers", "--report-dir": "str",
}
CRASHLAB_MODES = ("prefix", "live")
CRASHLAB_FAULTS = ("kill", "torn", "pause", "race", "powerloss", "powerloss-torn")  # issue 15 adds the last two
CRASHLAB_PARSER_MODULES = ("crashlab._cli.main", "crashlab._cli", "crashlab.cli", "crashlab.__main__")

# Keys GitHub accepts (docs: "Workflow syntax for GitHub Actions").
WORKFLOW_KEYS = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
EVENTS_USED = {"push", "pull_request", "workflow_dispatch"}
JOB_KEYS = {"name", "permissions", "needs", "if", "runs-on", "environment", "concurrency", "outputs",
            "env", "defaults", "steps", "timeout-minutes", "strategy", "continue-on-error",
            "container", "services", "uses", "with", "secrets"}
STEP_KEYS = {"id", "if", "name", "uses", "run", "working-directory", "shell", "with", "env",
             "continue-on-error", "timeout-minutes"}
STRATEGY_KEYS = {"matrix", "fail-fast", "max-parallel"}
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@]+)?@v\d+$")
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKEN = re.compile(r"\s+|'(?:[^']|'')*'|&&|\|\||==|!=|!|\(|\)|[A-Za-z_][A-Za-z0-9_.-]*\(\)|[A-Za-z_][A-Za-z0-9_.-]*|\d+")
_REDIRECT = re.compile(r"(?<![\w=-])\d*(?:>>|>&|>|<)\s*(?:&\d+|[^\s;&|<>]+)")


# --------------------------------------------------------------------------- loading


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: Any, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@pytest.fixture(scope="module")
def wf() -> dict[str, Any]:
    doc = yaml.load(WORKFLOW.read_text(encoding="utf-8"), Loader=_StrictLoader)
    assert isinstance(doc, dict)
    # YAML 1.1 reads the bare key `on` as the boolean True; GitHub means the string "on".
    if True in doc:
        assert "on" not in doc, "both `on` and a key YAML reads as True"
        doc["on"] = doc.pop(True)
    return doc


def _readme_test_command() -> str:
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for line in block.splitlines():
            if "pytest" in line:
                return line.strip()
    raise AssertionError("README has no test command in a ```sh block")


# --------------------------------------------------------------------------- expressions


def expand_matrix(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """The job configurations GitHub builds from `strategy.matrix` (product, include, exclude)."""
    base = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    combos = [dict(zip(base, values)) for values in itertools.product(*base.values())] if base else []
    for excl in matrix.get("exclude", []) or []:
        combos = [c for c in combos if any(c.get(k) != v for k, v in excl.items())]
    originals = [dict(c) for c in combos]
    for inc in matrix.get("include", []) or []:
        matched = False
        for combo, original in zip(combos, originals):
            # An include extends every original combination it does not contradict.
            if all(original[k] == v for k, v in inc.items() if k in original):
                combo.update(inc)
                matched = True
        if not matched:
            combos.append(dict(inc))
    return combos


def _value(ref: str, ctx: dict[str, Any]) -> Any:
    head, _, rest = ref.partition(".")
    value: Any = ctx[head]
    for part in rest.split(".") if rest else ():
        value = value[part]
    return value


def evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """Evaluate the small subset of GitHub expressions this workflow uses.

    Context references (``matrix.os``, ``runner.os``), string/number/boolean literals,
    ``==``, ``!=``, ``&&``, ``||``, ``!``, parentheses and the status functions. Anything else
    fails loudly, so a new construct gets a deliberate decision here.
    """
    tokens = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        assert match, f"unsupported expression: {expr!r} at {expr[pos:]!r}"
        if match.group().strip():
            tokens.append(match.group())
        pos = match.end()
    status = {"always()": True, "success()": True, "failure()": False, "cancelled()": False}
    py: list[str] = []
    for tok in tokens:
        if tok.startswith("'"):
            py.append(repr(tok[1:-1].replace("''", "'")))
        elif tok in status:
            py.append(repr(status[tok]))
        elif tok in ("true", "false"):
            py.append(repr(tok == "true"))
        elif tok in ("&&", "||", "!"):
            py.append({"&&": " and ", "||": " or ", "!": " not "}[tok])
        elif tok in ("==", "!=", "(", ")") or tok.isdigit():
            py.append(f" {tok} ")
        else:
            py.append(repr(_value(tok, ctx)))
    return eval("".join(py), {"__builtins__": {}}, {})  # noqa: S307 - tokens are whitelisted above


def render(text: str, ctx: dict[str, Any]) -> str:
    return EXPR.sub(lambda m: str(evaluate(m.group(1), ctx)), text)


def condition(step_or_job: dict[str, Any], ctx: dict[str, Any]) -> bool:
    cond = step_or_job.get("if")
    if cond is None:
        return True
    if isinstance(cond, bool):
        return cond
    text = cond.strip()
    match = re.fullmatch(r"\$\{\{\s*(.*?)\s*\}\}", text)
    return bool(evaluate(match.group(1) if match else text, ctx))


def _runner_os(os_label: str) -> str:
    return {"ubuntu": "Linux", "macos": "macOS", "windows": "Windows"}[os_label.split("-")[0]]


def contexts(job: dict[str, Any]) -> list[dict[str, Any]]:
    entries = expand_matrix(job["strategy"]["matrix"]) if "strategy" in job else [{}]
    out = []
    for entry in entries:
        runs_on = EXPR.sub(lambda m: str(_value(m.group(1), {"matrix": entry})), str(job["runs-on"]))
        out.append({"matrix": entry, "runner": {"os": _runner_os(runs_on)}, "runs_on": runs_on})
    return out


# --------------------------------------------------------------------------- shell commands


def commands(script: str) -> Iterator[list[str]]:
    """Simple commands of a bash `run:` script as argv lists, redirections removed."""
    script = script.replace("\\\n", " ")
    for line in script.splitlines():
        line = _REDIRECT.sub(" ", line).strip()
        if not line or line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        argv: list[str] = []
        for tok in lexer:
            if tok in ("&&", "||", ";", "|", "&"):
                if argv:
                    yield argv
                argv = []
            else:
                argv.append(tok)
        if argv:
            yield argv


def glob_match(path: str, pattern: str) -> bool:
    """Shell pathname expansion: `*` and `?` never cross a `/`."""
    parts, pats = path.split("/"), pattern.split("/")
    return len(parts) == len(pats) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pats))


def cli_invocations(job: dict[str, Any], ctx: dict[str, Any], program: str) -> list[tuple[dict[str, Any], list[str]]]:
    """(step, argv after the program name) for every step that runs `program` in this context."""
    found = []
    for step in job.get("steps", []):
        if "run" not in step or not condition(step, ctx):
            continue
        for argv in commands(render(step["run"], ctx)):
            if argv and argv[0] == program:
                found.append((step, argv[1:]))
    return found


def _parse(parser: Any, argv: list[str]) -> Any:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return parser.parse_args(argv)
        except SystemExit as exc:
            raise AssertionError(f"{parser.prog} {shlex.join(argv)}: rejected ({exc.code}): {err.getvalue().strip()}") from None


def _flag_value(argv: list[str], flag: str) -> str | None:
    for i, tok in enumerate(argv):
        if tok == flag:
            return argv[i + 1]
        if tok.startswith(flag + "="):
            return tok.split("=", 1)[1]
    return None


def check_crashlab_against_issue(argv: list[str]) -> None:
    assert argv and argv[0] in CRASHLAB_SUBCOMMANDS, f"crashlab {shlex.join(argv)}: unknown subcommand"
    if argv[0] != "sweep":
        return
    rest = argv[1:]
    i = 0
    while i < len(rest):
        tok = rest[i]
        flag, eq, inline = tok.partition("=")
        assert flag in CRASHLAB_SWEEP_FLAGS, f"crashlab sweep: {flag} is not a flag of issue 6 item 6"
        kind = CRASHLAB_SWEEP_FLAGS[flag]
        if kind is None:
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        else:
            assert i + 1 < len(rest), f"crashlab sweep: {flag} needs a value"
            value = rest[i + 1]
            i += 2
        if kind == "mode":
            assert value in CRASHLAB_MODES, value
        elif kind == "fault":
            assert value in CRASHLAB_FAULTS, value
        elif kind == "int":
            assert value.isdigit(), f"{flag} {value}"
        elif kind == "workers":
            assert value == "auto" or value.isdigit(), f"{flag} {value}"
        elif kind == "points":
            assert all(re.fullmatch(r"[A-Za-z0-9_.#:-]+", p) for p in value.split(",")), value


def crashlab_parser() -> Any | None:
    """The real `crashlab` argparse parser, when the crash lab CLI exists."""
    script = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"].get("scripts", {}).get("crashlab")
    candidates = ([script.split(":")[0]] if script else []) + list(CRASHLAB_PARSER_MODULES)
    for name in candidates:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(module, "build_parser", None)):
            return module.build_parser()
    return None


# --------------------------------------------------------------------------- the workflow file


def test_workflow_is_yaml_with_known_top_level_keys(wf: dict[str, Any]) -> None:
    assert set(wf) <= WORKFLOW_KEYS, set(wf) - WORKFLOW_KEYS
    assert isinstance(wf.get("name"), str)
    assert "\t" not in WORKFLOW.read_text(encoding="utf-8")


def test_triggers_push_to_main_pull_request_and_dispatch(wf: dict[str, Any]) -> None:
    on = wf["on"]
    assert isinstance(on, dict), "`on` must be a mapping"
    assert EVENTS_USED <= set(on), EVENTS_USED - set(on)
    assert "main" in (on["push"] or {}).get("branches", []), "push must cover main"


def test_jobs_have_runs_on_timeouts_and_known_keys(wf: dict[str, Any]) -> None:
    jobs = wf["jobs"]
    assert {"tests", "certify", "matrix"} <= set(jobs)
    for job_id, job in jobs.items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", job_id), job_id
        assert set(job) <= JOB_KEYS, (job_id, set(job) - JOB_KEYS)
        assert "runs-on" in job, f"{job_id}: no runs-on"
        timeout = job.get("timeout-minutes")
        assert isinstance(timeout, int) and not isinstance(timeout, bool) and 0 < timeout <= 360, \
            f"{job_id}: timeout-minutes must be a positive number of minutes, got {timeout!r}"
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            assert need in jobs, f"{job_id}: needs unknown job {need}"
        if "strategy" in job:
            assert set(job["strategy"]) <= STRATEGY_KEYS, job_id
        steps = job["steps"]
        assert steps, job_id
        for step in steps:
            assert set(step) <= STEP_KEYS, (job_id, set(step) - STEP_KEYS)
            assert ("uses" in step) != ("run" in step), f"{job_id}: a step needs exactly one of uses/run: {step}"


def test_actions_are_pinned_to_a_major_version(wf: dict[str, Any]) -> None:
    for job_id, job in wf["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                assert PINNED.fullmatch(step["uses"]), f"{job_id}: {step['uses']} is not pinned to @vN"


def test_every_setup_python_caches_pip(wf: dict[str, Any]) -> None:
    setups = [(job_id, s) for job_id, job in wf["jobs"].items() for s in job["steps"]
              if s.get("uses", "").startswith("actions/setup-python@")]
    assert {job_id for job_id, _ in setups} == set(wf["jobs"]), "every job sets up Python"
    for job_id, step in setups:
        assert step["with"].get("cache") == "pip", job_id
        assert step["with"].get("python-version"), job_id


def test_platform_matrix(wf: dict[str, Any]) -> None:
    job = wf["jobs"]["certify"]
    assert job["strategy"].get("fail-fast") is False, "one platform failing must not cancel the others"
    seen: dict[str, set[str]] = {}
    for ctx in contexts(job):
        seen.setdefault(ctx["runs_on"], set()).add(str(ctx["matrix"]["python"]))
    assert set(seen) == set(REQUIRED_OS) | set(BEST_EFFORT_OS), seen
    assert seen["ubuntu-latest"] == {"3.11", "3.12"}
    assert seen["macos-latest"] == {"3.12"}
    assert seen["windows-latest"] == {"3.12"}


def test_windows_is_best_effort_and_the_others_are_required(wf: dict[str, Any]) -> None:
    job = wf["jobs"]["certify"]
    for ctx in contexts(job):
        raw = job.get("continue-on-error", False)
        value = raw if isinstance(raw, bool) else evaluate(EXPR.fullmatch(raw.strip()).group(1), ctx)
        assert value is (ctx["runs_on"] in BEST_EFFORT_OS), (ctx["runs_on"], value)
        if ctx["runs_on"] in BEST_EFFORT_OS:
            assert ctx["matrix"].get("limited"), "the matrix must record what is limited on Windows"
            assert "SIGKILL" in ctx["matrix"]["limited"]
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "POSIX" in text and "SIGKILL" in text, "the workflow must say why Windows is limited"


def test_matrix_job_shells_are_bash(wf: dict[str, Any]) -> None:
    """The run scripts are bash (`$GITHUB_STEP_SUMMARY`, `mkdir -p`); Windows defaults to pwsh."""
    for job_id, job in wf["jobs"].items():
        if any(ctx["runner"]["os"] == "Windows" for ctx in contexts(job)):
            assert job.get("defaults", {}).get("run", {}).get("shell") == "bash", job_id


def test_maka_conformance_commands_parse_with_the_real_cli(wf: dict[str, Any]) -> None:
    from conformance._cli.main import build_parser

    count = 0
    for job in wf["jobs"].values():
        for ctx in contexts(job):
            for _, argv in cli_invocations(job, ctx, "maka-conformance"):
                _parse(build_parser(), argv)
                count += 1
    assert count >= 5


def test_crashlab_commands_use_the_issue_flags_and_the_real_parser_when_it_exists(wf: dict[str, Any]) -> None:
    parser = crashlab_parser()
    count = 0
    for job in wf["jobs"].values():
        for ctx in contexts(job):
            for _, argv in cli_invocations(job, ctx, "crashlab"):
                check_crashlab_against_issue(argv)
                if parser is not None:
                    _parse(parser, argv)
                count += 1
    assert count >= 3, "the crash lab sweep must run on every required platform"
    if parser is not None:
        scripts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"].get("scripts", {})
        assert "crashlab" in scripts, "the workflow runs `crashlab`: pyproject must declare that script"


def test_the_check_itself_rejects_bad_command_lines() -> None:
    from conformance._cli.main import build_parser

    with pytest.raises(AssertionError):
        _parse(build_parser(), ["certify", "--levels", "ledger"])
    with pytest.raises(AssertionError):
        _parse(build_parser(), ["certify", "--level", "everything"])
    with pytest.raises(AssertionError):
        check_crashlab_against_issue(["sweep", "--faults", "kill"])
    with pytest.raises(AssertionError):
        check_crashlab_against_issue(["sweep", "--mode", "replay"])
    with pytest.raises(AssertionError):
        check_crashlab_against_issue(["sweeep"])
    check_crashlab_against_issue(["sweep", "--points", "P0,P3#2", "--fault", "torn", "-n", "auto", "--trials", "3"])
    assert list(commands("a --x 1 >> $F && b 'c d' | e\nf \\\n g")) == [["a", "--x", "1"], ["b", "c d"], ["e"], ["f", "g"]]
    assert glob_match("reports/x-3.12/report.json", "reports/*/report.json")
    assert not glob_match("reports/x-3.12/crashlab/report.json", "reports/*/report.json")
    assert expand_matrix({"os": ["a", "b"], "py": ["1"], "include": [{"os": "a", "x": 1}, {"os": "c"}]}) == \
        [{"os": "a", "py": "1", "x": 1}, {"os": "b", "py": "1"}, {"os": "c"}]


def test_certify_runs_full_levels_on_posix_and_ledger_on_windows(wf: dict[str, Any]) -> None:
    from conformance._cli.main import build_parser

    job = wf["jobs"]["certify"]
    install = [i for i, s in enumerate(job["steps"]) if s.get("run", "").strip() == "pip install ."]
    assert install, "the README's install command `pip install .` must be a step"
    for ctx in contexts(job):
        certs = cli_invocations(job, ctx, "maka-conformance")
        certs = [(s, a) for s, a in certs if a[0] == "certify"]
        assert len(certs) == 1, (ctx["runs_on"], certs)
        step, argv = certs[0]
        assert job["steps"].index(step) > install[0]
        args = _parse(build_parser(), argv)
        assert args.impl is None, "the release proof certifies the bundled reference runtime"
        sweeps = [a for _, a in cli_invocations(job, ctx, "crashlab") if a[0] == "sweep"]
        if ctx["runs_on"] in REQUIRED_OS:
            assert args.level is None and args.keyword is None, "Linux and macOS certify every level"
            assert len(sweeps) == 1, ctx["runs_on"]
        else:
            assert args.level == "ledger"
            assert not sweeps, "the crash lab needs SIGKILL/SIGSTOP and process groups: not on Windows"


def test_power_loss_runs_on_linux_and_is_reported_not_run_elsewhere(wf: dict[str, Any]) -> None:
    """Issue 15 item 6: Linux installs FUSE 3 and the `powerloss` extra before it certifies and
    sweeps (so the power-loss clauses and trials run); macOS does not (they are "not run"), and
    says so in the job summary; the sweep filters no fault away."""
    job = wf["jobs"]["certify"]
    for ctx in contexts(job):
        runs = [(i, s) for i, s in enumerate(job["steps"]) if "run" in s and condition(s, ctx)]
        fuse = [i for i, s in runs if "apt-get install -y fuse3" in s["run"] and "pip install '.[powerloss]'" in s["run"]]
        certify = [i for i, s in runs if any(a[:2] == ["maka-conformance", "certify"] for a in commands(render(s["run"], ctx)))]
        sweeps = [a for _, a in cli_invocations(job, ctx, "crashlab") if a[0] == "sweep"]
        assert all(_flag_value(a, "--fault") is None for a in sweeps), "the sweep must keep the power-loss faults"
        if ctx["runner"]["os"] == "Linux":
            assert len(fuse) == 1 and certify and fuse[0] < certify[0], ctx["runs_on"]
        else:
            assert not fuse, f"{ctx['runs_on']} has no FUSE: its power-loss trials are reported not run"
        summary = [s for _, s in runs if "powerloss" in s.get("run", "") and "GITHUB_STEP_SUMMARY" in s["run"]]
        assert bool(summary) == (ctx["runner"]["os"] != "Windows"), ctx["runs_on"]
        if ctx["runs_on"] in BEST_EFFORT_OS:
            assert "power-loss" in ctx["matrix"]["limited"]


def test_reports_are_uploaded_from_the_report_dirs(wf: dict[str, Any]) -> None:
    from conformance._cli.main import build_parser

    job = wf["jobs"]["certify"]
    names = set()
    for ctx in contexts(job):
        report_dir = f"reports/{ctx['runs_on']}-{ctx['matrix']['python']}"
        certify = [a for _, a in cli_invocations(job, ctx, "maka-conformance") if a[0] == "certify"]
        assert _parse(build_parser(), certify[0]).report_dir == report_dir
        for _, argv in cli_invocations(job, ctx, "crashlab"):
            lab_dir = _flag_value(argv, "--report-dir")
            assert lab_dir is not None and posixpath.normpath(lab_dir).startswith(report_dir + "/"), \
                "the crash lab's reports must land inside the uploaded directory"
        uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
        assert len(uploads) == 1
        upload = uploads[0]
        assert str(upload.get("if", "")).replace("${{", "").replace("}}", "").strip() == "always()", \
            "reports must be uploaded even when certification fails"
        assert posixpath.normpath(render(upload["with"]["path"], ctx)) == report_dir
        names.add(render(upload["with"]["name"], ctx))
    assert len(names) == len(contexts(job)), "artifact names must differ per matrix entry"


def test_matrix_job_merges_exactly_the_certify_reports(wf: dict[str, Any]) -> None:
    from conformance._cli.main import build_parser

    job, certify = wf["jobs"]["matrix"], wf["jobs"]["certify"]
    needs = job["needs"]
    assert "certify" in ([needs] if isinstance(needs, str) else needs)
    assert str(job.get("if", "")).replace("${{", "").replace("}}", "").strip() == "always()", \
        "the matrix must be merged even when a platform failed"
    downloads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert len(downloads) == 1
    dl = downloads[0]["with"]
    assert not dl.get("merge-multiple"), "each platform's report.json must keep its own directory"
    [ctx] = contexts(job)
    invocations = [(s, a) for s, a in cli_invocations(job, ctx, "maka-conformance") if a[0] == "matrix"]
    assert invocations
    merges = [_parse(build_parser(), argv).reports for _, argv in invocations]
    summary = [s for s, _ in invocations
               if re.search(r"maka-conformance matrix .*--format markdown\s*>>\s*\$\{?GITHUB_STEP_SUMMARY", s["run"])]
    assert summary, "the markdown matrix must go to the job summary"
    upload_name = certify["steps"][[i for i, s in enumerate(certify["steps"])
                                    if s.get("uses", "").startswith("actions/upload-artifact@")][0]]["with"]["name"]
    for cctx in contexts(certify):
        name = render(upload_name, cctx)
        assert fnmatch.fnmatchcase(name, dl.get("pattern", "*")), f"artifact {name} is not downloaded"
        landed = posixpath.join(dl.get("path", "."), name, "report.json")
        lab = posixpath.join(dl.get("path", "."), name, "crashlab", "report.json")
        for reports in merges:
            assert any(glob_match(landed, g) for g in reports), f"{landed} is not merged by {reports}"
            assert not any(glob_match(lab, g) for g in reports), f"{reports} would also read {lab}"
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(uploads) == 1 and str(uploads[0].get("if", "")).strip() in ("always()", "${{ always() }}")
    merged_dir = uploads[0]["with"]["path"].rstrip("/")
    assert re.search(rf"maka-conformance matrix .*>\s*{re.escape(merged_dir)}/", summary[0]["run"]), \
        "the uploaded directory must hold the merged matrix"


def test_tests_job_runs_the_readme_test_command_verbatim(wf: dict[str, Any]) -> None:
    command = _readme_test_command()
    assert command == "pip install '.[test]' && pytest -n auto"
    job = wf["jobs"]["tests"]
    assert job["runs-on"] == "ubuntu-latest"
    assert any(s.get("run", "").strip() == command for s in job["steps"]), \
        "the tests job must run the README's test command verbatim"


def test_the_yaml_dependency_is_in_the_test_extra() -> None:
    extra = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["test"]
    assert any(re.match(r"pyyaml\b", dep, re.I) for dep in extra)


def test_docs_describe_the_workflow() -> None:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "release-proof.yml" in text
    for word in ("Linux", "macOS", "Windows", "SIGKILL", "continue-on-error"):
        assert word in text, word
