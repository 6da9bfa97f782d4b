"""QuesmaOrg/harbor-workshop's `example-task-airgapped` (issue 37) keeps task.toml's network
default (Harbor's `allow_internet`: true) and takes the network away in its compose file:
`services.main.network_mode: "none"` on the container where Harbor runs the agent, the
solution and the verifier. Re-run on it, the import gave every phase the internet allowlist
and listed `network_mode` as "not supported for the agent's own sandbox": the airgapped task
ran online. Its compose file's log mounts were also called "not a variable Harbor sets",
which Harbor does set (HOST_/ENV_VERIFIER_LOGS_PATH, _AGENT_LOGS_PATH)."""

from __future__ import annotations

from pathlib import Path

from skillbench.cli import main
from tests.helpers import skill, write

COMPOSE = """services:
  main:
    build:
      context: ${CONTEXT_DIR}
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - TEST_DIR=${TEST_DIR}
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ${HOST_AGENT_LOGS_PATH}:${ENV_AGENT_LOGS_PATH}
    # Completely disable network access
    network_mode: "none"
"""
TASK = {
    "air/task.toml": 'version = "1.0"\n[agent]\ntimeout_sec = 900.0\n[environment]\ncpus = 1\n',
    "air/instruction.md": "Compile main.go.\n",
    "air/environment/Dockerfile": "FROM skillbench-sandbox\nWORKDIR /app\n",
    "air/environment/docker-compose.yaml": COMPOSE,
    "air/tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
}


def test_main_network_mode_none_is_no_network(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert (
        main(["import", "harbor", str(write(tmp_path / "h", TASK) / "air"), "--into", str(into)])
        == 0
    )
    said = capsys.readouterr().out
    case = (into / "evals/cases/air.yaml").read_text()
    assert "\nnetwork:" not in case, case  # no network: skillbench's default, as Harbor's here
    assert "services.main.network_mode = none — no network in any phase" in said, said
    assert "mapped to `network:" not in said and "services.main.network_mode —" not in said, said
    # Harbor sets its log-mount variables: never unknown; main's log mounts are Harbor's own
    # plumbing (the checker makes /logs/verifier and /logs/agent), not a volume of the case
    assert "not a variable Harbor sets" not in said, said
    assert "volumes.0" not in said and "volumes:" not in case, (said, case)
