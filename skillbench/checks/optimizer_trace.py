"""A session's transcript in skill-optimizer's own trace format (docs/formats.md), for graders of
imported skill-optimizer suites that read `$RESULTS/trace.jsonl`.

The host writes it into the checker from the transcript it recorded (checks/run.py), so what a
grader reads is what the session did: a file the agent wrote anywhere is never it. Entries:
`trace_start` {schemaVersion, caseName, model, startedAt}, `message` {role, text},
`tool_call` {id, name, arguments}, `tool_result` {id, name, text, isError}; the tools are
skill-optimizer's (its agent's): read {path}, write {path, content}, edit {path, oldText,
newText}, bash {command}, lower case. Each agent's tools map onto them:

| agent | its tool | becomes |
|---|---|---|
| builtin | bash, read_file, write_file, edit_file | bash, read, write, edit |
| builtin | skill {name} | read {path: /skills/<name>/SKILL.md} (what the tool returns) |
| claude-code | Bash, Read, Write, Edit, MultiEdit | bash, read, write, edit, edit {path, edits} |
| claude-code | Skill {skill} | read {path: <its config dir>/skills/<skill>/SKILL.md} |
| claude-code | Glob, Grep, LS | find, grep, ls |
| codex | its shell commands (`bash` in the transcript) | bash |
| any | a command that is only `cat FILE` (how Codex reads a file) | read {path: FILE} |
| codex | apply_patch, one file change each | write (a file added), edit (else) |

Any other tool keeps its name, in lower case, and its arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from skillbench.results.transcript import json_line
from skillbench.sandbox.base import HOMES, SKILLS_DIR

_RENAMED = {
    "bash": "bash",
    "Bash": "bash",
    "shell": "bash",
    "read_file": "read",
    "Read": "read",
    "write_file": "write",
    "Write": "write",
    "edit_file": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Glob": "find",
    "Grep": "grep",
    "LS": "ls",
}
# where each agent's skill tool reads SKILL.md from (agents/cli.py copies the staged skills
# into Claude Code's config dir, agents/claude_code.py CONFIG_DIR)
_SKILL_HOMES = {"skill": SKILLS_DIR, "Skill": f"{HOMES['agent']}/.claude/skills"}


def optimizer_trace(events: list[dict[str, Any]]) -> str:
    """The transcript `events` as skill-optimizer's trace.jsonl text."""
    return "".join(json_line(e) for e in _entries(events))


def _entries(events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    calls: dict[str, list[str]] = {}  # our call id -> the names its entries were given
    for e in events:
        kind = e.get("type")
        if kind == "trace_start":
            yield {
                "type": "trace_start",
                "schemaVersion": 1,
                "caseName": e.get("case"),
                "model": e.get("model"),
                "startedAt": e.get("started_at"),
            }
        elif kind == "message":
            yield {"type": "message", "role": e.get("role"), "text": e.get("text", "")}
        elif kind == "tool_call":
            mapped = list(_calls(str(e.get("name", "")), e.get("arguments") or {}))
            calls[str(e.get("id"))] = [name for name, _ in mapped]
            for name, arguments in mapped:
                yield {"type": "tool_call", "id": e.get("id"), "name": name, "arguments": arguments}
        elif kind == "tool_result":
            names = calls.get(str(e.get("id"))) or [str(e.get("name", "")).lower()]
            for name in names:
                yield {
                    "type": "tool_result",
                    "id": e.get("id"),
                    "name": name,
                    "text": e.get("text", ""),
                    "isError": bool(e.get("is_error")),
                }


def _calls(name: str, args: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """skill-optimizer's tool calls for one of ours: (name, arguments), one for most."""
    if name in _SKILL_HOMES:
        skill = str(args.get("name") or args.get("skill") or "").rsplit(":", 1)[-1]
        yield "read", {"path": f"{_SKILL_HOMES[name]}/{skill}/SKILL.md"}
    elif name == "apply_patch":  # Codex: {changes: [{path, kind: add|update|delete}]}
        for change in args.get("changes") or []:
            if isinstance(change, dict):
                yield (
                    "write" if change.get("kind") == "add" else "edit",
                    {"path": change.get("path")},
                )
    elif name in _RENAMED and (shown := _cat(_RENAMED[name], args)) is not None:
        yield "read", {"path": shown}
    elif name in _RENAMED:
        yield _RENAMED[name], _arguments(_RENAMED[name], args)
    else:
        yield name.lower(), args


def _arguments(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments under skill-optimizer's names for `tool`; others are kept as they are."""
    if tool == "bash":
        return {"command": args.get("command", "")}
    if tool not in ("read", "write", "edit"):
        return args
    out = {"path": args.get("path", args.get("file_path"))}
    if tool == "write":
        out["content"] = args.get("content", "")
    elif tool == "edit" and isinstance(args.get("edits"), list):  # Claude Code's MultiEdit
        out["edits"] = [
            {"oldText": e.get("old_string", ""), "newText": e.get("new_string", "")}
            for e in args["edits"]
            if isinstance(e, dict)
        ]
    elif tool == "edit":
        out["oldText"] = args.get("old_string", "")
        out["newText"] = args.get("new_string", "")
    return out


_CAT = re.compile(r"\s*cat\s+([^\s;&|<>()`$'\"]+)\s*")


def _cat(tool: str, args: dict[str, Any]) -> str | None:
    """The file a bash command only prints (`cat FILE`, nothing else), or None: an agent
    with no read tool (Codex) reads a file so."""
    found = _CAT.fullmatch(str(args.get("command", ""))) if tool == "bash" else None
    return found.group(1) if found else None
