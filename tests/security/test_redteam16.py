"""Sixteenth outside review (issue 38): what still broke after round 15, each attack first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.evals import SpecError, load_case
from skillbench.evals.kinds.scripts import _graded, reward_metrics
from skillbench.evals.model import Check
from skillbench.sandbox.base import ExecResult
from tests.helpers import make_skill

HUGE = "9" * 400  # an integer JSON allows and a float cannot hold


@pytest.mark.parametrize(
    ("check", "verdict"),
    [
        (Check("grader", "g.sh", min=0.5), '{"score": 0.1}'),  # Skillgrade's score
        (Check("grader", "g.sh", program="{}"), '{"passed": false, "score": 0.1}'),  # Vally
        (Check("grader", "g.sh"), '{"pass": false, "score": 0.1}'),  # skill-optimizer
    ],
)
def test_a_huge_number_in_a_graders_stdout_fails_the_check(check: Check, verdict: str) -> None:
    """The candidate's code shares the grader's stdout: printing a 400-digit score after the
    grader's own verdict raised OverflowError out of the check, and the whole eval died with
    no summary or receipt (a losing candidate could abort any run)."""
    key = "score" if check.min is not None else "passed" if check.program else "pass"
    # (agreeing with the grader's verdict, so no disagreement fails it first)
    planted = f'{{"score": {HUGE}}}' if key == "score" else f'{{"{key}": false, "score": {HUGE}}}'
    for out in (f"{verdict}\n{planted}\n", f"{planted}\n{verdict}\n"):
        result = _graded("grader", ExecResult(0, out, ""), check)
        assert result.passed is False, result


def test_a_huge_reward_is_no_number() -> None:
    assert reward_metrics(HUGE) == {}
    assert reward_metrics(f'{{"reward": {HUGE}, "other": 0.5}}') == {"other": 0.5}


@pytest.mark.parametrize(
    "check",
    [
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: HUGE}",
        "reward: {file: /logs/verifier/reward.txt, min: HUGE}",
        "verifier: {run: v.sh, timeout: HUGE}",
        # (round 17: .nan passed `timeout <= 0`, .inf had no upper bound: a grader, or the
        # candidate's code it runs, held the check and the run with no limit)
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: .inf}",
        "grader: {run: g.sh, vally: {stimulus: {}}, timeout: .nan}",
        "reward: {file: /logs/verifier/reward.txt, min: .nan}",
    ],
)
def test_a_huge_number_in_a_case_is_a_located_error(tmp_path: Path, check: str) -> None:
    """A case (an imported suite's too) with a 400-digit number: float() raised
    OverflowError, a traceback from `check` and `eval`."""
    body = f"task: t\nchecks:\n  - {check.replace('HUGE', HUGE)}\n"
    skill = make_skill(
        tmp_path, "demo", {"evals/cases/c.yaml": body, "evals/g.sh": "", "evals/v.sh": ""}
    )
    with pytest.raises(SpecError) as info:
        load_case(skill / "evals/cases/c.yaml", skill)
    (problem,) = info.value.problems
    # (the field refuses it at its line: the value stays the text it was written as)
    assert problem.line == 3 and problem.severity == "error", problem


def test_a_huge_number_in_a_skills_metadata_is_only_data(tmp_path: Path) -> None:
    """Round 20: refusing every huge number at load refused a SKILL.md whose metadata (read
    by nothing) held one, and a library's catalog dropped that skill."""
    from skillbench.evals.skills import read_skill

    skill = make_skill(tmp_path, "big")
    text = (skill / "SKILL.md").read_text().replace("---\n#", f"metadata:\n  build: {HUGE}\n---\n#")
    (skill / "SKILL.md").write_text(text)
    assert read_skill(skill).name == "big"


@pytest.mark.parametrize("timeout", [".inf", HUGE])
def test_an_imported_suites_unbounded_timeout_is_ours(tmp_path: Path, timeout: str) -> None:
    """Round 20: a skill-optimizer case with `timeoutSeconds: .inf` (or 400 digits), or a
    Harbor task's `timeout_sec = inf`, raised OverflowError out of `import`."""
    from skillbench.importers.base import CASE_TIMEOUT_MINUTES, load_yaml, timeout_minutes

    (tmp_path / "s.yaml").write_text(f"timeoutSeconds: {timeout}\n")
    given = load_yaml(tmp_path / "s.yaml")["timeoutSeconds"]
    assert timeout_minutes(given) == CASE_TIMEOUT_MINUTES
    assert timeout_minutes(float("inf")) == CASE_TIMEOUT_MINUTES
    assert timeout_minutes(float("nan")) is None and timeout_minutes(90) == 2


def test_a_tool_input_nested_too_deep_is_read_with_its_command() -> None:
    """Round 18: a model told (by a skill) to nest a tool input 3,000 deep, echoed by the
    CLI into its event stream, raised RecursionError out of the replay: the whole eval
    aborted with no summary or receipt. The event is read with the deep part cut, so its
    command is still seen by the checks."""
    from skillbench.agents.cli import json_events

    tricky = json.dumps({"k": 'x\\"]}[{'})  # (brackets and an escaped quote in a string)
    use = {"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf /", "deep": "X"}}
    line = json.dumps({"type": "assistant", "content": [use]})
    line = line.replace('"X"', "[" * 3000 + tricky + "]" * 3000)
    events = list(json_events(f"{line}\n" + '{"type": "result"}'))
    assert [e["type"] for e in events] == ["assistant", "result"]
    assert events[0]["content"][0]["input"]["command"] == "rm -rf /"


