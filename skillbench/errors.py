"""The errors skillbench raises on purpose, one hierarchy for the Python API and the CLI.

Every one's text is one line (or, with `problems`, one line per problem) that names the file,
option or flag at fault and what to do; none needs a traceback to be understood.

    SkillbenchError             the base: catch this to catch everything below
    ├── OptionsError            an option value or combination is refused (also a ValueError)
    ├── ConfigError             skillbench.toml / [tool.skillbench] has a wrong value
    ├── NotASkill               a path is neither a skill folder nor a library root
    ├── SpecError               the skill or its eval assets have errors (`problems`)
    ├── ModelRefError           a model reference names no known provider (also a ValueError)
    ├── EvalError               the run cannot start or go on (`problems`, when about assets)
    ├── SandboxError            podman or the sandbox failed (infrastructure)
    ├── TeamError               the team repo or the gate policy refuses the operation
    ├── TuneError, SplitError,  `skillbench tune` cannot start or go on; its split cannot be
    │   ApplyError              made; the description cannot be written into SKILL.md
    ├── Interrupted             Ctrl-C or SIGTERM stopped a run; `run_dir` resumes it
    └── the one-line errors of single modules: UsageError (a CLI flag), ModelError (a model
        call), AgentError, ImageBuildError, CaseImageError, PullError, RoutingError, RunBusy,
        RunFolderError, ImportError_, ScriptError, SigningError, ClusterError,
        GenerationFailed

The ones defined elsewhere subclass `SkillbenchError` where they live; this module holds the
base and the ones that belong to no single module. It imports nothing from skillbench. Each
says what the CLI prints (`lines()`) and exits with (`exit_code`), so the CLI catches this one
type.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any


class SkillbenchError(Exception):
    """Anything skillbench refuses or cannot do, said in one line. `lines()` is what the CLI
    prints to stderr and `exit_code` what it exits with, so the CLI catches this type alone."""

    exit_code = 2

    def lines(self) -> list[str]:
        return [f"skillbench: error: {self}"]


class OptionsError(SkillbenchError, ValueError):
    """An option value or combination is refused before any work starts."""


class EvalError(SkillbenchError):
    """The run cannot start or go on: bad assets, a changed skill on resume, contamination."""

    def __init__(self, message: str, problems: Sequence[Any] = ()):
        self.problems = list(problems)  # evals.Problem, one line each (path:line: ...)
        super().__init__(message)

    def lines(self) -> list[str]:
        return [*(str(p) for p in self.problems), *super().lines()]


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, `timeout`) or SIGHUP (a terminal closed, an ssh session
    dropped), raised as Ctrl-C raises KeyboardInterrupt so that every command's cleanup runs
    (its sandboxes removed); the CLI exits 128 + `signum` (143, 129)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


class Interrupted(SkillbenchError):
    """A run stopped by Ctrl-C (SIGINT) or SIGTERM; nothing finished is lost, and
    `skillbench eval --resume <run_dir>` (or `Options(resume=run_dir)`) goes on. `code` is
    the exit status a shell expects after that signal (130, 143)."""

    def __init__(self, run_dir: str, *, signum: int):
        self.run_dir = run_dir
        self.code = self.exit_code = 128 + signum
        how = "interrupted" if signum == signal.SIGINT else "terminated"
        super().__init__(
            f"{how}; nothing finished is lost. Continue with: skillbench eval --resume {run_dir}"
        )

    def lines(self) -> list[str]:
        return [str(self)]
