"""A case's checks run in the checker, each by its kind (evals/kinds/): an unknown kind, a bad
regex or a path escaping the workspace makes that check fail with a reason; it never errors
the run. What the scripted kinds need of the check phase (who a script runs as, the traces
imported graders read) is `_Checker` here."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from skillbench.checks.optimizer_trace import optimizer_trace
from skillbench.checks.vally_trajectory import grader_input
from skillbench.errors import SkillbenchError
from skillbench.evals.kinds import CheckContext, kinds
from skillbench.evals.kinds.workspace import COMMAND_TIMEOUT
from skillbench.evals.model import Check
from skillbench.results.checks import CheckResult
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import CASE_DIR, ROOT, ExecResult, Sandbox
from skillbench.sandbox.checker_env import ROOT_SCRIPT


async def run_checks(
    checks: Sequence[Check],
    transcript: Transcript,
    sandbox: Sandbox | None,
    case_dir: str = CASE_DIR,
    earlier: Sequence[CheckResult] | None = None,
    results_trace: str | None = None,
    root: Sequence[str] = (),
    shown_at: dict[str, str] | None = None,
) -> list[CheckResult]:
    """Evaluate checks against a finished session: `transcript` as it happened (unscrubbed),
    `sandbox` the checker holding the arm's /work (stage.check_phase), `case_dir` the case's
    own folder there ($CASE for verifiers and graders). `earlier`: these checks' results on
    the same session before (a reused one): those that read only the transcript stand.
    `results_trace`: a grader's $RESULTS/trace.jsonl when not the transcript's (the oracle's
    reference solution writes its own, as skill-optimizer's do). `root`: the case's
    `as_root`; with `verifier`, its verifier and reward scripts run as root, with the
    image's PATH, as their source runs them (the checker's root is then writable). `shown_at`:
    skill name -> the workspace folder a skill-optimizer grader expects its reads at
    (optimizer_trace)."""
    uncleared = None if sandbox is None else await _clear_rewards(checks, sandbox)
    as_root = "verifier" in root
    # a script run as root goes after every other check of this checker: whatever code of
    # the agent's it runs with root's rights (a planted conftest.py) can change nothing
    # another check reads (docs/trust.md); the results keep the checks' order
    order = sorted(
        range(len(checks)),
        key=lambda i: as_root and _root_script(checks[i]),
    )
    done: dict[int, CheckResult] = {}
    for i in order:
        if uncleared and checks[i].kind == "reward":
            done[i] = CheckResult(checks[i].name, False, uncleared)
            continue
        done[i] = await _check_one(
            i, checks[i], transcript, sandbox, case_dir, earlier, results_trace, as_root, shown_at
        )
    return [done[i] for i in range(len(checks))]


async def _check_one(
    i: int,
    check: Check,
    transcript: Transcript,
    sandbox: Sandbox | None,
    case_dir: str,
    earlier: Sequence[CheckResult] | None,
    results_trace: str | None,
    as_root: bool,
    shown_at: dict[str, str] | None = None,
) -> CheckResult:
    """One check of run_checks, the `i`th."""
    kind = kinds().get(check.kind)
    if kind is None:
        return CheckResult(check.name, False, f"unknown check kind {check.kind!r}")
    if earlier is not None and i < len(earlier) and kind.transcript_only:
        return earlier[i]
    if check.arg is None:
        return CheckResult(check.name, False, f"{check.kind} needs an argument")
    checker = None
    if sandbox is not None:
        checker = _Checker(sandbox, case_dir, as_root, transcript, results_trace, shown_at)
    try:
        return await kind.run(check, CheckContext(transcript, sandbox, checker))
    except OSError as exc:  # e.g. the agent left /work unreadable: the check fails
        return CheckResult(check.name, False, f"could not run: {exc}")
    except (ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as exc:
        # a check reads what the agent left (files, a grader's stdout its code shares): data
        # no reader foresaw fails the check, never aborts the run (infrastructure errors,
        # SandboxError, still make the row an error)
        if isinstance(exc, SkillbenchError):
            raise
        return CheckResult(
            check.name, False, f"could not read what it checks: {type(exc).__name__}: {exc}"
        )


def _root_script(check: Check) -> bool:
    kind = kinds().get(check.kind)
    return kind is not None and kind.root_script


@dataclass(frozen=True)
class _Checker:
    """What the scripted kinds (evals/kinds/scripts.py) ask of the check phase."""

    sandbox: Sandbox
    case_dir: str
    as_root: bool
    transcript: Transcript
    results_trace: str | None
    shown_at: dict[str, str] | None

    async def run_script(self, rel: str, timeout: float) -> ExecResult:
        """A script of the evals, by its path there: a source's verifier written for root
        (`as_root`) runs as root in the checker, which the agent never touched, with the
        image's PATH (docs/trust.md); a grader never does."""
        script = f"{CASE_DIR}/{rel}"
        if self.as_root:  # root's own, fresh: nothing the checker's user made there earlier
            await self.sandbox.exec(
                ["sh", "-c", "rm -rf /logs/verifier && mkdir -p -m 0755 /logs/verifier"],
                user=ROOT,
                timeout=COMMAND_TIMEOUT,
            )
        return await self.sandbox.exec(
            ["bash", "-c", ROOT_SCRIPT, script] if self.as_root else ["bash", script],
            cwd=self.sandbox.workdir,
            timeout=timeout,
            env={
                "CASE": self.case_dir,
                "WORK": self.sandbox.workdir,
                "TESTS": posixpath.dirname(script),
            },
            user=ROOT if self.as_root else None,
        )

    async def clear(self, path: str) -> bool:
        # a reward an earlier check's candidate code left (locked 0444, say) is never read
        # as this script's
        done = await self.sandbox.exec(
            ["rm", "-rf", "--", path], user=ROOT, timeout=COMMAND_TIMEOUT
        )
        return done.ok

    async def write_for_grader(self, folder: str, files: dict[str, str]) -> bool:
        # root's own folder, made anew: the candidate's code the grader runs cannot rewrite
        # what the grader reads after it, nor have left a file or a link there before
        made = await self.sandbox.exec(
            ["sh", "-c", 'rm -rf "$0" && mkdir -m 0755 "$0"', folder],
            user=ROOT,
            timeout=COMMAND_TIMEOUT,
        )
        if not made.ok:
            return False
        for name, text in files.items():
            done = await self.sandbox.exec(
                ["sh", "-c", 'cat > "$0" && chmod 0644 "$0"', f"{folder}/{name}"],
                user=ROOT,
                stdin=text,
                timeout=COMMAND_TIMEOUT,
            )
            if not done.ok:
                return False
        return True

    def grader_trace(self) -> str:
        if self.results_trace is not None:  # the oracle's reference solution writes its own
            return self.results_trace
        return optimizer_trace(self.transcript.events, self.shown_at)

    def vally_input(self, program: str) -> str:
        return grader_input(self.transcript.events, program, self.sandbox.workdir)


async def _clear_rewards(checks: Sequence[Check], sandbox: Sandbox) -> str | None:
    """Remove what the agent left where a reward file will be read from: a reward is the
    check phase's own, never a file (or a locked one) the agent made in advance. (Outside
    the workspace the checker's /logs and /tmp are fresh anyway.) Why it could not, or
    None."""
    work = sandbox.workdir.rstrip("/")
    paths = [
        path
        for c in checks
        if c.kind == "reward" and c.arg
        for path in [c.arg if c.arg.startswith("/") else f"{work}/{c.arg}"]
        if path.startswith(f"{work}/")
    ]
    if not paths:
        return None
    try:
        done = await sandbox.exec(["rm", "-rf", "--", *paths], timeout=COMMAND_TIMEOUT)
    except OSError as exc:  # (the checker's executor failed: the candidate's code did it)
        return f"could not clear the reward files: {exc}"
    # the agent's reward would be read: the reward checks fail (never an error row: a
    # checker the candidate's code tainted in an earlier sub-case of a suite refuses this,
    # and an unscored row would be its loss escaped)
    return None if done.ok else f"could not clear the reward files: {done.stderr.strip()[-200:]}"
