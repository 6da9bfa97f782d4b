"""Sessions as Ray tasks (docs/scale-out.md): one arm session — sandbox, staging, the agent, the
check phase, copy-out — runs on a worker node that holds a `skillbench` slot, through the same code
a local run uses (the engine's own attempt), with the node's podman. The task streams back what
the session wrote to its run folder in bounded chunks and then its record; the driver writes
the run folder, the journal, the judge and trigger calls as for a local run.

Provider keys never leave the driver: a worker's session reaches the model through the
driver's relay (relay.py) with a per-run token.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import shutil
import socket
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec
import ray
from msgspec.structs import replace

from skillbench.cluster.connect import SLOT, ClusterError
from skillbench.cluster.relay import DriverRelay
from skillbench.engine.plan import EvalError, EvalOptions, sessions_of
from skillbench.engine.session import Sessions
from skillbench.evals import load_assets
from skillbench.evals.skills import RUNS_DIR, read_skill
from skillbench.results.records import Plan, SessionRecord, session_key
from skillbench.sandbox import make_provider
from skillbench.sandbox.runtime import private_dir

CHUNK = 1 << 20  # bytes of a file per streamed item: no object holds a whole workspace
# what a session writes to the run folder (network/: its egress proxy's connections)
KEPT = ("transcripts", "exchanges", "workspaces", "network")


class Job(msgspec.Struct, kw_only=True):
    """One attempt of one arm session, as a worker needs it."""

    opts: EvalOptions
    plan: Plan
    name: str
    arm: str
    rep: int
    attempt: int
    spend: float  # what the run has spent so far (the session's --max-cost budget)
    snapshot: str | None  # the run-folder path of the workspace archive reuse keeps, if any
    env: dict[str, str]  # the driver relay's base URLs and token


def pack(folder: Path) -> bytes:
    """A skill folder as a tar (its links kept as links; run folders left out)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(folder, arcname=".", filter=lambda t: None if RUNS_DIR in t.name else t)
    return out.getvalue()


def unpack(data: bytes, into: Path) -> Path:
    if not into.is_dir():
        into.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=into.parent, prefix=f"{into.name}."))
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(partial, filter="data")
        try:
            partial.rename(into)
        except OSError:  # another task on this node unpacked it first
            shutil.rmtree(partial, ignore_errors=True)
    return into


class _Quiet:
    def planned(self, total: int, done: int) -> None: ...

    def started(self, key: str) -> None: ...

    def finished(self, record: SessionRecord, spend: float) -> None: ...


def node_name() -> str:
    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def run_session(
    job: bytes, skill: bytes, incumbent: bytes | None, siblings: dict[str, Any]
) -> Iterator[Any]:
    """On a worker: the session's attempt; yields its node, its files in chunks, its record.
    `siblings` are the library arm's other skills (digest -> their packed folder's ref)."""
    decoded = msgspec.msgpack.decode(job, type=Job)
    yield ("node", node_name())
    cache = node_cache()
    scratch = Path(tempfile.mkdtemp(prefix="skillbench-session-"))
    try:
        try:
            library = {d: ray.get(ref) for d, ref in siblings.items()}
            record = asyncio.run(_attempt(decoded, skill, incumbent, library, cache, scratch))
        except EvalError as exc:  # a refused run (contamination): the driver stops it
            yield ("refused", str(exc))
            return
        except Exception as exc:  # (its class may not unpickle on the driver: send the text)
            yield ("failed", f"{type(exc).__name__}: {exc}"[:500])
            return
        for path in sorted(scratch.rglob("*")):
            rel = path.relative_to(scratch)
            wanted = rel.parts[0] in KEPT or rel.as_posix() == decoded.snapshot
            if not wanted or path.is_symlink() or not path.is_file():
                continue
            with path.open("rb") as f:
                chunk, first = f.read(CHUNK), True
                while chunk or first:
                    yield ("file", rel.as_posix(), chunk, first)
                    chunk, first = f.read(CHUNK), False
        yield ("record", msgspec.msgpack.encode(record))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def node_cache() -> Path:
    """This node's unpacked skills: a folder only this user can reach, since what is
    unpacked there already is used as it is (another user's would hand the worker their
    evals)."""
    return private_dir(Path(tempfile.gettempdir()) / f"skillbench-{os.getuid()}-cluster")


