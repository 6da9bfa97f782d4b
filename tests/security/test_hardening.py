"""Hardening (issue 21, parts 7 and 8): a case image build cannot reach the host or the
network, every parser of an input has caps and fails in one line, `publish` locks the team
repo, an interrupted run leaves nothing behind, and no check text can break the report page.

Each test is an attack that worked before its fix; real podman where it is a sandbox thing."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.report.html import FILES, render
from skillbench.results.run_folder import load_run
from skillbench.sandbox.base import CaseImageError
from skillbench.sandbox.podman.case_image import case_image
from skillbench.sandbox.podman.connection import URL_ENV
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import OWNER_LABEL
from tests.helpers import MODEL, bash, conv, make_skill, skill, write
from tests.report.test_report import data_of, fixed_run

# --- part 7: case image builds --------------------------------------------------------------


@pytest.fixture
def build() -> Iterator[Callable[..., str]]:
    """Builds a case image from a Containerfile made unique to the test (a build from an
    earlier run is never reused), and removes the images it made afterwards."""
    made: list[str] = []
    nonce = os.urandom(6).hex()

    def run(containerfile: Path, *, network: bool = False) -> str:
        containerfile.write_text(containerfile.read_text() + f"# test {nonce}\n")
        return case_image(
            image=None,
            containerfile=containerfile,
            base=IMAGE,
            log=lambda line: made.extend(re.findall(r"localhost/skillbench-case\S*:\w+", line)),
            network=network,
        )

    yield run
    if made:
        subprocess.run(["podman", "rmi", "-f", *dict.fromkeys(made)], capture_output=True)


@pytest.mark.sandbox
def test_a_cache_mount_id_cannot_write_the_host(tmp_path: Path, build) -> None:
    # E1: buildah puts a cache mount at /var/tmp/buildah-cache-<uid>/<id>, joined without a
    # check, so `id=../../..<path>` mounts any host folder read-write in a build run as root
    marker = tmp_path / "host" / "marker"
    climb = "../../.." + str(marker)
    recipe = (
        "FROM skillbench-sandbox\n"
        f"RUN --mount=type=cache,id={climb},target=/c sh -c 'echo pwned > /c/written'\n"
    )
    folder = write(tmp_path / "ctx", {"Containerfile": recipe})
    with pytest.raises(CaseImageError) as refused:
        build(folder / "Containerfile")
    assert not marker.exists()  # neither the folder nor the file: the build never ran
    assert f"{folder / 'Containerfile'}:2: " in str(refused.value)
    assert "cache mount `id`" in str(refused.value)
    # nor through a link an earlier step leaves in one cache for a cache nested in it (the
    # cache folder is joined on the host, link and all); a plain cache mount still works
    host = tmp_path / "host"
    nested = write(
        tmp_path / "nested",
        {
            "Containerfile": (
                "FROM skillbench-sandbox\n"
                f"RUN --mount=type=cache,id=outer,target=/c ln -s {host} /c/out\n"
                "RUN --mount=type=cache,id=outer/out,target=/x sh -c 'echo pwned > /x/w'\n"
            )
        },
    )
    with pytest.raises(CaseImageError, match=r":3: .* are nested"):
        build(nested / "Containerfile")
    assert not host.exists()
    plain = write(
        tmp_path / "plain",
        {
            "Containerfile": (
                "FROM skillbench-sandbox\n"
                "RUN --mount=type=cache,target=/root/.cache/pip echo x > /root/.cache/pip/x\n"
                "RUN --mount=type=cache,target=/root/.cache/pip test -f /root/.cache/pip/x\n"
            )
        },
    )
    build(plain / "Containerfile")


@pytest.mark.sandbox
def test_a_bind_mount_cannot_read_or_write_the_host_through_a_link(tmp_path: Path, build) -> None:
    host = write(tmp_path / "host", {"secret": "host-secret\n"})
    folder = write(
        tmp_path / "ctx",
        {
            "Containerfile": (
                "FROM skillbench-sandbox\n"
                "RUN --mount=type=bind,source=link,target=/h,rw "
                "sh -c 'cat /h/secret > /opt/leak; echo w > /h/written'\n"
            )
        },
    )
    (folder / "link").symlink_to(host)  # in the context, pointing out of it
    with pytest.raises(CaseImageError) as refused:
        build(folder / "Containerfile")
    assert sorted(p.name for p in host.iterdir()) == ["secret"]
    assert f"{folder / 'Containerfile'}:2: " in str(refused.value)


NETS = '"$(tail -n +3 /proc/net/dev | wc -l)"'  # interfaces: only `lo` without a network


@pytest.mark.sandbox
def test_a_case_build_has_no_network_unless_the_case_declares_it(tmp_path: Path, build) -> None:
    # /proc/net/dev lists the interfaces of the build container's network namespace
    folder = write(
        tmp_path / "ctx",
        {"Containerfile": f"FROM skillbench-sandbox\nRUN test {NETS} = 1\n"},
    )
    build(folder / "Containerfile")
    online = write(
        tmp_path / "online",
        {"Containerfile": f"FROM skillbench-sandbox\nRUN test {NETS} != 1\n"},
    )
    with pytest.raises(CaseImageError, match="without network"):
        build(online / "Containerfile")
    build(online / "Containerfile", network=True)


def test_check_refuses_mounts_that_leave_the_context_with_file_and_line(
    tmp_path: Path, capsys
) -> None:
    folder = make_skill(
        tmp_path,
        "builder",
        {
            "evals/cases/a.yaml": (
                "task: Build it\ncontainerfile: a/Containerfile\nchecks: [{file_exists: x}]\n"
            ),
            "evals/cases/a/Containerfile": (
                "# escape=`\n"
                "FROM skillbench-sandbox\n"
                "RUN --mount=type=cache,id=../../etc,target=/c true\n"
                "RUN --mount=type=secret,id=key cat /run/secrets/key\n"
                "RUN echo a && `\n"
                "    --mount=type=bind,source=/etc,target=/h true\n"
                "RUN --mount=type=ssh true\n"
                "RUN --network=host true\n"
                "ADD https://example.com/x /x\n"
                "ONBUILD RUN --mount=type=bind,from=other,target=/h true\n"
                "RUN --mount=type=cache,target=/root/.cache/pip --mount=type=tmpfs,target=/t true\n"
                "RUN --mount=type=bind,target=/src,source=sub true\n"
            ),
            "evals/cases/a/sub/f": "x",
        },
    )
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    cf = folder / "evals/cases/a/Containerfile"
    found = [line for line in out if line.startswith(f"{cf}:")]
    assert [int(line.split(":")[1]) for line in found] == [3, 4, 7, 8, 9, 10], out
    assert all(": error: " in line for line in found)
    text = "\n".join(found)
    assert "cache mount `id` '../../etc' leaves the build" in text
    assert "a secret mount" in text and "an ssh mount" in text
    assert "--network=host" in text and "https://example.com/x" in text
    assert "`from`" in text
    # (a `source=/etc` on a continued line is inside the command, not a flag of RUN: buildah
    # reads it as an argument of `echo`, so it is not a mount)
    # declaring the network allows what needs it, and only that
    case = folder / "evals/cases/a.yaml"
    case.write_text(case.read_text() + "build_network: true\n")
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    found = [line for line in out if line.startswith(f"{cf}:")]
    assert [int(line.split(":")[1]) for line in found] == [3, 4, 7, 10], out


# --- part 8: bounded parsers ----------------------------------------------------------------


IDENTITY = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "skillbench tests"), ("EMAIL", "tests@skillbench.invalid"))
}


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def skillbench(
    *args: str, cwd: Path | None = None, without: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """`skillbench ARGS` started as a subprocess under a 2 GiB address-space cap (a parser
    that reads /dev/zero dies of it rather than taking the machine), `without` those
    environment variables."""
    env = {k: v for k, v in os.environ.items() if k not in without}
    return subprocess.Popen(
        [sys.executable, "-m", "skillbench", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, **IDENTITY},
        preexec_fn=_cap,
    )


def cli(*args: str, cwd: Path | None = None) -> tuple[int, list[str], list[str]]:
    """`skillbench ARGS` run to the end: exit code, stdout and stderr lines."""
    proc = skillbench(*args, cwd=cwd)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.splitlines(), err.splitlines()


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def team_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    repo = write(root / "team", {"README.md": "team\n", **files})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


DEEP = "[" * 5000 + "]" * 5000  # about 10 KB


def test_deeply_nested_assets_are_one_line_each(tmp_path: Path) -> None:
    folder = make_skill(
        tmp_path,
        "deep",
        {
            "evals/cases/a.yaml": f"task: {DEEP}\n",
            "evals/triggers.yaml": f"should_trigger:\n  - {DEEP}\n",
        },
    )
    (folder / "SKILL.md").write_text(f"---\nname: deep\ndescription: x\nmeta: {DEEP}\n---\nBody\n")
    code, out, err = cli("check", str(folder))
    assert code == 1 and err == [], err[-3:]
    problems = [line for line in out if ": error: " in line or ": warning: " in line]
    assert len(problems) == len(out) - 1, out  # and the count line
    for name, line in (("SKILL.md", 4), ("evals/cases/a.yaml", 1), ("evals/triggers.yaml", 2)):
        shown = f"{folder / name}:{line}: "
        assert any(p.startswith(shown) and "nested more than" in p for p in problems), out


def test_a_receipt_that_is_dev_zero_or_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    """Refused, not passed over: skipping a team receipt that does not parse would let a
    corrupted newer FAIL leave an older PASS the newest."""
    skill = make_skill(tmp_path / "lib", "greeter")
    repo = team_repo(tmp_path, {"evals/greeter/v1/deep.json": DEEP})
    for command in ("gate", "receipts"):
        started = time.monotonic()
        code, out, err = cli(command, str(skill), "--team", str(repo))
        assert time.monotonic() - started < 60
        assert code == 2 and out == [] and len(err) == 1, err[-3:]
        assert err[0].startswith(f"skillbench: error: {repo / 'evals/greeter/v1/deep.json'}: ")
    (repo / "evals/greeter/v1/deep.json").unlink()
    (repo / "evals/greeter/v1/zero.json").symlink_to("/dev/zero")
    started = time.monotonic()
    code, out, err = cli("gate", str(skill), "--team", str(repo))
    assert time.monotonic() - started < 60
    assert code == 2 and len(err) == 1 and "zero.json" in err[0], err[-3:]


def test_corrupt_team_repo_files_are_one_line(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "lib", "greeter")
    repo = team_repo(tmp_path, {"pyproject.toml": "[tool.skillbench.gate\nrequire = 'PASS'\n"})
    code, _, err = cli("gate", str(skill), "--team", str(repo))
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"skillbench: error: {repo / 'pyproject.toml'}: not valid TOML")
    (repo / "pyproject.toml").write_text(f"[tool.skillbench.gate]\nx = {DEEP}\n")
    code, _, err = cli("gate", str(skill), "--team", str(repo))
    assert code == 2 and len(err) == 1 and "nested too deeply" in err[0], err
    (repo / "pyproject.toml").unlink()
    write(repo, {"skills/greeter/versions.json": '{"v1": "sha256:', "skills/greeter/v1/x": "x"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "corrupt")
    code, _, err = cli("publish", str(skill), "--team", str(repo))
    assert code == 1 and len(err) == 1, err
    assert f"{repo / 'skills/greeter/versions.json'}: not valid JSON" in err[0], err


def test_deep_suites_to_import_are_one_line(tmp_path: Path) -> None:
    margin = write(tmp_path / "margin", {"suite.toml": f"name = {DEEP}\n"})
    optimizer = write(tmp_path / "optimizer", {"suite.yml": f"cases: {DEEP}\n"})
    for kind, src, why in (
        ("margin", margin, "nested too deeply"),
        ("skill-optimizer", optimizer, "nested more than 64 levels"),
    ):
        code, out, err = cli("import", kind, str(src), "--check")
        assert (code, out, len(err)) == (2, [], 1), err[-3:]
        assert why in err[0], err


def test_a_deep_or_huge_config_is_one_line(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "lib", "greeter")
    config = write(tmp_path, {"skillbench.toml": f"k = {DEEP}\n"}) / "skillbench.toml"
    code, _, err = cli("config", cwd=skill)
    assert code == 2 and len(err) == 1 and "nested too deeply" in err[0], err
    with config.open("w") as fh:  # 300 MB of one comment: the cap reads no more than it needs
        fh.truncate(300 << 20)
    code, _out, err = cli("config", cwd=skill)
    assert code == 2 and len(err) == 1 and "larger than" in err[0], err


# --- part 8: publish locks the team repo ----------------------------------------------------


def test_publish_leaves_the_team_repo_clean_when_git_fails(tmp_path: Path) -> None:
    skill = make_skill(tmp_path / "lib", "greeter", {"evals/cases/a.yaml": "task: Greet\n"})
    repo = team_repo(tmp_path, {})
    hook = write(repo, {".git/hooks/pre-commit": "echo 'blocked by policy' >&2\nexit 1\n"})
    (hook / ".git/hooks/pre-commit").chmod(0o755)
    code, out, err = cli("publish", str(skill), "--team", str(repo))
    assert (code, out, len(err)) == (1, [], 1), err
    assert "git commit failed" in err[0] and "blocked by policy" in err[0]
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    assert not (repo / "skills").exists()
    (repo / ".git/hooks/pre-commit").unlink()
    code, out, err = cli("publish", str(skill), "--team", str(repo))
    assert (code, err) == (0, []) and out[0].startswith("published greeter v1"), (out, err)


def test_concurrent_publishes_take_turns(tmp_path: Path) -> None:
    skills = [make_skill(tmp_path / "lib", f"s{i}") for i in range(4)]
    repo = team_repo(tmp_path, {})
    procs = [skillbench("publish", str(s), "--team", str(repo)) for s in (*skills, skills[0])]
    results = [(p.wait(120), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0] * 5, results
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    log = git(repo, "log", "--format=%s").splitlines()
    assert sorted(line.split(" (")[0] for line in log[:4]) == [f"publish s{i} v1" for i in range(4)]
    assert len(log) == 5  # the second publish of s0 found it published: nothing to do


# --- part 8: interrupts leave nothing behind ------------------------------------------------


def _leftovers(pid: int) -> tuple[list[str], list[str]]:
    """Containers and volumes labelled as this process's, as the project's podman service
    lists them."""
    from podman import PodmanClient

    mine = {"label": f"{OWNER_LABEL}={os.uname().nodename}:{pid}"}
    with PodmanClient(base_url=os.environ[URL_ENV]) as client:
        return (
            [c.name for c in client.containers.list(all=True, filters=mine)],
            [v.name for v in client.volumes.list(filters=mine)],
        )


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
@pytest.mark.parametrize(
    ("signals", "code", "own_service"),
    [
        ((signal.SIGINT,), 130, True),
        ((signal.SIGTERM,), 143, True),
        ((signal.SIGINT, signal.SIGINT), 130, True),
        ((signal.SIGINT, signal.SIGINT), 130, False),
    ],
    ids=["ctrl-c", "sigterm", "ctrl-c-twice", "ctrl-c-twice-shared-service"],
)
def test_an_interrupted_run_leaves_no_container_or_volume(
    fake, tmp_path: Path, signals: tuple[int, ...], code: int, own_service: bool
) -> None:
    folder = skill(
        tmp_path,
        {
            f"evals/cases/slow{i}.yaml": f"task: Slow {i}\nchecks: [{{file_exists: g}}]\n"
            for i in range(2)
        },
    )
    fake({"conversations": [conv("(?s)", "Slow", bash("sleep 60"), {"text": "done"})]})
    out = tmp_path / "run"
    args = ("eval", str(folder), "--model", MODEL, "--out", str(out), "--quiet", "--no-gen")
    # as a user runs it, skillbench starts (and stops) its own service
    proc = skillbench(*args, "--execution-only", without=(URL_ENV,) if own_service else ())
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(list((out / "transcripts").glob("*"))) < 4:
        time.sleep(0.1)
    time.sleep(1.0)  # the four sleeps run in their sandboxes, each arm with its volume
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.05)  # the second one lands while the first one's cleanup runs
    sent = time.monotonic()
    _, err = proc.communicate(timeout=90)
    took = time.monotonic() - sent
    assert proc.returncode == code, err
    assert len(err.splitlines()) == 1, err
    assert took < 30  # a second signal does not wait for the sessions' own cleanup
    assert ("terminated" if code == 143 else "interrupted") in err
    assert _leftovers(proc.pid) == ([], [])


# --- part 8: the report page ----------------------------------------------------------------


def test_no_check_text_can_break_the_report_page(tmp_path: Path) -> None:
    run = fixed_run(tmp_path / "run", {"alpha": "win", "bravo": "loss"})
    # every placeholder of the page's template, in a check's name and detail and transcript
    marks = "@@JS@@ @@DATA@@ @@BODY@@ @@CSS@@ @@TITLE@@"
    for path in (run / "journal.jsonl", run / "summary.json", *run.glob("transcripts/*")):
        path.write_text(path.read_text().replace("hello.txt", f"hello.txt {marks}"))
    page = render(load_run(run))
    js = (FILES / "report.js").read_text()
    assert page.count(js) == 1 and f"<script>{js}</script>" in page  # the script is whole
    assert page.count((FILES / "report.css").read_text()) == 1
    data = data_of(page)
    details = [c["detail"] for r in data["rows"] for a in r["arms"].values() for c in a["checks"]]
    assert any(marks in d for d in details), details  # and the text is kept, as data
