"""Verifiers and solutions with the privileges they were written for (issue 37 item 3).

Harbor runs its verifier as `[verifier] user` and the agent phase (the oracle's solve.sh) as
`[agent] user`, both the image's default USER (root) when absent (Harbor's
src/harbor/models/task/config.py, VerifierConfig.user / AgentConfig.user: "None uses the
environment's default USER (e.g., root)"; its verifier passes `user=` to `exec`), in the
container's own writable layer with the image's ENV. Here such a script runs as root only
in a container the agent never touched (the checker; the oracle's own sandbox), on a writable
layer, with the image's PATH; the agent's phase stays unprivileged on a read-only root. The
attacks: a hostile workspace gets nothing more from the root verifier than from the checker
user before."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from skillbench.checks.run import run_checks
from skillbench.cli import main
from skillbench.evals.cases import load_case, load_suite
from skillbench.evals.model import Case, Check
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.inside import executor
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.helpers import skill, write

# a verifier written for root, as Harbor's are: it installs into the system first and finds
# the image's own tool on the image's PATH
ROOT_TEST_SH = """#!/bin/bash
fail() { echo "$1"; echo 0 > /logs/verifier/reward.txt; exit 0; }
[ "$(id -u)" = 0 ] || fail "not root: $(id -un)"
mkdir -p /usr/local/lib/harbor && touch /usr/local/lib/harbor/installed || fail "read-only root"
command -v harbortool >/dev/null || fail "the image's PATH is not applied: $PATH"
command -v planted >/dev/null && fail "a workspace folder is on the PATH: $PATH"
cmp -s /tests/expected.txt answer.txt && echo 1 > /logs/verifier/reward.txt \
  || echo 0 > /logs/verifier/reward.txt
"""
ROOT_SOLVE_SH = """#!/bin/bash
[ "$(id -u)" = 0 ] || { echo "not root: $(id -un)"; exit 3; }
touch /etc/solved-as-root || exit 4
cp /solution/answer answer.txt
"""
# the image's ENV puts its own tool and a workspace folder on the PATH
DOCKERFILE = """FROM skillbench-sandbox
RUN mkdir -p /opt/tool/bin && printf '#!/bin/sh\\necho tool\\n' > /opt/tool/bin/harbortool \\
 && chmod 755 /opt/tool/bin/harbortool
