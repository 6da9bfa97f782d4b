"""A case's services (issue 23 part 2, docs/formats.md), on real podman: each arm's services run in
a pod of its own that its sandbox and its checker join (loopback only), they are healthy
before the agent starts, gone with the arm, and never reachable from another arm; a Harbor
task's docker-compose.yaml imports onto them."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from podman import PodmanClient

import skillbench
from skillbench.cli import main
from skillbench.evals.model import Case
from skillbench.evals.services import Service
from skillbench.sandbox.base import SandboxError, SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.podman.service import PodmanService
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.api.test_api import Heard
from tests.conftest import CHANNELS
from tests.helpers import BASE, CAND, MODEL, bash, conv, skill, write, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio, pytest.mark.usefixtures("podman_service")]


def http_service(name: str, port: int, answer: str) -> dict[str, object]:
    """A tiny HTTP server on the sandbox image serving /answer, and its health check."""
    return {
        "command": [
            "sh",
            "-c",
            f"mkdir -p /tmp/srv && echo {answer} > /tmp/srv/answer && cd /tmp/srv && "
            f"exec python3 -m http.server {port}",
        ],
        "healthcheck": f"python3 -c \"import urllib.request as u; u.urlopen('http://localhost:{port}/answer')\"",
    }


def fetch(url: str) -> str:
    """A python one-liner that prints what `url` answers, or `unreachable`."""
    return (
        f"{{ python3 -c \"import urllib.request as u; print(u.urlopen('{url}', timeout=5)"
        f'.read().decode().strip())" 2>/dev/null || echo unreachable; }}'
    )


CASE = f"""\
task: Ask the service at http://svc:8000/answer for the answer and write it to answer.txt
services: {json.dumps({"svc": http_service("svc", 8000, "42")})}
checks:
  - file_exists: answer.txt
  # the checker reaches the same service the agent did
  - command_succeeds: {json.dumps(f'test "$({fetch("http://svc:8000/answer")})" = "$(cat answer.txt)"')}
  - command_succeeds: test "$(cat net.txt)" = lo
"""


def ours(client: PodmanClient) -> list[str]:
    """The pods and containers of this process's pods still present."""
    prefix = f"skillbench-pod-{os.getpid()}-"
    pods = [p.name for p in client.pods.list() if p.name.startswith(prefix)]
    ctrs = [c.name for c in client.containers.list(all=True) if c.name.startswith(prefix)]
    return pods + ctrs


def test_the_arm_that_queries_its_service_passes_and_the_pod_is_gone_after(
    fake, tmp_path: Path, podman_service: PodmanService
) -> None:
    folder = skill(tmp_path, {"evals/cases/ask.yaml": CASE})
    ask = f"{fetch('http://svc:8000/answer')} > answer.txt; ls /sys/class/net > net.txt"
    fake(
        {
            "conversations": [
                conv(CAND, "Ask the service", bash(ask), {"text": "done"}),
                conv(BASE, "Ask the service", write_file("answer.txt", "41\n"), {"text": "done"}),
            ]
        }
    )
    progress = Heard()
    options = skillbench.Options(model=MODEL, out=str(tmp_path / "run"), seed=7, generate=False)
    summary = skillbench.evaluate(folder, options=options, progress=progress).summary
    assert progress.outcomes == {"ask.baseline.1": "fail", "ask.candidate.1": "pass"}
    assert [(r.case, r.outcome, r.decided_by) for r in summary.rows] == [("ask", "win", "checks")]
    with PodmanClient(base_url=podman_service.url) as client:
        assert ours(client) == []


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_two_arms_at_once_reach_only_their_own_services(provider: PodmanProvider) -> None:
    case = Case(name="c", path="c.yaml", task="t")
    spec = SandboxSpec(image=skillbench_image())

    def arm_spec(port: int, answer: str) -> SandboxSpec:
        fields = http_service("svc", port, answer)
        service = Service(
            name="svc",
            command=tuple(fields["command"]),  # type: ignore[arg-type]
            healthcheck=("/bin/sh", "-c", str(fields["healthcheck"])),
        )
        return SandboxSpec(image=spec.image, services=(service,))

    a, b = await asyncio.gather(
        stage_arm(provider, arm_spec(8000, "A"), case, {}),
        stage_arm(provider, arm_spec(8001, "B"), case, {}),
    )
    try:
        for arm, own, other in ((a, 8000, 8001), (b, 8001, 8000)):
            net = await arm.sandbox.exec("ls /sys/class/net")
            assert net.stdout.split() == ["lo"]  # no interface beyond the pod's loopback
            mine = await arm.sandbox.exec(fetch(f"http://svc:{own}/answer"))
            theirs = await arm.sandbox.exec(fetch(f"http://svc:{other}/answer"))
            assert mine.stdout.strip() == ("A" if own == 8000 else "B")
            assert theirs.stdout.strip() == "unreachable"
        checker = await check_phase(provider, arm_spec(8000, "A"), a, Path("/nonexistent"))
        seen = await checker.exec(fetch("http://svc:8000/answer"))
        assert seen.stdout.strip() == "A"  # the checker is in the arm's pod too
    finally:
        await asyncio.gather(a.close(), b.close())
    assert ours(provider.client()) == []


