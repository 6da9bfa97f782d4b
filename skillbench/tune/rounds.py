"""The tuning rounds (issue 25, parts 2, 3 and 6): measure, propose, measure, choose, test.

Round 0 measures the description as it is on train and validation; each later round asks the
proposer for a new one from the train results alone and measures it the same way. The best
by validation (F1, ties to the shorter) is then measured once on test, beside the original.
Every finished round is written to the run folder as it ends, so a run stopped by Ctrl-C or
by --max-cost continues with --resume from the next round; the test is measured only once.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import msgspec

from skillbench.config import Settings
from skillbench.engine.routing import RoutingError, open_router
from skillbench.engine.triggers import Counts, PromptResult, Router, Spend, counts, evaluate
from skillbench.errors import SkillbenchError
from skillbench.evals import SpecError
from skillbench.evals.skills import SKILL_FILE, Skill, catalog, copy_for_staging, read_skill
from skillbench.models import resolve_model
from skillbench.models.base import Model
from skillbench.models.pricing import price_for
from skillbench.tune.apply import ApplyError, rewrite_description
from skillbench.tune.proposer import Proposal, propose, proposer_prompt
from skillbench.tune.splits import Prompts, Split
from skillbench.util import lossless
from skillbench.version import __version__

_T = TypeVar("_T")


class TuneError(SkillbenchError):
    """The tuning cannot start or go on; the message is one line saying what to do."""


class TuneOptions(msgspec.Struct, kw_only=True):
    skill_dir: str
    settings: Settings
    method: str = "agent"  # "agent": the agent's own routing; "catalog": the catalog call
    proposer_model: str | None = None  # None: the trigger model
    rounds: int = 5
    runs: int = 3
    threshold: float = 0.5
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)
    seed: int = 0
    max_cost: float | None = None


class TunePlan(msgspec.Struct, kw_only=True):
    """plan.json: what the run is, so --resume continues the same run."""

    run_id: str
    skill: str
    skill_dir: str
    version: str  # the skill's digest when the run started
    assets_digest: str
    method: str
    agent: str
    model: str
    proposer_model: str
    rounds: int
    runs: int
    threshold: float
    seed: int
    fractions: tuple[float, float, float]
    created_at: str
    engine_version: str


class Round(msgspec.Struct, kw_only=True):
    """rounds/NN.json: one description and how it routed the train and validation prompts."""

    round: int
    description: str | None  # None: the proposer gave nothing usable (see `note`)
    train: Counts | None = None
    validation: Counts | None = None
    results: list[PromptResult] = []  # every train and validation prompt
    invalid: str | None = None  # the canary did not fire: no figures
    note: str | None = None
    spend_usd: float = 0.0  # the run's spend when the round ended

    @property
    def measured(self) -> bool:
        return self.train is not None and self.validation is not None


class Measured(msgspec.Struct, kw_only=True):
    """A description measured on the test set."""

    description: str
    round: int
    test: Counts | None
    results: list[PromptResult] = []
    invalid: str | None = None


class Final(msgspec.Struct, kw_only=True):
    """test.json: the original and the chosen description on test, each measured once."""

    original: Measured
    chosen: Measured


class Outcome(msgspec.Struct, kw_only=True):
    plan: TunePlan
    run_dir: str
    split: Split
    rounds: list[Round]
    test: Final | None = None  # None: stopped before the test
    stopped: str | None = None  # why the run stopped before its end (the --max-cost cap)
    early: str | None = None  # why the rounds ended early
    spend_usd: float = 0.0


def f1(c: Counts) -> float:
    """The choice's score: recall and precision together (2tp / (2tp + fp + fn))."""
    den = 2 * c.tp + c.fp + c.fn
    return 2 * c.tp / den if den else 0.0


def _usable(rounds: list[Round]) -> list[Round]:
    return [r for r in rounds if r.measured and r.invalid is None and r.description]


def choose(rounds: list[Round]) -> Round:
    """The best description by validation; ties to the shorter, then to the earlier."""
    return max(
        _usable(rounds),
        key=lambda r: (
            f1(r.validation or Counts(None, None, 0, 0, 0, 0)),
            -len(r.description or ""),
            -r.round,
        ),
    )


def _current(rounds: list[Round]) -> Round:
    """What the proposer improves on: the best so far on train (ties to the latest), chosen
    from train figures only, so no validation result reaches the proposer."""
    return max(
        _usable(rounds), key=lambda r: (f1(r.train or Counts(None, None, 0, 0, 0, 0)), r.round)
    )


def _perfect(c: Counts, prompts: Prompts) -> bool:
    return c.tp == len(prompts.should_trigger) and c.tn == len(prompts.should_not_trigger)


# --- the run folder ----------------------------------------------------------------------


