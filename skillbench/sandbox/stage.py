"""Arm staging: seed a fresh sandbox for one arm in the order of docs/statistics.md, then hand its
workspace to a checker the agent could not touch (docs/trust.md).

fixture → inline files → `setup` → the skill(s), read-only under /skills (a host folder
bind-mounted read-only from the start and filled from the host). All of it runs as the
agent user. `start_checker` starts the checker, a fresh sandbox from the same image on the
same /work, while the agent works: it runs nothing until the handover. After the agent
phase, `check_phase` stops the agent's sandbox (every agent process gone, the kernel's word:
Sandbox.stop), hands /work to the `checker` user (inside/handover.py: no link the agent made leads
to the answer key, no file stays locked) and shows the skill's `evals/` read-only under
/case. Only /work crosses over; the agent's sandbox never sees /case. The stopped sandbox is
removed with the arm, off the session's critical path. What the checker runs with (its
environment, `skillbench` on its PATH) is checker_env.py.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from skillbench.evals.model import Session
from skillbench.evals.skills import copy_for_staging
from skillbench.sandbox.base import (
    CASE_DIR,
    CHECKER,
    ROOT,
    SKILLS_DIR,
    WORKDIR,
    Mount,
    Pod,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
    Workspace,
)
from skillbench.sandbox.checker_env import container_env, tool_mounts

SETUP_TIMEOUT = 60.0
SETUP_CASE = "/tmp/case"  # $CASE for `setup`, in the agent's sandbox until setup ends


class SetupFailed(Exception):
    """The case's `setup` failed: the case is dropped, it does not count against an arm."""

    def __init__(self, case: str, exit_code: int, stderr: str, timed_out: bool):
        self.case, self.exit_code, self.stderr, self.timed_out = case, exit_code, stderr, timed_out
        why = "timed out after 60 s" if timed_out else f"exited {exit_code}"
        super().__init__(f"setup of case {case!r} {why}: {stderr.strip()[-500:]}")


class ContaminationError(Exception):
    """A skill is visible in an arm that did not stage it, or missing from one that did."""


class StagedArm(msgspec.Struct):
    """A sandbox seeded for one arm, its workspace, and the host folders behind its
    read-only mounts; after `check_phase`, also the checker sandbox (`opening` while
    `start_checker` starts it). With the case's services, the pod both sandboxes joined."""

    sandbox: Sandbox
    workspace: Workspace
    skills: tuple[str, ...]
    host_dir: str  # holds skills/ and case/, removed on close
    checker: Sandbox | None = None
    handover: list[str] = []  # what the handover to the checker cut or copied
    pod: Pod | None = None
    opening: asyncio.Future[Sandbox] | None = None
    agent_volumes: tuple[str, ...] = ()  # where the case's volumes the agent had are

    async def close(self) -> None:
        """Destroy the sandboxes, the services, the workspace and the host folders. A
        checker still starting is waited for and destroyed too."""
        try:
            if self.opening is not None and self.checker is None:
                # asyncio.wait, not await: cancelling this close must not cancel the
                # creation (its container would be left to the provider's final sweep)
                await asyncio.wait({self.opening})
                if not self.opening.cancelled() and self.opening.exception() is None:
                    self.checker = self.opening.result()
            for box in (self.sandbox, self.checker):
                if box is not None:
                    await box.close()
            if self.pod is not None:
                await self.pod.close()
            await self.workspace.close()
        finally:
            shutil.rmtree(self.host_dir, ignore_errors=True)


