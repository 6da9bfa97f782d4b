"""The check kinds of design §1, with run-time semantics: an unknown kind, a bad regex or a
path escaping the workspace makes that check fail with a reason; it never errors the run."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence

import msgspec

from skillbench.evals.checks import path_escape
from skillbench.evals.model import CHECK_KINDS, Check
from skillbench.jsonreply import first_json_object
from skillbench.sandbox.base import CASE_DIR, ExecResult, Sandbox
from skillbench.transcript import Transcript

COMMAND_TIMEOUT = 120.0


class CheckResult(msgspec.Struct, frozen=True):
    """One check's outcome: its name as written, whether it passed, and why; a grader's or a
    reward's score; `infrastructure` when a verifier could give no verdict (exit 2)."""

    name: str
    passed: bool
    detail: str = ""
    score: float | None = None
    infrastructure: bool = False


async def run_checks(
    checks: Sequence[Check],
    transcript: Transcript,
    sandbox: Sandbox | None,
    case_dir: str = CASE_DIR,
) -> list[CheckResult]:
    """Evaluate checks against a finished session: `transcript` as it happened (unscrubbed),
    `sandbox` the checker holding the arm's /work (stage.check_phase), `case_dir` the case's
    own folder there ($CASE for verifiers and graders)."""
    text = transcript.all_text.lower()
    commands = transcript.bash_commands
    results = []
    for check in checks:
        try:
            if check.kind in SCRIPTED and sandbox is not None:
                results.append(await _scripted(check, transcript, sandbox, case_dir))
            else:
                results.append(await _one(check, text, commands, sandbox))
        except OSError as exc:  # e.g. the agent left /work unreadable: the check fails
            results.append(CheckResult(check.name, False, f"could not run: {exc}"))
    return results


SCRIPTED = frozenset({"verifier", "reward", "grader"})
SCRIPT_TIMEOUT = 600.0  # an imported verifier may run a whole test suite
RESULTS = "/tmp/results"  # a grader's $RESULTS: the session's trace.jsonl


async def _scripted(
    check: Check, transcript: Transcript, sandbox: Sandbox, case_dir: str
) -> CheckResult:
    """The check kinds that run the eval's own programs in the checker (design §13)."""
    name, arg = check.name, check.arg or ""
    work = sandbox.workdir
    env = {"CASE": case_dir, "WORK": work}

    async def run_script(rel: str) -> ExecResult:  # a script of the evals, by its path there
        script = f"{CASE_DIR}/{rel}"
        return await sandbox.exec(
            ["bash", script],
            cwd=work,
            timeout=SCRIPT_TIMEOUT,
            env={**env, "TESTS": posixpath.dirname(script)},
        )

    if check.kind == "verifier":
        done = await run_script(check.script or arg)
        tail = (done.stderr or done.stdout).strip()[-300:]
        if done.timed_out:
            return CheckResult(name, False, f"timed out after {SCRIPT_TIMEOUT:g} s")
        if done.exit_code == 2:  # the verifier could not judge: not the agent's failing
            return CheckResult(name, False, f"exit 2 (no verdict): {tail}", infrastructure=True)
        detail = f"exit {done.exit_code}" + (f": {tail}" if done.exit_code and tail else "")
        return CheckResult(name, done.exit_code == 0, detail)
    if check.kind == "reward":
        if check.script:  # Harbor's test.sh: its exit code says nothing, its reward file does
            done = await run_script(check.script)
            if done.timed_out:
                return CheckResult(
                    name, False, f"{check.script} timed out after {SCRIPT_TIMEOUT:g} s"
                )
        path = arg if arg.startswith("/") else f"{work}/{arg}"
        if not await sandbox.exists(path):
            return CheckResult(name, False, f"no reward file at {path}")
        value = _reward_value(await sandbox.read_text(path))
        if value is None:
            return CheckResult(name, False, f"{path} holds no number (or no `reward` in JSON)")
        least = 1.0 if check.min is None else check.min
        return CheckResult(name, value >= least, f"reward {value:g} (min {least:g})", score=value)
    # grader: a command printing {"pass", "score", "evidence"}, or its exit code
    await sandbox.write_file(
        f"{RESULTS}/trace.jsonl", "".join(json.dumps(e) + "\n" for e in transcript.events)
    )
    done = await sandbox.exec(
        ["bash", "-c", arg], cwd=work, timeout=SCRIPT_TIMEOUT, env={**env, "RESULTS": RESULTS}
    )
    if done.timed_out:
        return CheckResult(name, False, f"timed out after {SCRIPT_TIMEOUT:g} s")
    verdict = first_json_object(done.stdout)
    if verdict is None or "pass" not in verdict:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return CheckResult(
            name,
            done.exit_code == 0,
            f"exit {done.exit_code} (no JSON verdict)" + (f": {tail}" if done.exit_code else ""),
        )
    score = verdict.get("score")
    evidence = verdict.get("evidence") or []
    evidence = [str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)]
    shown = f"score {score:g}" if isinstance(score, int | float) else "no score"
    return CheckResult(
        name,
        bool(verdict["pass"]),
        "; ".join([shown, *evidence])[:1000],
        score=float(score) if isinstance(score, int | float) else None,
    )


def _reward_value(text: str) -> float | None:
    """reward.txt's number, or reward.json's `reward` (or the JSON number itself)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = data.get("reward")
    return float(data) if isinstance(data, int | float) and not isinstance(data, bool) else None


async def _one(
    check: Check, text: str, commands: list[str], sandbox: Sandbox | None
) -> CheckResult:
    name, arg = check.name, check.arg
    if check.kind not in CHECK_KINDS:
        return CheckResult(name, False, f"unknown check kind {check.kind!r}")
    if arg is None:
        return CheckResult(name, False, f"{check.kind} needs an argument")
    if check.kind == "transcript_mentions":
        found = arg.lower() in text
        return CheckResult(
            name, found, "found in the transcript" if found else "not in the transcript"
        )
    if check.kind == "transcript_omits":
        found = arg.lower() in text
        return CheckResult(name, not found, "found in the transcript" if found else "absent")
    if check.kind in ("command_matching", "no_command_matching"):
        try:
            pattern = re.compile(arg)
        except re.error as exc:
            return CheckResult(name, False, f"invalid regex: {exc}")
        hit = next((c for c in commands if pattern.search(c)), None)
        seen = f"matched: {hit[:200]}" if hit else f"no match in {len(commands)} commands"
        if check.kind == "command_matching":
            return CheckResult(name, hit is not None, seen)
        return CheckResult(name, hit is None, seen)
    if sandbox is None:
        return CheckResult(name, False, "no sandbox to check in (the session errored)")
    if check.kind in ("file_exists", "file_absent"):
        reason = path_escape(arg)
        if reason:
            return CheckResult(name, False, f"path {reason}")
        exists = await sandbox.exists(f"{sandbox.workdir}/{arg}")
        if check.kind == "file_exists":
            return CheckResult(name, exists, "exists" if exists else "missing")
        return CheckResult(name, not exists, "exists" if exists else "absent")
    # command_succeeds
    done = await sandbox.exec(arg, timeout=COMMAND_TIMEOUT, cwd=sandbox.workdir)
    if done.timed_out:
        return CheckResult(name, False, f"timed out after {COMMAND_TIMEOUT:g} s")
    tail = (done.stderr or done.stdout).strip()[-300:]
    return CheckResult(
        name,
        done.exit_code == 0,
        f"exit {done.exit_code}" + (f": {tail}" if tail and done.exit_code else ""),
    )
