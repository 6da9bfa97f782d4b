"""The agent's tools, identical in every arm; each one executes inside the arm's sandbox."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import msgspec

from skillbench.models.base import ToolSpec
from skillbench.sandbox.base import SKILLS_DIR, Sandbox

BASH_DEFAULT_TIMEOUT = 120
BASH_MAX_TIMEOUT = 600
MODEL_OUTPUT_CAP = 30_000  # characters of tool output the model sees


def _schema(props: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


_STR = {"type": "string"}
TOOLS: list[ToolSpec] = [
    ToolSpec(
        "bash",
        "Run a bash command in /work and return its exit code, stdout and stderr. "
        f"Commands are killed after `timeout` seconds (default {BASH_DEFAULT_TIMEOUT}, "
        f"at most {BASH_MAX_TIMEOUT}). There is no network.",
        _schema({"command": _STR, "timeout": {"type": "integer"}}, ["command"]),
    ),
    ToolSpec(
        "read_file",
        "Read a text file (a path relative to /work, or absolute).",
        _schema({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "write_file",
        "Write a file, replacing it; parent folders are created.",
        _schema({"path": _STR, "content": _STR}, ["path", "content"]),
    ),
    ToolSpec(
        "edit_file",
        "Replace exactly one occurrence of old_string with new_string in a file. Fails "
        "when old_string is missing or appears more than once (add context to make it "
        "unique).",
        _schema(
            {"path": _STR, "old_string": _STR, "new_string": _STR},
            ["path", "old_string", "new_string"],
        ),
    ),
    ToolSpec(
        "skill",
        "Load an available skill by name: returns its SKILL.md and the folder holding its files.",
        _schema({"name": _STR}, ["name"]),
    ),
]


class ToolOutcome(msgspec.Struct, frozen=True):
    """What a tool call returned to the model."""

    text: str
    is_error: bool = False
    exit_code: int | None = None


def cap_text(text: str, limit: int = MODEL_OUTPUT_CAP) -> str:
    """Keep the head and tail of long output, with a marker saying what was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _arg(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise _BadArgs(f"`{name}` must be a string")
    return value


class _BadArgs(Exception):
    pass


async def run_tool(
    sandbox: Sandbox, skills: Sequence[str], name: str, args: dict[str, Any]
) -> ToolOutcome:
    """Execute one tool call in the sandbox. Tool-level failures become error outcomes the
    model can read; only a failure of the sandbox itself raises (SandboxError)."""
    try:
        if name == "bash":
            return await _bash(sandbox, args)
        if name == "read_file":
            path = _arg(args, "path")
            return ToolOutcome(cap_text(await sandbox.read_text(path)))
        if name == "write_file":
            path, content = _arg(args, "path"), _arg(args, "content")
            await sandbox.write_file(path, content)
            return ToolOutcome(f"wrote {len(content.encode())} bytes to {path}")
        if name == "edit_file":
            return await _edit(sandbox, args)
        if name == "skill":
            return await _skill(sandbox, skills, _arg(args, "name"))
        return ToolOutcome(f"unknown tool {name!r}", is_error=True)
    except _BadArgs as exc:
        return ToolOutcome(f"bad arguments for {name}: {exc}", is_error=True)
    except OSError as exc:
        return ToolOutcome(
            f"{name} failed: {exc.strerror or exc}: {exc.filename or ''}".rstrip(), is_error=True
        )


async def _bash(sandbox: Sandbox, args: dict[str, Any]) -> ToolOutcome:
    command = _arg(args, "command")
    timeout = args.get("timeout", BASH_DEFAULT_TIMEOUT)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        timeout = BASH_DEFAULT_TIMEOUT
    timeout = min(float(timeout), BASH_MAX_TIMEOUT)
    result = await sandbox.exec(command, timeout=timeout)
    parts = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.timed_out:
        parts.append(f"[timed out after {timeout:g} s; the command was killed]")
    else:
        parts.append(f"[exit code {result.exit_code}]")
    return ToolOutcome(
        cap_text("\n".join(parts)), is_error=not result.ok, exit_code=result.exit_code
    )


async def _edit(sandbox: Sandbox, args: dict[str, Any]) -> ToolOutcome:
    path, old, new = _arg(args, "path"), _arg(args, "old_string"), _arg(args, "new_string")
    if not old:
        return ToolOutcome("old_string is empty; use write_file to create a file", is_error=True)
    text = await sandbox.read_text(path)
    count = text.count(old)
    if count == 0:
        return ToolOutcome(f"old_string not found in {path}", is_error=True)
    if count > 1:
        return ToolOutcome(
            f"old_string appears {count} times in {path}; include more "
            "surrounding text so it is unique",
            is_error=True,
        )
    await sandbox.write_file(path, text.replace(old, new, 1))
    return ToolOutcome(f"edited {path}")


async def _skill(sandbox: Sandbox, skills: Sequence[str], name: str) -> ToolOutcome:
    if name not in skills:
        available = ", ".join(skills) or "none"
        return ToolOutcome(f"no such skill: {name!r} (available: {available})", is_error=True)
    folder = f"{SKILLS_DIR}/{name}"
    body = await sandbox.read_text(f"{folder}/SKILL.md")
    listing = await sandbox.exec(f"cd {shlex.quote(folder)} && find . -type f | sort", timeout=30)
    files = listing.stdout.strip()
    return ToolOutcome(cap_text(f"Skill folder: {folder}\nFiles:\n{files}\n\n{body}"))