async def stage_arm(
    provider: SandboxProvider,
    spec: SandboxSpec,
    session: Session,
    skills: Mapping[str, Path],
    *,
    scratch: Path | None = None,
    case: Path | None = None,
    under_test: str | None = None,
) -> StagedArm:
    """Create a sandbox and seed it for `session` with `skills` (name -> folder) staged
    under /skills/<name> (none = the baseline). The case's services start first, in a pod
    of the arm's own that the sandbox joins: they are healthy before anything is staged.
    `case`: the case's own folder on the host, shown to `setup` as $CASE (plan.setup_case)
    and removed before the agent starts. `under_test`: the name of the skill under test,
    copied into the workspace too when the session has `skill_in_workspace` and the arm
    stages it (the baseline does not)."""
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    host_dir = Path(tempfile.mkdtemp(prefix="arm-", dir=scratch))
    (host_dir / "skills").mkdir()
    mounts = (Mount(str(host_dir / "skills"), SKILLS_DIR, read_only=True),)
    workspace = pod = None
    try:
        workspace = await provider.workspace(spec.disk)
        pod = await provider.pod(spec) if needs_pod(spec) else None
        sandbox = await provider.create(
            msgspec.structs.replace(
                spec,
                mounts=spec.mounts + mounts,
                workspace=workspace.name,
                pod=pod.name if pod else None,
                shared=shared_mounts(spec, pod, agent=True),
            )
        )
    except BaseException:
        await _undo(pod, workspace, host_dir)
        raise
    names = tuple(sorted(skills))
    arm = StagedArm(
        sandbox,
        workspace,
        names,
        str(host_dir),
        pod=pod,
        agent_volumes=tuple(v.path for v in spec.volumes if v.agent),
    )
    try:
        if sandbox.workdir != WORKDIR:  # what the image had there came in as root's
            owned = await sandbox.exec(
                ["chown", "-R", "-h", "agent:agent", sandbox.workdir], user=ROOT, timeout=120
            )
            if not owned.ok:
                raise SandboxError(
                    f"could not hand {sandbox.workdir} to the agent: {owned.stderr.strip()[-300:]}"
                )
        if session.skill_in_workspace and under_test is not None and under_test in skills:
            # first, as skill-optimizer copies references before workspace/ (workspace.ts)
            seed = host_dir / "workspace-skill"
            copy_for_staging(skills[under_test], seed / session.skill_in_workspace)
            await sandbox.put_tree(seed, sandbox.workdir)
        if session.fixture:
            await sandbox.put_tree(Path(session.fixture), sandbox.workdir)
        for rel, content in session.files.items():
            await sandbox.write_file(rel, content)
        if session.setup:
            await _setup(sandbox, session, case)
        for name, folder in skills.items():
            copy_for_staging(folder, host_dir / "skills" / name)
        await sandbox.sync_skills()
        await guard_contamination(sandbox, names)
    except BaseException:
        await arm.close()
        raise
    return arm


def needs_pod(spec: SandboxSpec) -> bool:
    """Whether the arm gets a pod: for the case's services, or its volumes."""
    return bool(spec.services or spec.volumes)


def shared_mounts(spec: SandboxSpec, pod: Pod | None, *, agent: bool) -> dict[str, str]:
    """The pod's volumes a sandbox of the arm mounts: the checker all of the case's, the
    agent's sandbox those compose gave `main` (`agent`)."""
    if pod is None:
        return {}
    return {pod.volumes[v.name]: v.path for v in spec.volumes if v.agent or not agent}


async def _undo(pod: Pod | None, workspace: Workspace | None, host_dir: Path) -> None:
    """Remove what an arm's start made before it failed: its pod, workspace and host folder."""
    if pod is not None:
        await pod.close()
    if workspace is not None:
        await workspace.close()
    shutil.rmtree(host_dir, ignore_errors=True)


async def _setup(sandbox: Sandbox, session: Session, case: Path | None) -> None:
    """The case's `setup`, as the agent user in the workspace. With `case`, its own folder
    (a skill-optimizer suite's checks/, say) is at $CASE while it runs, read-only, as it is
    for its graders, and gone before the agent starts: it may hold the answers."""
    assert session.setup is not None
    env: dict[str, str] = {}
    if case is not None:
        await sandbox.put_tree(case, SETUP_CASE)  # (the root filesystem is read-only)
        await sandbox.exec(["chmod", "-R", "a-w", SETUP_CASE], timeout=30)
        env["CASE"] = SETUP_CASE
    try:
        done = await sandbox.exec(
            ["/bin/sh", "-ce", session.setup], cwd=sandbox.workdir, env=env, timeout=SETUP_TIMEOUT
        )
    finally:
        if case is not None:
            gone = await sandbox.exec(["rm", "-rf", SETUP_CASE], user=ROOT, timeout=60)
            if not gone.ok:
                raise SandboxError(f"could not remove {SETUP_CASE} after setup: {gone.stderr}")
    if not done.ok:
        raise SetupFailed(session.name, done.exit_code, done.stderr, done.timed_out)


