"""Scoring, checks on transcripts, and the judge's decision rules (no sandbox needed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from skillbench.checks import CheckResult, run_checks
from skillbench.engine.records import RowRecord, SessionRecord, Unit
from skillbench.engine.score import compare, row_by_checks, verdict, why
from skillbench.engine.stats import sign_test
from skillbench.evals.model import Check
from skillbench.jsonreply import first_json_object
from skillbench.judge import judge, tail
from skillbench.models import resolve_model
from skillbench.transcript import Transcript


def rows(*spec: tuple[str, str]) -> list[RowRecord]:
    return [
        RowRecord(case=f"c{i}", rep=1, opponent="baseline", outcome=o, decided_by=d, arms={})
        for i, (o, d) in enumerate(spec)
    ]


@pytest.mark.parametrize(
    ("w", "l", "p"),
    [(5, 1, 0.21875), (0, 0, 1.0), (1, 0, 1.0), (6, 0, 0.03125), (3, 3, 1.0), (10, 2, 0.0385742)],
)
def test_exact_two_sided_sign_test(w: int, l: int, p: float) -> None:  # noqa: E741
    assert sign_test(w, l) == pytest.approx(p, abs=1e-6)


@pytest.mark.parametrize(
    ("w", "l", "t", "expected"),
    [
        (1, 0, 2, "PASS"),
        (1, 0, 3, "NEUTRAL"),
        (0, 1, 2, "FAIL"),
        (0, 1, 3, "NEUTRAL"),
        (5, 1, 3, "PASS"),
        (2, 2, 0, "NEUTRAL"),
        (0, 0, 0, "NEUTRAL"),
    ],
)
def test_verdict_boundaries_in_integers(w: int, l: int, t: int, expected: str) -> None:  # noqa: E741
    c = compare(rows(*[("win", "checks")] * w, *[("loss", "checks")] * l, *[("tie", "checks")] * t))
    assert (c.win, c.loss, c.tie) == (w, l, t)
    assert verdict(c) == expected


def test_design_example_figures() -> None:
    c = compare(rows(*[("win", "checks")] * 5, ("loss", "checks"), *[("tie", "checks")] * 3))
    assert round(c.net_lift * 100) == 44 and f"{c.sign_p:.3f}" == "0.219"


def test_why_lines() -> None:
    assert why(
        rows(("win", "checks"), ("win", "checks"), ("tie", "checks"), ("tie", "judge-split"))
    ) == ("wins on execution checks; 2 ties (1 judge-split)")
    assert why(rows(("loss", "judge"), ("tie", "unscored"))) == (
        "loses on the judge's rubric; 1 unscored (infrastructure errors)"
    )
    assert why(rows(("win", "checks"), ("loss", "judge"))) == (
        "no net difference on execution checks and the judge's rubric"
    )
    assert why([]) == "nothing could be scored"


def session(outcome: str, passed: list[bool], unit: str = "u") -> SessionRecord:
    checks = {unit: [CheckResult(f"c{i}", p) for i, p in enumerate(passed)]}
    return SessionRecord(key="k", session=unit, arm="x", rep=1, outcome=outcome, checks=checks)


def test_row_rules_in_order() -> None:
    unit, judged = Unit("u", "u"), Unit("u", "u", judge=True)
    ok, bad, err = session("pass", [True]), session("fail", [False]), session("error", [])
    assert row_by_checks(unit, 1, "baseline", ok, err).decided_by == "unscored"
    assert row_by_checks(unit, 1, "baseline", None, ok).decided_by == "unscored"
    assert row_by_checks(unit, 1, "baseline", ok, bad).outcome == "win"
    assert row_by_checks(unit, 1, "baseline", bad, ok).outcome == "loss"
    assert row_by_checks(unit, 1, "baseline", ok, ok).outcome == "tie"
    assert row_by_checks(judged, 1, "baseline", ok, ok) is None  # the judge decides
    assert row_by_checks(judged, 1, "baseline", ok, bad).decided_by == "checks"


@pytest.mark.anyio
async def test_transcript_checks_fail_with_reasons() -> None:
    transcript = Transcript(
        [
            {"type": "message", "role": "assistant", "text": "I Fixed The Bug"},
            {"type": "tool_call", "name": "bash", "arguments": {"command": "pytest -q tests/"}},
            {
                "type": "tool_call",
                "name": "write_file",
                "arguments": {"path": "a.py", "content": "secret sauce"},
            },
            {"type": "tool_result", "text": "tool output is not agent text"},
        ]
    )
    checks = [
        Check("transcript_mentions", "fixed the bug"),
        Check("transcript_mentions", "secret sauce"),
        Check("transcript_omits", "tool output"),
        Check("transcript_omits", "SAUCE"),
        Check("command_matching", r"^pytest\b"),
        Check("no_command_matching", "rm -rf"),
        Check("command_matching", "(["),
        Check("frobnicate", "x"),
        Check("file_exists", "a.py"),
    ]
    got = [(r.passed, r.detail) for r in await run_checks(checks, transcript, None)]
    assert got == [
        (True, "found in the transcript"),
        (True, "found in the transcript"),
        (True, "absent"),
        (False, "found in the transcript"),
        (True, "matched: pytest -q tests/"),
        (True, "no match in 1 commands"),
        (False, "invalid regex: unterminated character set at position 1"),
        (False, "unknown check kind 'frobnicate'"),
        (False, "no sandbox to check in (the session errored)"),
    ]


def test_first_json_object_tolerates_prose_and_fences() -> None:
    assert first_json_object('Sure! ```json\n{"winner": "B"}\n```') == {"winner": "B"}
    assert first_json_object('{broken} then {"a": 1}') == {"a": 1}
    assert first_json_object("no json here [1, 2]") is None


def judge_script(tmp_path: Path, replies: list[str], monkeypatch, **rule) -> str:
    (tmp_path / "judge.yaml").write_text(
        yaml.safe_dump({"rules": [{"when": "Rubric", "replies": replies, **rule}]})
    )
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(tmp_path))
    return "scripted/judge"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("replies", "fault", "expected"),
    [
        (['{"winner": "tie"}'], None, ("tie", "judge")),
        (["I cannot decide."], None, ("tie", "judge-unparseable")),
        (['{"winner": "C"}'], None, ("tie", "judge-unparseable")),
        (['{"winner": "A"}'], None, ("tie", "judge-split")),
        (["x"], {"status": 500, "times": 9}, ("tie", "judge-error")),
    ],
)
async def test_judge_outcomes(tmp_path: Path, monkeypatch, replies, fault, expected) -> None:
    ref = judge_script(tmp_path, replies, monkeypatch, **({"faults": [fault]} if fault else {}))
    result = await judge(
        resolve_model(ref), task="t", rubric="r", candidate="c", opponent="o", rng=random.Random(1)
    )
    assert (result.outcome, result.decided_by) == expected


@pytest.mark.anyio
async def test_judge_order_comes_from_the_seeded_rng(tmp_path: Path, monkeypatch) -> None:
    ref = judge_script(tmp_path, ['{"winner": "tie"}'], monkeypatch)

    async def first(seed: int) -> bool:
        result = await judge(
            resolve_model(ref),
            task="t",
            rubric="r",
            candidate="c",
            opponent="o",
            rng=random.Random(seed),
        )
        return result.candidate_first

    firsts = set()
    for seed in range(8):
        order = await first(seed)
        assert order == await first(seed)  # the same seed, the same order
        firsts.add(order)
    assert firsts == {True, False}


def test_tail_keeps_the_last_6000_characters() -> None:
    text = "x" * 7000 + "END"
    assert (
        tail(text).endswith("END") and len(tail(text)) == len("[... earlier part cut ...]\n") + 6000
    )


def test_diagnostics_name_checks_that_cannot_discriminate_gaps_and_flaky_cases() -> None:
    from skillbench.checks import CheckResult
    from skillbench.engine.records import Plan, SessionRecord, Unit
    from skillbench.engine.score import diagnostics

    plan = Plan(
        run_id="r",
        skill="s",
        skill_dir="/s",
        version="v",
        assets_digest="a",
        model="scripted/demo",
        judge_model="scripted/demo",
        k=2,
        seed=1,
        arms=["baseline", "candidate"],
        opponents=["baseline"],
        sessions=["a", "b"],
        units=[Unit("a", "a"), Unit("b", "b")],
        engine_version="0",
        created_at="now",
    )

    def session(case: str, arm: str, rep: int, works: bool) -> SessionRecord:
        checks = [CheckResult("file_exists: out.txt", works, "exists" if works else "missing")]
        if case == "a":
            checks += [
                CheckResult("no_command_matching: rm -rf", True, "no match"),
                CheckResult("command_succeeds: node grade.js", False, "exit 127: node: not found"),
            ]
        passed = all(c.passed for c in checks)
        return SessionRecord(
            key=f"{case}.{arm}.{rep}",
            session=case,
            arm=arm,
            rep=rep,
            outcome="pass" if passed else "fail",
            checks={case: checks},
        )

    records = [
        session(case, arm, rep, arm == "candidate" and (case == "a" or rep == 1))
        for case in ("a", "b")
        for arm in ("baseline", "candidate")
        for rep in (1, 2)
    ]
    found = [
        (d.kind, d.case, d.check, d.detail)
        for d in diagnostics(plan, {r.key: r for r in records}, set())
    ]
    assert found == [
        (
            "non-discriminating",
            "a",
            "no_command_matching: rm -rf",
            "passed in every arm and repetition: it cannot tell the arms apart",
        ),
        (
            "environment-gap",
            "a",
            "command_succeeds: node grade.js",
            "failed with exit 126/127 in every arm: the image lacks what it runs, so this reads "
            "as a tie, not a result",
        ),
        ("flaky", "b", None, "candidate passed 1 of 2 repetitions"),
    ]


def _plan(arms: list[str], units: list[tuple[str, str]], k: int = 1):
    from skillbench.engine.records import Plan, Unit

    return Plan(
        run_id="r",
        skill="s",
        skill_dir="/s",
        version="v",
        assets_digest="a",
        model="scripted/demo",
        judge_model="scripted/demo",
        k=k,
        seed=1,
        arms=arms,
        opponents=["baseline"],
        sessions=sorted({s for _, s in units}),
        units=[Unit(n, s) for n, s in units],
        engine_version="0",
        created_at="now",
    )


def test_a_suite_distractor_every_arm_passes_is_named() -> None:
    from skillbench.checks import CheckResult
    from skillbench.engine.records import SessionRecord
    from skillbench.engine.score import diagnostics

    plan = _plan(["baseline", "candidate"], [("suite/bug", "suite"), ("suite/refactor", "suite")])

    def session(arm: str) -> SessionRecord:
        checks = {
            "suite/bug": [CheckResult("transcript_mentions: off-by-one", arm == "candidate", "")],
            "suite/refactor": [CheckResult("transcript_omits: rename", True, "")],
        }
        return SessionRecord(
            key=f"suite.{arm}.1", session="suite", arm=arm, rep=1, outcome="fail", checks=checks
        )

    found = {
        (d.kind, d.case)
        for d in diagnostics(
            plan, {f"suite.{a}.1": session(a) for a in ("baseline", "candidate")}, set()
        )
    }
    assert ("suite-distractor", "suite/refactor") in found
    assert ("suite-distractor", "suite/bug") not in found


def test_the_judges_first_position_rate_counts_answers_not_rows() -> None:
    from skillbench.engine.records import RowRecord
    from skillbench.engine.score import diagnostics, judge_position

    def row(*winners: str) -> RowRecord:
        return RowRecord(
            case="c",
            rep=1,
            opponent="baseline",
            outcome="tie",
            decided_by="judge",
            arms={},
            judge_winners=list(winners),
        )

    rows = [row("A", "A"), row("A", "B"), row("tie", "A"), row()]
    assert judge_position(rows) == (4, 5)  # ties name no position; unjudged rows add nothing
    assert judge_position([row()]) is None
    (d,) = diagnostics(_plan(["baseline", "candidate"], []), {}, set(), rows)
    assert d.detail.startswith(
        "the judge picked the attempt shown first in 4 of 5 answers (80%) (position bias"
    )
    (d,) = diagnostics(_plan(["baseline", "candidate"], []), {}, set(), [row("A", "B")] * 2)
    assert d.detail == "the judge picked the attempt shown first in 2 of 4 answers (50%)"


def test_the_noise_floor_counts_flips_between_the_two_baselines() -> None:
    from skillbench.checks import CheckResult
    from skillbench.engine.records import SessionRecord
    from skillbench.engine.score import noise_floor

    plan = _plan(["baseline", "candidate", "baseline-b"], [("a", "a"), ("b", "b")], k=2)
    passes = {
        ("a", "baseline", 1): True,
        ("a", "baseline-b", 1): False,
        ("a", "baseline", 2): True,
        ("a", "baseline-b", 2): True,
        ("b", "baseline", 1): False,
        ("b", "baseline-b", 1): False,
        ("b", "baseline", 2): False,
    }  # (b, baseline-b, 2) errored: not compared
    sessions = {
        f"{c}.{a}.{r}": SessionRecord(
            key=f"{c}.{a}.{r}",
            session=c,
            arm=a,
            rep=r,
            outcome="pass" if ok else "fail",
            checks={c: [CheckResult("file_exists: x", ok, "")]},
        )
        for (c, a, r), ok in passes.items()
    }
    sessions["b.baseline-b.2"] = SessionRecord(
        key="b.baseline-b.2", session="b", arm="baseline-b", rep=2, outcome="error"
    )
    floor = noise_floor(plan, sessions)
    assert floor is not None and (floor.flips, floor.compared) == (1, 3)
    assert floor.flip_rate == pytest.approx(1 / 3)
    assert noise_floor(_plan(["baseline", "candidate"], [("a", "a")]), sessions) is None
