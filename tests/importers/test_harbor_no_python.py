"""A Harbor task's image need not have python3 (issue 37). harbor-cookbook's `simple-task`
and `skills` recipes start FROM ubuntu:24.04 and install no Python; humanevalpack's C++ and
Java tasks start FROM gcc and eclipse-temurin. Harbor runs them as they are; skillbench's
sandbox executor runs on the image's python3, so re-run on that material every such task was
skipped ("this image has no python3 ... install it in the image"), with a hint to set
`build_network: true` that the import had set already. The sandbox layer now installs the
image's own distribution python3 with apt-get when the case's build has the network (as an
imported Harbor Dockerfile's has: Harbor builds online), and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

# the cookbook's simple-task, on a base with no python3 (the sandbox image with its python3
# removed: what ubuntu:24.04 is, offline); its verifier and solution need only bash
NO_PYTHON = (
    "RUN dpkg --purge --force-depends --force-remove-essential python3 python3-minimal "
    "python3.11 python3.11-minimal >/dev/null 2>&1; ! command -v python3\n"
)
TASK = {
    "hello/task.toml": (
        'version = "1.0"\n[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 120.0\n'
        "[environment]\nallow_internet = false\n"
    ),
    "hello/instruction.md": "Create /app/hello.txt holding Hello, world!\n",
    "hello/environment/Dockerfile": f"FROM skillbench-sandbox\nUSER root\n{NO_PYTHON}WORKDIR /app\n",
    "hello/tests/test.sh": (
        "#!/bin/bash\nif [ \"$(cat /app/hello.txt)\" = 'Hello, world!' ]; then\n"
        "  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
    ),
    "hello/solution/solve.sh": "#!/bin/bash\necho 'Hello, world!' > hello.txt\n",
}


def test_a_harbor_image_without_python3_runs(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "h", TASK) / "hello"
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    capsys.readouterr()
    code = main(["eval", str(into), "--oracle"])
    report = capsys.readouterr().out
    # before: "oracle SKIP: hello — ... this image has no python3" and exit 2
    assert "no python3" not in report, report
    assert code == 0 and "oracle PASS: hello" in report, report


def test_without_the_network_the_refusal_names_the_fix(tmp_path: Path, capsys) -> None:
    into = skill(
        tmp_path,
        {
            "evals/cases/c.yaml": (
                "task: t\ncontainerfile: c/Containerfile\noracle: c/solve.sh\n"
                "checks:\n  - command_succeeds: 'true'\n"
            ),
            "evals/cases/c/Containerfile": f"FROM skillbench-sandbox\nUSER root\n{NO_PYTHON}",
            "evals/cases/c/solve.sh": "true\n",
        },
    )
    code = main(["eval", str(into), "--oracle"])
    report = capsys.readouterr().out
    assert code == 2, report
    assert "this image has no python3, which the sandbox executor runs on: install python3" in (
        report
    ), report
    # the case's own build was not what lacked the network: no hint to a field it does not need
    assert "it ran without network" not in report, report
    assert "give the case `build_network: true`" in report, report
