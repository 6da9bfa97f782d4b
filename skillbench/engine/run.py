"""The eval runner: plan the rows, run every arm session in its own sandbox (asyncio, at most
`parallel` at once), score checks, send ties with a rubric to the judge, journal as it goes.

Errors retry once in a fresh sandbox; timeouts are the agent's and are not retried. Every
sandbox is removed, also on Ctrl-C; failed arms' workspaces are kept under the run folder.
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from skillbench.engine.accounting import accounting
from skillbench.engine.judging import Judging
from skillbench.engine.plan import (
    EvalError,
    EvalOptions,
    Prepared,
    check_credentials,
    probe_requires,
    trigger_method,
    validated,
)
from skillbench.engine.pool import Pool
from skillbench.engine.recheck import Reusing
from skillbench.engine.routing import RoutingError, measure
from skillbench.engine.session import Placement, Progress
from skillbench.engine.triggers import TriggerReport, targets_at
from skillbench.evals.asrun import differences
from skillbench.evals.netreport import networks
from skillbench.models import resolve_model
from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import cost_usd
from skillbench.report import skill_creator
from skillbench.results.activation import (
    NEVER_LOADED,
    activation_of,
    ambient_of,
    explicit_invocation,
)
from skillbench.results.records import (
    BASELINE,
    CANDIDATE,
    INCUMBENT,
    Plan,
    RowRecord,
    SessionRecord,
    session_key,
)
from skillbench.results.score import summarize
from skillbench.results.sequential import reps_of, settled, stimuli_of, stop_of
from skillbench.results.summary import Diagnostic, Skipped, Summary
from skillbench.sandbox import make_provider
from skillbench.sandbox.base import SandboxProvider
from skillbench.team.receipts import Provenance, Receipt, bundle_digest, write_receipt
from skillbench.team.signing import SigningError
from skillbench.util.lossless import utf8_safe
from skillbench.util.scrub import IDENTIFIERS, scrub_obj


class EvalResult(msgspec.Struct):
    run_dir: str
    summary: Summary


class Runner(Reusing, Judging):
    """One eval run: its sessions (at most `parallel` at once), its rows, its summary."""

    def pending(self) -> list[tuple[str, str, int]]:
        todo = []
        for name in self.plan.sessions:
            for rep in range(1, self.plan.k + 1):
                for arm in self.plan.arms:
                    if session_key(name, arm, rep) not in self.done and name not in self.skipped:
                        todo.append((name, arm, rep))
        return todo

    def next_wave(self, looks: int) -> list[tuple[str, str, int]]:
        """A sequential run's next wave within its first `looks` looks: the next repetition
        of every stimulus whose vote can still change, every arm of it not yet run (a
        resumed run picks up the sessions its journal lacks)."""
        assert self.plan.sequential is not None
        names = self.plan.sessions[: self.plan.sequential.looks[looks - 1]]
        rows = list(self.rows.values())
        by_opponent = [reps_of(rows, opp) for opp in self.plan.opponents]
        todo = []
        for name in names:
            if name in self.skipped:
                continue
            got = [reps.get(name, {}) for reps in by_opponent]
            if all(settled([r[i] for i in sorted(r)], self.plan.k) for r in got if r) and all(got):
                continue
            rep = min(len(r) for r in got) + 1
            todo += [
                (name, arm, rep)
                for arm in self.plan.arms
                if session_key(name, arm, rep) not in self.done
            ]
        return todo

    def look_stops(self, looks: int) -> bool:
        """Whether the stopping rule stops at the first `looks` looks' votes."""
        order = stimuli_of(u.name for u in self.plan.units)
        rows = list(self.rows.values())
        plan, rule = self.plan, self.plan.sequential
        assert rule is not None
        stop = stop_of(rows, rule, plan.opponents[0], order, looks, plan.k, self.skipped)
        return stop is not None

    async def session(
        self, provider: SandboxProvider, name: str, arm: str, rep: int
    ) -> SessionRecord:
        key = self.reuse_key(name, arm, rep)
        if key and self.pool is not None:  # another cell may be running this very session
            async with self.pool.once(key):
                return await self.fresh_or_reused(provider, key, name, arm, rep)
        return await self.fresh_or_reused(provider, key, name, arm, rep)

    async def fresh_or_reused(
        self, provider: SandboxProvider, key: str | None, name: str, arm: str, rep: int
    ) -> SessionRecord:
        hit = self.cache.get(key) if key else None
        if hit is not None:
            again = await self.reused(provider, hit, name, arm, rep)
            if again.outcome != "error":
                return again  # (an infrastructure error there: the session runs afresh)
        # a session that may be reused keeps its workspace as the check phase got it
        snapshot = self.run_dir / "tmp" / f"{session_key(name, arm, rep)}.tar" if key else None
        record = await self.place(provider, name, arm, rep, 1, snapshot)
        # infrastructure: once more in a fresh sandbox (not when the ledger refused it)
        if record.outcome == "error" and record.stop_reason != "budget":
            first = record
            record = await self.place(provider, name, arm, rep, 2, snapshot)
            # what the first attempt spent (an opening call sent while its sandbox failed to
            # stage) is billed too: it counts in the record, hence against --max-cost
            if first.cost_usd is not None:
                record = msgspec.structs.replace(
                    record,
                    usage=first.usage + record.usage,
                    cost_usd=first.cost_usd + (record.cost_usd or 0.0),
                )
        if key:
            transcript = self.run_dir / record.transcript if record.transcript else None
            self.cache.put(key, record, self.plan.run_id, transcript, snapshot)
        return record

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

    async def run(self) -> Summary:
        provider = make_provider(self.settings.sandbox.provider)
        # (off the loop: importing a provider's SDK takes seconds, and a Ctrl-C meanwhile
        # would wait for it)
        judge_model = await asyncio.to_thread(
            resolve_model,
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
            gate = (
                asyncio.Semaphore(self.settings.parallel) if self.pool is None else self.pool.gate
            )

            async def one(name: str, arm: str, rep: int) -> None:
                async with gate:
                    if name in self.skipped:
                        return
                    if self.opts.max_cost is not None and (
                        self.spend >= self.opts.max_cost or self.stopped or self.ledger.exhausted()
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

            async def wave(items: list[tuple[str, str, int]]) -> None:
                tasks = [asyncio.create_task(one(*item)) for item in items]
                try:
                    await asyncio.gather(*tasks)
                    await asyncio.gather(*self.judge_tasks)
                except BaseException:
                    for task in tasks:  # one failure (a refused run, Ctrl-C) stops them all
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise

            if self.plan.sequential is None:
                await wave(todo)
            else:
                for looks in range(1, len(self.plan.sequential.looks) + 1):
                    while (items := self.next_wave(looks)) and not self.stopped:
                        await wave(items)
                        if self.look_stops(looks):  # curtailed: no wave left can change it
                            break
                    if self.stopped or self.look_stops(looks):
                        break
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
        """The summary with activation, ambient skills and the library arm (docs/statistics.md)."""
        expected = {name: self.expects(name) for name in self.plan.sessions}
        explicit = {
            name: explicit_invocation(self.plan.skill, self.specs[name].task)
            for name in self.plan.sessions
        }
        summary.activation = activation_of(self.plan, self.done, rows, expected, explicit)
        summary.ambient = ambient_of(self.plan, self.done, self.agent.ambient_policy())
        summary.library = self.plan.library
        for name in self.plan.sessions:  # graders of another tool's file that could not run
            if name in self.skipped:  # the whole case was: said with the skipped cases
                continue
            for why in self.specs[name].not_graded:
                summary.diagnostics.append(Diagnostic("not-graded", name, why))
        if summary.activation is not None and summary.activation.never:
            summary.diagnostics.append(Diagnostic("never-fired", "", NEVER_LOADED))
        return summary

    async def probe_requires(self, provider: SandboxProvider) -> None:
        wanted = {
            n: (self.spec_for(n).image, s.requires)
            for n, s in self.specs.items()
            if n not in self.skipped
        }
        for name, missing in (await probe_requires(provider, self.sandbox_spec, wanted)).items():
            self.skipped[name] = f"missing {', '.join(missing)}"
            self.missing.add(name)


async def triggers_of(
    opts: EvalOptions, folder: Path | None = None, ledger: RunLedger | None = None
) -> TriggerReport | None:
    """The skill's trigger report, or None when it has no triggers file. The agent method
    keeps its sessions under `folder`; its calls spend in the run's `ledger`."""
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
            ledger=ledger,
        )
    except RoutingError as exc:
        raise EvalError(str(exc)) from None
    return report


async def triggers_only(opts: EvalOptions) -> TriggerReport:
    """`eval --triggers-only`: validate, then measure the skill's triggers (no sandboxes)."""
    validated(Path(opts.skill_dir), opts.evals)
    check_credentials(opts.settings.model)
    report = await triggers_of(opts)
    if report is None:
        raise EvalError(
            f"{opts.skill_dir}: --triggers-only needs a trigger file (evals/triggers.yaml or "
            "a trigger JSON)"
        )
    return report


async def execute(
    prepared: Prepared,
    opts: EvalOptions,
    progress: Progress,
    placement: Placement | None = None,
    pool: Pool | None = None,
) -> EvalResult:
    """Run the prepared eval (its sessions here, or where `placement` puts them; a cell of
    a set run in the set's `pool`); write summary.json; return the run folder and the summary."""
    plan, run_dir, skill, sessions = prepared
    runner = Runner(opts, plan, run_dir, skill, sessions, progress, placement, pool)
    summary = await runner.run()
    summary.network = networks(sessions, opts.settings.network)
    summary.differences = differences(sessions, opts.settings.max_timeout, opts.settings.max_memory)
    if opts.triggers:
        capped = opts.max_cost is not None and runner.spend >= opts.max_cost
        if capped or (pool is not None and runner.ledger.exhausted()):
            summary.triggers_note = "not measured: the --max-cost cap was reached"
        else:
            report = await triggers_of(opts, run_dir / "triggers", runner.ledger)
            if report is None:
                summary.triggers_note = "not measured: the skill has no trigger file"
            else:
                summary.triggers = report.summary()
                spent = cost_usd(opts.settings.model, report.usage, opts.settings.prices) or 0.0
                runner.spend += spent
                if pool is not None:  # the set's other cells see it in the ledger
                    runner.ledger.charge(spent, "triggers")
    summary.spend_usd = round(runner.spend, 6)
    summary.accounting = accounting(
        runner.ledger.snapshot(),
        runner.done.values(),
        planned=opts.planned_usd,
        not_run=summary.not_run,
    )
    # checks saw the raw transcript; their details are printed and written, so scrub them
    # (a sandbox's file names that are not UTF-8 are shown as \xNN: the journal keeps them)
    plain = utf8_safe(scrub_obj(msgspec.to_builtins(summary), keep=IDENTIFIERS))
    summary = msgspec.convert(plain, Summary)
    (run_dir / "summary.json").write_bytes(msgspec.json.format(msgspec.json.encode(summary)))
    skill_creator.write(run_dir, summary)  # grading.json, benchmark.json: its viewer reads them
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
    return Receipt.of(
        summary,
        provenance=Provenance(
            engine_version=plan.engine_version,
            agent=plan.agent,
            models={
                "agent": plan.model,
                "judge": plan.judge_model,
                **({"grader": plan.grader_model} if plan.grader_model else {}),
            },
            k=plan.k,
            seed=plan.seed,
            arms=arms,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            opponents=plan.opponents,
            units=plan.units,
            endpoints=plan.endpoints,
            min_net_lift=plan.min_net_lift,
            sequential=plan.sequential,
        ),
        bundle=bundle,
    )
