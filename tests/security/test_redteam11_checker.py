"""Seventh outside review (issue 38, GR1 and GR2): the candidate's code one check runs still
reached later checks. A process that forks and lets its parent exit, over and over, was never
the pid the sweep's listing-then-kill caught, and rewrote a later verifier's reward from 0
to 1; a `.git` file ("gitdir: /tmp/evil"), or a `commondir` leading to /tmp, gave a later
check's `git status` a filter in a git folder that no handover saw."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from skillbench.checks.run import run_checks
from skillbench.evals import load_case
from skillbench.evals.model import Check
from skillbench.evals.services import Volume
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from skillbench.sandbox.stage import check_phase, stage_arm
from tests.helpers import make_skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

CASE = "task: Write solve.sh\nchecks:\n  - file_exists: solve.sh\n"
GITFILE = r"""
mv /work/.git /tmp/evil
printf 'gitdir: /tmp/evil\n' > /work/.git
git --git-dir=/tmp/evil config filter.x.clean 'sh -c "touch /tmp/filter-ran; cat"'
git --git-dir=/tmp/evil config filter.x.required true
echo '* filter=x' > /work/.gitattributes
echo changed >> /work/tracked.txt
"""
COMMONDIR = r"""
mkdir -p /tmp/common && cp -r /work/.git/. /tmp/common/
printf '/tmp/common\n' > /work/.git/commondir
git --git-dir=/tmp/common config filter.x.clean 'sh -c "touch /tmp/filter-ran; cat"'
echo '* filter=x' > /work/.gitattributes
echo changed >> /work/tracked.txt
"""
# tenth review: a `.git` that is a link to a git file (or to a link to one)
GITLINK = r"""
mv /work/.git /tmp/evil
printf 'gitdir: /tmp/evil\n' > /work/gitfile
ln -s gitfile /work/.git
git --git-dir=/tmp/evil config filter.x.clean 'sh -c "touch /tmp/filter-ran; cat"'
git --git-dir=/tmp/evil config filter.x.required true
echo '* filter=x' > /work/.gitattributes
echo changed >> /work/tracked.txt
"""
GITLINK_CHAIN = GITLINK.replace(
    "ln -s gitfile /work/.git", "ln -s gitfile /work/hop && ln -s hop /work/.git"
)
HOPPER = r"""
import os, time
if os.fork(): os._exit(0)
os.setsid()
fd = os.open("/dev/null", os.O_RDWR)
for i in (0, 1, 2): os.dup2(fd, i)
start, last = time.monotonic(), 0.0
while time.monotonic() - start < 90:
    now = time.monotonic()
    if now - last > 0.02:
        last = now
        if now - start > 2:
            open("/work/late", "w").write("alive\n")
        try:
            p = "/logs/verifier/reward.txt"
            if open(p).read().strip() == "0":
                with open(p + ".x", "w") as fh: fh.write("1\n")
                os.rename(p + ".x", p)
        except OSError:
            pass
    try:
        if os.fork():
            os._exit(0)  # the pid a listing saw is gone before its kill
    except OSError:
        time.sleep(0.001)
