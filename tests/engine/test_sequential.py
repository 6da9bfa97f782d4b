"""The sequential stopping rule: its boundaries keep α exactly, a case stops only when its
vote is settled, and a small calibration run keeps false PASS within α."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import msgspec
import pytest

from skillbench.cli import main
from skillbench.engine.run import receipt_of
from skillbench.evals.skills import digest
from skillbench.results.records import BASELINE, CANDIDATE, ArmResult, Plan, RowRecord, Unit
from skillbench.results.score import summarize
from skillbench.results.sequential import Rule, bounds, rule_for, settled
from skillbench.results.stats import ALPHA, sign_test
from skillbench.results.summary import Skipped
from skillbench.team.receipts import write_receipt
from tests.helpers import MODEL, PROVIDER, make_skill

BENCH = Path(__file__).resolve().parents[2] / "bench" / "calibration.py"


def calibration():
    spec = importlib.util.spec_from_file_location("calibration", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["calibration"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_false_pass_under_aa_stays_within_alpha():
    sims = 400
    results = calibration().calibrate([10, 20], k=2, sims=sims, seed=7, lifts=[0.0])
    error = 3 * math.sqrt(ALPHA * (1 - ALPHA) / sims)  # three Monte-Carlo standard errors
    for (design, n, _), tally in results.items():
        assert tally.evals == sims
        assert tally.rate("PASS") <= ALPHA + error, (design, n, tally.verdicts)
        assert tally.rate("FAIL") <= ALPHA + error, (design, n, tally.verdicts)


def test_sequential_saves_sessions_when_the_candidate_is_clearly_better():
    results = calibration().calibrate([20], k=3, sims=200, seed=3, lifts=[0.6])
    seq, fix = results[("sequential", 20, 0.6)], results[("fixed", 20, 0.6)]
    assert seq.mean_sessions < 0.75 * fix.mean_sessions
    assert seq.rate("PASS") >= fix.rate("PASS") - 0.1


def crossing_chance(rule, decided):
    """Exact P(the leader crosses some look's boundary) under a fair coin, by enumeration."""
    found = bounds(rule, decided)
    hits = 0
    for votes in itertools.product((0, 1), repeat=decided[-1]):
        if any(c is not None and sum(votes[:d]) >= c for d, c in zip(decided, found, strict=True)):
            hits += 1
    return Fraction(hits, 2 ** decided[-1])


def test_boundaries_spend_no_more_than_alpha_whatever_is_decided_at_each_look():
    rule = rule_for(16, 0.2)
    assert rule.looks == [7, 10, 13, 16]
    for decided in ([7, 10, 13, 16], [5, 5, 9, 14], [6, 9, 9, 12], [0, 3, 8, 16]):
        assert crossing_chance(rule, decided) <= Fraction(ALPHA), decided


def test_the_last_look_alone_is_the_fixed_sign_test():
    rule = rule_for(12, 0.2)
    (last,) = bounds(rule.__class__(min_net_lift=0.2, looks=[12]), [12])
    assert sign_test(last, 12 - last) <= ALPHA < sign_test(last - 1, 13 - last)


def test_a_case_stops_only_when_its_vote_cannot_change():
    assert settled(["win", "win"], 3)  # 2 of 3 already
    assert not settled(["win", "loss"], 3)
    assert not settled(["win"], 3)
    assert not settled([None, "win"], 3)  # an unscored rep: the next two could still outvote
    assert settled(["win", "loss", "tie"], 3)  # all ran
    assert settled(["tie", "tie", "tie"], 5)
    assert not settled(["tie", "tie"], 5)


def receipt_for(
    skill_dir: Path,
    run_id: str,
    cases: list[str],
    k: int,
    sequential: bool,
    rule=None,
    skipped: tuple[str, ...] = (),
) -> Path:
    """A receipt written the way `eval` writes one, from per-case repetition letters (W, L,
    T) against the baseline; a case's string holds the repetitions that ran. Returns the
    receipt's path in the local store."""
    units = [Unit(f"c{i}", f"c{i}") for i in range(1, len(cases) + 1)]
    plan = Plan(
        run_id=run_id,
        skill="greeter",
        skill_dir=str(skill_dir),
        version=digest(skill_dir),
        assets_digest="sha256:0",
        model=MODEL,
        judge_model=MODEL,
        k=k,
        seed=1,
        arms=[BASELINE, CANDIDATE],
        opponents=[BASELINE],
        sessions=[u.name for u in units],
        units=units,
        engine_version="0",
        created_at="2026-11-29T10:00:00+00:00",
        endpoints={**PROVIDER, "judge": PROVIDER["agent"]},
        sequential=rule or (rule_for(len(cases), 0.2) if sequential else None),
    )
    outcome = {"W": "win", "L": "loss", "T": "tie"}
    rows = [
        RowRecord(
            case=units[i].name,
            rep=rep,
            opponent=BASELINE,
            outcome=outcome[letter],
            decided_by="checks",
            arms={
                CANDIDATE: ArmResult(letter == "W", False, []),
                BASELINE: ArmResult(letter == "L", False, []),
            },
        )
        for i, letters in enumerate(cases)
        for rep, letter in enumerate(letters, start=1)
    ]
    skips = [Skipped(name, "the image lacks jq", environment=True) for name in skipped]
    receipt = receipt_of(plan, summarize(plan, {}, rows, skips), "sha256:" + "0" * 64)
    receipt.provenance.created_at = plan.created_at
    run_dir = skill_dir.parent.parent / "runs" / run_id
    run_dir.mkdir(parents=True)
    return write_receipt(receipt, run_dir)  # the store's copy: the one the gate reads


def edit_receipt(path: Path, change) -> None:
    body = json.loads(path.read_text())
    change(body)
    path.write_text(json.dumps(body))


@pytest.fixture
def greeter(tmp_path: Path) -> Path:
    return make_skill(
        tmp_path / "lib",
        "greeter",
        {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: a\n"},
        description="Greets people politely.",
    )


def run_gate(capsys, skill: Path) -> tuple[int, str]:
    code = main(["gate", str(skill)])
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


def test_a_sequential_run_that_stopped_at_its_first_look_passes_the_gate(capsys, greeter):
    # 20 cases, k = 3: the first look (8 cases) is 8 unanimous wins, settled after 2 reps each
    run = receipt_for(greeter, "seq-1", ["WW"] * 8 + [""] * 12, 3, sequential=True)
    body = json.loads(run.read_text())
    assert body["complete"] is True and body["verdict"] == "PASS"
    assert body["stop"]["look"] == 1 and body["stop"]["reason"] == "boundary"
    assert body["provenance"]["sequential"]["looks"] == [8, 12, 16, 20]
    summary = json.loads(run.read_text())
    assert summary["scored_rows"] == 16
    code, said = run_gate(capsys, greeter)
    assert code == 0, said
    assert said.startswith("gate passed: greeter: PASS (run seq-1, 16/60 rows scored")


def test_a_fixed_receipt_edited_to_claim_complete_after_stopping_early_is_refused(capsys, greeter):
    """Before the stopping check this receipt passed: every count follows from its rows,
    and `complete` is the receipt's own word."""
    run = receipt_for(greeter, "cut", ["W"] * 8, 3, sequential=False)
    assert json.loads(run.read_text())["complete"] is False
    edit_receipt(run, lambda b: b.update(complete=True))
    code, said = run_gate(capsys, greeter)
    assert code == 1
    assert said == (
        "gate refused: greeter: the newest measured receipt (run cut) claims a complete run, "
        "but stopped c1 after 1 of 3 repetitions with no stopping rule declared (a fixed "
        "design runs them all)"
    )


def test_a_sequential_receipt_claiming_an_early_stop_its_rule_does_not_make_is_refused(
    capsys, greeter
):
    # 7 wins and a loss over the first look do not cross its boundary: the rule goes on
    run = receipt_for(greeter, "early", ["WW"] * 7 + ["LL"] + [""] * 12, 3, sequential=True)

    def claim(body):
        body.update(verdict="PASS", complete=True)
        body["stop"] = {
            "look": 1,
            "units": 8,
            "reason": "boundary",
            "verdict": "PASS",
            "decided": [8],
            "bounds": [8],
        }

    edit_receipt(run, claim)
    code, said = run_gate(capsys, greeter)
    assert code == 1
    assert "(run early)" in said
    assert (
        "does not follow from its rows" in said
        or "its stopping rule stops" in said
        or "c9 has no row and is not on record as skipped" in said
    ), said


def test_a_receipt_that_stopped_a_case_while_its_vote_could_change_is_refused(capsys, greeter):
    run = receipt_for(greeter, "case", ["WL"] + ["WW"] * 7 + [""] * 12, 3, sequential=True)
    edit_receipt(run, lambda b: b.update(complete=True))
    code, said = run_gate(capsys, greeter)
    assert code == 1
    assert said.endswith(
        "claims a complete run, but stopped c1 vs baseline after 2 of 3 repetitions while "
        "its vote could still change the verdict"
    )


def test_a_stop_without_a_declared_rule_is_refused(capsys, greeter):
    run = receipt_for(greeter, "norule", ["WW"] * 8 + [""] * 12, 3, sequential=True)
    edit_receipt(run, lambda b: b["provenance"].update(sequential=None))
    code, said = run_gate(capsys, greeter)
    assert code == 1
    assert (
        "claims a stop at look 1 (boundary) but declares no stopping rule" in said
        or "after 2 of 3 repetitions with no stopping rule declared" in said
    ), said


def test_a_receipt_whose_rule_makes_its_own_boundaries_is_refused(capsys, greeter):
    # outside review (RB5): the gate re-derived a sequential receipt with the rule the receipt
    # declares: α 0.999 and a floor of 0 make one win in twenty a PASS
    loose = Rule(alpha=0.999, min_net_lift=0.0, looks=[20])
    run = receipt_for(greeter, "loose", ["W"] + ["T"] * 19, 1, sequential=True, rule=loose)
    assert json.loads(run.read_text())["verdict"] == "PASS"  # as the receipt derives it
    code, said = run_gate(capsys, greeter)
    assert code == 1, said
    assert "declares a stopping rule that is not skillbench's: α 0.999 with pocock" in said


@pytest.mark.parametrize(
    "rule",
    [
        {"looks": []},
        {"looks": [-5, 7]},
        {"looks": [0, 20]},
        {"looks": [12, 8, 20]},
        {"alpha": 5},
        {"alpha": 0},
        {"spending": "x"},
        {"min_net_lift": -5},
        # second review: a look at every stimulus, or one at 2**63: minutes of CPU and the
        # machine's memory to re-derive, before the rule was found not skillbench's
        {"looks": list(range(5, 45))},
        {"looks": [6, 100_000]},
    ],
)
def test_a_rule_its_functions_cannot_compute_with_is_one_line(capsys, greeter, rule):
    # outside review: these crashed the gate (and `eval --resume` from plan.json) with
    # IndexError, ValueError, ZeroDivisionError and StatisticsError tracebacks
    run = receipt_for(greeter, "odd", ["WW"] * 8 + [""] * 12, 3, sequential=True)
    edit_receipt(run, lambda b: b["provenance"]["sequential"].update(rule))
    code, said = run_gate(capsys, greeter)
    assert code == 1, said
    assert "Traceback" not in said and len(said.splitlines()) == 1, said
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"min_net_lift": 0.2, "looks": [8, 20], **rule}, Rule)


