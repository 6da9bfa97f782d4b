"""`eval --oracle` (issue 17): prove the checks work before paying for models. Each case with
a reference solution (`oracle:`, e.g. an imported Harbor `solution/solve.sh` or Margin
`oracle/solve.sh`) runs that script instead of an agent, in a sandbox staged like a baseline
arm, and then every check must pass in the checker. No model is called."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import msgspec

from skillbench.agents.builtin.agent import BuiltinAgent
from skillbench.checks import CheckResult, run_checks
from skillbench.config import sandbox_spec
from skillbench.engine.plan import (
    EvalError,
    EvalOptions,
    build_case_images,
    case_home,
    case_spec,
    sessions_of,
    validated,
)
from skillbench.evals.model import Session, Suite
from skillbench.sandbox import make_provider
from skillbench.sandbox.base import SandboxError, SandboxProvider, SandboxSpec
from skillbench.sandbox.image import image_exists
from skillbench.sandbox.stage import SetupFailed, check_phase, stage_arm
from skillbench.transcript import Transcript

ORACLE_DIR = "/tmp/oracle"  # where the reference solution's folder is put in the sandbox


class OracleResult(msgspec.Struct, frozen=True):
    case: str
    passed: bool | None  # None: no reference solution, or it could not run
    checks: list[CheckResult] = []
    note: str = ""


async def oracle_run(
    opts: EvalOptions, log: Callable[[str], None] = lambda _: None
) -> list[OracleResult]:
    """Run every case's reference solution and its checks; one result per case."""
    skill_dir = Path(opts.skill_dir)
    _, assets = validated(skill_dir)
    if not image_exists(opts.image):
        raise EvalError(
            f"the sandbox image {opts.image} is missing: run `skillbench image "
            "build` (or `make setup`)"
        )
    sessions = sessions_of(assets, opts.case)
    images, unavailable = await asyncio.to_thread(
        build_case_images, sessions, opts.image, BuiltinAgent(), log
    )
    provider = make_provider()
    spec = sandbox_spec(opts.settings, opts.image)
    gate = asyncio.Semaphore(opts.settings.parallel)

    async def one(name: str, session: Session) -> OracleResult:
        if session.oracle is None:
            return OracleResult(name, None, note="no reference solution (`oracle:`)")
        if name in unavailable:
            return OracleResult(name, None, note=unavailable[name])
        own = case_spec(spec, session, images.get(name))
        async with gate:
            return await _solve(provider, own, skill_dir, name, session)

    try:
        return list(await asyncio.gather(*(one(n, s) for n, s in sessions.items())))
    finally:
        await provider.aclose()


async def _solve(
    provider: SandboxProvider, spec: SandboxSpec, skill_dir: Path, name: str, session: Session
) -> OracleResult:
    assert session.oracle is not None
    script = skill_dir / "evals" / session.oracle
    try:
        staged = await stage_arm(provider, spec, session, {})
    except SetupFailed as exc:
        return OracleResult(name, None, note=f"setup failed: {exc}")
    except SandboxError as exc:
        return OracleResult(name, None, note=f"sandbox: {exc}")
    try:
        await staged.sandbox.put_tree(script.parent, ORACLE_DIR)
        done = await staged.sandbox.exec(
            ["bash", f"{ORACLE_DIR}/{script.name}"],
            cwd=staged.sandbox.workdir,
            timeout=session.timeout_minutes * 60,
        )
        output = (done.stdout + done.stderr).strip()[-2000:]
        # what the checks read: the task, the oracle as one command, and its output
        transcript = Transcript(
            [
                {"type": "message", "role": "user", "text": session.task},
                {
                    "type": "tool_call",
                    "id": "oracle",
                    "name": "bash",
                    "arguments": {"command": f"bash {session.oracle}"},
                },
                {
                    "type": "tool_result",
                    "id": "oracle",
                    "name": "bash",
                    "text": output,
                    "is_error": not done.ok,
                    "exit_code": done.exit_code,
                },
            ]
        )
        checker = await check_phase(provider, spec, staged, skill_dir)
        home = case_home(session, skill_dir)
        checks = list(await run_checks(session.checks, transcript, checker, home))
        if isinstance(session, Suite):
            for sub in session.cases:
                checks += await run_checks(sub.checks, transcript, checker, home)
        note = "" if done.ok else f"the solution exited {done.exit_code}: {output[-300:]}"
        return OracleResult(name, all(c.passed for c in checks), checks, note)
    except SandboxError as exc:
        return OracleResult(name, None, note=f"sandbox: {exc}")
    finally:
        await staged.close()


def oracle_lines(results: list[OracleResult]) -> list[str]:
    """The `eval --oracle` report: one line per case, a line per failed check."""
    lines = []
    for r in results:
        state = {True: "PASS", False: "FAIL", None: "SKIP"}[r.passed]
        lines.append(f"oracle {state}: {r.case}" + (f" — {r.note}" if r.note else ""))
        lines += [f"  {c.name}: {c.detail}" for c in r.checks if not c.passed]
    ran = [r for r in results if r.passed is not None]
    good = sum(r.passed is True for r in ran)
    lines.append(
        f"oracle: {good} of {len(ran)} reference solution(s) pass every check"
        + (f"; {len(results) - len(ran)} case(s) skipped" if len(ran) < len(results) else "")
    )
    return lines
