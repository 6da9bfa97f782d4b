"""Scripts: scripted model behaviour, played by the `scripted/<name>` provider and by the
fake model server in `skillbench.models.fake_server`.

A script is YAML:

    latency: 0.0                   # seconds before every reply (optional)
    cache_min_tokens: 1024         # the prompt cache's shortest prefix (default: the model's)
    rules:                         # checked first, against the last user message
      - when: "User request"       # a regex
        replies: ['{"nonce": "$FRAME_ID", "selected": []}']  # used in turn, the last one
                                        # repeating; $FRAME_ID: the frame id the request gave
                                        # (grading/framing.py), which every judge, grader,
                                        # trigger, tune and gen answer must start with
    conversations:                 # the first whose `when` matches system + first user message
      - when: "hello"
        loop: false                # true: repeat the last step forever
        steps:
          - text: "Writing it."
            tool_calls:
              - write_file: {path: hello.py, content: "print('hi')\\n"}
          - faults: [{status: 429, retry_after: 0.1}]   # served before this step's reply
            text: "Done."

The step played is the number of assistant turns already in the request, so a script is a
pure function of the conversation so far (plus the fault counters).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import msgspec
import yaml

from skillbench.errors import SkillbenchError
from skillbench.models.base import StopReason


class ScriptError(SkillbenchError):
    """A script file is missing or malformed."""


class Fault(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One injected failure: an HTTP status (with Retry-After), a stall, a bad body, or a
    stream cut off in its answer's first words."""

    status: int | None = None
    retry_after: float | None = None
    stall: float | None = None
    malformed: bool = False
    midstream: bool = False
    message: str | None = None  # the error message of a status fault
    times: int = 1


class Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    text: str = ""
    tool_calls: list[dict[str, dict[str, Any]]] = []
    faults: list[Fault] = []
    stop_reason: StopReason | None = None
    latency: float | None = None


class Conversation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    steps: list[Step]
    when: str | None = None
    loop: bool = False


class Rule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    when: str
    replies: list[str]
    faults: list[Fault] = []


class Script(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    conversations: list[Conversation] = []
    rules: list[Rule] = []
    latency: float = 0.0
    # the shortest prefix an Anthropic breakpoint caches, for every model; unset, each model's
    # own minimum (fake_cache.ANTHROPIC_MIN_TOKENS): shorter prefixes are sent as plain input
    cache_min_tokens: int | None = None


def load_script(path: Path) -> Script:
    """Read a script file."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScriptError(f"{path}: cannot read script: {exc}") from None
    return parse_script(data, str(path))


def parse_script(data: Any, where: str = "<script>") -> Script:
    """Validate plain data as a script."""
    try:
        script = msgspec.convert(data or {}, Script)
    except msgspec.ValidationError as exc:
        raise ScriptError(f"{where}: invalid script: {exc}") from None
    for step in (s for c in script.conversations for s in c.steps):
        for call in step.tool_calls:
            if len(call) != 1:
                raise ScriptError(f"{where}: a tool call is a single-key map {{tool: arguments}}")
    return script


class Play(msgspec.Struct, frozen=True):
    """What to answer to one request: a fault, or text and tool calls."""

    fault: Fault | None = None
    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    stop_reason: StopReason | None = None
    latency: float = 0.0
    step: int = 0
    source: str = ""  # "rule 0", "conversation 1", for the request log


_FRAME_ID = re.compile(r"This call's frame id is (\w+)\.")


class Player:
    """Plays a script; thread-safe (the fake server answers requests on many threads)."""

    def __init__(self, script: Script):
        self.script = script
        self._lock = threading.Lock()
        self._fault_counts: dict[tuple[str, int, int], int] = {}
        self._rule_uses: dict[int, int] = {}

    def play(self, system: str, first_user: str, last_user: str, assistant_turns: int) -> Play:
        """Decide the reply to a request with this shape; raises ScriptError if none fits."""
        for i, rule in enumerate(self.script.rules):
            if re.search(rule.when, last_user):
                key = f"rule{i}|{last_user}"
                fault = self._next_fault(key, 0, rule.faults)
                if fault:
                    return Play(fault=fault, source=f"rule {i}")
                with self._lock:
                    use = self._rule_uses.get(i, 0)
                    self._rule_uses[i] = use + 1
                reply = rule.replies[min(use, len(rule.replies) - 1)]
                # a judge or grader that follows its prompt puts the call's frame id in its
                # verdict: `$FRAME_ID` in a reply is the id the request gave
                # (the last: the stamp follows the case's task and rubric, which could hold one)
                found = _FRAME_ID.findall(last_user)
                if found:
                    reply = reply.replace("$FRAME_ID", found[-1])
                return Play(text=reply, latency=self.script.latency, source=f"rule {i}")
        head = f"{system}\n{first_user}"
        for i, conv in enumerate(self.script.conversations):
            if conv.when is None or re.search(conv.when, head):
                if assistant_turns >= len(conv.steps) and not conv.loop:
                    raise ScriptError(
                        f"conversation {i} has {len(conv.steps)} steps; asked for step "
                        f"{assistant_turns + 1}"
                    )
                index = min(assistant_turns, len(conv.steps) - 1)
                step = conv.steps[index]
                fault = self._next_fault(head, assistant_turns, step.faults)
                if fault:
                    return Play(fault=fault, step=index, source=f"conversation {i}")
                calls = tuple(
                    (name, args) for call in step.tool_calls for name, args in call.items()
                )
                latency = self.script.latency if step.latency is None else step.latency
                return Play(
                    None, step.text, calls, step.stop_reason, latency, index, f"conversation {i}"
                )
        raise ScriptError(f"no conversation of the script matches: {head[:200]!r}")

    def _next_fault(self, key: str, turn: int, faults: list[Fault]) -> Fault | None:
        with self._lock:
            for j, fault in enumerate(faults):
                used = self._fault_counts.get((key, turn, j), 0)
                if used < fault.times:
                    self._fault_counts[(key, turn, j)] = used + 1
                    return fault
        return None