def test_a_sequential_plan_past_the_rules_stimuli_is_one_line() -> None:
    from skillbench.config import Settings
    from skillbench.engine.plan import EvalError, _rule
    from skillbench.results.sequential import MAX_STIMULI

    assert _rule(MAX_STIMULI, Settings()).looks[-1] == MAX_STIMULI
    with pytest.raises(EvalError, match="run the fixed design"):
        _rule(MAX_STIMULI + 1, Settings())


def test_plan_shows_expected_and_worst_case_for_both_designs():
    from skillbench.engine.estimate import Estimate, design_lines
    from skillbench.engine.simulate import expected_sessions

    share = {f"{x}": expected_sessions(20, 3, x) for x in (0.0, 0.4)}
    assert 0.5 < share["0.4"] < share["0.0"] < 1  # stopping saves most when the lift is real
    e = Estimate(
        skill="s",
        version="sha256:0",
        cases=20,
        arms=["baseline", "candidate"],
        k=3,
        sessions=120,
        reused=0,
        session_calls=720,
        judge_calls=0,
        trigger_calls=0,
        trigger_method=None,
        cost_usd=12.0,
        seconds=60,
        parallel=4,
        basis="default",
        sequential=share,
        sequential_on=True,
    )
    first, second = design_lines(e)
    assert first == (
        f"  sequential design (this run): expected {120 * share['0.0']:.0f} sessions "
        f"~${12 * share['0.0']:.2f} at net lift 0.0 · {120 * share['0.4']:.0f} sessions "
        f"~${12 * share['0.4']:.2f} at net lift 0.4; worst case 120 sessions ~$12.00"
    )
    assert second == "  fixed design: 120 sessions ~$12.00, expected and worst case"


