"""A Harbor task's Dockerfile installs a package at build time (issue 37): Harbor builds with
the network, so the import keeps that (`build_network: true`) and the build's `apt-get
install` works where the machine reaches Debian's mirror; the phases keep their own network."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import skill, write

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

TASK = {
    "jq/task.toml": 'version = "1.0"\n[agent]\ntimeout_sec = 300\n[environment]\nallow_internet = false\n',
    "jq/instruction.md": "Write jq's version to /app/version.txt.\n",
    "jq/environment/Dockerfile": (
        "FROM skillbench-sandbox\nUSER root\n"
        "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends jq\n"
        "WORKDIR /app\n"
    ),
    "jq/tests/test.sh": (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if grep -q "^jq-" /app/version.txt; then echo 1; else echo 0; fi'
        " > /logs/verifier/reward.txt\n"
    ),
    "jq/solution/solve.sh": "#!/bin/bash\njq --version > /app/version.txt\n",
}


def test_a_harbor_dockerfile_installs_a_package_with_the_network(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "harbor", TASK)
    assert main(["import", "harbor", str(src / "jq"), "--into", str(into)]) == 0
    said = capsys.readouterr().out
    assert "environment/Dockerfile — built with the network, as Harbor builds it" in said, said
    assert "build_network: true" in (into / "evals/cases/jq.yaml").read_text()
    code = main(["eval", str(into), "--oracle", "--model", "scripted/demo"])
    report = capsys.readouterr().out
    assert code == 0 and "oracle PASS: jq" in report, report
