"""Scoring, checks on transcripts, and the judge's decision rules (no sandbox needed)."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from skillbench.checks.run import run_checks
from skillbench.evals.model import Check
from skillbench.grading.judge import judge, tail
from skillbench.models import resolve_model
from skillbench.results.checks import CheckResult
from skillbench.results.records import RowRecord, SessionRecord, Unit
from skillbench.results.rows import compare, row_by_checks, why
from skillbench.results.transcript import Transcript
from skillbench.results.verdict import Row, Votes, decide, stimulus, tally, unit_votes, verdict_of
from skillbench.util.jsonreply import json_objects


def rows(*spec: tuple[str, str]) -> list[RowRecord]:
    return [
        RowRecord(case=f"c{i}", rep=1, opponent="baseline", outcome=o, decided_by=d, arms={})
        for i, (o, d) in enumerate(spec)
    ]


@pytest.mark.parametrize(
    ("w", "l", "t", "expected"),
    [
        (5, 0, 0, "PASS"),  # p = 1/32, net lift 1
        (4, 0, 0, "INCONCLUSIVE"),  # four unanimous units can never be significant
        (4, 0, 9, "INCONCLUSIVE"),  # ties are not decided units
        (0, 5, 0, "FAIL"),
        (5, 1, 0, "NEUTRAL"),  # p = 7/64 = 0.109: not significant
        (9, 3, 0, "NEUTRAL"),  # p = 299/4096 = 0.073
        (10, 2, 0, "PASS"),  # p = 79/4096 = 0.019, net lift 8/12
        (2, 10, 0, "FAIL"),
        (6, 0, 24, "PASS"),  # p = 1/64 and a net lift of exactly 6/30 = 0.2: the floor holds
        (6, 0, 25, "NEUTRAL"),  # significant, but 6/31 = 0.194 is under the 0.2 floor
        (0, 6, 25, "NEUTRAL"),  # the same against the candidate
        (0, 0, 3, "INCONCLUSIVE"),
        (0, 0, 0, "NONE"),
    ],
)
def test_verdict_boundaries_over_units(w: int, l: int, t: int, expected: str) -> None:  # noqa: E741
    # one case per unit, k = 1: units and rows coincide
    c = compare(
        rows(*[("win", "checks")] * w, *[("loss", "checks")] * l, *[("tie", "checks")] * t),
        "baseline",
    )
    assert (c.win, c.loss, c.tie) == (w, l, t) == (c.units.win, c.units.loss, c.units.tie)
    assert c.verdict == expected


def test_the_practical_floor_is_configurable() -> None:
    votes = Votes(6, 0, 7)  # p = 1/64, net lift 6/13 = 0.46
    assert verdict_of(votes) == "PASS"
    assert verdict_of(votes, 0.5) == "NEUTRAL"
    assert verdict_of(Votes(6, 0, 0), 0.0) == "PASS"


def test_design_example_figures() -> None:
    # docs/statistics.md's 5W / 1L / 3T, as nine cases run once: +44 %, but p = 7/64 one-sided
    c = compare(
        rows(*[("win", "checks")] * 5, ("loss", "checks"), *[("tie", "checks")] * 3), "baseline"
    )
    assert round(c.net_lift * 100) == 44 and f"{c.sign_p:.3f}" == "0.109"
    assert c.verdict == "NEUTRAL"


def rep_rows(case: str, *outcomes: str, opponent: str = "baseline") -> list[RowRecord]:
    """One row per repetition of `case` (rep 1, 2, ...); `unscored` is an errored arm."""
    return [
        RowRecord(
            case=case,
            rep=rep,
            opponent=opponent,
            outcome="tie" if o == "unscored" else o,
            decided_by="unscored" if o == "unscored" else "checks",
            arms={},
        )
        for rep, o in enumerate(outcomes, 1)
    ]


def suite_rows(rep: int, *outcomes: str) -> list[RowRecord]:
    """The suite's sub-case rows of one session (repetition `rep`)."""
    return [
        RowRecord(
            case=f"suite/s{i}",
            rep=rep,
            opponent="baseline",
            outcome=o,
            decided_by="checks",
            arms={},
        )
        for i, o in enumerate(outcomes)
    ]


