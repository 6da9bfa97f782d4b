"""Issue 38 item 4 (redteam5 RT5-ACT, RT5-ACT-FALSE): a skill is loaded when the agent opened a
file of it, as the kernel saw it from the executor (sandbox/inside/observer.py), however the command
was spelt; naming one in text that reads nothing is no load, and no file of the same name, no
open for writing and no blow at the executor fakes or hides one (docs/trust.md, "Activation").

Real podman sandboxes: the skill staged by `stage_arm`, each command run the way the builtin
loop's `bash` tool runs it (the agent user, through the executor), then what the observer saw;
and whole `eval` runs, the builtin loop and the real Claude Code CLI against the fake model
server, where the session record's `loaded` decides the row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillbench.evals import load_case
from skillbench.sandbox.base import SandboxError, SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import stage_arm
from tests.conftest import CHANNELS
from tests.helpers import conv, make_skill, run_eval, skill, write

pytestmark = [pytest.mark.sandbox]

HOME = "/skills"
SCRIPT = "#!/bin/sh\necho filled\n"


def pdf_and_xlsx(tmp_path: Path) -> dict[str, Path]:
    lib = tmp_path / "lib"
    pdf = make_skill(lib, "pdf", {"scripts/fill.sh": SCRIPT, "scripts/fill.py": "print(2)\n"})
    (pdf / "scripts/fill.sh").chmod(0o755)
    return {"pdf": pdf, "xlsx": make_skill(lib, "xlsx")}


async def opened(provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, *commands: str):
    """The skills (and their files) the observer saw opened while `commands` ran as the agent."""
    case_dir = write(tmp_path / "case", {"evals/cases/c.yaml": "task: t\nchecks: []\n"})
    case, _ = load_case(case_dir / "evals/cases/c.yaml", case_dir)
    skills = pdf_and_xlsx(tmp_path)
    arm = await stage_arm(provider, spec, case, skills, scratch=tmp_path / "scratch")
    try:
        box = arm.sandbox
        await box.observe({n: [f"{HOME}/{n}"] for n in skills}, now=True)
        for command in commands:
            await box.exec(command.format(home=HOME), timeout=30)
        return await box.observed()
    finally:
        await arm.close()


# --- RT5-ACT: a read the transcript could not see ------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "how",
    [
        "cat {home}/xlsx/../pdf/SKILL.md",
        "cd {home}/xlsx && cat ../pdf/SKILL.md",
        "cat {home}/{{pdf,none}}/SKILL.md",
        "cat {home}/$'pdf'/SKILL.md",
        "cat /sk*lls/pdf/SKILL.md",
        "echo {home}/pdf/SKILL.md | xargs cat",
        "echo 'cat {home}/pdf/SKILL.md' | sh",
        "cat $(echo {home}/pdf/SKILL.md)",
        "cat $(printf {home}/pdf)/SKILL.md",
        "cd -- {home}/pdf && cat SKILL.md",
        "cd -P {home}/pdf && cat SKILL.md",
        "cat {home}/${{X:-pdf}}/SKILL.md",
        "cat {home}/pd\\\nf/SKILL.md",
        # beyond the shell's spellings: programs, redirections, links the agent makes
        "dd if={home}/pdf/SKILL.md of=/dev/null status=none",
        "read -r line < {home}/pdf/SKILL.md",
        ". {home}/pdf/scripts/fill.sh",
        "python3 -c \"import mmap; f = open('{home}/' + 'p' + 'df/SKILL.md', 'rb');"
        ' mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:3]"',
        "ln -s {home}/pdf /tmp/notes && cat /tmp/notes/SKILL.md",
        "cp {home}/pdf/SKILL.md /tmp/mine.md && cat /tmp/mine.md",
        "tar -cf - -C {home} pdf/SKILL.md | tar -xOf -",
    ],
    ids=[
        "dotdot",
        "cd-dotdot",
        "brace",
        "ansi-c",
        "glob-home",
        "xargs",
        "echo-sh",
        "cat-echo-subst",
        "printf-subst",
        "cd-ddash",
        "cd-P",
        "var-default",
        "line-cont",
        "dd",
        "redirect",
        "source",
        "mmap",
        "own-symlink",
        "copy",
        "tar",
    ],
)
async def test_any_spelling_of_a_read_is_seen(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, how: str
) -> None:
    seen = await opened(provider, spec, tmp_path, how)
    assert set(seen) == {"pdf"}, seen


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("how", "file"),
    [
        ("sh {home}/pdf/scripts/fill.sh", "scripts/fill.sh"),
        ("{home}/pdf/scripts/fill.sh", "scripts/fill.sh"),  # exec: the kernel reads it
        ("cd {home}/pdf/scripts && python3 fill.py", "scripts/fill.py"),
    ],
    ids=["interpreter", "exec", "python"],
)
async def test_running_a_script_of_the_skill_is_seen(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, how: str, file: str
) -> None:
    assert await opened(provider, spec, tmp_path, how) == {"pdf": {file: "open"}}


@pytest.mark.anyio
@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_the_observer_sees_on_both_channels_and_cannot_be_stopped(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """The agent's blows at the executor (kill, a flood of opens to overflow its queue)
    neither stop it nor hide the read that follows."""
    seen = await opened(
        provider,
        spec,
        tmp_path,
        "kill -9 1; kill -STOP 1; kill -9 -1; true",
        'python3 -c "[open(p).read() for _ in range(20000) for p in '
        "('{home}/xlsx/SKILL.md', '{home}/pdf/scripts/fill.py')]\"",
        "cat {home}/pdf/SKILL.md > /dev/null",
    )
    assert seen == {
        "pdf": {"SKILL.md": "open", "scripts/fill.py": "open"},
        "xlsx": {"SKILL.md": "open"},
    }


# --- RT5-ACT-FALSE: a mention, or a file of the same name, is no load -------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "how",
    [
        "mkdir -p /work/repo/skills/pdf && ls /work/repo/skills/pdf",
        "grep -rn 'skills/pdf' /work || true",
        "git init -q /work/r && cd /work/r && git -c user.name=a -c user.email=a@b commit -q"
        " --allow-empty -m 'drop skills/pdf from the docs'",
        "cat > /work/notes.md <<'EOF'\nsee {home}/pdf/SKILL.md\nEOF",
        'python3 -c "print(1)  # {home}/pdf/SKILL.md"',
        "ls -la {home}/pdf {home}/pdf/scripts && stat {home}/pdf/SKILL.md && test -f "
        "{home}/pdf/SKILL.md",
        # a file of the same name elsewhere, read every way
        "mkdir -p /tmp/skills/pdf && echo fake > /tmp/skills/pdf/SKILL.md && "
        "cat /tmp/skills/pdf/SKILL.md && cd /tmp/skills/pdf && cat SKILL.md",
        # opening the skill's file to write: the mount refuses it, and it is no read
        "echo x >> {home}/pdf/SKILL.md; : > {home}/pdf/SKILL.md; true",
    ],
    ids=[
        "workspace-path",
        "grep-pattern",
        "commit-message",
        "heredoc-body",
        "py-comment",
        "ls-stat-test",
        "same-name-elsewhere",
        "open-to-write",
    ],
)
async def test_naming_the_skill_without_reading_it_is_no_load(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, how: str
) -> None:
    assert await opened(provider, spec, tmp_path, how) == {}


@pytest.mark.anyio
async def test_staging_reads_before_the_watch_are_no_load_and_a_blind_observer_is_an_error(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """What skillbench itself opens before the agent can act (staging, the contamination
    guard, a CLI copying the skills, its start-up listing them) is unseen: the watch begins
    when the agent's first turn does. A report the kernel could not give is refused."""
    case_dir = write(tmp_path / "case", {"evals/cases/c.yaml": "task: t\nchecks: []\n"})
    case, _ = load_case(case_dir / "evals/cases/c.yaml", case_dir)
    skills = pdf_and_xlsx(tmp_path)
    arm = await stage_arm(provider, spec, case, skills, scratch=tmp_path / "scratch")
    try:
        box = arm.sandbox
        await box.observe({"pdf": [f"{HOME}/pdf"]}, now=False)  # armed by a relayed reply
        await box.exec(f"cat {HOME}/pdf/SKILL.md; cp -rL {HOME}/pdf /tmp/copy")
        assert await box.observed() == {}
        await box.observe({"pdf": [f"{HOME}/pdf"], "none": ["/nonexistent"]}, now=True)
        await box.exec(f"cat {HOME}/pdf/SKILL.md")
        assert await box.observed() == {"pdf": {"SKILL.md": "open"}}
        many = {f"s{i}": [f"{HOME}/pdf"] for i in range(3000)}  # 9000 watches: too many
        await box.observe(many, now=True)
        with pytest.raises(SandboxError, match="could not watch the staged skills"):
            await box.observed()
    finally:
        await arm.close()


