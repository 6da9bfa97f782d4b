"""The agent conformance suite (docs/agents.md): every agent runs the same case against the same
scripted behaviour and must give the same check results, see its staged skill (and the
baseline none), keep the real API key out of the sandbox and the run folder, and turn a
provider outage into an infrastructure error. Real podman, the fake model server, and for
the agent CLIs the real CLIs from npm."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import conv, run_eval, skill

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

AGENTS = ["builtin", "claude-code", "codex", "opencode", "gemini-cli", "copilot"]
CLIS = ["claude-code", "codex", "opencode", "gemini-cli", "copilot"]
REAL_KEY = "sk-ant-api03-REALKEY-never-in-a-sandbox-7731"
KEY_VAR = {
    "builtin": "ANTHROPIC_API_KEY",
    "claude-code": "ANTHROPIC_API_KEY",
    "codex": "OPENAI_API_KEY",
    "opencode": "ANTHROPIC_API_KEY",
    "gemini-cli": "GEMINI_API_KEY",
    "copilot": "OPENAI_API_KEY",
}
MODEL = {
    "builtin": "anthropic/claude-sonnet-4-6",
    "claude-code": "anthropic/claude-sonnet-4-6",
    "codex": "openai/gpt-5.1",
    "opencode": "anthropic/claude-sonnet-4-6",
    "gemini-cli": "google/gemini-2.5-pro",
    "copilot": "openai/gpt-5.1",
}
# Where each agent finds a staged skill's files, and what its tools are called.
SKILL_HOME = {
    "builtin": "/skills/greeter",
    "claude-code": "~/.claude/skills/greeter",
    "codex": "~/.codex/skills/greeter",
    "opencode": "~/.config/opencode/skills/greeter",
    "gemini-cli": "~/.gemini/skills/greeter",
    "copilot": "~/.copilot/skills/greeter",
}
BASH = {
    "builtin": "bash",
    "claude-code": "Bash",
    "codex": "exec_command",
    "opencode": "bash",
    "gemini-cli": "run_shell_command",
    "copilot": "bash",
}
ARG = {
    "builtin": "command",
    "claude-code": "command",
    "codex": "cmd",
    "opencode": "command",
    "gemini-cli": "command",
    "copilot": "command",
}
# each agent's own way to load a skill by name (Codex has none: it reads the SKILL.md)
LOADER = {
    "builtin": ("skill", "name"),
    "claude-code": ("Skill", "skill"),
    "opencode": ("skill", "name"),
    "gemini-cli": ("activate_skill", "name"),
    "copilot": ("skill", "skill"),
}
GREETER = {
    "SKILL.md": "---\nname: greeter\ndescription: Greets people politely.\n---\n"
    "# greeter\nRun scripts/greet.sh from this skill's folder.\n",
    "scripts/greet.sh": "echo 'hello from the skill' > hello.txt\n",
    "evals/cases/hello.yaml": (
        "task: Create hello.txt with a greeting\nchecks:\n"
        "  - file_exists: hello.txt\n  - command_matching: 'greet\\.sh'\n"
        "  - command_succeeds: grep -q 'from the skill' hello.txt\n"
        "  - transcript_mentions: greeted\n"
    ),
}


def bash(agent: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{BASH[agent]: {ARG[agent]: command}}]}


def load_skill(agent: str) -> dict[str, Any]:
    """The agent's own way to load a skill: a tool, or (Codex) reading its SKILL.md."""
    if agent == "codex":
        return bash(agent, f"cat {SKILL_HOME[agent]}/SKILL.md")
    tool, arg = LOADER[agent]
    return {"tool_calls": [{tool: {arg: "greeter"}}]}


def greeter_script(agent: str) -> dict[str, Any]:
    """The fake model's script for greeter(): the candidate loads the skill and runs its
    script, the baseline writes a bare greeting."""
    return {
        "conversations": [
            conv(
                "(?s)greeter",
                "Create hello.txt",
                load_skill(agent),
                bash(agent, f"sh {SKILL_HOME[agent]}/scripts/greet.sh && cat hello.txt"),
                {"text": "I greeted everyone."},
            ),
            conv(
                "(?s)",
                "Create hello.txt",
                bash(agent, "echo hi > hello.txt"),
                {"text": "I greeted everyone."},
            ),
        ]
    }


def greeter(tmp_path: Path, agent: str) -> Path:
    files = {k: v for k, v in GREETER.items() if k != "SKILL.md"}
    folder = skill(tmp_path, files, config=f'agent = "{agent}"\n')
    (folder / "SKILL.md").write_text(GREETER["SKILL.md"])
    return folder