def test_k3_with_a_2_1_split_is_one_vote_for_the_majority() -> None:
    c = compare(rep_rows("a", "win", "win", "loss"), "baseline")
    assert (c.win, c.loss, c.tie) == (2, 1, 0)  # three rows...
    assert c.units == Votes(1, 0, 0)  # ...one unit, won
    assert c.sign_p == 0.5  # one decided unit: P(X >= 1 | 1)
    assert c.verdict == "INCONCLUSIVE"
    # no majority, no vote either way: one win among ties is a tie, a win and a loss too
    assert unit_votes(rep_rows("b", "win", "tie", "tie"), "baseline") == {"b": "tie"}
    assert unit_votes(rep_rows("c", "win", "loss", "tie"), "baseline") == {"c": "tie"}
    assert unit_votes(rep_rows("d", "loss", "loss", "win"), "baseline") == {"d": "loss"}
    # an unscored repetition is no evidence; a unit with none scored has no vote at all
    assert unit_votes(rep_rows("e", "unscored", "win", "unscored"), "baseline") == {"e": "win"}
    assert tally(rep_rows("f", "unscored", "unscored"), "baseline") == Votes()


def test_a_suite_of_5_sub_cases_in_one_session_is_one_vote() -> None:
    c = compare(suite_rows(1, "win", "win", "tie", "tie", "loss"), "baseline")
    assert (c.win, c.loss, c.tie) == (2, 1, 2)
    assert c.units == Votes(1, 0, 0)  # net +1 over its sub-cases: the suite won
    assert c.net_lift == 1.0
    # the case measured in issue 22: a suite of 5 at k = 3, every row won, used to give
    # p = 6e-5 from 15 "votes"; it is one stimulus
    rows_ = [r for rep in (1, 2, 3) for r in suite_rows(rep, *["win"] * 5)]
    swept = compare(rows_, "baseline")
    assert (swept.win, swept.units, swept.verdict) == (15, Votes(1, 0, 0), "INCONCLUSIVE")
    assert compare(suite_rows(1, "win", "loss", "tie", "tie", "tie"), "baseline").units == Votes(
        0, 0, 1
    )


def test_mixed_cases_and_a_suite_at_k3() -> None:
    rows_ = [
        *rep_rows("a", "win", "win", "loss"),  # win
        *rep_rows("b", "loss", "loss", "tie"),  # loss
        *rep_rows("c", "tie", "tie", "tie"),  # tie
        *suite_rows(1, "win", "win", "tie", "tie", "loss"),  # +1: win
        *suite_rows(2, "win", "loss", "loss", "tie", "tie"),  # -1: loss
        *suite_rows(3, "win", "tie", "tie", "tie", "tie"),  # +1: win -> the suite: win
    ]
    c = compare(rows_, "baseline")
    assert (c.win, c.loss, c.tie) == (6, 6, 12)  # the rows are even...
    assert unit_votes(rows_, "baseline") == {"a": "win", "b": "loss", "c": "tie", "suite": "win"}
    assert c.units == Votes(2, 1, 1)  # ...the units lean: 3 of 4 decided
    assert c.net_lift == pytest.approx(1 / 4)
    assert c.sign_p == pytest.approx(0.5)  # P(X >= 2 | 3) = 4/8
    assert c.verdict == "INCONCLUSIVE"
    # another opponent's rows are another comparison
    assert tally(rep_rows("a", "loss", opponent="incumbent") + rows_, "incumbent") == Votes(0, 1)


def test_the_gate_reads_a_receipts_rows_with_the_same_rule() -> None:
    rows_ = [
        {"case": n, "rep": 1, "opponent": "baseline", "outcome": "win", "decided_by": "checks"}
        for n in "abcde"
    ]
    rows_[0] |= {"arms": {}, "reason": None}  # what else a receipt's row holds is ignored
    assert decide(msgspec.convert(rows_, list[Row]), "baseline") == "PASS"
    assert decide(msgspec.convert(rows_[:4], list[Row]), "baseline") == "INCONCLUSIVE"


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


