"""The check phase reads only what the agent legitimately wrote (docs/trust.md, issue 21 parts
4-6). Each attack is a real eval through real podman with a scripted agent: the candidate
cheats, the baseline does nothing, and every cheat must fail its checks. Links the agent made
(to the Margin and Harbor tests staged after it, to /case, through ../ and /proc, to the
checker's own files), hard links, a locked folder, a pre-made reward file and git's hooks,
fsmonitor and includes; reuse after the check files change; `view` and `import` meeting
links to host files."""

from __future__ import annotations

import errno
import http.client
import json
import os
import threading
from pathlib import Path

import pytest

from skillbench.checks.run import run_checks
from skillbench.cli import main
from skillbench.evals.model import Check
from skillbench.report.serve import server_for
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.channel import CHANNEL_ENV
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.conftest import CHANNELS
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]
ANSWER = "the answer is 42\n"
SAME = "command_succeeds: cmp -s out.txt /case/expected.txt"  # the answer key, read directly
HOOK = "#!/bin/sh\\ncp /case/expected.txt /work/out.txt\\nexit 1\\n"  # runs in the checker?


def margin_source(root: Path) -> Path:
    """A Margin suite whose test.sh compares out.txt with the tests/expected.txt that Margin
    stages next to the workspace after the agent."""
    files: dict[str, str | bytes] = {
        "suite.toml": 'kind = "test_suite"\nname = "links"\ncases = ["rel", "dummy"]\n'
    }
    for name in ("rel", "dummy"):
        files |= {
            f"cases/{name}/case.toml": f'kind = "test_case"\nname = "{name}"\n',
            f"cases/{name}/prompt.md": f"Task {name}: write out.txt\n",
            f"cases/{name}/tests/test.sh": "cmp -s out.txt tests/expected.txt || exit 1\n",
            f"cases/{name}/tests/expected.txt": ANSWER,
        }
    return write(root / "margin", files)


def harbor_source(root: Path) -> Path:
    """A Harbor task whose test.sh compares out.txt with /tests/expected.txt."""
    return write(
        root / "harbor/harbor",
        {
            "task.toml": "[agent]\ntimeout_sec = 60\n",
            "instruction.md": "Task harbor: write out.txt\n",
            "tests/test.sh": (
                "mkdir -p /logs/verifier\n"
                "if cmp -s /tests/expected.txt out.txt; then echo 1 > /logs/verifier/reward.txt;"
                " else echo 0 > /logs/verifier/reward.txt; fi\n"
            ),
            "tests/expected.txt": ANSWER,
        },
    )


NATIVE = {
    "evals/expected.txt": ANSWER,
    "evals/cases/abs.yaml": f"task: Task abs\nchecks:\n  - {SAME}\n",
    "evals/cases/up.yaml": f"task: Task up\nchecks:\n  - {SAME}\n",
    "evals/cases/proc.yaml": f"task: Task proc\nchecks:\n  - {SAME}\n",
    "evals/cases/tool.yaml": "task: Task tool\nchecks:\n  - command_succeeds: grep -q __version__ out.txt\n",
    "evals/cases/hard.yaml": "task: Task hard\nchecks:\n  - verifier: hard/verify.sh\n",
    # a verifier that copies the answer into tests/ (over whatever is there) and compares
    "evals/cases/hard/verify.sh": (
        'mkdir -p tests && cp "$CASE/expected.txt" tests/expected.txt && '
        "cmp -s out.txt tests/expected.txt || exit 1\n"  # (cmp exits 2 on a missing file)
    ),
    "evals/cases/hard/expected.txt": ANSWER,
    "evals/cases/locked.yaml": "task: Task locked\nchecks:\n  - file_absent: d/debug.log\n",
    "evals/cases/reward.yaml": (
        "task: Task reward\nchecks:\n  - reward: {file: reward.txt, run: reward/score.sh}\n"
    ),
    "evals/cases/reward/score.sh": (
        'if cmp -s out.txt "$CASE/expected.txt"; then echo 1 > reward.txt; '
        "else echo 0 > reward.txt; fi\n"
    ),
    "evals/cases/reward/expected.txt": ANSWER,
    "evals/cases/fsmonitor.yaml": (
        f"task: Task fsmonitor\nchecks:\n  - command_succeeds: git status -s >/dev/null; {SAME[18:]}\n"
    ),
    "evals/cases/hook.yaml": (
        f"task: Task hook\nchecks:\n  - command_succeeds: git checkout -q -b v; {SAME[18:]}\n"
    ),
    "evals/cases/include.yaml": (
        f"task: Task include\nchecks:\n  - command_succeeds: git status -s >/dev/null; {SAME[18:]}\n"
    ),
    "evals/cases/filter.yaml": (
        f"task: Task filter\nchecks:\n  - command_succeeds: git status -s >/dev/null; {SAME[18:]}\n"
    ),
    "evals/cases/cfglink.yaml": (
        f"task: Task cfglink\nchecks:\n  - command_succeeds: git status -s >/dev/null; {SAME[18:]}\n"
    ),
    "evals/cases/commondir.yaml": (
        f"task: Task commondir\nchecks:\n  - command_succeeds: git status -s >/dev/null; {SAME[18:]}\n"
    ),
    # a workspace the handover could choke on: the session still fails, it is not an error
    "evals/cases/deep.yaml": "task: Task deep\nchecks:\n  - file_exists: never\n",
    "evals/cases/fifo.yaml": "task: Task fifo\nchecks:\n  - file_exists: never\n",
    # links that lead somewhere harmless keep working
    "evals/cases/legit.yaml": (
        "task: Task legit\nchecks:\n  - command_succeeds: ./py -c 'print(1)'\n"
        "  - command_succeeds: grep -qx hello alias.txt\n  - file_exists: alias.txt\n"
        "  - command_succeeds: test -x venv/bin/python && git status -s\n"
    ),
}

