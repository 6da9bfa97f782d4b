"""Issue 23 part 5 (skill-optimizer): a suite written the way public skill-optimizer workbench
suites are — the skill under test in references/<skill>/, a setup running `node $CASE/checks/…`,
a node grader, a grader reading $RESULTS/trace.jsonl for a `read` of the SKILL.md, and a
reference solution in solutions/<case>/ — imported unmodified: `check` has nothing to refuse,
its oracle passes, and an eval's rows differ between the arms (the candidate reads the skill;
the baseline cannot, and forges a trace instead, which no grader sees)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.podman import variants
from skillbench.sandbox.podman.image_check import image_problems
from skillbench.validate import check_skill
from tests.helpers import BASE, CAND, MODEL, bash, conv, run_eval, write

SKILL = (
    "---\nname: greeter\ndescription: Greets guests the house way.\n---\n"
    "# Greeter\n\nGreet a guest as `Hail, <name>!` on one line, nothing else.\n"
)
TRACE_READS = """\
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const tracePath = join(process.env.RESULTS, 'trace.jsonl');
const trace = existsSync(tracePath)
  ? readFileSync(tracePath, 'utf-8').trim().split(/\\r?\\n/).flatMap((line) => {
      try { return [JSON.parse(line)]; } catch { return []; }
    })
  : [];
const reads = trace.filter((e) => e.type === 'tool_call' && e.name === 'read')
  .map((e) => String((e.arguments ?? {}).path ?? ''));
