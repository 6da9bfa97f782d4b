"""The agent loop: the model is called from the host (API keys never enter a sandbox); every
tool call runs in the arm's sandbox. The turn cap and the wall-clock cap are enforced from
outside the loop body, and either ends the session with that stop reason."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import msgspec

from skillbench.agents.builtin.tools import TOOLS, run_tool
from skillbench.evals.skills import catalog_lines
from skillbench.models.base import (
    Completion,
    Message,
    Model,
    ModelError,
    TextBlock,
    ToolResult,
    Usage,
)
from skillbench.models.ledger import BudgetRefused, RunLedger, metered
from skillbench.models.pricing import Price, cost_usd
from skillbench.results.transcript import TraceWriter
from skillbench.sandbox.base import SKILLS_DIR, WORKDIR, Sandbox, SandboxError

UNATTENDED_NOTE = (
    "You are working on your own in a sandboxed Linux machine; your workspace is /work and "
    "there is no network. No human is available: nobody can answer questions, confirm "
    "choices or review a plan. Do not ask; decide on your own judgment, finish the task "
    "completely, then stop and reply with a short summary of what you did."
)


def unattended_note(workdir: str = WORKDIR) -> str:
    """The note for a session whose workspace is `workdir`."""
    return UNATTENDED_NOTE.replace("/work", workdir, 1)


MAX_TOKENS = 8192
# How providers say a request no longer fits the model's context window.
_CONTEXT_FULL = re.compile(
    r"prompt is too long|context length|context window|maximum context|too many tokens", re.I
)


class SkillInfo(msgspec.Struct, frozen=True):
    """A staged skill as the system prompt lists it."""

    name: str
    description: str


class SessionResult(msgspec.Struct, frozen=True):
    """How a session ended. `stop_reason`: end_turn, max_turns, timeout, max_tokens,
    refusal, context_exhausted, error (infrastructure: model or sandbox), auth."""

    stop_reason: str
    turns: int
    duration_ms: int
    usage: Usage
    cost_usd: float | None
    error: str | None = None
    models: dict[str, int] = {}  # calls by the model each named (a CLI's, seen at its broker)

    @property
    def errored(self) -> bool:
        """An infrastructure failure: not the agent's fault, retried by the runner."""
        return self.stop_reason in ("error", "auth")


def system_prompt(skills: Sequence[SkillInfo], workdir: str = WORKDIR) -> str:
    """The unattended note and the catalog of staged skills (empty in the baseline)."""
    if not skills:
        catalog = "No skills are available."
    else:
        lines = "\n".join(catalog_lines(skills))
        catalog = (
            "Skills available (call the `skill` tool with a name to load one; its files are "
            f"under {SKILLS_DIR}/<name>):\n{lines}"
        )
    return f"{unattended_note(workdir)}\n\n{catalog}"


def opening(task: str, skills: Sequence[SkillInfo], workdir: str) -> tuple[str, list[Message]]:
    """The system prompt and the first message: all the first model call needs, known on the
    host before any sandbox exists (agent.py sends it while the sandbox is staged). Every
    user turn is marked for the prompt cache: the next turn repeats the conversation so far."""
    return system_prompt(skills, workdir), [Message("user", (TextBlock(task, cache=True),))]


async def ask(
    model: Model,
    system: str,
    messages: Sequence[Message],
    ledger: RunLedger | None = None,
    prices: Mapping[str, Price] | None = None,
    kind: str = "agent",
) -> Completion:
    """One model call of the loop, reserved in the run's ledger (as `kind`) before it is
    sent."""
    size = len(system) + len(msgspec.json.encode(list(messages))) + len(msgspec.json.encode(TOOLS))
    return await metered(
        ledger,
        model.ref,
        prices,
        size,
        MAX_TOKENS,
        kind,
        lambda: model.complete(
            system=system, messages=list(messages), tools=TOOLS, max_tokens=MAX_TOKENS
        ),
        has_tools=True,
    )