async def guard_contamination(sandbox: Sandbox, expected: Sequence[str]) -> None:
    """Refuse the arm unless exactly the expected skills are visible (docs/statistics.md)."""
    listing = await sandbox.exec(["ls", "-1A", SKILLS_DIR], timeout=30)
    if not listing.ok:  # the sandbox failed (killed, say): no evidence either way
        raise SandboxError(
            f"could not list {SKILLS_DIR}: exit {listing.exit_code} {listing.stderr.strip()[-200:]}"
        )
    seen = sorted(listing.stdout.split())
    if seen != sorted(expected):
        raise ContaminationError(
            f"skills visible in the sandbox {seen or 'none'} differ from those staged "
            f"{sorted(expected) or 'none'}"
        )


def start_checker(
    provider: SandboxProvider,
    spec: SandboxSpec,
    arm: StagedArm,
    skill_dir: Path,
    harbor: str | None = None,
) -> None:
    """Start the arm's checker (see check_phase) in the background, to be ready when the
    agent is done: its creation is then off the session's critical path. Its executor runs
    nothing until the handover, in namespaces of its own (PIDs, mounts, and the network
    unless the arm has a pod), from a host socket folder only it mounts: the agent can
    neither see nor reach it. In a pod the network namespace is shared, so a checker that
    would listen there (the verifier's egress relay, on the agent's loopback) is not started
    early: check_phase starts it, as late as it can."""
    if arm.pod is None or spec.egress is None:
        _begin_checker(provider, spec, arm, skill_dir, harbor)


def _begin_checker(
    provider: SandboxProvider,
    spec: SandboxSpec,
    arm: StagedArm,
    skill_dir: Path,
    harbor: str | None,
) -> None:
    if arm.opening is None:
        arm.opening = asyncio.ensure_future(
            _open_checker(
                provider, spec, arm.workspace, Path(arm.host_dir), skill_dir, harbor, arm.pod
            )
        )


async def check_phase(
    provider: SandboxProvider,
    spec: SandboxSpec,
    arm: StagedArm,
    skill_dir: Path,
    harbor: str | None = None,
) -> Sandbox:
    """After the agent phase: the checker sandbox, where checks run (docs/trust.md).

    A fresh sandbox from the same image mounts the arm's workspace and the skill's `evals/`
    at /case, read-only (started by `start_checker` during the agent phase, or now); then
    the agent's sandbox is stopped, every agent process gone before anything else happens
    (Sandbox.stop), and /work is handed to the `checker` user (Sandbox.hand_over; its notes
    are kept on the arm). The checker's root filesystem, HOME and /tmp are new; its
    environment is CHECK_ENV (checker_env.py); with the case's `as_root` naming `verifier`
    its root filesystem is a writable layer for those scripts (docs/trust.md). The checker
    is running before the agent's sandbox stops because the workspace lives only while a
    sandbox holds it. It joins the arm's pod, so checks may query the case's services
    (which outlive the agent's sandbox). The stopped sandbox is removed by
    StagedArm.close. `harbor`: a Harbor task's folder under evals/ (harbor_mounts).
    """
    _begin_checker(provider, spec, arm, skill_dir, harbor)
    assert arm.opening is not None
    # shielded: a cancelled session leaves the creation to finish, and close() removes it
    arm.checker = await asyncio.shield(arm.opening)
    await arm.sandbox.stop()
    await _hand_over(arm)
    await _harbor_logs(arm.checker, harbor)
    return arm.checker


