"""This process's private runtime folder (the executor, podman and ssh sockets live there) and
the child-process rule that a helper it starts dies with it."""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import tempfile
from pathlib import Path

from skillbench.sandbox.base import SandboxError


def die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when its parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the service then outlives a crash, as without this


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return private_dir(Path(base) / f"skillbench-{os.getuid()}")


def private_dir(folder: Path) -> Path:
    """`folder`, made if need be, refused unless it is a folder of this user's alone: its
    name is predictable, and in a shared /tmp another user could have made it first (or a
    link by that name), then swap the sockets or files skillbench keeps there."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError as exc:
        raise SandboxError(f"{folder}: cannot make this private folder ({exc})") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise SandboxError(
            f"{folder}: not a folder of this user's alone (a link, another owner, or writable "
            "by others), so another user could reach what skillbench keeps there; remove it"
        )
    if info.st_mode & 0o077:  # ours, readable by others (as an earlier version made it)
        folder.chmod(0o700)
    return folder
