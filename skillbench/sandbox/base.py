"""The Sandbox contract every provider implements, with exact error semantics.

Modelled on inspect_ai's sandbox environment: a small async interface, and one conformance
suite (tests/sandbox_conformance.py) that every provider runs.

Errors:
- `exec` returns an `ExecResult` for any command that ran, whatever its exit code; a command
  that overran its timeout is killed (with its process group) and returns `timed_out=True`.
  A `cwd` that does not exist raises FileNotFoundError.
- `read_file` / `read_text`: a missing path raises FileNotFoundError, a folder
  IsADirectoryError, an unreadable file PermissionError. Relative paths are under /work.
- `write_file` creates parent folders; a read-only place raises PermissionError.
- `SandboxError` means the sandbox itself failed (could not start, its executor died, podman
  answered with an error): an infrastructure error, never the agent's fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

WORKDIR = "/work"
SKILLS_DIR = "/skills"  # staged skills, read-only, one folder per skill
CASE_DIR = "/case"  # the skill's evals/, read-only, only after the agent phase
DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept of each of stdout and stderr


class SandboxError(Exception):
    """The sandbox failed (infrastructure), as opposed to a command in it failing."""


class ExecResult(msgspec.Struct, frozen=True):
    """What a command did: exit code, output (capped, with a marker when cut), timing."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0  # seconds, measured inside the sandbox

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Mount(msgspec.Struct, frozen=True):
    """A host folder shown at `target` inside the sandbox."""

    source: str
    target: str
    read_only: bool = True


class SandboxSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How to make a sandbox. The defaults are the isolation every arm gets."""

    image: str
    network: bool = False
    memory: str = "2g"
    pids: int = 512
    cpus: float = 1.0
    nofile: int = 4096
    nproc: int = 4096
    mounts: tuple[Mount, ...] = ()
    env: dict[str, str] = {}
    labels: dict[str, str] = {}


class Sandbox(Protocol):
    """One isolated place where an arm's commands run."""

    name: str

    async def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 120,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> ExecResult:
        """Run `cmd` (a string for bash, or an argv list)."""
        ...

    async def read_file(self, path: str) -> bytes: ...

    async def read_text(self, path: str) -> str: ...

    async def write_file(self, path: str, content: str | bytes) -> None: ...

    async def exists(self, path: str) -> bool: ...

    async def put_tree(self, src: Path, dest: str) -> None:
        """Copy the host folder `src` into the sandbox folder `dest` (created if missing)."""
        ...

    async def get_tree(self, src: str, dest: Path) -> None:
        """Copy the sandbox folder `src` to the host folder `dest`."""
        ...

    async def reap(self) -> int:
        """Kill every process the agent left behind; return how many."""
        ...

    async def close(self) -> None:
        """Destroy the sandbox; safe to call twice."""
        ...


class SandboxProvider(Protocol):
    """Makes sandboxes."""

    async def create(self, spec: SandboxSpec) -> Sandbox: ...

    async def aclose(self) -> None: ...
