"""One podman sandbox as the engine sees it: the container and the connection to the
command executor inside it (executor.py, the container's PID 1, on a unix socket in a host
folder bind-mounted into the container, or attached to through the API: channel.py), the
loopback relay it bridges to the host (bridge.py), and the copy of a folder out of it. The
provider that makes and sweeps them is podman.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import io
import itertools
import json
import shutil
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from skillbench.sandbox.base import (
    DEFAULT_OUTPUT_CAP,
    ROOT,
    SKILLS_DIR,
    WORKDIR,
    ExecResult,
    Relay,
    SandboxError,
    WorkspaceRefused,
)
from skillbench.sandbox.podman.bridge import Bridges
from skillbench.sandbox.podman.channel import attach
from skillbench.sandbox.podman.copyout import CopyOut
from skillbench.sandbox.podman.pidfd import InitProcess

if TYPE_CHECKING:
    from skillbench.sandbox.podman.host import PodmanHost

_REPLY_GRACE = 60.0  # seconds past a command's own timeout before the sandbox is declared hung
# (the executor sweeps after a sealed command before it answers: a handover, its link-following
# bounded at 10 s, taming git folders; a workspace must not make that pass for a hang)
_STOP_WAIT = 10.0  # seconds for the kernel to end a killed sandbox's processes


class PodmanSandbox:
    """One podman container and the connection to the executor inside it."""

    def __init__(
        self,
        provider: PodmanHost,
        ctr_id: str,
        sock_dir: Path | None,
        relays: tuple[Relay, ...] = (),
        workdir: str = WORKDIR,
        skills: Path | None = None,
        held: bool = False,
    ):
        self.provider = provider
        self.name = ctr_id[:12]
        self.workdir = workdir
        self.ctr_id = ctr_id
        self._sock_dir = sock_dir
        self._skills = skills  # the host folder behind /skills, copied in by sync_skills
        self._bridges = Bridges(relays, self._send, self._drain, held)
        self._writer: asyncio.StreamWriter | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._init: InitProcess | None = None  # its PID 1, once connected (pidfd.py)
        self._stopped = False
        self.broken: str | None = None  # why the sandbox is no longer usable

    # --- the executor channel -----------------------------------------------------------

    async def connect(self, timeout: float = 30.0) -> None:
        """Connect to the executor once it listens: its socket (the local channel), or an
        attach to its stdio through the API (the api channel, channel.py)."""
        if self._sock_dir is None:
            reader, writer = await asyncio.wait_for(
                attach(self.provider.service.connection, self.ctr_id), timeout
            )
            writer.write(b"\n")  # attached: the executor may answer now
        else:
            reader, writer = await self._connect_socket(timeout)
        try:
            first = await asyncio.wait_for(reader.readline(), timeout)
            ready = json.loads(first or b"{}").get("ready")
        except (TimeoutError, ValueError, OSError):  # OSError: killed as it answered
            ready = False
        if not ready:
            writer.close()
            raise SandboxError(f"sandbox {self.name}: the command executor did not answer")
        self._writer = writer
        self._reader = asyncio.create_task(self._read_replies(reader))
        self._init = InitProcess.of(writer.get_extra_info("socket"), self.ctr_id)

    async def _connect_socket(
        self, timeout: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert self._sock_dir is not None
        path = self._sock_dir / "exec.sock"
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await asyncio.open_unix_connection(str(path), limit=1 << 30)
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise SandboxError(
                        f"sandbox {self.name}: the command executor did not start"
                    ) from None
                await asyncio.sleep(0.01)

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await reader.readline()
            except OSError:  # reset: the container was killed mid-reply
                break
            if not line:
                break
            reply = json.loads(line)
            if "event" in reply:
                self._bridges.relayed(reply)
                continue
            future = self._pending.pop(reply.get("id"), None)
            if future is not None and not future.done():
                future.set_result(reply)
        # EOF: the container is gone (removed, or killed from outside).
        self.broken = self.broken or "the sandbox stopped"
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(SandboxError(f"sandbox {self.name}: {self.broken}"))

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer is not None and not self._closed:
            self._writer.write((json.dumps(message) + "\n").encode())

    async def _drain(self) -> None:
        if self._writer is not None:
            await self._writer.drain()

    async def _call(self, op: str, wait: float, **fields: Any) -> dict[str, Any]:
        if self._closed:
            raise SandboxError(f"sandbox {self.name} is closed")
        if self.broken:
            raise SandboxError(f"sandbox {self.name} is unusable: {self.broken}")
        assert self._writer is not None
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            self._writer.write((json.dumps({"id": rid, "op": op, **fields}) + "\n").encode())
            await self._writer.drain()
            return await asyncio.wait_for(future, wait + _REPLY_GRACE)
        except TimeoutError:
            self.broken = f"no answer to {op} within {wait + _REPLY_GRACE:.0f} s"
            raise SandboxError(f"sandbox {self.name} hung: {self.broken}") from None
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise SandboxError(f"sandbox {self.name}: executor pipe closed: {exc}") from None
        finally:
            self._pending.pop(rid, None)

    @staticmethod
    def _raise_for(reply: dict[str, Any], path: str = "") -> None:
        if "error" not in reply:
            return
        code = reply.get("errno")
        message = reply.get("message", "")
        if code in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise PermissionError(code, message, path)
        if code:
            raise OSError(code, message, path)  # becomes FileNotFoundError etc.
        if reply["error"] == "FileTooLarge":
            raise OSError(errno.EFBIG, "file too large to read", path)
        raise SandboxError(f"{reply['error']}: {message}")

    # --- the Sandbox protocol -----------------------------------------------------------

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
        """Run a command; see base.Sandbox for the semantics."""
        data = stdin.encode() if isinstance(stdin, str) else stdin
        reply = await self._call(
            "exec",
            timeout,
            cmd=cmd if isinstance(cmd, str) else list(cmd),
            timeout=timeout,
            cwd=cwd,
            env=dict(env or {}),
            stdin=None if data is None else base64.b64encode(data).decode(),
            cap=output_cap,
            user=user,
        )
        self._raise_for(reply, cwd or "")
        return ExecResult(
            exit_code=int(reply["exit_code"]),
            stdout=base64.b64decode(reply["stdout"]).decode("utf-8", "replace"),
            stderr=base64.b64decode(reply["stderr"]).decode("utf-8", "replace"),
            timed_out=bool(reply["timed_out"]),
            truncated=bool(reply["truncated"]),
            duration=float(reply["duration"]),
        )

    async def read_file(self, path: str) -> bytes:
        reply = await self._call("read", 60, path=path)
        self._raise_for(reply, path)
        return base64.b64decode(reply["data"])

    async def read_text(self, path: str) -> str:
        """The file decoded as UTF-8 (undecodable bytes replaced)."""
        return (await self.read_file(path)).decode("utf-8", "replace")

    async def write_file(self, path: str, content: str | bytes) -> None:
        data = content.encode() if isinstance(content, str) else content
        reply = await self._call("write", 60, path=path, data=base64.b64encode(data).decode())
        self._raise_for(reply, path)

    async def exists(self, path: str) -> bool:
        reply = await self._call("exists", 30, path=path)
        self._raise_for(reply, path)
        return bool(reply["exists"])

    async def observe(self, skills: Mapping[str, Sequence[str]], *, now: bool) -> None:
        folders = {k: list(v) for k, v in skills.items()}
        reply = await self._call("observe", 60, skills=folders, now=now)
        self._raise_for(reply)

    async def observed(self) -> dict[str, dict[str, str]]:
        reply = await self._call("observed", 60)
        self._raise_for(reply)
        if reply.get("blind"):
            raise SandboxError(str(reply["blind"]))
        seen = reply["seen"]
        return {str(k): {str(f): str(how) for f, how in v.items()} for k, v in seen.items()}

    async def sync_skills(self) -> None:
        # On the api channel /skills is a tmpfs (the root filesystem is read-only once the
        # sandbox runs, and setup must see no skill): filled here as root, root's files, no
        # one's to write. (Root in the sandbox could; only the host runs anything as root.)
        if self._sock_dir is not None or self._skills is None:
            return
        script = (  # a mirror of the host folder, as a bind mount would show it
            'find "$1" -mindepth 1 -delete && tar -x --no-same-owner -C "$1" -f - && '
            'chmod -R a-w "$1"'
        )
        done = await self.exec(
            ["sh", "-c", script, "sync_skills", SKILLS_DIR],
            stdin=await asyncio.to_thread(_tar_folder, self._skills),
            user=ROOT,
            timeout=120,
        )
        if not done.ok:
            raise SandboxError(f"could not stage the skills: {done.stderr.strip()[-300:]}")

    async def hand_over(self, user: str, also: Sequence[str] = ()) -> list[str]:
        reply = await self._call("handover", 300, user=user, also=list(also))
        self._raise_for(reply, self.workdir)
        if reply.get("refused"):
            raise WorkspaceRefused(str(reply["refused"]))
        self._bridges.held = False  # the agent's processes are gone: its relays may carry
        return [str(n) for n in reply["notes"]]

    async def put_tree(self, src: Path, dest: str) -> None:
        # unpacked by the sandbox's user, so the files are theirs (never root's)
        data = await asyncio.to_thread(_tar_folder, src)
        done = await self.exec(
            ["sh", "-c", 'mkdir -p -- "$1" && exec tar -x -C "$1" -f -', "put_tree", dest],
            stdin=data,
            timeout=120,
        )
        if not done.ok:
            raise PermissionError(errno.EACCES, done.stderr.strip()[-500:], dest)

    async def get_tree(
        self, src: str, dest: Path, *, cap: int = 100 << 20, seconds: float = 120.0
    ) -> list[str]:
        if not await self.exists(src):
            raise FileNotFoundError(errno.ENOENT, "no such folder in the sandbox", src)
        # each part is one call of the archive API (~0.1 s): thousands of files beside one
        # that cannot fit would otherwise hold the run for as many tenths of a second
        deadline = asyncio.get_running_loop().time() + seconds
        copy = CopyOut(dest, cap)
        # Files that can never fit are found first and left out of the archives, so a 2 GB
        # file cannot stop the copy of everything after it.
        big = await self._find0(
            src, "-xdev", "-type", "f", "-size", f"+{cap}c", "-printf", "%s/%P\\0"
        )
        too_big = {rel: int(size) for size, rel in (entry.split("/", 1) for entry in big)}
        for rel, size in sorted(too_big.items()):
            copy.left_out(rel, size)
        parts = await self._parts(src, "", set(too_big), copy, deadline)
        for done, part in enumerate(parts):
            if copy.stream_left <= 0:
                break
            if asyncio.get_running_loop().time() > deadline:
                copy.notes.add(
                    f"copy stopped after {seconds:g} s: {len(parts) - done} of {len(parts)} "
                    "parts not copied"
                )
                break
            path = f"{src.rstrip('/')}/{part}" if part else src
            under = str(PurePosixPath(part).parent) if part else ""
            try:
                await asyncio.to_thread(self._get_archive, path, copy, under, not part)
            except SandboxError as exc:
                copy.notes.add(f"{part}: not copied ({exc})")
        return copy.done()

    async def save_archive(self, src: str, dest: Path, *, cap: int) -> bool:
        return await asyncio.to_thread(self._save_archive, src, dest, cap)

    def _save_archive(self, src: str, dest: Path, cap: int) -> bool:
        with self._archive(src, f"archive {src}") as chunks, dest.open("wb") as out:
            for chunk in chunks:
                out.write(chunk)
                if out.tell() > cap:
                    break
            fits = out.tell() <= cap
        if not fits:
            dest.unlink()
        return fits

    async def load_archive(self, archive: Path, dest: str) -> None:
        # as root: what the image had at `dest` goes, the archive's owners and modes stay
        script = 'find "$1" -mindepth 1 -delete && exec tar -x -p --strip-components=1 -C "$1" -f -'
        done = await self.exec(
            ["sh", "-c", script, "load_archive", dest],
            stdin=await asyncio.to_thread(archive.read_bytes),
            user=ROOT,
            timeout=300,
        )
        if not done.ok:
            raise SandboxError(f"could not load {archive} into {dest}: {done.stderr[-300:]}")

    async def _find0(self, *args: str) -> list[str]:
        # as root: every entry, whatever modes the agent left on them
        found = await self.exec(["find", *args], user=ROOT, timeout=120, output_cap=64 << 20)
        return found.stdout.split("\0")[:-1]

    async def _parts(
        self, src: str, rel: str, skip: set[str], copy: CopyOut, deadline: float
    ) -> list[str]:
        """The paths under `src` to archive whole so that nothing in `skip` is included.
        Links and special files met on the way are recreated or noted here: the archive API
        would follow a link it is pointed at. Folders not listed by `deadline` are left out."""
        if not any(not rel or s.startswith(f"{rel}/") for s in skip):
            return [rel]
        if asyncio.get_running_loop().time() > deadline:
            copy.notes.add(f"{rel or '.'}: not copied (the copy ran out of time)")
            return []
        parts = []
        folder = f"{src.rstrip('/')}/{rel}" if rel else src
        found = await self._find0(
            folder, "-mindepth", "1", "-maxdepth", "1", "-printf", "%y%P\\0%l\\0"
        )
        for entry, link in zip(found[::2], found[1::2], strict=True):
            kind, path = entry[0], f"{rel}/{entry[1:]}" if rel else entry[1:]
            if path in skip:
                continue
            if kind == "l":
                copy.symlink(path, link)
            elif kind in "dfD":
                parts += await self._parts(src, path, skip, copy, deadline)
            else:
                what = {"p": "FIFO", "s": "socket"}.get(kind, "device or special file")
                copy.notes.add(f"{path}: a {what}, left out")
        return parts

    def _get_archive(self, src: str, copy: CopyOut, under: str, strip_top: bool) -> None:
        with self._archive(src, f"copy {src} out") as chunks:
            copy.extract(chunks, under=under, strip_top=strip_top)

    @contextlib.contextmanager
    def _archive(self, src: str, failed: str) -> Iterator[Iterator[bytes]]:
        """podman's tar of `src` in the sandbox, in chunks; `failed` says what could not be
        done when podman refuses."""
        # Streamed (podman-py's own get_archive reads the whole tar into memory first).
        response = self.provider.client().api.get(
            f"/containers/{self.ctr_id}/archive", params={"path": [src]}, stream=True
        )
        try:
            if not response.ok:
                raise SandboxError(
                    f"sandbox {self.name}: could not {failed} ({response.status_code})"
                )
            yield response.iter_content(1 << 16)
        finally:
            response.close()

    async def stop(self) -> None:
        """End every process in the sandbox, verified: the kernel's word through a pidfd of
        its PID 1 (pidfd.py), or podman's stop when that is not visible from here (it returns
        once PID 1 is gone, which is the same proof). The container stays until `close`."""
        if self._stopped:
            return
        self._stopped = True
        self.broken = self.broken or "the sandbox was stopped"
        if self._init is not None and await self._init.kill(_STOP_WAIT):
            return
        await asyncio.to_thread(self.provider.stop_container, self.ctr_id)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.broken = "the sandbox was closed"
        try:
            # killed first (podman's removal of a running one polls for its end); the
            # removal kills it anyway when that fails
            with contextlib.suppress(SandboxError):
                await self.stop()
            await asyncio.to_thread(self._remove)
        finally:
            if self._init is not None:
                self._init.close()
            if self._writer is not None:
                self._writer.close()
            if self._reader is not None:
                await asyncio.gather(self._reader, return_exceptions=True)
            await self._bridges.close()
            if self._sock_dir is not None:
                shutil.rmtree(self._sock_dir, ignore_errors=True)
            self.provider._live.discard(self)

    def _remove(self) -> None:
        try:
            self.provider.remove_container(self.ctr_id)
        except Exception as exc:  # anything but already gone (fine) is swept next start
            raise SandboxError(f"could not remove sandbox {self.name}: {exc}") from exc


def _tar_folder(src: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for child in sorted(src.iterdir()):
            tar.add(child, arcname=child.name)
    return buf.getvalue()
