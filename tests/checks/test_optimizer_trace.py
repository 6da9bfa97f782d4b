"""Issue 23: graders of skill-optimizer suites read `$RESULTS/trace.jsonl` in skill-optimizer's
own format. Each agent's transcript (the builtin loop's events; Claude Code's stream-json and
Codex's --json events through the agents' own replays) maps onto its entries and lower-case
tool names (read, write, edit, bash)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillbench.agents import claude_code, codex
from skillbench.checks.optimizer_trace import optimizer_trace
from skillbench.results.transcript import TraceWriter


def _entries(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in optimizer_trace(events).splitlines()]


def _calls(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["name"], e["arguments"]) for e in entries if e["type"] == "tool_call"]


def test_builtin_tools_and_its_skill_tool_become_skill_optimizers() -> None:
    events = [
        {
            "type": "trace_start",
            "case": "c",
            "arm": "candidate",
            "rep": 1,
            "model": "m",
            "started_at": "2026-01-01T00:00:00+00:00",
        },
        {"type": "message", "role": "user", "text": "do it", "usage": None},
        {"type": "tool_call", "id": "1", "name": "skill", "arguments": {"name": "greeter"}},
        {
            "type": "tool_result",
            "id": "1",
            "name": "skill",
            "text": "# Greeter",
            "is_error": False,
            "exit_code": None,
        },
        {"type": "tool_call", "id": "2", "name": "read_file", "arguments": {"path": "a.txt"}},
        {
            "type": "tool_call",
            "id": "3",
            "name": "edit_file",
            "arguments": {"path": "a.txt", "old_string": "x", "new_string": "y"},
        },
        {
            "type": "tool_call",
            "id": "4",
            "name": "write_file",
            "arguments": {"path": "b.txt", "content": "hi"},
        },
        {
            "type": "tool_call",
            "id": "5",
            "name": "bash",
            "arguments": {"command": "ls", "timeout": 5},
        },
        {
            "type": "tool_result",
            "id": "5",
            "name": "bash",
            "text": "boom",
            "is_error": True,
            "exit_code": 1,
        },
        {"type": "trace_end", "stop_reason": "end_turn", "turns": 2},
    ]
    entries = _entries(events)
    assert entries[0] == {
        "type": "trace_start",
        "schemaVersion": 1,
        "caseName": "c",
        "model": "m",
        "startedAt": "2026-01-01T00:00:00+00:00",
    }
    assert entries[1] == {"type": "message", "role": "user", "text": "do it"}
    assert _calls(entries) == [
        ("read", {"path": "/skills/greeter/SKILL.md"}),
        ("read", {"path": "a.txt"}),
        ("edit", {"path": "a.txt", "oldText": "x", "newText": "y"}),
        ("write", {"path": "b.txt", "content": "hi"}),
        ("bash", {"command": "ls"}),
    ]
    results = [e for e in entries if e["type"] == "tool_result"]
    assert results == [
        {"type": "tool_result", "id": "1", "name": "read", "text": "# Greeter", "isError": False},
        {"type": "tool_result", "id": "5", "name": "bash", "text": "boom", "isError": True},
    ]
    assert all(e["type"] != "trace_end" for e in entries)  # not one of skill-optimizer's


def _replayed(tmp_path: Path, replay: Any, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    trace = TraceWriter(tmp_path / "trace.jsonl")
    replay("\n".join(json.dumps(line) for line in lines), trace)
    trace.close()
    return _entries(trace.events)


def test_claude_codes_tools_map_by_name(tmp_path: Path) -> None:
    def use(tid: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "id": tid, "name": name, "input": arguments}]
            },
        }

    entries = _replayed(
        tmp_path,
        claude_code._replay,
        [
            use("t1", "Skill", {"skill": "greeter"}),
            use("t2", "Read", {"file_path": "/work/references/notes.md"}),
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t2",
                            "content": "notes",
                            "is_error": False,
                        }
                    ]
                },
            },
            use("t3", "Write", {"file_path": "/work/out.txt", "content": "x"}),
            use("t4", "Edit", {"file_path": "/work/out.txt", "old_string": "x", "new_string": "y"}),
            use(
                "t4b",
                "MultiEdit",
                {"file_path": "/work/out.txt", "edits": [{"old_string": "y", "new_string": "z"}]},
            ),
            use("t5", "Bash", {"command": "cat out.txt | wc -l", "description": "count"}),
            use("t6", "Grep", {"pattern": "x"}),
            use("t7", "TodoWrite", {"todos": []}),
            {"type": "result", "subtype": "success"},
        ],
    )
    assert _calls(entries) == [
        ("read", {"path": "/home/agent/.claude/skills/greeter/SKILL.md"}),
        ("read", {"path": "/work/references/notes.md"}),
        ("write", {"path": "/work/out.txt", "content": "x"}),
        ("edit", {"path": "/work/out.txt", "oldText": "x", "newText": "y"}),
        ("edit", {"path": "/work/out.txt", "edits": [{"oldText": "y", "newText": "z"}]}),
        ("bash", {"command": "cat out.txt | wc -l"}),  # more than a read
        ("grep", {"pattern": "x"}),
        ("todowrite", {"todos": []}),
    ]
    assert [e for e in entries if e["type"] == "tool_result"] == [
        {"type": "tool_result", "id": "t2", "name": "read", "text": "notes", "isError": False}
    ]


def test_codex_shell_commands_and_patches_map_onto_bash_write_and_edit(tmp_path: Path) -> None:
    entries = _replayed(
        tmp_path,
        codex._replay,
        [
            {
                "type": "item.completed",
                "item": {
                    "id": "i1",
                    "type": "command_execution",
                    "command": "/bin/bash -lc 'cat SKILL.md'",
                    "aggregated_output": "# Skill",
                    "exit_code": 0,
                },
            },
            {
                "type": "item.completed",
                "item": {
                    "id": "i2",
                    "type": "file_change",
                    "status": "completed",
                    "changes": [
                        {"path": "/work/new.txt", "kind": "add"},
                        {"path": "/work/old.txt", "kind": "update"},
                    ],
                },
            },
            {"type": "turn.completed"},
        ],
    )
    assert _calls(entries) == [
        ("read", {"path": "SKILL.md"}),  # Codex has no read tool: `cat FILE` is its read
        ("write", {"path": "/work/new.txt"}),
        ("edit", {"path": "/work/old.txt"}),
    ]
    results = [(e["name"], e["isError"]) for e in entries if e["type"] == "tool_result"]
    assert results == [("read", False), ("write", False), ("edit", False)]
