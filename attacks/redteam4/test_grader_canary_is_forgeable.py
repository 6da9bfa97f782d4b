"""GC1 (BROKEN, medium): the grader's canary is predictable, so a skill can make any row it
would lose unscored.

grading.canary_text() names "a file named <sha256(expectations)[:16]>.canary": a pure function
of the expectation texts, which the skill's author wrote (evals/evals.json ships in the skill).
SKILL.md can tell the agent: "for tasks like X, create <token>.canary". The canary is then TRUE,
an honest grader says so, and grade() marks every expect check of that arm `infrastructure`
(after a retry): the row is unscored, never the loss it was. The eval's verdict is derived from
the remaining rows (a skill that loses 4 cases and wins 6 reports PASS, partial); a team with
allow-partial = true gates it PASS.

Here: a real sandbox, the candidate leaves the file, and a grader that answers truthfully about
the file list (scripted: canary passed exactly when the file is listed) grades a *failed*
expectation. Expected: the expectation fails (a loss). Observed: infrastructure=True, unscored.
Fix: a canary the material cannot satisfy (a secret per-call random token never derivable from
inputs, checked against a name absent from the listing), or a canary about the prompt rather
than the workspace; and a passed canary should not excuse the arm (count it as failed for the
candidate, or rerun with a fresh canary).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from skillbench.evals.model import Check
from skillbench.grading import canary_text, grade, numbered
from skillbench.models import resolve_model


def truthful_grader(tmp_path: Path, monkeypatch, texts: list[str], token: str) -> str:
    def reply(canary_seen: bool) -> str:
        rows = [
            {"id": i, "passed": canary_seen and t.endswith(".canary"), "evidence": "listing"}
            for i, t in numbered(texts)
        ]
        return json.dumps({"results": rows})

    rules = [
        {"when": f"== {token}\\.canary", "replies": [reply(True)] * 4},
        {"when": "Expectations", "replies": [reply(False)] * 4},
    ]
    (tmp_path / "grader.yaml").write_text(yaml.safe_dump({"rules": rules}))
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(tmp_path))
    return "scripted/grader"


@pytest.mark.anyio
async def test_the_skill_author_plants_the_canary(tmp_path, monkeypatch, provider, spec):
    texts = ["The report lists every failing test by name"]
    # what the skill's author computes from their own evals.json, offline
    token = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    assert canary_text(texts) == f"The workspace contains a file named {token}.canary"
    ref = truthful_grader(tmp_path, monkeypatch, texts, token)
    box = await provider.create(spec)
    try:
        await box.write_file(f"{box.workdir}/{token}.canary", b"")  # the agent, told by SKILL.md
        results, _ = await grade(
            resolve_model(ref), [Check("expect", texts[0])], task="t", trace="", sandbox=box
        )
    finally:
        await box.close()
    # expected: a plain failed expectation (the candidate's loss)
    assert [(r.passed, r.infrastructure) for r in results] == [(False, False)], results
