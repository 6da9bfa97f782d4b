"""Arm staging: seed a fresh sandbox for one arm in the order of design §2.

fixture → inline files → `setup` → the skill(s), read-only under /skills. The skill's
`evals/` reaches the sandbox only after the agent phase, read-only under /case.
Both folders are host folders bind-mounted read-only from the start and filled from the
host at the right moment, so even root in the sandbox cannot write them.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from skillbench.sandbox.base import (
    CASE_DIR,
    SKILLS_DIR,
    WORKDIR,
    Mount,
    Sandbox,
    SandboxProvider,
    SandboxSpec,
)
from skillbench.skills import copy_for_staging
from skillbench.spec.model import Session

SETUP_TIMEOUT = 60.0


class SetupFailed(Exception):
    """The case's `setup` failed: the case is dropped, it does not count against an arm."""

    def __init__(self, case: str, exit_code: int, stderr: str, timed_out: bool):
        self.case, self.exit_code, self.stderr, self.timed_out = case, exit_code, stderr, timed_out
        why = "timed out after 60 s" if timed_out else f"exited {exit_code}"
        super().__init__(f"setup of case {case!r} {why}: {stderr.strip()[-500:]}")


class ContaminationError(Exception):
    """A skill is visible in an arm that did not stage it, or missing from one that did."""


class StagedArm(msgspec.Struct):
    """A sandbox seeded for one arm, and the host folders behind its read-only mounts."""

    sandbox: Sandbox
    skills: tuple[str, ...]
    host_dir: str  # holds skills/ and case/, removed on close

    async def close(self) -> None:
        """Destroy the sandbox and the host folders."""
        try:
            await self.sandbox.close()
        finally:
            shutil.rmtree(self.host_dir, ignore_errors=True)


async def stage_arm(
    provider: SandboxProvider,
    spec: SandboxSpec,
    session: Session,
    skills: Mapping[str, Path],
    *,
    scratch: Path | None = None,
) -> StagedArm:
    """Create a sandbox and seed it for `session` with `skills` (name -> folder) staged
    under /skills/<name> (none = the baseline)."""
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    host_dir = Path(tempfile.mkdtemp(prefix="arm-", dir=scratch))
    (host_dir / "skills").mkdir()
    (host_dir / "case").mkdir()
    mounts = (
        Mount(str(host_dir / "skills"), SKILLS_DIR, read_only=True),
        Mount(str(host_dir / "case"), CASE_DIR, read_only=True),
    )
    try:
        sandbox = await provider.create(msgspec.structs.replace(spec, mounts=spec.mounts + mounts))
    except BaseException:
        shutil.rmtree(host_dir, ignore_errors=True)
        raise
    names = tuple(sorted(skills))
    arm = StagedArm(sandbox, names, str(host_dir))
    try:
        if session.fixture:
            await sandbox.put_tree(Path(session.fixture), WORKDIR)
        for rel, content in session.files.items():
            await sandbox.write_file(rel, content)
        if session.setup:
            done = await sandbox.exec(["/bin/sh", "-ce", session.setup], cwd=WORKDIR,
                                      timeout=SETUP_TIMEOUT)  # fmt: skip
            if not done.ok:
                raise SetupFailed(session.name, done.exit_code, done.stderr, done.timed_out)
        for name, folder in skills.items():
            copy_for_staging(folder, host_dir / "skills" / name)
        await guard_contamination(sandbox, names)
    except BaseException:
        await arm.close()
        raise
    return arm


async def guard_contamination(sandbox: Sandbox, expected: Sequence[str]) -> None:
    """Refuse the arm unless exactly the expected skills are visible (design §2)."""
    listing = await sandbox.exec(["ls", "-1A", SKILLS_DIR], timeout=30)
    seen = sorted(listing.stdout.split())
    if not listing.ok or seen != sorted(expected):
        raise ContaminationError(
            f"skills visible in the sandbox {seen or 'none'} differ from those staged "
            f"{sorted(expected) or 'none'}"
        )


async def expose_case(arm: StagedArm, skill_dir: Path) -> dict[str, str]:
    """After the agent phase: stop what the agent left running, show `evals/` at /case.

    Returns the environment the checks run with (`CASE`).
    """
    await arm.sandbox.reap()
    evals = skill_dir / "evals"
    target = Path(arm.host_dir) / "case"
    if evals.is_dir():
        # links are followed: an eval may point at a script the skill ships
        shutil.copytree(evals, target, dirs_exist_ok=True, symlinks=False)
    return {"CASE": CASE_DIR}


async def missing_requirements(sandbox: Sandbox, requires: Sequence[str]) -> list[str]:
    """The `requires` entries the sandbox image lacks: programs, or `python3:<module>`."""
    missing = []
    for item in requires:
        if item.startswith("python3:"):
            cmd = f"python3 -c {shlex.quote('import ' + item.split(':', 1)[1])}"
        else:
            cmd = f"command -v {shlex.quote(item)}"
        probe = await sandbox.exec(cmd, timeout=30)
        if not probe.ok:
            missing.append(item)
    return missing
