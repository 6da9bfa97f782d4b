"""The Python API without the CLI: `skillbench.evaluate` runs a real eval (podman sandboxes,
the real SDKs against the fake model server), `gate` reads the receipt it wrote, and the
errors are the documented hierarchy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import skillbench
from skillbench.errors import EvalError, OptionsError, SkillbenchError
from skillbench.results.records import SessionRecord
from tests.helpers import BASE, CAND, MODEL, conv, skill, write_file

CASE = "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n"
TRIGGERS = "should_trigger: [greet everyone]\nshould_not_trigger: [rename this variable]\n"


class Heard:
    """A progress callback that keeps what it was told."""

    def __init__(self) -> None:
        self.total = -1
        self.running: list[str] = []
        self.outcomes: dict[str, str] = {}

    def planned(self, total: int, done: int) -> None:
        self.total = total

    def started(self, key: str) -> None:
        self.running.append(key)

    def finished(self, record: SessionRecord, spend: float) -> None:
        self.outcomes[record.key] = record.outcome


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_evaluate_runs_an_eval_and_gate_reads_its_receipt(fake, tmp_path: Path, capsys) -> None:
    folder = skill(tmp_path, {"evals/cases/hello.yaml": CASE, "evals/triggers.yaml": TRIGGERS})
    server = fake(
        {
            "rules": [
                {
                    "when": "User request:\ngreet everyone",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": ["greeter"]}'],
                },
                {
                    "when": "User request:\nrename this",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": []}'],
                },
            ],
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hello\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "I would need more information."}),
            ],
        }
    )
    progress = Heard()
    options = skillbench.Options(model=MODEL, out=str(tmp_path / "run"), seed=7, generate=False)
    result = skillbench.evaluate(folder, options=options, progress=progress)

    assert isinstance(result, skillbench.EvalResult)
    summary = result.summary
    assert isinstance(summary, skillbench.Summary)
    # one case is one unit: too few for a verdict (docs/statistics.md)
    assert (summary.verdict, summary.complete, summary.scored_rows) == ("INCONCLUSIVE", True, 1)
    assert [(r.case, r.outcome, r.decided_by) for r in summary.rows] == [("hello", "win", "checks")]
    assert summary.triggers is not None
    assert (summary.triggers["recall"], summary.triggers["precision"]) == (1.0, 1.0)
    # the run folder is the CLI's: summary.json as returned, a receipt beside it
    written = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert written["verdict"] == "INCONCLUSIVE" and written["rows"][0]["outcome"] == "win"
    assert progress.total == 2 and sorted(progress.running) == sorted(progress.outcomes)
    assert progress.outcomes == {"hello.baseline.1": "fail", "hello.candidate.1": "pass"}
    assert capsys.readouterr().out == ""  # nothing rendered: that is the CLI's job

    # the gate finds that receipt (made at the fake server, an endpoint it must be told of);
    # the policy comes from the options
    here = [server.url]
    allowed = skillbench.GateOptions(allow_endpoints=here, allow_inconclusive=True)
    passed = skillbench.gate(folder, options=allowed)
    assert passed.passed and passed.reason.startswith("INCONCLUSIVE")
    refused = skillbench.gate(folder, options=skillbench.GateOptions(allow_endpoints=here))
    assert not refused.passed and "INCONCLUSIVE" in refused.reason  # refused by default
    strict = skillbench.GateOptions(allow_endpoints=here, allow_inconclusive=True, min_recall=1.5)
    refused = skillbench.gate(folder, options=strict)
    assert not refused.passed and "trigger recall 1.00 is under 1.50" in refused.reason
    assert "endpoint" in skillbench.gate(folder).reason  # the providers' own APIs only


def test_bad_input_raises_the_documented_errors_before_any_model_call(fake, tmp_path: Path) -> None:
    server = fake({"rules": []})
    folder = skill(tmp_path, {"evals/cases/bad.yaml": "task: x\nchecks:\n  - no_such_check: 1\n"})
    with pytest.raises(OptionsError, match=r"^--runs must be at least 1$"):
        skillbench.evaluate(folder, options=skillbench.Options(model=MODEL, runs=0))
    with pytest.raises(EvalError) as bad:
        skillbench.evaluate(folder, options=skillbench.Options(model=MODEL, generate=False))
    assert any("bad.yaml" in str(p) for p in bad.value.problems)
    with pytest.raises(
        SkillbenchError,
        match=r"no skill there has a trigger file \(evals/triggers\.yaml or a trigger JSON\)",
    ):
        skillbench.measure_triggers(folder, options=skillbench.Options(model=MODEL))
    with pytest.raises(SkillbenchError, match="not a skill folder"):
        skillbench.gate(tmp_path)
    assert server.log() == []


def test_measure_triggers_returns_reports_by_method(fake, tmp_path: Path) -> None:
    folder = skill(tmp_path, {"evals/triggers.yaml": TRIGGERS})
    fake(
        {
            "rules": [
                {
                    "when": "User request:\ngreet everyone",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": []}'],
                },
                {
                    "when": "User request:\nrename this",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": ["greeter"]}'],
                },
            ]
        }
    )
    measured = skillbench.measure_triggers(folder, options=skillbench.Options(model=MODEL))
    assert list(measured) == ["catalog"]
    (report,) = measured["catalog"]
    assert (report.skill, report.summary()["recall"], report.summary()["precision"]) == (
        "greeter",
        0.0,
        0.0,
    )


@pytest.mark.sandbox
@pytest.mark.anyio
@pytest.mark.usefixtures("podman_service")
async def test_the_async_api_and_read_run_work_inside_a_running_event_loop(
    fake, tmp_path: Path
) -> None:
    # A notebook or an async app already runs a loop: asyncio.run() is refused there, which
    # the sync API used to call.
    folder = skill(tmp_path, {"evals/cases/hello.yaml": CASE, "evals/triggers.yaml": TRIGGERS})
    fake(
        {
            "rules": [
                {
                    "when": "User request:\ngreet everyone",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": ["greeter"]}'],
                },
                {
                    "when": "User request:\nrename this",
                    "replies": ['{"nonce": "$FRAME_ID", "selected": []}'],
                },
            ],
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hello\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "I would need more information."}),
            ],
        }
    )
    options = skillbench.Options(model=MODEL, out=str(tmp_path / "run"), seed=7, generate=False)
    result = await skillbench.evaluate_async(folder, options=options)
    assert [(r.case, r.outcome) for r in result.summary.rows] == [("hello", "win")]

    run = skillbench.read_run(result.run_dir)
    assert run.summary.verdict == result.summary.verdict == "INCONCLUSIVE"
    assert sorted(run.sessions) == ["hello.baseline.1", "hello.candidate.1"]
    events = run.transcript(run.sessions["hello.candidate.1"])
    assert any(e.get("type") == "tool_call" for e in events)

    # the sync functions work inside the loop too (on a thread of their own)
    measured = skillbench.measure_triggers(folder, options=skillbench.Options(model=MODEL))
    assert measured["catalog"][0].summary()["recall"] == 1.0
    triggers = await skillbench.measure_triggers_async(
        folder, options=skillbench.Options(model=MODEL)
    )
    assert triggers["catalog"][0].summary()["precision"] == 1.0

    with pytest.raises(SkillbenchError, match="no such run folder"):
        skillbench.read_run(tmp_path / "nowhere")


def test_every_error_the_api_can_raise_is_a_skillbench_error_the_cli_prints_in_its_own_lines(
    capsys,
) -> None:
    import importlib

    from skillbench.cli import main

    named = {
        "skillbench.cli.common": "UsageError",
        "skillbench.models.base": "ModelError",
        "skillbench.agents.base": "AgentError",
        "skillbench.sandbox.podman.image": "ImageBuildError",
        "skillbench.sandbox.podman.case_image": "CaseImageError",
        "skillbench.sandbox.podman.pull": "PullError",
        "skillbench.engine.routing": "RoutingError",
        "skillbench.results.journal": "RunBusy",
        "skillbench.results.run_folder": "RunFolderError",
        "skillbench.importers.base": "ImportError_",
        "skillbench.models.script": "ScriptError",
        "skillbench.team.signing": "SigningError",
        "skillbench.cluster.connect": "ClusterError",
        "skillbench.engine.generate": "GenerationFailed",
    }
    for module, name in named.items():
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, SkillbenchError), name
        assert cls.exit_code == 2 and cls.lines is SkillbenchError.lines, name
    # a command that hits one of them (here: a run folder that is not one) prints one line
    assert main(["report", "/nonexistent/run"]) == 2
    printed = capsys.readouterr().err.strip().splitlines()
    assert printed == ["skillbench: error: /nonexistent/run: no such run folder"]
