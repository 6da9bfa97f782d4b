"""Harbor tasks as Harbor runs them (issue 23 part 1), with real podman and the fake model
server: tasks of our own written the way public ones are (task.toml, instruction.md,
tests/test.sh running a python test that reads /tests/expected.txt and writes
/logs/verifier/reward.txt or reward.json, solution/solve.sh calling /solution/solve.py) import
unmodified, pass `eval --oracle`, and score rows that differ between arms; a link the agent
plants into /tests is cut before the verifier runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.kinds.scripts import reward_metrics, reward_verdict
from skillbench.evals.model import Check
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write, write_file

_TEST_SH = """#!/bin/bash
# Harbor makes /logs/verifier; the test reads its assets at /tests
python3 /tests/test_answer.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
_TEST_PY = """import pathlib, sys
want = pathlib.Path("/tests/expected.txt").read_text().strip()
got = pathlib.Path("answer.txt").read_text().strip() if pathlib.Path("answer.txt").exists() else None
print(f"want {want!r}, got {got!r}")
if got != want:
    print("answer.txt is wrong", file=sys.stderr)
    sys.exit(1)
"""
_SOLVE_SH = "#!/bin/bash\npython3 /solution/solve.py\n"
_SOLVE_PY = "open('answer.txt', 'w').write(open('/solution/answer').read())\n"


def _task(name: str, instruction: str, test_sh: str, workdir: str | None) -> dict[str, str]:
    dockerfile = "FROM skillbench-sandbox\n" + (f"WORKDIR {workdir}\n" if workdir else "")
    return {
        f"{name}/task.toml": (
            'version = "1.0"\nskills_dir = "skills"\n[agent]\ntimeout_sec = 300\n'
            "[verifier]\ntimeout_sec = 120\n"
        ),
        f"{name}/instruction.md": "Write the sum of 19 and 23 to answer.txt.\n",
        f"{name}/environment/Dockerfile": dockerfile,
        f"{name}/tests/test.sh": test_sh,
        f"{name}/tests/test_answer.py": _TEST_PY,
        f"{name}/tests/expected.txt": "42\n",
        f"{name}/solution/solve.sh": _SOLVE_SH,
        f"{name}/solution/solve.py": _SOLVE_PY,
        f"{name}/solution/answer": "42\n",
    } | ({f"{name}/instruction.md": instruction} if instruction else {})


