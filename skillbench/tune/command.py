"""`skillbench tune`: plan, run (or continue), report, and apply only when asked.

The CLI parses the flags into a `Request` and calls `command`; everything else is here.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path

import msgspec

from skillbench.config import Settings
from skillbench.engine.estimate import TRIGGER_INPUT, TRIGGER_OUTPUT
from skillbench.engine.interrupt import Stop
from skillbench.engine.plan import check_credentials, new_run_id, run_folder
from skillbench.engine.triggers import Spend
from skillbench.errors import EvalError
from skillbench.evals.skills import catalog, digest, evals_digest, is_skill, read_skill
from skillbench.models import parse_model
from skillbench.models.base import Usage
from skillbench.models.ledger import RunLedger
from skillbench.models.pricing import cost_usd
from skillbench.tune import report
from skillbench.tune.apply import ApplyError, apply_description, description_diff, shown_path
from skillbench.tune.proposer import SYSTEM, proposer_prompt
from skillbench.tune.rounds import (
    Outcome,
    Round,
    TuneError,
    TuneOptions,
    check_prices,
    choose,
    load_outcome,
    new_plan,
    run_rounds,
    start,
)
from skillbench.tune.splits import SplitError, split_triggers

EXIT_OK, EXIT_STOPPED, EXIT_USAGE = 0, 1, 2
PROPOSER_OUTPUT = 300.0  # tokens of a proposer's reply
# One agent routing session: a CLI agent's system prompt and tools, sent twice (load the
# skill, answer); what the fake server counts for Claude Code's requests.
ROUTING_INPUT, ROUTING_OUTPUT = 15_000.0, 100.0


class Request(msgspec.Struct, kw_only=True):
    """What the command line asked. `given` names the options set by a flag (a resumed run
    refuses one that differs from its plan)."""

    options: TuneOptions
    given: frozenset[str] = frozenset()
    out: str | None = None
    resume: str | None = None
    plan: bool = False
    apply: bool = False
    json: bool = False


Print = Callable[[str], None]


def command(req: Request, out: Print, err: Print) -> int:
    """Run `skillbench tune` as asked; the exit code."""
    try:
        return _command(req, out, err)
    except (TuneError, SplitError, ApplyError) as exc:
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE
    except EvalError as exc:
        err(f"skillbench: error: {exc}")
        return EXIT_USAGE


def _command(req: Request, out: Print, err: Print) -> int:
    opts = req.options
    if req.plan and req.resume:
        raise TuneError("--plan and --resume exclude each other (the plan is in the run folder)")
    if req.resume:
        outcome = _reopen(req)
        opts = msgspec.structs.replace(opts, skill_dir=outcome.plan.skill_dir)
    else:
        skill_dir = Path(opts.skill_dir)
        if not is_skill(skill_dir):
            raise TuneError(f"{skill_dir}: not a skill folder (no SKILL.md)")
        skill = read_skill(skill_dir)
        split, warnings = split_triggers(skill_dir, opts.fractions, opts.seed)
        for line in warnings:
            err(line)
        run_id = new_run_id()
        plan = new_plan(opts, skill, digest(skill_dir), evals_digest(skill_dir), run_id)
        outcome = Outcome(plan=plan, run_dir="", split=split, rounds=[])
        if req.plan:
            for line in plan_lines(outcome, opts.settings, opts.max_cost):
                out(line)
            out("nothing was started (--plan)")
            return EXIT_OK
        outcome.run_dir = str(run_folder(skill_dir, req.out, run_id, kind="tune"))
    if not req.resume:
        start(Path(outcome.run_dir), outcome.plan, outcome.split)
    resume = f"skillbench tune --resume {outcome.run_dir}"
    if outcome.test is None and outcome.stopped is None:
        code = _run(outcome, opts, err, resume)
        if code is not None:
            return code
    return _finish(outcome, req, out, err, resume)


def _run(outcome: Outcome, opts: TuneOptions, err: Print, resume: str) -> int | None:
    """The rounds and the test; an exit code when interrupted."""
    plan = outcome.plan
    check_credentials(plan.model, plan.proposer_model)
    if opts.max_cost is not None:
        check_prices(plan.model, plan.proposer_model, settings=opts.settings)
    if parse_model(plan.model).scripted or parse_model(plan.proposer_model).scripted:
        err(
            "note: using the scripted driver: a fixed script, not a model; the table shows "
            "the pipeline works, not that a description is better"
        )
    # one ledger for the run, continued from what the folder says was spent (--resume)
    spend = Spend(RunLedger(opts.max_cost, spent=outcome.spend_usd), opts.settings.prices)

    def progress(r: Round) -> None:
        err(f"round {r.round} done" + (f": {r.note or r.invalid}" if r.note or r.invalid else ""))

    def said(signum: int) -> str:
        return (
            f"{'interrupted' if signum == signal.SIGINT else 'terminated'}; the "
            f"{len(outcome.rounds)} finished round(s) are kept in {outcome.run_dir}. "
            f"Continue with: {resume}"
        )

    # Ctrl-C or SIGTERM cancels the run (every sandbox is removed on the way out); a second
    # signal exits at once (engine/interrupt.py)
    stop = Stop(lambda signum: err(said(signum)))
    try:
        asyncio.run(stop.run(run_rounds(outcome, opts.settings, spend, err, progress)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        first = stop.signals[0] if stop.signals else signal.SIGINT
        err(said(first))
        return 128 + first
    return None


def _reopen(req: Request) -> Outcome:
    """A started run, refused when the skill, its evals or a flag changed since."""
    run_dir = Path(req.resume or "")
    if not (run_dir / "plan.json").is_file():
        raise TuneError(f"--resume {run_dir}: no tuning run there (no plan.json)")
    outcome = load_outcome(run_dir)
    plan = outcome.plan
    skill_dir = Path(plan.skill_dir)
    if not is_skill(skill_dir):
        raise TuneError(f"--resume {run_dir}: the skill {skill_dir} is gone")
    opts = req.options
    planned = {
        "model": (opts.settings.model, plan.model),
        "proposer_model": (opts.proposer_model, plan.proposer_model),
        "agent": (opts.settings.agent, plan.agent),
        "method": (opts.method, plan.method),
        "rounds": (opts.rounds, plan.rounds),
        "runs": (opts.runs, plan.runs),
        "threshold": (opts.threshold, plan.threshold),
        "seed": (opts.seed, plan.seed),
        "split": (opts.fractions, plan.fractions),
    }
    for name, (given, was) in planned.items():
        if name in req.given and given != was:
            raise TuneError(
                f"--resume {run_dir}: refused, --{name.replace('_', '-')} differs from the "
                f"run's ({was}); start a new tune instead"
            )
    changed = [
        what
        for what, old, new in (
            ("the skill's files", plan.version, digest(skill_dir)),
            ("its eval assets", plan.assets_digest, evals_digest(skill_dir)),
        )
        if old != new
    ]
    if changed:
        raise TuneError(
            f"--resume {run_dir}: refused, {' and '.join(changed)} changed since the run "
            "started; start a new tune instead"
        )
    return outcome


def _finish(o: Outcome, req: Request, out: Print, err: Print, resume: str) -> int:
    skill_dir = Path(o.plan.skill_dir)
    applied = False
    best = choose(o.rounds) if o.test is not None else None
    diff: list[str] = []
    before = digest(skill_dir)
    original = o.rounds[0].description if o.rounds else None
    if best is not None and best.description and best.description != original:
        diff = description_diff(skill_dir, best.description)
        if req.apply:
            if before != o.plan.version:
                raise TuneError(
                    f"{shown_path(skill_dir)}: the skill's files changed while it was being "
                    "tuned; not applied (start a new tune)"
                )
            apply_description(skill_dir, best.description)
            applied = True
    page = report.write(o, applied=applied)
    if req.json:
        print(json.dumps(report.result(o, applied=applied), indent=2, ensure_ascii=False))
    else:
        for line in report.lines(o):
            out(line)
        for line in diff:
            out(line)
    if o.stopped:
        err(
            f"the {len(o.rounds)} finished round(s) are kept; continue with: {resume} "
            "--max-cost <a higher cap>"
        )
    elif applied:
        (err if req.json else out)(
            f"applied: {shown_path(skill_dir)}/SKILL.md's description line was rewritten; the "
            f"skill's digest changed {before[:19]}… -> {digest(skill_dir)[:19]}…: a new version, "
            f"which needs a new eval (`skillbench eval {shown_path(skill_dir)}`)"
        )
    elif diff:
        err(f"not applied (SKILL.md is unchanged); to write it: {resume} --apply")
    if not req.json:
        out(f"run: {o.run_dir}")
        out(f"report: {page}")
    return EXIT_STOPPED if o.stopped else EXIT_OK


def plan_lines(o: Outcome, settings: Settings, max_cost: float | None) -> list[str]:
    """`tune --plan`: the calls the run makes at most, and roughly what they cost."""
    plan, split = o.plan, o.split
    agent = plan.method == "agent"
    canary = 1 if agent else 0
    tv = len((split.train + split.validation).all()) * plan.runs + canary
    test = len(split.test.all()) * plan.runs + canary
    measured = (plan.rounds + 1) * tv + 2 * test
    tokens = (ROUTING_INPUT, ROUTING_OUTPUT) if agent else (TRIGGER_INPUT, TRIGGER_OUTPUT)
    trigger_cost = cost_usd(
        plan.model,
        Usage(int(measured * tokens[0]), int(measured * tokens[1])),
        settings.prices,
    )
    skill = read_skill(Path(plan.skill_dir))
    siblings = [
        s for s in catalog(Path(plan.skill_dir).parent, include=skill) if s.name != skill.name
    ]
    md = (Path(skill.path) / "SKILL.md").read_text(encoding="utf-8")
    shown = proposer_prompt(skill, md, skill.description, siblings, [], [], runs=1, threshold=1)
    train_text = sum(len(p) + 40 for p in split.train.all())
    proposer_in = (len(SYSTEM) + len(shown) + train_text) / 4 + 200 * plan.rounds
    proposer_cost = cost_usd(
        plan.proposer_model,
        Usage(int(plan.rounds * proposer_in), int(plan.rounds * PROPOSER_OUTPUT)),
        settings.prices,
    )
    unit = "routing session(s)" if agent else "catalog call(s)"
    lines = [
        f"plan: tune {plan.skill} ({plan.version[:19]}…): up to {plan.rounds} round(s), "
        f"{plan.runs} run(s) per prompt, {report.method_label(o)} on {plan.model}, proposer "
        f"{plan.proposer_model}",
        "  " + report.split_line(o),
        f"  triggers: up to {measured} {unit} ({plan.rounds + 1} measurement(s) of {tv} on "
        f"train+validation, 2 of {test} on test)",
        f"  proposer calls: up to {plan.rounds} ({2 * plan.rounds} if every reply must be "
        "sent back once)",
    ]
    if trigger_cost is None or proposer_cost is None:
        cost = "unknown (no price for a model: add [prices] to skillbench.toml)"
    else:
        total = trigger_cost + proposer_cost
        cost = f"~${total:.2f} at most (the rounds may stop early)"
        if max_cost is not None and total > max_cost:
            cost += (
                f"; over --max-cost ${max_cost:.2f}: the run stops at the cap with its "
                "finished rounds kept"
            )
    lines.append(f"  estimated cost: {cost}")
    return lines