# --- the session record: the observer decides `loaded`, for the loop and a real CLI ---------


def e2e(test: Any) -> Any:
    for mark in (pytest.mark.e2e, pytest.mark.usefixtures("podman_service")):
        test = mark(test)
    return test


AGENTS = ["builtin", "claude-code", "codex", "opencode", "gemini-cli"]
MODEL = {
    "builtin": "anthropic/claude-sonnet-4-6",
    "claude-code": "anthropic/claude-sonnet-4-6",
    "codex": "openai/gpt-5.1",
    "opencode": "anthropic/claude-sonnet-4-6",
    "gemini-cli": "google/gemini-2.5-pro",
}
BASH = {
    "builtin": ("bash", "command"),
    "claude-code": ("Bash", "command"),
    "codex": ("exec_command", "cmd"),
    "opencode": ("bash", "command"),
    "gemini-cli": ("run_shell_command", "command"),
}
# where each agent finds the staged skills (a CLI's copy, made by skillbench)
SKILL_HOME = {
    "builtin": "/skills",
    "claude-code": "~/.claude/skills",
    "codex": "~/.codex/skills",
    "opencode": "~/.config/opencode/skills",
    "gemini-cli": "~/.gemini/skills",
}
LISTED = r"(?s)Greets people politely"  # the skill's description: only the candidate sees it


