"""One arm session (docs/statistics.md): the agent's attempt in a fresh sandbox, the handover to the
checker and the checks that give the session its outcome. The Runner (engine/run.py) builds on
these with the reuse path (engine/recheck.py) and the rows (engine/judging.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from msgspec.structs import replace

from skillbench.agents import AgentSession, SessionRequest, make_agent
from skillbench.agents.base import EarlyStart
from skillbench.agents.builtin.loop import SkillInfo
from skillbench.checks.run import run_checks
from skillbench.config import sandbox_spec
from skillbench.engine.plan import SUITE, EvalError, EvalOptions, case_home, case_spec, setup_case
from skillbench.engine.reuse import SessionCache
from skillbench.evals.model import Check, Session, Suite
from skillbench.evals.netreport import phase_hosts
from skillbench.evals.skills import Skill, read_skill
from skillbench.grading.expect import grade, workspace_files
from skillbench.models import resolve_model
from skillbench.models.base import Usage
from skillbench.models.ledger import MeteredModel, RunLedger
from skillbench.models.pricing import cost_usd
from skillbench.results.checks import CheckResult, no_verdict
from skillbench.results.journal import Journal, RowKey, RunBusy, read_journal
from skillbench.results.records import CANDIDATE, INCUMBENT, Plan, SessionRecord, session_key
from skillbench.results.transcript import TraceWriter, Transcript, declared_skills, expand_loaded
from skillbench.sandbox.base import (
    SKILLS_DIR,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
    WorkspaceRefused,
    parse_size,
)
from skillbench.sandbox.egress import phase_proxy
from skillbench.sandbox.stage import (
    ContaminationError,
    SetupFailed,
    check_phase,
    stage_arm,
    start_checker,
)
from skillbench.util.aio import to_the_end

if TYPE_CHECKING:
    from skillbench.engine.pool import Pool


class Progress(Protocol):
    """What the runner tells the user while it works."""

    def planned(self, total: int, done: int) -> None: ...

    def started(self, key: str) -> None: ...

    def finished(self, record: SessionRecord, spend: float) -> None: ...


class Placement(Protocol):
    """Where sessions run when not here: a cluster (skillbench.cluster)."""

    async def place(
        self, runner: Sessions, name: str, arm: str, rep: int, attempt: int, snapshot: Path | None
    ) -> SessionRecord: ...


class Sessions:
    """The Runner's state and its one-session path: attempt, check, score."""

    def __init__(
        self,
        opts: EvalOptions,
        plan: Plan,
        run_dir: Path,
        skill: Skill,
        sessions: dict[str, Session],
        progress: Progress,
        placement: Placement | None = None,
        pool: Pool | None = None,
    ):
        self.opts = opts
        self.placement = placement
        self.pool = pool
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
        # one ledger for the run: a resumed run continues from what its journal says was spent
        if pool is None:
            self.ledger = RunLedger(
                opts.max_cost,
                spent=self.spend,
                by_kind={
                    "generation": opts.spent_before,
                    "earlier": self.spend - opts.spent_before,
                },
            )
        else:  # a cell of a set run: the set's one ledger, its earlier spend in
            self.ledger = pool.ledger
            self.ledger.charge(opts.spent_before, "generation")
            self.ledger.charge(self.spend - opts.spent_before, "earlier")
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

    async def close(self, provider: SandboxProvider) -> None:
        """Remove the sandboxes still being removed; close the provider and the agent; to
        its end even when cancelled meanwhile (a Ctrl-C as the run ends)."""
        await to_the_end(self._close(provider))

    async def _close(self, provider: SandboxProvider) -> None:
        await asyncio.gather(*self.closing, return_exceptions=True)
        await provider.aclose()
        await self.agent.aclose()

    def request(self, name: str, arm: str, rep: int) -> SessionRequest:
        """What the agent is asked to do in one arm session."""
        spec, key = self.specs[name], session_key(name, arm, rep)
        budget = None if self.opts.max_cost is None else max(0.0, self.opts.max_cost - self.spend)
        if self.pool is not None and budget is not None:  # what the whole set has left
            budget = self.ledger.left()
        return SessionRequest(
            key=key,
            case=name,
            arm=arm,
            rep=rep,
            model=self.plan.model,
            task=spec.task,
            skills=self.skill_infos(arm),
            max_turns=spec.max_turns,
            timeout_s=min(spec.timeout_minutes, self.settings.max_timeout) * 60,
            prices=self.settings.prices,
            budget=budget,
            ledger=self.ledger,
            exchanges=self.run_dir / "exchanges" / f"{key}.jsonl",
            mcp_servers=spec.mcp_servers,
        )

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
        mode = self.settings.network
        async with (
            phase_proxy(agent_box, phase_hosts(spec.network.agent, mode), log, "agent") as box,
            phase_proxy(
                self.spec_for(name), phase_hosts(spec.network.verifier, mode), log, "verifier"
            ) as check_box,
        ):
            # The opening model call flies while the sandbox is made and staged, except for a
            # case with `setup`: setup may fail and skip the case, and a call sent for it
            # would be spent for nothing.
            early = session if isinstance(session, EarlyStart) and not spec.setup else None
            if early is not None:
                early.prestart(box.workdir)
            try:
                staged = await stage_arm(
                    provider,
                    box,
                    spec,
                    skills,
                    scratch=self.run_dir / "tmp",
                    case=setup_case(spec, self.skill_dir),
                    under_test=self.skill.name,
                )
            except SetupFailed as exc:
                return replace(record, outcome="skipped", error=str(exc))
            except ContaminationError as exc:
                raise EvalError(refused(record.arm, name, exc)) from None
            except (SandboxError, ConnectionError) as exc:  # (a container killed mid-reply resets
                # its channel: never a run-folder write, which fails with ENOSPC and the like)
                record = replace(record, error=f"sandbox: {exc}")
                if early is not None:  # the opening call is billed: it counts against --max-cost
                    usage, cost = await early.abandon()
                    record = replace(record, usage=usage, cost_usd=cost)
                return replace(record, seconds=time.monotonic() - started)
            try:
                # the checker starts while the agent works (off the critical path)
                start_checker(provider, check_box, staged, self.skill_dir, spec.harbor)
                # what the agent opens of the skills, seen from the executor (observer.py): a
                # CLI's own start-up reads every SKILL.md, so its watch begins at its first reply
                folders = skill_folders(skills, session.skill_home)
                if spec.skill_in_workspace and self.skill.name in folders:
                    shown = f"{staged.sandbox.workdir}/{spec.skill_in_workspace}"
                    folders[self.skill.name].append(shown)
                await staged.sandbox.observe(folders, now=session.relay is None)
                trace = TraceWriter(transcript)
                try:
                    result = await session.run(staged.sandbox, trace)
                except ContaminationError as exc:
                    raise EvalError(refused(record.arm, name, exc)) from None
                finally:
                    trace.close()
                seen = await staged.sandbox.observed()
                declared = expand_loaded(declared_skills(self.agent.invoked, trace.events), skills)
                record = replace(
                    record,
                    loaded=sorted(declared | seen.keys()),
                    observed={k: sorted(v) for k, v in seen.items()},
                    declared=sorted(declared),
                    ambient=list(session.ambient),
                    stop_reason=result.stop_reason,
                    turns=result.turns,
                    seconds=result.duration_ms / 1000,
                    usage=result.usage,
                    cost_usd=result.cost_usd,
                    models=dict(result.models),
                    transcript=str(transcript.relative_to(self.run_dir)),
                )
                if result.errored:
                    return replace(record, error=result.error)
                if result.stop_reason == "budget":  # never a loss or a tie: its rows go unscored
                    return replace(
                        record, error="not run: the run's --max-cost ceiling could not cover a call"
                    )
                try:
                    checker = await check_phase(
                        provider, check_box, staged, self.skill_dir, spec.harbor
                    )
                except WorkspaceRefused as exc:
                    return self.refused_workspace(record, str(exc))
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
                # Removing the containers (the agent's stopped one and the checker, ~10 ms
                # of podman work each) need not hold the session's slot.
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
        units = self.units(record.session)
        shown_at = (
            {self.skill.name: f"{checker.workdir}/{spec.skill_in_workspace}"}
            if spec.skill_in_workspace
            else None
        )
        # what the grader reads is what the arm left, listed before any check runs: a check
        # that runs the candidate's code (a root verifier's, with root's rights) would
        # otherwise rewrite what the grader is shown
        expects = any(c.kind == "expect" for cs in units.values() for c in cs)
        files = await workspace_files(checker) if expects else None
        checks = {
            unit: await run_checks(
                listed,
                text,
                checker,
                home,
                (earlier or {}).get(unit),
                root=spec.as_root,
                shown_at=shown_at,
            )
            for unit, listed in units.items()
        }
        record = await self.grade_expectations(files, record, text, units, checks)
        # a grader that could not judge (its model unreachable): the arm's rows go unscored. A
        # verifier's exit 2 is no error of the session (a retry would give the agent a second
        # try): the row decides whose failing it is, against the other arm (results/rows.py)
        unjudged = [
            c
            for results in checks.values()
            for c in results
            if c.infrastructure and not no_verdict(c)
        ]
        if unjudged:
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

    def units(self, name: str) -> dict[str, tuple[Check, ...]]:
        """The scored units of a session (a case, or each sub-case of a suite) and their checks."""
        spec = self.specs[name]
        if isinstance(spec, Suite):
            return {f"{SUITE}/{sub.name}": (*spec.checks, *sub.checks) for sub in spec.cases}
        return {name: spec.checks}

    def refused_workspace(self, record: SessionRecord, why: str) -> SessionRecord:
        """The arm's record when the handover refused its workspace: every check fails
        unread (the agent left it so; an unscored row would spare a losing arm its loss)."""
        detail = f"not run: the handover refused the workspace ({why})"
        checks = {
            unit: [CheckResult(c.name, False, detail) for c in listed]
            for unit, listed in self.units(record.session).items()
        }
        notes = [*record.notes, f"handover: refused: {why}"]
        return replace(record, outcome="fail", checks=checks, notes=notes)

    async def grade_expectations(
        self,
        files: str | None,
        record: SessionRecord,
        text: Transcript,
        units: dict[str, tuple[Check, ...]],
        checks: dict[str, list[CheckResult]],
    ) -> SessionRecord:
        """Replace each unit's `expect` results (in place) with the model grader's; its cost
        is the session's (and so the run's spend and --max-cost)."""
        listed = {u: [i for i, c in enumerate(cs) if c.kind == "expect"] for u, cs in units.items()}
        if not any(listed.values()):
            return record
        spec = self.specs[record.session]
        # reserved and settled in the run's ledger like every other call (--max-cost)
        model = MeteredModel(
            resolve_model(
                self.plan.grader_model or self.plan.judge_model,
                max_retries=self.settings.max_retries,
                timeout=self.settings.request_timeout,
            ),
            self.ledger,
            self.settings.prices,
            "grader",
        )
        usage = Usage()
        try:
            for unit, where in listed.items():
                if not where:
                    continue
                graded, used = await grade(
                    model,
                    [units[unit][i] for i in where],
                    task=spec.task,
                    trace=text.all_text,
                    files=files,
                    runs=self.plan.grader_runs,
                )
                usage = usage + used
                for i, result in zip(where, graded, strict=True):
                    checks[unit][i] = result
        finally:
            await model.aclose()
        ref = self.plan.grader_model or self.plan.judge_model
        cost = cost_usd(ref, usage, self.settings.prices)
        return replace(record, cost_usd=(record.cost_usd or 0.0) + (cost or 0.0))

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

    def spec_for(self, name: str) -> SandboxSpec:
        """The sandbox a session's arms and checker run in: its own image and workdir, if it
        has them."""
        return case_spec(
            self.sandbox_spec,
            self.specs[name],
            self.opts.case_images.get(name),
            self.settings.max_memory,
        )


def skill_folders(skills: dict[str, Path], home: str | None) -> dict[str, list[str]]:
    """Where each staged skill is in the sandbox: /skills/<name>, and the agent's copy."""
    return {n: [f"{SKILLS_DIR}/{n}", *([f"{home}/{n}"] if home else [])] for n in skills}


def handover_notes(notes: list[str], most: int = 10) -> list[str]:
    """What the handover to the checker cut or changed (a link the agent aimed at the answer
    key shows here), at most `most` lines."""
    more = [f"handover: ... and {len(notes) - most} more"] if len(notes) > most else []
    return [f"handover: {n}" for n in notes[:most]] + more


def refused(arm: str, case: str, why: ContaminationError) -> str:
    """Why the run stops: an arm would see other skills than it should, so what it shows is
    not the skill's effect (docs/statistics.md)."""
    return (
        f"run refused, arm {arm} of {case}: {why}. The arms may differ by the skill under "
        "test only: look for another skill in the case's workspace, fixture or image"
    )