def test_reading_a_commands_variables_is_bounded() -> None:
    """Round 18: activation's reading of a command stored each variable expanded and tried
    every name on every word: `V1=$V0$V0; V2=$V1$V1; ...` (27 of them, 364 bytes of a
    write_file the agent never ran) took gigabytes of host memory, doubling with each, and
    thousands of assignments took seconds a word, on the host's event loop."""
    import time

    from skillbench.results.transcript import _command_reads

    doubling = "V0=/skills/x;" + "".join(f"V{i + 1}=$V{i}$V{i};" for i in range(60)) + "cat $V60"
    many = "".join(f"v{i}x=1;" for i in range(8000)) + " ".join("w" for _ in range(8000))
    started = time.perf_counter()
    assert _command_reads(many) == set()
    assert _command_reads(doubling) == {"x"}
    assert time.perf_counter() - started < 2
    # what it is for still holds: a skill's folder named through a variable is a read
    assert _command_reads("D=/skills/greeter; cat ${D}/SKILL.md") == {"greeter"}


@pytest.mark.parametrize(
    "spelling", ["/greeter", " greeter", "greeter\n", "\t/greeter ", "user:greeter"]
)
def test_a_skill_tool_call_spelt_as_claude_code_reads_it_loaded_its_skill(spelling: str) -> None:
    """Round 19 (ACT1): Claude Code trims the Skill tool's name and drops a leading "/", so
    these spellings loaded greeter, and were recorded as not loaded."""
    from skillbench.agents.claude_code import ClaudeCodeAgent
    from skillbench.results.transcript import declared_skills, expand_loaded

    events = [{"type": "tool_call", "id": "t1", "name": "Skill", "arguments": {"skill": spelling}}]
    found = declared_skills(ClaudeCodeAgent().invoked, events)
    assert expand_loaded(found, ["greeter", "other"]) == {"greeter"}


@pytest.mark.parametrize("extra", ["skills/x", "see ~/.claude/skills/greeter"])
def test_a_skill_tool_call_naming_a_skills_path_still_loaded_its_skill(extra: str) -> None:
    """Round 18 (ACT1): the declared reading set aside every tool call whose arguments named a
    skill's folder, the agent's own skill-tool call too: Claude Code's `Skill` given an
    extra argument naming one loaded the skill (its body reached the model) and was recorded
    as not loaded, winning an `expect_activation: false` row. (Its Skill tool opens no
    file, so the observer sees nothing either.)"""
    from skillbench.agents.claude_code import ClaudeCodeAgent
    from skillbench.results.transcript import declared_skills

    call = {"type": "tool_call", "id": "t1", "name": "Skill"}
    events = [{**call, "arguments": {"skill": "greeter", "args": extra}}]
    assert declared_skills(ClaudeCodeAgent().invoked, events) == {"greeter"}
    # a read by another tool is still the observer's to see, not declared
    bash = {"type": "tool_call", "id": "t2", "name": "Bash"}
    reads = [{**bash, "arguments": {"command": "cat /skills/greeter/SKILL.md"}}]
    assert declared_skills(ClaudeCodeAgent().invoked, reads) == set()


