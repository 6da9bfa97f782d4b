"""skill-creator's result files in a skillbench run folder: grading.json per run and
benchmark.json in the shapes its viewer and aggregate_benchmark.py read, and its figures in
the report (real sandboxes, the scripted driver and a scripted grader)."""

from __future__ import annotations

import json
from pathlib import Path

from skillbench.grading.expect import numbered
from tests.evals.test_foreign_evals import evals_json


def test_a_run_folder_holds_grading_and_benchmark_json(fake, tmp_path: Path, capsys) -> None:
    from tests.helpers import BASE, CAND, conv, grader_reply, run_eval, skill, write_file

    texts = ["The greeting names Ada", "The greeting is in greeting.txt"]
    doc = evals_json([{"id": 4, "prompt": "Greet the person Ada", "expectations": texts}])
    folder = skill(tmp_path, {"evals/evals.json": doc})

    def verdict(passes: set[str]) -> str:
        return grader_reply(
            [(i, t in passes, f"seen {i}") for i, t in numbered(texts, "(the canary).canary")]
        )

    fake(
        {
            "rules": [
                {"when": "(?s)## Expectations.*Hello Ada-7731", "replies": [verdict(set(texts))]},
                {"when": "## Expectations", "replies": [verdict({texts[1]})]},
            ],
            "conversations": [
                conv(
                    CAND,
                    "Greet the person",
                    write_file("greeting.txt", "Hello Ada-7731"),
                    {"text": "Done"},
                ),
                conv(BASE, "Greet the person", write_file("greeting.txt", "Hi"), {"text": "ok"}),
            ],
        }
    )
    out = tmp_path / "run"
    _, lines, _ = run_eval(capsys, folder, out)
    with_skill = json.loads(
        (out / "skill-creator/eval-4/with_skill/run-1/grading.json").read_text()
    )
    without = json.loads(
        (out / "skill-creator/eval-4/without_skill/run-1/grading.json").read_text()
    )
    assert [(e["text"], e["passed"]) for e in with_skill["expectations"]] == [
        (texts[0], True),
        (texts[1], True),
    ]
    assert all(e["evidence"].startswith("seen ") for e in with_skill["expectations"])
    assert with_skill["summary"] == {"passed": 2, "failed": 0, "total": 2, "pass_rate": 1.0}
    assert without["summary"] == {"passed": 1, "failed": 1, "total": 2, "pass_rate": 0.5}
    bench = json.loads((out / "benchmark.json").read_text())
    assert {(r["eval_id"], r["configuration"], r["run_number"]) for r in bench["runs"]} == {
        (4, "with_skill", 1),
        (4, "without_skill", 1),
    }
    rs = bench["run_summary"]
    assert rs["with_skill"]["pass_rate"]["mean"] == 1.0
    assert rs["without_skill"]["pass_rate"]["mean"] == 0.5
    assert rs["delta"]["pass_rate"] == "+0.50"
    assert (
        "skill-creator pass rate: with_skill 1.00 ± 0.00 (1 runs) · "
        "without_skill 0.50 ± 0.00 (1 runs) · delta +0.50"
    ) in lines, lines


def test_stddev_is_the_sample_stddev_aggregate_benchmark_uses() -> None:
    from skillbench.report.skill_creator import stats

    assert stats([1.0, 0.5]) == {"mean": 0.75, "stddev": 0.3536, "min": 0.5, "max": 1.0}
    assert stats([0.5])["stddev"] == 0.0
