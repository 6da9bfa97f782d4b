"""The eval runner: plan the rows, run every arm session in its own sandbox (asyncio, at most
`parallel` at once), score checks, send ties with a rubric to the judge, journal as it goes.

Errors retry once in a fresh sandbox; timeouts are the agent's and are not retried. Every
sandbox is removed, also on Ctrl-C; failed arms' workspaces are kept under the run folder.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import msgspec
from msgspec.structs import replace

from skillbench.agents import AgentSession, SessionRequest, make_agent
from skillbench.agents.builtin.loop import SkillInfo
from skillbench.checks import CheckResult, run_checks
from skillbench.config import sandbox_spec
from skillbench.egress import phase_proxy
from skillbench.engine.activation import NEVER_LOADED, activation_of, ambient_of, misfire
from skillbench.engine.journal import Journal, RowKey, RunBusy, read_journal
from skillbench.engine.plan import (
    SUITE,
    EvalError,
    EvalOptions,
    Prepared,
    case_home,
    case_spec,
    check_credentials,
    probe_requires,
    setup_case,
    trigger_method,
    validated,
)
from skillbench.engine.records import (
    BASELINE,
    CANDIDATE,
    INCUMBENT,
    Plan,
    RowRecord,
    SessionRecord,
    Unit,
    session_key,
)
from skillbench.engine.reuse import (
    Reused,
    SessionCache,
    arm_identity,
    cache_key,
    session_inputs,
)
from skillbench.engine.routing import RoutingError, measure
from skillbench.engine.rows import arm_result, row_by_checks
from skillbench.engine.score import summarize
from skillbench.engine.summary import Diagnostic, Skipped, Summary
from skillbench.evals.model import Case, Session, Suite
from skillbench.judge import judge
from skillbench.models import resolve_model
from skillbench.models.base import Model
from skillbench.models.pricing import cost_usd
from skillbench.receipts import Provenance, Receipt, bundle_digest, write_receipt
from skillbench.sandbox import make_provider
from skillbench.sandbox.base import (
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
    parse_size,
)
from skillbench.sandbox.stage import (
    ContaminationError,
    SetupFailed,
    check_phase,
    recheck_phase,
    stage_arm,
)
from skillbench.scrub import scrub_obj
from skillbench.signing import SigningError
from skillbench.skills import Skill, read_skill
from skillbench.transcript import TraceWriter, Transcript, read_trace
from skillbench.triggers import TriggerReport, targets_at


class Progress(Protocol):
    """What the runner tells the user while it works."""

    def planned(self, total: int, done: int) -> None: ...

    def started(self, key: str) -> None: ...

    def finished(self, record: SessionRecord, spend: float) -> None: ...


class EvalResult(msgspec.Struct):
    run_dir: str
    summary: Summary


# --- planning -------------------------------------------------------------------------------


class Placement(Protocol):
    """Where sessions run when not here: a cluster (skillbench.cluster)."""

    async def place(
        self, runner: Runner, name: str, arm: str, rep: int, attempt: int, snapshot: Path | None
    ) -> SessionRecord: ...


class Runner:
    def __init__(
        self,
        opts: EvalOptions,
        plan: Plan,
        run_dir: Path,
        skill: Skill,
        sessions: dict[str, Session],
        progress: Progress,
        placement: Placement | None = None,
    ):
        self.opts = opts
        self.placement = placement
        self.plan = plan
        self.run_dir = run_dir
        self.skill = skill
        self.skill_dir = Path(opts.skill_dir)
        self.specs = sessions
        self.progress = progress
        self.settings = opts.settings
        try:
            self.journal = Journal(run_dir / "journal.jsonl")
        except RunBusy as exc:
            raise EvalError(str(exc)) from None
        self.done, self.rows = read_journal(run_dir / "journal.jsonl")
        # On --resume, what failed for infrastructure reasons is tried again: errored
        # sessions, and rows left unscored by them or by the judge.
        self.done = {k: r for k, r in self.done.items() if r.outcome != "error"}
        self.rows = {k: r for k, r in self.rows.items() if r.scored}
        self.skipped: dict[str, str] = {
            r.session: r.error or "setup failed"
            for r in self.done.values()
            if r.outcome == "skipped"
        }
        self.skipped.update(opts.unavailable)
        self.missing: set[str] = set(opts.unavailable)  # sessions skipped for the environment
        self.spend = opts.spent_before + sum(
            r.cost_usd or 0.0 for r in self.done.values() if r.reused_from is None
        )
        self.spend += sum(r.judge_cost_usd or 0.0 for r in self.rows.values())
        self.stopped: str | None = None
        self.judge_tasks: list[asyncio.Task[None]] = []
        self.judging: set[RowKey] = set()  # rows waiting for the judge
        # judge calls are light, but a burst of them would meet the provider's rate limits
        self.judge_gate = asyncio.Semaphore(max(4, opts.settings.parallel))
        self.closing: set[asyncio.Future[None]] = set()  # sandboxes being removed
        self.sandbox_spec = sandbox_spec(self.settings, opts.image)
        self.agent = make_agent(
            plan.agent,
            max_retries=self.settings.max_retries,
            timeout=self.settings.request_timeout,
            **self.settings.agents.get(plan.agent, {}),
        )
        self.cache = SessionCache()

    # sessions ----------------------------------------------------------------------------

    def pending(self) -> list[tuple[str, str, int]]:
        todo = []
        for name in self.plan.sessions:
            for rep in range(1, self.plan.k + 1):
                for arm in self.plan.arms:
                    if session_key(name, arm, rep) not in self.done and name not in self.skipped:
                        todo.append((name, arm, rep))
        return todo

    async def session(
        self, provider: SandboxProvider, name: str, arm: str, rep: int
    ) -> SessionRecord:
        key = self.reuse_key(name, arm, rep)
        hit = self.cache.get(key) if key else None
        if hit is not None:
            again = await self.reused(provider, hit, name, arm, rep)
            if again.outcome != "error":
                return again  # (an infrastructure error there: the session runs afresh)
        # a session that may be reused keeps its workspace as the check phase got it
        snapshot = self.run_dir / "tmp" / f"{session_key(name, arm, rep)}.tar" if key else None
        record = await self.place(provider, name, arm, rep, 1, snapshot)
        if record.outcome == "error":  # infrastructure: once more in a fresh sandbox
            record = await self.place(provider, name, arm, rep, 2, snapshot)
        if key:
            transcript = self.run_dir / record.transcript if record.transcript else None
            self.cache.put(key, record, self.plan.run_id, transcript, snapshot)
        return record

    def reuse_key(self, name: str, arm: str, rep: int) -> str | None:
        """The cache key of a session that does not depend on the candidate (None for the
        candidate, and under --fresh-baseline)."""
        if arm == CANDIDATE or self.opts.fresh_baseline:
            return None
        incumbent = self.plan.incumbent.digest if self.plan.incumbent else None
        library = self.plan.library.digest if self.plan.library else None
        return cache_key(
            session_inputs(
                self.specs[name],
                self.skill_dir,
                arm=arm_identity(arm, incumbent, library),
                agent=self.plan.agent,
                agent_options=self.settings.agents.get(self.plan.agent, {}),
                sandbox=self.spec_for(name),
                agent_version=self.plan.agent_version,
                model=self.plan.model,
                endpoint=self.plan.endpoints["agent"].url,
                rep=rep,
            )
        )

    async def reused(
        self, provider: SandboxProvider, hit: Reused, name: str, arm: str, rep: int
    ) -> SessionRecord:
        """A cached session as this run's: its transcript copied into the run folder, its
        checks run again on its workspace against the current check files (a session is
        reused, never a score)."""
        key = session_key(name, arm, rep)
        transcript = None
        if hit.transcript is not None:
            dest = self.run_dir / "transcripts" / f"{key}.jsonl"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(hit.transcript, dest)
            transcript = str(dest.relative_to(self.run_dir))
        record = replace(
            hit.record,
            key=key,
            session=name,
            arm=arm,
            rep=rep,
            transcript=transcript,
            reused_from=hit.run_id,
            checks={},
            notes=[],
        )
        text = read_trace(self.run_dir / transcript) if transcript else Transcript([])
        log = self.run_dir / "network" / f"{key}.jsonl"
        hosts = self.specs[name].network.verifier
        async with phase_proxy(self.spec_for(name), hosts, log, "verifier") as check_box:
            try:
                staged = await recheck_phase(
                    provider,
                    check_box,
                    hit.workspace,
                    self.skill_dir,
                    self.run_dir / "tmp",
                    self.specs[name].harbor,
                )
            except (SandboxError, ConnectionError, OSError) as exc:
                return replace(record, outcome="error", error=f"sandbox: {exc}")
            try:
                assert staged.checker is not None
                record = replace(record, notes=handover_notes(staged.handover))
                return await self.score(staged.checker, record, text, hit.record.checks)
            except (SandboxError, ConnectionError) as exc:
                return replace(record, outcome="error", error=f"sandbox: {exc}")
            finally:
                self.closing.add(asyncio.ensure_future(staged.close()))

    def request(self, name: str, arm: str, rep: int) -> SessionRequest:
        """What the agent is asked to do in one arm session."""
        spec, key = self.specs[name], session_key(name, arm, rep)
        budget = None if self.opts.max_cost is None else max(0.0, self.opts.max_cost - self.spend)
        return SessionRequest(
            key=key,
            case=name,
            arm=arm,
            rep=rep,
            model=self.plan.model,
            task=spec.task,
            skills=self.skill_infos(arm),
            max_turns=spec.max_turns,
            timeout_s=spec.timeout_minutes * 60,
            prices=self.settings.prices,
            budget=budget,
            exchanges=self.run_dir / "exchanges" / f"{key}.jsonl",
        )

    async def place(
        self,
        provider: SandboxProvider,
        name: str,
        arm: str,
        rep: int,
        attempt: int,
        snapshot: Path | None,
    ) -> SessionRecord:
        """One attempt of a session, here or on the cluster; an earlier attempt's transcript
        is kept beside it. `snapshot`: where a reusable session's workspace archive goes."""
        key = session_key(name, arm, rep)
        transcript = self.run_dir / "transcripts" / f"{key}.jsonl"
        if attempt > 1 and transcript.exists():
            transcript.rename(transcript.with_name(f"{key}.attempt{attempt - 1}.jsonl"))
        if self.placement is not None:
            return await self.placement.place(self, name, arm, rep, attempt, snapshot)
        return await self.attempt(provider, name, arm, rep, attempt, snapshot)

    async def attempt(
        self,
        provider: SandboxProvider,
        name: str,
        arm: str,
        rep: int,
        attempt: int,
        snapshot: Path | None = None,
    ) -> SessionRecord:
        key = session_key(name, arm, rep)
        transcript = self.run_dir / "transcripts" / f"{key}.jsonl"
        record = SessionRecord(
            key=key, session=name, arm=arm, rep=rep, outcome="error", attempts=attempt
        )
        skills = self.arm_skills(arm)
        started = time.monotonic()
        session = await self.agent.session(self.request(name, arm, rep))
        try:
            return await self.attempt_in(
                provider, session, record, skills, transcript, started, snapshot
            )
        finally:
            await session.close()

    async def attempt_in(
        self,
        provider: SandboxProvider,
        session: AgentSession,
        record: SessionRecord,
        skills: dict[str, Path],
        transcript: Path,
        started: float,
        snapshot: Path | None,
    ) -> SessionRecord:
        name = record.session
        spec = self.specs[name]
        log = self.run_dir / "network" / f"{record.key}.jsonl"
        agent_box = replace(self.spec_for(name), relay=session.relay)
        async with (
            phase_proxy(agent_box, spec.network.agent, log, "agent") as box,
            phase_proxy(self.spec_for(name), spec.network.verifier, log, "verifier") as check_box,
        ):
            try:
                staged = await stage_arm(
                    provider,
                    box,
                    spec,
                    skills,
                    scratch=self.run_dir / "tmp",
                    case=setup_case(spec, self.skill_dir),
                )
            except SetupFailed as exc:
                return replace(record, outcome="skipped", error=str(exc))
            except ContaminationError as exc:
                raise EvalError(f"run refused, arm {record.arm} of {name}: {exc}") from None
            except (SandboxError, ConnectionError) as exc:  # (a container killed mid-reply resets
                # its channel: never a run-folder write, which fails with ENOSPC and the like)
                return replace(record, error=f"sandbox: {exc}", seconds=time.monotonic() - started)
            try:
                trace = TraceWriter(transcript)
                try:
                    result = await session.run(staged.sandbox, trace)
                except ContaminationError as exc:
                    raise EvalError(f"run refused, arm {record.arm} of {name}: {exc}") from None
                finally:
                    trace.close()
                record = replace(
                    record,
                    loaded=sorted(self.agent.invoked(trace.events)),
                    ambient=list(session.ambient),
                    stop_reason=result.stop_reason,
                    turns=result.turns,
                    seconds=result.duration_ms / 1000,
                    usage=result.usage,
                    cost_usd=result.cost_usd,
                    transcript=str(transcript.relative_to(self.run_dir)),
                )
                if result.errored:
                    return replace(record, error=result.error)
                checker = await check_phase(
                    provider, check_box, staged, self.skill_dir, spec.harbor
                )
                record = replace(record, notes=handover_notes(staged.handover))
                if snapshot is not None:  # before any check changes it
                    cap = parse_size(self.settings.sandbox.keep_workspace)
                    snapshot.parent.mkdir(parents=True, exist_ok=True)
                    snapshot.unlink(missing_ok=True)  # (an earlier attempt's)
                    await checker.save_archive(checker.workdir, snapshot, cap=cap)
                # what happened, not the scrubbed copy on disk
                return await self.score(checker, record, trace.transcript())
            except (SandboxError, ConnectionError) as exc:  # (a container killed mid-reply resets
                # its channel: never a run-folder write, which fails with ENOSPC and the like)
                return replace(record, error=f"sandbox: {exc}", seconds=time.monotonic() - started)
            finally:
                # Removing the containers (~0.1 s each) need not hold the session's slot.
                self.closing.add(asyncio.ensure_future(staged.close()))

    async def score(
        self,
        checker: Sandbox,
        record: SessionRecord,
        text: Transcript,
        earlier: dict[str, list[CheckResult]] | None = None,
    ) -> SessionRecord:
        """Run the session's checks in its checker; the record with its outcome. `earlier`:
        the results of a reused session, whose transcript checks stand (the transcript on
        disk is scrubbed; the check ran on the real one, and both it and the check are in the
        reuse key)."""
        spec = self.specs[record.session]
        home = case_home(spec, self.skill_dir)
        units = (
            {f"{SUITE}/{sub.name}": (*spec.checks, *sub.checks) for sub in spec.cases}
            if isinstance(spec, Suite)
            else {record.session: spec.checks}
        )
        checks = {
            unit: await run_checks(listed, text, checker, home, (earlier or {}).get(unit))
            for unit, listed in units.items()
        }
        unjudged = [c for results in checks.values() for c in results if c.infrastructure]
        if unjudged:  # a verifier that could not judge: the arm's rows go unscored
            return replace(
                record,
                checks=checks,
                error=f"{unjudged[0].name} gave no verdict: {unjudged[0].detail}",
            )
        passed = all(c.passed for results in checks.values() for c in results)
        notes = [*record.notes, *([] if passed else await self.keep_workspace(checker, record.key))]
        if record.reused_from is not None:
            notes.insert(0, f"reused from run {record.reused_from}; its checks ran again here")
        return replace(record, outcome="pass" if passed else "fail", checks=checks, notes=notes)

    def arm_skills(self, arm: str) -> dict[str, Path]:
        """What an arm stages: nothing (baseline), the skill on disk, or the incumbent; with
        --with-library, the library's other skills beside it in every arm."""
        library = self.plan.library
        staged = {s.name: Path(s.path) for s in library.skills} if library else {}
        if arm == CANDIDATE:
            staged[self.skill.name] = self.skill_dir
        elif arm == INCUMBENT and self.plan.incumbent is not None:
            staged[self.skill.name] = Path(self.plan.incumbent.path)
        return staged

    def skill_infos(self, arm: str) -> tuple[SkillInfo, ...]:
        """The staged skills as the agent is told of them, sorted by name."""
        infos = []
        for name, folder in sorted(self.arm_skills(arm).items()):
            if arm == CANDIDATE and name == self.skill.name:
                found = self.skill
            else:  # (the incumbent's folder is named by its digest)
                found = read_skill(folder, folder_name=name)
            infos.append(SkillInfo(found.name, found.description))
        return tuple(infos)

    async def keep_workspace(self, checker: Sandbox, key: str) -> list[str]:
        """Copy a failed arm's /work into the run folder (capped, streamed); never fails the
        session: what could not be kept becomes a note."""
        cap = parse_size(self.settings.sandbox.keep_workspace)
        try:
            return await checker.get_tree(
                checker.workdir, self.run_dir / "workspaces" / key, cap=cap
            )
        except Exception as exc:  # a debugging aid: whatever goes wrong, the run goes on
            return [f"workspace not kept: {exc}"]

    # rows --------------------------------------------------------------------------------

    def rows_ready(self, judge_model: Model, name: str, rep: int) -> None:
        for unit in (u for u in self.plan.units if u.session == name):
            for opponent in self.plan.opponents:
                row_key: RowKey = (unit.name, rep, opponent)
                if row_key in self.rows or row_key in self.judging or name in self.skipped:
                    continue
                cand = self.done.get(session_key(name, CANDIDATE, rep))
                opp = self.done.get(session_key(name, opponent, rep))
                if cand is None or opp is None:
                    continue
                row = self.misfired_row(unit, rep, opponent, cand, opp) or row_by_checks(
                    unit, rep, opponent, cand, opp
                )
                if row is not None:
                    self.add_row(row)
                else:
                    self.judging.add(row_key)
                    self.judge_tasks.append(
                        asyncio.create_task(
                            self.judged_row(judge_model, unit, rep, opponent, cand, opp)
                        )
                    )

    def misfired_row(
        self, unit: Unit, rep: int, opponent: str, cand: SessionRecord, opp: SessionRecord
    ) -> RowRecord | None:
        """On a case that says `expect_activation: false`, loading the skill loses the row
        ("fired where it should not"), whatever the checks say."""
        outcome = misfire(self.skill.name, self.expects(unit.session), cand, opp)
        if outcome is None:
            return None
        arms = {CANDIDATE: arm_result(unit, cand), opponent: arm_result(unit, opp)}
        return RowRecord(
            case=unit.name,
            rep=rep,
            opponent=opponent,
            outcome=outcome,
            decided_by="activation",
            arms=arms,
        )

    def expects(self, name: str) -> bool:
        """Whether the session's case expects the skill to load (a suite always does)."""
        spec = self.specs[name]
        return spec.expect_activation if isinstance(spec, Case) else True

    async def judged_row(
        self,
        model: Model,
        unit: Unit,
        rep: int,
        opponent: str,
        cand: SessionRecord,
        opp: SessionRecord,
    ) -> None:
        spec = self.specs[unit.session]
        rng = random.Random(f"{self.plan.seed}:{unit.name}:{rep}:{opponent}")
        texts = [
            read_trace(self.run_dir / r.transcript).all_text if r.transcript else ""
            for r in (cand, opp)
        ]
        async with self.judge_gate:
            verdict = await judge(
                model,
                task=spec.task,
                rubric=spec.judge or "",
                candidate=texts[0],
                opponent=texts[1],
                rng=rng,
            )
        cost = cost_usd(self.plan.judge_model, verdict.usage, self.settings.prices)
        self.spend += cost or 0.0
        arms = {CANDIDATE: arm_result(unit, cand), opponent: arm_result(unit, opp)}
        self.add_row(
            RowRecord(
                case=unit.name,
                rep=rep,
                opponent=opponent,
                outcome=verdict.outcome,
                decided_by=verdict.decided_by,
                arms=arms,
                judge_reasons=list(verdict.reasons),
                judge_candidate_first=verdict.candidate_first,
                judge_cost_usd=cost,
                judge_winners=list(verdict.winners),
            )
        )

    def add_row(self, row: RowRecord) -> None:
        self.rows[(row.case, row.rep, row.opponent)] = row
        self.journal.append(row)

    # the whole run -----------------------------------------------------------------------

    async def run(self) -> Summary:
        provider = make_provider()
        judge_model = resolve_model(
            self.plan.judge_model,
            max_retries=self.settings.max_retries,
            timeout=self.settings.request_timeout,
        )
        try:
            await self.probe_requires(provider)
            todo = self.pending()
            self.progress.planned(len(todo) + len(self.done), len(self.done))
            for name in self.plan.sessions:  # rows whose sessions finished before a resume
                for rep in range(1, self.plan.k + 1):
                    self.rows_ready(judge_model, name, rep)
            gate = asyncio.Semaphore(self.settings.parallel)

            async def one(name: str, arm: str, rep: int) -> None:
                async with gate:
                    if name in self.skipped:
                        return
                    if self.opts.max_cost is not None and (
                        self.spend >= self.opts.max_cost or self.stopped
                    ):
                        self.stopped = f"spend reached the --max-cost cap ${self.opts.max_cost:.2f}"
                        return
                    self.progress.started(session_key(name, arm, rep))
                    record = await self.session(provider, name, arm, rep)
                self.done[record.key] = record
                self.journal.append(record)
                if record.reused_from is None:  # a reused session cost this run nothing
                    self.spend += record.cost_usd or 0.0
                if record.stop_reason == "budget":  # its broker could not cover another call
                    self.stopped = f"spend reached the --max-cost cap ${self.opts.max_cost:.2f}"
                if record.outcome == "skipped":
                    self.skipped[name] = record.error or "setup failed"
                self.progress.finished(record, self.spend)
                self.rows_ready(judge_model, name, rep)

            tasks = [asyncio.create_task(one(*item)) for item in todo]
            try:
                await asyncio.gather(*tasks)
                await asyncio.gather(*self.judge_tasks)
            except BaseException:
                for task in tasks:  # one failure (a refused run, Ctrl-C) stops them all
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        finally:
            for task in self.judge_tasks:
                task.cancel()
            await self.close(provider)
            await judge_model.aclose()
            self.journal.close()
            shutil.rmtree(self.run_dir / "tmp", ignore_errors=True)
        skipped = [
            Skipped(n, r, n in self.missing, [u.name for u in self.plan.units if u.session == n])
            for n, r in self.skipped.items()
        ]
        rows = list(self.rows.values())
        summary = summarize(self.plan, self.done, rows, skipped, stopped=self.stopped)
        return self.evidence(summary, rows)

    def evidence(self, summary: Summary, rows: list[RowRecord]) -> Summary:
        """The summary with activation, ambient skills and the library arm (design §16)."""
        expected = {name: self.expects(name) for name in self.plan.sessions}
        summary.activation = activation_of(self.plan, self.done, rows, expected)
        summary.ambient = ambient_of(self.plan, self.done, self.agent.ambient_policy())
        summary.library = self.plan.library
        if summary.activation is not None and summary.activation.never:
            summary.diagnostics.append(Diagnostic("never-fired", "", NEVER_LOADED))
        return summary

    async def close(self, provider: SandboxProvider) -> None:
        """Remove the sandboxes still being removed; close the provider and the agent."""
        await asyncio.gather(*self.closing, return_exceptions=True)
        await provider.aclose()
        await self.agent.aclose()

    def spec_for(self, name: str) -> SandboxSpec:
        """The sandbox a session's arms and checker run in: its own image and workdir, if it
        has them."""
        return case_spec(self.sandbox_spec, self.specs[name], self.opts.case_images.get(name))

    async def probe_requires(self, provider: SandboxProvider) -> None:
        wanted = {
            n: (self.spec_for(n).image, s.requires)
            for n, s in self.specs.items()
            if n not in self.skipped
        }
        for name, missing in (await probe_requires(provider, self.sandbox_spec, wanted)).items():
            self.skipped[name] = f"missing {', '.join(missing)}"
            self.missing.add(name)


