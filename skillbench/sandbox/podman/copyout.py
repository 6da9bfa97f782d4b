"""Copying an arm's workspace out of its sandbox: an untrusted tar stream, unpacked safely.

The agent made the tree, so it may hold anything: a 2 GB sparse file, a venv full of
absolute symlinks, FIFOs, devices, names with `..`. The stream is read as it arrives (never
held whole in memory), file content stops at a byte cap, symlinks are recorded as data (their
targets as text in `<dest>.symlinks.json` beside the copy, never as live links on the host,
where a viewer or a later copy could follow them), nothing is written below a link, and
whatever is left out is returned as a note. No input makes it raise: an error ends the copy
with a note.
"""

from __future__ import annotations

import json
import os
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

_CHUNK = 1 << 16
_MAX_NOTES = 20
_HEADER_ALLOWANCE = 64 << 20  # stream bytes beyond the cap for headers of empty entries
# folders below the copied one: a workspace's own trees (node_modules among them) are far
# shallower, and a chain thousands deep made each entry's copy walk (and a later removal
# recurse) that deep, stalling the run for many minutes
MAX_DEPTH = 64


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
    return f"{n / (1 << 20):g} MB" if n >= 1 << 20 else f"{n} bytes"


def _parts(name: str, strip_top: bool) -> PurePosixPath | None:
    """The member's path below where it is unpacked, or None when it is absolute or climbs
    out. With `strip_top`, the archive's top entry is the copied folder itself."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    if strip_top:
        parts = parts[1:]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _safe_parent(
    dest: Path, rel: PurePosixPath, links: dict[str, str], made: set[str]
) -> Path | None:
    """The host folder for `rel`'s parent, made if missing; None if any part is a link (one
    recorded, or one on disk). `made`: folders already found safe (a folder stays one: no
    link is ever made on the host, and an entry clashing with a folder is left out)."""
    parent = rel.parent
    if parent.as_posix() in made:
        return dest / parent
    here = dest
    for i, part in enumerate(rel.parts[:-1]):
        here = here / part
        if here.is_symlink() or PurePosixPath(*rel.parts[: i + 1]).as_posix() in links:
            return None
        if not here.exists():
            here.mkdir()
        elif not here.is_dir():
            return None
    made.update(PurePosixPath(*rel.parts[: i + 1]).as_posix() for i in range(len(rel.parts) - 1))
    return here


class CopyOut:
    """One copy of a sandbox folder to `dest`, possibly in several archives, sharing one cap
    on file content (and a looser one on archive bytes read)."""

    def __init__(self, dest: Path, cap: int):
        self.dest = dest
        self.cap = cap
        self.budget = cap
        self.stream_left = cap + _HEADER_ALLOWANCE
        self.notes = _Notes()
        self.links: dict[str, str] = {}  # path in the copy -> the link's target, as text
        self.made: set[str] = set()  # folders made or found safe, as paths in the copy
        self.too_deep = 0  # entries more than MAX_DEPTH folders down, left out
        self.manifest = dest.with_name(f"{dest.name}.symlinks.json")
        dest.mkdir(parents=True, exist_ok=True)

    def extract(self, chunks: Iterable[bytes], under: str = "", strip_top: bool = True) -> None:
        """Unpack one tar stream at `dest/under`; never raises for what the stream holds."""
        if self.stream_left <= 0:
            return
        stream = _Stream(chunks, self.stream_left)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                for member in tar:
                    rel = _parts(member.name, strip_top)
                    if rel is None:
                        self.notes.add(f"{member.name}: unsafe name, left out")
                    elif rel != PurePosixPath("."):
                        self._one(tar, member, PurePosixPath(under) / rel)
        except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
            if stream.read_total >= stream.limit:
                self.notes.add(
                    f"copy stopped: more than {_mb(self.cap + _HEADER_ALLOWANCE)} of archive read"
                )
            else:
                self.notes.add(f"copy ended early: {exc}")
        self.stream_left -= stream.read_total

    def _one(self, tar: tarfile.TarFile, member: tarfile.TarInfo, rel: PurePosixPath) -> None:
        if len(rel.parts) > MAX_DEPTH + 1:
            self.too_deep += 1
            return
        parent = _safe_parent(self.dest, rel, self.links, self.made)
        if parent is None:
            self.notes.add(f"{rel}: below a symlink, left out")
            return
        target = parent / rel.name
        clash = f"{rel}: clashes with an entry already copied, left out"
        if str(rel) in self.links:
            self.notes.add(clash)
        elif member.isdir():
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                self.notes.add(clash)
            else:
                target.mkdir(exist_ok=True)
        elif member.issym():
            self.symlink(str(rel), member.linkname)
        elif member.isreg():
            if member.size > self.budget:
                self.left_out(str(rel), member.size)
                return
            mode = 0o755 if member.mode & 0o111 else 0o644
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            except OSError:
                self.notes.add(clash)
                return
            source = tar.extractfile(member)
            with os.fdopen(fd, "wb") as out:
                while source is not None and (block := source.read(_CHUNK)):
                    out.write(block)
            self.budget -= member.size
        elif member.islnk():
            self.notes.add(f"{rel}: a hard link to {member.linkname}, left out")
        else:
            kind = "FIFO" if member.isfifo() else "device or special file"
            self.notes.add(f"{rel}: a {kind}, left out")

    def symlink(self, rel: str, link: str) -> None:
        """Record a link and its target (never made, never followed), unless something is
        already there."""
        path = PurePosixPath(rel)
        parent = _safe_parent(self.dest, path, self.links, self.made)
        if parent is None:
            self.notes.add(f"{rel}: below a symlink, left out")
        elif os.path.lexists(parent / path.name) or path.as_posix() in self.links:
            self.notes.add(f"{rel}: clashes with an entry already copied, left out")
        else:
            self.links[path.as_posix()] = link

    def left_out(self, rel: str, size: int) -> None:
        """Note a file too big for what is left of the cap."""
        self.notes.add(
            f"{rel}: {size} bytes, over what is left of the {_mb(self.cap)} copy cap, left out"
        )

    def done(self) -> list[str]:
        """Write the links' record (when there are links); the notes on everything left out."""
        if self.too_deep:
            self.notes.add(f"{self.too_deep} entries more than {MAX_DEPTH} folders down, left out")
        if self.links:
            try:
                data = json.dumps(dict(sorted(self.links.items())), indent=1)
                self.manifest.write_text(data + "\n", encoding="utf-8", errors="replace")
            except OSError as exc:
                self.notes.add(f"symlinks not recorded: {exc.strerror or exc}")
        return self.notes.done()
