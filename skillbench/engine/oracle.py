"""`eval --oracle` (issue 17): prove the checks work before paying for models. Each case with
a reference solution (`oracle:`, e.g. an imported Harbor `solution/solve.sh` or Margin
`oracle/solve.sh`) runs that script instead of an agent, in a sandbox staged like a baseline
arm (with $WORK, $RESULTS and the case's own folder at $CASE, as skill-optimizer runs its
`solutions/<case>/solution.sh`; the trace such a solution writes at $RESULTS/trace.jsonl is
what its graders read), and then every check must pass in the checker. A do-nothing run
(Harbor's `nop` agent: the same staging, no command) must then fail them, or the case does not
discriminate: its checks pass whatever the agent does. No model is called."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from skillbench.agents.builtin.agent import BuiltinAgent
from skillbench.checks.run import run_checks
from skillbench.config import sandbox_spec
from skillbench.engine.plan import (
    EvalError,
    EvalOptions,
    build_case_images,
    case_folder,
    case_home,
    case_spec,
    run_folder,
    sessions_of,
    setup_case,
    validated,
)
from skillbench.evals.asrun import difference_lines, differences
from skillbench.evals.kinds.scripts import RESULTS
from skillbench.evals.model import Session, Suite, timeout_note
from skillbench.evals.netreport import network_lines, networks, phase_hosts
from skillbench.results.checks import CheckResult
from skillbench.results.transcript import Transcript
from skillbench.sandbox import images_of, make_provider
from skillbench.sandbox.base import (
    ROOT,
    ImageBuildError,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
)
from skillbench.sandbox.checker_env import ROOT_SCRIPT
from skillbench.sandbox.egress import phase_proxy
from skillbench.sandbox.stage import (
    SETUP_CASE,
    SetupFailed,
    check_phase,
    harbor_mounts,
    stage_arm,
)

ORACLE_DIR = "/tmp/oracle"  # where the reference solution's folder is put in the sandbox


class OracleResult(msgspec.Struct, frozen=True):
    case: str
    passed: bool | None  # None: no reference solution, or it could not run
    checks: list[CheckResult] = []
    note: str = ""
    # did a do-nothing run pass every check too? None: not run (the solution did not pass)
    do_nothing_passed: bool | None = None

    @property
    def proven(self) -> bool:
        """The solution passes and doing nothing does not: the checks measure the task."""
        return self.passed is True and self.do_nothing_passed is False


async def oracle_run(
    opts: EvalOptions, log: Callable[[str], None] = lambda _: None
) -> list[OracleResult]:
    """Run every case's reference solution and its checks; one result per case."""
    skill_dir = Path(opts.skill_dir)
    _, assets = validated(skill_dir, opts.evals)
    try:
        images_of(opts.settings.sandbox.provider).ensure(opts.image, log)
    except ImageBuildError as exc:
        raise EvalError(str(exc)) from None
    sessions = sessions_of(assets, opts.case)
    images, unavailable = await asyncio.to_thread(
        build_case_images, sessions, opts.image, BuiltinAgent(), log
    )
    provider = make_provider(opts.settings.sandbox.provider)
    spec = sandbox_spec(opts.settings, opts.image)
    cap, mode = opts.settings.max_timeout, opts.settings.network
    for line in network_lines(networks(sessions, mode)):
        log(line)
    for name, session in list(sessions.items()):
        if session.timeout_minutes > cap:  # cut at the run's cap, said
            log(f"note: {session.path}: {timeout_note(session.timeout_minutes, cap)}")
            sessions[name] = msgspec.structs.replace(session, timeout_minutes=cap)
    for line in difference_lines(differences(sessions, cap, opts.settings.max_memory, oracle=True)):
        log(line)
    gate = asyncio.Semaphore(opts.settings.parallel)
    # where the egress proxy records the connections of a case that lists hosts
    network_dir = Path(opts.out or Path(".skillbench") / "oracle") / "network"

    async def one(name: str, session: Session) -> OracleResult:
        if session.oracle is None:
            return OracleResult(name, None, note="no reference solution (`oracle:`)")
        if name in unavailable:
            return OracleResult(name, None, note=unavailable[name])
        own = case_spec(spec, session, images.get(name), opts.settings.max_memory)
        log = network_dir / f"{name}.oracle.jsonl"
        net = session.network
        async with (
            gate,
            phase_proxy(own, phase_hosts(net.agent, mode), log, "agent") as solve_box,
            phase_proxy(own, phase_hosts(net.verifier, mode), log, "verifier") as check_box,
        ):
            solved = await _solve(provider, (solve_box, check_box), skill_dir, name, session)
            if solved.passed is not True:
                return solved
            control = await _do_nothing(provider, (solve_box, check_box), skill_dir, session)
            return msgspec.structs.replace(solved, do_nothing_passed=control)

    out = run_folder(skill_dir, opts.out, "") if opts.out is not None else None
    try:
        results = list(await asyncio.gather(*(one(n, s) for n, s in sessions.items())))
    finally:
        await provider.aclose()
    if out is not None:
        _write(out, results)
    return results


