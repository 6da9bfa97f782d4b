"""The check kinds that read the session's transcript only (their results on a reused
session stand) and `expect`, which the model grader decides afterwards."""

from __future__ import annotations

import re
from collections.abc import Sequence

from skillbench.evals.kinds.base import CheckContext, Lint, StringKind
from skillbench.evals.model import Check
from skillbench.results.checks import CheckResult


class _Reads(StringKind):
    transcript_only = True


class Mentions(_Reads):
    name = "transcript_mentions"
    doc = "the text appears in the transcript, case-insensitively"

    def lint(self, check: Check) -> Sequence[Lint]:
        if not (check.arg or "").strip():
            return [Lint("`transcript_mentions` of empty text always passes; it cannot fail")]
        return ()

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        found = (check.arg or "").lower() in context.transcript.all_text.lower()
        shown = "found in the transcript" if found else "not in the transcript"
        return CheckResult(check.name, found, shown)


class Omits(_Reads):
    name = "transcript_omits"
    doc = "the text does not appear in the transcript"

    def lint(self, check: Check) -> Sequence[Lint]:
        if not (check.arg or "").strip():
            return [Lint("`transcript_omits` of empty text always fails; it cannot pass")]
        return ()

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        found = (check.arg or "").lower() in context.transcript.all_text.lower()
        return CheckResult(check.name, not found, "found in the transcript" if found else "absent")


class _Regex(_Reads):
    """A regex kind: a pattern that does not compile is a warning now and a failure then."""

    matches = True  # passes when the regex matches (False: when it matches nowhere)

    def lint(self, check: Check) -> Sequence[Lint]:
        try:
            re.compile(check.arg or "")
        except re.error as exc:
            return [Lint(f"invalid regex for `{self.name}`: {exc}; it will fail at run time")]
        return ()


class Matching(_Regex):
    name = "transcript_matching"
    doc = "the regex matches somewhere in the transcript (case as written)"

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        try:
            match = re.search(check.arg or "", context.transcript.all_text)
        except re.error as exc:
            return CheckResult(check.name, False, f"invalid regex: {exc}")
        seen = f"matched: {match.group(0)[:200]!r}" if match else "no match in the transcript"
        return CheckResult(check.name, (match is not None) == self.matches, seen)


class NoMatching(Matching):
    name = "no_transcript_matching"
    doc = "the regex matches nowhere in the transcript"
    matches = False


class CommandMatching(_Regex):
    name = "command_matching"
    doc = "some bash command the agent ran matches the regex"

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        try:
            pattern = re.compile(check.arg or "")
        except re.error as exc:
            return CheckResult(check.name, False, f"invalid regex: {exc}")
        # (a command the agent's CLI refused to run never ran; it still counts against it)
        transcript = context.transcript
        commands = transcript.commands_run if self.matches else transcript.bash_commands
        hit = next((c for c in commands if pattern.search(c)), None)
        seen = f"matched: {hit[:200]}" if hit else f"no match in {len(commands)} commands"
        return CheckResult(check.name, (hit is not None) == self.matches, seen)


class NoCommandMatching(CommandMatching):
    name = "no_command_matching"
    doc = "no bash command matches the regex"
    matches = False


class Expect(StringKind):
    name = "expect"
    doc = (
        "a model grader finds the natural-language expectation met, from the transcript "
        "and the workspace files (graded in one call per session, with a canary)"
    )

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        # graded by the model grader (skillbench.grading.expect) after the other checks
        return CheckResult(check.name, False, "not graded by a model", infrastructure=True)
