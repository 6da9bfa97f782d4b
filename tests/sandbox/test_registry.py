"""Remote case images and the registry-built sandbox image (issue 23 part 4, issue 28 part 3),
against a real registry on loopback: Debian's `docker-registry`, started here on a free port
with its own storage and config, holding images pushed to it first. It serves plain HTTP,
which skillbench allows for loopback registries only (podman's `tlsVerify=false`)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.image import IMAGE, build_image
from skillbench.sandbox.podman.pull import ImageUnavailable, pull
from tests.helpers import conv, run_eval, skill

pytestmark = pytest.mark.sandbox

REGISTRY = shutil.which("docker-registry") or "/usr/bin/docker-registry"


class Registry:
    """A docker-registry process on 127.0.0.1:port storing under `root`."""

    def __init__(self, root: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.root = root
        self.config = root / "config.yml"
        (root / "store").mkdir(parents=True)
        self.config.write_text(
            f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {root / 'store'}\nhttp:\n  addr: 127.0.0.1:{self.port}\n"
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        log = (self.root / "registry.log").open("ab")
        self.process = subprocess.Popen(
            [REGISTRY, "serve", str(self.config)], stdout=log, stderr=log
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"docker-registry did not answer; see {self.root}/registry.log")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def push(self, local: str, name: str) -> str:
        """Push `local` as `name` (e.g. test/base:v1); return the digest it is stored under."""
        digest = self.root / "digest"
        subprocess.run(
            [
                *("podman", "push", "--tls-verify=false", "-q", "--digestfile", str(digest)),
                *(local, f"{self.host}/{name}"),
            ],
            check=True,
            capture_output=True,
        )
        return digest.read_text().strip()


@pytest.fixture
def registry(tmp_path: Path, podman_service) -> Iterator[Registry]:
    if not os.access(REGISTRY, os.X_OK):
        pytest.fail("docker-registry is missing: run scripts/setup-host.sh")
    reg = Registry(tmp_path / "registry")
    reg.start()
    yield reg
    reg.stop()
    # the names the test's pulls added (the images themselves may be the sandbox image's)
    listed = subprocess.run(
        ["podman", "images", "--digests", "--format", "{{.Repository}}@{{.Digest}}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    mine = [ref for ref in listed if ref.startswith(reg.host + "/")]
    if mine:
        subprocess.run(["podman", "rmi", *mine], capture_output=True)


def _gone_image(registry: Registry, name: str) -> str:
    """An image held only by the registry (built from the sandbox image, pushed, removed
    locally): its pinned reference."""
    nonce = os.urandom(6).hex()
    local = f"localhost/skillbench-test-gone:{nonce}"
    subprocess.run(
        ["podman", "build", "-q", "--pull=never", "-t", local, "-f", "-", "."],
        input=f"FROM {IMAGE}\nRUN echo {nonce} > /opt/nonce\n".encode(),
        check=True,
        capture_output=True,
        cwd=registry.root,
    )
    digest = registry.push(local, f"{name}:v1")
    subprocess.run(["podman", "rmi", "-f", local], check=True, capture_output=True)
    return f"{registry.host}/{name}@{digest}"


def test_a_pinned_case_image_is_pulled_and_runs_and_a_wrong_pin_is_refused(
    fake, registry: Registry, tmp_path: Path, capsys
) -> None:
    ref = _gone_image(registry, "test/base")
    folder = skill(
        tmp_path,
        {
            "evals/cases/pinned.yaml": (
                f"task: Read the nonce\nimage: {ref}\n"
                "checks:\n  - command_succeeds: test -s /opt/nonce\n"
                "  - transcript_mentions: nonce read\n"
            ),
        },
    )
    fake(
        {
            "conversations": [
                conv("(?s)", "Read the nonce", {"text": "the nonce read: it is there"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one unit: INCONCLUSIVE
    checks = summary["rows"][0]["arms"]["baseline"]["checks"]
    assert [c["passed"] for c in checks] == [True, True]  # the checker ran in the pulled image
    # cached: with the registry gone, the pinned image is still had without a pull
    registry.stop()
    seen: list[str] = []
    assert pull(ref, log=seen.append) == ref
    assert seen == []
    registry.start()
    # a pin the registry does not serve: one line naming the file and the fix
    wrong = ref.rsplit(":", 1)[0] + ":" + "0" * 64
    (folder / "evals/cases/pinned.yaml").write_text(
        f"task: Read the nonce\nimage: {wrong}\nchecks:\n  - file_exists: x\n"
    )
    code = main(
        ["eval", str(folder), "--no-gen", "--execution-only", "--out", str(tmp_path / "r2")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    refused = [line for line in err if "the case's image" in line]
    assert len(refused) == 1, err
    assert f"{folder}/evals/cases/pinned.yaml: the case's image: image {wrong}" in refused[0]
    assert "serves no image with that digest pin" in refused[0]
    assert "Traceback" not in "\n".join(err)


def test_pull_progress_is_shown_on_stderr(registry: Registry) -> None:
    ref = _gone_image(registry, "test/progress")
    seen: list[str] = []
    pull(ref, log=seen.append)
    assert seen[0] == f"pulling {ref} (plain HTTP: a loopback registry)"
    assert any("Copying blob" in line for line in seen), seen
    assert seen[-1].startswith(f"pulled {ref} (sha256:")


def test_offline_a_missing_image_skips_only_its_case(
    fake, registry: Registry, tmp_path: Path, capsys
) -> None:
    ref = _gone_image(registry, "test/gone")
    registry.stop()
    with pytest.raises(ImageUnavailable, match="its registry cannot be reached"):
        pull(ref, log=lambda _: None)
    folder = skill(
        tmp_path,
        {
            "evals/cases/remote.yaml": f"task: Use the remote\nimage: {ref}\nrequires: [git]\n"
            "checks:\n  - file_exists: x\n",
            "evals/cases/plain.yaml": "task: Write x\nchecks:\n  - file_exists: x\n",
        },
    )
    # check warns about the missing image at its line, with the fix
    assert main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{folder}/evals/cases/remote.yaml:2: warning: image {ref} is missing locally; the run "
        f"pulls it, which needs its registry: `podman pull {ref}`"
    ) in out
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Write x",
                    {"tool_calls": [{"write_file": {"path": "x", "content": "1"}}]},
                    {"text": "done"},
                ),
            ]
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert [s["case"] for s in summary["skipped"]] == ["remote"]
    assert "its registry cannot be reached" in summary["skipped"][0]["reason"]
    assert "connection refused" in summary["skipped"][0]["reason"]
    assert [r["case"] for r in summary["rows"]] == ["plain"]  # the other case still scored
    assert any(
        line.startswith(
            f"skipped (environment): remote — {folder}/evals/cases/remote.yaml: the case's image: "
        )
        for line in lines
    ), lines


def test_check_names_what_a_present_image_lacks(registry: Registry, tmp_path: Path, capsys) -> None:
    ref = _gone_image(registry, "test/lacks")
    pull(ref, log=lambda _: None)
    folder = skill(
        tmp_path,
        {
            "evals/cases/needs.yaml": f"task: Use node\n\nimage: {ref}\n"
            "requires: [git, node, 'python3:json', 'python3:nosuchmod']\n"
            "checks:\n  - file_exists: x\n",
        },
    )
    assert main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{folder}/evals/cases/needs.yaml:3: warning: image {ref} lacks node, python3:nosuchmod "
        "(`requires`)"
    ) in out


def test_a_malformed_reference_is_an_error_at_check(tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/a.yaml": "task: t\nimage: 127.0.0.1:5/x@sha256:ABC\nchecks:\n  - file_exists: x\n",
            "evals/cases/b.yaml": "task: t\nimage: Bad Name\nchecks:\n  - file_exists: x\n",
        },
    )
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert (
        f"{folder}/evals/cases/a.yaml:2: error: image '127.0.0.1:5/x@sha256:ABC': a digest pin must be"
        in out
    )
    assert (
        f"{folder}/evals/cases/b.yaml:2: error: image 'Bad Name' is not an image reference" in out
    )


# --- issue 28 part 3: the sandbox image built FROM a registry's Debian image ----------------


@pytest.mark.anyio
async def test_the_sandbox_image_builds_from_a_pinned_registry_base_and_runs(
    registry: Registry, provider, tmp_path: Path
) -> None:
    # There is no internet here: a Debian image without the sandbox's users or /work, pushed
    # to the loopback registry, stands in for a public Debian base. The build's apt step
    # reaches Debian's mirror (reachable here); the base itself comes only from the registry.
    nonce = os.urandom(6).hex()
    local = f"localhost/skillbench-test-debian:{nonce}"
    subprocess.run(
        ["podman", "build", "-q", "--pull=never", "-t", local, "-f", "-", "."],
        input=(
            f"FROM {IMAGE}\nUSER root\nRUN userdel -r agent && userdel -r checker && "
            f"rm -rf /work && echo {nonce} > /etc/stand-in\n"
        ).encode(),
        check=True,
        capture_output=True,
        cwd=registry.root,
    )
    base = f"{registry.host}/test/debian@{registry.push(local, 'test/debian:bookworm')}"
    subprocess.run(["podman", "rmi", "-f", local], check=True, capture_output=True)
    built = f"localhost/skillbench-test-sandbox:{nonce}"
    seen: list[str] = []
    try:
        assert build_image(name=built, from_registry=base, log=seen.append) == built
        assert seen[0] == f"pulling {base} (plain HTTP: a loopback registry)"
        assert f"FROM {base}" in seen[-2] and seen[-1] == f"built {built}"
        box = await provider.create(SandboxSpec(image=built))
        try:
            done = await box.exec(
                "cat /etc/stand-in && id -u agent && id -u checker && stat -c %u /work && "
                "python3 -c 'print(1)' && git --version >/dev/null && pwd"
            )
        finally:
            await box.close()
        assert done.ok, done.stderr
        assert done.stdout.split() == [nonce, "1000", "1001", "1000", "1", "/work"]
    finally:
        subprocess.run(["podman", "rmi", "-f", built], capture_output=True)


def test_an_unpinned_registry_base_is_refused_in_one_line(capsys) -> None:
    code = main(["image", "build", "--force", "--from-registry", "docker.io/library/debian:12"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err == [
        "skillbench: image build failed: --from-registry docker.io/library/debian:12: name the "
        "registry and pin the digest, e.g. docker.io/library/debian:bookworm-slim@sha256:"
        "<digest> (`podman pull` it once and read `podman image inspect --format "
        "'{{.Digest}}' IMAGE`)"
    ]
