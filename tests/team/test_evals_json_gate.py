"""Issue 33's done-when: a skill carrying only skill-creator's evals/evals.json and a trigger
JSON file is checked, evaluated, trigger-measured and gated with no import and no edits (real
sandboxes, the scripted driver and a scripted grader reply from the fake model server)."""

from __future__ import annotations

import json
from pathlib import Path

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.grading.expect import numbered
from tests.engine.test_triggers import rule
from tests.helpers import BASE, CAND, conv, grader_reply, run_eval, skill, write_file

EXPECT = "Greets the visitor"
TRIGGERS = [
    {"query": "please greet the new hire", "should_trigger": True},
    {"query": "rename this variable", "should_trigger": False},
]


def test_an_evals_json_only_skill_is_checked_evaluated_measured_and_gated(
    fake, tmp_path: Path, capsys
) -> None:
    evals = [
        {
            "id": i,
            "prompt": f"Greet the visitor number {i}",
            "expectations": [EXPECT],
        }
        for i in range(1, 6)
    ]
    folder = skill(
        tmp_path,
        {
            "evals/evals.json": json.dumps({"skill_name": "greeter", "evals": evals}, indent=2),
            "evals/trigger-evals.json": json.dumps(TRIGGERS),
        },
    )
    before = digest(folder)
    files_before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))

    def verdict(passed: bool) -> str:
        # the grader is shown the expectation and the canary (false by construction)
        return grader_reply(
            [
                (i, passed and t == EXPECT, "greeting.txt")
                for i, t in numbered([EXPECT], "(the canary).canary")
            ]
        )

    server = fake(
        {
            "rules": [
                {"when": "(?s)## Expectations.*Hello visitor", "replies": [verdict(True)]},
                {"when": "## Expectations", "replies": [verdict(False)]},
                rule(
                    "please greet the new hire", '{"nonce": "$FRAME_ID", "selected": ["greeter"]}'
                ),
                rule("rename this variable", '{"nonce": "$FRAME_ID", "selected": []}'),
            ],
            "conversations": [
                conv(
                    CAND,
                    "Greet the visitor",
                    write_file("greeting.txt", "Hello visitor"),
                    {"text": "Done"},
                    loop=True,
                ),
                conv(BASE, "Greet the visitor", {"text": "Hi"}, loop=True),
            ],
        }
    )
    assert main(["check", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "checked 1 skill: 0 errors, 0 warnings"

    code, lines, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 0, lines
    assert summary["verdict"] == "PASS"
    assert sorted(r["case"] for r in summary["rows"]) == [f"eval-{i}" for i in range(1, 6)]
    assert all((r["outcome"], r["decided_by"]) == ("win", "checks") for r in summary["rows"])
    t = summary["triggers"]
    assert (t["tp"], t["fn"], t["fp"], t["tn"]) == (1, 0, 0, 1)

    assert main(["gate", str(folder), "--allow-endpoint", server.url]) == 0
    assert capsys.readouterr().out.startswith("gate passed: greeter: PASS")
    # no import, no edits: the skill's bytes and files are as they were
    assert digest(folder) == before
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == files_before
