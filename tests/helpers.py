"""Builders for skill folders on disk, shared by the tests."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from skillbench.cli import main
from skillbench.engine.run import receipt_of
from skillbench.evals.skills import digest
from skillbench.models import Endpoint
from skillbench.results.records import BASELINE, CANDIDATE, ArmResult, Plan, RowRecord, Unit
from skillbench.results.score import summarize
from skillbench.team.receipts import write_receipt


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (relative path → text or bytes) under `root`; return `root`."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def make_skill(
    parent: Path, name: str, files: dict[str, str | bytes] | None = None, description: str = ""
) -> Path:
    """A skill folder `parent/name` with a valid SKILL.md plus `files`."""
    folder = parent / name
    desc = description or f"Helps with {name} tasks."
    write(folder, {"SKILL.md": f"---\nname: {name}\ndescription: {desc}\n---\n# {name}\n"})
    return write(folder, files or {})


# --- scripted agents for end-to-end evals (the fake model server plays them) ---------

MODEL = "anthropic/claude-sonnet-4-6"
CAND = r"(?s)- greeter: "  # only the candidate's system prompt lists the skill
BASE = r"(?s)No skills are available"


def conv(when: str, task: str, *steps: dict[str, Any], loop: bool = False) -> dict[str, Any]:
    return {"when": f"{when}.*{task}", "steps": list(steps), "loop": loop}


def write_file(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"write_file": {"path": path, "content": content}}]}


def grader_reply(graded: list[tuple[int, bool, str]]) -> str:
    """A scripted model grader's answer, as the grader is asked for it: the frame id, then
    each (id, passed), then each id's evidence."""
    return json.dumps(
        {
            "nonce": "$FRAME_ID",
            "results": [{"id": i, "passed": passed} for i, passed, _ in graded],
            "evidence": {str(i): quote for i, _, quote in graded},
        }
    )


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"bash": {"command": command}}]}


def skill(tmp_path: Path, files: dict[str, str], config: str = "") -> Path:
    """The `greeter` skill in tmp_path/lib with `files`, and a skillbench.toml beside it."""
    folder = make_skill(tmp_path / "lib", "greeter", files, description="Greets people politely.")
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n" + config})
    return folder


def eval_cli(
    capture: Any, folder: Path, out: Path, *extra: str, model: str = MODEL
) -> tuple[int, str, str, dict[str, Any]]:
    """The one eval driver of the tests: `skillbench eval` in-process against the fake server
    (`--quiet --seed 7 --no-gen`, `extra` after), with `capture` (pytest's capsys or capfd, or
    None) read afterwards. Returns the exit code, stdout, stderr and summary.json."""
    code = main(
        [
            *("eval", str(folder), "--model", model, "--out", str(out)),
            *("--quiet", "--seed", "7", "--no-gen"),
            *extra,
        ]
    )
    stdout, stderr = ("", "") if capture is None else capture.readouterr()
    assert (out / "summary.json").is_file(), f"no summary.json (exit {code}): {stderr}"
    return code, stdout, stderr, json.loads((out / "summary.json").read_text())


def run_eval(capsys, folder: Path, out: Path, *extra: str) -> tuple[int, list[str], dict[str, Any]]:
    """`skillbench eval` through `eval_cli`: exit code, report lines, summary."""
    code, stdout, _, summary = eval_cli(capsys, folder, out, *extra)
    return code, stdout.splitlines(), summary


# --- receipts as the engine writes them, without running sessions ---------------------

_OUTCOME = {"W": "win", "L": "loss", "T": "tie", "U": "tie"}
PROVIDER = {"agent": Endpoint("https://api.anthropic.com", True)}


def engine_receipt(
    skill_dir: Path,
    run_id: str,
    outcomes: dict[str, str],
    *,
    created: str = "2026-11-29T10:00:00+00:00",
    model: str = MODEL,
    agent: str = "builtin",
    skill: str = "greeter",
    triggers: dict[str, Any] | None = None,
    endpoints: dict[str, Endpoint] | None = None,
    sign_key: Path | None = None,
    names: list[str] | None = None,
) -> Path:
    """A receipt for `skill_dir`'s bytes written the way `eval` writes one (summarize, then
    receipt_of, then write_receipt), from rows given per opponent as letters: W win, L loss,
    T tie, U unscored, one case each (named c1, c2, ... or `names`). Returns the run folder
    (receipt.json is in it)."""
    cases = max(len(o) for o in outcomes.values())
    names = names or [f"c{i}" for i in range(1, cases + 1)]
    units = [Unit(name, name) for name in names]
    plan = Plan(
        run_id=run_id,
        skill=skill,
        skill_dir=str(skill_dir),
        version=digest(skill_dir),
        assets_digest="sha256:0",
        model=model,
        judge_model=model,
        k=1,
        seed=1,
        arms=[BASELINE, CANDIDATE, *(o for o in outcomes if o != BASELINE)],
        opponents=list(outcomes),
        sessions=[u.name for u in units],
        units=units,
        engine_version="0",
        created_at=created,
        endpoints={**PROVIDER, "judge": PROVIDER["agent"]} if endpoints is None else endpoints,
        agent=agent,
    )
    rows = [
        RowRecord(
            case=units[i].name,
            rep=1,
            opponent=opp,
            outcome=_OUTCOME[letter],
            decided_by="unscored" if letter == "U" else "checks",
            arms={
                CANDIDATE: ArmResult(letter == "W", letter == "U", []),
                opp: ArmResult(letter == "L", letter == "U", []),
            },
        )
        for opp, letters in outcomes.items()
        for i, letter in enumerate(letters)
    ]
    summary = summarize(plan, {}, rows, [])
    summary.triggers = triggers
    receipt = receipt_of(plan, summary, "sha256:" + "0" * 64)
    receipt.provenance.created_at = created
    run_dir = skill_dir.parent.parent / "runs" / run_id
    run_dir.mkdir(parents=True)
    write_receipt(receipt, run_dir, sign_key=sign_key)
    return run_dir