ENV PATH=/work/bin:/opt/tool/bin:$PATH
"""


def harbor_task(root: Path, toml: str = "") -> Path:
    return write(
        root / "tasks/rooted",
        {
            "task.toml": toml or "[agent]\ntimeout_sec = 120\n",
            "instruction.md": "Write the answer to answer.txt.\n",
            "environment/Dockerfile": DOCKERFILE,
            "tests/test.sh": ROOT_TEST_SH,
            "tests/expected.txt": "42\n",
            "solution/solve.sh": ROOT_SOLVE_SH + "mkdir -p bin && printf 'exit 0' > bin/planted\n"
            "chmod 755 bin/planted\n",
            "solution/answer": "42\n",
        },
    )


def test_harbor_and_margin_imports_say_which_scripts_run_as_root(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "harbor", str(harbor_task(tmp_path)), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    case = (into / "evals/cases/rooted.yaml").read_text()
    assert "as_root: [verifier, oracle]" in case, case
    assert "`as_root: [verifier, oracle]` — test.sh as root in the checker" in out
    # a task naming a user: that phase runs unprivileged, and the import says so
    other = skill(tmp_path / "b", {})
    src = harbor_task(tmp_path / "b", '[verifier]\nuser = "tester"\n')
    assert main(["import", "harbor", str(src), "--into", str(other)]) == 0
    out = capsys.readouterr().out
    assert "as_root: [oracle]" in (other / "evals/cases/rooted.yaml").read_text()
    assert "verifier.user = tester — runs as skillbench's checker user" in out
    assert "not a Harbor field" not in out
    margin = write(
        tmp_path / "margin",
        {
            "suite.toml": 'kind = "test_suite"\nname = "m"\ncases = ["one"]\n',
            "cases/one/case.toml": 'kind = "test_case"\nname = "one"\n',
            "cases/one/prompt.md": "Do it.\n",
            "cases/one/tests/test.sh": "exit 0\n",
            "cases/one/oracle/solve.sh": "apt-get install -y jq\n",
        },
    )
    mine = skill(tmp_path / "m", {})
    assert main(["import", "margin", str(margin), "--into", str(mine)]) == 0
    assert "as_root: [oracle]" in (mine / "evals/cases/one.yaml").read_text()


def test_as_root_names_only_the_sources_scripts_and_never_a_suite(tmp_path: Path) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/bad.yaml": "task: t\nas_root: [agent]\n",
            "evals/cases/good.yaml": "task: t\nas_root: [verifier]\n",
        },
    )
    case, problems = load_case(folder / "evals/cases/good.yaml", folder)
    assert case.as_root == ("verifier",)
    # `check` says what differs from the source, at the line
    assert any(p.line == 2 and "the agent still works unprivileged" in p.message for p in problems)
    with pytest.raises(Exception, match=r"bad\.yaml:2.*may name only verifier and oracle"):
        load_case(folder / "evals/cases/bad.yaml", folder)
    suite = write(
        folder / "evals",
        {"suite.yaml": "task: t\nas_root: [verifier]\ncases:\n  - {name: a, checks: []}\n"},
    )
    with pytest.raises(Exception, match="`as_root` is for a case, not a suite"):
        load_suite(suite / "suite.yaml", folder)


def test_the_image_path_given_to_root_keeps_no_folder_the_agent_could_write() -> None:
    path = "/work/bin:/opt/tool/bin:/tmp/x:relative:/home/agent/.local/bin:/usr/bin:/work"
    assert executor._image_path(path) == "/opt/tool/bin:/usr/bin"


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_harbor_task_written_for_root_passes_its_oracle(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert main(["import", "harbor", str(harbor_task(tmp_path)), "--into", str(into)]) == 0
    capsys.readouterr()
    out = tmp_path / "oracle"
    code = main(["eval", str(into), "--oracle", "--model", "scripted/demo", "--out", str(out)])
    report = capsys.readouterr().out.splitlines()
    # before: solve.sh exited 3 (not root) and test.sh said "not root: checker"
    assert "oracle PASS: rooted" in report and code == 0, report
    saved = json.loads((out / "oracle.json").read_text())
    assert saved[0]["do_nothing_passed"] is False


@pytest.mark.anyio
@pytest.mark.sandbox
async def test_a_hostile_workspace_gets_no_more_from_a_root_verifier(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    folder = skill(
        tmp_path,
        {
            # what hostile code the root verifier runs (a planted conftest.py) would try
            "evals/cases/root.sh": (
                'echo "uid=$(id -u)"\n'
                "grep ' /work ' /proc/mounts\n"
                "touch /case/x 2>/dev/null && echo case-writable\n"
                "mount -o remount,rw /case 2>/dev/null && echo case-remounted\n"
                "touch /opt/skillbench/bin/x 2>/dev/null && echo tools-writable\n"
                "cat /proc/1/environ >/dev/null 2>&1 && echo executor-readable\n"
                "kill -9 1 2>/dev/null; echo executor-alive\n"
                "cp /bin/bash /work/rootsh && chmod 4755 /work/rootsh\n"
                "cp /bin/bash /tmp/rootsh && chmod 4755 /tmp/rootsh\n"
                "./agent-suid -p -c 'echo agent-suid-euid=$(id -u)'\n"
                "echo 1 > /work/verdict\n"
            ),
        },
    )
    case = Case(name="root", path=str(folder / "evals/cases/root.yaml"), task="t")
    case = msgspec.structs.replace(case, as_root=("verifier",))
    own = msgspec.structs.replace(spec, as_root=("verifier",))
    staged = await stage_arm(provider, own, case, {})
    try:
        # the agent's phase stays unprivileged, on a read-only root
        agent = await staged.sandbox.exec(
            "id -u; touch /usr/x 2>&1; cp /bin/bash agent-suid && chmod 4755 agent-suid"
        )
        assert agent.stdout.startswith("1000\n") and "Read-only file system" in agent.stdout
        checker = await check_phase(provider, own, staged, folder)
        checks = [
            Check("verifier", "cases/root.sh"),
            # a check of the checker user: it runs before the root script, whatever the order
            Check("command_succeeds", "test ! -e /work/verdict"),
        ]
        results = await run_checks(checks, Transcript([]), checker, root=("verifier",))
        said = results[0].output
        assert "uid=0" in said, said
        mount = next(line for line in said.splitlines() if " /work " in line)
        assert "nosuid" in mount and "nodev" in mount, mount
        for escape in ("case-writable", "case-remounted", "tools-writable", "executor-readable"):
            assert escape not in said, said
        assert "executor-alive" in said and "agent-suid-euid=1001" not in said
        assert "agent-suid-euid=0" in said  # root stays root, the agent's setuid bit aside
        # the checker user's checks ran first: the root script's files were not there yet
        assert results[1].passed, results[1].detail
        # later, a setuid file the root script made is not honoured for the checker user
        later = await checker.exec("/work/rootsh -p -c 'id -u'; /tmp/rootsh -p -c 'id -u'")
        assert later.stdout.split() == ["1001", "1001"], later
        # the checks keep their order in the results
        assert [r.name for r in results] == [c.name for c in checks]
    finally:
        await staged.close()