def rows(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            r["case"],
            r["outcome"],
            r["decided_by"],
            tuple(
                (a, tuple(c["passed"] for c in r["arms"][a]["checks"])) for a in sorted(r["arms"])
            ),
        )
        for r in summary["rows"]
    ]


def transcript(run: Path, key: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / f"transcripts/{key}.jsonl").read_text().splitlines()]


def test_every_agent_gives_the_same_results_for_the_same_behaviour(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = {}
    for agent in AGENTS:
        here = tmp_path / agent
        folder = greeter(here, agent)
        server = fake(greeter_script(agent))
        monkeypatch.setenv(KEY_VAR[agent], REAL_KEY)
        monkeypatch.chdir(here)  # each agent's project: its skillbench.toml names the agent
        code, lines, summary = run_eval(
            capsys, folder, here / "run", "--execution-only", "--model", MODEL[agent]
        )
        assert code == 3, lines  # one unit: INCONCLUSIVE, whichever agent ran it
        results[agent] = rows(summary)
        assert summary["agent"] == agent and summary["verdict"] == "INCONCLUSIVE"
        cand = transcript(here / "run", "hello.candidate.1")
        calls = [e for e in cand if e["type"] == "tool_call"]
        loader = LOADER[agent][0] if agent in LOADER else "bash"
        assert [c["name"] for c in calls] == [loader, "bash"]
        outputs = [e["text"] for e in cand if e["type"] == "tool_result"]
        assert "hello from the skill" in outputs[1]  # the skill's own script ran
        # the real key reached the provider only through skillbench, never the run folder
        assert {r.api_key for r in server.log()} == {REAL_KEY}
        leaked = [
            p
            for p in (here / "run").rglob("*")
            if p.is_file() and REAL_KEY.encode() in p.read_bytes()
        ]
        assert leaked == []
    assert len({str(r) for r in results.values()}) == 1, results  # the same rows
    assert results["builtin"] == [
        (
            "hello",
            "win",
            "checks",
            (("baseline", (True, False, False, True)), ("candidate", (True, True, True, True))),
        )
    ]


CONFIG_HOME = {
    "claude-code": "~/.claude",
    "codex": "~/.codex",
    "opencode": "~/.config/opencode",
    "gemini-cli": "~/.gemini",
    "copilot": "~/.copilot",
}
# where the CLI takes its (placeholder) key in the sandbox, when not the host's variable
# (Copilot CLI strips it from its commands' environment: the probe reads the CLI's own)
INSIDE_KEY_VAR = {"copilot": "COPILOT_PROVIDER_API_KEY"}


@pytest.mark.parametrize("agent", CLIS)
def test_a_cli_agent_holds_only_a_placeholder_and_reaches_only_its_broker(
    agent: str, fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = greeter(tmp_path, agent)
    var = KEY_VAR[agent]
    held = f"${{{var}#sk-}}"  # the key the shell holds
    if agent in INSIDE_KEY_VAR:  # the one the CLI's own process holds (not its shell's)
        held = (
            "$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
            f"sed -n 's/^{INSIDE_KEY_VAR[agent]}=sk-//p' | head -1)"
        )
    # (the pattern is built in the shell: the command's own text must not hold it)
    probe = (
        f"echo skills=$(ls {CONFIG_HOME[agent]}/skills | tr '\\n' ,); "
        f"k=REAL; k=${{k}}KEY; p={held}; echo key=${{p#ant-}}; cat /proc/[0-9]*/environ "
        "2>/dev/null | tr '\\0' '\\n' | grep -c $k; grep -rl $k / --exclude-dir=proc "
        '--exclude-dir=sys 2>/dev/null; python3 -c "import socket; '
        "socket.create_connection(('127.0.0.1', 22), timeout=2)\" 2>&1 | tail -1; echo probed"
    )
    if agent == "gemini-cli":  # it refuses a command substitution, even in yolo mode
        probe = f"echo {base64.b64encode(probe.encode()).decode()} | base64 -d | sh"
    fake(
        {"conversations": [conv("(?s)", "Create hello.txt", bash(agent, probe), {"text": "done"})]}
    )
    monkeypatch.setenv(KEY_VAR[agent], REAL_KEY)
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    assert code == 3  # one unit: INCONCLUSIVE
    seen = next(
        e["text"]
        for e in transcript(tmp_path / "run", "hello.baseline.1")
        if e["type"] == "tool_result"
    )
    lines = seen.splitlines()
    # the baseline's config dir holds no skill of ours (Codex keeps its own in .system)
    assert lines[0] in ("skills=", "skills=.system,"), lines
    # its session's own placeholder (sk-, sk-ant- taken off by the probe); the real key is
    # nowhere in the environment
    assert re.fullmatch(r"key=placeholder-[0-9a-f]{48}", lines[1]), lines
    assert lines[2] == "0"
    assert "REALKEY" not in seen  # nor in any file
    assert "Connection refused" in seen and "probed" in seen  # no other port answers
    assert summary["rows"][0]["decided_by"] == "checks"


@pytest.mark.parametrize(
    "fault", [{"status": 500}, {"midstream": True}], ids=["outage", "stream-cut"]
)
# OpenCode retries a cut stream itself (about a hundred times, with no setting to cap it),
# asking again with the partial answer appended: its broker forwards a question max_retries + 1
# times, no more (broker/retries.py), and OpenCode reports the refusal as its own error event
@pytest.mark.parametrize("agent", CLIS)
def test_a_provider_outage_or_a_cut_stream_is_an_infrastructure_error(
    agent: str, fault: dict[str, Any], fake, tmp_path: Path, capsys
) -> None:
    folder = greeter(tmp_path, agent)
    # (a second step, cut too: OpenCode asks again with the partial answer appended)
    failing = {"faults": [{**fault, "times": 99}], "text": "never"}
    server = fake({"conversations": [conv("(?s)", "Create hello.txt", failing, failing)]})
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    if agent == "opencode":  # each of its 4 sessions (2 arms, each tried twice) tries each
        # of its calls (the session's, and a title call) max_retries + 1 times, no more
        assert len(server.log()) <= 4 * 2 * 2, len(server.log())
    assert code == 2 and summary["verdict"] == "NONE"
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    assert {(s["outcome"], s["attempts"]) for s in sessions} == {("error", 2)}  # retried once
    assert all("model could not be reached" in s["error"] for s in sessions), [
        s["error"] for s in sessions
    ]


def test_max_cost_stops_a_claude_code_session_at_the_broker(fake, tmp_path: Path, capsys) -> None:
    folder = greeter(tmp_path, "claude-code")
    step = bash("claude-code", "echo working")
    fake({"conversations": [conv("(?s)", "Create hello.txt", step, step, step, {"text": "done"})]})
    # one call reserves ~$1.07 before it is forwarded (its 89 KB body priced at the dearest
    # input rate, an hour's cache write at 2x input, its 32k max_tokens as output) and costs
    # ~$0.09: the cap covers one reservation, not two
    _, _, summary = run_eval(
        capsys,
        folder,
        tmp_path / "run",
        "--execution-only",
        "--parallel",
        "1",
        "--max-cost",
        "1.15",
    )
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    assert len(sessions) == 1 and sessions[0]["stop_reason"] == "budget"
    assert sessions[0]["turns"] == 1  # the second model call was refused at the broker
    assert summary["stopped"] == "spend reached the --max-cost cap $1.15"
    exchanges = (tmp_path / f"run/exchanges/{sessions[0]['key']}.jsonl").read_text().splitlines()
    statuses = [json.loads(x)["status"] for x in exchanges]
    assert statuses[0] == 200 and set(statuses[1:]) == {400}  # every later call refused


def test_a_wall_timeout_kills_claude_code(fake, tmp_path: Path, capsys) -> None:
    folder = greeter(tmp_path, "claude-code")
    (folder / "evals/cases/hello.yaml").write_text(
        "task: Create hello.txt with a greeting\ntimeout_minutes: 1\nchecks: [{file_exists: x}]\n"
    )
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Create hello.txt",
                    bash("claude-code", "python3 -c 'import time; time.sleep(90)'"),
                    {"text": "done"},
                )
            ]
        }
    )
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--case", "hello"
    )
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    stops = {j["stop_reason"] for j in journal if j["type"] == "session"}
    assert stops == {"timeout"}  # the agent's fault: scored, not retried
    assert summary["scored_rows"] == 1 and code == 3  # one unit: INCONCLUSIVE


