"""The shape of a check kind (docs/architecture.md, "Where things vary"): one object with its
name, its doc line, how its YAML value is parsed and linted, and how it runs.

Two protocols: `Kind` is what the registry holds and the loader and the checker call (a whole
`Check` in, a `CheckResult` out); `CheckKind` is the smaller one a package outside the tree
implements (an argument string in, a `Verdict` out), adapted onto `Kind` by `plugin.py`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from skillbench.evals.fields import type_name
from skillbench.evals.model import Check
from skillbench.results.checks import CheckResult
from skillbench.results.transcript import Transcript

if TYPE_CHECKING:  # (the sandbox contract imports the eval assets: a type here, no import)
    from skillbench.sandbox.base import ExecResult, Sandbox


class Verdict(msgspec.Struct, frozen=True):
    """What a check kind decides about one session: passed or not, why, and a score if any."""

    passed: bool
    detail: str = ""
    score: float | None = None


class Checker(Protocol):
    """The check phase's own services for the kinds that run the eval's scripts (checks/run.py
    provides them: who a script runs as, and the traces imported graders read)."""

    @property
    def case_dir(self) -> str:
        """The case's own folder in the checker ($CASE)."""
        ...

    async def run_script(self, rel: str, timeout: float) -> ExecResult:
        """A script of the eval's, by its path under evals/, in the workspace."""
        ...

    def grader_trace(self) -> str:
        """The session's trace in skill-optimizer's format (a grader's $RESULTS/trace.jsonl)."""
        ...

    def vally_input(self, program: str) -> str:
        """A Vally program grader's GraderInput JSON for its `program` context."""
        ...

    async def clear(self, path: str) -> bool:
        """Remove what is at `path` (as root) before a script writes its reward there;
        whether that was done."""
        ...

    async def write_for_grader(self, folder: str, files: dict[str, str]) -> bool:
        """`files` (name -> text) as the only files of `folder`, root's and read-only to the
        checker's user, whose code the grader runs; False when that failed."""
        ...


@dataclass(frozen=True)
class CheckContext:
    """What a check reads: the session's transcript as it happened, and the checker holding
    the arm's workspace (`sandbox.workdir`), None when the session errored before one.
    `checker`: the check phase's services (with `sandbox`), for the built-in scripted kinds."""

    transcript: Transcript
    sandbox: Sandbox | None
    checker: Checker | None = None


@dataclass(frozen=True)
class At:
    """Where a check is read: its line, the case file its scripts are relative to (None for
    checks built in code), and how an error there is reported."""

    line: int
    case_file: Path | None
    error: Callable[[str], None]


class Lint(NamedTuple):
    """A load-time finding about a check that parsed: a warning, or an error when `error`."""

    message: str
    error: bool = False


class Kind(Protocol):
    """A check kind as the registry holds it."""

    name: str  # the YAML key
    doc: str  # one line, for `skillbench check --help` and docs/formats.md
    # its result on a reused session stands: it reads only the transcript (engine/recheck.py)
    transcript_only: bool
    # its script runs as root under a case's `as_root: [verifier]`, after every other check
    root_script: bool

    def parse(self, value: object, at: At) -> Check | None:
        """The check from the YAML value under the kind's key; None when an error was
        reported through `at.error`."""
        ...

    def lint(self, check: Check) -> Sequence[Lint]:
        """What `check` and `eval` say about a check (with an argument) that parsed."""
        ...

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        """The result on one finished session; a bad argument fails the check, never the run."""
        ...


class CheckKind(Protocol):
    """A check kind from another package: `name` is its YAML key and `doc` one line."""

    name: str
    doc: str

    def parse(self, value: object) -> str:
        """The argument from the YAML value under the kind's key; ValueError (its message
        shown at the check's file:line) when the value is not one."""
        ...

    def lint(self, arg: str) -> Sequence[str]:
        """Warnings about an argument that parses but cannot work as meant."""
        ...

    async def run(self, arg: str, context: CheckContext) -> Verdict:
        """The verdict on one finished session; an exception fails the check with its text."""
        ...


NO_SANDBOX = "no sandbox to check in (the session errored)"


class StringKind:
    """A kind whose argument is one string: the shared parse, no lint, flags off."""

    name: str = ""
    doc: str = ""
    transcript_only = False
    root_script = False

    def parse(self, value: object, at: At) -> Check | None:
        return string_check(self.name, value, at)

    def lint(self, check: Check) -> Sequence[Lint]:
        return ()


def string_check(kind: str, value: object, at: At) -> Check | None:
    """`{kind: "text"}`: a check with that argument; anything else is an error at its line."""
    if not isinstance(value, str):
        at.error(f"check `{kind}` takes a string argument, got {type_name(value)}")
        return None
    return Check(kind, value, at.line)
