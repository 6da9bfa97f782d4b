"""Configuration: `skillbench.toml` in the current folder or the nearest above it, or
`[tool.skillbench]` in the nearest `pyproject.toml`. Flags override config; config overrides
built-in defaults; `skillbench config` shows each effective value and where it came from.

A skill folder, anything inside it, and the folder holding it (a library such as `skills/`)
never supply settings: those are what is being measured or gated, often downloaded or in a
PR, and a file there could lift the gate's signature rule, zero the prices `--max-cost` counts
with, point runs at someone's cluster, or lift the sandbox's caps. Nor does a folder above the
skill that is not above the current folder (a downloaded `pack/skills/foo` run from elsewhere
would otherwise read `pack/skillbench.toml`): the search starts where the user runs the
command, above any skill library that is; a config file passed over is named on stderr and
ignored."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.evals.model import CASE_TIMEOUT_MINUTES, MAX_TIMEOUT_MINUTES
from skillbench.evals.resources import machine_cpus, machine_memory
from skillbench.evals.skills import SKILL_FILE, VERSION_RE
from skillbench.models import DEFAULT_MODEL, SCRIPTED_ENDPOINT, endpoint
from skillbench.models.pricing import Price, price_for, rates
from skillbench.results.verdict import MAX_K, MIN_NET_LIFT
from skillbench.sandbox import DEFAULT as DEFAULT_SANDBOX
from skillbench.sandbox import choose, unknown
from skillbench.sandbox.base import SandboxSpec, parse_size
from skillbench.util.inputs import InputError, load_toml

MAX_PARALLEL = 64  # sessions (sandboxes) or trigger calls at once
MAX_RETRIES = 20  # of one model call
MAX_REQUEST_TIMEOUT = 3600.0  # seconds one model call may take


class ConfigError(SkillbenchError):
    """The config file is unreadable or has a wrong value; the message names the file."""


class SandboxLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`[sandbox]`: which sandbox provider runs the arms (sandbox/__init__.py, by name), the
    kernel-enforced caps on what an arm can write, and what is kept of a failed arm's
    workspace."""

    provider: str = DEFAULT_SANDBOX
    disk: str = "2g"  # /work
    home: str = "64m"  # the agent's HOME
    tmp: str = "256m"  # /tmp
    keep_workspace: str = "100m"  # copied out of a failed arm, then a note


class ClusterSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`[cluster]`: where sessions run when one machine is not enough (docs/scale-out.md)."""

    address: str | None = None  # what ray.init(address=...) takes; None: this machine


class SignSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`[sign]`: the SSH private key receipts are signed with (docs/trust.md), in CI a secret
    written to a file; relative to the config file. None: receipts are not signed."""

    key: str | None = None


class StatsSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`[stats]`: sequential = true runs every eval under the sequential stopping rule
    (as `eval --sequential`)."""

    sequential: bool = False


class MatrixSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`[matrix]`: every eval is a set run over these agents and models (as `eval --agent a,b
    --model x,y`; docs/results.md, "Set runs"); a flag given replaces its list."""

    agents: list[str] = []
    models: list[str] = []


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every setting with its built-in default."""

    model: str = DEFAULT_MODEL
    judge_model: str | None = None  # defaults to `model`
    agent: str = "builtin"  # what runs in the arms: builtin, claude-code, codex
    agents: dict[str, dict[str, str]] = {}  # [agents.claude-code] version = "2.1.332"
    parallel: int = 4
    # minutes: the cap on a case's `timeout_minutes` (a Harbor task's agent timeout_sec as
    # written); `--max-timeout` raises it for one run
    max_timeout: int = MAX_TIMEOUT_MINUTES
    # "declared": each phase gets its case's `network:` through the egress proxy; "none":
    # no phase reaches anything (`--network none`); evals/netreport.py
    network: str = "declared"
    k: int = 1
    min_net_lift: float = MIN_NET_LIFT  # PASS/FAIL need at least this net lift over units
    team: str | None = None
    memory: str = "2g"
    # the most a case's own `memory:` (Harbor's memory_mb) may give its sandboxes
    max_memory: str = "8g"
    pids: int = 512
    cpus: float = 1.0
    sandbox: SandboxLimits = SandboxLimits()
    cluster: ClusterSettings = ClusterSettings()
    max_retries: int = 4
    request_timeout: float = 600.0
    prices: dict[str, Price] = {}
    gate: dict[str, Any] = {}
    sign: SignSettings = SignSettings()
    stats: StatsSettings = StatsSettings()
    matrix: MatrixSettings = MatrixSettings()
    # `skillbench image build` FROM this digest-pinned Debian image instead of mmdebstrap
    image_from_registry: str | None = None


class Loaded(msgspec.Struct):
    settings: Settings
    sources: dict[str, str]  # setting name -> "default" | file path | "SKILLBENCH_MODEL" | "--flag"
    path: str | None
    # the file's folder holds the skill under test (a pack's root, say): its [gate] may only
    # make the team's policy stricter (team/gate.py load_policy)
    measured: bool = False


def find_config(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest skillbench.toml, or pyproject.toml with [tool.skillbench], at or above the
    current folder as the user reached it ($PWD, so a link into a pack's skills/ does not make
    the pack "above" it): the user's project and the team's, never the thing being measured.
    Never a skill, anything inside it, or a folder holding one (a library, a team's
    skills/<name>/ and skills/ holding v<N> versions), wherever the command runs; and never a
    folder above `start` (the skill a command names) that is not above the current folder,
    such as the `pack/` of a downloaded `pack/skills/foo`; those are named and ignored."""
    chain = _cwd_chain()
    target = start.resolve()
    if target.is_file():
        target = target.parent
    mine = set(chain)
    untrusted: list[Path] = [f for f in (target, *target.parents) if f not in mine]
    for folder in (target, chain[0]):  # a skill's own tree
        skill = next((c for c in (folder, *folder.parents) if (c / SKILL_FILE).is_file()), None)
        if skill is not None:
            untrusted += [f for f in (folder, *folder.parents) if f.is_relative_to(skill.parent)]
    for folder in dict.fromkeys(untrusted):
        _ignore(folder)
    for candidate in chain:
        if candidate in untrusted or not _has_config(candidate):
            continue
        if _holds_skill(candidate):  # only folders with a config file get listed
            _ignore(candidate)
            continue
        found = _config_in(candidate)
        if found:
            return found
    return None


def _cwd_chain() -> list[Path]:
    """The current folder and those above it, as the user sees them ($PWD when it names the
    current folder), each resolved."""
    here = Path.cwd().resolve()
    shown = Path(os.environ.get("PWD", ""))
    try:
        logical = shown.is_absolute() and shown.resolve() == here
    except OSError:
        logical = False
    folders = (shown, *shown.parents) if logical else (here, *here.parents)
    return list(dict.fromkeys(f.resolve() for f in folders))


def _holds_skill(folder: Path) -> bool:
    """A skill library: a skill child, or a child holding v<N> skill versions (a team's
    skills/ and skills/<name>/)."""
    try:
        for child in folder.iterdir():
            if not child.is_dir():
                continue
            if (child / SKILL_FILE).is_file():
                return True
            versions = (v for v in child.iterdir() if VERSION_RE.match(v.name))
            if any((v / SKILL_FILE).is_file() for v in versions):
                return True
    except OSError:
        return False
    return False


def _has_config(folder: Path) -> bool:
    return (folder / "skillbench.toml").is_file() or (folder / "pyproject.toml").is_file()