def _write(path: Path, value: object) -> None:
    """Write a record atomically: a run killed mid-write keeps the previous state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(value)))
    tmp.replace(path)


def _read(path: Path, kind: type[_T]) -> _T:
    try:
        return lossless.loads(path.read_bytes(), kind)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TuneError(f"{path}: unreadable ({exc}); start a new tune") from None


def saved_rounds(run_dir: Path) -> list[Round]:
    """The finished rounds in a run folder, in order (a gap ends the list)."""
    out: list[Round] = []
    while (path := run_dir / "rounds" / f"{len(out):02d}.json").is_file():
        out.append(_read(path, Round))
    return out


def load_outcome(run_dir: Path) -> Outcome:
    """What a run folder holds so far."""
    plan = _read(run_dir / "plan.json", TunePlan)
    split = _read(run_dir / "split.json", Split)
    test = _read(run_dir / "test.json", Final) if (run_dir / "test.json").is_file() else None
    spend = run_dir / "spend.json"
    spent = _read(spend, dict[str, float]).get("spend_usd", 0.0) if spend.is_file() else 0.0
    return Outcome(
        plan=plan,
        run_dir=str(run_dir),
        split=split,
        rounds=saved_rounds(run_dir),
        test=test,
        spend_usd=spent,
    )


def new_plan(opts: TuneOptions, skill: Skill, version: str, assets: str, run_id: str) -> TunePlan:
    settings = opts.settings
    return TunePlan(
        run_id=run_id,
        skill=skill.name,
        skill_dir=str(Path(opts.skill_dir).resolve()),
        version=version,
        assets_digest=assets,
        method=opts.method,
        agent=settings.agent,
        model=settings.model,
        proposer_model=opts.proposer_model or settings.model,
        rounds=opts.rounds,
        runs=opts.runs,
        threshold=opts.threshold,
        seed=opts.seed,
        fractions=opts.fractions,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        engine_version=__version__,
    )


def start(run_dir: Path, plan: TunePlan, split: Split) -> None:
    """Make a new run folder with its plan and split."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if (run_dir / "plan.json").exists():
            raise TuneError(
                f"--out {run_dir}: already holds a tuning run; continue it with --resume {run_dir}"
            )
        _write(run_dir / "plan.json", plan)
        _write(run_dir / "split.json", split)
    except OSError as exc:
        raise TuneError(
            f"--out {run_dir}: cannot write the run folder there ({exc.strerror or exc}); "
            "choose another --out"
        ) from None


def check_prices(*refs: str, settings: Settings) -> None:
    """--max-cost counts spend by the price table: refuse a model it has no price for."""
    for ref in dict.fromkeys(refs):
        if price_for(ref, settings.prices) is None:
            raise TuneError(
                f"--max-cost: no price is known for {ref}, so its spend cannot be counted; "
                f'add [prices."{ref}"] with input and output (USD per million tokens) to '
                "skillbench.toml"
            )


# --- measuring ---------------------------------------------------------------------------


class _Candidates:
    """A description as a skill the router can stage: a copy of the skill (what an arm
    sees of it) with only its description line rewritten, one folder per description."""

    def __init__(self, skill: Skill, folder: Path):
        self.skill, self.folder = skill, folder

    def get(self, description: str) -> Skill:
        if description == self.skill.description:
            return self.skill
        key = hashlib.sha256(description.encode()).hexdigest()[:16]
        dest = self.folder / key / self.skill.name
        if not dest.is_dir():
            copy_for_staging(Path(self.skill.path), dest)
            md = dest / SKILL_FILE
            md.write_bytes(rewrite_description(md.read_bytes().decode(), description).encode())
        return read_skill(dest)


class _Tuner:
    def __init__(self, outcome: Outcome, router: Router, spend: Spend):
        self.o, self.router, self.spend = outcome, router, spend
        self.plan = outcome.plan
        self.run_dir = Path(outcome.run_dir)
        self.skill = read_skill(Path(self.plan.skill_dir))
        root = Path(self.plan.skill_dir).parent
        self.siblings = [s for s in catalog(root, include=self.skill) if s.name != self.skill.name]
        md = (Path(self.skill.path) / SKILL_FILE).read_text(encoding="utf-8")
        self.body = "\n".join(md.split("\n")[self.skill.body_line - 1 :])

    async def measure(
        self, candidate: Skill, prompts: Prompts
    ) -> tuple[list[PromptResult], str | None]:
        report = await evaluate(
            self.router,
            candidate,
            self.siblings,
            prompts.triggers(str(self.run_dir / "split.json")),
            runs=self.plan.runs,
            threshold=self.plan.threshold,
        )
        return report.results, report.invalid

    async def round(self, n: int, description: str, candidate: Skill) -> Round:
        split = self.o.split
        results, invalid = await self.measure(candidate, split.train + split.validation)
        train, validation = split.train.all(), split.validation.all()
        return Round(
            round=n,
            description=description,
            train=None if invalid else counts([r for r in results if r.prompt in train]),
            validation=None if invalid else counts([r for r in results if r.prompt in validation]),
            results=results,
            invalid=invalid,
        )

    def proposal_request(self) -> str:
        current = _current(self.o.rounds)
        train = self.o.split.train.all()
        history = [(r.description or "", r.train) for r in _usable(self.o.rounds) if r.train]
        return proposer_prompt(
            self.skill,
            self.body,
            current.description or "",
            self.siblings,
            [r for r in current.results if r.prompt in train],
            history,
            runs=self.plan.runs,
            threshold=self.plan.threshold,
        )


