"""The check kinds that look at the arm's workspace in the checker: a path there, a command's
exit code."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from skillbench.evals.kinds.base import NO_SANDBOX, CheckContext, Lint, StringKind
from skillbench.evals.model import Check
from skillbench.evals.paths import path_escape
from skillbench.results.checks import CheckResult

COMMAND_TIMEOUT = 120.0


class FileExists(StringKind):
    name = "file_exists"
    doc = "the path (relative to the workspace) exists after the session"
    exists = True  # passes when the path exists (False: when it does not)

    def lint(self, check: Check) -> Sequence[Lint]:
        arg, found = check.arg or "", []
        reason = path_escape(arg)
        if reason:
            always = "fail" if self.exists else "fail (it cannot pass)"
            found.append(
                Lint(f"`{self.name}` path {arg!r} {reason}; the check will always {always}")
            )
        if posixpath.normpath(arg) == "." and not reason:
            found.append(
                Lint(f"`{self.name}` of the workspace itself does not depend on the agent")
            )
        return found

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        name, arg, sandbox = check.name, check.arg or "", context.sandbox
        if sandbox is None:
            return CheckResult(name, False, NO_SANDBOX)
        reason = path_escape(arg)
        if reason:
            return CheckResult(name, False, f"path {reason}")
        try:
            exists = await sandbox.exists(f"{sandbox.workdir}/{arg}")
        except OSError as exc:  # a locked folder, a loop: not "absent", and not "exists"
            return CheckResult(name, False, f"unreadable: {exc.strerror or exc}")
        if self.exists:
            return CheckResult(name, exists, "exists" if exists else "missing")
        return CheckResult(name, not exists, "exists" if exists else "absent")


class FileAbsent(FileExists):
    name = "file_absent"
    doc = "the path does not exist after the session"
    exists = False


class CommandSucceeds(StringKind):
    name = "command_succeeds"
    doc = "the shell command exits 0 in the sandbox within 120 s"

    def lint(self, check: Check) -> Sequence[Lint]:
        return [] if (check.arg or "").strip() else [Lint(f"`{self.name}` needs a command", True)]

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        sandbox = context.sandbox
        if sandbox is None:
            return CheckResult(check.name, False, NO_SANDBOX)
        done = await sandbox.exec(check.arg or "", timeout=COMMAND_TIMEOUT, cwd=sandbox.workdir)
        if done.timed_out:
            return CheckResult(check.name, False, f"timed out after {COMMAND_TIMEOUT:g} s")
        tail = (done.stderr or done.stdout).strip()[-300:]
        return CheckResult(
            check.name,
            done.exit_code == 0,
            f"exit {done.exit_code}" + (f": {tail}" if tail and done.exit_code else ""),
        )
