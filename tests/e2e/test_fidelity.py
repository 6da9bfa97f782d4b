"""Issue 23 part 5: foreign suites run as their own harness runs them. A Margin case whose
agent starts in a repository the image holds (/testbed) and whose test.sh, run from /, calls
/tests/verifier.py: imported unmodified, its oracle passes and the arms' rows differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write

MARGIN = {
    "suite.toml": 'kind = "test_suite"\nname = "repo"\ndescription = "d"\ncases = ["fix-add"]\n',
    "cases/fix-add/case.toml": (
        'kind = "test_case"\nname = "fix-add"\ndescription = "fix it"\n'
        'agent_cwd = "/testbed"\ntest_cwd = "/"\ntest_timeout_seconds = 60\n'
    ),
    "cases/fix-add/prompt.md": "calc.py in your folder adds wrongly: fix add().\n",
    # the repository is the image's, at /testbed (as an SWE-style suite's images hold it)
    "cases/fix-add/env/Dockerfile": (
        "FROM skillbench-sandbox\nRUN mkdir -p /testbed && "
        "printf 'def add(a, b):\\n    return a - b\\n' > /testbed/calc.py && "
        "echo repo > /testbed/README\n"
    ),
    "cases/fix-add/tests/test.sh": (
        "#!/bin/bash\ncd /testbed || exit 2\n[ -f /tests/verifier.py ] || exit 2\n"
        "python3 /tests/verifier.py\n"
    ),
    "cases/fix-add/tests/verifier.py": (
        "import sys\nsys.path.insert(0, '/testbed')\nimport calc\n"
        "sys.exit(0 if calc.add(2, 3) == 5 and open('README').read() == 'repo\\n' else 1)\n"
    ),
    # Margin runs solve.sh from test_cwd (here /): it finds the repository by its variable
    "cases/fix-add/oracle/solve.sh": (
        "#!/bin/bash\ncd \"$MARGIN_AGENT_CWD\" && sed -i 's/a - b/a + b/' calc.py\n"
    ),
}


def test_margin_agent_cwd_is_the_workspace_and_tests_are_at_slash_tests(
    tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "margin", str(write(tmp_path / "m", MARGIN)), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "not mapped" not in out, out  # the cwds and test_timeout_seconds are mapped
    case = (into / "evals/cases/fix-add.yaml").read_text()
    assert "workdir: /testbed" in case and "harbor: fix-add" in case


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_margin_repo_in_the_image_is_the_agents_cwd_end_to_end(
    fake, tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "margin", str(write(tmp_path / "m", MARGIN)), "--into", str(into)]) == 0
    capsys.readouterr()
    # the candidate edits calc.py by its relative name: only there when /testbed is its cwd
    fake(
        {
            "conversations": [
                conv(CAND, "adds wrongly", bash("sed -i 's/a - b/a + b/' calc.py"), {"text": "ok"}),
                conv(BASE, "adds wrongly", bash("ls > listing.txt"), {"text": "ok"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one case: too few units for a verdict (INCONCLUSIVE)
    row = summary["rows"][0]
    assert row["outcome"] == "win", lines
    assert row["arms"]["baseline"]["checks"][0]["passed"] is False  # exit 1, not 2
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    assert "oracle PASS: fix-add" in capsys.readouterr().out


# A skill-optimizer suite: setup reads the case's own files at $CASE (checks/, as graders do),
# which are gone when the agent starts; the skill under test sits in references/greeter/.
OPTIMIZER = {
    "suite.yml": (
        "name: seeds\nreferences: references\ncases:\n"
        "  - name: seeded\n    task: Copy the seed into out.txt.\n"
        "    setup: [cp $CASE/checks/seed.txt seed.txt]\n"
        "    graders:\n      - name: copied\n        command: python3 $CASE/checks/copied.py\n"
    ),
    "checks/seed.txt": "s33d\n",
    "checks/copied.py": (
        "import json, os\nw = os.environ['WORK']\n"
        "out = open(os.path.join(w, 'out.txt')).read() if os.path.exists(os.path.join(w, "
        "'out.txt')) else ''\nleak = os.path.exists(os.path.join(w, 'greeter'))\n"
        "print(json.dumps({'pass': out == 's33d\\n', 'score': float(out == "
        "'s33d\\n'), 'evidence': [repr(out), f'skill in workspace: {leak}']}))\n"
    ),
    "references/notes.md": "copy things carefully\n",
    # the bytes of the --into skill (tests/helpers.skill): it is the one under test
    "references/greeter/SKILL.md": (
        "---\nname: greeter\ndescription: Greets people politely.\n---\n# greeter\n"
    ),
}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_optimizer_setup_sees_case_files_the_agent_never_does(fake, tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "o", OPTIMIZER)
    assert main(["import", "skill-optimizer", str(src), "--into", str(into)]) == 0
    assert "references/greeter/ — the skill under test" in capsys.readouterr().out
    # the candidate copies the seed setup left, and finds no /case (the answers) from its
    # sandbox; the baseline only looks around
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Copy the seed",
                    bash("test ! -e /tmp/case && test ! -e /case && cp seed.txt out.txt"),
                    {"text": "ok"},
                ),
                conv(BASE, "Copy the seed", bash("ls -a > listing.txt"), {"text": "ok"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines
    arms = summary["rows"][0]["arms"]
    assert summary["rows"][0]["outcome"] == "win", arms
    assert arms["baseline"]["checks"][0]["detail"].endswith("skill in workspace: False"), arms


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_a_node_grader_is_planned_in_the_node_variant(tmp_path: Path, capsys) -> None:
    suite = {
        "suite.yml": (
            "name: n\ncases:\n  - name: js\n    task: t\n    graders:\n"
            "      - name: g\n        command: node $CASE/checks/g.js\n"
        )
    }
    into = skill(tmp_path, {})
    assert (
        main(["import", "skill-optimizer", str(write(tmp_path / "o", suite)), "--into", str(into)])
        == 0
    )
    capsys.readouterr()
    assert main(["image", "build", "--node"]) == 0
    capsys.readouterr()
    # probed in the variant it runs in (which has node), not the sandbox image (which has not)
    assert main(["eval", str(into), "--plan", "--model", "scripted/demo"]) == 0
    planned = capsys.readouterr().out
    assert "  sessions: 2 to run\n" in planned and "skipped" not in planned, planned
    assert "not probed" not in planned, planned


# Margin's own semantics (Margin-Lab/evals docs): the compiler reads only the cases suite.toml
# lists; preamble-prompt.md at the suite root is prepended to every prompt; oracle/solve.sh runs
# from test_cwd with MARGIN_AGENT_CWD, MARGIN_TEST_CWD and MARGIN_ORACLE_DIR, its files beside it.
MARGIN_ORACLE = {
    "suite.toml": 'kind = "test_suite"\nname = "s"\ndescription = "d"\ncases = ["envy"]\n',
    "preamble-prompt.md": "You are in a sandbox.\n",
    "cases/envy/case.toml": (
        'kind = "test_case"\nname = "envy"\ndescription = "d"\n'
        'agent_cwd = "/work"\ntest_cwd = "/"\n'
    ),
    "cases/envy/prompt.md": "Write env.txt.\n",
    "cases/envy/tests/test.sh": (
        "#!/bin/bash\nf=/work/env.txt\n"
        'test "$(sed -n 1p $f)" = "/work /" || exit 1\n'
        'test "$(sed -n 2p $f)" = / || exit 1\n'  # solve.sh ran from test_cwd
        'test "$(sed -n 3p $f)" = staged || exit 1\n'  # its sibling file, via MARGIN_ORACLE_DIR
    ),
    "cases/envy/oracle/solve.sh": (
        "#!/bin/bash\n"
        'echo "$MARGIN_AGENT_CWD $MARGIN_TEST_CWD" > "$MARGIN_AGENT_CWD/env.txt"\n'
        'pwd >> "$MARGIN_AGENT_CWD/env.txt"\n'
        'cat "$MARGIN_ORACLE_DIR/data.txt" >> "$MARGIN_AGENT_CWD/env.txt"\n'
    ),
    "cases/envy/oracle/data.txt": "staged\n",
    # a leftover folder suite.toml does not list: Margin never reads it
    "cases/old-draft/notes.txt": "wip\n",
}


def test_margin_reads_only_listed_cases_and_prepends_the_preamble(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "m", MARGIN_ORACLE)
    assert main(["import", "margin", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    assert "cases/old-draft: not listed in suite.toml `cases`" in out, out
    assert not (into / "evals/cases/old-draft.yaml").exists()
    case = (into / "evals/cases/envy.yaml").read_text()
    assert "task: |\n  You are in a sandbox.\n\n  Write env.txt.\n" in case, case
    # a blank preamble is a mistake in the suite, named in one line
    (src / "preamble-prompt.md").write_text("  \n")
    assert main(["import", "margin", str(src), "--into", str(skill(tmp_path / "b", {}))]) != 0
    assert f"{src}/preamble-prompt.md: " in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
def test_margin_oracle_runs_from_test_cwd_with_its_environment(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert (
        main(["import", "margin", str(write(tmp_path / "m", MARGIN_ORACLE)), "--into", str(into)])
        == 0
    )
    capsys.readouterr()
    code = main(["eval", str(into), "--oracle", "--model", "scripted/demo"])
    out = capsys.readouterr().out
    assert "oracle PASS: envy" in out, out
    assert code == 0
