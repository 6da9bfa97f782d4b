"""The trigger engine (design §4): does the skill get picked for the right requests?

For every prompt of `evals/triggers.yaml`: one tool-free model call showing the catalog of the
library root that holds the skill (the skill under test always in it) and the request, asking
for `{"selected": [...]}`. The skill fired when `selected` holds its exact name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import msgspec

from skillbench.jsonreply import first_json_object
from skillbench.models.base import Message, Model, ModelError, TextBlock, Usage
from skillbench.skills import Skill, catalog, catalog_lines, is_skill, read_skill, root_children
from skillbench.spec import SpecError, load_triggers
from skillbench.spec.model import Triggers

SYSTEM = (
    "You decide which skills an AI coding agent should load before it answers a user's "
    "request. A skill is worth loading only when its description clearly applies to the "
    "request. Reply with one JSON object and nothing else: "
    '{"selected": ["skill-name", ...]} (an empty list when no skill applies).'
)


def trigger_prompt(catalog: Sequence[str], request: str) -> str:
    return "Skills available:\n" + "\n".join(catalog) + f"\n\nUser request:\n{request}\n"


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


class TriggerReport(msgspec.Struct, frozen=True):
    skill: str
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

    def summary(self) -> dict[str, object]:
        """The `triggers` object of summary.json (design §7)."""
        return {"recall": self.recall, "precision": self.precision, "tp": self.tp,
                "fn": self.fn, "fp": self.fp, "tn": self.tn, "misses": self.misses,
                "false_fires": self.false_fires, "errored": self.errored,
                "details": msgspec.to_builtins(self.results)}  # fmt: skip


class TriggerCaller:
    """Makes trigger calls concurrently, each identical call once per run."""

    def __init__(self, model: Model, parallel: int = 16):
        self.model = model
        self.gate = asyncio.Semaphore(parallel)
        self.cache: dict[tuple[str, int], asyncio.Task[Call]] = {}
        self.calls = 0

    def call(self, text: str, run: int) -> asyncio.Task[Call]:
        key = (text, run)
        if key not in self.cache:
            self.cache[key] = asyncio.ensure_future(self._call(text))
        return self.cache[key]

    async def _call(self, text: str) -> Call:
        async with self.gate:
            self.calls += 1
            try:
                done = await self.model.complete(
                    system=SYSTEM, messages=[Message("user", (TextBlock(text),))], tools=[],
                    max_tokens=512,
                )  # fmt: skip
            except ModelError as exc:
                return Call(None, f"call failed: {exc}")
        reply = first_json_object(done.text)
        chosen = None if reply is None else reply.get("selected")
        if not isinstance(chosen, list) or not all(isinstance(s, str) for s in chosen):
            return Call(None, "no usable JSON in the reply", done.usage)
        return Call(tuple(chosen), None, done.usage)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


async def evaluate(
    caller: TriggerCaller,
    skill: Skill,
    catalog: Sequence[Skill],
    triggers: Triggers,
    *,
    runs: int = 1,
    threshold: float = 0.5,
) -> TriggerReport:
    """Score one skill's trigger prompts (design §4 counting rules)."""
    lines = catalog_lines(
        sorted({s.name: s for s in (*catalog, skill)}.values(), key=lambda s: s.name)
    )
    prompts = [(p, True) for p in triggers.should_trigger]
    prompts += [(p, False) for p in triggers.should_not_trigger]
    tasks = [[caller.call(trigger_prompt(lines, p), r) for r in range(runs)] for p, _ in prompts]
    results = []
    usage = Usage()
    for (prompt, expected), calls in zip(prompts, tasks, strict=True):
        done = [await t for t in calls]
        for c in done:
            usage = usage + c.usage
        ok = [c for c in done if c.selected is not None]
        if not ok:
            results.append(PromptResult(prompt, expected, None, None, error=done[0].error))
            continue
        rate = sum(skill.name in (c.selected or ()) for c in ok) / len(ok)
        fired = rate >= threshold
        stolen = sorted({s for c in ok for s in (c.selected or ()) if s != skill.name})
        results.append(PromptResult(prompt, expected, fired, rate,
                                    tuple(stolen) if expected and not fired else ()))  # fmt: skip
    tp = sum(r.should_trigger and r.fired is True for r in results)
    fn = sum(r.should_trigger and r.fired is not True for r in results)  # a failed call misses
    fp = sum(not r.should_trigger and r.fired is True for r in results)
    tn = sum(not r.should_trigger and r.fired is False for r in results)
    return TriggerReport(
        skill=skill.name, recall=_ratio(tp, tp + fn), precision=_ratio(tp, tp + fp),
        tp=tp, fn=fn, fp=fp, tn=tn,
        misses=[r.prompt for r in results if r.should_trigger and r.fired is not True],
        false_fires=[r.prompt for r in results if not r.should_trigger and r.fired is True],
        errored=[r.prompt for r in results if r.fired is None], results=results, usage=usage,
    )  # fmt: skip


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
        if not (folder / "evals" / "triggers.yaml").is_file():
            continue
        try:
            me = read_skill(folder)
            triggers, _warnings = load_triggers(folder / "evals" / "triggers.yaml", me.name)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        out.append(TriggerTarget(me, triggers, catalog(root, include=me)))
    if problems:
        raise SpecError(problems)
    return out


async def evaluate_all(
    model: Model,
    targets: Sequence[TriggerTarget],
    *,
    runs: int = 1,
    threshold: float = 0.5,
    parallel: int = 16,
) -> list[TriggerReport]:
    """Evaluate every target concurrently through one caller (identical calls made once)."""
    caller = TriggerCaller(model, parallel)
    return list(await asyncio.gather(*(
        evaluate(caller, t.skill, t.catalog, t.triggers, runs=runs, threshold=threshold)
        for t in targets
    )))  # fmt: skip


def steals(reports: Sequence[TriggerReport]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(skill, missed prompt, the skills selected instead) for every miss in a library."""
    return [(r.skill, p.prompt, p.stolen_by) for r in reports for p in r.results
            if p.should_trigger and p.fired is False]  # fmt: skip