GIT_INIT = "git init -q . && git config user.email a@b && git config user.name a && "
ATTACKS = {
    # dangling in the agent's phase, live once Margin stages tests/ beside it
    "rel": "ln -s tests/expected.txt out.txt",
    # not dangling: a tests/ of its own, which staging replaces with the real one
    "dummy": "mkdir tests && echo junk > tests/expected.txt && ln -s tests/expected.txt out.txt",
    "harbor": "ln -s /tmp/tests/expected.txt out.txt",  # where the Harbor import stages them
    "abs": "ln -s /case/expected.txt out.txt",
    "up": "ln -s ../case/expected.txt out.txt",
    "proc": "ln -s /proc/self/root/case/expected.txt out.txt",
    "tool": "ln -s /opt/skillbench/src/skillbench/__init__.py out.txt",
    "hard": (
        "echo junk > out.txt && mkdir tests && ln out.txt tests/expected.txt && "
        "ln /etc/passwd passwd; ls -i out.txt tests/expected.txt"
    ),
    "locked": "mkdir d && echo oops > d/debug.log && chmod 000 d && ls d; echo locked",
    "reward": "echo 1 > reward.txt && chmod 444 reward.txt",
    "fsmonitor": (
        f"{GIT_INIT}printf '{HOOK}' > .git/fsm && chmod +x .git/fsm && "
        "git config core.fsmonitor /work/.git/fsm && echo junk > out.txt"
    ),
    "hook": (
        f"{GIT_INIT}git commit -q --allow-empty -m init && printf '{HOOK}' > "
        ".git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && echo junk > out.txt"
    ),
    "include": (
        f"{GIT_INIT}printf '[core]\\n\\tfsmonitor = /work/fsm\\n' > evil.cfg && "
        f"printf '{HOOK}' > fsm && chmod +x fsm && git config include.path ../evil.cfg && "
        "echo junk > out.txt"
    ),
    "filter": (  # a clean filter runs on `git status` for every file whose stat changed
        f"{GIT_INIT}echo a > a.txt && git add a.txt && git commit -qm a && "
        "git config filter.x.clean \"sh -c 'cp /case/expected.txt /work/out.txt; cat'\" && "
        "echo '* filter=x' > .gitattributes && echo b > a.txt && echo junk > out.txt"
    ),
    # the same filter, from a config that is a link to a file of the agent's
    "cfglink": (
        f"{GIT_INIT}echo a > a.txt && git add a.txt && git commit -qm a && "
        "git config filter.x.clean \"sh -c 'cp /case/expected.txt /work/out.txt; cat'\" && "
        "echo '* filter=x' > .gitattributes && echo b > a.txt && echo junk > out.txt && "
        "mv .git/config notes.txt && ln -s ../notes.txt .git/config"
    ),
    # ... and from the folder .git/commondir names, which has no HEAD
    "commondir": (
        f"{GIT_INIT}echo a > a.txt && git add a.txt && git commit -qm a && "
        "git config filter.x.clean \"sh -c 'cp /case/expected.txt /work/out.txt; cat'\" && "
        "echo '* filter=x' > .gitattributes && echo b > a.txt && echo junk > out.txt && "
        "mkdir shared && mv .git/config .git/objects .git/refs shared/ && "
        "echo ../shared > .git/commondir"
    ),
    "deep": (  # paths past PATH_MAX, a link to the answer key at the bottom
        "for i in $(seq 500); do mkdir xxxxxxxxx && cd xxxxxxxxx || break; done; "
        "ln -s /case/expected.txt out.txt; echo depth=$i"
    ),
    "fifo": "git init -q . && rm .git/config && mkfifo .git/config && echo made",
    "legit": (
        "ln -s /usr/bin/python3 py && mkdir -p sub venv/bin && echo hello > sub/real.txt && "
        "ln -s sub/real.txt alias.txt && ln -s /usr/bin/python3 venv/bin/python3 && "
        "ln -s python3 venv/bin/python && git init -q ."
    ),
}


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_agent_link_reaches_the_answer_key(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, channel: str
) -> None:
    # on the api channel /case, /tests and /solution are copied in, not mounted: the
    # handover must cut links into them all the same
    monkeypatch.setenv(CHANNEL_ENV, channel)
    folder = skill(tmp_path, NATIVE)
    for fmt, src in (("margin", margin_source(tmp_path)), ("harbor", harbor_source(tmp_path))):
        assert main(["import", fmt, str(src), "--into", str(folder)]) == 0
    capsys.readouterr()
    fake(
        {
            "conversations": [
                *(conv(CAND, f"Task {n}", bash(c), {"text": "done"}) for n, c in ATTACKS.items()),
                conv(BASE, "Task", {"text": "no"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # the attacks all tie with the baseline: too few decided units
    rows = {r["case"]: r["arms"]["candidate"] for r in summary["rows"]}
    assert sorted(rows) == sorted(ATTACKS)
    cheated = sorted(n for n, arm in rows.items() if arm["passed"] and n != "legit")
    assert cheated == [], {n: rows[n]["checks"] for n in cheated}
    # the run says what the handover cut
    assert "handover: /work/out.txt: a link to /case/expected.txt, cut" in rows["abs"]["notes"]
    legit = rows["legit"]["checks"]
    assert all(c["passed"] for c in legit), legit
    # a folder the agent locked reads as what it holds, never as "absent"
    assert rows["locked"]["checks"][0]["detail"] == "exists"
    # the reward is the check phase's own, not the one the agent left
    assert rows["reward"]["checks"][0]["detail"] == "reward 0 (min 1)"
    journal = [json.loads(x) for x in (tmp_path / "run/journal.jsonl").read_text().splitlines()]
    errors = [(j["key"], j["error"]) for j in journal if j.get("outcome") == "error"]
    assert errors == [], errors
    assert any("nested too deep" in n for n in rows["deep"]["notes"])
    hard = (tmp_path / "run/transcripts/hard.candidate.1.jsonl").read_text()
    assert "Invalid cross-device link" in hard  # no hard link leaves the workspace


@pytest.mark.anyio
async def test_an_unreadable_path_is_never_absent(provider: PodmanProvider, spec: SandboxSpec):
    box = await provider.create(spec)
    try:
        done = await box.exec("ln -s loop loop && mkdir d && touch d/x && chmod 000 d")
        assert done.ok, done.stderr
        with pytest.raises(OSError) as loop:
            await box.exists("loop/x")
        assert loop.value.errno == errno.ELOOP
        assert not await box.exists("nothing/here")  # missing is still missing
        checks = [Check("file_absent", "loop/x"), Check("file_exists", "d/x")]
        results = await run_checks(checks, Transcript([]), box)
        assert [(r.passed, r.detail) for r in results] == [
            (False, "unreadable: Too many levels of symbolic links"),
            (False, "unreadable: Permission denied"),
        ]
    finally:
        await box.close()


REUSED = {
    "evals/expected.txt": "hello\n",
    "evals/cases/same.yaml": f"task: Task same\nchecks:\n  - {SAME}\n  - verifier: same/verify.sh\n",
    "evals/cases/same/verify.sh": "grep -q hello out.txt\n",
}


def test_reuse_reruns_the_checks_against_the_current_check_files(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(tmp_path, REUSED)
    fake(
        {
            "conversations": [
                conv(CAND, "Task same", write_file("out.txt", "bye\n"), {"text": "done"}),
                conv(BASE, "Task same", write_file("out.txt", "hello\n"), {"text": "done"}),
            ]
        }
    )

    def baseline(run: str) -> tuple[bool, list[bool], str | None]:
        _, _, summary = run_eval(capsys, folder, tmp_path / run, "--execution-only")
        arm = summary["rows"][0]["arms"]["baseline"]
        journal = [
            json.loads(x) for x in (tmp_path / run / "journal.jsonl").read_text().splitlines()
        ]
        session = next(j for j in journal if j.get("key") == "same.baseline.1")
        return arm["passed"], [c["passed"] for c in arm["checks"]], session["reused_from"]

    passed, checks, reused = baseline("run1")
    assert (passed, checks, reused) == (True, [True, True], None)
    (folder / "evals/expected.txt").write_text("bye\n")  # a fresh baseline now fails cmp
    passed, checks, reused = baseline("run2")
    assert reused is not None, "the baseline session is reused"
    assert (passed, checks) == (False, [False, True])
    (folder / "evals/cases/same/verify.sh").write_text("grep -q bye out.txt\n")
    (folder / "evals/expected.txt").write_text("hello\n")
    passed, checks, reused = baseline("run3")
    assert (passed, checks) == (False, [True, False]) and reused is not None


def test_view_serves_only_the_run_folders_own_files(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path, {"evals/cases/leak.yaml": "task: Task leak\nchecks:\n  - file_exists: never\n"}
    )
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Task leak",
                    bash("ln -s /etc/passwd leak && ln -s /etc etc && echo hi > real.txt"),
                    {"text": "done"},
                )
            ]
        }
    )
    run = tmp_path / "run"
    run_eval(capsys, folder, run, "--execution-only")
    kept = run / "workspaces/leak.candidate.1"
    assert (kept / "real.txt").read_text() == "hi\n"
    # the links are data: recorded with their targets, never written as links
    assert not any(p.is_symlink() for p in run.rglob("*"))
    links = json.loads((run / "workspaces/leak.candidate.1.symlinks.json").read_text())
    assert links == {"etc": "/dev/null/etc", "leak": "/etc/passwd"}  # /etc holds mounts: cut
    os.symlink("/etc/passwd", run / "planted")  # links someone made in the run folder later
    os.symlink("/etc", run / "workspaces/dir")
    server = server_for(run)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def get(path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()

    try:
        assert get("/workspaces/leak.candidate.1/real.txt") == (200, b"hi\n")
        for path in (
            "/workspaces/leak.candidate.1/leak",
            "/workspaces/leak.candidate.1/etc/passwd",
            "/planted",
            "/workspaces/dir/passwd",
            "/../../../../etc/passwd",
            "/workspaces/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
            "/workspaces/",
        ):
            status, body = get(path)
            assert status == 404 and b"root:" not in body, path
    finally:
        server.shutdown()
        server.server_close()


def test_import_never_follows_a_link_in_the_source(tmp_path: Path, capsys) -> None:
    secret = write(tmp_path / "host", {"secret.txt": "HOST SECRET\n", "dir/key": "HOST KEY\n"})
    src = harbor_source(tmp_path)
    os.symlink(secret / "secret.txt", src / "tests/secret.txt")
    os.symlink(secret / "dir", src / "tests/more")
    folder = skill(tmp_path, {})
    assert main(["import", "harbor", str(src), "--into", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "tests/secret.txt: a symlink" in out and "tests/more: a symlink" in out
    written = [p for p in (folder / "evals").rglob("*") if p.is_file()]
    assert written and not any(b"HOST" in p.read_bytes() for p in written)
    assert not any(p.is_symlink() for p in (folder / "evals").rglob("*"))
    # a task file that is a link is refused, in one line
    os.remove(src / "instruction.md")
    os.symlink(secret / "secret.txt", src / "instruction.md")
    assert main(["import", "harbor", str(src), "--into", str(skill(tmp_path / "b", {}))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "instruction.md: a symlink" in err[0], err
