"""Nothing lost, nothing confusing: resume keeps the run's settings, the journal survives a
torn tail and a second process, signals and a full disk clean up, and every bad output path or
setting is one line with exit 2 — before any session starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.results.journal import Journal, RunBusy, read_journal
from skillbench.results.records import SessionRecord
from skillbench.sandbox.podman.provider import OWNER_LABEL
from tests.helpers import BASE, CAND, MODEL, bash, conv, run_eval, skill, write_file


def record(key: str) -> SessionRecord:
    session, arm, rep = key.split(".")
    return SessionRecord(key=key, session=session, arm=arm, rep=int(rep), outcome="pass")


def test_a_torn_journal_tail_is_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append(record("a.baseline.1"))
    journal.close()
    with path.open("ab") as fh:
        fh.write(b'{"type":"session","key":"a.candidate.1","sess')  # a crash mid-write
    journal = Journal(path)
    journal.append(record("b.baseline.1"))
    journal.close()
    sessions, _ = read_journal(path)
    assert sorted(sessions) == ["a.baseline.1", "b.baseline.1"]
    assert path.read_bytes().endswith(b"}\n") and path.read_bytes().count(b"\n") == 2


def test_one_process_per_run_folder(tmp_path: Path) -> None:
    first = Journal(tmp_path / "journal.jsonl")
    with pytest.raises(RunBusy, match="another skillbench process is running this run folder"):
        Journal(tmp_path / "journal.jsonl")
    first.close()
    Journal(tmp_path / "journal.jsonl").close()  # free again once the first one is done


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-cost", "-1"], "skillbench: error: --max-cost is a spend cap in USD: 0 or more"),
        (["--parallel", "10000"], "skillbench: error: --parallel must be between 1 and 64"),
        (
            ["--junit", "no/such/folder/eval.xml"],
            "skillbench: error: --junit no/such/folder/eval.xml: the folder no/such/folder does not "
            "exist; create it first",
        ),
        (
            ["--max-cost", "1", "--model", "anthropic/claude-unknown-9"],
            "skillbench: error: --max-cost: no price is known for anthropic/claude-unknown-9, so its "
            'spend cannot be counted; add [prices."anthropic/claude-unknown-9"] with input and '
            "output (USD per million tokens) to skillbench.toml",
        ),
    ],
)
def test_bad_settings_are_one_line_before_anything_runs(
    argv: list[str], message: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-000")
    monkeypatch.chdir(tmp_path)
    folder = skill(tmp_path, {"evals/cases/a.yaml": "task: t\nchecks: [{file_exists: a}]\n"})
    code = main(["eval", str(folder), "--model", MODEL, "--no-gen", "--out", "run", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(message), err
    assert not (tmp_path / "run").exists()


def test_config_parallel_is_capped(tmp_path: Path, capsys) -> None:
    (tmp_path / "skillbench.toml").write_text("parallel = 500\n")
    assert main(["config", str(tmp_path)]) == 2
    assert "parallel must be between 1 and 64" in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
class TestRunFolder:
    def test_resume_takes_the_runs_models(self, fake, tmp_path: Path, capsys, monkeypatch) -> None:
        folder = skill(
            tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks: [{file_exists: a}]\n"}
        )
        fake({"conversations": [conv("(?s)", "Task a", write_file("a", "x"), {"text": "done"})]})
        code, _, _ = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
        assert code == 3  # one unit: INCONCLUSIVE
        # the printed resume command has no --model; the environment names another model
        monkeypatch.setenv("SKILLBENCH_MODEL", "scripted/demo")
        assert main(["eval", "--resume", str(tmp_path / "run"), "--quiet"]) == 3
        assert capsys.readouterr().out.startswith("verdict: INCONCLUSIVE")
        # a flag that names another model explicitly is still refused
        code = main(["eval", "--resume", str(tmp_path / "run"), "--model", "scripted/demo"])
        assert code == 2 and "the model changed" in capsys.readouterr().err

    def test_a_second_process_on_a_run_folder_is_refused(
        self, fake, tmp_path: Path, capsys
    ) -> None:
        folder = skill(
            tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks: [{file_exists: a}]\n"}
        )
        fake({"conversations": [conv("(?s)", "Task a", {"text": "done"})]})
        run_eval(capsys, folder, tmp_path / "run", "--execution-only")
        holder = Journal(tmp_path / "run/journal.jsonl")  # as if another resume were running
        try:
            assert main(["eval", "--resume", str(tmp_path / "run"), "--quiet"]) == 2
        finally:
            holder.close()
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"skillbench: error: {tmp_path / 'run'}: another skillbench process is "
            "running this run folder; wait for it to finish, or stop it first"
        ]

    @pytest.mark.parametrize(
        ("sig", "code", "word"),
        [
            (signal.SIGINT, 130, "interrupted"),
            (signal.SIGTERM, 143, "terminated"),
            # tenth review: a terminal closed or an ssh session dropped left every sandbox
            (signal.SIGHUP, 129, "terminated"),
        ],
    )
    def test_signals_remove_sandboxes_and_point_at_resume(
        self, fake, tmp_path: Path, sig: int, code: int, word: str
    ) -> None:
        folder = skill(
            tmp_path, {"evals/cases/slow.yaml": "task: Slow\nchecks: [{file_exists: g}]\n"}
        )
        fake({"conversations": [conv("(?s)", "Slow", bash("sleep 60"), {"text": "done"})]})
        out = tmp_path / "run"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skillbench",
                "eval",
                str(folder),
                "--model",
                MODEL,
                "--out",
                str(out),
                "--quiet",
                "--no-gen",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list((out / "transcripts").glob("*.jsonl")):
            time.sleep(0.1)
        time.sleep(1.0)  # the sleeps are running in their sandboxes now
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert (
            f"{word}; nothing finished is lost. Continue with: skillbench eval --resume {out}"
            in err
        )
        from podman import PodmanClient

        with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
            mine = {"label": f"{OWNER_LABEL}={os.uname().nodename}:{proc.pid}"}
            assert client.containers.list(all=True, filters=mine) == []
            assert client.volumes.list(filters=mine) == []

    def test_sigterm_during_oracle_runs_removes_their_sandboxes(self, tmp_path: Path) -> None:
        """Seventh outside review (LEAK1): `eval --oracle` has no run folder and so no
        two-signal rule; SIGTERM (a CI cancel) ended it at the default action, with no line
        and both sandboxes and their volumes left behind. SIGTERM now stops every command as
        Ctrl-C does, its cleanup run."""
        case = "task: Slow {}\noracle: solve.sh\nchecks: [{{file_exists: g.txt}}]\n"
        folder = skill(
            tmp_path,
            {
                "evals/cases/a.yaml": case.format("A"),
                "evals/cases/b.yaml": case.format("B"),
                "evals/cases/solve.sh": "sleep 60; echo hi > g.txt\n",
            },
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillbench", "eval", str(folder), "--oracle"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        from podman import PodmanClient

        mine = {"label": f"{OWNER_LABEL}={os.uname().nodename}:{proc.pid}"}
        with PodmanClient(base_url=os.environ["SKILLBENCH_PODMAN_URL"]) as client:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(client.containers.list(filters=mine)) < 2:
                time.sleep(0.2)
            assert len(client.containers.list(filters=mine)) == 2  # the oracles are running
            time.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 143, err
            assert err.strip().splitlines()[-1] == "skillbench: terminated", err
            assert client.containers.list(all=True, filters=mine) == []
            assert client.volumes.list(filters=mine) == []

    def test_out_errors_are_one_line(self, fake, tmp_path: Path, capsys) -> None:
        folder = skill(
            tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks: [{file_exists: a}]\n"}
        )
        fake({"conversations": []})  # (sets the API key; no call is made)
        (tmp_path / "taken").write_text("a file")
        for out, message in (
            (tmp_path / "taken", "is a file, not a folder"),
            (Path("/proc/skillbench-run"), "cannot make the run folder there"),
        ):
            assert main(["eval", str(folder), "--model", MODEL, "--no-gen", "--out", str(out)]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and message in err[0], err

    def test_a_full_disk_mid_run_stops_cleanly_and_resumes(
        self, fake, tmp_path: Path, capsys
    ) -> None:
        folder = skill(
            tmp_path,
            {
                f"evals/cases/c{i}.yaml": f"task: Task c{i}\nchecks: [{{file_exists: a}}]\n"
                for i in range(3)
            },
        )
        noisy = bash("head -c 100000 /dev/zero | tr '\\0' a")  # ~30 KB of transcript per call
        fake({"conversations": [conv("(?s)", "Task c", noisy, noisy, {"text": "done"})]})
        disk = tmp_path / "disk"
        disk.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)], check=True)
        try:
            code = main(
                [
                    "eval",
                    str(folder),
                    "--model",
                    MODEL,
                    "--no-gen",
                    "--quiet",
                    "--parallel",
                    "1",
                    "--out",
                    str(disk / "run"),
                    "--execution-only",
                ]
            )
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and len(err) == 1, err
            assert err[0].startswith(
                f"skillbench: error: writing the run folder {disk / 'run'} "
                "failed: No space left on device (the disk is full); nothing "
                "finished is lost: free some space, then continue with: "
                f"skillbench eval --resume {disk / 'run'}"
            )
            done_before = len(read_journal(disk / "run/journal.jsonl")[0])
            subprocess.run(["mount", "-o", "remount,size=20m", str(disk)], check=True)
            assert main(["eval", "--resume", str(disk / "run"), "--quiet"]) == 3  # 3 units
            sessions, rows = read_journal(disk / "run/journal.jsonl")
            assert len(sessions) == 6 and len(rows) == 3 and done_before < 6
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)

    def test_junit_write_failing_at_the_end_still_prints_the_report(
        self, fake, tmp_path: Path, capsys
    ) -> None:
        folder = skill(
            tmp_path, {"evals/cases/a.yaml": "task: Task a\nchecks: [{file_exists: a}]\n"}
        )
        fake({"conversations": [conv("(?s)", "Task a", {"text": "done"})]})
        reports = tmp_path / "reports"
        reports.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(reports)], check=True)
        try:
            (reports / "filler").write_bytes(b"x" * 4096)  # the folder is there, but full
            code = main(
                [
                    "eval",
                    str(folder),
                    "--model",
                    MODEL,
                    "--no-gen",
                    "--quiet",
                    "--out",
                    str(tmp_path / "run"),
                    "--execution-only",
                    "--junit",
                    str(reports / "eval.xml"),
                ]
            )
        finally:
            subprocess.run(["umount", "-l", str(reports)], check=False)
        out, err = capsys.readouterr()
        assert code == 2 and out.startswith("verdict: INCONCLUSIVE")  # the report came first
        assert err.strip() == (
            f"skillbench: error: --junit {reports / 'eval.xml'}: could not "
            "write it: No space left on device"
        )

    def test_spend_counts_trigger_calls_and_the_trigger_half_honours_parallel(
        self, fake, tmp_path: Path, capsys
    ) -> None:
        prompts = [f"greet person {i}" for i in range(6)]
        folder = skill(
            tmp_path,
            {
                "evals/cases/a.yaml": "task: Task a\nchecks: [{file_exists: a}]\n",
                "evals/triggers.yaml": "should_trigger:\n"
                + "".join(f"  - {p}\n" for p in prompts)
                + "should_not_trigger: [rename a variable]\n",
            },
            config="parallel = 2\n",
        )
        server = fake(
            {
                "rules": [
                    {
                        "when": "User request",
                        "replies": ['{"nonce": "$FRAME_ID", "selected": ["greeter"]}'],
                    }
                ],
                "latency": 0.2,
                "conversations": [
                    conv(CAND, "Task a", write_file("a", "x"), {"text": "done"}),
                    conv(BASE, "Task a", {"text": "no"}),
                ],
            }
        )
        code, _, summary = run_eval(capsys, folder, tmp_path / "run")
        assert code == 3 and summary["triggers"]["tp"] == 6  # one unit: INCONCLUSIVE
        assert server.peak_in_flight <= 2  # sessions and trigger calls alike
        sessions = [
            j
            for j in map(json.loads, (tmp_path / "run/journal.jsonl").read_text().splitlines())
            if j["type"] == "session"
        ]
        session_cost = sum(s["cost_usd"] for s in sessions)
        assert summary["spend_usd"] > session_cost + 1e-9  # the 7 trigger calls are counted

    def test_triggers_command_takes_parallel_from_the_config(
        self, fake, tmp_path: Path, capsys
    ) -> None:
        folder = skill(
            tmp_path,
            {
                "evals/triggers.yaml": "should_trigger: [a, b, c, d, e]\n"
                "should_not_trigger: [f, g, h]\n"
            },
            config="parallel = 3\n",
        )
        server = fake(
            {
                "latency": 0.2,
                "rules": [
                    {"when": "User request", "replies": ['{"nonce": "$FRAME_ID", "selected": []}']}
                ],
            }
        )
        assert main(["triggers", str(folder), "--model", MODEL]) == 0
        assert server.peak_in_flight == 3
        capsys.readouterr()