const start = trace.find((e) => e.type === 'trace_start') ?? {};
const pass = reads.some((p) => p.endsWith('greeter/SKILL.md'));
console.log(JSON.stringify({
  pass,
  score: pass ? 1 : 0,
  evidence: [`reads: ${JSON.stringify(reads)}`, `trace of ${start.caseName ?? 'none'}`,
             `forged: ${trace.some((e) => e.forged)}`],
}));
"""
SUITE = {
    "suite.yml": (
        "name: greeter-workbench\nreferences: ./references\ntimeoutSeconds: 300\n"
        "models:\n  - openrouter/google/gemini-2.5-flash\n"
        "setup:\n  - node $CASE/checks/seed.mjs\n"
        "cases:\n  - name: greet-guest\n    task: |\n"
        "      Greet the guest named in guest.txt the house way; write it to greeting.txt.\n"
        "    graders:\n"
        "      - name: greeting\n        command: node $CASE/checks/grade-greeting.mjs\n"
        "      - name: read-skill\n        command: node $CASE/checks/read-skill.mjs\n"
    ),
    "references/greeter/SKILL.md": SKILL,
    "references/guests.md": "Guests are named in guest.txt.\n",
    "checks/guest.json": '{"name": "Ada"}\n',
    "checks/seed.mjs": (
        "import { readFileSync, writeFileSync } from 'node:fs';\n"
        "const { name } = JSON.parse(readFileSync(`${process.env.CASE}/checks/guest.json`));\n"
        "writeFileSync('guest.txt', `${name}\\n`);\n"
    ),
    "checks/grade-greeting.mjs": (
        "import { existsSync, readFileSync } from 'node:fs';\n"
        "const path = `${process.env.WORK}/greeting.txt`;\n"
        "const got = existsSync(path) ? readFileSync(path, 'utf-8') : '';\n"
        "const leak = existsSync(`${process.env.WORK}/greeter`);\n"
        "const pass = got === 'Hail, Ada!\\n';\n"
        "console.log('grading greeting.txt');\n"
        "console.log(JSON.stringify({ pass, score: pass ? 1 : 0,\n"
        "  evidence: [JSON.stringify(got), `skill in workspace: ${leak}`] }));\n"
    ),
    "checks/read-skill.mjs": TRACE_READS,
    # as skill-optimizer's verify-suite runs it: in the workspace, with $CASE and $RESULTS
    "solutions/greet-guest/solution.sh": (
        "name=$(node -p \"require(process.env.CASE + '/checks/guest.json').name\")\n"
        "printf 'Hail, %s!\\n' \"$name\" > greeting.txt\n"
        "cat > \"$RESULTS/trace.jsonl\" <<'JSONL'\n"
        '{"type":"trace_start","schemaVersion":1,"caseName":"greet-guest","model":"reference"}\n'
        '{"type":"tool_call","name":"read","arguments":{"path":"references/greeter/SKILL.md"}}\n'
        "JSONL\n"
    ),
}
# The baseline's attack: a trace of its own, where a grader might look for one (its
# sandbox's $RESULTS, the workspace), claiming it read the skill; and the events a CLI agent's
# transcript is made of (Claude Code's stream-json, Codex's --json), written into the stdout
# of the process that ran the command, in case that is the CLI's.
FORGED = '{"type":"tool_call","name":"read","arguments":{"path":"/skills/greeter/SKILL.md"},"forged":true}'
FORGED_EVENTS = (
    '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"f1","name":"Read",'
    '"input":{"file_path":"/home/agent/.claude/skills/greeter/SKILL.md"}}]}}\n'
    '{"type":"item.completed","item":{"id":"f2","type":"command_execution",'
    '"command":"cat /skills/greeter/SKILL.md","aggregated_output":"","exit_code":0}}'
)
ATTACK = (
    f"mkdir -p /tmp/results results && for f in /tmp/results/trace.jsonl trace.jsonl "
    f"results/trace.jsonl; do echo '{FORGED}' > $f; done; "
    f"printf '%s\\n' '{FORGED_EVENTS}' > /proc/$PPID/fd/1 2>/dev/null; "
    "echo 'Hello, Ada.' > greeting.txt"
)


def _greeter(tmp_path: Path, config: str) -> Path:
    """The skill under test as its own folder (the bytes of references/greeter/), with a
    skillbench.toml beside it as tests/helpers.skill makes."""
    write(tmp_path, {"skillbench.toml": "max_retries = 1\nrequest_timeout = 5.0\n" + config})
    return write(tmp_path / "lib" / "greeter", {"SKILL.md": SKILL})


def _imported(tmp_path: Path, capsys, config: str = "") -> tuple[Path, list[str]]:
    into = _greeter(tmp_path, config)
    src = write(tmp_path / "suite", SUITE)
    assert main(["import", "skill-optimizer", str(src), "--into", str(into)]) == 0
    return into, capsys.readouterr().out.splitlines()


def test_the_suite_imports_as_a_node_case_with_its_oracle(tmp_path: Path, capsys) -> None:
    into, out = _imported(tmp_path, capsys)
    assert not [x for x in out if x.startswith("warning:")], out  # references/greeter is it
    assert any("references/greeter/ — the skill under test" in x for x in out), out
    assert any("`requires: [node]`: it runs in the sandbox image's node variant" in x for x in out)
    assert any("solutions/greet-guest/solution.sh — its reference solution" in x for x in out)
    case = (into / "evals/cases/greet-guest.yaml").read_text()
    assert "requires: [node]" in case and "oracle: greet-guest/solution/solution.sh" in case
    # the skill is the candidate's alone: not in the workspace's seed
    assert (into / "evals/cases/greet-guest/fixture/guests.md").is_file()
    assert not (into / "evals/cases/greet-guest/fixture/greeter").exists()
    # where skill-optimizer copies references: the candidate's arm has it in /work (stage.py)
    assert "skill_in_workspace: greeter" in case


PDF_SKILL = "---\nname: pdf\ndescription: Use this skill for PDF files.\n---\n# PDF\n"


def test_a_reference_folder_named_otherwise_is_the_skill_under_test(tmp_path: Path, capsys) -> None:
    """issue 37 item 6, skill-optimizer's pdf example: references/pdf-skill/ holds the skill
    `pdf`. It is the --into skill `pdf` (same name, same bytes), shown in the candidate's /work
    at pdf-skill/ as skill-optimizer shows it. Before: "is the skill pdf-skill, not the --into
    skill pdf", left out, and the no-pdf-skill grader's pattern could never match."""
    write(tmp_path, {"skillbench.toml": "max_retries = 1\n"})
    into = write(tmp_path / "lib" / "pdf", {"SKILL.md": PDF_SKILL})
    src = write(
        tmp_path / "suite",
        {
            "suite.yml": (
                "name: pdf-workbench-example\nreferences: ./references\ncases:\n"
                "  - name: no-pdf-skill-needed\n    task: Write note.txt saying done.\n"
                "    graders:\n      - name: note\n        command: test -f $WORK/note.txt\n"
            ),
            "references/pdf-skill/SKILL.md": PDF_SKILL,
            "references/README.md": "references\n",
        },
    )
    assert main(["import", "skill-optimizer", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "warning:" not in out, out
    assert "references/pdf-skill/ — the skill under test: the candidate's arm finds it at " in out
    assert "/work/pdf-skill/" in out
    case = (into / "evals/cases/no-pdf-skill-needed.yaml").read_text()
    assert "skill_in_workspace: pdf-skill" in case, case
    assert not (into / "evals/cases/no-pdf-skill-needed/fixture/pdf-skill").exists()
    assert main(["check", str(into)]) == 0, capsys.readouterr().out
    # and the published folder itself, named otherwise than its skill, is usable as it is
    assert main(["check", str(src / "references" / "pdf-skill")]) == 0
    checked = capsys.readouterr().out
    assert "SKILL.md:2: warning: skill name 'pdf' does not match its folder 'pdf-skill'" in checked


def test_skill_in_workspace_is_one_folder_of_the_workspace(tmp_path: Path, capsys) -> None:
    """A case cannot aim the copy outside the workspace (`..`, an absolute path)."""
    into = _greeter(tmp_path, "")
    for bad in ("../etc", "/tmp/x", "a/b"):
        write(into / "evals/cases", {"c.yaml": f"task: do it\nskill_in_workspace: {bad}\n"})
        assert main(["check", str(into)]) == 1
        out = capsys.readouterr().out
        assert "c.yaml:2: error: `skill_in_workspace`" in out and "one folder name" in out, out


def test_check_says_when_the_node_variant_is_not_built(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    into, _ = _imported(tmp_path, capsys)
    # another recipe is another variant, one never built on this machine
    monkeypatch.setitem(variants.VARIANTS, "node", ("nodejs", "skillbench-never-built"))
    sessions = check_skill(into).assets.cases
    (problem,) = image_problems(sessions)
    assert problem.severity == "warning" and problem.line == 7, problem  # the requires: line
    assert problem.message.startswith("`requires` node: the case runs in the sandbox image's")
    assert "not built yet" in problem.message and "skillbench image build --node" in problem.message


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_check_probes_the_requires_of_a_node_case_in_its_variant(tmp_path: Path, capsys) -> None:
    into, _ = _imported(tmp_path, capsys)
    assert main(["image", "build", "--node"]) == 0
    case = into / "evals/cases/greet-guest.yaml"
    case.write_text(case.read_text().replace("requires: [node]", "requires: [node, deno]"))
    capsys.readouterr()
    assert main(["check", str(into)]) == 0  # a warning: what the run would skip
    out = capsys.readouterr().out
    assert (
        f"greet-guest.yaml:7: warning: image {variants.variant_name('node')} lacks deno "
        "(`requires`): the run would skip this case" in out
    ), out


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_skill_optimizer_suite_end_to_end(fake, tmp_path: Path, capsys) -> None:
    into, _ = _imported(tmp_path, capsys)
    assert main(["image", "build", "--node"]) == 0  # (already built: it says so)
    assert f"image {variants.variant_name('node')} ready" in capsys.readouterr().out
    assert main(["check", str(into)]) == 0
    checked = capsys.readouterr().out
    assert checked == "checked 1 skill: 0 errors, 0 warnings\n", checked
    # the reference solution passes both graders, the trace one on the trace it wrote
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    assert "oracle PASS: greet-guest" in capsys.readouterr().out
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Greet the guest",
                    {"tool_calls": [{"skill": {"name": "greeter"}}]},
                    bash("printf 'Hail, %s!\\n' \"$(cat guest.txt)\" > greeting.txt"),
                    {"text": "done"},
                ),
                conv(BASE, "Greet the guest", bash(ATTACK), {"text": "done"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one case: too few units for a verdict (INCONCLUSIVE)
    row = summary["rows"][0]
    assert row["outcome"] == "win", row
    cand, base = row["arms"]["candidate"]["checks"], row["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in cand] == [True, True], cand
    assert [c["passed"] for c in base] == [False, False], base
    # the host's trace, in skill-optimizer's format: the candidate's skill tool is a read of
    # its SKILL.md; the baseline's forged files are not what its grader read
    # (issue 37 item 6) where skill-optimizer puts references: the candidate's /work/greeter/
    assert cand[1]["detail"] == (
        'score 1; reads: ["/work/greeter/SKILL.md"]; trace of greet-guest; forged: false'
    )
    assert cand[0]["detail"] == 'score 1; "Hail, Ada!\\n"; skill in workspace: true'

    assert base[1]["detail"] == "score 0; reads: []; trace of greet-guest; forged: false"
    assert base[0]["detail"] == 'score 0; "Hello, Ada.\\n"; skill in workspace: false'
    # the plan keys the baseline by the image it ran in (the variant): it would be reused
    assert main(["eval", str(into), "--plan", "--execution-only", "--model", MODEL]) == 0
    assert "  sessions: 1 to run (1 baseline/incumbent session(s) reused" in capsys.readouterr().out


# Each CLI agent's own tools: Claude Code loads the skill with its Skill tool, Codex (no such
# tool) reads SKILL.md with its shell; both are a `read` of it in the grader's trace, at the
# workspace folder skill-optimizer shows the skill at (issue 37 item 6), not the agent's own copy.
CLI = {
    "claude-code": (
        "anthropic/claude-sonnet-4-6",
        {"Skill": {"skill": "greeter"}},
        "Bash",
        "command",
    ),
    "codex": (
        "openai/gpt-5.1",
        {"exec_command": {"cmd": "cat ~/.codex/skills/greeter/SKILL.md"}},
        "exec_command",
        "cmd",
    ),
}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
@pytest.mark.parametrize("agent", sorted(CLI))
def test_cli_agents_traces_reach_the_graders_in_skill_optimizers_format(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    model, load, shell, arg = CLI[agent]
    into, _ = _imported(tmp_path, capsys, f'agent = "{agent}"\n')
    greet = "printf 'Hail, %s!\\n' \"$(cat guest.txt)\" > greeting.txt"
    fake(
        {
            "conversations": [
                conv(
                    "(?s)greeter",
                    "Greet the guest",
                    {"tool_calls": [load]},
                    {"tool_calls": [{shell: {arg: greet}}]},
                    {"text": "done"},
                ),
                conv(
                    "(?s)",
                    "Greet the guest",
                    {"tool_calls": [{shell: {arg: ATTACK}}]},
                    {"text": "done"},
                ),
            ]
        }
    )
    code, lines, summary = run_eval(
        capsys, into, tmp_path / "run", "--execution-only", "--model", model
    )
    assert code == 3, lines
    row = summary["rows"][0]
    assert row["outcome"] == "win", row
    cand, base = row["arms"]["candidate"]["checks"], row["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in cand] == [True, True], cand
    assert cand[1]["detail"] == (
        'score 1; reads: ["/work/greeter/SKILL.md"]; trace of greet-guest; forged: false'
    )
    assert base[1]["detail"] == "score 0; reads: []; trace of greet-guest; forged: false"


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_missing_variant_is_built_on_first_use_saying_so(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    into, _ = _imported(tmp_path, capsys)
    # a variant of another recipe (one more package) is one this machine never built
    monkeypatch.setitem(variants.VARIANTS, "node", ("nodejs", "jq"))
    name = variants.variant_name("node")
    try:
        assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
        done = capsys.readouterr()
        assert f"the node variant {name} is missing; building it now (first use)" in done.err
        assert f"built {name}" in done.err and "oracle PASS: greet-guest" in done.out
        ran = subprocess.run(
            ["podman", "run", "--rm", name, "jq", "--version"], text=True, capture_output=True
        )
        assert ran.stdout.startswith("jq-"), ran
    finally:
        subprocess.run(["podman", "rmi", "-f", name], capture_output=True)
