"""INT1 (issue 38): Ctrl-C at any moment of a command, from the first instruction on, exits 130
with one line and no traceback (docs/trust.md).

On 2bba125 a SIGINT in the first ~0.5 s (while the CLI's modules were being imported) printed a
KeyboardInterrupt traceback, through the console script and `python -m skillbench` alike.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import MODEL, bash, conv, make_skill

CONSOLE_SCRIPT = Path(sys.executable).with_name("skillbench")
ENTRIES = {"console-script": [str(CONSOLE_SCRIPT)], "-m": [sys.executable, "-m", "skillbench"]}
# as soon as it is spawned, then from the entry point's first instructions to past the imports
MOMENTS = (0.0, 0.001, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6)


def _entered(pid: int) -> bool:
    """skillbench's entry point has run its first instructions: the process catches SIGTERM
    (the interpreter alone catches only SIGINT). Read from the kernel, not from the process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone already
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def interrupted(argv: list[str], delay: float, cwd: Path) -> tuple[int, str]:
    """SIGINT `delay` seconds after the entry point's first instructions (0: as soon as the
    process exists, when the interpreter itself may not have started)."""
    proc = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if delay:
        # (a skillbench that never catches SIGTERM is signalled within its imports anyway)
        deadline = time.monotonic() + 10.0  # a loaded machine takes seconds to start Python
        while not _entered(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def assert_clean(code: int, err: str, what: str) -> None:
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, (what, err)
    assert "Exception ignored" not in err, (what, err)
    if code == -signal.SIGINT:
        # the signal came before the interpreter had set up any handler: the kernel ended it
        # (a shell reports 130), having printed nothing
        assert err == "", (what, err)
        return
    lines = err.splitlines()
    assert code == 130, (what, code, err)
    assert len(lines) == 1 and "interrupted" in lines[0], (what, err)


@pytest.mark.parametrize("entry", ENTRIES)
def test_ctrl_c_at_any_moment_of_check_is_one_line_and_130(tmp_path: Path, entry: str) -> None:
    skill = make_skill(tmp_path, "greeter", {"evals/cases/a.yaml": "task: Greet\n"})
    for delay in MOMENTS:
        code, err = interrupted([*ENTRIES[entry], "check", str(skill)], delay, tmp_path)
        if code == 0 and delay >= 0.3:
            continue  # check finished before the signal: nothing to interrupt
        assert_clean(code, err, f"check, SIGINT after {delay}s")


@pytest.mark.sandbox
@pytest.mark.usefixtures("podman_service")
@pytest.mark.parametrize("entry", ENTRIES)
def test_ctrl_c_at_any_moment_of_eval_is_one_line_and_130(fake, tmp_path: Path, entry: str) -> None:
    skill = make_skill(
        tmp_path, "greeter", {"evals/cases/a.yaml": "task: Greet\nchecks: [{file_exists: g}]\n"}
    )
    fake({"conversations": [conv("(?s)", "Greet", bash("sleep 30"), {"text": "done"})]})
    argv = [*ENTRIES[entry], "eval", str(skill), "--model", MODEL, "--no-gen", "--quiet"]
    for delay in (*MOMENTS, 1.5, 3.0):  # the later ones land in the imports or the sandboxes
        out = tmp_path / f"run-{delay}"
        code, err = interrupted([*argv, "--out", str(out)], delay, tmp_path)
        assert_clean(code, err, f"eval, SIGINT after {delay}s")


@pytest.mark.parametrize("entry", ENTRIES)
def test_ctrl_c_timed_from_the_spawn_never_shows_skillbenchs_own_frames(
    tmp_path: Path, entry: str
) -> None:
    """Outside review: timed from the spawn, not from the entry point's first instructions,
    a SIGINT landed in skillbench/__init__.py's imports (and __main__.py's) before any
    handler: a traceback through skillbench's own frames. Python's own start-up before any
    skillbench code runs (`<frozen site>`, runpy finding the package) is not skillbench's to
    guard."""
    skill = make_skill(tmp_path, "greeter", {"evals/cases/a.yaml": "task: Greet\n"})
    for step in range(40):
        proc = subprocess.Popen(
            [*ENTRIES[entry], "check", str(skill)],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.005 * step)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        # a frame of the package itself (not the editable install's finder, which site loads)
        ours = [line for line in err.splitlines() if "File " in line and "/skillbench/" in line]
        assert ours == [], (step, err)


@pytest.mark.parametrize(
    ("argv", "orig", "ours"),
    [
        (["/venv/bin/skillbench", "eval"], ["/venv/bin/python", "/venv/bin/skillbench"], True),
        (["-m"], ["python", "-m", "skillbench", "eval"], True),
        (["-m"], ["python", "-mskillbench", "eval"], True),  # second review: joined
        (["-m"], ["python", "-m", "skillbench.__main__"], True),  # and a module of it
        (["-m"], ["python", "-X", "dev", "-Bm", "skillbench"], True),
        (["-m"], ["python", "-m", "pytest", "tests"], False),
        (["-c"], ["python", "-c", "import skillbench"], False),  # a program importing it
        (["app.py"], ["python", "-W", "ignore", "app.py", "-m", "skillbench"], False),
    ],
)
def test_only_the_command_takes_ctrl_c_at_import(monkeypatch, argv, orig, ours) -> None:
    import skillbench

    monkeypatch.setattr(skillbench._sys, "argv", argv)
    monkeypatch.setattr(skillbench._sys, "orig_argv", orig)
    assert skillbench._run_as_the_command() is ours


def test_the_console_script_under_another_name_is_the_command(tmp_path: Path, monkeypatch) -> None:
    """Tenth review: the console script linked or copied under another name (`sb`) was not
    taken for the command, so a Ctrl-C in the rest of skillbench/__init__.py's imports was a
    traceback through it. A pipe named as the script is never read (it would wait)."""
    import os

    import skillbench

    (tmp_path / "sb").symlink_to(CONSOLE_SCRIPT)
    (tmp_path / "copy").write_bytes(CONSOLE_SCRIPT.read_bytes())
    os.mkfifo(tmp_path / "fifo")
    for name, ours in (("sb", True), ("copy", True), ("fifo", False)):
        monkeypatch.setattr(skillbench._sys, "argv", [str(tmp_path / name)])
        monkeypatch.setattr(skillbench._sys, "orig_argv", ["python", str(tmp_path / name)])
        assert skillbench._run_as_the_command() is ours, name


def test_a_sighup_nohup_ignores_stays_ignored_and_one_that_is_not_is_taken() -> None:
    """Tenth review: SIGHUP (a terminal closed) ended a run at the default action, its
    sandboxes left behind; it now stops a command as SIGTERM does, unless `nohup` set it to
    be ignored, which the command must outlive."""
    probe = (
        "import signal, skillbench.__main__ as m; from skillbench.engine.interrupt import caught;"
        "print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, signal.SIGHUP in caught())"
    )
    for ignored, said in ((True, "True False"), (False, "False True")):
        hup = signal.SIG_IGN if ignored else signal.SIG_DFL
        done = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            preexec_fn=lambda hup=hup: signal.signal(signal.SIGHUP, hup),
            check=True,
        )
        assert done.stdout.strip() == said, (ignored, done)
