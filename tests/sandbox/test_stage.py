"""Arm staging against real podman: seeding order, setup failures, the contamination guard,
the checker after the agent phase, and the requires probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.evals import load_case
from skillbench.sandbox.base import SandboxError, SandboxSpec
from skillbench.sandbox.podman.provider import OWNER_LABEL, PodmanProvider, _owner
from skillbench.sandbox.stage import (
    ContaminationError,
    SetupFailed,
    check_phase,
    guard_contamination,
    missing_requirements,
    stage_arm,
)
from tests.conftest import CHANNELS
from tests.helpers import make_skill

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

CASE = """
task: Use the skill
fixture: ../fixtures/seed
files:
  inline.txt: "inline\\n"
setup: |
  test -f seed.txt && test -f inline.txt
  ls -A /skills > seen-by-setup.txt
  echo setup-ran > setup.txt
checks:
  - file_exists: out.txt
"""


def skill_with_case(tmp_path: Path, case: str = CASE) -> Path:
    return make_skill(
        tmp_path,
        "demo",
        {
            "scripts/tool.sh": "echo tool\n",
            "evals/cases/use.yaml": case,
            "evals/fixtures/seed/seed.txt": "seed\n",
            "fixtures/top.txt": "not staged\n",
        },
    )


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_seeding_order_and_skill_visibility(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = skill_with_case(tmp_path)
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        box = arm.sandbox
        assert await box.read_text("seed.txt") == "seed\n"
        assert await box.read_text("inline.txt") == "inline\n"
        assert await box.read_text("setup.txt") == "setup-ran\n"
        assert await box.read_text("seen-by-setup.txt") == ""  # setup runs before the skill
        listing = await box.exec("find /skills -type f | sort")
        assert listing.stdout.split() == ["/skills/demo/SKILL.md", "/skills/demo/scripts/tool.sh"]
        assert arm.skills == ("demo",)
    finally:
        await arm.close()
    assert not Path(arm.host_dir).exists()


@pytest.mark.parametrize("channel", CHANNELS, indirect=True)
async def test_baseline_sees_no_skill(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = skill_with_case(tmp_path)
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    arm = await stage_arm(provider, spec, case, {}, scratch=tmp_path)
    try:
        assert (await arm.sandbox.exec("ls -A /skills")).stdout == ""
        # the guard refuses an arm that can see a skill it did not stage
        (Path(arm.host_dir) / "skills/demo").mkdir()
        await arm.sandbox.sync_skills()  # (a bind mount shows it at once; the api copies it)
        with pytest.raises(ContaminationError, match=r"\['demo'\] differ from those staged none"):
            await guard_contamination(arm.sandbox, arm.skills)
        (Path(arm.host_dir) / "skills/demo").rmdir()
        await arm.sandbox.sync_skills()
        # ... and one where a skill it did stage is missing
        with pytest.raises(ContaminationError, match=r"none differ from those staged \['other'\]"):
            await guard_contamination(arm.sandbox, ["other"])
        # a listing that fails (a sandbox being killed, say) is no evidence of contamination:
        # an infrastructure error, retried, never a refused run
        (Path(arm.host_dir) / "skills").chmod(0o000)
        if provider.channel == "api":  # (a copy: the lock goes on the sandbox's side)
            assert (await arm.sandbox.exec(["chmod", "000", "/skills"], user="root")).ok
        with pytest.raises(SandboxError, match="could not list /skills"):
            await guard_contamination(arm.sandbox, [])
        (Path(arm.host_dir) / "skills").chmod(0o755)
    finally:
        await arm.close()


async def test_failing_setup_drops_the_case_and_removes_the_sandbox(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = skill_with_case(tmp_path, "task: t\nsetup: echo broken >&2; exit 4\n")
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    mine = {"label": f"{OWNER_LABEL}={_owner()}"}  # other processes may run sandboxes too
    witness = await provider.create(spec)  # proves the filter finds this process's sandboxes
    before = {c.id for c in provider.client().containers.list(all=True, filters=mine)}
    assert witness.ctr_id in before
    await witness.close()
    before.discard(witness.ctr_id)
    with pytest.raises(SetupFailed) as info:
        await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    assert info.value.exit_code == 4 and "broken" in info.value.stderr
    assert str(info.value) == "setup of case 'use' exited 4: broken"
    after = {c.id for c in provider.client().containers.list(all=True, filters=mine)}
    assert after <= before


async def test_check_phase_is_a_fresh_checker_on_the_same_work(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    skill = skill_with_case(tmp_path)
    case, _ = load_case(skill / "evals/cases/use.yaml", skill)
    arm = await stage_arm(provider, spec, case, {skill.name: skill}, scratch=tmp_path)
    try:
        box = arm.sandbox
        assert (await box.exec("ls -A /case")).exit_code != 0  # the agent has no /case at all
        await box.exec("echo made > result.txt; echo home > ~/h; echo t > /tmp/t")
        await box.exec("sleep 600 >/dev/null 2>&1 &")
        checker = await check_phase(provider, spec, arm, skill)
        got = await checker.exec(
            "head -1 $CASE/cases/use.yaml; cat result.txt; id -un; stat -c %U result.txt; "
            "ls -A ~ /tmp | grep -cx 'h\\|t' || true; ps -eo args | grep -c '^sleep 600' || true; "
            "echo $PYTHONNOUSERSITE $HOME"
        )
        assert got.stdout.split("\n")[:7] == [
            "task: Use the skill",
            "made",
            "checker",
            "checker",
            "0",
            "0",
            "1 /home/checker",
        ]
        assert (await checker.exec("touch /case/x")).exit_code != 0
        with pytest.raises(SandboxError):  # the agent's sandbox is gone, with its processes
            await box.exec("true")
    finally:
        await arm.close()


async def test_requires_probe(provider: PodmanProvider, spec: SandboxSpec) -> None:
    box = await provider.create(spec)
    try:
        got = await missing_requirements(box, ["git", "python3:json", "codex", "python3:nosuchmod"])
        assert got == ["codex", "python3:nosuchmod"]
    finally:
        await box.close()