def handover_notes(notes: list[str], most: int = 10) -> list[str]:
    """What the handover to the checker cut or changed (a link the agent aimed at the answer
    key shows here), at most `most` lines."""
    more = [f"handover: ... and {len(notes) - most} more"] if len(notes) > most else []
    return [f"handover: {n}" for n in notes[:most]] + more


async def triggers_of(opts: EvalOptions, folder: Path | None = None) -> TriggerReport | None:
    """The skill's trigger report, or None when it has no triggers file. The agent method
    keeps its sessions under `folder`."""
    targets = targets_at(Path(opts.skill_dir))
    if not targets:
        return None
    try:
        (report,) = await measure(
            opts.settings,
            targets,
            method=trigger_method(opts),
            agent=opts.settings.agent,
            runs=opts.runs,
            threshold=opts.threshold,
            folder=folder,
        )
    except RoutingError as exc:
        raise EvalError(str(exc)) from None
    return report


async def triggers_only(opts: EvalOptions) -> TriggerReport:
    """`eval --triggers-only`: validate, then measure the skill's triggers (no sandboxes)."""
    validated(Path(opts.skill_dir))
    check_credentials(opts.settings.model)
    report = await triggers_of(opts)
    if report is None:
        raise EvalError(f"{opts.skill_dir}: --triggers-only needs evals/triggers.yaml")
    return report


