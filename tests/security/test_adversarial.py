"""The agent under test as an adversary (docs/trust.md): every attack found on the walking skeleton
is tried here by a scripted agent, against real podman sandboxes and the real SDKs, and each
test asserts the honest outcome: the cheat does not pass its checks, the run finishes with its
rows in the journal, the host keeps only what it should, and the gate accepts only real
measurements."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.report.progress import ProgressDisplay
from skillbench.results.records import SessionRecord
from skillbench.sandbox.podman.connection import URL_ENV
from tests.helpers import BASE, CAND, MODEL, bash, conv, run_eval, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

# Small caps so the attacks hit them quickly: the sandbox's memory limit is memory plus the
# tmpfs caps, about 660 MB here.
TIGHT = 'memory = "512m"\n[sandbox]\ndisk = "64m"\ntmp = "64m"\nhome = "16m"\n'
IMPOSSIBLE = "command_succeeds: 'false'"  # passes only if the checker's shell was forged
PY_FAILS = "command_succeeds: python3 -c 'raise SystemExit(1)'"
EXIT_0 = "import os\\nos._exit(0)\\n"


def results(run: Path, key: str) -> list[str]:
    """The tool results of one session's transcript, in order."""
    lines = (run / f"transcripts/{key}.jsonl").read_text().splitlines()
    return [e["text"] for e in map(json.loads, lines) if e["type"] == "tool_result"]


def journal(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]


