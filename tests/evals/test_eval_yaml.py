"""Vally's and Skillgrade's `eval.yaml`, read where they stand: the schema comes from the
content (both tools use the name), deterministic graders stay deterministic, and `check`
reports what every field became (fixtures written here in each tool's documented shape)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals import load_assets
from tests.helpers import make_skill

VALLY = """\
name: greeter-eval
config:
  runs: 3
  timeout: 5m
scoring:
  threshold: 0.7
stimuli:
  - name: greet ada
    prompt: Greet Ada in greeting.txt
    environment:
      files:
        - src: evals/files/who.txt
          dest: who.txt
      commands:
        - git init -q
    graders:
      - type: file-exists
        config: {path: greeting.txt}
      - type: file-contains
        config: {path: "**/*.txt", value: "Hello Ada"}
      - type: output-contains
        config: {substring: "Ada"}
      - type: output-not-matches
        config: {pattern: "(?i)error"}
      - type: run-command
        config:
          command: cat
          args: [greeting.txt]
          stdout_contains: Hello
      - type: tool-calls
        config:
          required:
            - name: bash
              command: "cat .*who"
            - name: azsdk_get_status
      - type: skill-invocation
        config: {required: [other-skill]}
      - type: prompt
        config: {prompt: "The greeting is friendly"}
    rubric:
      - Names the person
    constraints:
      max_turns: 12
      max_tokens: 4000
  - name: off target
    prompt: What is 2+2?
    expect_activation: false
    graders:
      - type: output-contains
        config: {substring: "4"}
"""

SKILL_VALIDATOR = """\
scenarios:
  - name: "Generate a greeting"
    prompt: "Generate a greeting for Alice"
    assertions:
      - type: "output_contains"
        value: "Alice"
      - type: "file_exists"
        path: "out.md"
    rubric:
      - "The greeting is friendly"
    timeout: 30
"""

SKILLGRADE = """\
version: "1"
defaults:
  agent: gemini
  trials: 5
  timeout: 300
  threshold: 0.8
tasks:
  - name: fix-linting
    instruction: instructions/fix.md
    workspace:
      - src: evals/fixtures/app.js
        dest: app.js
      - src: evals/fixtures/app.js
        dest: /usr/local/bin/superlint
        chmod: "+x"
    graders:
      - type: deterministic
        run: |
          if grep -q "const" app.js; then s=1; else s=0; fi
          echo "{\\"score\\": $s, \\"details\\": \\"ok\\", \\"checks\\": []}"
        weight: 0.7
      - type: llm_rubric
        rubric: "Did the agent follow check, fix, verify?"
        weight: 0.3