async def recheck_phase(
    provider: SandboxProvider,
    spec: SandboxSpec,
    archive: Path,
    skill_dir: Path,
    scratch: Path,
    harbor: str | None = None,
) -> StagedArm:
    """A checker for a reused session (its checks run again against the current check files):
    a fresh workspace holding what the session's own check phase was handed (`archive`, from
    Sandbox.save_archive), handed over once more. No agent sandbox: its `sandbox` is the
    checker too."""
    scratch.mkdir(parents=True, exist_ok=True)
    host_dir = Path(tempfile.mkdtemp(prefix="recheck-", dir=scratch))
    workspace = pod = None
    try:
        workspace = await provider.workspace(spec.disk)
        # the case's services, fresh: what the session did to its own is gone with it
        pod = await provider.pod(spec) if needs_pod(spec) else None
        checker = await _open_checker(provider, spec, workspace, host_dir, skill_dir, harbor, pod)
    except BaseException:
        await _undo(pod, workspace, host_dir)
        raise
    arm = StagedArm(checker, workspace, (), str(host_dir), checker=checker, pod=pod)
    try:
        await checker.load_archive(archive, spec.workdir)
        await _hand_over(arm)
        await _harbor_logs(checker, harbor)
    except BaseException:
        await arm.close()
        raise
    return arm


async def _open_checker(
    provider: SandboxProvider,
    spec: SandboxSpec,
    workspace: Workspace,
    host_dir: Path,
    skill_dir: Path,
    harbor: str | None,
    pod: Pod | None = None,
) -> Sandbox:
    """A fresh checker sandbox on `workspace`, with the skill's current `evals/` at /case
    (and a Harbor task's files where Harbor puts them)."""
    case = host_dir / "case"
    evals = skill_dir / "evals"
    if evals.is_dir():
        # links are followed: an eval may point at a script the skill ships
        shutil.copytree(evals, case, symlinks=False)
    else:
        case.mkdir()
    checker_spec = msgspec.structs.replace(
        spec,
        user=CHECKER,
        handover=True,
        sealed=True,
        workspace=workspace.name,
        pod=pod.name if pod else None,
        shared=shared_mounts(spec, pod, agent=False),
        env={**spec.env, **container_env()},
        # a verifier written for root (`as_root`) installs what it needs, as in its source
        writable_root="verifier" in spec.as_root,
        logs=True,
        mounts=(
            *spec.mounts,
            Mount(str(case), CASE_DIR, read_only=True),
            *harbor_mounts(case, harbor, ("tests", "solution")),
            *tool_mounts(host_dir, provider.channel),
        ),
    )
    return await provider.create(checker_spec)


def harbor_mounts(evals: Path, harbor: str | None, parts: Sequence[str]) -> tuple[Mount, ...]:
    """A Harbor task's `parts` (tests, solution) at Harbor's absolute paths, read-only: its
    test.sh runs unmodified. Each is a mount point of its own, so the handover cuts every
    agent link into it (a link may stay only when it leads into /work or the image)."""
    if harbor is None:
        return ()
    folder = evals / harbor
    return tuple(
        Mount(str(folder / part), f"/{part}", read_only=True)
        for part in parts
        if (folder / part).is_dir()
    )


async def _harbor_logs(checker: Sandbox, harbor: str | None) -> None:
    """The folders Harbor makes before its verifier runs, fresh on the checker's own /logs
    (after the handover: nothing of the agent's is there)."""
    if harbor is None:
        return
    done = await checker.exec(["mkdir", "-p", *HARBOR_LOGS], timeout=30)
    if not done.ok:
        raise SandboxError(f"could not make {' and '.join(HARBOR_LOGS)}: {done.stderr[-200:]}")


HARBOR_LOGS = ("/logs/verifier", "/logs/agent")


async def _hand_over(arm: StagedArm) -> None:
    assert arm.checker is not None
    try:
        arm.handover = await arm.checker.hand_over(CHECKER, arm.agent_volumes)
    except OSError as exc:
        raise SandboxError(f"could not hand the workspace to the checker: {exc}") from None


async def missing_requirements(sandbox: Sandbox, requires: Sequence[str]) -> list[str]:
    """The `requires` entries the sandbox image lacks: programs, or `python3:<module>`."""
    missing = []
    for item in requires:
        probe = await sandbox.exec(requirement_probe(item), timeout=30)
        if not probe.ok:
            missing.append(item)
    return missing


def requirement_probe(item: str) -> str:
    """The shell command that succeeds when an image has the `requires` entry `item`."""
    if item.startswith("python3:"):
        return f"python3 -c {shlex.quote('import ' + item.split(':', 1)[1])}"
    return f"command -v {shlex.quote(item)} >/dev/null"
