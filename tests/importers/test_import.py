"""`skillbench import` (issue 17): small tasks of our own in each foreign format (none copied
from public suites), imported into a skill and run end to end with the fake model server; the
reward file, the verifier's exit code and the grader's JSON decide rows, and the reference
solutions pass every check under `eval --oracle`."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.resources import machine_cpus
from skillbench.importers.conformance import ImporterConformance
from skillbench.importers.formats import IMPORTERS, Importer
from tests.helpers import BASE, CAND, conv, run_eval, skill, write, write_file

MARGIN = {
    "suite.toml": 'kind = "test_suite"\nname = "arith"\ndescription = "d"\ncases = ["add-two"]\n',
    "cases/add-two/case.toml": (
        'kind = "test_case"\nname = "add-two"\ndescription = "adds"\nagent_cwd = "/work"\n'
        'test_cwd = "/work"\ntest_timeout_seconds = 60\n[metadata]\ndifficulty = "easy"\n'
    ),
    "cases/add-two/prompt.md": "Write the sum of 2 and 3 to sum.txt.\n",
    # offline, the case's own image builds on the sandbox image
    "cases/add-two/env/Dockerfile": "FROM skillbench-sandbox\nRUN echo margin > /opt/env-marker\n",
    "cases/add-two/tests/test.sh": (
        "#!/bin/bash\ncommand -v python3 >/dev/null || exit 2\npython3 tests/check.py || exit 1\n"
    ),
    "cases/add-two/tests/check.py": "import sys\nsys.exit(open('sum.txt').read().strip() != '5')\n",
    "cases/add-two/oracle/solve.sh": "#!/bin/bash\necho 5 > sum.txt\n",
}
HARBOR = {  # a downloaded dataset: <uuid>/<task>/; the second name collides once sanitised
    "0b1c/hello task/task.toml": (
        'version = "1.0"\n[agent]\ntimeout_sec = 300\n[environment]\nallow_internet = false\n'
        "cpus = 1\n[verifier]\ntimeout_sec = 120\n"
    ),
    "0b1c/hello task/instruction.md": "Create hello.txt saying hi.\n",
    "0b1c/hello task/environment/Dockerfile": "FROM skillbench-sandbox\nWORKDIR /app\n",
    "0b1c/hello task/tests/test.sh": (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if python3 /tests/test_hello.py; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    ),
    "0b1c/hello task/tests/test_hello.py": (
        "import sys\nsys.exit(open('hello.txt').read().strip() != 'hi')\n"
    ),
    "0b1c/hello task/solution/solve.sh": "#!/bin/bash\necho hi > hello.txt\n",
    "9f8e/hello-task/task.toml": 'version = "1.0"\n',
    "9f8e/hello-task/instruction.md": "Create hello.txt saying hello.\n",
    "9f8e/hello-task/tests/test.sh": "echo 0 > /logs/verifier/reward.txt\n",
}
OPTIMIZER = {
    "suite.yml": (
        "name: poems\nmodels: [gpt-x]\nenv: [HOME]\ntimeoutSeconds: 600\n"
        "appendSystemPrompt: be brief\ncases:\n"
        "  - name: haiku\n    task: Write a three-line haiku to poem.txt.\n"
        "    graders:\n      - name: lines\n        command: python3 $CASE/checks/lines.py\n"
        "  - cases/limerick.yml\n"
    ),
    "cases/limerick.yml": (
        "name: limerick\ntask: Write a five-line limerick to poem.txt.\n"
        "graders:\n  - name: exists\n    command: test -s poem.txt\n"
    ),
    "checks/lines.py": (
        "import json, os\n"
        "n = len(open(os.path.join(os.environ['WORK'], 'poem.txt')).read().splitlines())\n"
        "print(json.dumps({'pass': n == 3, 'score': n / 3, 'evidence': [f'{n} lines']}))\n"
    ),
    "workspace/README": "poems go in poem.txt\n",
}


def target(tmp_path: Path) -> Path:
    return skill(tmp_path, {})


def imported(capsys, fmt: str, src: Path, into: Path, *extra: str) -> tuple[int, list[str]]:
    """Exit code and output lines (stderr's error line appended)."""
    code = main(["import", fmt, str(src), "--into", str(into), *extra])
    out = capsys.readouterr()
    return code, out.out.splitlines() + out.err.splitlines()


def test_margin_imports_with_a_header_and_says_what_it_could_not_map(
    tmp_path: Path, capsys
) -> None:
    src, into = write(tmp_path / "margin", MARGIN), target(tmp_path)
    code, out = imported(capsys, "margin", src, into, "--check")
    assert code == 0
    assert out[0] == f"would import 1 case(s) from margin suite {src} into {into}/evals: add-two"
    assert out[-1] == "check: the imported evals load cleanly (nothing written: --check)"
    assert not (into / "evals/cases").exists()
    code, out = imported(capsys, "margin", src, into)
    assert code == 0
    assert not any("not a local image" in x for x in out)
    assert not any("agent_cwd" in x for x in out)  # /work is the workdir anyway
    case = (into / "evals/cases/add-two.yaml").read_text()
    assert case.startswith(
        f"# imported by `skillbench import` from margin case {src}/cases/add-two"
    )
    assert (
        "verifier: {run: add-two/verify.sh, timeout: 60}" in case
        and "oracle: add-two/oracle/.margin-solve.sh" in case
    )
    assert "containerfile: add-two/env/Dockerfile" in case
    assert (into / "evals/cases/add-two/env/Dockerfile").is_file()
    test = (into / "evals/cases/add-two/tests/test.sh").read_text().splitlines()
    assert test[0] == "#!/bin/bash" and test[1].startswith("# imported by `skillbench import`")
    # a second import refuses to overwrite, and writes nothing
    code, out = imported(capsys, "margin", src, into)
    assert code == 2
    assert "would overwrite" in out[-1] and "cases/add-two.yaml" in out[-1]


def test_harbor_names_tasks_stably_and_maps_its_fields(tmp_path: Path, capsys) -> None:
    src, into = write(tmp_path / "dataset", HARBOR), target(tmp_path)
    code, out = imported(capsys, "harbor", src, into)
    assert code == 0, out
    names = out[0].split(": ", 1)[1].split(", ")
    assert len(names) == 2 and all(n.startswith("hello-task-") for n in names)
    again_into = skill(tmp_path / "again", {})
    assert imported(capsys, "harbor", src, again_into)[1][0].endswith(", ".join(names))  # stable
    first = next(n for n in names if (into / f"evals/cases/{n}/solution").is_dir())
    case = (into / f"evals/cases/{first}.yaml").read_text()
    assert (
        f"reward: {{file: /logs/verifier/reward.txt, min: 1, run: {first}/run-tests.sh, "
        "timeout: 120}"  # the task's [verifier] timeout_sec
    ) in case
    assert "timeout_minutes: 5" in case and "\ncpus: 1\n" in case  # applied, not a comment
    joined = "\n".join(out)
    assert "version — dropped" in joined
    # false: no network, skillbench's default too; absent: Harbor's default, true, said
    said = [x for x in out if "allow_internet" in x]
    assert len(said) == 1 and "absent: Harbor's default is true" in said[0], out
    other = next(n for n in names if n != first)
    assert "network: [deb.debian.org, " in (into / f"evals/cases/{other}.yaml").read_text()
    assert "\nnetwork:" not in case
    assert "workdir: /app" in case  # the Dockerfile's WORKDIR holds the workspace
    assert "containerfile: " in case
    # unmodified: the checker shows the task's tests/ at /tests, where test.sh looks
    assert f"harbor: {first}" in case and f"oracle: {first}/solution/solve.sh" in case
    test_sh = (into / f"evals/cases/{first}/tests/test.sh").read_text()
    assert test_sh.endswith(HARBOR["0b1c/hello task/tests/test.sh"].split("\n", 1)[1])


def test_a_base_image_missing_here_is_said_at_import(tmp_path: Path, capsys) -> None:
    src = write(tmp_path / "m", {**MARGIN, "cases/add-two/env/Dockerfile": "FROM debian:12\n"})
    code, out = imported(capsys, "margin", src, target(tmp_path))
    assert code == 0
    assert any(
        "cases/add-two: env/Dockerfile FROM debian:12 — not a local image here: the eval "
        "refuses the case until it is" in x
        for x in out
    )


def test_a_source_in_the_wrong_shape_is_one_clear_line(tmp_path: Path, capsys) -> None:
    into = target(tmp_path)
    (tmp_path / "empty").mkdir()
    for fmt, why in (
        ("harbor", "no Harbor task here"),
        ("margin", "no suite.toml"),
        ("skill-optimizer", "no suite.yml"),
    ):
        assert main(["import", fmt, str(tmp_path / "empty"), "--into", str(into)]) == 2
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err
    broken = write(tmp_path / "m", {**MARGIN, "cases/add-two/prompt.md": ""})
    assert main(["import", "margin", str(broken), "--into", str(into)]) == 2
    assert "prompt.md: missing or empty" in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_imported_suites_run_end_to_end_and_their_oracles_pass(
    fake, tmp_path: Path, capsys
) -> None:
    into = target(tmp_path)
    for fmt, files in (("margin", MARGIN), ("harbor", HARBOR), ("skill-optimizer", OPTIMIZER)):
        assert imported(capsys, fmt, write(tmp_path / fmt, files), into)[0] == 0
    fake(
        {
            "conversations": [
                conv(CAND, "sum of 2 and 3", write_file("sum.txt", "5\n"), {"text": "done"}),
                conv(BASE, "sum of 2 and 3", write_file("sum.txt", "6\n"), {"text": "done"}),
                conv(CAND, "saying hi", write_file("hello.txt", "hi\n"), {"text": "done"}),
                conv(BASE, "saying hi", write_file("hello.txt", "yo\n"), {"text": "done"}),
                conv("(?s)", "saying hello", {"text": "no"}),
                conv(CAND, "haiku", write_file("poem.txt", "a\nb\nc\n"), {"text": "done"}),
                conv(BASE, "haiku", write_file("poem.txt", "a\nb\n"), {"text": "done"}),
                conv("(?s)", "limerick", write_file("poem.txt", "x\n"), {"text": "done"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, into, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # too few units for a verdict: INCONCLUSIVE
    rows = {r["case"]: r for r in summary["rows"]}
    assert rows["add-two"]["outcome"] == "win"  # Margin: the verifier's exit code
    hello = next(k for k in rows if k.startswith("hello-task-") and rows[k]["outcome"] == "win")
    reward = rows[hello]["arms"]["baseline"]["checks"][0]
    assert (reward["passed"], reward["score"]) == (False, 0.0)  # Harbor: the reward file
    haiku = rows["haiku"]["arms"]
    assert haiku["candidate"]["checks"][0]["detail"] == "score 1; 3 lines"  # the grader's JSON
    assert haiku["baseline"]["checks"][0]["detail"].startswith("score 0.666")
    assert rows["limerick"]["outcome"] == "tie"  # exit-code grader, passed in both arms
    # the reference solutions make every check pass; cases without one are skipped
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    report = capsys.readouterr().out.splitlines()
    assert "oracle PASS: add-two" in report and f"oracle PASS: {hello}" in report
    assert "oracle: 2 of 2 reference solution(s) pass every check; 3 case(s) skipped" in report


def test_a_dataset_imports_every_task_it_can_and_lists_the_rest(tmp_path: Path, capsys) -> None:
    steps = {  # a multi-step task: several instructions, one verdict each
        "7a7a/two-steps/task.toml": (
            'version = "1.0"\n[[steps]]\ninstruction = "step1.md"\n'
            '[[steps]]\ninstruction = "step2.md"\n'
        ),
        "7a7a/two-steps/step1.md": "Create a.txt.\n",
        "7a7a/two-steps/step2.md": "Create b.txt.\n",
        "7a7a/two-steps/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    sidecar = {  # a compose service, a skills_dir and a field no importer knows
        "0b1c/hello task/task.toml": 'skills_dir = "skills"\nsurprise = 1\n'
        + HARBOR["0b1c/hello task/task.toml"]
        + "[agent.extra]\nflag = true\n",
        "0b1c/hello task/environment/docker-compose.yaml": (
            "services:\n  main:\n    build: .\n  db:\n    image: postgres:16\n"
        ),
    }
    src = write(tmp_path / "dataset", {**HARBOR, **steps, **sidecar})
    into = target(tmp_path)
    code, out = imported(capsys, "harbor", src, into)
    assert code == 0, out
    assert len(out[0].split(": ", 1)[1].split(", ")) == 2  # both hello tasks imported
    assert out[1] == "2 imported, 1 skipped:"
    assert out[2].startswith(
        f"  7a7a/two-steps: {src}/7a7a/two-steps/task.toml: a multi-step task ([[steps]]"
    )
    assert not (into / "evals/cases/two-steps.yaml").exists()
    joined = "\n".join(out)
    assert "mapped (4):" in out  # each task: its skills_dir and `as_root`
    assert "  hello task: skills_dir — the skill under test: the --into skill" in joined
    assert "hello task: surprise — not in Harbor's task.toml reference; ignored" in joined
    assert "hello task: agent.extra — not in Harbor's task.toml reference; ignored" in joined
    assert (
        "hello task: environment/docker-compose.yaml — db: services in the arm's own pod" in joined
    )
    # a source where no task imports is refused, naming why each was skipped
    only = write(tmp_path / "only", steps)
    code, out = imported(capsys, "harbor", only, skill(tmp_path / "other", {}))
    assert code == 2
    assert "no task could be imported (7a7a/two-steps: " in out[-1] and "[[steps]]" in out[-1]


def test_a_skill_in_references_that_is_not_the_into_skill_is_a_warning(
    tmp_path: Path, capsys
) -> None:
    files = {
        **OPTIMIZER,
        "suite.yml": OPTIMIZER["suite.yml"].replace("cases:\n", "references: references\ncases:\n"),
        "references/poet/SKILL.md": "---\nname: poet\ndescription: Writes poems.\n---\n",
        "references/style.md": "short lines\n",
    }
    src, into = write(tmp_path / "so", files), target(tmp_path)
    code, out = imported(capsys, "skill-optimizer", src, into)
    assert code == 0, out
    warned = [x for x in out if x.startswith("warning: case haiku: references/poet/")]
    assert warned == [
        f"warning: case haiku: references/poet/ is the skill poet, not the --into skill "
        f"{into.name}: {into.name} is the one under test; references/poet/ is left out of the "
        "workspace"
    ]
    # the rest of references/ is the workspace's seed; the other skill is not in it
    assert (into / "evals/cases/haiku/fixture/style.md").is_file()
    assert not (into / "evals/cases/haiku/fixture/poet").exists()
    # when it is the --into skill (the same files), it is the candidate's (staged as the
    # skill), not fixture
    poet = write(
        tmp_path / "poet-home" / "poet",
        {
            "SKILL.md": files["references/poet/SKILL.md"],
            # what the candidate never sees is not a difference: earlier runs, its evals
            ".skillbench/runs/r1/plan.json": "{}",
            "evals/cases/old.yaml": "task: t\nchecks:\n  - file_exists: a\n",
        },
    )
    code, out = imported(capsys, "skill-optimizer", src, poet)
    assert code == 0, out
    assert not any(x.startswith("warning:") for x in out)
    assert any("references/poet/ — the skill under test" in x for x in out)
    assert not (poet / "evals/cases/haiku/fixture/poet").exists()
    # the same name with other bytes: a warning, and the --into skill wins
    other = write(tmp_path / "edited" / "poet", {"SKILL.md": files["references/poet/SKILL.md"]})
    (other / "SKILL.md").write_text(files["references/poet/SKILL.md"] + "Rhyme.\n")
    code, out = imported(capsys, "skill-optimizer", src, other)
    assert code == 0, out
    assert [x for x in out if x.startswith("warning:")] == [
        "warning: case haiku: references/poet/ differs from the --into skill poet (SKILL.md): "
        "the --into skill is the one under test; references/poet/ is left out of the workspace"
    ]
    assert not (other / "evals/cases/haiku/fixture/poet").exists()


def test_a_node_grader_makes_the_case_require_node(tmp_path: Path, capsys) -> None:
    suite = {
        "suite.yml": (
            "name: n\ncases:\n  - name: js\n    task: t\n    graders:\n"
            "      - name: g\n        command: node $CASE/checks/g.js\n"
            "  - name: py\n    task: t\n    graders:\n"
            "      - name: g\n        command: python3 nodes.py\n"
            "  - name: tsx\n    task: t\n    graders:\n"
            "      - name: g\n        command: cd $WORK && npx tsc --noEmit\n"
        )
    }
    into = target(tmp_path)
    code, out = imported(capsys, "skill-optimizer", write(tmp_path / "o", suite), into)
    assert code == 0
    assert any("case js: its setup or graders run node — `requires: [node]`" in x for x in out)
    assert "requires: [node]" in (into / "evals/cases/js.yaml").read_text()
    assert "requires" not in (into / "evals/cases/py.yaml").read_text()
    # npx is not in the node variant: required too, so check and the run say it is missing
    assert "requires: [node, npx]" in (into / "evals/cases/tsx.yaml").read_text()
    assert any(x.endswith("; npm and npx are not in it") and "case tsx" in x for x in out), out


@pytest.mark.parametrize(
    "where",
    ["suite absolute", "suite up", "case file", "case file up", "a case file outside"],
)
def test_no_suite_path_reaches_a_host_file(tmp_path: Path, capsys, where: str) -> None:
    """Attack: a hostile suite names a host file (a stand-in ~/.ssh) in `references:` or as a
    case file; it would be copied into every arm's workspace. The import refuses in one line
    naming the file and line, and writes nothing."""
    home = write(tmp_path / "home", {".ssh/id_ed25519": "PRIVATE KEY\n"})
    key = home / ".ssh"
    up = "../home/.ssh"
    suite, limerick = OPTIMIZER["suite.yml"], OPTIMIZER["cases/limerick.yml"]
    files, line, named = dict(OPTIMIZER), "", "suite.yml"
    if where == "suite absolute":
        files["suite.yml"] = suite.replace(
            "  - name: haiku\n", f"  - name: haiku\n    references: {key}\n"
        )
        line = "suite.yml:8"
    elif where == "suite up":
        files["suite.yml"] = suite.replace(
            "appendSystemPrompt", f"references: {up}\nappendSystemPrompt"
        )
        line = "suite.yml:5"
    elif where in ("case file", "case file up"):
        ref = str(key) if where == "case file" else f"../{up}"
        files["cases/limerick.yml"] = limerick + f"references: {ref}\n"
        named, line = "cases/limerick.yml", "cases/limerick.yml:6"
    else:
        write(tmp_path / "elsewhere", {"x.yml": limerick + f"references: {key}\n"})
        files["suite.yml"] = suite.replace("cases/limerick.yml", "../elsewhere/x.yml")
        line = "suite.yml:12"
    src, into = write(tmp_path / "so", files), target(tmp_path)
    code, out = imported(capsys, "skill-optimizer", src, into)
    assert code == 2, out
    assert out[-1].startswith(f"skillbench: error: {src / named}:{line.split(':')[1]}: "), out[-1]
    assert "leads outside" in out[-1] and "\n" not in out[-1]
    copied = [p for p in into.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]
    assert copied == []


@pytest.mark.parametrize("refs", ["missing", "[a, b]", "notes.md"])
def test_references_that_are_no_folder_of_the_suite_are_one_line(
    tmp_path: Path, capsys, refs: str
) -> None:
    # outside review: a list, or a path that is not there, crashed the import with a
    # FileNotFoundError traceback
    files = dict(OPTIMIZER)
    files["cases/limerick.yml"] = OPTIMIZER["cases/limerick.yml"] + f"references: {refs}\n"
    files["cases/notes.md"] = "not a folder\n"
    src, into = write(tmp_path / "so", files), target(tmp_path)
    code, out = imported(capsys, "skill-optimizer", src, into)
    assert code == 2, out
    assert out[-1].startswith(f"skillbench: error: {src / 'cases/limerick.yml'}:6: references ")
    assert "is not a folder of the suite" in out[-1] and "Traceback" not in "".join(out)


def test_harbor_fields_and_variables_are_named_as_harbor_defines_them(
    tmp_path: Path, capsys
) -> None:
    # Harbor's task.toml reference: build_timeout_sec, cpus, memory_mb, storage_mb and
    # [environment.env] are its fields; its compose files get TEST_DIR, CPUS and MEMORY
    task = {
        "t/task.toml": (
            'version = "1.0"\n[environment]\nbuild_timeout_sec = 900.0\ncpus = 64\n'
            'memory_mb = 4096\nstorage_mb = 10240\n[environment.env]\nMODE = "ci"\n'
        ),
        "t/instruction.md": "Say hi.\n",
        "t/environment/Dockerfile": "FROM skillbench-sandbox\n",
        "t/environment/docker-compose.yaml": (
            "services:\n  main:\n    build: .\n  db:\n    image: localhost/db:1\n"
            "    environment:\n      TESTS: ${TEST_DIR}\n      N: ${CPUS}\n      M: ${MEMORY}\n"
        ),
        "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    src = write(tmp_path / "h", task)
    code, out = imported(capsys, "harbor", src / "t", target(tmp_path))
    assert code == 0, out
    joined = "\n".join(out)
    assert "not a Harbor variable" not in joined and "not a Harbor field" not in joined, joined
    assert "no image is built" not in joined, joined
    assert (
        "t: environment.build_timeout_sec — dropped: Harbor's time limit on the image build"
        in joined
    )
    assert "t: environment.storage_mb — " in joined and "t: environment.env — " in joined
    for var in ("CPUS", "MEMORY"):  # Harbor sets them from the task's resources
        assert f"t: docker-compose.yaml: ${{{var}}} — Harbor's, the task's" in joined, joined
    case = (target(tmp_path) / "evals/cases/t.yaml").read_text()
    assert '"TESTS": "/tests"' in case, case  # where Harbor puts tests/
    # the task's resources are the case's own; more CPUs than the machine has: said, capped
    assert "\ncpus: 64\n" in case and "\nmemory: 4096m\n" in case, case
    have = machine_cpus()
    assert f"t: environment.cpus = 64 — this machine has {have}: the sandbox gets {have}" in joined
    assert main(["check", str(target(tmp_path))]) == 0
    checked = capsys.readouterr().out
    assert f"`cpus: 64` is more than this machine's {have}" in checked, checked
    assert "cases/t.yaml:" in checked, checked


def test_harbor_verifier_timeout_is_kept_as_written(tmp_path: Path, capsys) -> None:
    task = {
        "t/task.toml": 'version = "1.0"\n[verifier]\ntimeout_sec = 3000.0\n',
        "t/instruction.md": "Say hi.\n",
        "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    into = target(tmp_path)
    code, out = imported(capsys, "harbor", write(tmp_path / "h", task) / "t", into)
    assert code == 0, out
    assert "a verifier gets 600 s here" not in "\n".join(out)
    case = (into / "evals/cases/t.yaml").read_text()
    assert "timeout: 3000" in case, case
    assert main(["check", str(into)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    ("environment", "network"),
    [
        ("", "network: [deb.debian.org, "),  # absent: Harbor's default is allow_internet = true
        ("allow_internet = true\n", "network: [deb.debian.org, "),
        ("allow_internet = false\n", None),
        ('network_mode = "public"\n', "network: [deb.debian.org, "),
        ('network_mode = "no-network"\n', None),
        ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', "network: [pypi.org]\n"),
    ],
)
def test_harbor_network_is_harbors_default_or_as_written(
    tmp_path: Path, capsys, environment: str, network: str | None
) -> None:
    task = {
        "t/task.toml": f'version = "1.0"\n[environment]\n{environment}',
        "t/instruction.md": "Say hi.\n",
        "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    into = target(tmp_path)
    code, out = imported(capsys, "harbor", write(tmp_path / "h", task) / "t", into)
    assert code == 0, out
    case = (into / "evals/cases/t.yaml").read_text()
    if network is None:
        assert "network:" not in case, case
    else:
        assert network in case, case
    assert not any("not a Harbor field" in x for x in out), out
    assert main(["check", str(into)]) == 0, capsys.readouterr().out


def test_harbor_agent_timeout_is_kept_and_cut_at_the_users_cap(tmp_path: Path, capsys) -> None:
    # a 3-hour agent timeout was cut to 120 minutes at import, silently; it is kept as
    # written, and the run's cap (120 min unless --max-timeout / max_timeout raise it) is said
    from skillbench.api import capped_timeouts
    from skillbench.config import Settings
    from skillbench.engine.plan import EvalOptions

    task = {
        "t/task.toml": 'version = "1.0"\n[agent]\ntimeout_sec = 10800\n',
        "t/instruction.md": "Say hi.\n",
        "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    into = target(tmp_path)
    code, out = imported(capsys, "harbor", write(tmp_path / "h", task) / "t", into)
    assert code == 0, out
    assert "\ntimeout_minutes: 180\n" in (into / "evals/cases/t.yaml").read_text()
    assert main(["check", str(into)]) == 0
    checked = capsys.readouterr().out
    assert "cases/t.yaml:" in checked and "timeout 180 min is above the cap of 120 min" in checked
    assert "`--max-timeout 180`" in checked, checked
    capped = capped_timeouts(EvalOptions(skill_dir=str(into), settings=Settings()))
    assert len(capped) == 1 and "the agent phase is cut at 120 min" in capped[0], capped
    raised = EvalOptions(skill_dir=str(into), settings=Settings(max_timeout=180))
    assert capped_timeouts(raised) == []


SOURCES = {"margin": MARGIN, "harbor": HARBOR, "skill-optimizer": OPTIMIZER}


@pytest.fixture(params=sorted(SOURCES))
def importer(request: pytest.FixtureRequest) -> Importer:
    return IMPORTERS[request.param]


@pytest.fixture
def source(importer: Importer, tmp_path: Path) -> Path:
    (name,) = [n for n, f in IMPORTERS.items() if f is importer]
    return write(tmp_path / "src", SOURCES[name])


@pytest.fixture(name="skill")
def skill_folder(tmp_path: Path) -> Path:
    return target(tmp_path)


class TestBuiltinImporters(ImporterConformance):
    """The built-in importers pass the suite a package's importer must pass."""
