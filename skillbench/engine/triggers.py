"""The trigger engine (docs/formats.md): does the skill get picked for the right requests?

Every prompt of `evals/triggers.yaml` is routed against the library the skill lives in (the
skill under test always in it), by one of two methods, each a `Router`:

- the catalog call (here): one tool-free model call showing the catalog and the request,
  asking for `{"nonce": <frame id>, "selected": [...]}` (only an answer carrying the call's
  frame id is read, grading/framing.py: a description cannot plant one); cheap, a proxy;
- the agent (engine/routing.py): the real agent CLI, every skill of the library staged as a
  real skill, run on the request; what it loads is what it selected. A canary prompt naming
  the skill runs first: if even that does not fire, the setup cannot measure routing and the
  report says invalid, never 0 % recall.

The skill fired on a prompt when its rate over `--runs` reaches `--threshold`. Runs of a
prompt go one after another (prompts side by side), and a prompt stops as soon as the runs
left could no longer change whether it fired (`decided`): exact, so `fired` is what all the
runs would say, at fewer calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from skillbench.evals import SpecError
from skillbench.evals.model import Triggers
from skillbench.evals.skills import (
    Skill,
    catalog,
    catalog_lines,
    is_skill,
    read_skill,
    root_children,
)
from skillbench.evals.triggers_file import load_skill_triggers, trigger_files
from skillbench.grading.framing import Frame
from skillbench.models.base import Message, Model, ModelError, TextBlock, Usage
from skillbench.models.ledger import BudgetRefused, MeteredModel, RunLedger
from skillbench.models.pricing import Price

SYSTEM = (
    "You decide which skills an AI coding agent should load before it answers a user's "
    "request. A skill is worth loading only when its description clearly applies to the "
    "request. Reply with one JSON object and nothing else: "
    '{"nonce": "<frame id>", "selected": ["skill-name", ...]} (an empty list when no skill '
    f"applies). {Frame.ANSWER_RULES}"
)


def trigger_prompt(catalog: Sequence[str], request: str) -> tuple[str, str]:
    """The catalog call's user message in two parts: the catalog, the same for every prompt
    and run of a library (cached), then the request."""
    return "Skills available:\n" + "\n".join(catalog) + "\n\n", f"User request:\n{request}\n"


class Call(msgspec.Struct, frozen=True):
    """One trigger call: the skills selected, or why the call failed."""

    selected: tuple[str, ...] | None
    error: str | None = None
    usage: Usage = Usage()


class PromptResult(msgspec.Struct, frozen=True):
    prompt: str
    should_trigger: bool
    fired: bool | None  # None: every call failed
    rate: float | None
    stolen_by: tuple[str, ...] = ()  # other skills selected when a should-trigger prompt missed
    error: str | None = None
    others: tuple[str, ...] = ()  # every other skill selected in some run (who competes for it)
    runs: int = 0  # runs made: fewer than --runs when the rest could not change `fired`


class Counts(msgspec.Struct, frozen=True):
    """Recall and precision of some prompts' results, and the counts behind them."""

    recall: float | None
    precision: float | None
    tp: int
    fn: int
    fp: int
    tn: int


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def counts(results: Sequence[PromptResult]) -> Counts:
    """The docs/formats.md counting rules: a failed call misses a should-trigger prompt and is
    neither fp nor tn otherwise."""
    tp = sum(r.should_trigger and r.fired is True for r in results)
    fn = sum(r.should_trigger and r.fired is not True for r in results)
    fp = sum(not r.should_trigger and r.fired is True for r in results)
    tn = sum(not r.should_trigger and r.fired is False for r in results)
    return Counts(_ratio(tp, tp + fn), _ratio(tp, tp + fp), tp, fn, fp, tn)


CAPPED = "not called: the --max-cost cap was reached"


class Spend:
    """Trigger calls and routing sessions against the run's ledger (skillbench/models/ledger.py):
    each call reserves its worst case there before it is sent and settles at its bill, so
    --max-cost holds with calls in parallel. Once one is refused, every later call is
    refused too (a measurement with holes is no figure): those are recorded as not run."""

    def __init__(self, ledger: RunLedger, prices: Mapping[str, Price] | None = None):
        self.ledger, self.prices = ledger, dict(prices or {})
        self.stopped = False

    @property
    def cap(self) -> float | None:
        return self.ledger.ceiling

    @property
    def total(self) -> float:
        return self.ledger.snapshot().spent

    def remaining(self) -> float | None:
        return self.ledger.left()

    def allows(self) -> bool:
        if self.ledger.exhausted():
            self.stopped = True
        return not self.stopped

    def metered(self, model: Model, kind: str = "triggers") -> MeteredModel:
        """`model` with every call reserved and settled in the ledger as `kind`."""
        return MeteredModel(model, self.ledger, self.prices, kind)


