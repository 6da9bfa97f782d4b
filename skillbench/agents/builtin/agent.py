"""`builtin`: skillbench's own agent loop (loop.py beside this file). The model is called from
the host, so the sandbox needs no relay; the image is the plain sandbox image."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from skillbench.agents.base import SessionRequest
from skillbench.agents.builtin.loop import SessionResult, ask, opening, run_agent
from skillbench.models import resolve_model
from skillbench.models.base import Completion, Model, Usage
from skillbench.models.pricing import cost_usd
from skillbench.results.transcript import TraceWriter, loaded_skills
from skillbench.sandbox.base import Relay, Sandbox


class BuiltinAgent:
    name = "builtin"

    def __init__(self, *, max_retries: int = 4, timeout: float = 600.0, **_: object):
        self._retries, self._timeout = max_retries, timeout
        self._models: dict[str, Model] = {}  # one client per model for the whole run

    def version(self) -> str:
        from skillbench.version import __version__

        return __version__

    def check_model(self, model: str) -> None:
        pass  # any provider: anthropic, openai(-compatible) or scripted

    def image_name(self, base: str) -> str:
        return base

    def image(self, base: str, log: Callable[[str], None]) -> str:
        return base

    def model(self, ref: str) -> Model:
        if ref not in self._models:
            self._models[ref] = resolve_model(ref, max_retries=self._retries, timeout=self._timeout)
        return self._models[ref]

    async def session(self, request: SessionRequest) -> _Session:
        return _Session(self.model(request.model), request)

    def invoked(self, events: list[dict[str, Any]]) -> set[str]:
        """The skills the loop's `skill` tool loaded."""

        def named(e: dict[str, Any]) -> list[str]:
            if e.get("name") != "skill" or not isinstance(e.get("arguments"), dict):
                return []
            return [str(e["arguments"].get("name", ""))]

        return loaded_skills(events, named)

    def ambient_policy(self) -> str:
        return "the builtin loop lists only the staged skills"

    async def aclose(self) -> None:
        for model in self._models.values():
            await model.aclose()


class _Session:
    relay: Relay | None = None
    ambient: tuple[str, ...] = ()
    skill_home: str | None = None  # its `skill` tool reads /skills

    def __init__(self, model: Model, request: SessionRequest):
        self.model, self.request = model, request
        self._first: asyncio.Task[Completion] | None = None
        self._sent = 0.0

    def prestart(self, workdir: str) -> None:
        """Send the opening model call now: it needs only the task, the system prompt and the
        skill catalog, so it flies while the sandbox is created and staged."""
        if self._first is None and self.request.max_turns > 0:
            system, messages = opening(self.request.task, self.request.skills, workdir)
            self._first = asyncio.create_task(
                ask(
                    self.model,
                    system,
                    messages,
                    self.request.ledger,
                    self.request.prices,
                    self.request.kind,
                )
            )
            self._sent = time.monotonic()

    async def abandon(self) -> tuple[Usage, float | None]:
        """The sandbox never came: wait for the opening call (the provider bills it whether or
        not it is read) and give what it cost, for the record and the run's --max-cost."""
        if self._first is None:
            return Usage(), None
        try:  # (left set: close() collects it if this wait is cancelled)
            usage = (await self._first).usage
        except Exception:  # a failed call: what it billed is unknown, no reply came
            return Usage(), None
        return usage, cost_usd(self.model.ref, usage, self.request.prices)

    async def run(self, sandbox: Sandbox, trace: TraceWriter) -> SessionResult:
        r, first = self.request, self._first
        return await run_agent(
            self.model,
            sandbox,
            task=r.task,
            skills=list(r.skills),
            trace=trace,
            max_turns=r.max_turns,
            timeout_s=r.timeout_s,
            case=r.case,
            arm=r.arm,
            rep=r.rep,
            prices=r.prices,
            first=first,
            started=self._sent if first is not None else None,
            ledger=r.ledger,
            kind=r.kind,
        )

    async def close(self) -> None:
        # an opening call nobody read (the session was cancelled): stopped, never left running;
        # gather collects its outcome, so no task or exception is left unretrieved
        first, self._first = self._first, None
        if first is not None:
            first.cancel()
            await asyncio.gather(first, return_exceptions=True)
