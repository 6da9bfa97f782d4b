"""The Sandbox contract every provider implements, with exact error semantics.

Modelled on inspect_ai's sandbox environment: a small async interface, and one conformance
suite (skillbench/sandbox/conformance.py) that every provider runs.

Errors:
- `exec` returns an `ExecResult` for any command that ran, whatever its exit code; a command
  that overran its timeout is killed (with its process group) and returns `timed_out=True`.
  A `cwd` that does not exist raises FileNotFoundError.
- `read_file` / `read_text`: a missing path raises FileNotFoundError, a folder
  IsADirectoryError, an unreadable file PermissionError. Relative paths are under /work.
- `write_file` creates parent folders; a read-only place raises PermissionError.
- `SandboxError` means the sandbox itself failed (could not start, its executor died, podman
  answered with an error): an infrastructure error, never the agent's fault.

Users (docs/trust.md): commands and file operations run as the spec's `user` (the image's
`agent`, uid 1000, by default), never as the root executor; the root filesystem is
read-only; /work, HOME and /tmp are small fresh filesystems with kernel-enforced sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.evals.services import Service, ServiceBuild, Volume

WORKDIR = "/work"
SKILLS_DIR = "/skills"  # staged skills, read-only, one folder per skill
CASE_DIR = "/case"  # the skill's evals/, read-only, only in the checker
HANDOVER = "/opt/skillbench/handover.py"  # handover.py, in every sandbox (its `stage` command)
DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept of each of stdout and stderr
# The image's users: the agent works as `agent`; checks run as `checker`, a user the agent
# never was; `root` is the executor's own (used only to hand /work to the checker).
AGENT, CHECKER, ROOT = "agent", "checker", "root"
HOMES = {AGENT: "/home/agent", CHECKER: "/home/checker", ROOT: "/root"}
UIDS = {AGENT: 1000, CHECKER: 1001, ROOT: 0}  # as the image creates them (podman/image.py)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes in a size like `512m` or `2g` (binary units); ValueError when malformed."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b") if text else ""
    unit = value[-1:] if value[-1:] in _UNITS else ""
    number = value[: len(value) - len(unit)]
    if not number.replace(".", "", 1).isdigit():
        raise ValueError(f"{text!r} is not a size (e.g. 512m, 2g)")
    return int(float(number) * _UNITS[unit])


class SandboxError(SkillbenchError):
    """The sandbox failed (infrastructure), as opposed to a command in it failing."""

    def lines(self) -> list[str]:
        return [f"skillbench: sandbox error: {self}; `skillbench doctor` says what to fix"]


class WorkspaceRefused(SkillbenchError):
    """The agent left a workspace bigger than a handover walks (docs/trust.md): no check may
    read it, and its arm fails every check, never goes unscored."""


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


class Relay(msgspec.Struct, frozen=True):
    """A loopback port inside the sandbox whose connections come out on the host, at
    `host:target` (skillbench's model broker): the only way out of a sandbox with no network."""

    port: int
    host: str
    target: int
    # written first on each connection by the host side of the relay, never in the sandbox:
    # the target (a session's broker) serves only connections that open with it
    preamble: bytes = b""


class SandboxSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How to make a sandbox. The defaults are the isolation every arm gets.

    `disk`, `home` and `tmp` cap /work, HOME and /tmp (tmpfs: writes past them get ENOSPC).
    Their pages live in memory, so the sandbox's memory limit is `memory` plus those caps:
    a full disk is never an out-of-memory kill, and processes always get `memory`.
    """

    image: str
    user: str = AGENT
    network: bool = False
    memory: str = "2g"
    disk: str = "2g"
    home: str = "64m"
    tmp: str = "256m"
    workspace: str | None = None  # a Workspace's name: /work outlives the sandbox (checks)
    workdir: str = WORKDIR  # where the workspace is mounted, the agent starts and checks run
    logs: bool = False  # a writable /logs (tmpfs): where imported verifiers write rewards
    relay: Relay | None = None
    egress: Relay | None = None  # the egress proxy's relay, when the phase has an allowlist
    # a checker: its relays carry nothing until hand_over (the agent may share its loopback)
    handover: bool = False
    services: tuple[Service, ...] = ()  # the case's: stage_arm starts them in the arm's pod
    pod: str | None = None  # the pod (SandboxProvider.pod) this sandbox joins: its network
    volumes: tuple[Volume, ...] = ()  # the case's: made with its pod, shared with its services
    # the pod's volumes this container mounts (the volume's name in the provider -> where):
    # set by stage.py, for the agent's sandbox (the volumes compose gave `main`) and checker
    shared: dict[str, str] = {}
    pids: int = 512
    cpus: float = 1.0
    nofile: int = 4096
    nproc: int = 4096
    mounts: tuple[Mount, ...] = ()
    env: dict[str, str] = {}
    labels: dict[str, str] = {}
    # the case's `as_root` (its source's scripts written for root): which of its trusted
    # scripts run as root in a container the agent never touched (docs/trust.md); the
    # agent's own sandbox is never given root nor a writable root filesystem
    as_root: tuple[str, ...] = ()
    # the root filesystem is a writable layer (only such a container: stage.py, oracle.py)
    writable_root: bool = False
    # every command runs sealed (inside/seal.py): none of its processes can reach another's
    # memory; a checker's, where a grader runs the candidate's code as its own user
    sealed: bool = False


class Sandbox(Protocol):
    """One isolated place where an arm's commands run."""

    name: str
    workdir: str  # the workspace: commands start there, relative file paths resolve there

    async def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 120,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        user: str | None = None,
    ) -> ExecResult:
        """Run `cmd` (a string for bash, or an argv list) as `user` (default: the spec's)."""
        ...

    async def read_file(self, path: str) -> bytes: ...

    async def read_text(self, path: str) -> str: ...

    async def write_file(self, path: str, content: str | bytes) -> None: ...

    async def exists(self, path: str) -> bool: ...

    async def observe(self, skills: Mapping[str, Sequence[str]], *, now: bool) -> None:
        """Watch which files of `skills` (name -> the sandbox folders holding it) are opened
        from now (`now`) or from the first model reply relayed in (an agent CLI, whose own
        start-up reads every SKILL.md): the skill observer (observer.py, docs/trust.md)."""
        ...

    async def observed(self) -> dict[str, dict[str, str]]:
        """What `observe` saw: skill -> {file under its folder: "open" | "access"}; raises
        SandboxError when it could not see (its watches refused, its queue overflowed)."""
        ...

    async def sync_skills(self) -> None:
        """Show in the sandbox what was staged, after setup (docs/statistics.md: setup, then skill),
        into the host folder behind its /skills mount: a bind mount shows it already."""
        ...

    async def hand_over(self, user: str, also: Sequence[str] = ()) -> list[str]:
        """Give the workspace to `user` for the check phase (docs/trust.md): every entry theirs
        and unlockable, hard links broken, and every symlink cut that does not lead, now,
        to something inside the workspace or on the read-only image; the same for each
        folder of `also` (the case's volumes the agent's sandbox had). Returns a note per
        entry changed; raises WorkspaceRefused for a workspace bigger than it walks."""
        ...

    async def put_tree(self, src: Path, dest: str) -> None:
        """Copy the host folder `src` into the sandbox folder `dest` (created if missing)."""
        ...

    async def get_tree(
        self, src: str, dest: Path, *, cap: int = 100 << 20, seconds: float = 120.0
    ) -> list[str]:
        """Copy the sandbox folder `src` to the host folder `dest`, streamed, at most `cap`
        bytes of file content and about `seconds` of time; symlinks are never made on the
        host or followed, they are recorded with their targets in `<dest>.symlinks.json`.
        Returns notes on what was left out (devices, FIFOs, hard links, unsafe names, the cut
        at `cap` or at `seconds`)."""
        ...

    async def save_archive(self, src: str, dest: Path, *, cap: int) -> bool:
        """Write the sandbox folder `src` to the host file `dest` as a tar archive (as it is:
        owners, modes, links as links); False, and no file, when it holds more than `cap`
        bytes. For baseline reuse, which runs the checks again on it."""
        ...

    async def load_archive(self, archive: Path, dest: str) -> None:
        """Make the sandbox folder `dest` hold exactly what `save_archive` wrote to
        `archive` (whatever was there before is removed)."""
        ...

    async def stop(self) -> None:
        """End every process in the sandbox and return only once the kernel says they are
        all gone; the sandbox (and a workspace another sandbox holds) stays until `close`.
        SandboxError when that cannot be confirmed. Safe to call twice."""
        ...

    async def close(self) -> None:
        """Destroy the sandbox; safe to call twice."""
        ...


