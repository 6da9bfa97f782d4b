"""The check kinds of design §1, with run-time semantics: an unknown kind, a bad regex or a
path escaping the workspace makes that check fail with a reason; it never errors the run."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from skillbench.sandbox.base import WORKDIR, Sandbox
from skillbench.spec.load import path_escape
from skillbench.spec.model import CHECK_KINDS, Check
from skillbench.transcript import Transcript

COMMAND_TIMEOUT = 120.0


class CheckResult(msgspec.Struct, frozen=True):
    """One check's outcome: its name as written, whether it passed, and why."""

    name: str
    passed: bool
    detail: str = ""


async def run_checks(
    checks: Sequence[Check],
    transcript: Transcript,
    sandbox: Sandbox | None,
) -> list[CheckResult]:
    """Evaluate checks against a finished session: `transcript` as it happened (unscrubbed),
    `sandbox` the checker holding the arm's /work (stage.check_phase)."""
    text = transcript.all_text.lower()
    commands = transcript.bash_commands
    results = []
    for check in checks:
        try:
            results.append(await _one(check, text, commands, sandbox))
        except OSError as exc:  # e.g. the agent left /work unreadable: the check fails
            results.append(CheckResult(check.name, False, f"could not run: {exc}"))
    return results


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
        exists = await sandbox.exists(f"{WORKDIR}/{arg}")
        if check.kind == "file_exists":
            return CheckResult(name, exists, "exists" if exists else "missing")
        return CheckResult(name, not exists, "exists" if exists else "absent")
    # command_succeeds
    done = await sandbox.exec(arg, timeout=COMMAND_TIMEOUT, cwd=WORKDIR)
    if done.timed_out:
        return CheckResult(name, False, f"timed out after {COMMAND_TIMEOUT:g} s")
    tail = (done.stderr or done.stdout).strip()[-300:]
    return CheckResult(
        name,
        done.exit_code == 0,
        f"exit {done.exit_code}" + (f": {tail}" if tail and done.exit_code else ""),
    )