def test_a_run_nobody_can_win_any_more_stops_for_futility_as_neutral():
    from skillbench.results.sequential import walk
    from skillbench.results.verdict import Votes

    rule = rule_for(20, 0.2)
    looks = [Votes(2, 2, 4), Votes(3, 3, 6), Votes(5, 5, 6), Votes(7, 7, 6)]
    stop = walk(rule, looks)
    assert stop is not None
    assert (stop.look, stop.reason, stop.verdict) == (3, "futility", "NEUTRAL")
    # with a leader that could still get there, it goes on
    assert walk(rule, [Votes(2, 2, 4), Votes(3, 3, 6), Votes(7, 3, 6)]) is None


def test_a_run_that_can_no_longer_decide_five_votes_stops_inconclusive_at_once():
    """Too few votes left to decide for any verdict beyond INCONCLUSIVE: the run stops at the
    look where that becomes certain, and every way the later stimuli could vote would have
    ended it INCONCLUSIVE (no boundary reachable, under 5 decided)."""
    from skillbench.results.sequential import MIN_DECIDED, walk
    from skillbench.results.verdict import Votes

    rule = rule_for(10, 0.2)
    assert rule.looks == [6, 8, 10]
    early = walk(rule, [Votes(1, 0, 5), Votes(2, 0, 6)])
    assert early is not None
    assert (early.look, early.reason, early.verdict) == (2, "futility", "INCONCLUSIVE")
    assert walk(rule, [Votes(1, 0, 5)]) is None  # 1 decided and 4 to come could be 5
    assert walk(rule, [Votes(0, 0, 0)]) is None  # nothing scored yet could still be NONE or more
    for votes in itertools.product(("win", "loss", "tie"), repeat=10):
        looks = [Votes(*(votes[:n].count(x) for x in ("win", "loss", "tie"))) for n in rule.looks]
        stop = walk(rule, looks)
        assert stop is not None
        if (stop.reason, stop.verdict) == ("futility", "INCONCLUSIVE"):
            decided = [v.decided for v in looks]
            assert decided[-1] < MIN_DECIDED and set(bounds(rule, decided)) == {None}, votes


