"""`claude-code`: the real Claude Code CLI inside the arm's sandbox (design §10).

The CLI comes from the npm registry (the native binary ships in
`@anthropic-ai/claude-code-linux-x64`; no node at run time), pinned and cached by version
under ~/.cache/skillbench/agents/, and baked into an image variant of the sandbox image. It runs
as the unprivileged `agent` user with a fresh config dir (no ambient skills) holding the
staged skill as a real Claude Code skill, and reaches its model only through the session's
broker (the sandbox holds a placeholder key). Its stream-json events become the one
transcript schema; its `Bash` calls are `bash` commands for the checks.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillbench.agent.loop import UNATTENDED_NOTE, SessionResult
from skillbench.agents.base import AgentError, SessionRequest
from skillbench.broker import Broker
from skillbench.models import parse_model
from skillbench.models.base import Usage
from skillbench.sandbox.base import HOMES, SKILLS_DIR, WORKDIR, Relay, Sandbox, SandboxError
from skillbench.sandbox.image import image_exists
from skillbench.sandbox.stage import ContaminationError
from skillbench.transcript import TraceWriter

VERSION = "2.1.332"  # pinned: the version the tests ran; `[agents.claude-code] version`
PACKAGE = "@anthropic-ai/claude-code-linux-x64"
RELAY_PORT = 8377  # the broker's address inside the sandbox: http://127.0.0.1:8377
CONFIG_DIR = f"{HOMES['agent']}/.claude"
PLACEHOLDER_KEY = "sk-ant-placeholder-the-broker-holds-the-key"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
OUTPUT_CAP = 256 << 20  # the CLI's whole event stream is the transcript


def cache_dir() -> Path:
    """Where downloaded agent CLIs are kept: $XDG_CACHE_HOME/skillbench (~/.cache/skillbench)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillbench"


class ClaudeCodeAgent:
    name = "claude-code"

    def __init__(self, *, version: str = VERSION, max_retries: int = 4, **_: object):
        self._version = version
        self.max_retries = max_retries  # the CLI's own retries of a failed model call

    def version(self) -> str:
        return self._version

    def check_model(self, model: str) -> None:
        if parse_model(model).provider != "anthropic":
            raise AgentError(f"--agent claude-code speaks the Anthropic API: use --model "
                             f"anthropic/<model>, not {model}")  # fmt: skip

    # --- the image variant ----------------------------------------------------------------

    def image_name(self, base: str) -> str:
        return f"localhost/skillbench-claude-code:{base.rsplit(':', 1)[-1]}-{self._version}"

    def image(self, base: str, log: Callable[[str], None]) -> str:
        name = self.image_name(base)
        if not image_exists(name):
            binary = self._binary(log)
            log(f"building {name} (the sandbox image plus Claude Code {self._version})")
            recipe = f"FROM {base}\nCOPY claude /usr/local/bin/claude\n"
            done = subprocess.run(
                ["podman", "build", "--pull=never", "-q", "-t", name, "-f", "-",
                 str(binary.parent)], input=recipe.encode(), capture_output=True,
            )  # fmt: skip
            if done.returncode != 0:
                raise AgentError(f"could not build {name}: "
                                 f"{done.stderr.decode(errors='replace')[-500:]}")  # fmt: skip
        return name

    def _binary(self, log: Callable[[str], None]) -> Path:
        """The CLI's native binary, fetched from the npm registry once per version."""
        folder = cache_dir() / "agents" / "claude-code" / self._version
        binary = folder / "claude"
        if binary.is_file():
            return binary
        log(f"fetching {PACKAGE}@{self._version} from the npm registry (~190 MB)")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            done = subprocess.run(["npm", "pack", f"{PACKAGE}@{self._version}", "--silent"],
                                  cwd=tmp, capture_output=True, text=True)  # fmt: skip
            if done.returncode != 0:
                raise AgentError(f"npm pack {PACKAGE}@{self._version} failed (is npm installed "
                                 f"and the registry reachable?): {done.stderr[-300:]}")  # fmt: skip
            (tgz,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tgz) as tar:
                member = tar.getmember("package/claude")
                source = tar.extractfile(member)
                assert source is not None
                partial = folder / "claude.partial"
                partial.write_bytes(source.read())
            partial.chmod(0o755)
            partial.replace(binary)
        return binary

    async def aclose(self) -> None:
        pass  # each session's broker is stopped with the session

    # --- a session ------------------------------------------------------------------------

    async def session(self, request: SessionRequest) -> _Session:
        key = os.environ.get("ANTHROPIC_API_KEY", "")
        upstream = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
        broker = Broker(upstream=upstream, api_key=key, model=request.model,
                        exchanges=request.exchanges,
                        prices=request.prices, budget=request.budget).start()  # fmt: skip
        return _Session(self, request, broker)


