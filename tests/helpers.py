"""Builders for skill folders on disk, shared by the tests."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from skillbench.cli import main


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


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"bash": {"command": command}}]}


def skill(tmp_path: Path, files: dict[str, str], config: str = "") -> Path:
    """The `greeter` skill in tmp_path/lib with `files`, and a skillbench.toml beside it."""
    folder = make_skill(tmp_path / "lib", "greeter", files, description="Greets people politely.")
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n" + config})
    return folder


def run_eval(capsys, folder: Path, out: Path, *extra: str) -> tuple[int, list[str], dict[str, Any]]:
    """`skillbench eval` in-process against the fake server: exit code, report, summary."""
    code = main(
        [
            "eval",
            str(folder),
            "--model",
            MODEL,
            "--out",
            str(out),
            "--quiet",
            "--seed",
            "7",
            "--no-gen",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert (out / "summary.json").is_file(), f"no summary.json (exit {code}): {captured.err}"
    summary = json.loads((out / "summary.json").read_text())
    return code, lines, summary