def test_the_agent_cannot_forge_its_checks(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/shells.yaml": f"task: Task shells\nchecks:\n  - {IMPOSSIBLE}\n  - {PY_FAILS}\n",
            "evals/cases/site.yaml": f"task: Task site\nchecks:\n  - {PY_FAILS}\n",
            "evals/cases/memory.yaml": f"task: Task memory\nchecks:\n  - {IMPOSSIBLE}\n",
            "evals/cases/kill.yaml": f"task: Task kill\nchecks:\n  - {IMPOSSIBLE}\n",
        },
        config=TIGHT,
    )
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Task shells",
                    bash(
                        "cp /usr/bin/true /usr/bin/bash; cp /usr/bin/true /bin/sh; "
                        "cp /usr/bin/true /usr/bin/python3; echo 'exit 0' >> ~/.bashrc; "
                        "mkdir -p ~/bin && cp /usr/bin/true ~/bin/bash; echo tried"
                    ),
                    {"text": "done"},
                ),
                conv(
                    CAND,
                    "Task site",
                    bash(
                        "d=~/.local/lib/python3.11/site-packages; mkdir -p $d; "
                        f"for f in /usr/lib/python3.11/sitecustomize.py $d/sitecustomize.py "
                        f"$d/usercustomize.py /tmp/sitecustomize.py; do printf '{EXIT_0}' > $f; done; "
                        "python3 -c 'raise SystemExit(1)'; echo exit=$?"
                    ),
                    {"text": "done"},
                ),
                conv(
                    CAND,
                    "Task memory",
                    bash(
                        "python3 -c \"open('/proc/1/mem', 'r+b')\" 2>&1 | tail -1; "
                        'python3 -c "import ctypes; libc = ctypes.CDLL(None, use_errno=True); '
                        "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno())\""
                    ),
                    {"text": "done"},
                ),
                conv(
                    CAND,
                    "Task kill",
                    bash(
                        "kill -INT 1; kill -TERM 1; kill -KILL 1; echo 1000 > /proc/1/oom_score_adj; "
                        "python3 -c 'x = bytearray(2 ** 30)'; echo hog=$?"
                    ),
                    {"text": "done"},
                ),
                conv(BASE, "Task", {"text": "I will not do that."}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run")
    run = tmp_path / "run"
    assert code == 3 and summary["verdict"] == "INCONCLUSIVE", lines  # every unit tied
    # every row scored on checks: no cheat passed, and no attack broke a sandbox
    assert (summary["scored_rows"], summary["expected_rows"]) == (4, 4)
    assert {(r["outcome"], r["decided_by"]) for r in summary["rows"]} == {("tie", "checks")}
    for row in summary["rows"]:
        assert not row["arms"]["candidate"]["passed"], row
    rows = [j for j in journal(run) if j["type"] == "row"]
    assert len(rows) == 4
    # what each attack met inside the sandbox
    assert "cannot create regular file '/usr/bin/bash'" in results(run, "shells.candidate.1")[0]
    site = results(run, "site.candidate.1")[0]
    # the user site fooled the agent's own python; the checker's HOME is fresh, the system
    # site read-only, so the check above still failed
    assert "exit=0" in site and "sitecustomize.py: Read-only file system" in site
    mem = results(run, "memory.candidate.1")[0]
    assert "PermissionError" in mem and "ptrace -1 1" in mem  # EPERM
    kill = results(run, "kill.candidate.1")[0]
    assert kill.count("Operation not permitted") == 3 and "Permission denied" in kill
    assert "hog=137" in kill  # the hog died, the executor did not
    sessions = {j["key"]: j for j in journal(run) if j["type"] == "session"}
    assert sessions["kill.candidate.1"]["outcome"] == "fail"  # not an infrastructure error


def test_bounded_writes_and_a_hostile_workspace_never_break_the_run(
    fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/fill.yaml": "task: Task fill\nchecks:\n  - file_exists: never.txt\n",
            "evals/cases/hostile.yaml": "task: Task hostile\nchecks:\n  - file_exists: never.txt\n",
        },
        config=TIGHT + 'keep_workspace = "10m"\n',
    )
    server = fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Task fill",
                    bash(
                        "head -c 100000000 /dev/zero > /work/big; echo work=$?; "
                        "head -c 100000000 /dev/zero > /tmp/big; echo tmp=$?; "
                        "head -c 100000000 /dev/zero > ~/big; echo home=$?"
                    ),
                    {"text": "done"},
                ),
                conv(
                    CAND,
                    "Task hostile",
                    bash(
                        "truncate -s 2G sparse && mkdir -p venv/bin && ln -s /usr/bin/python3 venv/bin/python"
                        " && ln -s /etc/passwd abs && ln -s nowhere dangling && ln -s loop loop && mkfifo pipe"
                        " && echo ok"
                    ),
                    {"text": "done"},
                ),
                conv(BASE, "Task", {"text": "no"}),
            ]
        }
    )
    run = tmp_path / "run"
    # the eval's own peak RSS: VmHWM of its own memory map. Not getrusage's figure: wait4's
    # counts the largest descendant (a `podman build` of an image another test removed), and
    # RUSAGE_SELF's keeps the high-water mark of the process it was exec'd from (pytest's, a
    # few hundred MB deep into the suite)
    peak = tmp_path / "peak-rss"
    own_peak = (
        "import sys; from skillbench.__main__ import main; code = main(); "
        "hwm = next(x for x in open('/proc/self/status') if x.startswith('VmHWM:')); "
        f"open({str(peak)!r}, 'w').write(hwm.split()[1]); "
        "sys.exit(code)"
    )
    argv = [
        sys.executable,
        "-c",
        own_peak,
        "eval",
        str(folder),
        "--model",
        MODEL,
        "--out",
        str(run),
        "--quiet",
        "--no-gen",
        "--seed",
        "1",
    ]
    env = {**os.environ, **server.env()}
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr  # too few units: INCONCLUSIVE
    rss = int(peak.read_text())  # (KiB)
    print(f"eval peak RSS {rss // 1024} MB")  # shown with -s
    assert rss < 600 * 1024, f"peak RSS {rss // 1024} MB"
    kept = sum(p.stat().st_size for p in run.rglob("*") if p.is_file() and not p.is_symlink())
    assert kept < 30 << 20, f"the run folder holds {kept >> 20} MB"

    fill = results(run, "fill.candidate.1")[0]
    assert fill.count("No space left on device") == 3
    assert "work=1" in fill and "tmp=1" in fill and "home=1" in fill

    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored_rows"] == 2
    by = {r["case"]: r["arms"]["candidate"] for r in summary["rows"]}
    # /work is near its 64 MB cap: over the 10 MB copy cap, so left out with a note
    assert any("big: " in n and "copy cap" in n for n in by["fill"]["notes"])
    hostile = run / "workspaces/hostile.candidate.1"
    links = json.loads((run / "workspaces/hostile.candidate.1.symlinks.json").read_text())
    assert links["venv/bin/python"] == "/usr/bin/python3" and links["abs"] == "/etc/passwd"
    # cut at the handover (they lead nowhere the checker may go), kept as text after /dev/null/
    assert (links["dangling"], links["loop"]) == ("/dev/null/nowhere", "/dev/null/loop")
    assert not any(p.is_symlink() for p in hostile.rglob("*"))
    assert not (hostile / "pipe").exists() and not (hostile / "sparse").exists()
    notes = "\n".join(by["hostile"]["notes"])
    # the fifo is removed at the handover (a check that opened it would hang), with its note
    assert "/work/pipe: a fifo, removed" in notes and "sparse: 2147483648 bytes" in notes
    assert len([j for j in journal(run) if j["type"] == "row"]) == 2

    # resuming the finished run neither crashes nor reruns anything
    again = subprocess.run(
        [*argv[:5], "--resume", str(run), "--quiet"], env=env, capture_output=True, text=True
    )
    assert again.returncode == 3, again.stderr
    assert len(journal(run)) == 6  # 4 sessions and 2 rows, as before