async def _attempt(
    job: Job,
    skill: bytes,
    incumbent: bytes | None,
    library: dict[str, bytes],
    cache: Path,
    scratch: Path,
) -> SessionRecord:
    os.environ.update(job.env)  # this worker process reaches the model through the driver
    plan = job.plan
    # keyed by the skill's bytes and its evals' (the skill digest leaves evals/ out: a case
    # edited between runs must not run as the copy an earlier run left on this node)
    key = f"{plan.version}-{plan.assets_digest}".replace(":", "-")
    local = unpack(skill, cache / key / plan.skill)  # (its own name)
    if incumbent is not None and plan.incumbent is not None:
        path = unpack(incumbent, cache / plan.incumbent.digest.replace(":", "-") / plan.skill)
        plan = replace(plan, incumbent=replace(plan.incumbent, path=str(path)))
    if plan.library is not None:
        here = tuple(
            replace(
                s, path=str(unpack(library[s.digest], cache / s.digest.replace(":", "-") / s.name))
            )
            for s in plan.library.skills
        )
        plan = replace(plan, library=replace(plan.library, skills=here))
    opts = replace(job.opts, skill_dir=str(local), out=str(scratch), resume=None)
    sessions = sessions_of(load_assets(local), opts.case)
    runner = Sessions(opts, plan, scratch, read_skill(local), sessions, _Quiet())
    runner.spend = job.spend
    provider = make_provider(opts.settings.sandbox.provider)
    try:
        snapshot = scratch / job.snapshot if job.snapshot else None
        return await runner.attempt(provider, job.name, job.arm, job.rep, job.attempt, snapshot)
    finally:
        await runner.close(provider)


