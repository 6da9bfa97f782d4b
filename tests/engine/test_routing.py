"""Triggers by the real agent's own routing (issue 14): the real Claude Code, Codex, Gemini
and Copilot CLIs in real sandboxes, every skill of the library staged, against the fake model
server. A fired prompt, a missed prompt, a false fire, a broken canary (invalid, never 0 %
recall), and both methods side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillbench.cli import main
from tests.helpers import make_skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

MODEL = {
    "claude-code": "anthropic/claude-sonnet-4-6",
    "codex": "openai/gpt-5.1",
    "gemini-cli": "google/gemini-2.5-pro",
    "copilot": "openai/gpt-5.1",
}
FIRES, MISSED = "Say hello to the new team", "Welcome our new intern"
FALSE_FIRE, QUIET = "Compute the sum of 2 and 3", "Sort this list of numbers"
CANARY = "Use the greeter skill for this"


def load(agent: str, name: str) -> dict[str, Any]:
    """One model turn that loads skill `name` the agent's own way."""
    if agent == "codex":  # Codex reads the skill's SKILL.md
        return {"tool_calls": [{"exec_command": {"cmd": f"cat ~/.codex/skills/{name}/SKILL.md"}}]}
    if agent == "gemini-cli":
        return {"tool_calls": [{"activate_skill": {"name": name}}]}
    if agent == "copilot":
        return {"tool_calls": [{"skill": {"skill": name}}]}
    return {"tool_calls": [{"Skill": {"skill": name}}]}


def library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    # (no ": " in it: Copilot CLI drops a skill whose frontmatter is not valid YAML)
    make_skill(root, "greeter", description="Greets people - welcomes, hellos, introductions.")
    make_skill(root, "counter", description="Counts and sums numbers.")
    write(
        root / "greeter",
        {
            "evals/triggers.yaml": f"""
        should_trigger:
          - {FIRES}
          - {MISSED}
        should_not_trigger:
          - {FALSE_FIRE}
          - {QUIET}
    """
        },
    )
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n"})
    return root


def script(agent: str, canary_fires: bool = True) -> dict[str, Any]:
    done = {"text": "Done."}
    canary = [load(agent, "greeter"), done] if canary_fires else [done]
    return {
        "conversations": [
            {"when": f"(?s){CANARY}", "steps": canary},
            {"when": f"(?s){FIRES}", "steps": [load(agent, "greeter"), done]},
            {"when": f"(?s){MISSED}", "steps": [done]},
            {"when": f"(?s){FALSE_FIRE}", "steps": [load(agent, "greeter"), done]},
            {"when": f"(?s){QUIET}", "steps": [load(agent, "counter"), done]},
        ]
    }


def triggers(capsys, path: Path, *extra: str) -> tuple[int, Any, str]:
    code = main(["triggers", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli", "copilot"])
def test_the_agent_routes_each_prompt_itself(agent: str, fake, tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    server = fake(script(agent))
    code, out, err = triggers(
        capsys, root / "greeter", "--agent", agent, "--model", MODEL[agent], "--json"
    )
    assert code == 0, err
    t = json.loads(out)["greeter"]
    assert t["method"] == f"agent {agent}" and t["invalid"] is None
    fired = {d["prompt"]: d["fired"] for d in t["details"]}
    assert fired == {FIRES: True, MISSED: False, FALSE_FIRE: True, QUIET: False}
    assert (t["tp"], t["fn"], t["fp"], t["tn"]) == (1, 1, 1, 1)
    assert t["recall"] == 0.5 and t["precision"] == 0.5
    # the canary ran first, and every session saw both skills of the library
    firsts = [r for r in server.log() if r.step == 0]
    assert CANARY in json.dumps(firsts[0].body)
    assert len(firsts) == 5
    assert all("counter" in json.dumps(r.body) and "greeter" in json.dumps(r.body) for r in firsts)


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli", "copilot"])
def test_a_canary_that_does_not_fire_makes_the_measurement_invalid(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    root = library(tmp_path)
    server = fake(script(agent, canary_fires=False))
    code, out, err = triggers(capsys, root / "greeter", "--agent", agent, "--model", MODEL[agent])
    assert code == 0, err
    line = out.splitlines()[0]
    assert line.startswith(f"triggers (agent {agent}): INVALID: the canary")
    assert "recall" not in out.replace("no recall", "")  # never a 0 % recall
    assert len([r for r in server.log() if r.step == 0]) == 1  # nothing ran after the canary


def test_both_methods_side_by_side_with_their_disagreements(fake, tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    selected = {FIRES: ["greeter"], MISSED: ["greeter"], FALSE_FIRE: ["counter"], QUIET: []}
    rules = [
        {
            "when": f"User request:\\n{p}",
            "replies": [json.dumps({"nonce": "$FRAME_ID", "selected": s})],
        }
        for p, s in selected.items()
    ]
    fake({**script("claude-code"), "rules": rules})
    code, out, err = triggers(
        capsys,
        root / "greeter",
        "--method",
        "both",
        "--agent",
        "claude-code",
        "--model",
        MODEL["claude-code"],
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "triggers (catalog call): recall=1.00 precision=1.00 (tp=2 fn=0 fp=0 tn=2)"
    assert lines[1].startswith("triggers (agent claude-code): recall=0.50 precision=0.50")
    assert "methods disagree on 2 prompt(s):" in lines
    assert (
        f'  "{MISSED}" (should trigger): catalog call fired, agent claude-code did not fire'
        in lines
    )
    assert (
        f'  "{FALSE_FIRE}" (should not trigger): catalog call did not fire, agent claude-code fired'
    ) in lines


def test_an_agent_that_cannot_use_the_model_is_a_clear_error(tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    code, _, err = triggers(
        capsys, root / "greeter", "--agent", "codex", "--model", "anthropic/claude-sonnet-4-6"
    )
    assert code == 2
    assert "--agent codex speaks the OpenAI Responses API" in err
    assert "Traceback" not in err


def test_eval_with_a_cli_agent_measures_triggers_by_its_routing(
    fake, tmp_path: Path, capsys
) -> None:
    root = library(tmp_path)
    write(
        root / "greeter",
        {
            "evals/cases/hello.yaml": (
                "task: Create hello.txt with a greeting\nchecks:\n  - file_exists: hello.txt\n"
            )
        },
    )
    make = {"tool_calls": [{"Bash": {"command": "echo hi > hello.txt"}}]}
    server = script("claude-code")
    server["conversations"].append(
        {"when": "(?s)Create hello.txt", "steps": [make, {"text": "ok"}]}
    )
    fake(server)
    out = tmp_path / "run"
    code = main(
        [
            "eval",
            str(root / "greeter"),
            "--agent",
            "claude-code",
            "--model",
            MODEL["claude-code"],
            "--out",
            str(out),
            "--quiet",
            "--no-gen",
        ]
    )
    assert code == 3, capsys.readouterr().err  # one case: INCONCLUSIVE
    assert "triggers (agent claude-code): recall=0.50 precision=0.50" in capsys.readouterr().out
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["triggers"]["method"] == "agent claude-code"
    assert receipt["spend_usd"] > 0  # the routing sessions' calls count toward the spend
    # the routing sessions are kept with the run: the canary and four prompts
    assert len(list((out / "triggers/transcripts").glob("*.jsonl"))) == 5