def _config_in(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    own = folder / "skillbench.toml"
    if own.is_file():
        return own, _read(own)
    project = folder / "pyproject.toml"
    if project.is_file():
        table = _read(project).get("tool", {}).get("skillbench")
        if isinstance(table, dict):
            return project, table
    return None


def _ignore(folder: Path) -> None:
    """Name a config file in a skill's own tree, or above the skill but not above the current
    folder, on stderr without reading it (it may be hostile: a reader is only for files that
    count)."""
    for name in ("skillbench.toml", "pyproject.toml"):
        path = folder / name
        if path.is_file() and (name == "skillbench.toml" or b"skillbench" in _head(path)):
            print(
                f"skillbench: ignoring {path}: settings never come from a skill, the folder "
                "holding it, or a folder above it that is not above the current one; put "
                "them in your project's skillbench.toml (at or above where you run "
                "skillbench, above the skills folder) or pass flags",
                file=sys.stderr,
                flush=True,
            )


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(1 << 20)
    except OSError:
        return b""


def _read(path: Path) -> dict[str, Any]:
    try:
        return load_toml(path)
    except InputError as exc:
        raise ConfigError(str(exc)) from None


def load_settings(start: Path, flags: dict[str, Any] | None = None) -> Loaded:
    """Defaults, then the config file, then SKILLBENCH_MODEL, then flags (None = not given)."""
    data: dict[str, Any] = {}
    sources = {name: "default" for name in Settings.__struct_fields__}
    found = find_config(start)
    path = None
    measures = False
    if found:
        path, table = found
        data.update({k.replace("-", "_"): v for k, v in table.items()})
        for key in data:
            sources[key] = str(path)
        if isinstance(data.get("team"), str):  # a path in a config file is relative to it
            data["team"] = str(path.parent / data["team"])
        sign = data.get("sign")
        if isinstance(sign, dict) and isinstance(sign.get("key"), str):  # so is the key's
            data["sign"] = {**sign, "key": str(path.parent / Path(sign["key"]).expanduser())}
        measures = _measures(path.parent, start)
        lift = data.get("min_net_lift")
        if measures and isinstance(lift, int | float) and lift < MIN_NET_LIFT:
            # a floor the measured tree lowers would pass it on fewer wins: it may only raise it
            _ignored(path, "min-net-lift", f"how many wins a PASS needs (at least {MIN_NET_LIFT})")
            del data["min_net_lift"]
            sources["min_net_lift"] = "default"
        prices = data.get("prices")
        if isinstance(prices, dict) and prices and measures:
            data["prices"] = _local_prices(prices, path)
        cluster = data.get("cluster")
        if isinstance(cluster, dict) and cluster.get("address") and measures:
            # where the sessions, the skill and the relay to the run's key go: a pack's
            # own project file (`cd pack && skillbench eval skills/foo`) never chooses it
            _ignored(
                path,
                "[cluster] address",
                "where its sessions and your model key's relay go; pass --cluster ADDRESS",
            )
            data["cluster"] = {k: v for k, v in cluster.items() if k != "address"}
        if measures and data.get("image_from_registry"):
            _ignored(path, "image-from-registry", "the image its sandboxes and checks run in")
            del data["image_from_registry"]
            sources["image_from_registry"] = "default"
        if measures and "team" in data:
            _ignored(path, "team", "the team repo whose policy, keys and receipts gate (--team)")
            del data["team"]
            sources["team"] = "default"
        sandbox = data.get("sandbox")
        if measures and isinstance(sandbox, dict) and "provider" in sandbox:
            _ignored(path, "[sandbox] provider", "where its sandboxes, and so its checks, run")
            data["sandbox"] = {k: v for k, v in sandbox.items() if k != "provider"}
    if os.environ.get("SKILLBENCH_MODEL") and not (flags or {}).get("model"):
        # the environment sits between the config and the flags (docs/results.md: --model, then
        # SKILLBENCH_MODEL, then the config)
        data["model"] = os.environ["SKILLBENCH_MODEL"]
        sources["model"] = "SKILLBENCH_MODEL"
    for key, value in (flags or {}).items():
        if value is not None:
            data[key] = value
            sources[key] = f"--{key.replace('_', '-')}"
    try:
        settings = msgspec.convert(data, Settings)
    except msgspec.ValidationError as exc:
        where = str(path) if path else "flags"
        raise ConfigError(f"{where}: {exc}") from None
    if not 1 <= settings.k <= MAX_K:
        raise ConfigError(f"{path or 'config'}: k must be between 1 and {MAX_K}")
    if not 0.0 <= settings.min_net_lift <= 1.0:
        raise ConfigError(
            f"{path or 'config'}: min-net-lift is a share of units between 0 and 1 "
            f"(default {MIN_NET_LIFT}), got {settings.min_net_lift}"
        )
    if settings.network not in ("declared", "none"):
        raise ConfigError(
            f'{path or "config"}: network = {settings.network!r}; use "declared" or "none"'
        )
    if not 1 <= settings.max_timeout <= CASE_TIMEOUT_MINUTES:
        raise ConfigError(
            f"{path or 'config'}: max_timeout must be between 1 and {CASE_TIMEOUT_MINUTES} minutes"
        )
    if not 1 <= settings.parallel <= MAX_PARALLEL:
        raise ConfigError(f"{path or 'config'}: parallel must be between 1 and {MAX_PARALLEL}")
    if not 0 <= settings.max_retries <= MAX_RETRIES:
        raise ConfigError(f"{path or 'config'}: max_retries must be between 0 and {MAX_RETRIES}")
    if not 0 < settings.request_timeout <= MAX_REQUEST_TIMEOUT:
        raise ConfigError(
            f"{path or 'config'}: request_timeout must be more than 0 and at most "
            f"{MAX_REQUEST_TIMEOUT:g} seconds"
        )
    for key in ("disk", "home", "tmp", "keep_workspace"):
        value = getattr(settings.sandbox, key)
        try:
            parse_size(value)
        except ValueError:
            raise ConfigError(
                f"{path or 'config'}: sandbox.{key} = {value!r} is not a size; "
                "write it like 512m or 2g"
            ) from None
    for key in ("memory", "max_memory"):
        value = getattr(settings, key)
        try:
            parse_size(value)
        except ValueError:
            raise ConfigError(
                f"{path or 'config'}: {key} = {value!r} is not a size; write it like 512m or 2g"
            ) from None
    _within_the_machine(settings, path, sources)
    _at_list_price(settings, path)
    why = unknown(settings.sandbox.provider)
    if why is not None:
        raise ConfigError(f"{_where(path, 'provider')}: sandbox.provider: {why}")
    choose(settings.sandbox.provider)  # what make_provider() and images_of() give from now on
    if settings.judge_model is None:
        settings.judge_model = settings.model
        sources["judge_model"] = f"{sources['model']} (same as model)"
    return Loaded(settings, sources, str(path) if path else None, measures)


def _ignored(path: Path, key: str, what: str) -> None:
    print(
        f"skillbench: ignoring {key} in {path}: the folder holding the skill under test does "
        f"not choose {what}",
        file=sys.stderr,
        flush=True,
    )


# how many folders below a config file's folder are looked through for a skill, at any depth
# (past that it is taken to hold some: a pack padded with folders must not hide its skills)
_PACK_FOLDERS = 20_000
_NOT_SKILLS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".skillbench"})


