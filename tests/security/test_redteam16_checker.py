"""Sixteenth outside review (issue 38), the check phase: git configs the first handover tames
(real podman, the handover and the checker as a run has them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skillbench.evals.model import Check
from skillbench.grading.expect import numbered
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.helpers import BASE, CAND, bash, conv, grader_reply, run_eval, skill
from tests.security.test_redteam11_checker import checked

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]
CANARY = "(the canary).canary"  # its place in numbered() is fixed, whatever it names

# one subsection 1,000 bytes long, 120,000 keys under it (721 KB, under the 1 MiB cap)
MANY_KEYS = r"""
python3 - <<'PY'
import itertools, os
a = 'abcdefghijklmnopqrstuvwxyz0123456789'
keys = itertools.islice(itertools.product(a, repeat=4), 120000)
os.makedirs('r1', exist_ok=True)
open('r1/HEAD', 'w').write('ref: refs/heads/main\n')
open('r1/config', 'w').write('[a "' + 's' * 1000 + '"]\n' + ''.join('b' + ''.join(k) + '\n' for k in keys))
PY
"""


async def test_a_git_config_of_many_keys_is_emptied_quickly(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """Each key was looked up in a list of the keys to drop (quadratic, and each comparison
    a memcmp of the long shared prefix), uncharged and unclocked: the first handover outlasted
    the host's wait, the sandbox was declared hung and a losing arm's row went unscored."""
    started = time.monotonic()
    results = await checked(
        provider,
        spec,
        tmp_path,
        "true",
        [Check("command_succeeds", "test -f r1/config && test ! -s r1/config")],
        prep=f" && {{ {MANY_KEYS} }}",
    )
    assert time.monotonic() - started < 120
    assert results[0].passed, results[0].detail


async def test_a_git_config_linked_to_a_root_only_image_file_is_not_read_for_the_agent(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """The handover, as root, copied what a linked config led to into the workspace: a link
    to /etc/shadow (or a key a case image keeps for its root verifier) was handed to the
    candidate's code, the model grader and the kept workspace."""
    results = await checked(
        provider,
        spec,
        tmp_path,
        "true",
        [
            Check("command_succeeds", "! cat /etc/shadow"),  # (root's only, as the test needs)
            Check("command_succeeds", "test -f r/config && ! grep -q root: r/config"),
        ],
        prep=" && mkdir r && echo 'ref: refs/heads/main' > r/HEAD && ln -s /etc/shadow r/config",
    )
    assert [r.passed for r in results] == [True, True], results


# the candidate's code, run by a check, leaves a folder 1,500 deep in the checker's HOME
DEEP_HOME = (
    "cat > solve.sh <<'SH'\npython3 -c 'import os\nos.chdir(os.path.expanduser(\"~\"))\n"
    'for i in range(1500):\n    os.mkdir("d"); os.chdir("d")\'\nexit 1\nSH'
)


@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_folder_too_deep_for_the_sweep_does_not_abort_the_run(fake, tmp_path, capsys) -> None:
    """Round 17: the sweep after a check emptied HOME with shutil.rmtree, which recursed once
    a level: RecursionError made every later command of the checker an OSError, and the
    model grader's listing let it out of the session: no summary, no receipt."""
    texts = ["The file solve.sh exists"]
    case = "task: Task deep\nchecks:\n  - command_succeeds: bash solve.sh\n"
    folder = skill(tmp_path, {"evals/cases/deep.yaml": case + f"  - expect: {texts[0]}\n"})
    verdict = grader_reply([(i, t == texts[0], "solve.sh") for i, t in numbered(texts, CANARY)])
    fake(
        {
            "rules": [{"when": "## Expectations", "replies": [verdict]}],
            "conversations": [
                conv(CAND, "Task deep", bash(DEEP_HOME), {"text": "done"}),
                conv(BASE, "Task deep", bash("echo true > solve.sh"), {"text": "done"}),
            ],
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    (row,) = summary["rows"]
    assert (row["outcome"], row["decided_by"]) == ("loss", "checks"), (code, lines, row)


@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_the_grader_reads_the_workspace_before_a_root_verifier_runs(fake, tmp_path, capsys) -> None:
    """Round 17: the model grader listed the workspace after every check, the root verifier's
    too: the candidate's code it ran as root rewrote what the grader graded (41 became 42)
    and put a root-only image file (/etc/shadow) in front of the grader."""
    texts = ["The file answer.txt says 42"]
    case = (
        "task: Task root\nas_root: [verifier]\nchecks:\n  - verifier: tests/v.sh\n"
        f"  - expect: {texts[0]}\n"
    )
    verifier = "#!/bin/bash\nbash /work/solve.sh\nexit 0\n"
    solve = (
        "cat > solve.sh <<'SH'\necho 42 > /work/answer.txt\ncp /etc/shadow /work/shadow.txt\n"
        "chmod 644 /work/shadow.txt\nSH\necho 41 > answer.txt"
    )
    folder = skill(tmp_path, {"evals/cases/r.yaml": case, "evals/cases/tests/v.sh": verifier})
    yes = grader_reply([(i, t == texts[0], "42") for i, t in numbered(texts, CANARY)])
    no = grader_reply([(i, False, "41") for i, _ in numbered(texts, CANARY)])
    server = fake(
        {
            "rules": [
                {"when": "(?s)## Expectations.*== answer.txt \\(3 bytes\\)\\n42", "replies": [yes]},
                {"when": "## Expectations", "replies": [no]},
            ],
            "conversations": [
                conv(CAND, "Task root", bash(solve), {"text": "done"}),
                conv(
                    BASE,
                    "Task root",
                    bash("echo 41 > answer.txt; echo true > solve.sh"),
                    {"text": "done"},
                ),
            ],
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    asked = [json.dumps(r.body) for r in server.log() if "## Expectations" in json.dumps(r.body)]
    assert len(asked) == 2 and not any("root:" in a for a in asked), asked
    (row,) = summary["rows"]
    assert row["outcome"] == "tie", (lines, row)  # (both left 41: both fail the expectation)


# 62,000 empty files in a folder about 1,800 deep: past the walk after a check
TAINT = r"""cat > solve.sh <<'SH'
python3 - <<'PY'
import os
os.chdir('/work')
for i in range(1800):
    os.mkdir('d'); os.chdir('d')
for i in range(62000):
    os.close(os.open(str(i), os.O_CREAT | os.O_WRONLY, 0o644))
PY
exit 1
SH
"""


@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_checker_tainted_in_a_suite_fails_the_later_rewards(fake, tmp_path, capsys) -> None:
    """Round 18: the candidate's code, run by the first sub-case's check, tainted the
    checker; the next sub-case's clearing of its reward file was refused, raised, and the
    session became an error: both rows unscored instead of lost."""
    suite = (
        "task: Task suite\ncases:\n"
        "  - name: a\n    checks:\n      - command_succeeds: bash solve.sh\n"
        "  - name: b\n    checks:\n      - reward: {file: reward.txt, run: r.sh}\n"
    )
    files = {"evals/suite.yaml": suite, "evals/r.sh": "echo 1 > /work/reward.txt\n"}
    folder = skill(tmp_path, files)
    fake(
        {
            "conversations": [
                conv(CAND, "Task suite", bash(TAINT), {"text": "done"}),
                conv(BASE, "Task suite", bash("echo true > solve.sh"), {"text": "done"}),
            ],
        }
    )
    _, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only")
    assert [r["outcome"] for r in summary["rows"]] == ["loss", "loss"], (lines, summary["rows"])
