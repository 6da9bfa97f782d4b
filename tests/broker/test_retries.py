"""What counts as a retry of a call, for a CLI whose retries only the broker caps (OpenCode):
the same question, however the CLI rewrote the answer it already holds."""

from __future__ import annotations

import json
from typing import Any

from skillbench.broker.retries import Tries, question

ASK = {"role": "user", "content": [{"type": "text", "text": "Create hello.txt"}]}
BODY = {"model": "m", "max_tokens": 8, "system": "s", "messages": [ASK]}


def asked(**change: Any) -> bytes:
    return question(json.dumps({**BODY, **change}).encode())


def test_a_retry_with_the_partial_answer_appended_asks_the_same_question() -> None:
    partial = {"role": "assistant", "content": [{"type": "text", "text": "Partial"}]}
    more = {"role": "assistant", "content": [{"type": "text", "text": "Partial "}, {"text": "x"}]}
    marked = {**ASK, "content": [{**ASK["content"][0], "cache_control": {"type": "ephemeral"}}]}
    same = {asked(), asked(messages=[ASK, partial]), asked(messages=[ASK, more])}
    assert same == {asked(messages=[marked])}  # (a cache breakpoint moved: no other question)


def test_a_new_turn_or_another_setting_is_another_question() -> None:
    reply = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}],
    }
    others = [
        asked(messages=[ASK, {"role": "assistant", "content": "a"}, reply]),
        asked(system="another"),
        asked(max_tokens=9),
        question(b"not json"),
        question(b"[1]"),
        question(b"[" * 100_000),
    ]
    assert len({asked(), *others}) == 1 + len(others)


def test_an_answer_ends_a_questions_tries_and_each_question_has_its_own() -> None:
    tries = Tries(kept=2)
    one, two, three = (question(x) for x in (b"1", b"2", b"3"))
    tries.ended(one, failed=True)
    tries.ended(one, failed=True)
    tries.ended(two, failed=True)
    assert (tries.of(one), tries.of(two)) == (2, 1)
    tries.ended(two, failed=False)
    assert tries.of(two) == 0
    tries.ended(three, failed=True)
    tries.ended(two, failed=True)  # kept=2: the longest-untried (one) is forgotten
    assert (tries.of(one), tries.of(two), tries.of(three)) == (0, 1, 1)