METRICS_SH = """#!/bin/bash
python3 /tests/test_answer.py && acc=1.0 || acc=0.0
echo "{\\"accuracy\\": $acc, \\"style\\": 0.5}" > /logs/verifier/reward.json
"""
DATASET = {
    **_task("sum-task", "", _TEST_SH, "/app"),
    **_task("graded", "Write 19 plus 23 to answer.txt, with style.\n", METRICS_SH, "/app"),
    # no WORKDIR: the workspace is /work, where the agent plants its link
    **_task("guarded", "Put the sum of 19 and 23 in answer.txt, please.\n", _TEST_SH, None),
}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_harbor_tasks_run_unmodified_and_score(fake, tmp_path: Path, capsys) -> None:
    src, into = write(tmp_path / "tasks", DATASET), skill(tmp_path, {})
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "mapped (6):" in out and "skills_dir — the skill under test" in out
    imported = (into / "evals/cases/sum-task/tests/test.sh").read_text()
    assert imported.endswith(_TEST_SH.split("\n", 1)[1])  # only a header comment added

    # the oracle: solve.sh reads /solution, test.sh reads /tests and writes /logs/verifier
    oracle = tmp_path / "oracle"
    code = main(["eval", str(into), "--oracle", "--model", "scripted/demo", "--out", str(oracle)])
    report = capsys.readouterr().out.splitlines()
    assert "oracle PASS: sum-task" in report and "oracle PASS: guarded" in report, report
    # two metrics and no `reward` key: Harbor's default metric takes one key; none decides
    assert "oracle FAIL: graded" in report and code == 1
    assert any("no deciding metric: the reward file has accuracy 1, style 0.5" in x for x in report)
    assert "    want '42', got '42'" in report  # the verifier's stdout, shown
    saved = json.loads((oracle / "oracle.json").read_text())
    assert {r["case"] for r in saved} == {"sum-task", "graded", "guarded"}
    assert (oracle / "oracle.txt").read_text().splitlines() == report

    plant = bash("ln -s /tests/expected.txt answer.txt && ls -l answer.txt")
    fake(
        {
            "conversations": [
                conv(CAND, "sum of 19 and 23 to", write_file("answer.txt", "42\n"), {"text": "ok"}),
                conv(BASE, "sum of 19 and 23 to", write_file("answer.txt", "41\n"), {"text": "ok"}),
                conv("(?s)", "with style", write_file("answer.txt", "42\n"), {"text": "ok"}),
                # the attacker: answer.txt -> /tests/expected.txt, which holds the answer
                conv(CAND, "in answer.txt, please", plant, {"text": "done"}),
                conv(BASE, "in answer.txt, please", {"text": "nothing to do"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    rows = {r["case"]: r for r in summary["rows"]}
    assert rows["sum-task"]["outcome"] == "win", lines
    base = rows["sum-task"]["arms"]["baseline"]
    assert base["metrics"] == {"reward": 0.0} and not base["passed"]
    assert "answer.txt is wrong" in base["checks"][0]["output"]  # stderr kept on the row
    assert "want '42', got '41'" in base["checks"][0]["output"]
    # two metrics, none chosen: no verdict in either arm, so the row measures nothing (it
    # was a tie of two failures by an AND of the metrics); both metrics stay on the rows
    graded = rows["graded"]
    assert (graded["outcome"], graded["decided_by"]) == ("unscored", "unscored"), graded
    assert "gave no verdict in either arm" in graded["reason"]
    for arm in graded["arms"].values():
        assert arm["metrics"] == {"accuracy": 1.0, "style": 0.5} and not arm["passed"]
    # the planted link is cut before /tests exists: the attacker scores nothing
    guarded = rows["guarded"]["arms"]["candidate"]
    assert not guarded["passed"] and guarded["metrics"] == {"reward": 0.0}
    assert any("answer.txt: a link to /tests/expected.txt, cut" in n for n in guarded["notes"])
    assert rows["guarded"]["outcome"] == "tie"
    # the reports say what a failing verifier printed, and every metric
    assert main(["report", str(tmp_path / "run"), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "What the failing verifiers printed" in markdown
    assert "answer.txt is wrong" in markdown and "partial — 2/3 scored" in markdown
    assert main(["report", str(tmp_path / "run"), "--format", "junit"]) == 0
    assert "want '42', got '41'\nstderr:\nanswer.txt is wrong" in capsys.readouterr().out


def test_the_pass_rule_of_reward_files() -> None:
    check = Check("reward", "/logs/verifier/reward.json")
    both = reward_metrics('{"accuracy": 1.0, "style": 0.5, "note": "x"}')
    assert both == {"accuracy": 1.0, "style": 0.5}  # named numbers only
    # several metrics, none chosen: Harbor's default metric takes one key, so no verdict
    # (not an AND of them: that failed a file whose metrics Harbor never combines)
    passed, score, detail = reward_verdict(both, check)
    assert (passed, score) == (None, None) and detail.startswith("no deciding metric: ")
    assert "accuracy 1, style 0.5" in detail and "`metric:`" in detail
    assert reward_verdict(both, Check("reward", "f", min=0.5))[0] is None
    assert reward_verdict({"accuracy": 0.5}, check)[:2] == (False, 0.5)  # the only key decides
    assert reward_verdict(both, Check("reward", "f", metric="accuracy"))[:2] == (True, 1.0)
    assert reward_verdict(both, Check("reward", "f", metric="recall"))[0] is False
    keyed = reward_metrics('{"reward": 1, "style": 0.1}')
    assert reward_verdict(keyed, check)[0] is True  # the `reward` key decides when present
    assert reward_metrics("0.75\n") == {"reward": 0.75} and reward_metrics("nan") == {}
    assert reward_metrics("[1]") == {} and reward_metrics("true") == {}


def test_a_reward_of_several_metrics_none_chosen_is_no_verdict_not_an_and() -> None:
    """Both arms' files with two metrics and no `reward` key: the row is unscored (Harbor
    would not combine them), not a tie of two failures nor a loss by an AND of metrics."""
    from skillbench.results.checks import NO_METRIC, CheckResult
    from skillbench.results.records import ArmResult
    from skillbench.results.rows import no_verdict_in_both

    def arm(detail: str, infrastructure: bool) -> ArmResult:
        check = CheckResult("reward: f >= 1", False, detail, infrastructure=infrastructure)
        return ArmResult(False, False, [check])

    ambiguous = arm(f"{NO_METRIC}: the reward file has a 1, b 0.5", True)
    why = no_verdict_in_both(ambiguous, ambiguous)
    assert why and "gave no verdict in either arm" in why and "a 1, b 0.5" in why
    assert no_verdict_in_both(ambiguous, arm("reward 0 (min 1)", False)) is None