def _is_pack(folder: Path) -> bool:
    """Whether `folder` holds a skill anywhere in its tree (a SKILL.md in any case, at any
    depth): skills/, .claude/skills/, .github/skills/, plugins/*/skills/, a group folder,
    wherever an agent or a plugin reads them, or a folder a link in it leads to (an archive's
    `skills` linked to a folder beside it: the folder cap bounds a loop)."""
    for seen, (_, dirnames, filenames) in enumerate(os.walk(folder, followlinks=True)):
        if any(f.lower() == SKILL_FILE.lower() for f in filenames) or seen >= _PACK_FOLDERS:
            return True
        dirnames[:] = [d for d in dirnames if d not in _NOT_SKILLS]
    return False


def _measures(folder: Path, start: Path) -> bool:
    """Whether `folder` is a pack (it holds skills, in a library an agent or a plugin reads),
    or `start` is a skill or a library (what a command measures) in `folder`'s tree; a command
    that names none (`skillbench cluster`) starts from the current folder. A pack's file is
    no user's choice of where runs go, whichever skill a command then names (`cd pack &&
    skillbench eval ../mine/bar`)."""
    if _is_pack(folder):
        return True
    try:
        # as named and as resolved: `skills/foo` in the pack may be a link out of it
        named, target = Path(os.path.abspath(start)), start.resolve()
        if target.is_file():
            named, target = named.parent, target.parent
        within = (folder, folder.resolve())
        if not any(t.is_relative_to(f) for t in (named, target) for f in within):
            return False
    except OSError:
        return False
    in_a_skill = any((f / SKILL_FILE).is_file() for f in (target, *target.parents))
    # (a pack's or a team repo's root, where a command that names no skill starts, holds
    # its library in skills/)
    return in_a_skill or _holds_skill(target) or _holds_skill(target / "skills")


def _local_prices(prices: dict[str, Any], path: Path) -> dict[str, Any]:
    """The `[prices]` of a file whose folder holds the skill under test, minus those of models
    that may reach a provider that bills: such a file (a downloaded pack's) would otherwise
    price an expensive model the table does not list at nothing, and --max-cost would let it
    spend uncounted. Only models served on this machine (a loopback base URL, no proxy) keep
    their prices: a gateway, a proxy or a custom CA still reach a provider; the rest are
    named."""
    kept, dropped = {}, []
    for ref, price in prices.items():
        try:
            at = endpoint(ref if not ref.endswith("/") else ref + "any")
            local = at.url == SCRIPTED_ENDPOINT or (_loopback(at.url) and at.proxy is None)
        except (ValueError, KeyError, SkillbenchError):
            local = True  # not a model skillbench reaches: nothing it prices is spent
        if local:
            kept[ref] = price
        else:
            dropped.append(ref)
    if dropped:
        print(
            f"skillbench: ignoring [prices] {', '.join(dropped)[:200]} in {path}: the folder "
            "holding the skill under test prices only models served on this machine (a "
            "loopback base URL, no proxy); put the others in a skillbench.toml of your own "
            "project",
            file=sys.stderr,
            flush=True,
        )
    return kept


