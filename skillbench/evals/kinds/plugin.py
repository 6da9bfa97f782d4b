"""A check kind from another package (entry-point group `skillbench.check_kinds`), checked
when it loads and adapted onto the registry's `Kind`: its argument a string, its verdict a
`CheckResult`, its bug a failed check, never a failed run."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from skillbench.evals.kinds.base import At, CheckContext, CheckKind, Lint
from skillbench.evals.model import Check
from skillbench.plugins import missing
from skillbench.results.checks import CheckResult


def refusal(name: str, obj: object) -> str | None:
    """Why `obj` (the entry point `name`) is not a check kind; None when it is one."""
    if inspect.isclass(obj):
        return "is a class; point the entry point at an instance of it"
    why = missing(obj, ("name", "doc", "parse", "lint", "run"))
    if why is not None:
        return why
    if getattr(obj, "name", None) != name:
        return f"has name {getattr(obj, 'name', None)!r}; it must be the entry point's, {name!r}"
    if not isinstance(getattr(obj, "doc", None), str):
        return "has no `doc` text"
    if not inspect.iscoroutinefunction(getattr(obj, "run", None)):
        return "has a `run` that is not `async def`"
    return None


class PluginKind:
    """A package's `CheckKind` as the registry holds kinds."""

    transcript_only = False  # its results on a reused session are never assumed to stand
    root_script = False

    def __init__(self, kind: CheckKind):
        self.kind = kind
        self.name, self.doc = kind.name, kind.doc

    def parse(self, value: object, at: At) -> Check | None:
        try:
            return Check(self.name, self.kind.parse(value), at.line)
        except ValueError as exc:
            at.error(f"check `{self.name}`: {exc}")
            return None

    def lint(self, check: Check) -> Sequence[Lint]:
        return [Lint(f"`{self.name}`: {warning}") for warning in self.kind.lint(check.arg or "")]

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        try:
            verdict = await self.kind.run(check.arg or "", context)
        except Exception as exc:
            return CheckResult(
                check.name, False, f"the check kind raised {type(exc).__name__}: {exc}"
            )
        return CheckResult(check.name, bool(verdict.passed), verdict.detail, score=verdict.score)