class Cluster:
    """The driver's side: where sessions are placed, and what came of the nodes."""

    def __init__(self, address: str, relay: DriverRelay):
        self.address = address
        self.relay = relay
        self.lost: dict[str, int] = {}  # node -> sessions it lost mid-run
        self.placed: dict[str, int] = {}  # node -> sessions it finished
        self._task = ray.remote(run_session).options(
            resources={SLOT: 1}, num_cpus=0, max_retries=0, num_returns="streaming"
        )
        self._packed: dict[str, Any] = {}
        self._cancelled: list[Any] = []  # generators of cancelled tasks, cleaning up

    def _ref(self, key: str, folder: Path) -> Any:
        if key not in self._packed:
            self._packed[key] = ray.put(pack(folder))
        return self._packed[key]

    async def place(
        self, runner: Sessions, name: str, arm: str, rep: int, attempt: int, snapshot: Path | None
    ) -> SessionRecord:
        """Run one attempt on a worker; write what it returns into the runner's run folder."""
        plan = runner.plan
        self.relay.bind(runner.ledger)
        job = Job(
            opts=runner.opts,
            plan=plan,
            name=name,
            arm=arm,
            rep=rep,
            attempt=attempt,
            spend=runner.spend,
            snapshot=snapshot.relative_to(runner.run_dir).as_posix() if snapshot else None,
            env=self.relay.env(),
        )
        skill = self._ref(plan.version, Path(runner.opts.skill_dir))
        incumbent = None
        if plan.incumbent is not None:
            incumbent = self._ref(plan.incumbent.digest, Path(plan.incumbent.path))
        siblings = {}
        if plan.library is not None:
            siblings = {s.digest: self._ref(s.digest, Path(s.path)) for s in plan.library.skills}
        key = session_key(name, arm, rep)
        gen: Any = self._task.remote(msgspec.msgpack.encode(job), skill, incumbent, siblings)
        node = "an unknown node"
        try:
            async for ref in gen:
                item = await ref
                if item[0] == "node":
                    node = item[1]
                elif item[0] == "file":
                    _write(runner.run_dir, item[1], item[2], item[3], job.snapshot, key)
                elif item[0] == "refused":
                    raise EvalError(item[1])
                elif item[0] == "failed":
                    why = f"the session failed on {node}: {item[1]}"
                    return _errored(key, name, arm, rep, attempt, why, node)
                else:
                    record = msgspec.msgpack.decode(item[1], type=SessionRecord)
                    self.placed[node] = self.placed.get(node, 0) + 1
                    return replace(record, node=node)
        except asyncio.CancelledError:
            ray.cancel(gen)  # the task's own cleanup removes its sandboxes ...
            self._cancelled.append(gen)  # ... which close() waits for
            raise
        except ray.exceptions.RayTaskError as exc:
            why = f"the session failed on {node}: {str(exc.cause)[:300]}"
            return _errored(key, name, arm, rep, attempt, why, node)
        except ray.exceptions.RayError as exc:
            self.lost[node] = self.lost.get(node, 0) + 1
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            why = f"{node} was lost mid-session ({type(exc).__name__}: {first})"
            return _errored(key, name, arm, rep, attempt, why, node)
        raise ClusterError(f"the session {key} on {node} ended without a record")

    def report(self) -> dict[str, Any]:
        return {"address": self.address, "sessions": self.placed, "lost": self.lost}

    def close(self, wait: float = 60.0) -> None:
        """Stop the relay once every cancelled task has removed its sandboxes: a driver that
        exits first makes Ray kill them mid-cleanup (their owner is gone)."""
        if self._cancelled:
            done = [g.completed() for g in self._cancelled]
            ray.wait(done, num_returns=len(done), timeout=wait)
        self.relay.stop()


def _errored(
    key: str, name: str, arm: str, rep: int, attempt: int, why: str, node: str
) -> SessionRecord:
    """An infrastructure error: the engine tries the session once more, elsewhere."""
    return SessionRecord(
        key=key,
        session=name,
        arm=arm,
        rep=rep,
        outcome="error",
        attempts=attempt,
        error=why,
        node=node,
    )


def _write(
    run_dir: Path, rel: str, chunk: bytes, first: bool, snapshot: str | None, key: str
) -> None:
    """One chunk of a file the task returned, written only under its own session's names (a
    worker is not trusted with another session's transcript, nor anything else)."""
    if not _owned(rel, snapshot, key):
        raise ClusterError(f"a worker sent a file that is not this session's: {rel!r}")
    dest = run_dir / rel
    # never through a link already in the run folder (copy-out makes none; a folder someone
    # else prepared may have one): it would put the worker's bytes where it points
    here = run_dir
    for part in PurePosixPath(rel).parts:
        here = here / part
        if here.is_symlink():
            raise ClusterError(f"a worker's file would be written through a link: {rel!r}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if first else os.O_APPEND)
    with os.fdopen(os.open(dest, flags, 0o666), "wb") as f:
        f.write(chunk)


def _owned(rel: str, snapshot: str | None, key: str) -> bool:
    """Whether `rel` is one of session `key`'s files: its transcript (and earlier attempts'),
    exchanges and network log, its workspace folder, or the snapshot it was sent."""
    if rel == snapshot:
        return True
    parts = rel.split("/")
    if (
        len(parts) < 2
        or parts[0] not in KEPT
        or any(p in ("", ".", "..") or "\0" in p for p in parts)
    ):
        return False
    if parts[0] == "workspaces":
        return len(parts) > 2 and parts[1] == key
    own = rf"{re.escape(key)}(\.attempt[0-9]+)?\.jsonl"
    return len(parts) == 2 and re.fullmatch(own, parts[1]) is not None