async def execute(
    prepared: Prepared,
    opts: EvalOptions,
    progress: Progress,
    placement: Placement | None = None,
) -> EvalResult:
    """Run the prepared eval (its sessions here, or where `placement` puts them); write
    summary.json; return the run folder and the summary."""
    plan, run_dir, skill, sessions = prepared
    runner = Runner(opts, plan, run_dir, skill, sessions, progress, placement)
    summary = await runner.run()
    if opts.triggers:
        if opts.max_cost is not None and runner.spend >= opts.max_cost:
            summary.triggers_note = "not measured: the --max-cost cap was reached"
        else:
            report = await triggers_of(opts, run_dir / "triggers")
            if report is None:
                summary.triggers_note = "not measured: the skill has no evals/triggers.yaml"
            else:
                summary.triggers = report.summary()
                runner.spend += (
                    cost_usd(opts.settings.model, report.usage, opts.settings.prices) or 0.0
                )
    summary.spend_usd = round(runner.spend, 6)
    # checks saw the raw transcript; their details are printed and written, so scrub them
    summary = msgspec.convert(scrub_obj(msgspec.to_builtins(summary)), Summary)
    (run_dir / "summary.json").write_bytes(msgspec.json.format(msgspec.json.encode(summary)))
    key = opts.settings.sign.key
    try:
        write_receipt(
            receipt_of(plan, summary, bundle_digest(run_dir)),
            run_dir,
            sign_key=Path(key) if key else None,
        )
    except SigningError as exc:
        raise EvalError(f"[sign] key: {exc}") from None
    return EvalResult(str(run_dir), summary)