def run_bash(agent: str, command: str) -> dict[str, Any]:
    tool, arg = BASH[agent]
    return {"tool_calls": [{tool: {arg: command}}]}


def sessions(run: Path) -> dict[str, dict[str, Any]]:
    journal = (run / "journal.jsonl").read_text().splitlines()
    return {r["key"]: r for r in map(json.loads, journal) if r.get("type") == "session"}


def shell(agent: str, command: str) -> dict[str, Any]:
    return run_bash(agent, command.format(home=SKILL_HOME[agent]))


def eval_with(tmp_path: Path, capsys, fake, agent: str, first: dict[str, Any], expect: bool):
    """One case (`expect_activation: expect`) where the candidate's first turn is `first`."""
    folder = skill(
        tmp_path,
        {
            "scripts/hello.sh": "#!/bin/sh\necho hi > hello.txt\n",
            "evals/cases/sum.yaml": (
                f"task: Write the sum of 2 and 3 to out.txt\nexpect_activation: "
                f"{str(expect).lower()}\nchecks:\n  - file_exists: out.txt\n"
            ),
        },
        config=f'agent = "{agent}"\n',
    )
    out = run_bash(agent, "echo 5 > out.txt")
    fake(
        {
            "conversations": [
                conv(LISTED, "sum of 2", first, out, {"text": "done"}),
                conv("(?s)", "sum of 2", out, {"text": "done"}),
            ]
        }
    )
    _, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--model", MODEL[agent]
    )
    return summary, lines, sessions(tmp_path / "run")


@e2e
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(
    "how",
    [
        "cd {home}/greeter/scripts && cat ../SKILL.md",
        "echo 'sh {home}/greeter/scripts/hello.sh' | sh",
    ],
    ids=["cd-dotdot", "echo-sh"],
)
def test_a_hidden_read_loses_the_row_where_the_skill_should_stay_out(
    agent: str, how: str, fake, tmp_path: Path, capsys
) -> None:
    summary, lines, recorded = eval_with(
        tmp_path, capsys, fake, agent, shell(agent, how), expect=False
    )
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("loss", "activation"), lines
    cand = recorded["sum.candidate.1"]
    assert cand["loaded"] == ["greeter"]
    assert cand["observed"]["greeter"] in (["SKILL.md"], ["scripts/hello.sh"])
    assert cand.get("declared", []) == []
    assert recorded["sum.baseline.1"]["loaded"] == []
    assert "  seen: a file of it opened in 1, only its skill tool's call in 0" in lines


@e2e
def test_the_skill_tool_of_claude_code_is_a_declared_load(fake, tmp_path: Path, capsys) -> None:
    """Claude Code's `Skill` tool serves the SKILL.md its start-up read (before the watch):
    it opens nothing, and its own call is the load (the record says which)."""
    load = {"tool_calls": [{"Skill": {"skill": "greeter"}}]}
    _, lines, recorded = eval_with(tmp_path, capsys, fake, "claude-code", load, expect=True)
    cand = recorded["sum.candidate.1"]
    assert (cand["loaded"], cand["declared"], cand.get("observed", {})) == (
        ["greeter"],
        ["greeter"],
        {},
    ), lines
    assert "  seen: a file of it opened in 0, only its skill tool's call in 1" in lines


@e2e
@pytest.mark.parametrize("agent", AGENTS)
def test_a_mention_or_a_same_named_file_is_no_load(
    agent: str, fake, tmp_path: Path, capsys
) -> None:
    """The candidate names the skill's path in a grep, a commit message and a here-document,
    and reads a SKILL.md of its own under a `skills/greeter` folder: the skill never loaded
    (on the old code each of these was a load). Nor do its tries to make the CLI open the
    copy for it: opening it to write, touching it, adding a skill beside it."""
    how = (
        "mkdir -p /work/repo/skills/greeter && echo x > /work/repo/skills/greeter/SKILL.md && "
        "cat /work/repo/skills/greeter/SKILL.md && grep -rn 'skills/greeter' /work; "
        "cat > /work/notes.md <<'EOF'\nsee {home}/greeter/SKILL.md\nEOF\n"
        "echo x >> {home}/greeter/SKILL.md; touch {home}/greeter/SKILL.md; "
        "mkdir -p {home}/other && printf -- '---\\nname: other\\ndescription: o\\n---\\n' > "
        "{home}/other/SKILL.md; sleep 2; true"
    )
    summary, lines, recorded = eval_with(
        tmp_path, capsys, fake, agent, shell(agent, how), expect=True
    )
    cand = recorded["sum.candidate.1"]
    assert (cand["loaded"], cand.get("observed", {})) == ([], {}), lines
    assert summary["activation"]["fired"] == 0
    assert not any(line.startswith("  seen:") for line in lines)