def test_json_objects_tolerate_prose_and_fences() -> None:
    assert json_objects('Sure! ```json\n{"winner": "B"}\n```') == [{"winner": "B"}]
    assert json_objects('{broken} then {"a": 1}') == [{"a": 1}]
    assert json_objects("no json here [1, 2]") == []


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
        (['{"nonce": "$FRAME_ID", "winner": "tie"}'], None, ("tie", "judge")),
        (["I cannot decide."], None, ("unscored", "judge-unparseable")),
        (['{"nonce": "$FRAME_ID", "winner": "C"}'], None, ("unscored", "judge-unparseable")),
        (['{"nonce": "$FRAME_ID", "winner": "A"}'], None, ("tie", "judge-split")),
        # a verdict without the call's frame id is never read (planted ones cannot carry it)
        (['{"winner": "A"}'], None, ("unscored", "judge-unparseable")),
        (["x"], {"status": 500, "times": 9}, ("unscored", "judge-error")),
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
    ref = judge_script(tmp_path, ['{"nonce": "$FRAME_ID", "winner": "tie"}'], monkeypatch)

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
    from skillbench.results.checks import CheckResult
    from skillbench.results.records import Plan, SessionRecord, Unit
    from skillbench.results.score import diagnostics

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
            "failed with exit 126/127 in every arm: the image lacks what it runs, so its rows "
            "are unscored, not ties",
        ),
        ("flaky", "b", None, "candidate passed 1 of 2 repetitions"),
    ]


def _plan(arms: list[str], units: list[tuple[str, str]], k: int = 1):
    from skillbench.results.records import Plan, Unit

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


