"""A session as Vally's `program` grader reads it: the GraderInput JSON that Vally writes to
the file named by EVALUATE_GRADER_INPUT (docs/formats.md; Vally's reference, Graders ->
program, and its Trajectory Format page).

The host writes it into the fresh checker from the transcript it recorded (checks/run.py), as it
does skill-optimizer's trace: whatever the agent left in the workspace is never it. Shape:
`{"trajectory": {id, stimulus, events, metrics, output, workDir}, "stimulus": {name, prompt},
"config": <the grader's config>}`; events are Vally's `tool_call` {toolName, toolCallId,
arguments}, `tool_result` {toolName, toolCallId, success, result}, `assistant_message` /
`user_message` {content}, each with a `timestamp` and the fields under `data`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def grader_input(events: list[dict[str, Any]], context: str, workdir: str) -> str:
    """The GraderInput JSON text for a session's transcript `events`; `context` is the
    check's `{"stimulus", "config"}` JSON as the eval.yaml loader recorded it."""
    given = json.loads(context)
    stimulus = given.get("stimulus") or {}
    out = list(_events(events))
    calls = sum(1 for e in out if e["type"] == "tool_call")
    turns = sum(1 for e in out if e["type"] == "assistant_message")
    replies = [e["data"]["content"] for e in out if e["type"] == "assistant_message"]
    trajectory = {
        "id": str(stimulus.get("name", "")),
        "stimulus": stimulus,
        "events": out,
        "metrics": {"toolCallCount": calls, "turnCount": turns},
        "output": next((r for r in reversed(replies) if r), ""),
        "workDir": workdir,
    }
    return json.dumps(
        {"trajectory": trajectory, "stimulus": stimulus, "config": given.get("config") or {}}
    )


def _events(events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    names: dict[str, str] = {}
    for e in events:
        kind, at = e.get("type"), str(e.get("at", e.get("started_at", "")))
        if kind == "message":
            role = "assistant" if e.get("role") == "assistant" else "user"
            yield _event(f"{role}_message", at, content=str(e.get("text", "")))
        elif kind == "tool_call":
            names[str(e.get("id"))] = str(e.get("name", ""))
            yield _event(
                "tool_call",
                at,
                toolName=str(e.get("name", "")),
                toolCallId=str(e.get("id", "")),
                arguments=e.get("arguments") or {},
            )
        elif kind == "tool_result":
            call = str(e.get("id", ""))
            yield _event(
                "tool_result",
                at,
                toolName=names.get(call, str(e.get("name", ""))),
                toolCallId=call,
                success=not e.get("is_error"),
                result=str(e.get("text", "")),
            )


def _event(kind: str, at: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": at, "data": data}