def _loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "localhost" or host.startswith("127.") or host == "::1"


MIN_SIZE = 1 << 20  # any limit under a megabyte is a mistake, or a way around the limit
MAX_PIDS = 32_768  # the kernel's default pid_max: more is no sandbox limit at all
MIN_CPUS = 0.01  # podman's smallest quota (1 ms a period); 0 nano-CPUs is no limit at all


def _within_the_machine(settings: Settings, path: Path | None, sources: dict[str, str]) -> None:
    """Sandbox limits no larger than the machine: a project file (a downloaded pack's
    among them) that lifts them to 1.1 TB of memory or 100,000 processes is refused, not
    applied to every arm."""
    ram = machine_memory()
    sizes = {"memory": settings.memory, "max_memory": settings.max_memory}
    sizes |= {f"sandbox.{k}": getattr(settings.sandbox, k) for k in ("disk", "home", "tmp")}
    for key, value in sizes.items():
        if parse_size(value) < MIN_SIZE:  # podman reads a memory limit of 0 as none at all
            raise ConfigError(
                f"{path or 'config'}: {key} = {value!r} is under {MIN_SIZE >> 20}m; "
                "a sandbox limit is a size such as 512m or 2g"
            )
    # a sandbox's memory limit is its memory plus its tmpfs caps (their pages are memory);
    # only what a file or a flag chose is held to it: the defaults run on a small machine
    tmpfs = sum(parse_size(getattr(settings.sandbox, k)) for k in ("disk", "home", "tmp"))
    chose = {
        k for k in ("memory", "max_memory", "sandbox") if sources.get(k, "default") != "default"
    }
    for key in ("memory", "max_memory"):
        total = parse_size(getattr(settings, key)) + tmpfs
        if ram and total > ram and (key in chose or (key == "memory" and "sandbox" in chose)):
            raise ConfigError(
                f"{path or 'config'}: {key} with sandbox.disk, home and tmp comes to "
                f"{total >> 20}m a sandbox, more than this machine's memory ({ram >> 20}m); a "
                "sandbox's limits are at most the machine"
            )
    if not 1 <= settings.pids <= MAX_PIDS:
        raise ConfigError(f"{path or 'config'}: pids must be between 1 and {MAX_PIDS}")
    # podman reads 0 CPUs as no limit at all, and more than the machine's as the machine
    if not MIN_CPUS <= settings.cpus <= machine_cpus():
        raise ConfigError(
            f"{path or 'config'}: cpus = {settings.cpus!r}; a sandbox's CPUs are at least "
            f"{MIN_CPUS} and at most this machine's {machine_cpus()}"
        )


def _at_list_price(settings: Settings, path: Path | None) -> None:
    """A `[prices]` entry for a model the built-in table prices may not be below that price:
    --max-cost counts by the table, so a lower price (a pack's `input = 0`) would let the run
    spend past its ceiling. Models the table does not know are priced as given."""
    for ref, price in settings.prices.items():
        listed = price_for(ref)
        if listed is None:
            continue
        if any(m < b for m, b in zip(rates(price), rates(listed), strict=True)):
            raise ConfigError(
                f"{path or 'config'}: [prices.{ref!r}] is below the list price of {ref} "
                f"(input {listed.input:g}, output {listed.output:g} USD per million tokens), "
                "so --max-cost would count less than the provider bills; remove it"
            )


def _where(path: Path | None, key: str) -> str:
    """`file:line` of `sandbox.<key>` in the config file (`[sandbox]` or
    `[tool.skillbench.sandbox]`, or an inline `sandbox = {...}`), else the file alone."""
    if path is None:
        return "config"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return str(path)
    table = ""
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        name = line.split("=")[0].strip()
        if line.startswith("["):
            table = line.strip("[] ")
            continue
        in_table = table in ("sandbox", "tool.skillbench.sandbox") and name == key
        if in_table or (name == "sandbox" and key in line):  # or sandbox = {provider = ...}
            return f"{path}:{number}"
    return str(path)


def sandbox_spec(settings: Settings, image: str) -> SandboxSpec:
    """The sandbox every arm (and every generated case's dry run) gets under these settings."""
    box = settings.sandbox
    return SandboxSpec(
        image=image,
        memory=settings.memory,
        pids=settings.pids,
        cpus=settings.cpus,
        disk=box.disk,
        home=box.home,
        tmp=box.tmp,
    )