class Workspace(Protocol):
    """A /work that outlives the sandbox it was made for: the agent's sandbox writes it, then a
    fresh checker sandbox mounts it. Its data lives while some sandbox holding it runs."""

    name: str

    async def close(self) -> None:
        """Remove it; safe to call twice."""
        ...


class Pod(Protocol):
    """One arm's services and the network namespace its sandboxes join: nothing but
    loopback, so only that arm's sandboxes reach them, and they reach nothing else."""

    name: str

    @property
    def volumes(self) -> Mapping[str, str]:
        """The case's volumes (name -> the provider's volume), fresh for this arm: its
        services mount them from the start, its sandboxes as stage.py says."""
        ...

    async def close(self) -> None:
        """Remove the services, their volumes and the pod; safe to call twice."""
        ...


class ImageBuildError(SkillbenchError):
    """The image could not be built; the message says why and what to do."""


class CaseImageError(SkillbenchError):
    """A case's image could not be found or built; the message says what to do."""


class Images(Protocol):
    """A provider's images: the sandbox image every arm starts from, its variants for a
    case's `requires`, and a case's own image. The provider owns them; the engine asks here
    and never runs a container tool itself."""

    sandbox_image: str  # the name of the default sandbox image

    def exists(self, name: str) -> bool: ...

    def ensure(self, name: str, log: Callable[[str], None]) -> None:
        """The sandbox image `name` is there (the default one built on first use, saying
        so); ImageBuildError when it cannot be."""
        ...

    def variant_for(self, base: str, requires: Sequence[str]) -> str | None:
        """The variant of `base` a case's `requires` needs, or None."""
        ...

    def variant(self, name: str, log: Callable[[str], None]) -> str:
        """The variant `name`, built on first use; ImageBuildError when it cannot be."""
        ...

    def case_image(
        self,
        *,
        image: str | None,
        containerfile: Path | None,
        base: str,
        log: Callable[[str], None],
        network: bool = False,
    ) -> str:
        """The image a case runs in (its own, or built from its Containerfile on `base`);
        CaseImageError when it cannot be found or built."""
        ...

    def service_image(self, build: ServiceBuild, name: str, log: Callable[[str], None]) -> str:
        """A case service's image (its `build:`), built as `name` on first use, with no
        sandbox layer; CaseImageError when it cannot be built."""
        ...

    def build(self, name: str, recipe: str, context: Path) -> None:
        """Build the image `name` from the Containerfile `recipe` (FROM an image already
        here: nothing is pulled) over the folder `context`, as an agent adds its CLI;
        ImageBuildError with the builder's last words when it fails."""
        ...

    def probe(self, name: str, command: str, timeout: float) -> tuple[str, str]:
        """Run `command` (sh -c) in a throwaway container of the image `name`, offline:
        what it printed on stdout and on stderr."""
        ...

    def remove(self, name: str) -> None:
        """Remove the image `name` (gone already is fine)."""
        ...


class SandboxProvider(Protocol):
    """Makes sandboxes, workspaces and pods."""

    @property
    def channel(self) -> str:
        """ "local": a Mount is a bind mount; "api": the service shares no filesystem with this
        host, so a Mount is a copy made when the sandbox is created (sandbox/podman/channel.py)."""
        ...

    async def create(self, spec: SandboxSpec) -> Sandbox: ...

    async def pod(self, spec: SandboxSpec) -> Pod:
        """A pod running `spec.services` (in order), each healthy before the next starts,
        with a fresh volume for each of the case's volumes (`spec.volumes` and those its
        services name);
        SandboxError naming the service and why when one does not become healthy."""
        ...

    async def workspace(self, size: str, owner: str = AGENT) -> Workspace:
        """A fresh, empty workspace of at most `size` bytes belonging to `owner`."""
        ...

    async def aclose(self) -> None: ...

    def stop_now(self) -> None:
        """Remove every sandbox and workspace it made, synchronously: the process is exiting
        (a second Ctrl-C) and no cleanup of its own will run."""
        ...
