"""Activation, ambient skills and the library arm (issue 22, parts 4-6; docs/statistics.md).

Whether the skill under test loaded is read from each candidate session's own transcript: the
real Claude Code and Codex CLIs against the fake model server (the model calls the Skill tool,
or reads the skill's SKILL.md, in one case and not in another), and the builtin loop's `skill`
tool. A case that says `expect_activation: false` loses its row when the skill fires. The
skills a CLI brings on its own are listed from what the CLI itself reported (Claude Code's init
event, Codex's first request) and are turned off by default. `eval --with-library` runs a
3-skill library end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillbench.cli import main
from skillbench.evals import SpecError, load_case, load_suite
from skillbench.models.fake_wire import anthropic_shape
from tests.helpers import BASE, CAND, conv, make_skill, run_eval, skill, write, write_file


def e2e(test: Any) -> Any:
    """Real podman sandboxes (and the real CLIs) against the fake model server."""
    for mark in (pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")):
        test = mark(test)
    return test


MODEL = {
    "builtin": "anthropic/claude-sonnet-4-6",
    "claude-code": "anthropic/claude-sonnet-4-6",
    "codex": "openai/gpt-5.1",
}
BASH = {
    "builtin": ("bash", "command"),
    "claude-code": ("Bash", "command"),
    "codex": ("exec_command", "cmd"),
}
SKILL_HOME = {"builtin": "/skills", "claude-code": "~/.claude/skills", "codex": "~/.codex/skills"}
HELLO = "task: Create hello.txt with a greeting\nchecks:\n  - file_exists: hello.txt\n"
QUIET = "task: Write the number 5 to five.txt\nchecks:\n  - file_exists: five.txt\n"


def run_bash(agent: str, command: str) -> dict[str, Any]:
    tool, arg = BASH[agent]
    return {"tool_calls": [{tool: {arg: command}}]}


def load(agent: str, name: str = "greeter") -> dict[str, Any]:
    """One model turn loading skill `name` the agent's own way."""
    if agent == "codex":  # Codex reads the skill's SKILL.md
        return run_bash(agent, f"cat {SKILL_HOME[agent]}/{name}/SKILL.md")
    if agent == "builtin":
        return {"tool_calls": [{"skill": {"name": name}}]}
    return {"tool_calls": [{"Skill": {"skill": name}}]}


def summary_and_lines(capsys, folder: Path, out: Path, agent: str) -> tuple[dict, list[str]]:
    code, lines, summary = run_eval(
        capsys, folder, out, "--execution-only", "--model", MODEL[agent]
    )
    assert code == 3, lines  # one or two cases: INCONCLUSIVE (docs/statistics.md)
    return summary, lines


def sessions(run: Path) -> dict[str, dict[str, Any]]:
    journal = (run / "journal.jsonl").read_text().splitlines()
    return {r["key"]: r for r in map(json.loads, journal) if r.get("type") == "session"}


# --- the case field -------------------------------------------------------------------


def problems(path: Path, skill_dir: Path) -> list[str]:
    loader = load_suite if path.name == "suite.yaml" else load_case
    try:
        _, found = loader(path, skill_dir)
    except SpecError as exc:
        found = exc.problems
    return [f"{p.line}: {p.severity}: {p.message}" for p in found]