def receipt_of(plan: Plan, summary: Summary, bundle: str) -> Receipt:
    """The receipt of a finished run: the summary's results plus where they came from, and
    the digest of the run folder's evidence."""
    siblings = [f"{s.name}@{s.digest}" for s in plan.library.skills] if plan.library else []
    arms: dict[str, list[str]] = {
        BASELINE: siblings,
        CANDIDATE: sorted([*siblings, f"{plan.skill}@{plan.version}"]),
    }
    if plan.incumbent is not None:
        own = f"{plan.skill}@{plan.incumbent.digest} ({plan.incumbent.version})"
        arms[INCUMBENT] = sorted([*siblings, own])
    return Receipt(
        skill=plan.skill,
        digest=plan.version,
        run_id=plan.run_id,
        verdict=summary.verdict,
        why=summary.why,
        expected_rows=summary.expected_rows,
        scored_rows=summary.scored_rows,
        complete=summary.complete,
        stopped=summary.stopped,
        agent=summary.agent,
        agent_version=summary.agent_version,
        models=summary.models,
        driver=summary.driver,
        comparisons=msgspec.to_builtins(summary.comparisons),
        stats=msgspec.to_builtins(summary.stats),
        rows=msgspec.to_builtins(summary.rows),
        triggers=summary.triggers,
        efficiency=msgspec.to_builtins(summary.efficiency),
        spend_usd=summary.spend_usd,
        reused=msgspec.to_builtins(summary.reused),
        noise_floor=msgspec.to_builtins(summary.noise_floor),
        activation=msgspec.to_builtins(summary.activation),
        ambient=msgspec.to_builtins(summary.ambient),
        library=msgspec.to_builtins(summary.library),
        provenance=Provenance(
            engine_version=plan.engine_version,
            models={"agent": plan.model, "judge": plan.judge_model},
            k=plan.k,
            seed=plan.seed,
            arms=arms,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            opponents=plan.opponents,
            units=plan.units,
            endpoints=plan.endpoints,
            min_net_lift=plan.min_net_lift,
        ),
        bundle=bundle,
    )