def test_only_a_trap_nobody_falls_for_is_a_suite_distractor() -> None:
    from skillbench.results.checks import CheckResult
    from skillbench.results.records import Plan, SessionRecord, Unit
    from skillbench.results.score import diagnostics

    plan = _plan(["baseline", "candidate"], [])
    plan = Plan(
        **{
            **msgspec.structs.asdict(plan),
            "sessions": ["suite"],
            "units": [
                Unit("suite/bug", "suite"),
                Unit("suite/found-by-all", "suite"),  # a real defect both arms found
                Unit("suite/refactor", "suite", distractor=True),  # the trap nobody took
                Unit("suite/bait", "suite", distractor=True),  # the trap the baseline took
            ],
        }
    )

    def session(arm: str) -> SessionRecord:
        checks = {
            "suite/bug": [CheckResult("transcript_mentions: off-by-one", arm == "candidate")],
            "suite/found-by-all": [CheckResult("transcript_mentions: paginate", True)],
            "suite/refactor": [CheckResult("transcript_omits: rename", True)],
            "suite/bait": [CheckResult("transcript_omits: format_price", arm == "candidate")],
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
    # never advise dropping a real defect both arms found: it is only a check that cannot
    # tell these arms apart
    assert ("suite-distractor", "suite/found-by-all") not in found
    assert ("non-discriminating", "suite/found-by-all") in found
    assert ("suite-distractor", "suite/bait") not in found  # somebody fell for it
    assert ("suite-distractor", "suite/bug") not in found


def test_a_check_that_cannot_run_in_either_arm_leaves_its_row_unscored() -> None:
    from skillbench.results.checks import CheckResult
    from skillbench.results.records import SessionRecord, Unit

    def arm(*checks: CheckResult) -> SessionRecord:
        return SessionRecord(
            key="k", session="a", arm="x", rep=1, outcome="fail", checks={"a": list(checks)}
        )

    node = "command_succeeds: node grade.js"
    missing = CheckResult(node, False, "exit 127: bash: node: command not found")
    grader = CheckResult("grader: node g.js", False, "exit 127 (no JSON verdict): node: not found")
    ran = CheckResult("file_exists: out.txt", True, "exists")
    unit = Unit("a", "a", judge=True)
    row = row_by_checks(unit, 1, "baseline", arm(missing, ran), arm(missing, ran))
    assert row is not None and (row.outcome, row.decided_by, row.scored) == (
        "unscored",
        "environment-gap",
        False,
    )  # not a tie the judge may break: nothing was measured
    assert row.reason == (
        "environment gap: command_succeeds: node grade.js could not run in either arm (exit "
        "127: bash: node: command not found); the image lacks what it runs"
    )
    both = row_by_checks(unit, 1, "baseline", arm(grader), arm(grader))
    assert both is not None and both.decided_by == "environment-gap"  # a grader's runtime
    # in one arm only, it is a result: the other arm's agent ran what the check runs
    failed = CheckResult(node, False, "exit 1: wrong answer")
    one = row_by_checks(unit, 1, "baseline", arm(CheckResult(node, True, "exit 0")), arm(missing))
    assert one is not None and (one.outcome, one.decided_by) == ("win", "checks")
    assert row_by_checks(unit, 1, "baseline", arm(failed), arm(missing)) is None  # the judge
    errored = SessionRecord(key="k", session="a", arm="x", rep=1, outcome="error", error="429")
    unscored = row_by_checks(unit, 1, "baseline", errored, arm(ran))
    assert unscored is not None and unscored.reason == "candidate errored: 429"
    assert unscored.outcome == "unscored"  # an errored arm measured nothing either


def test_an_environment_gap_makes_the_run_incomplete_and_says_so() -> None:
    from skillbench.results.checks import CheckResult
    from skillbench.results.records import SessionRecord
    from skillbench.results.score import summarize

    plan = _plan(["baseline", "candidate"], [("a", "a"), ("b", "b")])
    gap = CheckResult("command_succeeds: jq . x", False, "exit 127: jq: not found")
    sessions = {
        f"{c}.{arm}.1": SessionRecord(
            key=f"{c}.{arm}.1",
            session=c,
            arm=arm,
            rep=1,
            outcome="fail",
            checks={c: [gap] if c == "a" else [CheckResult("file_exists: x", arm == "candidate")]},
        )
        for c in ("a", "b")
        for arm in ("baseline", "candidate")
    }
    rows_ = [
        row
        for c in ("a", "b")
        if (
            row := row_by_checks(
                plan.units[c == "b"],
                1,
                "baseline",
                sessions[f"{c}.candidate.1"],
                sessions[f"{c}.baseline.1"],
            )
        )
        is not None
    ]
    summary = summarize(plan, sessions, rows_, [])
    assert (summary.scored_rows, summary.expected_rows, summary.complete) == (1, 2, False)
    assert summary.why == (
        "wins on execution checks; 1 unscored (environment gap: a check could not run in "
        "either arm)"
    )
    assert summary.rows[0].reason is not None and summary.rows[0].reason.startswith(
        "environment gap: command_succeeds: jq . x"
    )
    assert summary.comparisons["baseline"].units == Votes(1, 0, 0)  # the gap is no tie


def test_the_judges_first_position_rate_counts_answers_not_rows() -> None:
    from skillbench.results.records import RowRecord
    from skillbench.results.score import diagnostics, judge_position

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
    from skillbench.results.checks import CheckResult
    from skillbench.results.records import SessionRecord
    from skillbench.results.score import noise_floor

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


# --- properties of the unit rule (docs/statistics.md) ------------------------------------------------

OUTCOMES = st.sampled_from(["win", "loss", "tie", "unscored"])


@st.composite
def evidence(draw: st.DrawFn, max_k: int = 4) -> tuple[list[RowRecord], int, int]:
    """Rows of a run: some cases and maybe a suite of sub-cases, each at k repetitions;
    with the run's k and its number of units."""
    k = draw(st.integers(1, max_k))
    cases = draw(st.integers(0, 8))
    subcases = draw(st.integers(0, 5))
    out = [
        r
        for c in range(cases)
        for r in rep_rows(f"c{c}", *draw(st.lists(OUTCOMES, min_size=k, max_size=k)))
    ]
    for rep in range(1, k + 1):
        picked = draw(st.lists(OUTCOMES, min_size=subcases, max_size=subcases))
        out += [
            RowRecord(
                case=f"suite/s{i}",
                rep=rep,
                opponent="baseline",
                outcome="tie" if o == "unscored" else o,
                decided_by="unscored" if o == "unscored" else "checks",
                arms={},
            )
            for i, o in enumerate(picked)
        ]
    return out, k, cases + (subcases > 0)


def more_reps(rows_: list[RowRecord], k: int, extra: list[RowRecord]) -> list[RowRecord]:
    """`extra` as further repetitions after the first k."""
    return rows_ + [msgspec.structs.replace(r, rep=r.rep + k) for r in extra]


@settings(max_examples=300, deadline=None)
@given(evidence(), evidence())
def test_adding_repetitions_never_decides_more_than_the_units(first, second) -> None:
    rows_, k, units = first
    known = {stimulus(r.case) for r in rows_}
    # more repetitions of the same units, with any outcomes
    grown = more_reps(rows_, k, [r for r in second[0] if stimulus(r.case) in known])
    for some in (rows_, grown):
        votes = tally(some, "baseline")
        assert votes.decided <= votes.total <= units  # rows pile up; votes cannot
    assert sum(r.outcome != "tie" for r in grown) >= sum(r.outcome != "tie" for r in rows_)


@settings(max_examples=300, deadline=None)
@given(evidence(), st.data())
def test_the_verdict_is_invariant_to_duplicating_repetitions(run, data: st.DataObject) -> None:
    rows_, k, _ = run
    before = compare(rows_, "baseline")
    stimuli = sorted({stimulus(r.case) for r in rows_})
    chosen = data.draw(st.sets(st.sampled_from(stimuli)) if stimuli else st.just(set()))
    # every repetition of the chosen units run once more, with the same outcomes
    twice = more_reps(rows_, k, [r for r in rows_ if stimulus(r.case) in chosen])
    after = compare(twice, "baseline")
    assert (after.verdict, after.units) == (before.verdict, before.units)


@settings(max_examples=300, deadline=None)
@given(evidence(max_k=5))
def test_inconclusive_whenever_fewer_than_5_units_are_decided(run) -> None:
    rows_, _, _ = run
    c = compare(rows_, "baseline")
    if c.units.total and c.units.decided < 5:
        assert c.verdict == "INCONCLUSIVE"
    if c.verdict in ("PASS", "FAIL"):
        assert c.units.decided >= 5 and c.sign_p <= 0.05
    assert decide(list(reversed(rows_)), "baseline") == c.verdict  # row order is no evidence


@pytest.mark.parametrize(
    ("agent", "judge_model", "family"),
    [
        ("anthropic/claude-sonnet-4-6", "anthropic/claude-sonnet-4-6", "Claude"),  # the default
        ("anthropic/claude-sonnet-4-6", "anthropic/claude-opus-4-1", "Claude"),
        ("openai/gpt-4.1", "openai/o3", "GPT"),  # one vendor's lines are one family
        ("openai/llama-3.1-70b", "openai/llama-3.3-70b", "llama"),  # a compatible server
        ("anthropic/claude-sonnet-4-6", "openai/gpt-4.1", None),
        ("openai/qwen2.5-coder", "openai/gpt-4.1", None),
        ("scripted/demo", "scripted/demo", None),  # a script has no family
    ],
)
def test_the_judge_line_warns_when_judge_and_agent_share_a_family(
    agent: str, judge_model: str, family: str | None
) -> None:
    from skillbench.grading.judge import family_warning, shared_family

    assert shared_family(agent, judge_model) == family
    warning = family_warning(agent, judge_model)
    assert (warning is None) == (family is None)
    if warning:
        assert warning.startswith(f"warning: the judge and the agent are both {family} models")


@pytest.mark.anyio
async def test_a_judge_that_left_out_the_frame_id_is_reminded_once(tmp_path: Path, monkeypatch):
    """A verdict without the call's frame id is never read (a plant cannot carry it); the
    judge is asked once more with a reminder, and its verdict then counts."""
    rules = [
        {
            "when": "Your last answer gave no JSON verdict",
            "replies": ['{"nonce": "$FRAME_ID", "winner": "tie"}'],
        },
        {"when": "Rubric", "replies": ['{"winner": "A"}']},
    ]
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump({"rules": rules}))
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(tmp_path))
    result = await judge(
        resolve_model("scripted/judge"),
        task="t",
        rubric="r",
        candidate="c",
        opponent="o",
        rng=random.Random(1),
    )
    assert (result.outcome, result.decided_by) == ("tie", "judge")