def test_a_look_stops_between_waves_once_no_repetition_left_can_change_its_verdict():
    """Curtailment: with three cases no vote count can reach a verdict beyond INCONCLUSIVE
    (under 5 decided), so the first wave settles it; with five, one loss already rules out
    PASS, but the ties and wins still open could make it NEUTRAL or INCONCLUSIVE."""
    from skillbench.results.sequential import stop_of
    from skillbench.results.verdict import Row

    def rows(cases: list[str]) -> list[Row]:
        outcome = {"W": "win", "L": "loss", "T": "tie", "U": "tie"}
        return [
            Row(f"c{i}", rep, "baseline", outcome[x], "unscored" if x == "U" else "checks")
            for i, reps in enumerate(cases)
            for rep, x in enumerate(reps, start=1)
        ]

    order = ["c0", "c1", "c2"]
    stop = stop_of(rows(["W", "L", "W"]), rule_for(3, 0.2), "baseline", order, 1, 3)
    assert stop is not None
    assert (stop.reason, stop.verdict, stop.decided) == ("curtailed", "INCONCLUSIVE", [3])
    order = [f"c{i}" for i in range(5)]
    assert (
        stop_of(rows(["W", "L", "W", "W", "T"]), rule_for(5, 0.2), "baseline", order, 1, 3) is None
    )
    # every case settled as a tie but one: nothing left can make 5 decided votes
    settled_ties = ["TT", "TT", "TT", "W", "L"]
    stop = stop_of(rows(settled_ties), rule_for(5, 0.2), "baseline", order, 1, 3)
    assert stop is not None and (stop.reason, stop.verdict) == ("curtailed", "INCONCLUSIVE")
    # an unscored repetition is a repetition run: after three, c0's vote is settled
    stop = stop_of(rows(["WUU", "L", "W"]), rule_for(3, 0.2), "baseline", order[:3], 1, 3)
    assert stop is not None and stop.reason == "curtailed"


