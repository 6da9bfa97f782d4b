"""`scripted/<name>`: plays a script instead of calling a model.

For the offline demo and for tests that need no HTTP. It is never a model and says so: its
reference starts with `scripted/` everywhere it is recorded (transcripts, receipts).
<name> is a path to a script file, or a name looked up in $SKILLBENCH_SCRIPTS and then in the
scripts bundled with skillbench.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from skillbench.models.base import (
    Completion,
    Message,
    ModelError,
    TextBlock,
    ToolCall,
    ToolSpec,
    Usage,
)
from skillbench.models.script import Player, ScriptError, load_script

BUNDLED = Path(__file__).parent / "scripts"
NOTICE = "scripted driver: replays a fixed script; this is not a model"


def find_script(name: str) -> Path:
    """The script file a `scripted/<name>` reference names."""
    candidates = [Path(name)] if name.endswith((".yaml", ".yml")) or "/" in name else []
    folders = [Path(p) for p in os.environ.get("SKILLBENCH_SCRIPTS", "").split(os.pathsep) if p]
    for folder in [*folders, BUNDLED]:
        candidates += [folder / f"{name}.yaml", folder / f"{name}.yml"]
    for path in candidates:
        if path.is_file():
            return path
    raise ScriptError(f"no script named {name!r} (looked in $SKILLBENCH_SCRIPTS and {BUNDLED})")


def request_shape(system: str, messages: list[Message]) -> tuple[str, str, str, int]:
    """(system, first user text, last user text, assistant turns so far) of a request."""
    users = [m.text for m in messages if m.role == "user"]
    turns = sum(m.role == "assistant" for m in messages)
    return system, (users[0] if users else ""), (users[-1] if users else ""), turns


class ScriptedModel:
    """A Model that plays a script."""

    notice = NOTICE

    def __init__(self, ref: str):
        self.ref = ref
        self.player = Player(load_script(find_script(ref.split("/", 1)[1])))

    async def aclose(self) -> None:
        pass  # nothing to release

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        try:
            play = self.player.play(*request_shape(system, messages))
        except ScriptError as exc:
            raise ModelError("infrastructure", f"{self.ref}: {exc}") from exc
        if play.fault is not None:
            fault = play.fault
            if fault.stall:
                await asyncio.sleep(fault.stall)
            what = f"{self.ref}: scripted fault {fault.status or 'malformed'}"
            if fault.status in (401, 403):
                raise ModelError("auth", what)
            raise ModelError("infrastructure", what)
        if play.latency:
            await asyncio.sleep(play.latency)
        turn = sum(m.role == "assistant" for m in messages)
        content: list[TextBlock | ToolCall] = [TextBlock(play.text)] if play.text else []
        content += [
            ToolCall(f"call_{turn}_{j}", name, dict(args))
            for j, (name, args) in enumerate(play.tool_calls)
        ]
        stop = play.stop_reason or ("tool_use" if play.tool_calls else "end_turn")
        return Completion(tuple(content), stop, Usage(), self.ref)
