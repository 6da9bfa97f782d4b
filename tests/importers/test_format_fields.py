"""Every field of each imported format's own reference, and what skillbench does with it
(issue 37 item 1): imported as a native field, or said (differs / ignored, with why) at the
task or file that has it. A fixture in the source's shape holding every field is imported; a
reference field the importer does not classify, or calls "not a field" of its format, fails.

References (read in the formats' own code and docs):
- Harbor task.toml: harbor-framework/harbor src/harbor/models/task/config.py (TaskConfig,
  PackageInfo, VerifierConfig, SolutionConfig, AgentConfig, EnvironmentConfig, as stored at
  LegoX/harbor@73fd120), and harborframework.com/news/separate-verifier-sandboxes
  (`artifacts`, `[verifier] environment_mode`, `[verifier.environment]`).
- Margin suite.toml and case.toml: Margin-Lab/evals docs/cli/creating-your-own-eval/ and
  .agents/skills/suite-converter/references/harbor-mapping.md (kind, name, description,
  image, agent_cwd, test_cwd, test_timeout_seconds, [metadata]; suite: kind, name,
  description, cases).
- skill-optimizer: fastxyz/skill-optimizer src/workbench/suite-loader.ts (name, cases,
  models, kind, targetPassRate, source; case defaults references, env, setup, cleanup,
  artifacts, timeoutSeconds) and src/workbench/types.ts (WorkbenchCaseConfig: name,
  references, task, graders, artifacts, env, setup, cleanup, model, timeoutSeconds).
- skill-creator evals.json: anthropics/skills skills/skill-creator/references/schemas.md
  (skill_name, evals[].id, prompt, expected_output, files, expectations).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.evals_json import load_evals_json
from skillbench.importers import harbor
from skillbench.importers.harbor_fields import SAID
from skillbench.importers.margin import CASE_FIELDS
from tests.helpers import skill, write

# Harbor's task.toml: every field, and what the import does with it (a word the import's
# output or the case file must show for that field)
HARBOR: dict[str, str] = {
    "schema_version": "ignored: the task format's version",
    "version": "dropped: the task format's version",
    "source": "ignored: where the task came from",
    "artifacts": "only the workspace reaches the checker",
    "task.name": "ignored: Harbor's registry package metadata",
    "task.description": "ignored: Harbor's registry package metadata",
    "task.authors": "ignored: Harbor's registry package metadata",
    "task.keywords": "ignored: Harbor's registry package metadata",
    "metadata": "# metadata: {'difficulty': 'easy'}",
    "verifier.timeout_sec": "timeout: 90",
    "verifier.env": "verifier.env",
    "verifier.user": "as_root: [verifier, oracle]",
    "verifier.network_mode": "a phase's own network override",
    "verifier.allowed_hosts": "a phase's own network override",
    "verifier.environment_mode": "Harbor's separate mode does",
    "verifier.environment": "a separate verifier image or its own limits are not used",
    "solution.env": "solution.env",
    "agent.timeout_sec": "timeout_minutes:",
    "agent.user": "as_root: [verifier, oracle]",
    "agent.network_mode": "a phase's own network override",
    "agent.allowed_hosts": "a phase's own network override",
    "environment.build_timeout_sec": "environment.build_timeout_sec",
    "environment.docker_image": "image:",
    "environment.cpus": "cpus: ",
    "environment.memory_mb": "memory: ",
    "environment.storage_mb": "environment.storage_mb",
    "environment.gpus": "environment.gpus",
    "environment.gpu_types": "ignored: no GPU is given to a sandbox here",
    "environment.allow_internet": "network:",
    "environment.network_mode": "environment.network_mode",
    "environment.allowed_hosts": "network:",  # (empty: valid only beside allowlist)
    "environment.mcp_servers": "docs",
    "environment.env": "environment.env",
    "environment.skills_dir": "the skill under test",
    "environment.healthcheck": "differs: not run",
    "environment.memory": "deprecated spelling of memory_mb",
    "environment.storage": "deprecated spelling of storage_mb",
}
HARBOR_TOML = """schema_version = "1.1"
version = "1.0"
source = "github.com/example/tasks"
artifacts = ["/tmp/answer.json"]

[task]
name = "example/every-field"
description = "A task holding every field"
authors = [{ name = "A. Author", email = "a@example.com" }]
keywords = ["demo"]

[metadata]
difficulty = "easy"

[verifier]
timeout_sec = 90
env = { TOKEN = "x" }
user = "root"
network_mode = "no-network"
allowed_hosts = []
environment_mode = "shared"

[verifier.environment]
cpus = 2

[solution]
env = { HINT = "y" }

[agent]
timeout_sec = 300
user = "root"
network_mode = "public"
allowed_hosts = []