def test_a_service_that_never_gets_healthy_leaves_the_arm_unscored_with_the_reason(
    fake, tmp_path: Path, podman_service: PodmanService
) -> None:
    case = (
        "task: Create hello.txt\nservices:\n  db:\n    command: [sleep, infinity]\n"
        "    healthcheck: {test: 'echo not yet; exit 1', timeout: 2}\n"
        "checks:\n  - file_exists: hello.txt\n"
    )
    folder = skill(tmp_path, {"evals/cases/hello.yaml": case})
    fake({"conversations": [conv("(?s)", "Create hello", write_file("hello.txt", "hi"))]})
    progress = Heard()
    errors: list[str] = []
    finished = progress.finished
    progress.finished = lambda record, spend: (errors.append(record.error), finished(record, spend))  # type: ignore[method-assign]
    options = skillbench.Options(model=MODEL, out=str(tmp_path / "run"), seed=7, generate=False)
    summary = skillbench.evaluate(folder, options=options, progress=progress).summary
    assert set(progress.outcomes.values()) == {"error"}
    assert all(
        "service 'db' was not healthy within 2 s (last probe failed: not yet)" in e for e in errors
    ), errors
    assert summary.scored_rows == 0
    with PodmanClient(base_url=podman_service.url) as client:
        assert ours(client) == []


async def test_a_service_that_exits_fails_fast_with_its_output(provider: PodmanProvider) -> None:
    spec = SandboxSpec(
        image=skillbench_image(),
        services=(
            Service(
                name="db",
                command=("sh", "-c", "echo bad config >&2; exit 3"),
                healthcheck=("true",),
            ),
        ),
    )
    with pytest.raises(
        SandboxError, match=r"service 'db' stopped \((exited|stopped)\).*bad config"
    ):
        await stage_arm(provider, spec, Case(name="c", path="c.yaml", task="t"), {})
    assert ours(provider.client()) == []


HARBOR = {
    "ask-api/task.toml": 'version = "1.0"\n[agent]\ntimeout_sec = 300\n[environment]\nallow_internet = false\n',
    "ask-api/instruction.md": "Ask the API at http://api:8000/answer and write it to code.txt.\n",
    "ask-api/environment/Dockerfile": "FROM skillbench-sandbox\n",
    "ask-api/environment/docker-compose.yaml": """\
        services:
          main:
            build:
              context: ${CONTEXT_DIR}
            image: ${MAIN_IMAGE_NAME}
            command: ["sh", "-c", "sleep infinity"]
            depends_on:
              api:
                condition: service_healthy
          api:
            image: ${MAIN_IMAGE_NAME}
            command: ["sh", "-c", "mkdir -p /tmp/srv && echo 7 > /tmp/srv/answer && cd /tmp/srv && exec python3 -m http.server 8000"]
            environment:
              - MODE=test
            ports: ["8000:8000"]
            volumes: ["./data:/data"]
            healthcheck:
              test: ["CMD", "python3", "-c", "import urllib.request as u; u.urlopen('http://localhost:8000/answer')"]
              interval: 1s
              retries: 20
          builder:
            build: ./builder
        """,
    "ask-api/tests/test.sh": (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "want=$(python3 -c \"import urllib.request as u; print(u.urlopen('http://api:8000/answer').read().decode().strip())\")\n"
        'if [ "$(cat code.txt)" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    ),
    "ask-api/solution/solve.sh": (
        '#!/bin/bash\npython3 -c "import urllib.request as u; '
        "print(u.urlopen('http://api:8000/answer').read().decode().strip())\" > code.txt\n"
    ),
}


def test_a_harbor_task_with_compose_imports_and_its_service_comes_up(
    tmp_path: Path, capsys
) -> None:
    into = skill(tmp_path, {})
    src = write(tmp_path / "harbor", HARBOR)
    assert main(["import", "harbor", str(src / "ask-api"), "--into", str(into)]) == 0
    said = capsys.readouterr().out
    for unmapped in (
        "services.main.command — the sandbox runs skillbench's executor",
        "services.api.ports — not published to the host",
        "services.api.volumes.0 ./data:/data — the arm's volume 'data'",
        # a build whose context is not in the task: said, and the service left out
        "services.builder.build — dropped: builder/Dockerfile is not a file of the task's",
    ):
        assert unmapped in said, said
    case = (into / "evals/cases/ask-api.yaml").read_text()
    assert '"api": {"command": ["sh", "-c"' in case and '"MODE": "test"' in case
    assert main(["eval", str(into), "--oracle", "--model", "scripted/demo"]) == 0
    assert "oracle PASS: ask-api" in capsys.readouterr().out


def skillbench_image() -> str:
    from skillbench.sandbox.podman.image import IMAGE

    return IMAGE
