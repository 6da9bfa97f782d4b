"""Trigger recall and precision through the real SDK against the fake server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skillbench.cli import main
from skillbench.engine.triggers import decided
from tests.helpers import make_skill

MODEL = "anthropic/claude-sonnet-4-6"

GREETER = {
    "say hello to the team": '{"nonce": "$FRAME_ID", "selected": ["greeter"]}',
    "greet the new hire": 'I think {"nonce": "$FRAME_ID", "selected": ["greeter"]} fits best here.',
    "write a welcome note": 'Here you go:\n```json\n{"nonce": "$FRAME_ID", "selected": ["greeter"]}\n```',
    "welcome message please": "greeter seems right to me",
    "wave at the visitors": '{"nonce": "$FRAME_ID", "selected": ["farewell"]}',
}
GREETER_NOT = {
    "say goodbye": '{"nonce": "$FRAME_ID", "selected": ["farewell"]}',
    "rename this variable": '{"nonce": "$FRAME_ID", "selected": ["greeter"]}',
    "fix the build": '{"nonce": "$FRAME_ID", "selected": []}',
    "write release notes": "no idea",
    "sort the list": '{"nonce": "$FRAME_ID", "selected": []}',
}


def rule(prompt: str, *replies: str) -> dict[str, Any]:
    return {"when": f"User request:\\n{re.escape(prompt)}\\n", "replies": list(replies)}


def library(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    yaml_list = lambda items: "".join(f"  - {json.dumps(p)}\n" for p in items)  # noqa: E731
    make_skill(
        root,
        "greeter",
        {
            "evals/triggers.yaml": "should_trigger:\n"
            + yaml_list(GREETER)
            + "should_not_trigger:\n"
            + yaml_list(GREETER_NOT)
        },
        description="Writes greetings and welcome notes.",
    )
    make_skill(
        root,
        "farewell",
        {"evals/triggers.yaml": "should_trigger:\n" + yaml_list(["say goodbye", "bid farewell"])},
        description="Writes goodbyes.",
    )
    make_skill(root, "no-triggers")
    return root


def rules_for_all() -> list[dict[str, Any]]:
    rules = [rule(p, r) for p, r in {**GREETER, **GREETER_NOT}.items()]
    return [*rules, rule("bid farewell", '{"nonce": "$FRAME_ID", "selected": ["greeter"]}')]


def test_exact_counts_for_one_skill(rules_server, tmp_path: Path, capsys) -> None:
    server = rules_server(rules_for_all())
    code = main(["triggers", str(library(tmp_path) / "greeter"), "--model", MODEL])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == "triggers (catalog call): recall=0.60 precision=0.75 (tp=3 fn=2 fp=1 tn=3)"
    assert sorted(out[1:]) == sorted(
        [
            '  MISS: "welcome message please" (no usable JSON in the reply)',
            '  MISS: "wave at the visitors"',
            '  FALSE-FIRE: "rename this variable"',
            '  ERRORED: "write release notes" (no usable JSON in the reply)',
        ]
    )
    # the two replies with no usable answer are each asked for once more
    assert len(server.log()) == 12
    # every call shows the library's whole catalog and no tools
    body = server.log()[0].body
    assert "tools" not in body
    text = body["messages"][0]["content"][0]["text"]
    assert text.startswith(
        "Skills available:\n- farewell: Writes goodbyes.\n- greeter: Writes greetings and welcome notes.\n- no-triggers: Helps with no-triggers tasks.\n"
    )


def test_json_output_has_the_design_keys(rules_server, tmp_path: Path, capsys) -> None:
    rules_server(rules_for_all())
    assert main(["triggers", str(library(tmp_path) / "greeter"), "--model", MODEL, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["greeter"]
    assert {k: got[k] for k in ("recall", "precision", "tp", "fn", "fp", "tn")} == {
        "recall": 0.6,
        "precision": 0.75,
        "tp": 3,
        "fn": 2,
        "fp": 1,
        "tn": 3,
    }
    assert got["misses"] == ["welcome message please", "wave at the visitors"]
    assert got["false_fires"] == ["rename this variable"]


def test_runs_and_threshold_use_the_trigger_rate(rules_server, tmp_path: Path, capsys) -> None:
    root = tmp_path / "lib"
    make_skill(root, "greeter", {"evals/triggers.yaml": "should_trigger: [say hi]\n"})
    two_of_three = [
        '{"nonce": "$FRAME_ID", "selected": ["greeter"]}',
        '{"nonce": "$FRAME_ID", "selected": ["greeter"]}',
        '{"nonce": "$FRAME_ID", "selected": []}',
    ]
    server = rules_server([{"when": "say hi", "replies": two_of_three}])
    assert main(["triggers", str(root / "greeter"), "--model", MODEL, "--runs", "3"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "triggers (catalog call): recall=1.00 precision=1.00 (tp=1 fn=0 fp=0 tn=0)"
    ]
    # two fires of three runs at threshold 0.5: the third could not change it, so it is not made
    assert len(server.log()) == 2
    server = rules_server([{"when": "say hi", "replies": two_of_three}])
    assert (
        main(
            [
                "triggers",
                str(root / "greeter"),
                "--model",
                MODEL,
                "--runs",
                "3",
                "--threshold",
                "0.7",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        "triggers (catalog call): recall=0.00 precision=n/a (tp=0 fn=1 fp=0 tn=0)",
        '  MISS: "say hi" [rate 0.67]',
    ]
    assert len(server.log()) == 3  # at 0.7, two fires of two could still become 2 of 3


def test_a_prompt_stops_running_once_its_rate_is_decided_against_the_threshold() -> None:
    assert decided(2, 2, 1, 0.5) and not decided(2, 2, 1, 0.7)
    assert decided(0, 2, 1, 0.5)  # 1 of 3 at most
    assert not decided(1, 2, 2, 0.5)
    assert not decided(0, 0, 3, 0.5)  # nothing counted yet
    assert decided(1, 3, 0, 0.5)  # no run left


def test_library_root_with_steal_summary_and_shared_calls(
    rules_server, tmp_path: Path, capsys
) -> None:
    server = rules_server(rules_for_all())
    page = tmp_path / "triggers.html"
    assert main(["triggers", str(library(tmp_path)), "--model", MODEL, "--html", str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "farewell:"
    assert out[1] == "  triggers (catalog call): recall=0.50 precision=1.00 (tp=1 fn=1 fp=0 tn=0)"
    assert out[2] == '    MISS: "bid farewell"'
    assert out[3] == "greeter:"
    assert out[-3:] == [
        "confusion (who took each miss):",
        '  farewell: "bid farewell" -> greeter',
        '  greeter: "wave at the visitors" -> farewell',
    ]
    # "say goodbye" is in both files with the same catalog: asked once (and the two
    # replies with no usable answer each once more)
    assert len(server.log()) == 13
    # the page draws who took each skill's should-trigger prompts
    matrix = page.read_text().split("<table class='matrix'>", 1)[1].split("</table>", 1)[0]
    cells = {
        row.split("</th>", 1)[0]: re.findall(r"<td class='m [a-z]+'[^>]*>(\d*)</td>", row)
        for row in matrix.split("<tr><th>")[2:]
    }
    # columns: farewell, greeter, (errored); "welcome message please" got no usable answer
    assert cells == {"farewell": ["1", "1", ""], "greeter": ["1", "3", "1"]}


def test_failed_calls_count_as_misses_only_for_should_trigger(
    rules_server, tmp_path: Path, capsys, monkeypatch
) -> None:
    root = tmp_path / "lib"
    make_skill(
        root,
        "greeter",
        {"evals/triggers.yaml": "should_trigger: [say hi]\nshould_not_trigger: [say bye]\n"},
    )
    rules_server(
        [
            {
                "when": "say",
                "replies": ["x"],
                "faults": [{"status": 500, "times": 99, "retry_after": 0.01}],
            }
        ]
    )
    (tmp_path / "skillbench.toml").write_text("max_retries = 0\n")
    assert main(["triggers", str(root / "greeter"), "--model", MODEL]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "triggers (catalog call): recall=0.00 precision=n/a (tp=0 fn=1 fp=0 tn=0)"
    assert out[1].startswith(
        '  MISS: "say hi" (call failed: infrastructure: InternalServerError (500)'
    )
    assert out[2].startswith('  ERRORED: "say bye" (call failed:')


def test_no_triggers_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    make_skill(tmp_path, "plain")
    assert main(["triggers", str(tmp_path / "plain")]) == 2
    assert (
        "no skill there has a trigger file (evals/triggers.yaml or a trigger JSON)"
        in capsys.readouterr().err
    )