def test_a_curtailed_run_passes_the_gate_and_one_cut_before_its_verdict_was_settled_does_not(
    capsys, greeter
):
    # 5 cases, k = 3: four unanimous wins settled and one case at W after its first wave;
    # c5 could still end a win (PASS: 5 of 5) or a tie (INCONCLUSIVE): the run must go on
    run = receipt_for(greeter, "cut", ["WW"] * 4 + ["W"], 3, sequential=True)
    body = json.loads(run.read_text())
    assert body["complete"] is False and body["stop"] is None
    edit_receipt(run, lambda b: b.update(complete=True))
    code, said = run_gate(capsys, greeter)
    assert code == 1
    assert said.endswith(
        "claims a complete run, but stopped c5 vs baseline after 1 of 3 repetitions while its "
        "vote could still change the verdict"
    )
    # a loss at c5's first repetition: no way left to PASS, and the tie of 4 wins and a
    # tie... still 4 decided (INCONCLUSIVE) or 5 (NEUTRAL): open. Two losses settle it.
    run = receipt_for(greeter, "lost", ["WW"] * 4 + ["LL"], 3, sequential=True)
    body = json.loads(run.read_text())
    assert body["complete"] is True and body["stop"]["reason"] == "final"


def test_a_run_cut_after_a_look_is_no_stop_its_rule_made(capsys, greeter):
    """Eighth outside review: 7 wins and a loss at the first look of 20 cases do not cross
    its boundary, yet with no rows for c9-c20 the rule read them as skipped, made the later
    looks with no new votes (their boundary lower) and passed the receipt: cutting a run as
    soon as its rows re-derive to PASS raised false PASS to 0.067. A case with no row and no
    skip on record is one not yet run: no stop, and no verdict."""
    run = receipt_for(greeter, "cut", ["WW"] * 7 + ["LL"] + [""] * 12, 3, sequential=True)
    body = json.loads(run.read_text())
    assert body["stop"] is None and body["verdict"] == "INCONCLUSIVE"
    assert body["complete"] is False
    edit_receipt(run, lambda b: b.update(complete=True, verdict="PASS"))
    code, said = run_gate(capsys, greeter)
    assert code == 1, said
    assert main(["gate", str(greeter), "--allow-partial"]) == 1