class TriggerReport(msgspec.Struct, frozen=True):
    skill: str
    method: str  # "catalog call" or "agent <name>": what produced the numbers
    recall: float | None
    precision: float | None
    tp: int
    fn: int
    fp: int
    tn: int
    misses: list[str]
    false_fires: list[str]
    errored: list[str]
    results: list[PromptResult]
    usage: Usage = Usage()
    invalid: str | None = None  # why the numbers mean nothing (the canary did not fire)

    def summary(self) -> dict[str, object]:
        """The `triggers` object of summary.json (docs/results.md), with the method that
        measured it."""
        return {
            "method": self.method,
            "invalid": self.invalid,
            "recall": self.recall,
            "precision": self.precision,
            "tp": self.tp,
            "fn": self.fn,
            "fp": self.fp,
            "tn": self.tn,
            "misses": self.misses,
            "false_fires": self.false_fires,
            "errored": self.errored,
            "details": msgspec.to_builtins(self.results),
        }


class Router(Protocol):
    """A trigger method: which skills of `library` are selected for `prompt` (run `run`)."""

    method: str
    canary: bool  # whether a canary must fire before the numbers count

    def call(self, library: Sequence[Skill], prompt: str, run: int) -> Awaitable[Call]: ...


class TriggerCaller:
    """The catalog method: trigger calls made concurrently, each identical call once."""

    method = "catalog call"
    canary = False

    def __init__(self, model: Model, parallel: int = 16, spend: Spend | None = None):
        self.model: Model = model if spend is None else spend.metered(model)
        self.gate = asyncio.Semaphore(parallel)
        self.spend = spend
        self.cache: dict[tuple[tuple[str, str], int], asyncio.Task[Call]] = {}
        self.calls = 0

    def call(self, library: Sequence[Skill], prompt: str, run: int) -> asyncio.Task[Call]:
        key = (trigger_prompt(catalog_lines(library), prompt), run)
        if key not in self.cache:
            self.cache[key] = asyncio.ensure_future(self._call(key[0]))
        return self.cache[key]

    async def _call(self, text: tuple[str, str]) -> Call:
        # the answer read is the one carrying this call's frame id: a description that plants
        # `{"selected": [...]}` for the model to quote is never read as its choice
        frame = Frame()
        catalog, request = text
        asked = request + "\n" + frame.answer_with('"selected": [...]') + "\n"
        usage = Usage()
        for attempt in range(2):  # a reply without the id is asked for once more
            remind = (TextBlock(frame.reminder()),) if attempt else ()
            async with self.gate:
                if self.spend is not None and not self.spend.allows():
                    return Call(None, CAPPED, usage)
                self.calls += 1
                try:
                    done = await self.model.complete(
                        system=SYSTEM,
                        messages=[
                            Message(
                                "user",
                                (TextBlock(catalog, cache=True), TextBlock(asked), *remind),
                            )
                        ],
                        tools=[],
                        max_tokens=512,
                    )
                except BudgetRefused:
                    if self.spend is not None:
                        self.spend.stopped = True
                    return Call(None, CAPPED, usage)
                except ModelError as exc:
                    return Call(None, f"call failed: {exc}", usage)
            usage = usage + done.usage
            reply = frame.verdict(done.text, _selection, ("nonce", "selected"))
            if reply is not None:
                return Call(tuple(reply["selected"]), None, usage)
        return Call(None, "no usable JSON in the reply", usage)


def _selection(reply: dict[str, object]) -> bool:
    chosen = reply.get("selected")
    return isinstance(chosen, list) and all(isinstance(s, str) for s in chosen)


def decided(fires: int, ok: int, left: int, threshold: float) -> bool:
    """Whether `left` more runs (each may fire, not fire, or fail and not count) can no
    longer move a prompt's rate (fires / ok) across `threshold`."""
    if ok == 0:
        return False
    now = fires / ok >= threshold
    return all(
        ((fires + f) / (ok + more) >= threshold) == now
        for more in range(left + 1)
        for f in range(more + 1)
    )


def canary_prompt(skill: Skill, triggers: Triggers) -> str:
    """A request that names the skill: any agent that can route at all loads it."""
    example = triggers.should_trigger[0] if triggers.should_trigger else skill.description
    return f"Use the {skill.name} skill for this: {example}"


