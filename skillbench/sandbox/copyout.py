"""Copying an arm's workspace out of its sandbox: an untrusted tar stream, unpacked safely.

The agent made the tree, so it may hold anything: a 2 GB sparse file, a venv full of
absolute symlinks, FIFOs, devices, names with `..`. The stream is read as it arrives (never
held whole in memory), file content stops at a byte cap, symlinks are recreated as links and
never followed (nothing is written through a path with a link in it), and whatever is left
out is returned as a note. No input makes it raise: an error ends the copy with a note.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

_CHUNK = 1 << 16
_MAX_NOTES = 20
_HEADER_ALLOWANCE = 64 << 20  # stream bytes beyond the cap for headers of empty entries


class _Stream:
    """A read()-able view of an iterator of byte chunks, counting what it hands out."""

    def __init__(self, chunks: Iterable[bytes], limit: int):
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buf = b""
        self.read_total = 0
        self.limit = limit

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._buf) < size) and self.read_total < self.limit:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            self._buf += chunk
            self.read_total += len(chunk)
        if size < 0:
            size = len(self._buf)
        out, self._buf = self._buf[:size], self._buf[size:]
        return out


class _Notes:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.dropped = 0

    def add(self, text: str) -> None:
        if len(self.items) < _MAX_NOTES:
            self.items.append(text)
        else:
            self.dropped += 1

    def done(self) -> list[str]:
        return self.items + ([f"... and {self.dropped} more left out"] if self.dropped else [])


def _mb(n: int) -> str:
    return f"{n / (1 << 20):g} MB"


def _relative(name: str) -> PurePosixPath | None:
    """The member's path below the copied folder (the archive holds the folder itself), or
    None when it is absolute or climbs out."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    rel = PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath(".")
    return rel


def _safe_parent(dest: Path, rel: PurePosixPath) -> Path | None:
    """The host folder for `rel`'s parent, made if missing; None if any part is a link."""
    here = dest
    for part in rel.parts[:-1]:
        here = here / part
        if here.is_symlink():
            return None
        if not here.exists():
            here.mkdir()
        elif not here.is_dir():
            return None
    return here


def extract_capped(chunks: Iterable[bytes], dest: Path, cap: int) -> list[str]:
    """Unpack a tar stream of one folder into `dest`, at most `cap` bytes of file content.
    Returns notes on everything left out; never raises for what the stream holds."""
    dest.mkdir(parents=True, exist_ok=True)
    notes = _Notes()
    stream = _Stream(chunks, cap + _HEADER_ALLOWANCE)
    budget = cap
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
            for member in tar:
                rel = _relative(member.name)
                if rel is None:
                    notes.add(f"{member.name}: unsafe name, left out")
                    continue
                if rel == PurePosixPath("."):
                    continue
                parent = _safe_parent(dest, rel)
                if parent is None:
                    notes.add(f"{rel}: below a symlink, left out")
                    continue
                target = parent / rel.name
                if member.isdir():
                    if target.is_symlink() or (target.exists() and not target.is_dir()):
                        notes.add(f"{rel}: clashes with an entry already copied, left out")
                    else:
                        target.mkdir(exist_ok=True)
                elif member.issym():
                    if os.path.lexists(target):
                        notes.add(f"{rel}: clashes with an entry already copied, left out")
                    else:
                        os.symlink(member.linkname, target)  # kept as a link, never followed
                elif member.isreg():
                    if member.size > budget:
                        notes.add(f"{rel}: {member.size} bytes, over what is left of the "
                                  f"{_mb(cap)} copy cap, left out")  # fmt: skip
                        continue
                    source = tar.extractfile(member)
                    mode = 0o755 if member.mode & 0o111 else 0o644
                    try:
                        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                     mode)  # fmt: skip
                    except OSError:
                        notes.add(f"{rel}: clashes with an entry already copied, left out")
                        continue
                    with os.fdopen(fd, "wb") as out:
                        while source is not None and (block := source.read(_CHUNK)):
                            out.write(block)
                    budget -= member.size
                elif member.islnk():
                    notes.add(f"{rel}: a hard link to {member.linkname}, left out")
                else:
                    kind = "FIFO" if member.isfifo() else "device or special file"
                    notes.add(f"{rel}: a {kind}, left out")
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        if stream.read_total >= stream.limit:
            notes.add(f"copy stopped: more than {_mb(stream.limit)} of archive read")
        else:
            notes.add(f"copy ended early: {exc}")
    return notes.done()