[environment]
build_timeout_sec = 600
docker_image = "localhost/every-field:1"
cpus = 1
memory_mb = 2048
storage_mb = 10240
gpus = 0
gpu_types = ["H100"]
allow_internet = true
network_mode = "public"
allowed_hosts = []
mcp_servers = [{ name = "docs", transport = "streamable-http", url = "http://docs:8000/mcp" }]
env = { API = "z" }
skills_dir = "skills"
memory = "2G"
storage = "10G"

[environment.healthcheck]
command = "true"
"""


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def test_harbor_every_task_toml_field_is_classified(tmp_path: Path, capsys) -> None:
    classified = {_dotted(p) for p in harbor._KNOWN} | {_dotted(p) for p in SAID}
    classified |= {"environment.skills_dir"}  # the skill under test (_harbor_unmapped)
    missing = sorted(set(HARBOR) - classified)
    assert not missing, f"Harbor fields the importer does not classify: {missing}"
    src = write(
        tmp_path / "task",
        {
            "task.toml": HARBOR_TOML,
            "instruction.md": "Do it.\n",
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
            "solution/solve.sh": "true\n",
        },
    )
    into = skill(tmp_path, {})
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    said = capsys.readouterr().out + (into / "evals/cases/task.yaml").read_text()
    assert "not in Harbor's task.toml reference" not in said, said
    assert "not a Harbor field" not in said, said
    for field, word in HARBOR.items():
        assert word in said, f"{field}: {word!r} not said"


def test_margin_every_suite_and_case_field_is_classified(tmp_path: Path, capsys) -> None:
    reference = {"kind", "name", "description", "image", "agent_cwd", "test_cwd"}
    reference |= {"test_timeout_seconds", "metadata"}
    assert reference == set(CASE_FIELDS)
    src = write(
        tmp_path / "suite",
        {
            "suite.toml": 'kind = "test_suite"\nname = "s"\ndescription = "d"\ncases = ["one"]\n',
            "cases/one/case.toml": (
                'kind = "test_case"\nname = "one"\ndescription = "a case"\n'
                'image = "localhost/m:1"\nagent_cwd = "/app"\ntest_cwd = "/app"\n'
                "test_timeout_seconds = 300\n"
                # a field Margin's reference does not have: said, never dropped silently
                'retries = 3\n[metadata]\ndifficulty = "easy"\n'
            ),
            "cases/one/prompt.md": "Do it.\n",
            "cases/one/tests/test.sh": "exit 0\n",
        },
    )
    into = skill(tmp_path, {})
    assert main(["import", "margin", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    case = (into / "evals/cases/one.yaml").read_text()
    # before: `retries` was dropped without a word
    assert "cases/one: `retries` — not in Margin's case.toml reference; ignored" in out, out
    assert "not a Margin suite field" not in out
    for word in ("# description: a case", "image: localhost/m:1", "workdir: /app"):
        assert word in case, case
    # test_timeout_seconds is the verifier's limit, as written (issue 37: it was 600 s)
    assert "timeout: 300}" in case and "# metadata: {'difficulty': 'easy'}" in case


def test_skill_optimizer_every_suite_and_case_field_is_classified(tmp_path: Path, capsys) -> None:
    suite = {
        "name": "wb",
        "kind": "regression",
        "targetPassRate": 0.8,
        "models": ["openrouter/x"],
        "source": {"type": "git", "url": "https://example.com/r", "ref": "main"},
        "references": "./references",
        "env": ["TOKEN"],
        "setup": ["true"],
        "cleanup": ["true"],
        "artifacts": ["out.txt"],
        "timeoutSeconds": 120,
        "cases": [
            {
                "name": "one",
                "task": "Do it.",
                "graders": [{"name": "g", "command": "true"}],
                "references": "./references",
                "artifacts": ["out.txt"],
                "env": ["TOKEN"],
                "setup": ["true"],
                "cleanup": ["true"],
                "model": "openrouter/x",
                "timeoutSeconds": 60,
            }
        ],
    }
    src = write(
        tmp_path / "wb",
        {
            "suite.yml": json.dumps(suite),
            "references/SKILL.md": "---\nname: ref\ndescription: d\n---\nbody\n",
        },
    )
    into = skill(tmp_path, {})
    assert main(["import", "skill-optimizer", str(src), "--into", str(into)]) == 0
    out = capsys.readouterr().out
    # before: targetPassRate, kind, artifacts, source and name were dropped without a word
    for said in (
        "suite.yml: `targetPassRate` — differs: skill-optimizer's suite pass-rate target",
        "suite.yml: `kind` — differs: capability or regression",
        "suite.yml: `artifacts` — differs: the files skill-optimizer copies out",
        "suite.yml: `source` — ignored: the suite's provenance",
        "suite.yml: `name` — ignored: the suite's name",
        "case one: `artifacts` — differs",
        "`models` — dropped",
        "`env` — dropped",
        "`cleanup` — dropped",
        "case one: `model` — dropped",
    ):
        assert said in out, (said, out)
    assert "not a skill-optimizer field" not in out
    case = (into / "evals/cases/one.yaml").read_text()
    assert "grader:" in case and "setup:" in case and "timeout_minutes: 1" in case


@pytest.mark.parametrize("named, warned", [("greeter", False), ("other-skill", True)])
def test_skill_creator_every_evals_json_field_is_classified(
    tmp_path: Path, named: str, warned: bool
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/files/in.txt": "x\n",
            "evals/evals.json": json.dumps(
                {
                    "skill_name": named,
                    "evals": [
                        {
                            "id": 1,
                            "prompt": "Do it.",
                            "expected_output": "It is done.",
                            "files": ["evals/files/in.txt"],
                            "expectations": ["The output says done"],
                        }
                    ],
                }
            ),
        },
    )
    cases, problems = load_evals_json(folder / "evals/evals.json", folder)
    said = [p.message for p in problems]
    assert not any("not a field" in s for s in said), said
    (case,) = cases
    assert case.task == "Do it." and case.files and case.checks[0].arg == "The output says done"
    assert any("`expected_output` is a description for people" in s for s in said)
    # before: a `skill_name` of another skill was read without a word
    other = [s for s in said if "`skill_name` 'other-skill' is not this skill's name" in s]
    assert bool(other) is warned, said


# A Harbor task's docker-compose.yaml (the compose spec's service fields its tasks use, as
# harbor-cookbook's recipes write them; Harbor runs `docker compose build` then `up --wait`
# with the environment/ folder as the project directory: Harbor's
# src/harbor/environments/docker/docker.py): every field, and what the import says of it,
# at the file's line
COMPOSE: dict[str, str] = {
    "build.context": "docker-compose.yaml:4: services.api.build — built before the run",
    "build.dockerfile": '"dockerfile": "Containerfile.api"',
    "build.args": '"args": {"LEVEL": "2"}',
    "build.args (no value)": "services.api.build.args TOKEN — no value: compose takes it",
    "build.target": "services.api.build.target — not supported",
    "image (beside build)": '"build": {"context": "task/environment/api"',
    "command": '"command": ["python3", "/srv/api.py"]',
    "environment": '"MODE": "test"',
    "healthcheck": '"healthcheck": {"test": ["CMD", "true"], "timeout": 30.0}',
    "expose": "",  # reached by name on the pod's loopback: nothing to say
    "ports": "services.api.ports — not published to the host",
    "depends_on": "",  # the start order
    "volumes (bind)": "services.api.volumes.0 ./shared:/shared — the arm's volume 'shared'",
    "volumes (named)": "services.api.volumes.1 data:/data — the arm's volume 'data'",
    "volumes (anonymous)": "services.api.volumes.2 /cache — an anonymous volume",
    "networks": "services.api.networks — every service shares the arm's own pod network",
    "entrypoint": "services.api.entrypoint — the image's own entrypoint is used",
    "main.volumes (Harbor's logs)": "",  # the checker makes /logs/verifier itself
    "main.volumes (bind)": 'volumes: {"shared": "/shared", "data": {"path": "/data"',
    "main.environment": "services.main.environment — the agent's sandbox gets the environment",
}
COMPOSE_YAML = """services:
  api:
    image: example/api:1
    build:
      context: ./api
      dockerfile: Containerfile.api
      target: prod
      args:
        LEVEL: "2"
        TOKEN:
    command: ["python3", "/srv/api.py"]
    environment:
      MODE: test
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 5
      timeout: 5s
    expose: ["8000"]
    ports: ["8000:8000"]
    volumes:
      - ./shared:/shared
      - data:/data
      - /cache
    networks: [default]
    entrypoint: ["/bin/sh"]
  main:
    depends_on: [api]
    environment: [MODE=main]
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ./shared:/shared
volumes:
  data:
"""


def test_harbor_every_compose_field_is_classified(tmp_path: Path, capsys) -> None:
    src = write(
        tmp_path / "task",
        {
            "task.toml": 'version = "1.0"\n[environment]\nallow_internet = false\n',
            "instruction.md": "Do it.\n",
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
            "environment/Dockerfile": "FROM skillbench-sandbox\n",
            "environment/docker-compose.yaml": COMPOSE_YAML,
            "environment/api/Containerfile.api": "FROM skillbench-sandbox\nARG LEVEL\n",
        },
    )
    into = skill(tmp_path, {})
    assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
    said = capsys.readouterr().out + (into / "evals/cases/task.yaml").read_text()
    assert "not a variable Harbor sets" not in said, said  # its log-folder variables are its own
    assert "services are not built" not in said, said
    for field, word in COMPOSE.items():
        assert word in said, f"{field}: {word!r} not said\n{said}"
    # the sidecar's volume main lacks is the checker's only; the one main has, the agent's too
    assert '"data": {"path": "/data", "agent": false}' in said, said
    assert main(["check", str(into)]) == 0