async def run_rounds(
    outcome: Outcome,
    settings: Settings,
    spend: Spend,
    log: Callable[[str], None] = lambda _: None,
    on_round: Callable[[Round], None] = lambda _: None,
) -> Outcome:
    """Run (or continue) the rounds and the test of a started run folder; `outcome` grows
    as rounds finish. Ctrl-C leaves every finished round on disk."""
    plan, run_dir = outcome.plan, Path(outcome.run_dir)
    routing = run_dir / "routing" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    try:
        async with open_router(
            settings,
            method=plan.method,
            agent=plan.agent,
            model=plan.model,
            folder=routing,
            spend=spend,
            log=log,
        ) as router:
            # the proposer's calls reserve and settle in the run's ledger too (--max-cost)
            proposer = spend.metered(
                resolve_model(
                    plan.proposer_model,
                    max_retries=settings.max_retries,
                    timeout=settings.request_timeout,
                ),
                "tuning",
            )
            try:
                with tempfile.TemporaryDirectory(prefix="skillbench-tune-") as tmp:
                    tuner = _Tuner(outcome, router, spend)
                    candidates = _Candidates(tuner.skill, Path(tmp))
                    await _rounds(tuner, candidates, proposer, on_round)
                    if outcome.stopped is None and outcome.test is None:
                        await _test(tuner, candidates)
            finally:
                await proposer.aclose()
    except RoutingError as exc:
        raise TuneError(str(exc)) from None
    except (SpecError, ApplyError) as exc:
        raise TuneError(f"{plan.skill_dir}: cannot stage a proposed description: {exc}") from None
    finally:
        outcome.spend_usd = spend.total
        _write(run_dir / "spend.json", {"spend_usd": spend.total})
    return outcome


def _capped(outcome: Outcome, spend: Spend, after: str) -> None:
    outcome.stopped = f"the --max-cost cap ${spend.cap:.2f} was reached {after}"


async def _rounds(
    tuner: _Tuner, candidates: _Candidates, proposer: Model, on_round: Callable[[Round], None]
) -> None:
    o, spend = tuner.o, tuner.spend
    for n in range(tuner.plan.rounds + 1):
        if n < len(o.rounds):
            r = o.rounds[n]
        else:
            if n == 0:
                r = await tuner.round(0, tuner.skill.description, tuner.skill)
            else:
                request = tuner.proposal_request()
                proposal: Proposal = await propose(proposer, request, spend)
                if spend.stopped:
                    _capped(o, spend, f"before round {n} was proposed")
                    return
                _write(tuner.run_dir / "proposals" / f"{n:02d}.json", proposal)
                if proposal.description is None:
                    r = Round(
                        round=n,
                        description=None,
                        note="no usable description: " + "; ".join(proposal.rejected),
                    )
                else:
                    candidate = candidates.get(proposal.description)
                    r = await tuner.round(n, proposal.description, candidate)
            if spend.stopped:
                _capped(o, spend, f"during round {n}; it was not kept")
                return
            if n == 0 and r.invalid:
                raise TuneError(f"the original description cannot be measured: {r.invalid}")
            r.spend_usd = spend.total
            _write(tuner.run_dir / "rounds" / f"{n:02d}.json", r)
            o.rounds.append(r)
            on_round(r)
        if n and r.measured and r.train and r.validation:
            before = [f1(x.validation) for x in _usable(o.rounds[:n]) if x.validation]
            if _perfect(r.train, o.split.train) and f1(r.validation) <= max(before):
                o.early = f"round {n} is perfect on train and did not improve validation"
                return


async def _test(tuner: _Tuner, candidates: _Candidates) -> None:
    """The original and the chosen description on test, each measured once."""
    o, spend = tuner.o, tuner.spend
    best = choose(o.rounds)
    tested = []
    for r in [o.rounds[0]] + ([best] if best.round else []):
        description = r.description or ""
        results, invalid = await tuner.measure(candidates.get(description), o.split.test)
        tested.append(
            Measured(
                description=description,
                round=r.round,
                test=None if invalid else counts(results),
                results=results,
                invalid=invalid,
            )
        )
    if spend.stopped:
        _capped(o, spend, "during the test; continue with --resume to measure it")
        return
    o.test = Final(original=tested[0], chosen=tested[-1])
    _write(tuner.run_dir / "test.json", o.test)
