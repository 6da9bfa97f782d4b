"""The check kinds other eval formats need (issue 17, part 1): a `verifier` script (exit 0
pass, 1 fail, 2 no verdict: unscored when in both arms, that arm's failure when in one), a `reward` file written by a
script whose exit code says nothing (Harbor), and a `grader` printing {pass, score, evidence}
(skill-optimizer). End to end with real sandboxes and the fake model server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, conv, run_eval, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

CASES = {
    # Harbor style: test.sh always exits 0; the reward file decides
    "evals/cases/answer.yaml": (
        "task: Put the answer in answer.txt\n"
        "checks:\n  - reward: {file: /logs/verifier/reward.txt, min: 1, run: answer/tests/test.sh}\n"
    ),
    "evals/cases/answer/tests/test.sh": (
        "mkdir -p /logs/verifier\n"
        "if grep -qx 42 answer.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\nexit 0\n"
    ),
    # a verifier whose dependency is missing: no verdict, whatever the agent did
    "evals/cases/broken.yaml": "task: Write notes.txt\nchecks:\n  - verifier: broken/verify.sh\n",
    "evals/cases/broken/verify.sh": "command -v no-such-grader >/dev/null || exit 2\nexit 0\n",
    # a verifier that judges: 0 pass, 1 fail
    "evals/cases/count.yaml": "task: Write count.txt\nchecks:\n  - verifier: count/verify.sh\n",
    "evals/cases/count/verify.sh": 'test "$(cat count.txt)" = 3 || exit 1\n',
    # skill-optimizer style: a grader printing its verdict, with $CASE, $WORK and $RESULTS
    "evals/cases/poem.yaml": (
        "task: Write poem.txt\nchecks:\n  - grader: python3 $CASE/checks/grade.py\n"
    ),
    "evals/cases/poem/checks/grade.py": (
        "import json, os\n"
        "lines = open(os.path.join(os.environ['WORK'], 'poem.txt')).read().split()\n"
        "trace = open(os.path.join(os.environ['RESULTS'], 'trace.jsonl')).read()\n"
        "print('grading...')\n"
        "print(json.dumps({'pass': len(lines) >= 3, 'score': len(lines) / 4,\n"
        "                  'evidence': [f'{len(lines)} of 4 words', f'trace {len(trace) > 0}']}))\n"
    ),
}


def test_verifier_reward_and_grader_decide_rows(fake, tmp_path: Path, capsys) -> None:
    folder = skill(tmp_path, CASES)
    fake(
        {
            "conversations": [
                conv(CAND, "answer", write_file("answer.txt", "42\n"), {"text": "done"}),
                conv(BASE, "answer", write_file("answer.txt", "41\n"), {"text": "done"}),
                conv("(?s)", "notes", write_file("notes.txt", "n\n"), {"text": "done"}),
                conv(CAND, "count", write_file("count.txt", "3\n"), {"text": "done"}),
                conv(BASE, "count", write_file("count.txt", "4\n"), {"text": "done"}),
                conv(
                    CAND, "poem", write_file("poem.txt", "roses are red today\n"), {"text": "done"}
                ),
                conv(BASE, "poem", write_file("poem.txt", "roses\n"), {"text": "done"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # too few units for a verdict: INCONCLUSIVE
    rows = {r["case"]: r for r in summary["rows"]}
    # the reward file decided, though test.sh exited 0 in both arms
    assert (rows["answer"]["outcome"], rows["answer"]["decided_by"]) == ("win", "checks")
    reward = rows["answer"]["arms"]["baseline"]["checks"][0]
    assert reward["name"] == "reward: /logs/verifier/reward.txt >= 1"
    assert (reward["passed"], reward["detail"], reward["score"]) == (False, "reward 0 (min 1)", 0)
    # exit 2 in both arms is no verdict: unscored, not a tie, and said why; no session is
    # retried for it (in one arm only, that arm fails: tests/importers/test_margin_verdicts.py)
    assert rows["broken"]["decided_by"] == "unscored"
    assert rows["broken"]["reason"].startswith(
        "verifier: broken/verify.sh gave no verdict in either arm (exit 2 (no verdict)"
    )
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    broken = [j for j in journal if j.get("session") == "broken" and j["type"] == "session"]
    assert len(broken) == 2 and all(j["outcome"] == "fail" for j in broken), broken
    assert (rows["count"]["outcome"], rows["count"]["decided_by"]) == ("win", "checks")
    assert rows["count"]["arms"]["baseline"]["checks"][0]["detail"] == "exit 1"
    # the grader's score and evidence reach the row
    grade = rows["poem"]["arms"]["candidate"]["checks"][0]
    assert (grade["passed"], grade["score"]) == (True, 1.0)
    assert grade["detail"] == "score 1; 4 of 4 words; trace True"
    assert rows["poem"]["arms"]["baseline"]["checks"][0]["detail"].startswith("score 0.25")
    assert summary["comparisons"]["baseline"]["win"] == 3
    # and the page shows them
    assert main(["report", str(tmp_path / "run"), "--format", "html"]) == 0
    assert "score 1; 4 of 4 words" in capsys.readouterr().out


def test_check_names_a_missing_or_escaping_script_with_its_line(tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/a.yaml": "task: Do it\nchecks:\n  - file_exists: x\n  - verifier: a/nope.sh\n",
            "evals/cases/b.yaml": "task: Do it\nchecks:\n  - reward: {file: r.txt, run: ../../../x.sh}\n",
            "evals/cases/c.yaml": "task: Do it\nchecks:\n  - reward: {file: r.txt, min: high}\n",
        },
    )
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert (
        f"{folder}/evals/cases/a.yaml:4: error: `verifier` script 'a/nope.sh' does not exist" in out
    )
    assert (
        f"{folder}/evals/cases/b.yaml:3: error: `reward run` script '../../../x.sh' is outside"
        in out
    )
    assert (
        f"{folder}/evals/cases/c.yaml:3: error: `reward` `min` must be a number, got a string"
        in out
    )


def test_a_case_runs_in_the_image_its_containerfile_builds(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/tool.yaml": (
                "task: Use the tool\ncontainerfile: tool/Containerfile\n"
                'checks:\n  - command_succeeds: test "$(cat /opt/marker)" = built\n'
                "  - transcript_mentions: marker says built\n"
            ),
            # offline, FROM names a local image: skillbench-sandbox is the sandbox image
            "evals/cases/tool/Containerfile": "FROM skillbench-sandbox\nRUN echo built > /opt/marker\n",
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Use the tool",
                    {"tool_calls": [{"bash": {"command": "cat /opt/marker"}}]},
                    {"text": "the marker says built"},
                )
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # too few units for a verdict: INCONCLUSIVE
    # the agent saw the image's file, and so did the checker
    checks = summary["rows"][0]["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in checks] == [True, True]
    # a case whose image is not there is refused before anything runs, naming the file
    (folder / "evals/cases/tool.yaml").write_text(
        "task: Use the tool\nimage: localhost/no-such-image:1\nchecks:\n  - file_exists: x\n"
    )
    code = main(
        [
            "eval",
            str(folder),
            "--model",
            "anthropic/claude-sonnet-4-6",
            "--no-gen",
            "--execution-only",
            "--out",
            str(tmp_path / "run2"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"{folder}/evals/cases/tool.yaml: the case's image: image " in err
    assert "'localhost/no-such-image:1' is not a local image" in err


def test_a_workdir_holds_the_workspace_seeded_from_the_image(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/app.yaml": (
                "task: Finish the app\ncontainerfile: app/Containerfile\nworkdir: /app\n"
                "checks:\n  - file_exists: done.txt\n  - verifier: app/verify.sh\n"
                '  - command_succeeds: test "$(pwd)" = /app && grep -q seeded /app/seed.txt\n'
            ),
            # the image's /app (a Harbor-style WORKDIR with files COPYed in) seeds the workspace
            "evals/cases/app/Containerfile": (
                "FROM skillbench-sandbox\nRUN mkdir -p /app && echo seeded > /app/seed.txt\n"
                "WORKDIR /app\n"
            ),
            "evals/cases/app/verify.sh": (
                'test "$WORK" = /app || exit 2\ngrep -qs "seen: seeded" done.txt || exit 1\n'
            ),
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Finish the app",
                    {
                        "tool_calls": [
                            {"bash": {"command": 'pwd; echo "seen: $(cat seed.txt)" > done.txt'}}
                        ]
                    },
                    {"text": "done"},
                ),
                conv(BASE, "Finish the app", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # too few units for a verdict: INCONCLUSIVE
    row = summary["rows"][0]
    assert row["outcome"] == "win"
    assert [c["passed"] for c in row["arms"]["candidate"]["checks"]] == [True, True, True]
    transcript = (tmp_path / "run/transcripts/app.candidate.1.jsonl").read_text()
    assert '"text": "/app\\n' in transcript  # the agent started in /app
    # a workdir the sandbox needs is refused with its line
    (folder / "evals/cases/app.yaml").write_text(
        "task: t\nworkdir: /tmp\nchecks: [{file_exists: x}]\n"
    )
    assert main(["check", str(folder)]) == 1
    assert "app.yaml:2: error: `workdir` '/tmp' is a folder the sandbox or the system needs" in (
        capsys.readouterr().out
    )


def test_a_case_whose_image_cannot_build_is_skipped_and_the_others_score(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/good.yaml": "task: Write x\nchecks:\n  - file_exists: x\n",
            "evals/cases/broken.yaml": (
                "task: Write y\ncontainerfile: broken/Containerfile\nchecks:\n  - file_exists: y\n"
            ),
            "evals/cases/broken/Containerfile": "FROM skillbench-sandbox\nRUN exit 3\n",
        },
    )
    fake({"conversations": [conv("(?s)", "Write x", {"text": "done"})]})
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert [r["case"] for r in summary["rows"]] == ["good"], lines
    skipped = [line for line in lines if "broken" in line]
    assert any(
        "skipped (environment): broken" in line and "the case's image" in line for line in skipped
    ), lines
    assert code == 3, lines  # one scored case: too few units for a verdict


def test_a_reward_script_gets_the_time_its_case_gives_it(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/slow.yaml": (
                "task: Write x\nchecks:\n"
                "  - reward: {file: /tmp/r.txt, min: 1, run: slow/test.sh, timeout: 2}\n"
            ),
            "evals/cases/slow/test.sh": "sleep 30\necho 1 > /tmp/r.txt\n",
        },
    )
    fake({"conversations": [conv("(?s)", "Write x", {"text": "done"})]})
    _, _, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    check = summary["rows"][0]["arms"]["baseline"]["checks"][0]
    assert check["passed"] is False and "timed out after 2 s" in check["detail"], check


def test_an_image_entrypoint_is_replaced_not_wrapped_around_the_executor(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/ep.yaml": (
                "task: Write x\ncontainerfile: ep/Containerfile\n"
                "checks:\n  - command_succeeds: test -f /opt/ep\n"
            ),
            # an entrypoint that never runs its arguments (as a service image's may)
            "evals/cases/ep/Containerfile": (
                'FROM skillbench-sandbox\nRUN touch /opt/ep\nENTRYPOINT ["sh", "-c", "exit 7"]\n'
            ),
        },
    )
    fake({"conversations": [conv("(?s)", "Write x", {"text": "done"})]})
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    check = summary["rows"][0]["arms"]["baseline"]["checks"][0]
    assert check["passed"] is True, (check, lines)