def test_expect_activation_is_a_boolean_of_a_case(tmp_path: Path) -> None:
    folder = make_skill(
        tmp_path,
        "greeter",
        {
            "evals/cases/word.yaml": "task: Sum 2 and 3\nexpect_activation: 'no'\n",
            "evals/cases/named.yaml": (
                "task: Use the greeter skill to sum 2 and 3\nexpect_activation: false\n"
                "checks:\n  - file_exists: out.txt\n"
            ),
            "evals/cases/bare.yaml": "task: Sum 2 and 3\nexpect_activation: false\n",
            "evals/suite.yaml": (
                "task: Review\nexpect_activation: false\ncases:\n"
                "  - name: a\n    checks:\n      - file_exists: x\n"
            ),
        },
    )
    cases = folder / "evals/cases"
    assert problems(cases / "word.yaml", folder) == [
        "2: error: `expect_activation` must be a boolean, got a string"
    ]
    assert problems(cases / "named.yaml", folder) == [
        "1: warning: the task names the skill 'greeter' but the case says `expect_activation: "
        "false`: loading it is asked for, yet scored as a loss"
    ]
    # no checks, yet not every row a tie: loading the skill decides it on its own
    assert problems(cases / "bare.yaml", folder) == []
    (found,) = problems(folder / "evals/suite.yaml", folder)
    assert found.startswith("2: error: `expect_activation` is a field of a case, not of the suite")
    case, _ = load_case(cases / "bare.yaml", folder)
    assert case.expect_activation is False


# --- builtin: a loss where it fires, the never-loaded diagnostic ------------------------


@e2e
@pytest.mark.parametrize("fires", [True, False], ids=["fires", "stays-quiet"])
def test_a_skill_that_fires_where_it_should_not_loses_the_row(
    fires: bool, fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/hello.yaml": HELLO,
            "evals/cases/sum.yaml": (
                "task: Write the sum of 2 and 3 to out.txt\nexpect_activation: false\n"
                "checks:\n  - file_exists: out.txt\n"
            ),
        },
    )
    first = [load("builtin")] if fires else []
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Create hello",
                    load("builtin"),
                    write_file("hello.txt", "hi\n"),
                    {"text": "done"},
                ),
                conv(BASE, "Create hello", {"text": "I cannot."}),
                # both arms write out.txt: by the checks alone a tie
                conv("(?s)", "sum of 2", *first, write_file("out.txt", "5\n"), {"text": "done"}),
            ]
        }
    )
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", "builtin")
    row = next(r for r in summary["rows"] if r["case"] == "sum")
    activation = summary["activation"]
    assert (activation["fired"], activation["sessions"]) == (1, 1)  # hello: it should, it did
    assert (activation["misfired"], activation["unexpected"]) == (int(fires), 1)
    if fires:
        assert (row["outcome"], row["decided_by"]) == ("loss", "activation")
        assert row["arms"]["candidate"]["passed"]  # its checks passed; loading it lost
        assert summary["verdict"] == "INCONCLUSIVE"  # 1 win, 1 loss: two units
        assert (
            "why: no net difference on execution checks and activation (the skill fired "
            "where it should not)"
        ) in lines
        assert (
            "activation: fired where it should not in 1 of 1 session of expect_activation: "
            "false cases (sum: those rows are losses)"
        ) in lines
    else:
        assert (row["outcome"], row["decided_by"]) == ("tie", "checks")
        assert (
            "activation: fired where it should not in 0 of 1 session of expect_activation: false cases"
            in lines
        )
    where = (
        "+0% where it fired (2 units) vs +0%" if fires else "+100% where it fired (1 unit) vs +50%"
    )
    assert f"activation: fired in 1 of 1 candidate session · net lift {where} overall" in lines