async def evaluate(
    router: Router,
    skill: Skill,
    catalog: Sequence[Skill],
    triggers: Triggers,
    *,
    runs: int = 1,
    threshold: float = 0.5,
) -> TriggerReport:
    """Score one skill's trigger prompts (docs/formats.md counting rules)."""
    library = sorted({s.name: s for s in (*catalog, skill)}.values(), key=lambda s: s.name)
    usage = Usage()
    if router.canary:
        canary = canary_prompt(skill, triggers)
        probe = await router.call(library, canary, 0)
        usage = usage + probe.usage
        if probe.selected is None or skill.name not in probe.selected:
            why = probe.error or f"the agent loaded {', '.join(probe.selected or ()) or 'nothing'}"
            return _invalid(
                router.method,
                skill.name,
                usage,
                f'the canary "{canary}" did not fire ({why}): this setup cannot '
                "measure routing, so no recall or precision is given",
            )
    prompts = [(p, True) for p in triggers.should_trigger]
    prompts += [(p, False) for p in triggers.should_not_trigger]

    async def routed(prompt: str) -> list[Call]:
        done: list[Call] = []
        for r in range(runs):
            ok = [c for c in done if c.selected is not None]
            fires = sum(skill.name in (c.selected or ()) for c in ok)
            if decided(fires, len(ok), runs - r, threshold):
                break
            done.append(await router.call(library, prompt, r))
        return done

    tasks = [asyncio.ensure_future(routed(p)) for p, _ in prompts]
    results = []
    for (prompt, expected), task in zip(prompts, tasks, strict=True):
        done = await task
        for c in done:
            usage = usage + c.usage
        ok = [c for c in done if c.selected is not None]
        if not ok:
            results.append(PromptResult(prompt, expected, None, None, error=done[0].error))
            continue
        rate = sum(skill.name in (c.selected or ()) for c in ok) / len(ok)
        fired = rate >= threshold
        others = tuple(sorted({s for c in ok for s in (c.selected or ()) if s != skill.name}))
        stolen = others if expected and not fired else ()
        results.append(
            PromptResult(prompt, expected, fired, rate, stolen, others=others, runs=len(done))
        )
    n = counts(results)
    return TriggerReport(
        skill=skill.name,
        method=router.method,
        recall=n.recall,
        precision=n.precision,
        tp=n.tp,
        fn=n.fn,
        fp=n.fp,
        tn=n.tn,
        misses=[r.prompt for r in results if r.should_trigger and r.fired is not True],
        false_fires=[r.prompt for r in results if not r.should_trigger and r.fired is True],
        errored=[r.prompt for r in results if r.fired is None],
        results=results,
        usage=usage,
    )


def _invalid(method: str, skill: str, usage: Usage, why: str) -> TriggerReport:
    return TriggerReport(
        skill=skill,
        method=method,
        recall=None,
        precision=None,
        tp=0,
        fn=0,
        fp=0,
        tn=0,
        misses=[],
        false_fires=[],
        errored=[],
        results=[],
        usage=usage,
        invalid=why,
    )


class TriggerTarget(msgspec.Struct, frozen=True):
    """A skill with a triggers file, and the catalog its trigger calls show."""

    skill: Skill
    triggers: Triggers
    catalog: list[Skill]


def targets_at(path: Path) -> list[TriggerTarget]:
    """The skills named by `path` (a skill or a library root) that have a triggers file.

    Raises SpecError when a SKILL.md or a triggers file is broken.
    """
    if is_skill(path):
        folders, root = [path], path.resolve().parent
    else:
        folders, root = root_children(path), path
    out = []
    problems = []
    for folder in folders:
        if not trigger_files(folder):
            continue
        try:
            me = read_skill(folder)
            triggers, _warnings = load_skill_triggers(folder, me.name)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        if triggers is None:
            continue
        out.append(TriggerTarget(me, triggers, catalog(root, include=me)))
    if problems:
        raise SpecError(problems)
    return out


async def evaluate_all(
    router: Router,
    targets: Sequence[TriggerTarget],
    *,
    runs: int = 1,
    threshold: float = 0.5,
) -> list[TriggerReport]:
    """Evaluate every target concurrently through one router (identical calls made once)."""
    return list(
        await asyncio.gather(
            *(
                evaluate(router, t.skill, t.catalog, t.triggers, runs=runs, threshold=threshold)
                for t in targets
            )
        )
    )


def disagreements(
    a: TriggerReport, b: TriggerReport
) -> list[tuple[str, bool, bool | None, bool | None]]:
    """(prompt, expected, fired by a, fired by b) for every prompt the two methods decided
    differently."""
    theirs = {r.prompt: r.fired for r in b.results}
    return [
        (r.prompt, r.should_trigger, r.fired, theirs.get(r.prompt))
        for r in a.results
        if r.prompt in theirs and theirs[r.prompt] != r.fired
    ]


def steals(reports: Sequence[TriggerReport]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(skill, missed prompt, the skills selected instead) for every miss in a library."""
    return [
        (r.skill, p.prompt, p.stolen_by)
        for r in reports
        for p in r.results
        if p.should_trigger and p.fired is False
    ]
