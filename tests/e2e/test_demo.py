"""The bundled library is valid, and the offline demo shows decided and INCONCLUSIVE verdicts,
triggers and a skip."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from skillbench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_library_is_clean(capsys) -> None:
    assert main(["check", str(ROOT / "skills")]) == 0
    assert capsys.readouterr().out.splitlines() == ["checked 4 skills: 0 errors, 0 warnings"]


def test_bundled_evals_use_every_feature() -> None:
    text = "\n".join(p.read_text() for p in (ROOT / "skills").rglob("evals/**/*.yaml"))
    for kind in (
        "transcript_mentions",
        "transcript_omits",
        "command_matching",
        "no_command_matching",
        "file_exists",
        "file_absent",
        "command_succeeds",
    ):
        assert f"{kind}:" in text, kind
    for field in ("fixture:", "files:", "setup:", "judge:", "requires:", "cases:"):
        assert field in text, field
    assert len(list((ROOT / "skills").glob("*/evals/triggers.yaml"))) == 4


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_offline_demo(tmp_path: Path, capsys) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "SKILLBENCH_MODEL",
            "ANTHROPIC_BASE_URL",
            "OPENAI_BASE_URL",
        )
    }
    env["DEMO_OUT"] = str(tmp_path / "demo")
    before = (ROOT / "skills/skill-eval-author/SKILL.md").read_bytes()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith(
        "demo: no ANTHROPIC_API_KEY or OPENAI_API_KEY set, so this run uses "
        "the scripted demo driver"
    )
    skills = sorted(p.name for p in (ROOT / "skills").iterdir() if (p / "SKILL.md").is_file())
    assert [
        line.removeprefix("== skillbench eval skills/")
        for line in out
        if line.startswith("== skillbench eval ")
    ] == [
        *skills,
        "diff-review --with-library skills/",
        "diff-review --agent claude-code --case small-change",
        " --agent builtin,claude-code",
    ]  # every bundled skill, the library arm, the real Claude Code CLI offline, the matrix
    # two skills have enough units for a verdict, the other two do not (docs/statistics.md)
    verdicts = [line for line in out if line.startswith("verdict: ")]
    assert verdicts == [
        "verdict: PASS [partial — 11/12 scored]",
        "verdict: PASS",
        "verdict: INCONCLUSIVE (1 decided unit, at least 5 needed)",
        "verdict: INCONCLUSIVE (2 decided units, at least 5 needed)",
        "verdict: PASS [partial — 11/12 scored]",  # diff-review beside its siblings
        "verdict: INCONCLUSIVE (1 decided unit, at least 5 needed)",  # one case, Claude Code
    ]
    assert (
        "candidate-vs-baseline: 7W/0L/4T rows · 5 of 5 units decided (5W/0L) · net lift +100% · "
        "sign test p=0.031"
    ) in out  # diff-review: the suite's seven sub-cases are one unit
    assert "skipped (environment): codex-assisted — missing codex" in out
    # each eval's triggers line, then the library both ways: the catalog call, and Claude
    # Code routing each prompt itself
    for method, times in (("catalog call", 2), ("agent claude-code", 1)):
        found = sum(line.strip().startswith(f"triggers ({method}): recall=") for line in out)
        assert found == times * len(skills), method
    assert (
        '    "can you look over this diff for bugs?" (should trigger): catalog call fired, '
        "agent claude-code did not fire"
    ) in out
    assert any(
        line.startswith("models: agent scripted/demo") and "not a model" in line for line in out
    )
    # the triggers step shows every skill of the library
    assert all(f"{name}:" in out for name in skills)
    assert "confusion (who took each miss, agent claude-code):" in out
    for name in skills:  # both arms of every case ran and every row that could was scored
        summary = json.loads((tmp_path / f"demo/{name}/summary.json").read_text())
        journal = (tmp_path / f"demo/{name}/journal.jsonl").read_text().splitlines()
        outcomes = {json.loads(x)["outcome"] for x in journal if '"type":"session"' in x}
        assert outcomes <= {"pass", "fail"}, (name, outcomes)
        assert summary["complete"] and summary["scored_rows"] > 0, name
    summary = json.loads((tmp_path / "demo/diff-review/summary.json").read_text())
    assert summary["comparisons"]["baseline"]["win"] == 7
    assert summary["comparisons"]["baseline"]["units"] == {"win": 5, "loss": 0, "tie": 0}
    # the suite's trap is marked, and the baseline fell for it: no SUITE-DISTRACTOR advice
    assert not any(d["kind"] == "suite-distractor" for d in summary["diagnostics"])
    assert (summary["activation"]["fired"], summary["activation"]["sessions"]) == (5, 5)
    # the library arm: diff-review beside its three siblings, and it still fires
    library = json.loads((tmp_path / "demo/diff-review-library/summary.json").read_text())
    siblings = [s for s in skills if s != "diff-review"]
    assert [s["name"] for s in library["library"]["skills"]] == siblings
    assert (library["activation"]["fired"], library["activation"]["sessions"]) == (5, 5)
    assert library["complete"] and library["verdict"] == summary["verdict"]
    assert (
        "library arm: every arm stages 3 other skills of skills/ (eval-suite-author, "
        "eval-suite-converter, skill-eval-author); the candidate adds diff-review"
    ) in out
    # the README's sample outputs are this run's, line for line (wall times vary)
    # the README and the pages of docs/ it leads to
    readme = "\n".join(
        p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    )
    sample = readme.split("a real model's run has the same shape):\n\n", 1)[1].split("\n\n")[0]
    timeless = [re.sub(r"\d+\.\ds", "_s", line) for line in out]
    inconclusive = readme.split("too few units for any\nverdict:\n\n", 1)[1].split("\n\n")[0]
    for line in [*sample.splitlines(), *inconclusive.splitlines()]:
        assert re.sub(r"\d+\.\ds", "_s", line.removeprefix("    ")) in timeless, line
    triggers = readme.split("From `make demo` (scripted driver):\n\n", 1)[1].split("\n\n")[0]
    for line in triggers.splitlines():
        assert line.strip() == "..." or line.removeprefix("    ") in out, line
    # one tuning round, with its table; SKILL.md is left as it was (no --apply)
    tuned = readme.split("From `make demo` (scripted driver, `--method catalog --rounds 1", 1)[1]
    for line in tuned.split(":\n\n", 1)[1].split("\n\n")[0].splitlines():
        assert line.removeprefix("    ") in out, line
    assert (ROOT / "skills/skill-eval-author/SKILL.md").read_bytes() == before
    assert (tmp_path / "demo/tune/report.html").is_file()
    # the library as a matrix: in the builtin agent each cell's verdict is the single eval's;
    # in Claude Code only diff-review's small-change has scripted work, so only it decides
    table = out[out.index("== skillbench eval skills/ --agent builtin,claude-code") + 1 :]
    start = next(i for i, line in enumerate(table) if line.startswith("cell "))
    cells = [line.split()[:2] for line in table[start + 1 : start + 9]]
    assert cells == [
        ["diff-review@builtin@scripted/demo", "PASS"],
        ["diff-review@claude-code@scripted/demo", "INCONCLUSIVE"],
        ["eval-suite-author@builtin@scripted/demo", "PASS"],
        ["eval-suite-author@claude-code@scripted/demo", "INCONCLUSIVE"],
        ["eval-suite-converter@builtin@scripted/demo", "INCONCLUSIVE"],
        ["eval-suite-converter@claude-code@scripted/demo", "INCONCLUSIVE"],
        ["skill-eval-author@builtin@scripted/demo", "INCONCLUSIVE"],
        ["skill-eval-author@claude-code@scripted/demo", "INCONCLUSIVE"],
    ]
    assert f"set: {tmp_path / 'demo/matrix'}" in table
    matrix = json.loads((tmp_path / "demo/matrix/set.json").read_text())
    assert [c["status"] for c in matrix["cells"]] == ["done"] * 8
    for cell in matrix["cells"]:
        assert (tmp_path / "demo/matrix" / cell["run"] / "report.html").is_file(), cell["id"]
    # Claude Code in both arms, played by the scripted driver: the README's sample is this run's
    cli = readme.split("From `make demo` (scripted driver, `--agent claude-code", 1)[1]
    for line in cli.split(":\n\n", 1)[1].split("\n\n")[0].splitlines():
        assert re.sub(r"\d+\.\ds", "_s", line.strip()) in timeless, line
    cli_summary = json.loads((tmp_path / "demo/diff-review-claude-code/summary.json").read_text())
    assert cli_summary["scored_rows"] == 1 and cli_summary["activation"]["fired"] == 1
    cli_receipt = json.loads((tmp_path / "demo/diff-review-claude-code/receipt.json").read_text())
    assert (cli_receipt["driver"], cli_receipt["agent"]) == ("scripted", "claude-code")
    # the demo ends with the path of a report.html a person can open
    assert out[-1] == str(tmp_path / "demo/diff-review/report.html")
    assert "<html" in Path(out[-1]).read_text()[:200]
    receipt = json.loads((tmp_path / "demo/diff-review/receipt.json").read_text())
    assert (receipt["driver"], receipt["complete"]) == ("scripted", True)
    # the gate says the pipeline worked, not that the skill helps: it refuses
    assert main(["gate", str(ROOT / "skills/diff-review")]) == 1
    assert "comes from the scripted driver (scripted/demo)" in capsys.readouterr().out


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_model_that_cannot_generate_skips_generation_and_says_so(tmp_path: Path, capsys) -> None:
    skill = tmp_path / "lib" / "eval-suite-converter"
    shutil.copytree(ROOT / "skills/eval-suite-converter", skill, symlinks=True)
    (skill / "evals/triggers.yaml").unlink()
    code = main(
        ["eval", str(skill), "--model", "scripted/demo", "--quiet", "--out", str(tmp_path / "run")]
    )
    out, err = capsys.readouterr()
    assert code == 3, err  # one case: INCONCLUSIVE
    assert (
        "note: scripted/demo is a fixed script, not a model, and cannot write evals; not "
        "generating triggers (write them, or use a real --model)"
    ) in err
    assert "triggers: not measured: the skill has no trigger file" in out.splitlines()
    assert not (skill / "evals/triggers.yaml").exists()


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_the_scripted_driver_plays_claude_code_arms_offline(tmp_path: Path, capsys) -> None:
    # the real Claude Code CLI against the fake server scripted/demo starts: the candidate
    # (its skills listing names diff-review) loads the skill with Skill and does the work,
    # the baseline (no listing) reviews less well, and the judge scores the pair
    run = tmp_path / "run"
    argv = ["eval", str(ROOT / "skills/diff-review"), "--agent", "claude-code"]
    argv += ["--model", "scripted/demo", "--case", "small-change", "--no-gen", "--out", str(run)]
    code = main(argv)
    out = capsys.readouterr().out.splitlines()
    assert code == 3, out  # one case: INCONCLUSIVE (docs/statistics.md)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored_rows"] == 1 and summary["verdict"] != "NONE", out
    assert summary["comparisons"]["baseline"]["win"] == 1
    assert (summary["activation"]["fired"], summary["activation"]["sessions"]) == (1, 1)
    receipt = json.loads((run / "receipt.json").read_text())
    assert receipt["driver"] == "scripted" and receipt["complete"]
    assert any(line.startswith("models: agent claude-code ") for line in out), out

    def tools(arm: str) -> list[str]:
        # the tool calls of the arm's last request to the model: its whole conversation
        last = json.loads(
            (run / f"exchanges/small-change.{arm}.1.jsonl").read_text().splitlines()[-1]
        )
        return [
            block["name"]
            for message in last["request"]["messages"]
            if message["role"] == "assistant"
            for block in message["content"]
            if block.get("type") == "tool_use"
        ]

    assert tools("candidate") == ["Skill", "Bash", "Write"]
    assert tools("baseline") == ["Bash", "Write"]
    review = "stats.py:average — the empty-list guard was removed"
    assert review in (run / "transcripts/small-change.candidate.1.jsonl").read_text()


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_the_scripted_driver_plays_codex_arms_offline(tmp_path: Path, capsys) -> None:
    # the real Codex CLI against the fake server scripted/demo starts: the candidate (its
    # developer message lists diff-review) reads the skill's SKILL.md, which is how Codex
    # loads a skill, then reviews with exec_command; the baseline reviews less well
    run = tmp_path / "run"
    argv = ["eval", str(ROOT / "skills/diff-review"), "--agent", "codex", "--case"]
    argv += ["small-change", "--model", "scripted/demo", "--no-gen", "--execution-only"]
    code = main([*argv, "--out", str(run)])
    out = capsys.readouterr().out.splitlines()
    assert code == 3, out  # one case: INCONCLUSIVE (docs/statistics.md)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored_rows"] == 1 and summary["verdict"] != "NONE", out
    assert summary["comparisons"]["baseline"]["win"] == 1
    assert [r["decided_by"] for r in summary["rows"]] in (["judge"], ["checks"])
    assert (summary["activation"]["fired"], summary["activation"]["sessions"]) == (1, 1)
    receipt = json.loads((run / "receipt.json").read_text())
    assert receipt["driver"] == "scripted" and receipt["complete"]
    assert any(line.startswith("models: agent codex ") for line in out), out

    def calls(arm: str) -> list[tuple[str, str]]:
        # the commands and their outputs in the arm's last request: its whole conversation
        last = json.loads(
            (run / f"exchanges/small-change.{arm}.1.jsonl").read_text().splitlines()[-1]
        )
        items = last["request"]["input"]
        outputs = {i["call_id"]: i["output"] for i in items if i["type"] == "function_call_output"}
        return [
            (json.loads(i["arguments"])["cmd"], outputs[i["call_id"]])
            for i in items
            if i["type"] == "function_call" and i["name"] == "exec_command"
        ]

    cand, base = calls("candidate"), calls("baseline")
    assert [c.split()[:2] for c, _ in cand] == [
        ["cat", "/home/agent/.codex/skills/diff-review/SKILL.md"],
        ["git", "diff"],
        ["cat", ">"],
    ]
    assert "name: diff-review" in cand[0][1]  # the skill Codex listed was really there
    assert "-    if not values:" in cand[1][1]  # the diff shows the removed guard
    assert [c.split()[:2] for c, _ in base] == [["git", "diff"], ["cat", ">"]]
    review = "stats.py:average — the empty-list guard was removed"
    assert review in (run / "transcripts/small-change.candidate.1.jsonl").read_text()
