"""A run's rows (docs/statistics.md): as both arms of a case's rep finish, the row is decided by
activation, else by the checks, else by the judge (asked in the background)."""

from __future__ import annotations

import asyncio
import random

from skillbench.engine.session import Sessions
from skillbench.evals.model import Case
from skillbench.grading.judge import judge
from skillbench.models.base import Model
from skillbench.models.ledger import MeteredModel
from skillbench.models.pricing import cost_usd
from skillbench.results.activation import misfire
from skillbench.results.journal import RowKey
from skillbench.results.records import CANDIDATE, RowRecord, SessionRecord, Unit, session_key
from skillbench.results.rows import arm_result, row_by_checks
from skillbench.results.transcript import read_trace


class Judging(Sessions):
    """The Runner's rows: decided at once, or handed to the judge."""

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
                MeteredModel(model, self.ledger, self.settings.prices, "judge"),
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