class _Session:
    def __init__(self, agent: ClaudeCodeAgent, request: SessionRequest, broker: Broker):
        self.agent, self.request, self.broker = agent, request, broker
        self.relay: Relay | None = Relay(RELAY_PORT, "127.0.0.1", broker.port)

    async def close(self) -> None:
        await asyncio.to_thread(self.broker.stop)

    async def run(self, sandbox: Sandbox, trace: TraceWriter) -> SessionResult:
        r = self.request
        started = time.monotonic()
        trace.event("trace_start", case=r.case, arm=r.arm, rep=r.rep, model=r.model,
                    agent=f"claude-code {self.agent.version()}",
                    started_at=datetime.now(UTC).isoformat(timespec="seconds"))  # fmt: skip
        trace.event("message", role="user", text=r.task, usage=None)
        stage = " && ".join(
            [f"mkdir -p {CONFIG_DIR}/skills"]
            + [f"cp -rL {SKILLS_DIR}/{s.name} {CONFIG_DIR}/skills/" for s in r.skills]
        )
        staged = await sandbox.exec(stage, timeout=60)
        if not staged.ok:
            return self._end(trace, started, "error", 0, f"staging the skills: {staged.stderr}")
        argv = [
            *("claude", "-p", r.task, "--output-format", "stream-json", "--verbose"),
            *("--dangerously-skip-permissions", "--model", parse_model(r.model).name),
            *("--max-turns", str(r.max_turns), "--append-system-prompt", UNATTENDED_NOTE),
        ]
        env = {
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{RELAY_PORT}",
            "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
            "CLAUDE_CONFIG_DIR": CONFIG_DIR,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(self.agent.max_retries),
        }
        try:
            done = await sandbox.exec(argv, cwd=WORKDIR, env=env, timeout=r.timeout_s,
                                      output_cap=OUTPUT_CAP)  # fmt: skip
        except SandboxError as exc:
            return self._end(trace, started, "error", 0, f"sandbox: {exc}")
        stop, seen = _replay(done.stdout, trace)
        turns = self.broker.answered  # model calls the provider answered, counted at the broker
        missing = {s.name for s in r.skills} - set(seen or [])
        if seen is not None and missing:  # the guard reads what the agent itself reports
            raise ContaminationError(f"Claude Code's init event lists {sorted(seen)}, not the "
                                     f"staged skill(s) {sorted(missing)}")  # fmt: skip
        if done.timed_out:
            stop = "timeout"
        elif self.broker.exhausted:
            stop = "budget"
        elif stop in (None, "error"):  # no result, or the CLI gave up: infrastructure
            why = "the model could not be reached" if self.broker.failures else (
                f"the CLI exited {done.exit_code}: {done.stderr.strip()[-300:]}")  # fmt: skip
            return self._end(trace, started, "error", turns, why)
        return self._end(trace, started, stop, turns, None)

    def _end(self, trace: TraceWriter, started: float, stop: str, turns: int,
             error: str | None) -> SessionResult:  # fmt: skip
        duration_ms = int((time.monotonic() - started) * 1000)
        usage, cost = self.broker.usage, self.broker.cost  # what the provider counted
        extra = {"error": error} if error else {}
        trace.event("trace_end", stop_reason=stop, turns=turns, duration_ms=duration_ms,
                    usage=usage, cost_usd=cost, **extra)  # fmt: skip
        return SessionResult(stop, turns, duration_ms, usage, cost, error)


_STOPS = {"success": "end_turn"}


def _replay(stdout: str, trace: TraceWriter) -> tuple[str | None, list[str] | None]:
    """Map Claude Code's stream-json onto the transcript. Returns (the stop reason, None when
    the stream has no result; the skills its init event listed)."""
    names: dict[str, str] = {}  # tool_use id -> our name
    stop: str | None = None
    skills: list[str] | None = None
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            skills = [str(s) for s in event.get("skills") or []]
        elif kind == "assistant":
            message = event.get("message") or {}
            for block in message.get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    trace.event("message", role="assistant", text=block["text"],
                                usage=_usage(message.get("usage")))  # fmt: skip
                elif block.get("type") == "tool_use":
                    name = "bash" if block.get("name") == "Bash" else str(block.get("name"))
                    names[str(block.get("id"))] = name
                    trace.event("tool_call", id=block.get("id"), name=name,
                                arguments=block.get("input") or {})  # fmt: skip
        elif kind == "user":
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    tid = str(block.get("tool_use_id"))
                    trace.event("tool_result", id=tid, name=names.get(tid, ""),
                                text=_text(block.get("content")),
                                is_error=bool(block.get("is_error")), exit_code=None)  # fmt: skip
        elif kind == "result":
            # the turn cap is the agent's own end; otherwise a CLI that gave up on its model
            # (its retries spent) says so with is_error: infrastructure
            subtype = str(event.get("subtype"))
            if subtype == "error_max_turns":
                stop = "max_turns"
            else:
                stop = "error" if event.get("is_error") else _STOPS.get(subtype, "error")
    return stop, skills


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(input_tokens=int(raw.get("input_tokens") or 0),
                 output_tokens=int(raw.get("output_tokens") or 0),
                 cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
                 cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0))  # fmt: skip


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