def _write(out: Path, results: list[OracleResult]) -> None:
    """`--out`: the oracle runs' results (each check with its verifier's output) as
    oracle.json, and the report as oracle.txt."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "oracle.json").write_bytes(msgspec.json.format(msgspec.json.encode(results)))
        (out / "oracle.txt").write_text("".join(line + "\n" for line in oracle_lines(results)))
    except OSError as exc:
        raise EvalError(
            f"--out {out}: cannot write the oracle results ({exc.strerror or exc}); "
            "choose another --out"
        ) from None


async def _do_nothing(
    provider: SandboxProvider,
    specs: tuple[SandboxSpec, SandboxSpec],
    skill_dir: Path,
    session: Session,
) -> bool | None:
    """Whether every check passes after a run that does nothing (None: it could not run)."""
    try:
        staged = await stage_arm(
            provider, specs[0], session, {}, case=setup_case(session, skill_dir)
        )
    except (SetupFailed, SandboxError):
        return None
    try:
        transcript = Transcript([{"type": "message", "role": "user", "text": session.task}])
        checker = await check_phase(provider, specs[1], staged, skill_dir, session.harbor)
        checks = await _checks(session, transcript, checker, skill_dir, None)
        return all(c.passed for c in checks)
    except SandboxError:
        return None
    finally:
        await staged.close()


async def _checks(
    session: Session, transcript: Transcript, checker: Any, skill_dir: Path, trace: str | None
) -> list[CheckResult]:
    """Every check of the case (and of each sub-case of a suite) against one session."""
    home = case_home(session, skill_dir)
    root = session.as_root
    checks = list(
        await run_checks(session.checks, transcript, checker, home, results_trace=trace, root=root)
    )
    if isinstance(session, Suite):
        for sub in session.cases:
            checks += await run_checks(
                sub.checks, transcript, checker, home, results_trace=trace, root=root
            )
    return checks


async def _solve(
    provider: SandboxProvider,
    specs: tuple[SandboxSpec, SandboxSpec],
    skill_dir: Path,
    name: str,
    session: Session,
) -> OracleResult:
    """The reference solution in the agent phase's sandbox (`specs[0]`), then its checks in
    a checker (`specs[1]`)."""
    assert session.oracle is not None
    script = skill_dir / "evals" / session.oracle
    # a Harbor task's solve.sh runs as Harbor runs it, from /solution (its files beside it)
    solution = harbor_mounts(skill_dir / "evals", session.harbor, ("solution",))
    run = f"/solution/{script.name}" if solution else f"{ORACLE_DIR}/{script.name}"
    # a solution written for root (`as_root: [oracle]`, Harbor's and Margin's) runs as root
    # on a writable layer, as its source runs it: no agent is in this sandbox, and the
    # solution is trusted as the suite is (docs/trust.md)
    as_root = "oracle" in session.as_root
    try:
        agent_box = msgspec.structs.replace(
            specs[0], mounts=specs[0].mounts + solution, writable_root=as_root
        )
        staged = await stage_arm(
            provider, agent_box, session, {}, case=setup_case(session, skill_dir)
        )
    except SetupFailed as exc:
        return OracleResult(name, None, note=f"setup failed: {exc}")
    except SandboxError as exc:
        return OracleResult(name, None, note=f"sandbox: {exc}")
    try:
        if not solution:
            await staged.sandbox.put_tree(script.parent, ORACLE_DIR)
        work = staged.sandbox.workdir
        env = {"WORK": work, "RESULTS": RESULTS}
        own = case_folder(session, skill_dir)
        if own is not None:  # its case's files, as skill-optimizer's solutions see them
            await staged.sandbox.put_tree(own, SETUP_CASE)
            env["CASE"] = SETUP_CASE
        done = await staged.sandbox.exec(
            ["bash", "-c", f"mkdir -p {RESULTS} && {ROOT_SCRIPT}", run]
            if as_root
            else ["bash", "-c", f'mkdir -p {RESULTS} && exec bash "$0"', run],
            cwd=work,
            timeout=session.timeout_minutes * 60,
            env=env,
            user=ROOT if as_root else None,
        )
        output = (done.stdout + done.stderr).strip()[-2000:]
        # a skill-optimizer reference solution writes the trace its graders read
        written = f"{RESULTS}/trace.jsonl"
        trace = (
            await staged.sandbox.read_text(written)
            if await staged.sandbox.exists(written)
            else None
        )
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
        checker = await check_phase(provider, specs[1], staged, skill_dir, session.harbor)
        checks = await _checks(session, transcript, checker, skill_dir, trace)
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
        note = r.note
        if r.do_nothing_passed:
            state = "NOT-DISCRIMINATING"
            note = "the solution passes, but so does a run that does nothing: the checks do "
            note += "not measure the task"
        elif r.passed and r.do_nothing_passed is None:
            note = "the solution passes; the do-nothing run could not run"
        lines.append(f"oracle {state}: {r.case}" + (f" — {note}" if note else ""))
        for c in r.checks:
            if not c.passed:
                lines.append(f"  {c.name}: {c.detail}")
            if c.output:  # what the verifier printed: how its author debugs a task
                lines.append(f"  {c.name} printed:")
                lines += [f"    {line}" for line in c.output.splitlines()]
    ran = [r for r in results if r.passed is not None]
    good = sum(r.passed is True for r in ran)
    vacuous = sum(r.do_nothing_passed is True for r in ran)
    lines.append(
        f"oracle: {good} of {len(ran)} reference solution(s) pass every check"
        + (f"; {vacuous} not discriminating (doing nothing passes too)" if vacuous else "")
        + (f"; {len(results) - len(ran)} case(s) skipped" if len(ran) < len(results) else "")
    )
    return lines