def test_a_case_skipped_on_record_is_no_stop_and_the_receipt_passes(capsys, greeter):
    # the first look's 8 cases: 7 unanimous wins and c8 skipped (its image lacks a tool)
    cases = ["WW"] * 7 + [""] * 13
    run = receipt_for(greeter, "skip", cases, 3, sequential=True, skipped=("c8",))
    body = json.loads(run.read_text())
    assert body["skipped"][0]["case"] == "c8" and body["stop"]["look"] == 1, body["stop"]
    assert body["stop"]["decided"] == [7]
    assert body["complete"] is True and body["verdict"] == "PASS"
    code, said = run_gate(capsys, greeter)
    assert code == 0, said


def test_a_sequential_receipt_with_more_repetitions_than_k_is_refused(capsys, greeter):
    """Eighth outside review: repetitions past k (L, W, W with k = 1) outvoted the one the
    design ran; the fixed design refused them, the sequential one did not."""
    run = receipt_for(greeter, "extra", ["LWW"] * 8 + [""] * 12, 1, sequential=True)
    edit_receipt(run, lambda b: b.update(complete=True))
    code, said = run_gate(capsys, greeter)
    assert code == 1, said
    assert "a row of c1 vs baseline is repetition 2 of 1" in said, said


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # ninth review (A2): a fixed run cut while ahead (its losing cases' rows deleted)
        (lambda b: b.update(rows=b["rows"][:14]), "c15 has no row and is not on record"),
        # (A7): its losing rows unscored, `complete` the receipt's own word
        (
            lambda b: [
                r.update(outcome="unscored", decided_by="judge-error") for r in b["rows"][14:]
            ],
            "6 of its rows are unscored",
        ),
        # (A3): a skip on record for a case that has rows, or one never planned
        (
            lambda b: b.update(skipped=[{"case": "c1", "reason": "x", "environment": True}]),
            "yet it has rows",
        ),
        (
            lambda b: b.update(skipped=[{"case": "zz", "reason": "x", "environment": True}]),
            "not a case it planned",
        ),
    ],
)
def test_complete_is_rederived_never_the_receipts_word(capsys, greeter, edit, said):
    run = receipt_for(greeter, "fixed", ["W"] * 14 + ["L"] * 6, 1, sequential=False)
    assert json.loads(run.read_text())["verdict"] == "NEUTRAL"
    edit_receipt(run, lambda b: (edit(b), b.update(complete=True, verdict="PASS")))
    code, out = run_gate(capsys, greeter)
    assert code == 1 and said in out, out


def test_a_session_missing_a_sub_case_or_an_opponents_row_is_no_complete_run():
    """Ninth review (A4, A5): rows of a suite's losing sub-cases deleted, or the incumbent's
    rows of sessions that ran, passed: repetitions were counted per stimulus and opponent."""
    from skillbench.results.sequential import problem
    from skillbench.results.verdict import Row

    units = ["suite/a", "suite/b", "c1"]
    whole = [Row(u, 1, opp, "win", "checks") for u in units for opp in ("baseline", "incumbent")]
    assert problem(whole, None, units=units, k=1, opponents=["baseline", "incumbent"]) is None
    cut = [r for r in whole if r.case != "suite/b" or r.opponent != "baseline"]
    said = problem(cut, None, units=units, k=1, opponents=["baseline", "incumbent"])
    assert said == "suite/b rep 1 has no row vs baseline, though its session ran"
    cut = [r for r in whole if r.case != "c1" or r.opponent != "incumbent"]
    said = problem(cut, None, units=units, k=1, opponents=["baseline", "incumbent"])
    assert said == "c1 rep 1 has no row vs incumbent, though its session ran"
