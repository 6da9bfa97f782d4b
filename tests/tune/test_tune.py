"""`skillbench tune` (issue 25) against the fake model server, through the real SDK and, once,
the real Claude Code CLI in a sandbox.

The selector is scripted so that routing depends on the words of the description: a
"welcome" request goes to `greeter` only when greeter's description says "welcome" (else
`farewell` takes it), so a proposal that adds the word truly improves recall, on prompts the
proposer never saw.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skillbench.cli import main
from skillbench.evals.skills import digest, read_skill
from skillbench.models.fake_server import FakeModelServer, anthropic_shape
from skillbench.models.script import parse_script
from skillbench.tune.apply import rewrite_description
from skillbench.tune.proposer import SYSTEM as PROPOSER_SYSTEM
from tests.helpers import make_skill, write

MODEL = "anthropic/claude-sonnet-4-6"
ROOT = Path(__file__).resolve().parents[2]
HELLO = [
    "say hello to the new team",
    "write a hello for the meetup",
    "a short hello for my neighbour",
    "hello message for the visitors",
]
WELCOME = [
    "welcome our new intern",
    "welcome the guests at the gala",
    "a welcome note for the new hire",
    "welcome aboard message for Sam",
    "welcome the students to the course",
    "a welcome for the conference attendees",
    "welcome back note for the team",
    "welcome speech for the opening",
]
NOT = [
    "say goodbye to Ana",
    "a farewell card for my boss",
    "sum 2 and 3",
    "count the words in this file",
    "goodbye email to the client",
    "add up these invoices",
]
ORIGINAL = "Writes greetings, hellos and introductions."
PROPOSED = "Writes greetings and welcome notes: hellos, welcomes and introductions."
WORSE = "Writes short greetings."


def yaml_list(items: list[str]) -> str:
    return "".join(f"  - {json.dumps(p)}\n" for p in items)


def library(tmp_path: Path, should: list[str] | None = None, negatives: list[str] | None = None):
    root = tmp_path / "lib"
    should = HELLO + WELCOME if should is None else should
    negatives = NOT if negatives is None else negatives
    make_skill(
        root,
        "greeter",
        {
            "evals/triggers.yaml": "should_trigger:\n"
            + yaml_list(should)
            + "should_not_trigger:\n"
            + yaml_list(negatives)
        },
        description=ORIGINAL,
    )
    make_skill(root, "farewell", description="Writes goodbyes and farewell notes.")
    make_skill(root, "counter", description="Counts and sums numbers.")
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n"})
    return root / "greeter"


def selected(*names: str) -> list[str]:
    return [json.dumps({"nonce": "$FRAME_ID", "selected": list(names)})]


def rules(*proposals: str, latency: float = 0.0) -> dict[str, Any]:
    """The proposer's replies in turn (prose around the JSON), then a catalog selector that
    reads the descriptions."""
    replies = [
        f"Here it is: {json.dumps({'nonce': '$FRAME_ID', 'description': p})} — hope it helps"
        for p in proposals
    ]
    return {
        "latency": latency,
        "rules": [
            {
                "when": "Write a better description|That cannot be used",
                "replies": replies or [json.dumps({"nonce": "$FRAME_ID", "description": PROPOSED})],
            },
            {
                "when": r"(?s)- greeter:[^\n]*welcom[^\n]*\n.*User request:\n[^\n]*welcome",
                "replies": selected("greeter"),
            },
            {"when": r"(?s)User request:\n[^\n]*welcome", "replies": selected("farewell")},
            {"when": r"(?s)User request:\n[^\n]*hello", "replies": selected("greeter")},
            {
                "when": r"(?s)User request:\n[^\n]*(goodbye|farewell)",
                "replies": selected("farewell"),
            },
            {"when": r"(?s)User request:\n", "replies": selected("counter")},
        ],
    }


def tune(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["tune", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def proposer_requests(server: FakeModelServer) -> list[str]:
    return [
        json.dumps(r.body) for r in server.log() if anthropic_shape(r.body)[0] == PROPOSER_SYSTEM
    ]


def asked(server: FakeModelServer, prompt: str) -> list[int]:
    """Indexes (in the request log) of the catalog calls that routed `prompt`."""
    return [
        i
        for i, r in enumerate(server.log())
        if f"User request:\n{prompt}\n" in anthropic_shape(r.body)[2]
    ]


def test_a_proposal_wins_on_validation_and_is_reported_on_test(
    fake, tmp_path: Path, capsys
) -> None:
    skill = library(tmp_path)
    server = fake(rules(PROPOSED, WORSE))
    run = tmp_path / "run"
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--rounds",
        "2",
        "--runs",
        "2",
        "--out",
        str(run),
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    assert {"split", "rounds", "original", "chosen"} <= set(result)
    split = result["split"]
    train, validation, test = (split[k] for k in ("train", "validation", "test"))
    # stratified: 12 should-trigger prompts 6/3/3, 6 should-not 2/2/2; recorded as made
    assert [len(s["should_trigger"]) for s in (train, validation, test)] == [6, 3, 3]
    assert [len(s["should_not_trigger"]) for s in (train, validation, test)] == [2, 2, 2]
    assert json.loads((run / "split.json").read_text())["test"] == test

    def recall_of(prompts: list[str]) -> float:
        return sum(p in HELLO for p in prompts) / len(prompts)

    r0, r1, r2 = result["rounds"]
    assert r0["description"] == ORIGINAL and r1["description"] == PROPOSED
    assert r2["description"] == WORSE and r2["validation"]["recall"] < 1
    assert r0["train"]["recall"] == recall_of(train["should_trigger"]) < 1
    assert r0["validation"]["recall"] == recall_of(validation["should_trigger"])
    assert r1["train"]["recall"] == r1["validation"]["recall"] == 1.0
    assert result["chosen"]["description"] == PROPOSED and result["chosen"]["round"] == 1
    # the figure reported is the test set's
    assert result["original"]["test"]["recall"] == recall_of(test["should_trigger"])
    assert result["chosen"]["test"]["recall"] == 1.0
    assert result["chosen"]["test"]["precision"] == 1.0
    assert {c["skill"] for c in result["collisions"]["removed"]} == {"farewell"}
    assert result["collisions"]["introduced"] == []

    # the proposer saw train prompts and never a validation or test prompt
    requests = proposer_requests(server)
    assert len(requests) == 2
    for request in requests:
        assert any(p in request for p in train["should_trigger"])
        for p in [*validation["should_trigger"], *validation["should_not_trigger"]]:
            assert p not in request
        for p in [*test["should_trigger"], *test["should_not_trigger"]]:
            assert p not in request
    # test prompts: routed only after the rounds, once per run for the original and the
    # chosen description, never for the round that lost on validation
    log = server.log()
    proposed_at = max(i for i, r in enumerate(log) if anthropic_shape(r.body)[0] == PROPOSER_SYSTEM)
    for p in [*test["should_trigger"], *test["should_not_trigger"]]:
        seen = asked(server, p)
        # 2 descriptions x at most 2 runs (a second run is skipped once the first settles it)
        assert 2 <= len(seen) <= 2 * 2 and min(seen) > proposed_at, p
        assert not any(f"- greeter: {WORSE}" in anthropic_shape(log[i].body)[2] for i in seen)
    # the run folder: the proposal, each round's per-prompt results, the page
    assert json.loads((run / "proposals/01.json").read_text())["description"] == PROPOSED
    rounds = [json.loads((run / f"rounds/{n:02d}.json").read_text()) for n in (0, 1, 2)]
    assert {d["prompt"] for d in rounds[1]["results"]} == {
        *train["should_trigger"],
        *train["should_not_trigger"],
        *validation["should_trigger"],
        *validation["should_not_trigger"],
    }
    assert "<html" in (run / "report.html").read_text()[:200]
    assert json.loads((run / "result.json").read_text())["chosen"] == result["chosen"]


def test_the_table_and_the_diff_without_apply_change_nothing(fake, tmp_path: Path, capsys) -> None:
    skill = library(tmp_path)
    fake(rules())
    before = (skill / "SKILL.md").read_bytes()
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--rounds",
        "1",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("tune greeter: catalog call on anthropic/claude-sonnet-4-6")
    assert lines[1] == "split (seed 0, should+should-not): train 6+2, validation 3+2, test 3+2"
    assert lines[2] == "  round train R train P valid R valid P  chars  description"
    assert re.match(
        r"  0     +0\.\d\d +1\.00 +0\.\d\d +1\.00 +43  " + re.escape(ORIGINAL), lines[3]
    )
    assert lines[4].startswith("  1   * ") and "1.00    1.00    1.00    1.00" in lines[4]
    assert "chosen: round 1 (the best validation F1; ties go to the shorter)" in lines
    assert any(line.startswith("test (measured once): original recall=") for line in lines)
    assert any(line.startswith("collisions removed: farewell on ") for line in lines)
    assert f"-description: {ORIGINAL}" in lines
    assert f'+description: "{PROPOSED}"' in lines
    assert (skill / "SKILL.md").read_bytes() == before
    assert "not applied (SKILL.md is unchanged); to write it: skillbench tune --resume" in err


def test_apply_rewrites_exactly_the_description_line(fake, tmp_path: Path, capsys) -> None:
    skill = library(tmp_path)
    original = (
        "---\r\nname: greeter\r\n# who reads this: the router\r\n"
        f"description: '{ORIGINAL}'\r\nlicense: MIT\r\n---\r\n# Greeter\r\n\r\nBe warm.\r\n"
    ).encode()
    (skill / "SKILL.md").write_bytes(original)
    fake(rules())
    old = digest(skill)
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--rounds",
        "1",
        "--runs",
        "1",
        "--apply",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0, err
    after = (skill / "SKILL.md").read_bytes()
    changed = [
        (a, b) for a, b in zip(original.split(b"\n"), after.split(b"\n"), strict=True) if a != b
    ]
    assert changed == [
        (f"description: '{ORIGINAL}'\r".encode(), f"description: '{PROPOSED}'\r".encode())
    ]
    assert read_skill(skill).description == PROPOSED
    new = digest(skill)
    assert new != old
    assert f"the skill's digest changed {old[:19]}… -> {new[:19]}…" in out
    assert "a new version, which needs a new eval" in out
    # the run is finished: resuming it again refuses, the skill is a new version now
    code, _, err = tune(capsys, "--resume", str(tmp_path / "run"), "--apply")
    assert code == 2 and "the skill's files changed since the run started" in err


def test_a_multi_line_description_becomes_one_line_and_nothing_else_moves() -> None:
    text = (
        "---\nname: greeter\ndescription: >\n  Writes greetings\n  and hellos.\n\n"
        "metadata:\n  owner: me\n---\nbody: not front matter\n"
    )
    got = rewrite_description(text, "Say #hello: politely")
    assert got == (
        '---\nname: greeter\ndescription: "Say #hello: politely"\n\n'
        "metadata:\n  owner: me\n---\nbody: not front matter\n"
    )


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "evals/triggers.yaml": "should_trigger:\n"
                + yaml_list(HELLO[:1] + WELCOME[:4])
                + "should_not_trigger:\n"
                + yaml_list(NOT[:5])
            },
            "evals/triggers.yaml: 5 should-trigger prompt(s) are too few to split into train / "
            "validation / test with at least 2 in each (6 needed at --split 0.5/0.25/0.25); add "
            "prompts, or keep a test set apart in evals/triggers.test.yaml",
        ),
        (
            {},
            "no evals/triggers.yaml to tune on; write one first with `skillbench gen ",
        ),
    ],
)
def test_too_small_sets_are_refused_in_one_line(
    files: dict[str, str], expected: str, fake, tmp_path: Path, capsys
) -> None:
    skill = make_skill(tmp_path / "lib", "greeter", files)
    server = fake(rules())
    code, out, err = tune(capsys, str(skill), "--method", "catalog", "--model", MODEL)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and expected in err, err
    assert "Traceback" not in err and server.log() == []


def test_a_held_apart_test_set_is_the_test(fake, tmp_path: Path, capsys) -> None:
    skill = library(tmp_path, should=HELLO[:1] + WELCOME[:4], negatives=NOT[:5])
    held = ["hello there, new colleague", "welcome party invitation", "a welcome for Bo"]
    write(
        skill,
        {
            "evals/triggers.test.yaml": "should_trigger:\n"
            + yaml_list(held)
            + "should_not_trigger:\n"
            + yaml_list(["goodbye Jo", "sum 4 and 5"])
        },
    )
    fake(rules())
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--rounds",
        "1",
        "--runs",
        "1",
        "--json",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["split"]["test"]["should_trigger"] == held
    assert result["split"]["test_file"].endswith("evals/triggers.test.yaml")
    assert result["original"]["test"]["recall"] == pytest.approx(1 / 3)
    assert result["chosen"]["test"]["recall"] == 1.0
    assert "note: thin sets (train 3+3, validation 2+2, test 3+2" in err
    # a test prompt that is also tuned on is refused
    write(
        skill,
        {
            "evals/triggers.test.yaml": "should_trigger:\n"
            + yaml_list([WELCOME[0], *held])
            + "should_not_trigger:\n"
            + yaml_list(["goodbye Jo", "sum 4 and 5"])
        },
    )
    code, _, err = tune(capsys, str(skill), "--method", "catalog", "--model", MODEL)
    assert code == 2 and f"{WELCOME[0]!r} is also in triggers.yaml" in err
    # ... and so is one that differs only in case and punctuation (outside review)
    twin = WELCOME[0].upper() + "!"
    write(
        skill,
        {
            "evals/triggers.test.yaml": "should_trigger:\n"
            + yaml_list([twin, *held])
            + "should_not_trigger:\n"
            + yaml_list(["goodbye Jo", "sum 4 and 5"])
        },
    )
    code, _, err = tune(capsys, str(skill), "--method", "catalog", "--model", MODEL)
    assert code == 2 and f"{twin!r} is also in triggers.yaml (as {WELCOME[0]!r}" in err


def test_plan_prints_the_calls_and_starts_nothing(fake, tmp_path: Path, capsys) -> None:
    skill = library(tmp_path)
    server = fake(rules())
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--rounds",
        "2",
        "--runs",
        "3",
        "--plan",
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("plan: tune greeter (sha256:")
    # (2 + 1) measurements of 13 prompts x 3 runs on train+validation, 2 of 5 x 3 on test
    assert (
        "  triggers: up to 147 catalog call(s) (3 measurement(s) of 39 on train+validation, "
        "2 of 15 on test)" in lines
    )
    assert any(line.startswith("  estimated cost: ~$") for line in lines)
    assert lines[-1] == "nothing was started (--plan)"
    assert server.log() == [] and not (tmp_path / ".skillbench").exists()


def priced(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n"
            f'[prices."{MODEL}"]\ninput = 1000.0\noutput = 1000.0\n'
        },
    )


def test_a_budget_stop_keeps_finished_rounds_and_resumes(fake, tmp_path: Path, capsys) -> None:
    skill = library(tmp_path)
    priced(tmp_path)
    fake(rules())
    common = ["--method", "catalog", "--model", MODEL, "--rounds", "1", "--runs", "1"]
    code, out, err = tune(capsys, str(skill), *common, "--json", "--out", str(tmp_path / "full"))
    assert code == 0, err
    after_round_0 = json.loads(out)["rounds"][0]["spend_usd"]
    assert after_round_0 > 0
    # a cap just above round 0's spend: every call reserves its worst case in the run's
    # ledger first, so the last calls of round 0 (their worst cases on top of what is spent)
    # are refused unsent: the round is not kept, and the spend stays under the cap
    run = tmp_path / "capped"
    cap = f"{after_round_0 * 1.001:.6f}"
    code, out, err = tune(capsys, str(skill), *common, "--max-cost", cap, "--out", str(run))
    assert code == 1, err
    assert f"stopped: the --max-cost cap ${float(cap):.2f} was reached during round 0" in out
    assert not (run / "rounds/00.json").exists() and not (run / "test.json").exists()
    spent = json.loads((run / "spend.json").read_text())["spend_usd"]
    assert 0 < spent <= float(cap)
    assert f"continue with: skillbench tune --resume {run} --max-cost" in err
    # a resumed run is the same run: a flag that differs from its plan is refused
    code, _, err = tune(capsys, "--resume", str(run), "--runs", "2")
    assert code == 2 and "refused, --runs differs from the run's (1); start a new tune" in err
    # the resumed run continues the same ledger: round 0 again, then round 1
    code, out, err = tune(capsys, "--resume", str(run), "--max-cost", "1000", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [r["round"] for r in result["rounds"]] == [0, 1]
    assert result["chosen"]["round"] == 1
    assert result["rounds"][0]["spend_usd"] == pytest.approx(spent + after_round_0, rel=0.01)


@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_ctrl_c_keeps_finished_rounds(
    sig: signal.Signals, code: int, said: str, tmp_path: Path
) -> None:
    skill = library(tmp_path)
    server = FakeModelServer(parse_script(rules(latency=0.3))).start()
    run = tmp_path / "run"
    env = {**os.environ, **server.env(), "PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skillbench",
                "tune",
                str(skill),
                "--method",
                "catalog",
                "--model",
                MODEL,
                "--rounds",
                "3",
                "--runs",
                "1",
                "--out",
                str(run),
            ],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not (run / "rounds/00.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        server.stop()
    assert proc.returncode == code, err
    assert re.search(
        rf"{said}; the [12] finished round\(s\) are kept in {re.escape(str(run))}\. ", err
    )
    assert f"Continue with: skillbench tune --resume {run}" in err
    assert "Traceback" not in err
    assert (run / "rounds/00.json").is_file() and not (run / "test.json").exists()


# --- the real Claude Code CLI routing each prompt (sandboxed, fake model) -------------------


def load(name: str) -> dict[str, Any]:
    return {"tool_calls": [{"Skill": {"skill": name}}]}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_one_round_by_claude_codes_own_routing(fake, tmp_path: Path, capsys) -> None:
    hello, welcome = HELLO[:1], WELCOME[:5]  # every set of two has a "welcome" request
    skill = library(tmp_path, should=hello + welcome)
    done = {"text": "Done."}
    conversations = [
        {"when": "(?s)Use the greeter skill for this", "steps": [load("greeter"), done]}
    ]
    for p in welcome:  # Claude Code lists each skill's description before the request
        conversations.append(
            {
                "when": rf"(?s)- greeter:[^\n]*welcom.*{re.escape(p)}",
                "steps": [load("greeter"), done],
            }
        )
        conversations.append({"when": f"(?s){re.escape(p)}", "steps": [load("farewell"), done]})
    for p in hello:
        conversations.append({"when": f"(?s){re.escape(p)}", "steps": [load("greeter"), done]})
    for p in NOT:
        who = [load("farewell")] if re.search("goodbye|farewell", p) else []
        conversations.append({"when": f"(?s){re.escape(p)}", "steps": [*who, done]})
    script = rules()
    server = fake({"rules": script["rules"][:1], "conversations": conversations})
    run = tmp_path / "run"
    code, out, err = tune(
        capsys,
        str(skill),
        "--agent",
        "claude-code",
        "--model",
        MODEL,
        "--rounds",
        "1",
        "--runs",
        "1",
        "--json",
        "--out",
        str(run),
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == "agent claude-code"
    test = result["split"]["test"]["should_trigger"]
    assert result["chosen"]["round"] == 1
    assert result["original"]["test"]["recall"] == sum(p in hello for p in test) / len(test)
    assert result["chosen"]["test"]["recall"] == 1.0
    # Claude Code itself read the proposed description from the staged SKILL.md
    listed = [
        json.dumps(r.body) for r in server.log() if f"- greeter: {PROPOSED}" in json.dumps(r.body)
    ]
    assert listed
    assert list(run.glob("routing/*/transcripts/*.jsonl"))


def test_a_reply_outside_the_limits_is_sent_back_and_the_proposer_can_be_another_model(
    fake, tmp_path: Path, capsys
) -> None:
    skill = library(tmp_path)
    script = rules()
    script["rules"][0]["replies"] = [
        json.dumps({"nonce": "$FRAME_ID", "description": "Writes <b>welcome</b> notes."}),
        f"Sorry. {json.dumps({'nonce': '$FRAME_ID', 'description': PROPOSED})}",
    ]
    server = fake(script)
    run = tmp_path / "run"
    code, out, err = tune(
        capsys,
        str(skill),
        "--method",
        "catalog",
        "--model",
        MODEL,
        "--proposer-model",
        "openai/gpt-4.1",
        "--rounds",
        "3",
        "--runs",
        "1",
        "--json",
        "--out",
        str(run),
    )
    assert code == 0, err
    result = json.loads(out)
    # round 1: the first reply is refused with its reason and the second one is used; round 2
    # proposes the same again: perfect on train, no better on validation, so the rounds stop
    assert [r["description"] for r in result["rounds"]] == [ORIGINAL, PROPOSED, PROPOSED]
    assert result["early_stop"] == "round 2 is perfect on train and did not improve validation"
    proposal = json.loads((run / "proposals/01.json").read_text())
    assert proposal["rejected"] == [
        "the description has angle brackets (< or >), which skill loaders refuse"
    ]
    sent_back = server.log("openai")[1].body["messages"][-1]["content"]
    assert "That cannot be used: the description has angle brackets" in sent_back
    # the proposer spoke OpenAI's protocol, every trigger call Anthropic's
    assert {r.body["model"] for r in server.log("openai")} == {"gpt-4.1"}
    assert all(PROPOSER_SYSTEM not in json.dumps(r.body) for r in server.log("anthropic"))


def test_validation_ties_go_to_the_shorter_description() -> None:
    from skillbench.engine.triggers import Counts
    from skillbench.tune.rounds import Round, choose

    same = Counts(1.0, 1.0, 2, 0, 0, 2)
    rounds = [
        Round(round=0, description="a longer original one", train=same, validation=same),
        Round(round=1, description="short", train=same, validation=same),
        Round(round=2, description="tiny", train=same, validation=Counts(0.5, 1.0, 1, 1, 0, 2)),
        Round(round=3, description=None, note="no usable description"),
    ]
    assert choose(rounds).round == 1


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200), st.sampled_from(["plain", "'single'", '"double"']))
def test_any_usable_description_is_written_as_one_line_that_reads_back(
    description: str, style: str
) -> None:
    from skillbench.tune.proposer import check_description

    assume(check_description(description) is None)
    text = f"---\nname: greeter\ndescription: {style}\nlicense: MIT\n---\n# body\n"
    got = rewrite_description(text, description)
    before, after = text.split("\n"), got.split("\n")
    assert len(before) == len(after)
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] in ([2], [])
    front = yaml.safe_load(got.split("---\n")[1])
    assert front == {"name": "greeter", "description": description, "license": "MIT"}


def test_a_skill_with_only_evals_json_and_a_trigger_json_is_tuned(
    fake, tmp_path: Path, capsys
) -> None:
    """Issue 33's done-when, the tune step: the trigger set is a trigger JSON file where it
    stands (beside skill-creator's evals.json), with no import and no edit."""
    skill = library(tmp_path)
    (skill / "evals/triggers.yaml").unlink()
    rows = [{"query": q, "should_trigger": True} for q in HELLO + WELCOME]
    rows += [{"query": q, "should_trigger": False} for q in NOT]
    write(
        skill,
        {
            "evals/trigger-evals.json": json.dumps(rows),
            "evals/evals.json": json.dumps({"evals": [{"id": 1, "prompt": "Greet Ada"}]}),
        },
    )
    before = digest(skill)
    fake(rules())
    code, out, err = tune(
        capsys, str(skill), "--method", "catalog", "--model", MODEL, "--rounds", "1"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "split (seed 0, should+should-not): train 6+2, validation 3+2, test 3+2"
    assert "chosen: round 1 (the best validation F1; ties go to the shorter)" in lines
    assert digest(skill) == before  # nothing was imported or edited