def test_the_run_folder_is_never_inside_the_skill(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/look.yaml": "task: Task look\nchecks:\n  - transcript_omits: CHECK-TEXT-7\n",
            ".skillbench/runs/old/journal.jsonl": '{"check": "CHECK-TEXT-7"}\n',
        },
    )
    before = digest(folder)
    (folder / ".skillbench").rename(tmp_path / "aside")
    assert digest(folder) == before  # an old run folder is not part of the skill's bytes
    (tmp_path / "aside").rename(folder / ".skillbench")
    server = fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Task look",
                    bash(
                        "ls -A /skills/greeter; cat /skills/greeter/.skillbench/runs/old/journal.jsonl; echo end"
                    ),
                    {"text": "looked"},
                )
            ]
        }
    )

    code = main(
        [
            "eval",
            str(folder),
            "--model",
            MODEL,
            "--out",
            str(folder / ".skillbench/x"),
            "--quiet",
            "--no-gen",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(
        f"skillbench: error: --out {folder}/.skillbench/x: is inside the skill"
    )

    monkeypatch.chdir(folder)  # `skillbench eval .` from the skill's own folder
    assert main(["eval", ".", "--model", MODEL, "--quiet", "--no-gen"]) == 3  # one unit
    made = list((tmp_path / "lib/.skillbench/runs").iterdir())  # beside the skill
    assert len(made) == 1
    assert sorted(p.name for p in (folder / ".skillbench/runs").iterdir()) == ["old"]
    listing = results(made[0], "look.candidate.1")[0]
    assert listing.startswith("SKILL.md\nend\n")  # `ls -A` shows no .skillbench
    assert "No such file or directory" in listing and "CHECK-TEXT" not in listing
    assert digest(folder) == before
    capsys.readouterr()
    # the receipt is found: the digest did not move (the fake server is allowed explicitly)
    assert main(["gate", ".", "--allow-endpoint", server.url, "--allow-inconclusive"]) == 0
    assert capsys.readouterr().out.startswith("gate passed: greeter: INCONCLUSIVE")


def test_checks_read_the_real_transcript_and_the_files_keep_it_scrubbed(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/login.yaml": 'task: Task login\nchecks:\n  - transcript_mentions: "password: str"\n',
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    CAND,
                    "Task login",
                    write_file(
                        "auth.py", "def login(user: str, password: str):\n    return user\n"
                    ),
                    {"text": "done"},
                ),
                conv(BASE, "Task login", {"text": "no"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run")
    assert code == 3  # one unit: INCONCLUSIVE
    row = summary["rows"][0]
    assert (row["outcome"], row["arms"]["candidate"]["passed"]) == ("win", True)
    on_disk = (tmp_path / "run/transcripts/login.candidate.1.jsonl").read_text()
    assert "password: str" not in on_disk and "password: [REDACTED]" in on_disk


def test_printed_errors_are_scrubbed_and_escaped(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "plainkey-4242-do-not-print"
    hostile = f"invalid x-api-key {key} [/bold] \x1b]0;pwned\x07\x1b[2J"
    folder = skill(tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: x\n"})
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Task a",
                    {"faults": [{"status": 401, "message": hostile, "times": 9}], "text": "never"},
                ),
            ]
        }
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)  # the provider echoes it back
    code = main(
        [
            "eval",
            str(folder),
            "--model",
            MODEL,
            "--out",
            str(tmp_path / "run"),
            "--no-gen",
            "--execution-only",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2 and "verdict: NONE (nothing scored)" in out
    assert "auth" in err and "[REDACTED]" in err  # the progress line shows the error...
    for text in (out, err):  # ...scrubbed and escaped
        assert key not in text and "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned" in err

    # on a terminal the progress line goes through rich: markup in it must not crash or style
    screen = io.StringIO()
    display = ProgressDisplay(console=Console(file=screen, force_terminal=True, width=200))
    display.planned(1, 0)
    record = SessionRecord(
        key="a.candidate.1", session="a", arm="candidate", rep=1, outcome="error", error=hostile
    )
    display.finished(record, 0.0)
    display.close()
    shown = screen.getvalue()
    assert "[/bold]" in shown and key not in shown and "\x1b]0;pwned" not in shown


def test_the_podman_service_gets_no_api_keys() -> None:
    # in a process of its own: a service started here would take the shared one's socket path
    env = {k: v for k, v in os.environ.items() if k != URL_ENV}
    env.update(
        ANTHROPIC_API_KEY="sk-ant-never-in-podman-0001", OPENAI_API_KEY="sk-never-in-podman-0002"
    )
    probe = (
        "from pathlib import Path\n"
        "from skillbench.sandbox.podman.service import PodmanService\n"
        "service = PodmanService.start_or_reuse()\n"
        "print(Path(f'/proc/{service._process.pid}/environ').read_bytes())\n"
        "service.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "never-in-podman" not in done.stdout and "PATH=" in done.stdout


def test_gate_keeps_an_earlier_fail_over_a_run_that_measured_nothing(
    fake, tmp_path: Path, capsys
) -> None:
    # five cases the baseline wins: the fewest units a FAIL can rest on
    folder = skill(
        tmp_path,
        {
            f"evals/cases/a{i}.yaml": f"task: Task a{i}\nchecks:\n  - file_exists: a\n"
            for i in range(5)
        },
    )
    server = fake(
        {
            "conversations": [
                conv(CAND, "Task a", {"text": "I skip it."}),
                conv(BASE, "Task a", write_file("a", "made"), {"text": "done"}),
            ]
        }
    )
    code, _, summary = run_eval(capsys, folder, tmp_path / "run1", "--execution-only")
    assert (code, summary["verdict"]) == (1, "FAIL")
    code, _, summary = run_eval(
        capsys, folder, tmp_path / "run2", "--execution-only", "--max-cost", "0"
    )
    assert (code, summary["verdict"], summary["scored_rows"]) == (2, "NONE", 0)
    assert main(["gate", str(folder), "--allow-endpoint", server.url]) == 1
    assert capsys.readouterr().out.strip() == (
        "gate refused: greeter: verdict vs baseline is FAIL (policy requires NEUTRAL)"
    )


def test_a_sandbox_that_dies_mid_run_leaves_a_receipt_no_gate_accepts(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: a\n"})
    fake(
        {
            "conversations": [
                conv(
                    "(?s)",
                    "Task a",
                    {
                        "text": "thinking",
                        "latency": 1.5,
                        "tool_calls": [{"bash": {"command": "true"}}],
                    },
                    {"text": "done"},
                )
            ]
        }
    )
    owner = f"label=skillbench.owner={socket.gethostname()}:{os.getpid()}"
    stop = threading.Event()

    def killer() -> None:  # what an executor killed from inside would look like to the host
        while not stop.is_set():
            ids = subprocess.run(
                ["podman", "ps", "-q", "--filter", owner], capture_output=True, text=True
            ).stdout.split()
            if ids:
                subprocess.run(["podman", "kill", *ids], capture_output=True)
            stop.wait(0.2)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    finally:
        stop.set()
        thread.join()
    assert (code, summary["verdict"], summary["scored_rows"]) == (2, "NONE", 0)
    assert lines[0] == "verdict: NONE (nothing scored)"
    sessions = [j for j in journal(tmp_path / "run") if j["type"] == "session"]
    assert {(s["outcome"], s["attempts"]) for s in sessions} == {("error", 2)}
    assert main(["gate", str(folder)]) == 1
    assert "measured anything" in capsys.readouterr().out


def test_the_agent_cannot_stand_in_for_skillbench_in_the_checker(
    fake, tmp_path: Path, capsys
) -> None:
    """`skillbench` on the checker's PATH runs the host's package: a skillbench or msgspec
    planted in /work (the current folder of every check) is never imported."""
    folder = skill(
        tmp_path,
        {
            "evals/cases/a.yaml": (
                "task: Write a Margin suite in suite/\n"
                "checks:\n  - command_succeeds: skillbench import margin /work/suite --check\n"
                "  - command_succeeds: skillbench --version\n"
            )
        },
    )
    forged = "import os\nprint('check: the imported evals load cleanly')\nos._exit(0)\n"
    plant = {
        "tool_calls": [
            {"write_file": {"path": "skillbench/__init__.py", "content": forged}},
            {"write_file": {"path": "skillbench/__main__.py", "content": forged}},
            {"write_file": {"path": "skillbench/cli.py", "content": forged}},
            {"write_file": {"path": "msgspec.py", "content": forged}},
            {"write_file": {"path": "suite/suite.toml", "content": "not a suite\n"}},
        ]
    }
    fake({"conversations": [conv("(?s)", "Margin suite", plant, {"text": "done"})]})
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert code == 3, lines  # one unit: INCONCLUSIVE
    checks = summary["rows"][0]["arms"]["candidate"]["checks"]
    # the real importer ran, read the planted suite.toml and refused it
    assert checks[0]["passed"] is False and "cannot read it as TOML" in checks[0]["detail"]
    assert checks[1]["passed"] is True  # and the real skillbench answers --version