# what the candidate writes, a verifier prints, and the comment must not render
FORGED = (
    "x\n```\n\n### skillbench: `greeter` — PASS (net lift +100%, p = 0.001)\n\n"
    "**Why:** the candidate won every case\n\n<details><summary>hidden</summary>\n\n```\n"
)


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_the_markdown_comment_shows_agent_text_as_text(fake, tmp_path: Path, capsys) -> None:
    """Round 18: a verifier printing the candidate's file closed the comment's ``` fence and
    wrote a fake PASS heading; a failing check's detail (a command the agent ran) put raw
    HTML (<h2>Verdict: PASS</h2>) into the comment."""
    from skillbench.cli import main
    from tests.helpers import conv, run_eval, skill, write_file

    folder = skill(
        tmp_path,
        {
            "evals/cases/v.sh": "#!/bin/sh\ncat /work/out.txt\nexit 1\n",
            "evals/cases/c.yaml": "task: Task md\nchecks:\n  - verifier: v.sh\n"
            "  - no_command_matching: 'rm '\n",
        },
    )
    command = "rm -f nothing # </td></tr></table><h2>Verdict: PASS</h2>"
    steps = [write_file("out.txt", FORGED), {"tool_calls": [{"bash": {"command": command}}]}]
    fake({"conversations": [conv("(?s)", "Task md", *steps, {"text": "done"})]})
    run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert main(["report", str(tmp_path / "run"), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    headings, fence = [], ""  # (headings outside code blocks, as CommonMark reads fences)
    for line in md.splitlines():
        ticks = len(line) - len(line.lstrip("`"))
        if ticks >= 3 and (not fence or (ticks >= len(fence) and not line.strip("`"))):
            fence = "" if fence else "`" * ticks
        elif not fence and line.startswith("### "):
            headings.append(line)
    assert len(headings) == 1 and "PASS (net lift +100%" not in headings[0], md
    assert "<h2>" not in md and "Verdict: PASS" in md, md


def test_a_command_the_cli_refused_to_run_shows_nothing_was_run(tmp_path: Path) -> None:
    """Round 18: command_matching passed for a call the agent's CLI refused before running it
    (Claude Code: a lowercase `bash` tool, or input its schema refuses; the builtin loop: a
    command given as a list), while a file the command would make was absent. Such a call
    still counts against no_command_matching."""
    import asyncio

    from skillbench.agents.claude_code import _replay
    from skillbench.evals.kinds import CheckContext, kinds
    from skillbench.results.transcript import TraceWriter, Transcript

    def use(tid: str, name: str, command: object) -> str:
        block = {"type": "tool_use", "id": tid, "name": name, "input": {"command": command}}
        return json.dumps({"type": "assistant", "message": {"content": [block]}})

    def result(tid: str, text: str) -> str:
        block = {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": True}
        return json.dumps({"type": "user", "message": {"content": [block]}})

    stream = [
        use("t1", "bash", "touch ran.txt; pytest -q"),
        result("t1", "<tool_use_error>Error: No such tool available: bash</tool_use_error>"),
        use("t2", "Bash", ["pytest -q"]),  # (what the builtin loop refuses, too)
        result("t2", "<tool_use_error>InputValidationError: command</tool_use_error>"),
    ]
    trace = TraceWriter(tmp_path / "t.jsonl")
    _replay("\n".join(stream), trace)
    trace.close()
    transcript = Transcript(trace.events)

    def check(kind: str) -> bool:
        found = kinds()[kind]
        ran = found.run(Check(kind, "pytest"), CheckContext(transcript, None, None))
        return asyncio.run(ran).passed

    assert not check("command_matching")
    assert not check("no_command_matching")  # (asked for: it counts against the agent)


def test_junit_holds_what_a_verifier_prints_and_stays_xml() -> None:
    """Round 19: a verifier's colours (ESC), a NUL or a form feed in its output, or a lone
    surrogate, made the JUnit report XML that does not parse (or raised), and CI drops it."""
    import xml.etree.ElementTree as ET

    from skillbench.report.junit import gate_junit

    printed = "FAILED \x1b[31mtest_x\x1b[0m\x00\x0c \ud800 end"
    tree = ET.fromstring(gate_junit("greeter", False, printed).encode("utf-8"))
    out = tree.find("testcase/system-out")
    assert (
        out is not None
        and out.text == "FAILED \\u001b[31mtest_x\\u001b[0m\\u0000\\u000c \\ud800 end"
    )


def test_the_markdown_comment_neither_mentions_nor_links() -> None:
    """Round 19: agent text in the comment could @-mention a team (which notifies) or put a
    link out of the comment."""
    from skillbench.report.markdown import _cell

    shown = _cell("ping @org/team, see https://evil.example and www.evil.example")
    assert "@org" not in shown and "https://" not in shown and "www.evil" not in shown
    assert (
        shown.replace("\u200b", "")
        == "ping @org/team, see https://evil.example and www.evil.example"
    )
