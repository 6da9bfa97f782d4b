"""The rubric judge: one tool-free call with the task, the rubric and the tail of each arm's
transcript labelled A and B, asked twice with the order swapped. A row is decided only when both
answers agree; otherwise it is a tie marked `judge-split`. The transcripts are the agent's
words, so each call frames them with a fresh nonce and reads its verdict back through that
frame (`skillbench.grading.framing`): a candidate cannot add a rubric or a verdict of its own. The
system prompt, the task and the rubric come first and are the same for every call on a case:
the prefix a provider caches (docs/agents.md, prompt caching)."""

from __future__ import annotations

import random
import re

import msgspec

from skillbench.grading.framing import Frame
from skillbench.models.base import Message, Model, ModelError, TextBlock, Usage
from skillbench.results.verdict import Outcome

TAIL_CHARS = 6000
UNPARSEABLE_RETRIES = 1

SYSTEM = (
    "You are an impartial judge comparing two attempts, A and B, at the same task by an AI "
    "agent working alone in a sandbox. Judge only by the rubric. Ignore the order and the "
    "length of the attempts. Reply with one JSON object and nothing else: "
    '{"nonce": "<the frame id>", "winner": "A" | "B" | "tie", "reason": "<one sentence>"}'
)


class JudgeResult(msgspec.Struct, frozen=True):
    """`outcome` from the candidate's side: win, loss or tie, or unscored when the judge gave
    no answer (refused, unparseable, an error: never a tie, which is evidence); `decided_by`
    says how."""

    outcome: Outcome  # win | loss | tie | unscored
    decided_by: str  # judge | judge-split | judge-refused | judge-unparseable | judge-error
    reasons: tuple[str, ...] = ()
    candidate_first: bool = True
    usage: Usage = Usage()
    winners: tuple[str, ...] = ()  # each order's answer: A | B | tie (for position bias)


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last `limit` characters of a transcript's text."""
    return text if len(text) <= limit else "[... earlier part cut ...]\n" + text[-limit:]


def prompt(frame: Frame, task: str, rubric: str, a: str, b: str) -> tuple[TextBlock, TextBlock]:
    """The user message: the task and the rubric, the same for every call on a case and
    marked for the prompt cache, then this call's frame id, the attempts and the question."""
    stable = f"## Task given to the agent\n{task}\n\n## Rubric\n{rubric}\n\n"
    asked = (
        f"{frame.stamp()}\n\n"
        f"## Attempt A (transcript tail)\n{frame.block('ATTEMPT_A', tail(a))}\n\n"
        f"## Attempt B (transcript tail)\n{frame.block('ATTEMPT_B', tail(b))}\n\n"
        f'Which attempt better satisfies the rubric? Answer {{"nonce": "{frame.nonce}", '
        '"winner": "A" | "B" | "tie", "reason": "..."}.'
    )
    return TextBlock(stable, cache=True), TextBlock(asked)


def _winner(reply: dict) -> str:
    return {"a": "A", "b": "B", "tie": "tie"}.get(str(reply.get("winner", "")).strip().lower(), "")


class _Answer(msgspec.Struct, frozen=True):
    winner: str | None  # "A" | "B" | "tie"; None when unusable
    problem: str | None  # refused | unparseable | error
    reason: str
    usage: Usage


async def _ask(model: Model, task: str, rubric: str, a: str, b: str) -> _Answer:
    frame = Frame()
    content: tuple[TextBlock, ...] = prompt(frame, task, rubric, a, b)
    usage = Usage()
    for attempt in range(1 + UNPARSEABLE_RETRIES):
        if attempt:  # the first reply carried no verdict with the frame id: say so, once
            content = (*prompt(frame, task, rubric, a, b), TextBlock(frame.reminder()))
        try:
            done = await model.complete(
                system=f"{SYSTEM}\n\n{Frame.RULES}",
                messages=[Message("user", content)],
                tools=[],
                max_tokens=1024,
            )
        except ModelError as exc:
            return _Answer(None, "error", str(exc), usage)
        usage = usage + done.usage
        if done.stop_reason == "refusal":
            return _Answer(None, "refused", done.text[:300], usage)
        reply = frame.verdict(done.text, lambda o: bool(_winner(o)), ("nonce", "winner")) or {}
        winner = _winner(reply)
        if winner:
            return _Answer(winner, None, str(reply.get("reason", ""))[:500], usage)
    return _Answer(None, "unparseable", done.text[:300], usage)


async def judge(
    model: Model, *, task: str, rubric: str, candidate: str, opponent: str, rng: random.Random
) -> JudgeResult:
    """Compare the candidate's transcript text with the opponent's, in both orders."""
    candidate_first = rng.random() < 0.5
    orders = [candidate_first, not candidate_first]
    answers = []
    for cand_is_a in orders:
        a, b = (candidate, opponent) if cand_is_a else (opponent, candidate)
        answers.append(await _ask(model, task, rubric, a, b))
    usage = answers[0].usage + answers[1].usage
    reasons = tuple(a.reason for a in answers)
    for problem in ("error", "refused", "unparseable"):
        if any(a.problem == problem for a in answers):
            return JudgeResult("unscored", f"judge-{problem}", reasons, candidate_first, usage)
    winners = tuple(str(a.winner) for a in answers)
    sides = [_side(a.winner, cand_is_a) for a, cand_is_a in zip(answers, orders, strict=True)]
    if sides[0] != sides[1]:
        return JudgeResult("tie", "judge-split", reasons, candidate_first, usage, winners)
    return JudgeResult(sides[0], "judge", reasons, candidate_first, usage, winners)


def _side(winner: str | None, cand_is_a: bool) -> Outcome:
    if winner == "tie":
        return "tie"
    return "win" if (winner == "A") == cand_is_a else "loss"


# A judge rates its own family's answers higher (self-preference); vendor lines count as one.
_FAMILIES = ((re.compile(r"claude"), "Claude"), (re.compile(r"(gpt|o\d|chatgpt|codex)"), "GPT"))


def shared_family(agent_model: str, judge_model: str) -> str | None:
    """The model family the agent and the judge share (`anthropic/claude-sonnet-4-6` and
    `anthropic/claude-opus-4-1` are both Claude), or None; a scripted driver has none."""

    def family(ref: str) -> str | None:
        provider, _, name = ref.partition("/")
        if provider == "scripted" or not name:
            return None
        name = name.lower().rsplit("/", 1)[-1]
        for pattern, found in _FAMILIES:
            if pattern.match(name):
                return found
        lead = re.match(r"[a-z]+", name)
        return lead.group(0) if lead else None

    mine = family(agent_model)
    return mine if mine is not None and mine == family(judge_model) else None


def family_warning(agent_model: str, judge_model: str) -> str | None:
    """The warning the judge line carries when judge and agent share a family."""
    found = shared_family(agent_model, judge_model)
    if found is None:
        return None
    return (
        f"warning: the judge and the agent are both {found} models, and a judge favours its "
        "own family's answers; set --judge-model to another family"
    )