@e2e
def test_a_skill_that_never_loads_says_the_verdict_measures_its_absence(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(tmp_path, {"evals/cases/hello.yaml": HELLO})
    fake(
        {
            "conversations": [
                conv("(?s)", "Create hello", write_file("hello.txt", "hi\n"), {"text": "done"})
            ]
        }
    )
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", "builtin")
    assert summary["activation"]["fired"] == 0
    assert {
        "kind": "never-fired",
        "case": "",
        "detail": "the skill never loaded: the verdict measures its absence",
        "check": None,
    } in summary["diagnostics"]
    assert "  NEVER-FIRED: the skill never loaded: the verdict measures its absence" in lines
    assert (
        "activation: fired in 0 of 1 candidate session · net lift n/a where it fired (0 units) vs +0% overall"
        in lines
    )
    assert (
        "ambient skills: none in any arm (the builtin loop lists only the staged skills)" in lines
    )


def test_a_slash_invocation_is_passed_as_written_and_counted_apart(
    fake, tmp_path: Path, capsys
) -> None:
    """A task opening with `/greeter` asks for the skill by name: the agent gets it as
    written, and loading the skill there is an explicit invocation, not organic triggering."""
    asked = "task: /greeter Write the number 5 to five.txt\nchecks:\n  - file_exists: five.txt\n"
    folder = skill(tmp_path, {"evals/cases/hello.yaml": HELLO, "evals/cases/asked.yaml": asked})
    five = run_bash("builtin", "echo 5 > five.txt")
    server = fake(
        {
            "conversations": [
                conv(CAND, "/greeter Write the number 5", load("builtin"), five, {"text": "ok"}),
                conv("(?s)", "Write the number 5", five, {"text": "ok"}),
                conv("(?s)", "Create hello", write_file("hello.txt", "hi"), {"text": "done"}),
            ]
        }
    )
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", "builtin")
    act = summary["activation"]
    assert (act["fired"], act["sessions"]) == (0, 1)  # hello: organic, not loaded
    assert (act["invoked"], act["invocations"]) == (1, 1)
    assert {c["case"]: c["explicit"] for c in act["cases"]} == {"asked": True, "hello": False}
    assert (
        "activation: invoked explicitly (`/greeter`) in 1 candidate session, loaded in 1: not "
        "counted as triggering"
    ) in lines
    sent = [json.dumps(r.body) for r in server.log()]
    assert any("/greeter Write the number 5 to five.txt" in b for b in sent)


# --- the real CLIs: activation from their transcripts, their own skills ------------------


def greeter_for(tmp_path: Path, agent: str, config: str = "") -> Path:
    """The greeter skill with a case where the model loads it and one where it does not."""
    return skill(
        tmp_path,
        {"evals/cases/hello.yaml": HELLO, "evals/cases/quiet.yaml": QUIET},
        config=f'agent = "{agent}"\n{config}',
    )


def cli_script(agent: str) -> dict[str, Any]:
    hello = run_bash(agent, "echo hi > hello.txt")
    five = run_bash(agent, "echo 5 > five.txt")
    return {
        "conversations": [
            # the candidate's prompt lists the greeter skill (Claude Code in a system reminder,
            # Codex in its skills section): there the model loads it for hello, not for five
            conv("(?s)- greeter: ", "Create hello", load(agent), hello, {"text": "done"}),
            conv("(?s)", "Create hello", hello, {"text": "done"}),
            conv("(?s)", "number 5", five, {"text": "done"}),
        ]
    }


# where each CLI lists the skills in its prompt: the first `- name: ...` lines after this
LISTING = {
    "builtin": "its files are under /skills/<name>):",
    "claude-code": "The following skills are available for use with the Skill tool:",
    "codex": "### Available skills",
}


def listing(agent: str, body: dict[str, Any]) -> tuple[str, ...]:
    """The skills a request to the model lists, as the CLI wrote them into its prompt."""
    texts = [str(body.get("instructions") or ""), anthropic_shape(body)[0]]
    for message in body.get("messages") or body.get("input") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            texts += [str(c.get("text", "")) for c in content if isinstance(c, dict)]
    for text in texts:
        if LISTING[agent] in text:
            block = text.split(LISTING[agent], 1)[1].lstrip("\n").split("\n\n", 1)[0]
            return tuple(
                line[2:].split(":", 1)[0] for line in block.splitlines() if line.startswith("- ")
            )
    return ()


@e2e
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_activation_is_read_from_the_real_clis_transcripts(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    folder = greeter_for(tmp_path, agent)
    server = fake(cli_script(agent))
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", agent)
    activation = summary["activation"]
    assert [(c["case"], c["fired"], c["sessions"]) for c in activation["cases"]] == [
        ("hello", 1, 1),
        ("quiet", 0, 1),
    ]
    assert (activation["fired"], activation["sessions"]) == (1, 2)
    assert (
        "activation: fired in 1 of 2 candidate sessions · net lift +0% where it fired "
        "(1 unit) vs +0% overall" in lines
    )
    assert "  not loaded in: quiet (1 of 1)" in lines
    recorded = sessions(tmp_path / "run")
    assert recorded["hello.candidate.1"]["loaded"] == ["greeter"]
    assert recorded["quiet.candidate.1"]["loaded"] == recorded["hello.baseline.1"]["loaded"] == []
    # the CLI's own skills were off: none listed by the CLI, none in what the model was shown
    assert summary["ambient"]["arms"] == {"baseline": [], "candidate": []}
    policy = summary["ambient"]["policy"]
    assert policy.startswith("turned off: ")
    assert f"ambient skills: none in any arm ({policy})" in lines
    # what the model was shown, read from the requests the CLI sent
    assert {listing(agent, r.body) for r in server.log()} == {(), ("greeter",)}


# what each pinned CLI ships (its init event's `skills`, Codex's `.system` skills): a few
THEIRS = {
    "claude-code": {"code-review", "debug", "simplify"},
    "codex": {"imagegen", "openai-docs", "skill-creator", "skill-installer"},
}


@e2e
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_skills_a_cli_ships_are_listed_per_arm_when_kept(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    folder = greeter_for(tmp_path, agent, f'[agents.{agent}]\nambient_skills = "keep"\n')
    server = fake(cli_script(agent))
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", agent)
    arms = summary["ambient"]["arms"]
    assert arms["baseline"] == arms["candidate"]
    assert THEIRS[agent] <= set(arms["baseline"]), arms
    assert "greeter" not in arms["candidate"]  # the staged skill is not ambient
    assert summary["ambient"]["policy"] == f'kept: [agents.{agent}] ambient_skills = "keep"'
    line = next(x for x in lines if x.startswith("ambient skills: "))
    assert line.startswith(f"ambient skills: every arm: {', '.join(arms['baseline'])} (kept: ")
    # the model was shown them in both arms (Claude Code's listing holds fewer than its init
    # event: some of its skills are for the user to type, not for the model)
    shown = [set(listing(agent, r.body)) for r in server.log()]
    assert all(THEIRS[agent] & names for names in shown)
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    assert receipt["ambient"] == summary["ambient"]
    assert receipt["activation"]["fired"] == 1


# --- the library arm ----------------------------------------------------------------------


def library(tmp_path: Path, agent: str = "builtin") -> Path:
    """A 3-skill library: greeter (under test, with its evals), counter and sorter."""
    root = tmp_path / "lib"
    make_skill(root, "counter", description="Counts and sums numbers.")
    make_skill(root, "sorter", description="Sorts lists of things.")
    return skill(tmp_path, {"evals/cases/hello.yaml": HELLO}, config=f'agent = "{agent}"\n').parent


@e2e
@pytest.mark.parametrize("agent", ["builtin", "claude-code"])
def test_the_library_arm_runs_the_skill_beside_its_siblings(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    root = library(tmp_path, agent)
    hello = run_bash(agent, "echo hi > hello.txt")
    server = fake(
        {
            "conversations": [
                # the candidate sees all three skills and loads its own; the baseline sees the
                # two siblings, reaches for one of them, and writes nothing
                conv("(?s)- greeter: ", "Create hello", load(agent), hello, {"text": "done"}),
                conv("(?s)- counter: ", "Create hello", load(agent, "counter"), {"text": "done"}),
                conv("(?s)", "Create hello", {"text": "done"}),  # the plain run's baseline
            ]
        }
    )
    code, lines, summary = run_eval(
        capsys,
        root / "greeter",
        tmp_path / "run",
        "--execution-only",
        "--with-library",
        str(root),
        "--model",
        MODEL[agent],
    )
    assert code == 3, lines  # one case: INCONCLUSIVE
    assert {listing(agent, r.body) for r in server.log()} == {
        ("counter", "greeter", "sorter"),
        ("counter", "sorter"),
    }
    assert [s["name"] for s in summary["library"]["skills"]] == ["counter", "sorter"]
    assert (summary["verdict"], summary["rows"][0]["outcome"]) == ("INCONCLUSIVE", "win")
    assert (summary["activation"]["fired"], summary["activation"]["sessions"]) == (1, 1)
    recorded = sessions(tmp_path / "run")
    assert recorded["hello.baseline.1"]["loaded"] == ["counter"]  # a sibling fired there
    assert (
        "library arm: every arm stages 2 other skills of lib/ (counter, sorter); the "
        "candidate adds greeter"
    ) in lines
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    arms = receipt["provenance"]["arms"]
    assert [a.split("@")[0] for a in arms["baseline"]] == ["counter", "sorter"]
    assert [a.split("@")[0] for a in arms["candidate"]] == ["counter", "greeter", "sorter"]
    assert receipt["library"] == summary["library"]
    # --resume keeps the library arm; another library is refused
    assert main(["eval", "--resume", str(tmp_path / "run"), "--quiet", "--execution-only"]) == 3
    resumed = json.loads((tmp_path / "run/summary.json").read_text())
    assert resumed["library"] == summary["library"]
    other = tmp_path / "other"
    make_skill(other, "counter")
    assert main(["eval", "--resume", str(tmp_path / "run"), "--with-library", str(other)]) == 2
    assert "the library (--with-library) changed" in capsys.readouterr().err
    # the same skill without the library: another baseline (its key has no siblings)
    code, _, plain = run_eval(
        capsys, root / "greeter", tmp_path / "plain", "--execution-only", "--model", MODEL[agent]
    )
    assert code == 3 and plain["reused"] is None and plain["library"] is None


def test_the_library_arm_refuses_a_folder_it_cannot_use(tmp_path: Path, capsys) -> None:
    root = library(tmp_path)
    alone = tmp_path / "alone"
    make_skill(alone, "greeter")
    broken = tmp_path / "broken"
    make_skill(broken, "counter")
    write(broken, {"odd/SKILL.md": "---\nname: other\ndescription: x\n---\n"})
    for where, said in (
        (root / "greeter", "not a library root (a folder whose sub-folders each hold a SKILL.md)"),
        (alone, "holds no skill besides greeter; the library arm needs other skills"),
        (broken, "odd is not a valid skill"),
    ):
        code = main(
            ["eval", str(root / "greeter"), "--with-library", str(where), "--plan", "--no-gen"]
        )
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"skillbench: error: --with-library {where}: " in err and said in err, err
        assert "Traceback" not in err


# --- the counting, by hand ----------------------------------------------------------------


def test_activation_counts_and_the_lift_where_it_fired_by_hand() -> None:
    from skillbench.results.activation import activation_of
    from skillbench.results.records import ArmResult, Plan, RowRecord, SessionRecord, Unit

    plan = Plan(
        run_id="r",
        skill="greeter",
        skill_dir="/s",
        version="v",
        assets_digest="a",
        model="m",
        judge_model="m",
        k=2,
        seed=1,
        arms=["baseline", "candidate"],
        opponents=["baseline"],
        sessions=["hello", "sum", "suite"],
        units=[
            Unit("hello", "hello"),
            Unit("sum", "sum"),
            Unit("suite/a", "suite"),
            Unit("suite/b", "suite"),
        ],
        engine_version="0",
        created_at="",
    )

    def session(name: str, rep: int, loaded: bool, outcome: str = "pass") -> SessionRecord:
        return SessionRecord(
            key=f"{name}.candidate.{rep}",
            session=name,
            arm="candidate",
            rep=rep,
            outcome=outcome,
            loaded=["greeter"] if loaded else ["other"],
        )

    records = [
        session("hello", 1, True),
        session("hello", 2, False),
        session("sum", 1, True),  # expect_activation: false, and it fired
        session("sum", 2, False),
        session("suite", 1, True),
        session("suite", 2, True, outcome="error"),  # errored: not a session that ran
    ]
    sessions = {r.key: r for r in records}
    arm = ArmResult(True, False, [])

    def row(case: str, rep: int, outcome: str, decided_by: str = "checks") -> RowRecord:
        arms = {"candidate": arm, "baseline": arm}
        return RowRecord(
            case=case,
            rep=rep,
            opponent="baseline",
            outcome=outcome,
            decided_by=decided_by,
            arms=arms,
        )

    rows = [
        row("hello", 1, "win"),
        row("hello", 2, "tie"),
        row("sum", 1, "loss", "activation"),
        row("sum", 2, "tie"),
        row("suite/a", 1, "win"),
        row("suite/b", 1, "win"),
        row("suite/a", 2, "tie", "unscored"),  # unscored: in neither lift
    ]
    a = activation_of(plan, sessions, rows, {"hello": True, "sum": False, "suite": True})
    assert a is not None
    assert [(c.case, c.fired, c.sessions, c.expected) for c in a.cases] == [
        ("hello", 1, 2, True),
        ("sum", 1, 2, False),
        ("suite", 1, 1, True),
    ]
    assert (a.fired, a.sessions, a.misfired, a.unexpected) == (2, 3, 1, 2)
    # in units (docs/statistics.md): overall, hello ties (a win and a tie: no majority), sum ties,
    # the suite wins (rep 1: +2; rep 2 unscored): 1/3. Where it fired (hello.1, sum.1 and
    # the suite's two rows of rep 1): hello wins, sum loses, the suite wins: 1/3 over 3 units
    assert a.lift == pytest.approx(1 / 3)
    assert (a.lift_when_fired, a.units_when_fired) == (pytest.approx(1 / 3), 3)
    assert not a.never


def test_the_ambient_line_says_what_each_arm_was_shown_once() -> None:
    from skillbench.report.evidence import ambient_line
    from skillbench.results.activation import Ambient

    off = "turned off: config.toml [skills.bundled] enabled = false"
    assert ambient_line(Ambient({"baseline": [], "candidate": []}, off)) == (
        f"ambient skills: none in any arm ({off})"
    )
    none = "Tool 1.0 has no setting to turn them off"
    assert ambient_line(Ambient({"baseline": ["a", "b"], "candidate": ["a", "b"]}, none)) == (
        f"ambient skills: every arm: a, b ({none})"
    )
    assert ambient_line(Ambient({"baseline": ["a"], "candidate": []}, none)) == (
        f"ambient skills: baseline a · candidate none ({none})"
    )


# --- issue 38 ACT1: a load by any tool, for every agent ------------------------------------


@e2e
@pytest.mark.parametrize("agent", ["builtin", "claude-code", "codex"])
def test_reading_the_skill_md_with_the_shell_is_a_load(agent: str, fake, tmp_path: Path, capsys):
    """The candidate never calls a skill tool: it reads SKILL.md with `sed` where the case
    says the skill should stay out, and loses the row (it won it on the old code)."""
    folder = skill(
        tmp_path,
        {
            "evals/cases/sum.yaml": (
                "task: Write the sum of 2 and 3 to out.txt\nexpect_activation: false\n"
                "checks:\n  - file_exists: out.txt\n"
            )
        },
        config=f'agent = "{agent}"\n',
    )
    peek = run_bash(agent, f"sed -n 1,5p {SKILL_HOME[agent]}/greeter/SKILL.md")
    out = run_bash(agent, "echo 5 > out.txt")
    fake(
        {
            "conversations": [
                conv(CAND, "sum of 2", peek, out, {"text": "done"}),
                conv("(?s)", "sum of 2", out, {"text": "done"}),
            ]
        }
    )
    summary, lines = summary_and_lines(capsys, folder, tmp_path / "run", agent)
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("loss", "activation"), lines
    assert sessions(tmp_path / "run")["sum.candidate.1"]["loaded"] == ["greeter"]
