"""Trigger measurement, by either method (docs/formats.md, issue 14): the catalog call, or the real
agent's own routing.

The agent method runs the agent CLI once per (prompt, run) in a fresh sandbox with every skill
of the library staged as a real skill in a clean config dir, only its way of loading a skill
useful (Claude Code gets only its `Skill` tool) and a small turn cap. The skills it loaded, at
any turn, are the ones it selected. Sessions are cached, so a library's targets, which share
one library, share the sessions.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from msgspec.structs import replace

from skillbench.agents import Agent, AgentError, SessionRequest, make_agent
from skillbench.agents.builtin.loop import SkillInfo
from skillbench.config import Settings, sandbox_spec
from skillbench.engine.triggers import (
    CAPPED,
    Call,
    Router,
    Spend,
    TriggerCaller,
    TriggerReport,
    TriggerTarget,
    evaluate_all,
)
from skillbench.errors import SkillbenchError
from skillbench.evals.model import Session
from skillbench.evals.skills import Skill
from skillbench.models import resolve_model
from skillbench.models.ledger import RunLedger
from skillbench.results.transcript import TraceWriter, expand_loaded
from skillbench.sandbox import images_of, make_provider
from skillbench.sandbox.base import ImageBuildError, SandboxError, SandboxProvider, SandboxSpec
from skillbench.sandbox.stage import ContaminationError, stage_arm

ROUTING_TURNS = 3  # room to load a skill (and say so) before the session is cut
ROUTING_TIMEOUT = 300.0


class RoutingError(SkillbenchError):
    """The agent method cannot run here (no image, an agent that cannot use the model)."""


class AgentRouter:
    """The agent method: one sandboxed agent session per (library, prompt, run)."""

    canary = True

    def __init__(
        self,
        agent: Agent,
        provider: SandboxProvider,
        spec: SandboxSpec,
        *,
        model: str,
        settings: Settings,
        folder: Path,
        spend: Spend | None = None,
    ):
        self.agent, self.provider, self.spec = agent, provider, spec
        self.model, self.settings, self.folder = model, settings, folder
        self.spend = spend
        self.method = f"agent {agent.name}"
        self.gate = asyncio.Semaphore(settings.parallel)
        self.cache: dict[tuple[tuple[str, ...], str, int], asyncio.Task[Call]] = {}
        self.sessions = 0

    def call(self, library: Sequence[Skill], prompt: str, run: int) -> asyncio.Task[Call]:
        key = (tuple(s.path for s in library), prompt, run)
        if key not in self.cache:
            self.cache[key] = asyncio.ensure_future(self._route(library, prompt, run))
        return self.cache[key]

    async def _route(self, library: Sequence[Skill], prompt: str, run: int) -> Call:
        async with self.gate:
            if self.spend is not None and not self.spend.allows():
                return Call(None, CAPPED)
            self.sessions += 1
            key = f"route-{self.sessions:04d}"
            request = SessionRequest(
                key=key,
                case="triggers",
                arm="router",
                rep=run,
                model=self.model,
                task=prompt,
                skills=tuple(SkillInfo(s.name, s.description) for s in library),
                max_turns=ROUTING_TURNS,
                timeout_s=ROUTING_TIMEOUT,
                prices=self.settings.prices,
                ledger=None if self.spend is None else self.spend.ledger,
                routing=True,
                exchanges=self.folder / "exchanges" / f"{key}.jsonl",
            )
            session = await self.agent.session(request)
            trace = TraceWriter(self.folder / "transcripts" / f"{key}.jsonl")
            try:
                staged = await stage_arm(
                    self.provider,
                    replace(self.spec, relay=session.relay),
                    Session(name="triggers", path="", task=prompt),
                    {s.name: Path(s.path) for s in library},
                    scratch=self.folder / "tmp",
                )
                try:
                    result = await session.run(staged.sandbox, trace)
                finally:
                    await staged.close()
            except (SandboxError, ContaminationError) as exc:
                return Call(None, f"sandbox: {exc}")
            finally:
                trace.close()
                await session.close()
            # its calls settled in the run's ledger as they were made (the broker's, or the
            # builtin loop's); a refused one ends it as "budget": recorded as not run
            if self.spend is not None and result.stop_reason == "budget":
                self.spend.stopped = True
                return Call(None, CAPPED, result.usage)
        found = self.agent.invoked(trace.events)
        loaded = tuple(sorted(expand_loaded(found, (s.name for s in library))))
        if result.errored and not loaded:  # a skill loaded before a failure still fired
            return Call(None, result.error, result.usage)
        return Call(loaded, None, result.usage)


async def measure(
    settings: Settings,
    targets: Sequence[TriggerTarget],
    *,
    method: str,
    agent: str,
    runs: int,
    threshold: float,
    folder: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
    ledger: RunLedger | None = None,
) -> list[TriggerReport]:
    """Every target's trigger report by `method` ("catalog" or "agent"). The agent method
    keeps its sessions' transcripts and exchanges under `folder` (a temporary folder when
    None). With the run's `ledger`, every call reserves and settles in it (--max-cost)."""
    spend = None if ledger is None else Spend(ledger, settings.prices)
    async with open_router(
        settings, method=method, agent=agent, folder=folder, spend=spend, log=log
    ) as r:
        return await evaluate_all(r, targets, runs=runs, threshold=threshold)


@asynccontextmanager
async def open_router(
    settings: Settings,
    *,
    method: str,
    agent: str,
    model: str | None = None,
    folder: Path | None = None,
    spend: Spend | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> AsyncIterator[Router]:
    """The router of `method` ("catalog" or "agent") on `model` (default the settings'),
    open for as many evaluations as the caller makes (identical calls are made once), every
    call charged to `spend`. Raises RoutingError when the agent method cannot run here."""
    model = model or settings.model
    if method == "catalog":
        caller = resolve_model(
            model, max_retries=settings.max_retries, timeout=settings.request_timeout
        )
        try:
            yield TriggerCaller(caller, settings.parallel, spend)
        finally:
            await caller.aclose()
        return
    try:
        runner = make_agent(
            agent,
            max_retries=settings.max_retries,
            timeout=settings.request_timeout,
            **settings.agents.get(agent, {}),
        )
        runner.check_model(model)
        store = images_of(settings.sandbox.provider)
        try:
            store.ensure(store.sandbox_image, log)
        except ImageBuildError as exc:
            raise RoutingError(str(exc)) from None
        image = await asyncio.to_thread(runner.image, store.sandbox_image, log)
    except AgentError as exc:
        raise RoutingError(f"--agent {agent}: {exc}") from None
    scratch = None
    if folder is None:
        folder = scratch = Path(tempfile.mkdtemp(prefix="skillbench-routing-"))
    provider = make_provider(settings.sandbox.provider)
    try:
        yield AgentRouter(
            runner,
            provider,
            sandbox_spec(settings, image),
            model=model,
            settings=settings,
            folder=folder,
            spend=spend,
        )
    finally:
        await runner.aclose()
        await provider.aclose()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