"""


def check(capsys: pytest.CaptureFixture[str], skill: Path) -> tuple[int, list[str]]:
    code = main(["check", str(skill)])
    return code, capsys.readouterr().out.splitlines()


def line_of(doc: str, text: str, start: int = 0) -> int:
    return next(i for i, x in enumerate(doc.splitlines(), 1) if i > start and text in x)


def test_vally_graders_become_check_kinds_and_skips_are_reported(tmp_path, capsys) -> None:
    skill = make_skill(
        tmp_path, "greeter", {"eval.yaml": VALLY, "evals/files/who.txt": "Ada-7731\n"}
    )
    assets = load_assets(skill, "greeter")
    greet, off = assets.cases
    assert (greet.name, off.name) == ("vally-greet-ada", "vally-off-target")
    kinds = [c.kind for c in greet.checks]
    assert kinds == [
        "file_exists",
        "command_succeeds",
        "transcript_matching",
        "no_transcript_matching",
        "command_succeeds",
        "command_matching",
        "expect",
        "expect",
    ]
    assert greet.checks[5].arg == "cat .*who"
    assert [c.arg for c in greet.checks[-2:]] == ["The greeting is friendly", "Names the person"]
    assert greet.files == {"who.txt": "Ada-7731\n"}
    assert greet.setup == "git init -q" and greet.max_turns == 12 and greet.timeout_minutes == 5
    assert off.expect_activation is False
    code, out = check(capsys, skill)
    assert code == 0, out
    path = skill / "eval.yaml"
    skipped = [x for x in out if "row skipped (environment)" in x]
    assert any(f"{path}:{line_of(VALLY, '- type: tool-calls')}:" in x for x in skipped)
    assert any("'azsdk_get_status'" in x for x in skipped)
    assert any("'other-skill'" in x for x in skipped)
    notes = [x for x in out if ": note: " in x]
    at = f"{path}:{line_of(VALLY, 'threshold:')}: warning: `threshold` 0.7: not applied"
    assert any(x.startswith(at) for x in out), out
    assert any("`max_tokens` is not honoured" in x for x in notes)
    assert any("`runs`: not honoured" in x for x in notes)


def test_skill_validator_scenarios_are_vallys_predecessor(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "s", {"evals/eval.yaml": SKILL_VALIDATOR})
    (case,) = load_assets(skill).cases
    assert [(c.kind, c.arg) for c in case.checks] == [
        ("transcript_matching", "Alice"),
        ("file_exists", "out.md"),
        ("expect", "The greeting is friendly"),
    ]
    assert case.timeout_minutes == 1


def test_skillgrade_tasks_score_by_their_json_and_rubrics_go_to_the_grader(
    tmp_path, capsys
) -> None:
    skill = make_skill(
        tmp_path,
        "s",
        {
            "eval.yaml": SKILLGRADE,
            "instructions/fix.md": "Fix app.js with superlint.\n",
            "evals/fixtures/app.js": 'var x = "a";\n',
        },
    )
    (case,) = load_assets(skill).cases
    assert case.name == "skillgrade-fix-linting" and case.task == "Fix app.js with superlint."
    script, rubric = case.checks
    assert (script.kind, script.min) == ("grader", 0.5) and "score" in (script.arg or "")
    assert (rubric.kind, rubric.arg) == ("expect", "Did the agent follow check, fix, verify?")
    assert case.files == {"app.js": 'var x = "a";\n'} and case.timeout_minutes == 5
    code, out = check(capsys, skill)
    assert code == 0, out
    path = skill / "eval.yaml"
    dest = line_of(SKILLGRADE, "dest: /usr/local/bin")
    assert any(x.startswith(f"{path}:{dest - 1}: warning: `dest`") for x in out), out
    assert any("`trials`: not honoured" in x for x in out)
    assert any("`weight` is not honoured" in x for x in out)


def test_the_schema_comes_from_the_content_not_the_name(tmp_path, capsys) -> None:
    """Both tools name the file eval.yaml; a third schema (waza's task globs) is reported."""
    waza = "name: x\nskill: s\ntasks:\n  - tasks/*.yaml\ngraders:\n  - type: code\n"
    skill = make_skill(tmp_path, "s", {"eval.yaml": waza, "evals/eval.yml": SKILLGRADE})
    (case,) = load_assets(skill).cases
    # Skillgrade's rule: an instruction naming no file is the instruction itself
    assert (case.name, case.task) == ("skillgrade-fix-linting", "instructions/fix.md")
    _, out = check(capsys, skill)
    assert any(
        x.startswith(f"{skill / 'eval.yaml'}:1: warning: an eval.yaml of no schema") for x in out
    )


@pytest.mark.parametrize(
    "grader",
    [
        '{type: file-exists, config: {path: "../../etc/passwd"}}',
        '{type: file-contains, config: {path: "$(touch /tmp/x)", value: v}}',
        '{type: file-exists, config: {path: "/etc/passwd"}}',
    ],
)
def test_a_path_that_is_not_a_workspace_glob_is_refused(tmp_path, capsys, grader) -> None:
    doc = f"stimuli:\n  - name: a\n    prompt: p\n    graders:\n      - {grader}\n"
    skill = make_skill(tmp_path, "s", {"eval.yaml": doc})
    code, out = check(capsys, skill)
    assert code == 1
    assert any(x.startswith(f"{skill / 'eval.yaml'}:5: error: path") for x in out), out


def test_staged_files_cannot_leave_the_skill(tmp_path, capsys) -> None:
    (tmp_path / "secret.txt").write_text("s")
    doc = (
        "stimuli:\n  - name: a\n    prompt: p\n    environment:\n      files:\n"
        "        - {src: ../secret.txt, dest: s.txt}\n    graders:\n"
        "      - {type: output-contains, config: {substring: x}}\n"
    )
    skill = make_skill(tmp_path, "s", {"eval.yaml": doc})
    code, out = check(capsys, skill)
    assert code == 1 and any(":6: error: `src` '../secret.txt' leaves" in x for x in out), out


def test_foreign_suites_run_deterministically_in_sandboxes(fake, tmp_path, capsys) -> None:
    """A Vally and a Skillgrade eval.yaml side by side, end to end in real sandboxes: the
    file, output and command graders and Skillgrade's scored script decide the rows."""
    from tests.helpers import BASE, CAND, conv, run_eval, skill, write_file

    vally = (
        "stimuli:\n  - name: greet\n    prompt: Greet Ada in greeting.txt\n    graders:\n"
        "      - {type: file-contains, config: {path: '*.txt', value: Hello Ada}}\n"
        "      - {type: output-matches, config: {pattern: 'Wrote \\d+ lines'}}\n"
        "      - {type: run-command, config: {command: grep, args: [-q, Ada, greeting.txt]}}\n"
    )
    grade = (
        'version: "1"\ntasks:\n  - name: scored\n    instruction: Greet Ada in greeting.txt\n'
        "    graders:\n      - type: deterministic\n        run: |\n"
        "          if grep -q 'Hello Ada' greeting.txt; then s=0.75; else s=0.25; fi\n"
        '          echo "{\\"score\\": $s, \\"details\\": \\"d\\"}"\n'
    )
    folder = skill(tmp_path, {"eval.yaml": vally, "evals/eval.yaml": grade})
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Greet Ada",
                    write_file("greeting.txt", "Hello Ada\n"),
                    {"text": "Wrote 1 lines"},
                    loop=True,
                ),
                conv(
                    BASE, "Greet Ada", write_file("greeting.txt", "Hi\n"), {"text": "ok"}, loop=True
                ),
            ]
        }
    )
    _, _, summary = run_eval(capsys, folder, tmp_path / "run")
    rows = {r["case"]: r for r in summary["rows"]}
    assert set(rows) == {"vally-greet", "skillgrade-scored"}
    for name in rows:
        assert (rows[name]["outcome"], rows[name]["decided_by"]) == ("win", "checks"), rows[name]
    arms = rows["skillgrade-scored"]["arms"]
    details = [arms[a]["checks"][0]["detail"] for a in ("candidate", "baseline")]
    assert details == ["score 0.75 (min 0.5)", "score 0.25 (min 0.5)"]
    vally = rows["vally-greet"]["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in vally] == [False, False, False]


@pytest.mark.parametrize(
    ("fmt", "files", "names"),
    [
        (
            "vally",
            {"eval.yaml": VALLY, "evals/files/who.txt": "Ada"},
            ["vally-greet-ada", "vally-off-target"],
        ),
        (
            "skillgrade",
            {
                "eval.yaml": SKILLGRADE,
                "instructions/fix.md": "Fix it.\n",
                "evals/fixtures/app.js": "var x;\n",
            },
            ["skillgrade-fix-linting"],
        ),
        ("vally", {"eval.yaml": "PROGRAM"}, ["vally-greet"]),
        (
            "skill-creator",
            {
                "evals/evals.json": json.dumps(
                    {
                        "evals": [
                            {
                                "id": 2,
                                "prompt": "Greet",
                                "expectations": ["Names Ada"],
                                "version": 1,
                            }
                        ]
                    }
                )
            },
            ["eval-2"],
        ),
    ],
)
def test_import_writes_native_cases_with_the_checks_field_report(
    tmp_path, capsys, fmt, files, names
) -> None:
    """`skillbench import` writes what the loader read as native YAML; the same notes and
    warnings `check` prints are listed, and the imported cases load as the foreign ones did."""
    files = {k: PROGRAM if v == "PROGRAM" else v for k, v in files.items()}
    skill = make_skill(tmp_path, "greeter", files)
    before = {c.name: c for c in load_assets(skill, "greeter").cases}
    code = main(["import", fmt, str(skill), "--into", str(skill)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert sorted(p.stem for p in (skill / "evals/cases").iterdir()) == names
    assert any(": note: " in x for x in out)  # the field report, with path:line
    assets = load_assets(skill, "greeter")
    assert not [p for p in assets.problems if p.severity == "error"]
    after = {c.name: c for c in assets.cases}
    for name in names:  # the native file is the one used now, with the same meaning
        assert after[name].path.endswith(f"evals/cases/{name}.yaml")
        assert [(c.kind, c.arg, c.min, c.timeout, c.program) for c in after[name].checks] == [
            (c.kind, c.arg, c.min, c.timeout, c.program) for c in before[name].checks
        ]
        assert after[name].files == before[name].files
        assert after[name].expect_activation == before[name].expect_activation


def test_import_refuses_the_other_tools_file(tmp_path, capsys) -> None:
    skill = make_skill(tmp_path, "s", {"eval.yaml": SKILLGRADE})
    assert main(["import", "vally", str(skill / "eval.yaml"), "--check"]) == 2
    assert "this is a skillgrade eval.yaml, not vally's" in capsys.readouterr().err


def test_a_root_eval_file_is_never_shown_to_the_candidate(fake, tmp_path, capsys) -> None:
    """Skillgrade and Vally keep eval.yaml at the skill root, and trigger JSON may sit there:
    staged with the skill, the candidate could read what grades it (the baseline cannot).
    Those files are evals, not the skill: never staged, not in its digest."""
    from skillbench.evals.skills import digest
    from tests.helpers import BASE, CAND, bash, conv, run_eval, skill

    doc = (
        "stimuli:\n  - name: peek\n    prompt: Look around\n    graders:\n"
        "      - {type: output-contains, config: {substring: SECRET-GRADER-7}}\n"
    )
    trig = '[{"query": "greet them", "should_trigger": true}]'
    folder = skill(tmp_path, {"eval.yaml": doc, "triggers.json": trig})
    before = digest(folder)
    (folder / "eval.yaml").write_text(doc.replace("Look around", "Look around now"))
    assert digest(folder) == before  # editing the evals is not a new version of the skill
    peek = bash("ls /skills/greeter; cat /skills/greeter/eval.yaml /skills/greeter/triggers.json")
    server = fake(
        {
            "conversations": [
                conv(CAND, "Look around", peek, {"text": "done"}),
                conv(BASE, "Look around", {"text": "done"}),
            ]
        }
    )
    run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    seen = [json.dumps(r.body) for r in server.log()]
    assert any("SKILL.md" in b for b in seen)  # the listing ran
    assert not any("SECRET-GRADER-7" in b for b in seen)
    assert not any("should_trigger" in b for b in seen)


def test_an_eval_file_outside_the_skill_is_named_with_evals(fake, tmp_path, capsys) -> None:
    """dotnet/skills keeps its Vally files in tests/<plugin>/<skill>/ beside the skills:
    `--evals FILE` reads one anywhere, with its own fixtures, for check, eval and --resume."""
    from tests.helpers import BASE, CAND, bash, conv, run_eval, skill

    folder = skill(tmp_path, {})
    spec = tmp_path / "tests/greeter/eval.yaml"
    spec.parent.mkdir(parents=True)
    (spec.parent / "fixtures").mkdir()
    (spec.parent / "fixtures/who.txt").write_text("Ada-4412\n")
    spec.write_text(
        "stimuli:\n  - name: greet\n    prompt: Greet the person in who.txt\n"
        "    environment:\n      files:\n        - {src: fixtures/who.txt, dest: who.txt}\n"
        "    graders:\n      - {type: output-contains, config: {substring: Ada-4412}}\n"
    )
    assert main(["check", str(folder), "--evals", str(spec)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "checked 1 skill: 0 errors, 0 warnings", out
    fake(
        {
            "conversations": [
                conv(CAND, "Greet the person", bash("cat who.txt"), {"text": "Hi Ada-4412"}),
                conv(BASE, "Greet the person", {"text": "Hi"}),
            ]
        }
    )
    run = tmp_path / "run"
    _, _, summary = run_eval(capsys, folder, run, "--execution-only", "--evals", str(spec))
    (row,) = summary["rows"]
    assert (row["case"], row["outcome"]) == ("vally-greet", "win")
    assert json.loads((run / "plan.json").read_text())["evals"] == [str(spec)]
    # --resume takes the run's --evals from plan.json (without them it would find no case)
    assert main(["eval", "--resume", str(run), "--quiet"]) == 3  # one unit: INCONCLUSIVE
    capsys.readouterr()
    # a source file outside both the skill and the eval file's folder is refused
    (tmp_path / "elsewhere.txt").write_text("x")
    spec.write_text(spec.read_text().replace("fixtures/who.txt", "../../elsewhere.txt"))
    assert main(["check", str(folder), "--evals", str(spec)]) == 1
    assert "leaves the skill folder and the eval file's folder" in capsys.readouterr().out


def test_rows_the_sandbox_cannot_grade_are_skipped_for_the_environment(
    fake, tmp_path, capsys
) -> None:
    """A grader needing a tool the sandbox lacks never fails a row: a stimulus with only such
    graders is skipped (environment), and one with some is graded on the rest and says so."""
    from tests.helpers import BASE, CAND, conv, run_eval, skill

    doc = (
        "stimuli:\n"
        "  - name: mcp-only\n    prompt: Check the pipeline status\n    graders:\n"
        "      - {type: tool-calls, config: {required: [{name: azsdk_get_pipeline_status}]}}\n"
        "  - name: partial\n    prompt: Greet the team\n    graders:\n"
        "      - {type: output-contains, config: {substring: Hello team}}\n"
        "      - {type: tool-calls, config: {required: [{name: figma_get_frame}]}}\n"
    )
    folder = skill(tmp_path, {"eval.yaml": doc})
    fake(
        {
            "conversations": [
                conv(CAND, "Greet the team", {"text": "Hello team"}),
                conv(BASE, "Greet the team", {"text": "hi"}),
            ]
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert [r["case"] for r in summary["rows"]] == ["vally-partial"]
    assert summary["rows"][0]["outcome"] == "win"
    (skipped,) = summary["skipped"]
    assert (skipped["case"], skipped["environment"]) == ("vally-mcp-only", True)
    assert "'azsdk_get_pipeline_status'" in skipped["reason"]
    assert any(
        line.startswith("skipped (environment): vally-mcp-only — no grader of it can run here")
        for line in lines
    )
    (gap,) = [d for d in summary["diagnostics"] if d["kind"] == "not-graded"]
    assert gap["case"] == "vally-partial" and "'figma_get_frame'" in gap["detail"]
    assert gap["detail"].startswith(
        f"line {doc.splitlines().index(next(x for x in doc.splitlines() if 'figma' in x)) + 1}:"
    )


PROGRAM = """\
scoring:
  weights: {program: 1.0}
  threshold: 0.7
stimuli:
  - name: greet
    prompt: Greet Ada in greeting.txt
    graders:
      - type: program
        weight: 2
        config:
          program: bash
          args:
            - -c
            - >-
              if grep -q 'Hello Ada' "$EVALUATE_WORKSPACE/greeting.txt" &&
              grep -q '"prompt": "Greet Ada in greeting.txt"' "$EVALUATE_GRADER_INPUT";
              then echo '{"name": "g", "kind": "code", "passed": true, "score": 1,
              "evidence": "greeted"}';
              else echo '{"name": "g", "kind": "code", "passed": false, "score": 0,
              "evidence": "no greeting"}'; fi
      - type: program
        config:
          program: bash
          args: [-c, 'grep -q toolCallCount "$EVALUATE_GRADER_INPUT" && test -f greeting.txt']
          sub_path: .
          timeout: 30s
"""


def test_vally_program_graders_load_with_their_defaults_and_the_threshold_is_loud(
    tmp_path, capsys
) -> None:
    skill = make_skill(tmp_path, "greeter", {"eval.yaml": PROGRAM})
    (case,) = load_assets(skill, "greeter").cases
    first, second = case.checks
    assert (first.kind, second.kind) == ("grader", "grader")
    assert first.timeout == 60 and second.timeout == 30  # Vally's default, and as written
    assert json.loads(first.program or "")["stimulus"] == {
        "name": "vally-greet",
        "prompt": "Greet Ada in greeting.txt",
    }
    assert second.arg and second.arg.startswith("cd . && ")
    code, out = check(capsys, skill)
    assert code == 0, out
    path = skill / "eval.yaml"
    at = f"{path}:{line_of(PROGRAM, 'threshold:')}: warning: `threshold` 0.7: not applied"
    assert any(x.startswith(at) for x in out), out
    assert any(
        f"{path}:{line_of(PROGRAM, 'weight: 2')}: note: weights change nothing" in x for x in out
    )
    assert not any("row skipped" in x for x in out), out


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"evaluate_workspace": "/tmp"}, "may not set evaluate_workspace"),
        ({"EVALUATE_GRADER_INPUT": "x"}, "may not set EVALUATE_GRADER_INPUT"),
    ],
)
def test_a_program_grader_cannot_set_the_variables_vally_owns(tmp_path, capsys, env, why) -> None:
    doc = {
        "stimuli": [
            {
                "name": "s",
                "prompt": "p",
                "graders": [{"type": "program", "config": {"program": "true", "env": env}}],
            }
        ]
    }
    skill = make_skill(tmp_path, "s", {"eval.yaml": json.dumps(doc)})
    code, out = check(capsys, skill)
    assert code != 0 and any(why in x for x in out), out


def test_a_program_grader_result_is_its_json_or_its_exit_code() -> None:
    from skillbench.evals.kinds.scripts import _graded
    from skillbench.evals.model import Check
    from skillbench.sandbox.base import ExecResult

    grader = Check("grader", "true", program="true")  # (a Vally program grader)

    def result(code: int, out: str) -> tuple[bool, str]:
        got = _graded("g", ExecResult(code, out, "boom" if code else ""), grader)
        return got.passed, got.detail

    assert result(0, "") == (True, "exit 0, no output")
    assert result(1, "") == (False, "exit 1, no output: boom")
    # the GraderResult decides, whatever the exit code
    assert result(1, '{"passed": true, "score": 1, "evidence": "ok"}') == (True, "score 1; ok")
    assert result(0, '{"passed": false, "score": 0.4}')[0] is False
    # output that is no GraderResult is no pass; nor are two that disagree (the candidate's
    # code the program ran prints one too)
    assert result(0, "all good")[0] is False
    both = '{"passed": true, "score": 1}\n{"passed": false, "score": 0}'
    assert result(0, both) == (False, "2 disagreeing GraderResults in its stdout: failed")


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_vally_program_graders_decide_rows_in_sandboxes(fake, tmp_path, capsys) -> None:
    """A Vally `program` grader runs in the checker with Vally's two variables: the input
    the host wrote (the stimulus, the tool calls) and the workspace the arm left."""
    from tests.helpers import BASE, CAND, conv, run_eval, skill, write_file

    folder = skill(tmp_path, {"eval.yaml": PROGRAM})
    fake(
        {
            "conversations": [
                conv(CAND, "Greet Ada", write_file("greeting.txt", "Hello Ada\n"), loop=True),
                conv(BASE, "Greet Ada", write_file("greeting.txt", "Hi\n"), loop=True),
            ]
        }
    )
    _, _, summary = run_eval(capsys, folder, tmp_path / "run")
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("win", "checks"), row
    arms = row["arms"]
    assert [(c["passed"], c["detail"]) for c in arms["candidate"]["checks"]] == [
        (True, "score 1; greeted"),
        (True, "exit 0, no output"),
    ]
    assert [(c["passed"], c["detail"]) for c in arms["baseline"]["checks"]] == [
        (False, "score 0; no greeting"),
        (True, "exit 0, no output"),
    ]


def test_every_grader_of_vallys_catalog_is_mapped_or_skipped_with_its_reason(
    tmp_path, capsys
) -> None:
    """Vally's Grader Catalog, each type: a check, a note, or a row skipped saying why."""
    graders = [
        {"type": "panel", "config": {"rubric": "Is polite", "judges": ["a", "b"]}},
        *({"type": t, "config": {"max": 3}} for t in ("error-count", "token-budget")),
        *({"type": t, "config": {"max": 3}} for t in ("tool-call-count", "turn-count")),
        {"type": "wall-time", "config": {"max": "1m"}},
    ]
    doc = {"stimuli": [{"name": "s", "prompt": "p", "graders": graders}]}
    skill = make_skill(tmp_path, "s", {"eval.yaml": json.dumps(doc)})
    (case,) = load_assets(skill, "s").cases
    assert [(c.kind, c.arg) for c in case.checks] == [("expect", "Is polite")]
    code, out = check(capsys, skill)
    assert code == 0, out
    skipped = [x for x in out if "row skipped (environment)" in x]
    for kind in ("error-count", "token-budget", "tool-call-count", "turn-count", "wall-time"):
        assert sum(f"`{kind}`" in x for x in skipped) == 1, (kind, out)
    assert any("`panel` `judges`: not honoured" in x for x in out)
