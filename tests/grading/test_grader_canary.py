"""The grader's canary cannot be planted (redteam4 GC1): it names a file with a random name
drawn per grader call after the arm ended, so a skill that tells the agent to leave the file
(computed, on the old code, from the expectations the skill's author wrote) cannot turn an
honest grader's failed expectation into an unscored row."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from skillbench.evals.model import Check
from skillbench.grading.expect import canary_text, grade, numbered, prompt, workspace_files
from skillbench.grading.framing import Frame
from skillbench.models import resolve_model
from skillbench.models.base import text_of
from tests.helpers import grader_reply

CANARY = "(the canary).canary"


def truthful_rule() -> str:
    return r"(?s)a file named (\w+)\.canary.*== \1\.canary "


def truthful_grader(tmp_path: Path, monkeypatch, texts: list[str]) -> str:
    """A grader that answers truthfully about the file listing: the canary is met exactly
    when the file it names is listed (a regex backreference), every expectation fails."""

    def reply(canary_met: bool) -> str:
        return grader_reply(
            [(i, canary_met and t == CANARY, "listing") for i, t in numbered(texts, CANARY)]
        )

    rules = [
        {"when": truthful_rule(), "replies": [reply(True)] * 4},
        {"when": "Expectations", "replies": [reply(False)] * 4},
    ]
    (tmp_path / "grader.yaml").write_text(yaml.safe_dump({"rules": rules}))
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(tmp_path))
    return "scripted/grader"


def test_each_call_draws_a_fresh_canary_and_ids_stay_fixed() -> None:
    texts = ["The report lists every failing test by name", "It is short"]
    drawn = {canary_text() for _ in range(50)}
    assert len(drawn) == 50 and all(t.endswith(".canary") for t in drawn)
    orders = {tuple(i for i, t in numbered(texts, c) if t == c) for c in drawn}
    assert len(orders) == 1  # the canary's place depends on the expectations alone
    # the truthful grader's rule sees the canary's file exactly when it is listed
    rule = truthful_rule()
    canary = canary_text()
    name = canary.rsplit(" ", 1)[1]
    listed = text_of(prompt(Frame(), "t", numbered(texts, canary), "", f"== {name} (0 bytes)\n"))
    other = text_of(
        prompt(Frame(), "t", numbered(texts, canary), "", "== 0123abcd.canary (0 bytes)\n")
    )
    assert re.search(rule, listed) and not re.search(rule, other)


@pytest.mark.anyio
async def test_the_skill_author_cannot_plant_the_canary(tmp_path, monkeypatch, provider, spec):
    texts = ["The report lists every failing test by name"]
    old = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]  # the old, derived name
    ref = truthful_grader(tmp_path, monkeypatch, texts)
    box = await provider.create(spec)
    try:
        await box.write_file(f"{box.workdir}/{old}.canary", b"")  # the agent, told by SKILL.md
        results, _ = await grade(
            resolve_model(ref),
            [Check("expect", texts[0])],
            task="t",
            trace="",
            files=await workspace_files(box),
        )
    finally:
        await box.close()
    assert [(r.passed, r.infrastructure) for r in results] == [(False, False)], results