@pytest.mark.parametrize("agent", CLIS)
def test_the_turn_cap_is_the_agents_own_end_not_an_error(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    folder = greeter(tmp_path, agent)
    (folder / "evals/cases/hello.yaml").write_text(
        "task: Create hello.txt with a greeting\nmax_turns: 1\nchecks: [{file_exists: x}]\n"
    )
    step = bash(agent, "echo again")
    fake({"conversations": [conv("(?s)", "Create hello.txt", step, step, step, {"text": "done"})]})
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    sessions = [j for j in journal if j["type"] == "session"]
    assert {(s["stop_reason"], s["outcome"], s["attempts"]) for s in sessions} == {
        ("max_turns", "fail", 1)
    }
    assert code == 3 and summary["scored_rows"] == 1  # one unit: INCONCLUSIVE


@pytest.mark.parametrize("agent", CLIS)
def test_a_script_with_no_matching_conversation_says_so_as_the_error(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    folder = greeter(tmp_path, agent)
    fake({"conversations": [conv("(?s)never-in-any-prompt", "nor here", {"text": "never"})]})
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    assert code == 2 and summary["verdict"] == "NONE"
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    errors = [j["error"] for j in journal if j["type"] == "session"]
    assert errors and all(
        e.startswith(
            "the model refused the request: scripted model: no conversation of the script matches"
        )
        for e in errors
    ), errors


# where each CLI finds a project's own skills (Claude Code's `.claude` is the agent's
# settings: a case may not write there)
PROJECT_SKILLS = {
    "codex": ".agents/skills",
    "opencode": ".opencode/skills",
    "gemini-cli": ".gemini/skills",
    "copilot": ".github/skills",
}


@pytest.mark.parametrize("agent", CLIS)
def test_a_skill_the_workspace_brings_where_a_cli_finds_project_skills_refuses_the_run(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    # the arms would no longer differ by the skill alone: the baseline has one too
    from skillbench.cli import main

    folder = greeter(tmp_path, agent)
    case = folder / "evals/cases/hello.yaml"
    planted = "".join(
        f'  {where}/other-{i}/SKILL.md: "---\\nname: other-{i}\\ndescription: Greets.\\n---\\n"\n'
        for i, where in enumerate(PROJECT_SKILLS.values())
    )
    case.write_text(case.read_text() + "setup: git init -q\nfiles:\n" + planted)
    server = fake(greeter_script(agent))
    out = tmp_path / "run"
    code = main(
        [
            *("eval", str(folder), "--model", MODEL[agent], "--out", str(out)),
            *("--quiet", "--no-gen", "--execution-only"),
        ]
    )
    err = capsys.readouterr().err
    shown = {n for r in server.log() for n in re.findall(r"other-\d", json.dumps(r.body))}
    if agent == "claude-code":  # it reads none of those folders
        assert code != 2 and not shown, (err, shown)
        return
    mine = f"other-{list(PROJECT_SKILLS).index(agent)}"
    assert mine in shown  # the CLI found its own, and showed it to the model
    assert code == 2 and "run refused, arm " in err and mine in err, err
    assert not (out / "summary.json").exists()


@pytest.mark.parametrize("keep", [False, True], ids=["default", "keep"])
def test_the_skill_opencode_ships_is_reported_when_kept(
    keep: bool, fake, tmp_path: Path, capsys
) -> None:
    # read from its session's own first call, not from its title call (sent first)
    folder = greeter(tmp_path, "opencode")
    if keep:
        config = tmp_path / "skillbench.toml"
        config.write_text(config.read_text() + '[agents.opencode]\nambient_skills = "keep"\n')
    fake(greeter_script("opencode"))
    _, _, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL["opencode"]
    )
    shipped = ["customize-opencode"] if keep else []
    assert summary["ambient"]["arms"] == {"baseline": shipped, "candidate": shipped}


def test_opencodes_skills_are_read_from_its_sessions_call_whatever_its_task_says(
    fake, tmp_path: Path, capsys
) -> None:
    # its title call, sent first, quotes the task; a task quoting skillbench's prompt for
    # OpenCode does not make that call the session's (it lists no skills: the run was refused)
    from skillbench.agents.opencode import SESSION_PROMPT

    folder = greeter(tmp_path, "opencode")
    case = folder / "evals/cases/hello.yaml"
    case.write_text(case.read_text().replace("greeting", f"greeting. {SESSION_PROMPT}", 1))
    fake(greeter_script("opencode"))
    code, lines, _ = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL["opencode"]
    )
    assert code == 3, lines


def test_a_workspace_that_sets_opencodes_prompt_refuses_the_run(
    fake, tmp_path: Path, capsys
) -> None:
    # its skills would go unchecked: a skill the workspace brings reached the model
    from skillbench.cli import main

    folder = greeter(tmp_path, "opencode")
    case = folder / "evals/cases/hello.yaml"
    case.write_text(
        case.read_text() + "files:\n"
        '  .opencode/agent/build.md: "---\\ndescription: build\\n---\\nDo the task.\\n"\n'
        '  .opencode/skills/other/SKILL.md: "---\\nname: other\\ndescription: Greets.\\n---\\n"\n'
    )
    server = fake(greeter_script("opencode"))
    out = tmp_path / "run"
    code = main(
        [
            *("eval", str(folder), "--model", MODEL["opencode"], "--out", str(out)),
            *("--quiet", "--no-gen", "--execution-only"),
        ]
    )
    err = capsys.readouterr().err
    assert any("<name>other</name>" in json.dumps(r.body) for r in server.log())
    assert code == 2 and "session prompt is not the one skillbench gives it" in err, err