async def run_agent(
    model: Model,
    sandbox: Sandbox,
    *,
    task: str,
    skills: Sequence[SkillInfo],
    trace: TraceWriter,
    max_turns: int,
    timeout_s: float,
    case: str = "",
    arm: str = "",
    rep: int = 0,
    prices: Mapping[str, Price] | None = None,
    first: asyncio.Future[Completion] | None = None,
    started: float | None = None,
    ledger: RunLedger | None = None,
    kind: str = "agent",
) -> SessionResult:
    """Run one agent session to its end and write its transcript. `first`: the reply to the
    opening call, already sent at `started` (monotonic); the session's clock and its
    wall-clock cap run from then."""
    started = time.monotonic() if started is None else started
    # A stand-in for a model (the scripted driver) says so in every transcript.
    note = getattr(model, "notice", None)
    trace.event(
        "trace_start",
        case=case,
        arm=arm,
        rep=rep,
        model=model.ref,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        **({"note": note} if note else {}),
    )
    state = _State()
    stop, error = "end_turn", None
    try:
        async with asyncio.timeout(max(0.0, timeout_s - (time.monotonic() - started))):
            stop = await _turns(
                model, sandbox, task, skills, trace, max_turns, state, first, (ledger, prices, kind)
            )
    except BudgetRefused:
        stop = "budget"  # the run's ceiling is reached: the session is not run to its end
    except TimeoutError:
        stop = "timeout"
    except ModelError as exc:
        if exc.kind == "bad_request" and _CONTEXT_FULL.search(str(exc)):
            stop = "context_exhausted"  # the agent filled its context: its doing, scored
        else:
            stop, error = ("auth" if exc.kind == "auth" else "error"), str(exc)
    except SandboxError as exc:
        stop, error = "error", f"sandbox: {exc}"
    except asyncio.CancelledError:
        stop, error = "cancelled", "the run was interrupted"
        raise
    finally:
        duration_ms = int((time.monotonic() - started) * 1000)
        cost = cost_usd(model.ref, state.usage, prices)
        extra = {"error": error} if error else {}
        trace.event(
            "trace_end",
            stop_reason=stop,
            turns=state.turns,
            duration_ms=duration_ms,
            usage=state.usage,
            cost_usd=cost,
            **extra,
        )
    return SessionResult(stop, state.turns, duration_ms, state.usage, cost, error)


class _State:
    def __init__(self) -> None:
        self.turns = 0
        self.usage = Usage()


async def _turns(
    model: Model,
    sandbox: Sandbox,
    task: str,
    skills: Sequence[SkillInfo],
    trace: TraceWriter,
    max_turns: int,
    state: _State,
    first: asyncio.Future[Completion] | None,
    meter: tuple[RunLedger | None, Mapping[str, Price] | None, str],
) -> str:
    system, messages = opening(task, skills, sandbox.workdir)
    names = [s.name for s in skills]
    trace.event("message", role="user", text=task, usage=None)
    while True:
        if state.turns >= max_turns:
            return "max_turns"
        if first is not None and state.turns == 0:
            completion = await first
        else:
            completion = await ask(model, system, messages, *meter)
        state.turns += 1
        state.usage = state.usage + completion.usage
        trace.event("message", role="assistant", text=completion.text, usage=completion.usage)
        messages.append(Message("assistant", completion.content))
        calls = completion.tool_calls
        if not calls:
            return completion.stop_reason if completion.stop_reason != "tool_use" else "end_turn"
        results: list[ToolResult] = []
        for call in calls:
            trace.event("tool_call", id=call.id, name=call.name, arguments=call.arguments)
            outcome = await run_tool(sandbox, names, call.name, call.arguments)
            trace.event(
                "tool_result",
                id=call.id,
                name=call.name,
                text=outcome.text,
                is_error=outcome.is_error,
                exit_code=outcome.exit_code,
            )
            last = call is calls[-1]
            results.append(
                ToolResult(call.id, call.name, outcome.text, outcome.is_error, cache=last)
            )
        messages.append(Message("user", tuple(results)))