"""
HOP = f"""cat > /tmp/hop.py <<'PY'
{HOPPER}
PY
python3 /tmp/hop.py </dev/null >/dev/null 2>&1
sleep 0.3
"""
VERIFIER = "#!/bin/bash\nmkdir -p /logs/verifier; echo 0 > /logs/verifier/reward.txt\n"


async def checked(provider, spec, tmp_path, solve, checks, files=None, prep=""):
    skill = make_skill(tmp_path, "demo", {"evals/cases/solve.yaml": CASE, **(files or {})})
    case, _ = load_case(skill / "evals/cases/solve.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        made = await arm.sandbox.exec(
            "git init -q . && echo a > tracked.txt && git add -A && "
            "git -c user.email=a@b -c user.name=a commit -qm x" + prep,
            timeout=60,
        )
        assert made.ok, made.stderr
        await arm.sandbox.write_file(f"{arm.sandbox.workdir}/solve.sh", solve)
        checker = await check_phase(provider, spec, arm, skill)
        return await run_checks(checks, Transcript([]), checker)
    finally:
        await arm.close()


@pytest.mark.parametrize(
    "solve",
    [GITFILE, COMMONDIR, GITLINK, GITLINK_CHAIN],
    ids=["gitfile", "commondir", "gitlink", "gitlink-chain"],
)
async def test_a_git_folder_outside_the_workspace_runs_nothing_in_a_later_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path, solve: str
) -> None:
    checks = [
        Check("command_succeeds", "bash solve.sh"),  # the candidate's code
        Check(
            "command_succeeds",
            "git status -s >/dev/null 2>&1; git diff >/dev/null 2>&1; test ! -e /tmp/filter-ran",
        ),
    ]
    results = await checked(provider, spec, tmp_path, solve, checks)
    assert results[0].passed, results[0].detail
    assert results[1].passed, results[1].detail


async def test_a_process_that_keeps_changing_its_pid_is_gone_before_the_next_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    spec = msgspec.structs.replace(spec, logs=True)
    checks = [
        Check("command_succeeds", "bash solve.sh"),  # the candidate's code
        Check("command_succeeds", "sleep 4; test ! -e /work/late"),
        Check("reward", "/logs/verifier/reward.txt", script="cases/tests/v.sh"),
    ]
    files = {"evals/cases/tests/v.sh": VERIFIER}
    results = await checked(provider, spec, tmp_path, HOP, checks, files)
    assert results[0].passed, results[0].detail
    assert results[1].passed, results[1].detail  # nothing of it ran during check 2
    assert not results[2].passed, results[2].detail  # the verifier's own 0


FILTER = 'sh -c "touch /tmp/filter-ran; cat"'
TMP_GIT = f"""
git init -q /tmp
git -C /tmp config diff.external 'sh -c "touch /tmp/filter-ran"'
git -C /tmp config filter.x.clean '{FILTER}'
git -C /tmp config filter.x.required true
printf '* filter=x\\n' > /tmp/.gitattributes
printf 'import os\\nopen("/tmp/json-ran", "w")\\n' > /tmp/json.py
"""
VOLUME_GIT = f"""
cd /shared/repo
git config filter.x.clean '{FILTER}'
git config filter.x.required true
echo '* filter=x' > .gitattributes
echo changed >> t
"""


async def test_a_repository_or_module_planted_in_tmp_runs_nothing_in_a_later_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """Eighth outside review: a git folder the candidate's code made at /tmp/.git was found by
    a later check's git in a folder below /tmp (its filter and diff.external ran as the
    checker); a json.py in /tmp was imported by a check run from there."""
    checks = [
        Check("command_succeeds", "bash solve.sh"),
        Check(
            "command_succeeds",
            "d=$(mktemp -d) && cd $d && echo hi > f && git add f 2>/dev/null; "
            "git status -s >/dev/null 2>&1; git diff --no-index /dev/null f >/dev/null 2>&1; "
            "test ! -e /tmp/filter-ran",
        ),
        Check("command_succeeds", "cd /tmp && python3 -c 'import json' && test ! -e /tmp/json-ran"),
    ]
    results = await checked(provider, spec, tmp_path, TMP_GIT, checks)
    assert results[0].passed, results[0].detail
    assert results[1].passed, results[1].detail
    assert results[2].passed, results[2].detail


async def test_a_case_volumes_repositories_are_tamed_again_after_each_check(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """Eighth outside review: a case volume crosses to the checker as /work does, but only
    /work's repositories were tamed again after each command: a filter planted in one in the
    volume by one check ran in a later check's git."""
    spec = msgspec.structs.replace(spec, volumes=(Volume(name="shared", path="/shared"),))
    prep = (
        " && mkdir -p /shared/repo && cd /shared/repo && git init -q . && echo a > t && "
        "git add t && git -c user.email=a@b -c user.name=a commit -qm x"
    )
    checks = [
        Check("command_succeeds", "bash solve.sh"),
        Check(
            "command_succeeds",
            "cd /shared/repo && git status -s >/dev/null 2>&1; git diff >/dev/null 2>&1; "
            "test ! -e /tmp/filter-ran",
        ),
    ]
    results = await checked(provider, spec, tmp_path, VOLUME_GIT, checks, prep=prep)
    assert results[0].passed, results[0].detail
    assert results[1].passed, results[1].detail


MANY_GITS = """
python3 - <<'PY'
import os
for i in range(3000):
    d = f"/work/r/{i}"
    os.makedirs(d)
    open(d + "/HEAD", "w").write("ref: refs/heads/main\\n")
    open(d + "/config", "w").write("[core]\\n\\tbare = true\\n")
PY
"""


async def test_thousands_of_repositories_do_not_outlast_the_checks(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """Eighth outside review: 25,000 tiny git folders made the handover after each check
    (a git process per repository) outlast the host's wait: the sandbox was declared hung and
    a losing arm's row went unscored. Past the first 200 they are removed, not tamed."""
    checks = [
        Check("command_succeeds", "bash solve.sh"),
        Check("command_succeeds", "test $(ls /work/r | wc -l) -lt 300"),
    ]
    results = await checked(provider, spec, tmp_path, MANY_GITS, checks)
    assert results[0].passed, results[0].detail
    assert results[1].passed, results[1].detail
