"""Problems found in eval assets, reported as `path:line: severity: message`."""

from __future__ import annotations

from typing import Literal

import msgspec

from skillbench.errors import SkillbenchError

# a note says what a foreign format's field became (or why it is not honoured); never counted
Severity = Literal["error", "warning", "note"]


class Problem(msgspec.Struct, frozen=True):
    """One thing wrong (error) or worth a look (warning) at a place in a file."""

    path: str
    line: int
    severity: Severity
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.severity}: {self.message}"


class SpecError(SkillbenchError):
    """Eval assets or a skill could not be read; `problems` holds every error (and warning)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        errors = [p for p in problems if p.severity == "error"] or problems
        super().__init__("\n".join(str(p) for p in errors))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


def errors_in(problems: list[Problem]) -> list[Problem]:
    """The problems that are errors."""
    return [p for p in problems if p.severity == "error"]
