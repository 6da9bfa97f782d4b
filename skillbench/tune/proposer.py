"""The proposer (issue 25, part 2): one model call that writes a better description.

It sees the SKILL.md body, the description to improve, the sibling skills' descriptions (the
library the agent chooses among) and how the train prompts were routed, never a validation or
test prompt: what it writes is then judged on prompts it could not have fitted. Its reply is
read as the JSON object `{"nonce": <frame id>, "description": ...}` that carries the call's
frame id (grading/framing.py; prose around it tolerated), never a description quoted from a
sibling skill; a description
outside the front matter's limits is sent back once with the reason.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import msgspec

from skillbench.engine.triggers import Counts, PromptResult, Spend
from skillbench.evals.skills import MAX_DESCRIPTION, Skill
from skillbench.grading.framing import Frame
from skillbench.models.base import Message, Model, ModelError, TextBlock, Usage
from skillbench.models.ledger import BudgetRefused

SYSTEM = (
    "You write the description of an agent skill: the text an AI coding agent reads, beside "
    "the descriptions of every other skill in its library, to decide whether to load this "
    "skill for a user's request. A good description says what the skill does and when to "
    "use it, in the words users' requests use, so the agent loads it for the requests it "
    "serves and for no others, and tells it apart from its neighbours. Reply with one JSON "
    'object and nothing else: {"nonce": "<frame id>", "description": "..."}. '
    f"{Frame.ANSWER_RULES}"
)
BODY_CAP = 12_000  # characters of the SKILL.md body shown
ATTEMPTS = 2  # a reply outside the limits is sent back once


class Proposal(msgspec.Struct, frozen=True):
    """What the proposer was shown and what it answered (proposals/NN.json)."""

    description: str | None  # None: no usable description in any reply
    request: str
    replies: list[str]
    rejected: list[str]  # why each unusable reply was refused
    usage: Usage = Usage()


def check_description(text: str) -> str | None:
    """Why `text` is not a usable description (the front matter's limits), or None."""
    if not text.strip():
        return "the description is empty"
    # str.splitlines: YAML also breaks lines at U+2028, U+0085 and the like
    if len(text.splitlines()) > 1 or any(unicodedata.category(c) == "Cc" for c in text):
        return "the description is more than one line, or has control characters"
    if len(text) > MAX_DESCRIPTION:
        return f"the description is {len(text)} characters; the limit is {MAX_DESCRIPTION}"
    if "<" in text or ">" in text:
        return "the description has angle brackets (< or >), which skill loaders refuse"
    return None


def _figure(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _prompt_lines(results: Sequence[PromptResult], name: str) -> list[str]:
    groups: dict[str, list[str]] = {"hit": [], "miss": [], "false": [], "quiet": []}
    for r in results:
        if r.should_trigger and r.fired is True:
            groups["hit"].append(f'- "{r.prompt}"')
        elif r.should_trigger:
            why = (
                "the call failed"
                if r.fired is None
                else (f"taken by: {', '.join(r.stolen_by)}" if r.stolen_by else "nothing loaded")
            )
            groups["miss"].append(f'- "{r.prompt}" ({why})')
        elif r.fired is True:
            also = f" (also loaded: {', '.join(r.others)})" if r.others else ""
            groups["false"].append(f'- "{r.prompt}"{also}')
        elif r.fired is False:
            groups["quiet"].append(f'- "{r.prompt}"')
    heads = {
        "miss": f"MISSED: should have loaded {name}, did not",
        "false": f"FALSE FIRE: loaded {name}, should not have",
        "hit": f"Right: loaded {name}",
        "quiet": f"Right: did not load {name}",
    }
    out = []
    for key in ("miss", "false", "hit", "quiet"):
        if groups[key]:
            out += [f"{heads[key]} ({len(groups[key])}):", *groups[key]]
    return out


def proposer_prompt(
    skill: Skill,
    body: str,
    current: str,
    siblings: Sequence[Skill],
    train: Sequence[PromptResult],
    history: Sequence[tuple[str, Counts]],
    *,
    runs: int,
    threshold: float,
) -> str:
    """The one user message: body, current description, siblings, train results, history."""
    if len(body) > BODY_CAP:
        body = body[:BODY_CAP] + f"\n[… {len(body) - BODY_CAP} more characters]"
    others = [f"- {s.name}: {' '.join(s.description.split())}" for s in siblings]
    tried = [
        f'- recall {_figure(c.recall)}, precision {_figure(c.precision)}: "{d}"' for d, c in history
    ]
    return "\n".join(
        [
            f"Skill: {skill.name}",
            "",
            "Its description now:",
            current,
            "",
            "Its SKILL.md (what the agent reads once it loads the skill):",
            body.strip(),
            "",
            "The other skills of its library (the agent chooses among all of them):",
            *(others or ["(none)"]),
            "",
            f"How the description now routed the training requests ({runs} run(s) each; "
            f"loaded means in at least {threshold:g} of the runs):",
            *_prompt_lines(train, skill.name),
            "",
            "Descriptions tried so far, with their figures on these requests (recall: the "
            "share of should-load requests that loaded it; precision: the share of its loads "
            "that were right):",
            *tried,
            "",
            "Write a better description. It must be one line, at most "
            f"{MAX_DESCRIPTION} characters, without angle brackets. Describe the kind of "
            "request the skill serves rather than copying these requests: it is judged on "
            "requests you have not seen.",
        ]
    )


async def propose(model: Model, request: str, spend: Spend | None = None) -> Proposal:
    """Ask for a description; a reply outside the limits is sent back once with the reason.
    A failed call is a proposal without a description (the round says why)."""
    # the answer read carries this call's frame id: a description quoted from a sibling
    # skill is never read as the model's proposal
    frame = Frame()
    answer = frame.answer_with('"description": "..."')
    messages = [Message("user", (TextBlock(f"{request}\n\n{answer}"),))]
    replies: list[str] = []
    rejected: list[str] = []
    usage = Usage()
    for _ in range(ATTEMPTS):
        if spend is not None and not spend.allows():
            break
        try:
            done = await model.complete(system=SYSTEM, messages=messages, tools=[], max_tokens=1024)
        except BudgetRefused:  # the run's ledger could not cover it: not sent
            if spend is not None:
                spend.stopped = True
            break
        except ModelError as exc:
            rejected.append(f"the proposer call failed: {exc}")
            break
        usage = usage + done.usage
        replies.append(done.text)
        reply = frame.verdict(
            done.text, lambda o: isinstance(o.get("description"), str), ("nonce", "description")
        )
        if reply is not None:
            found = reply["description"].strip()
            why = check_description(found)
        else:
            found = None
            why = f'the reply has no JSON object {{"nonce": "{frame.nonce}", "description": ...}}'
        if why is None:
            return Proposal(found, request, replies, rejected, usage)
        rejected.append(why)
        messages += [
            Message("assistant", (TextBlock(done.text),)),
            Message(
                "user",
                (
                    TextBlock(
                        f"That cannot be used: {why}. Reply again with one JSON object. {answer}"
                    ),
                ),
            ),
        ]
    return Proposal(None, request, replies, rejected, usage)
