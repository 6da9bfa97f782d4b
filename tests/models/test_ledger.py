"""One ledger for the run: parallel sessions' brokers reserve in it, so --max-cost is a
ceiling for the whole run and not a share each session spends on its own."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from skillbench.broker.server import Broker
from skillbench.models import resolve_model
from skillbench.models.base import Message, TextBlock
from skillbench.models.fake_server import FakeModelServer
from skillbench.models.ledger import BudgetRefused, MeteredModel, RunLedger
from skillbench.models.pricing import worst_case_usd
from skillbench.models.script import parse_script
from tests.security.test_broker_attacks import post_as_relay

MARK = "LEDGER-MARK"
CEILING = 0.004  # USD: a few dozen of these small calls
SESSIONS = 8


def _spend(tmp_path: Path, run: RunLedger | None) -> list[float]:
    """Eight sessions at once, each sending calls until its broker refuses one, each with the
    budget the engine used to give it (what was left of --max-cost when it started)."""
    fake = FakeModelServer(parse_script({"rules": [{"when": MARK, "replies": ["ok"]}]})).start()
    brokers = [
        Broker(
            upstream=fake.url,
            api_key="k",
            model="anthropic/claude-sonnet-4-6",
            exchanges=tmp_path / f"s{i}.jsonl",
            budget=CEILING,
            run_ledger=run,
        ).start()
        for i in range(SESSIONS)
    ]
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": MARK}],
    }

    def session(broker: Broker) -> None:
        for _ in range(200):
            reply = post_as_relay(
                broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"}
            )
            if reply.status_code != 200:
                return

    threads = [threading.Thread(target=session, args=(b,)) for b in brokers]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for b in brokers:
            b.stop()
        fake.stop()
    return [
        sum(
            json.loads(x).get("cost_usd") or 0.0
            for x in (tmp_path / f"s{i}.jsonl").read_text().splitlines()
        )
        for i in range(SESSIONS)
    ]


def test_per_session_budgets_overshoot_the_ceiling(tmp_path: Path) -> None:
    """The old design: each session may spend what was left when it started."""
    assert sum(_spend(tmp_path, None)) > 4 * CEILING


def test_one_run_ledger_holds_the_ceiling_across_parallel_sessions(tmp_path: Path) -> None:
    run = RunLedger(CEILING)
    spent = _spend(tmp_path, run)
    state = run.snapshot()
    assert sum(spent) <= CEILING
    assert state.spent == pytest.approx(sum(spent)) and state.reserved == pytest.approx(0)
    assert state.refused >= SESSIONS  # every session ended on a refusal
    assert state.by_kind == {"agent": pytest.approx(sum(spent))}


def test_a_resumed_ledger_starts_from_the_journal_spend() -> None:
    run = RunLedger(1.0, spent=0.9)
    assert not run.reserve(0.2) and run.reserve(0.1) and run.exhausted()
    run.settle(0.1, 0.05, "judge")
    assert run.left() == pytest.approx(0.05)
    assert run.snapshot().by_kind == {"earlier": 0.9, "judge": 0.05}


def test_a_call_with_no_price_passes_only_where_there_is_no_ceiling() -> None:
    # an unpriced call (the Ray relay's, a host call's) counted at nothing would pass every
    # reservation and spend past the ceiling without limit
    capped, open_ = RunLedger(1.0), RunLedger(None)
    assert not capped.reserve(None) and capped.snapshot().refused == 1
    assert open_.reserve(None)
    assert capped.reserve(0.5)  # a priced call still fits
    # nor does an amount no ceiling can compare (NaN) or one that gives money back
    assert not capped.reserve(float("nan")) and not capped.reserve(-5.0)
    capped.settle(0.5, float("nan"))
    assert capped.snapshot().spent == 0.0 and capped.snapshot().reserved == 0.0


def test_concurrent_reservations_hold_the_ceiling() -> None:
    run, held = RunLedger(1.0), []
    threads = [threading.Thread(target=lambda: held.append(run.reserve(0.3))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert held.count(True) == 3 and run.snapshot().refused == 17


@pytest.mark.anyio
async def test_host_calls_through_the_sdk_reserve_and_stop_at_the_ceiling(fake) -> None:
    """A judge (or grader, trigger) model wrapped in the ledger: real SDK, fake server."""
    fake({"rules": [{"when": MARK, "replies": ["ok"]}]})
    model = resolve_model("anthropic/claude-sonnet-4-6", max_retries=0)
    one = worst_case_usd("anthropic/claude-sonnet-4-6", 1000, 64)
    assert one is not None
    run = RunLedger(2.5 * one)
    judge = MeteredModel(model, run, {}, "judge")
    text = MARK + " and more words" * 40  # ~150 prompt tokens billed a call, ~700 chars held
    sent = 0
    with pytest.raises(BudgetRefused):
        for _ in range(50):
            await judge.complete(
                system="s", messages=[Message("user", (TextBlock(text),))], tools=[], max_tokens=64
            )
            sent += 1
    await judge.aclose()
    state = run.snapshot()
    assert sent >= 2 and state.spent <= run.ceiling and state.reserved == pytest.approx(0)
    assert set(state.by_kind) == {"judge"} and state.refused == 1


@pytest.mark.anyio
async def test_catalog_trigger_calls_spend_in_the_run_ledger_and_stop_at_its_ceiling(
    fake, tmp_path: Path
) -> None:
    """An eval's trigger measurement on the run's ledger: 16 calls in flight at once each
    reserve first, the spend never passes the ceiling, and the calls the ledger refused are
    recorded as not run (an error of the prompt, never a miss or a false fire)."""
    from skillbench.config import Settings
    from skillbench.engine.routing import measure
    from skillbench.engine.triggers import CAPPED, targets_at
    from tests.engine.test_triggers import library, rules_for_all

    server = fake({"rules": rules_for_all(), "latency": 0.05})
    settings = Settings(model="anthropic/claude-sonnet-4-6", parallel=16, max_retries=0)
    one = worst_case_usd(settings.model, 400, 512)
    assert one is not None
    run = RunLedger(3.5 * one)
    (report,) = await measure(
        settings,
        targets_at(library(tmp_path) / "greeter"),
        method="catalog",
        agent="builtin",
        runs=3,
        threshold=0.5,
        ledger=run,
    )
    state = run.snapshot()
    assert 0 < state.spent <= run.ceiling and state.reserved == pytest.approx(0)
    assert set(state.by_kind) == {"triggers"} and state.refused >= 1
    sent = [r for r in server.log() if r.status == 200]
    assert len(sent) < 30  # 10 prompts x 3 runs were asked for
    capped = [r for r in report.results if r.error == CAPPED]
    assert capped and all(r.fired is None for r in capped)
    assert {r.prompt for r in capped} <= set(report.errored)


def test_skillbench_triggers_max_cost_is_a_ceiling_and_says_what_it_did_not_run(
    fake, tmp_path: Path, capsys
) -> None:
    """`skillbench triggers --max-cost` on its own: every catalog call reserves in one ledger
    first, so the measurement's bill stays under the cap with calls in parallel; the prompts
    left unrun are counted on stderr and shown as errored (failing closed: a should-trigger
    one is a miss, as any failed call)."""
    from skillbench.cli import main
    from skillbench.engine.triggers import CAPPED
    from skillbench.models.base import anthropic_usage
    from skillbench.models.pricing import cost_usd
    from tests.engine.test_triggers import library, rules_for_all

    server = fake({"rules": rules_for_all(), "latency": 0.05})
    model = "anthropic/claude-sonnet-4-6"
    one = worst_case_usd(model, 400, 512)
    assert one is not None
    cap = 3.5 * one
    skill = library(tmp_path) / "greeter"
    argv = ["triggers", str(skill), "--model", model, "--runs", "3", "--parallel", "8"]
    code = main([*argv, "--max-cost", f"{cap:.6f}"])
    out, err = capsys.readouterr()
    assert code == 0
    answered = [r for r in server.log() if r.status == 200]
    billed = sum(cost_usd(model, anthropic_usage(r.usage)) or 0.0 for r in answered)
    assert 0 < billed <= cap and len(answered) < 30  # 10 prompts x 3 runs were asked for
    (line,) = [x for x in err.splitlines() if "--max-cost" in x]
    assert "the cap was reached" in line and "prompt(s) not run" in line
    not_run = int(line.split("; ")[1].split()[0])
    assert not_run >= 1 and out.count(CAPPED) == not_run
    assert f"spent ${billed:.4f}" in line
    # a model without a price cannot be held to a cap: one line, no run
    assert main([*argv[:3], "openai/gpt-unpriced", "--max-cost", "1"]) != 0
    assert "no price is known for openai/gpt-unpriced" in capsys.readouterr().err
    # nor one whose name only starts with a priced model's (gpt-5-pro bills 12x gpt-5)
    assert main([*argv[:3], "openai/gpt-5-pro", "--max-cost", "1"]) != 0
    assert "no price is known for openai/gpt-5-pro" in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_eight_claude_code_sessions_at_once_hold_the_run_ceiling(
    fake, tmp_path: Path, capfd
) -> None:
    """--parallel 8 with Claude Code: every call of every session reserves in the run's
    ledger, so the run's spend stays under --max-cost though 8 brokers spend at once (each
    first call reserves ~$1.07 and costs ~$0.01-0.13: a $1.20 ceiling holds one at a time, the
    others waiting for it to settle)."""
    from skillbench.cli import main
    from tests.helpers import conv, skill

    step = {"tool_calls": [{"Bash": {"command": "echo hi > hello.txt"}}]}
    server = fake(
        {
            "latency": 0.5,
            "conversations": [conv("(?s)", "Create hello.txt", step, {"text": "done"})],
        }
    )
    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks: [{file_exists: hello.txt}]\n"},
        config='agent = "claude-code"\n',
    )
    out = tmp_path / "run"
    ceiling = 1.2
    main(
        [
            *("eval", str(folder), "--model", "anthropic/claude-sonnet-4-6", "--out", str(out)),
            *("--quiet", "--seed", "7", "--no-gen", "--execution-only", "--case", "hello"),
            *("--k", "4", "--parallel", "8", "--max-cost", str(ceiling)),
        ]
    )
    err = capfd.readouterr().err
    assert "Traceback" not in err
    summary = json.loads((out / "summary.json").read_text())
    exchanges = {p.stem: p.read_text().splitlines() for p in (out / "exchanges").glob("*")}
    calls = {k: [json.loads(x) for x in lines] for k, lines in exchanges.items()}
    spent = sum(x.get("cost_usd") or 0.0 for v in calls.values() for x in v)
    refused = {k for k, v in calls.items() if any("cannot cover" in str(x) for x in v)}
    answered = {k for k, v in calls.items() if any(x["status"] == 200 for x in v)}
    # sessions spent side by side: a call waited while another's was held, and was refused
    # once the spend alone left no room for it
    assert len(refused) >= 1 and len(answered) >= 2 and server.log()
    assert 0 < spent <= ceiling and summary["spend_usd"] <= ceiling
    assert summary["stopped"] == f"spend reached the --max-cost cap ${ceiling:.2f}"
