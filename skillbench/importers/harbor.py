"""Harbor tasks as native cases (docs/formats.md): a task folder, a
folder of them, or a downloaded dataset; its image or Dockerfile, compose services and
internet flag mapped, the rest said."""

from __future__ import annotations

import hashlib
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

from skillbench.evals.cases import workdir_problem
from skillbench.evals.resources import machine_cpus
from skillbench.importers.base import (
    Imported,
    ImportError_,
    NewFile,
    case_yaml,
    containerfile_field,
    each,
    headed,
    image_field,
    is_dir,
    is_file,
    none_left,
    read_toml,
    safe_name,
    source_links,
    support,
    text,
    timeout_minutes,
)
from skillbench.importers.compose import compose_services, main_offline, services_field
from skillbench.importers.harbor_fields import SAID
from skillbench.importers.mcp import harbor_mcp


def _harbor_tasks(src: Path) -> list[tuple[Path, str | None]]:
    """(task folder, its dataset UUID folder name or None) for a task or a dataset."""
    if is_file(src / "task.toml"):
        return [(src, None)]
    found: list[tuple[Path, str | None]] = []
    for child in sorted(p for p in src.iterdir() if is_dir(p)):
        if is_file(child / "task.toml"):
            found.append((child, None))
            continue
        inner = [p for p in child.iterdir() if is_dir(p) and is_file(p / "task.toml")]
        if len(inner) == 1:  # a downloaded dataset: <uuid>/<task-name>/
            found.append((inner[0], child.name))
    if not found:
        raise ImportError_(
            f"{src}: no Harbor task here (a task folder holds task.toml, "
            "instruction.md, tests/test.sh; a dataset <uuid>/<task>/)"
        )
    return found


def import_harbor(src: Path, into: Path | None = None) -> Imported:
    """One Harbor task folder, a folder of them, or a downloaded dataset of UUID folders."""
    src = src.resolve()
    out = Imported(source=f"harbor {src}", unmapped=source_links(src))
    tasks = _harbor_tasks(src)
    taken: dict[str, int] = {}
    for folder, _ in tasks:
        taken[safe_name(folder.name)] = taken.get(safe_name(folder.name), 0) + 1
    for folder, uuid in tasks:
        name = safe_name(folder.name)
        if taken[name] > 1:  # a collision after sanitising: a stable suffix from the UUID
            seed = uuid or str(folder.relative_to(src))
            name = f"{name}-{hashlib.sha256(seed.encode()).hexdigest()[:8]}"
        where = str(folder.relative_to(src)) if folder != src else folder.name
        each(out, where, partial(_harbor_task, folder, name, out))
    none_left(out, src)
    return out


_DROPPED = {
    ("version",): "the task format's version",
    ("environment", "build_timeout_sec"): "Harbor's time limit on the image build; "
    "skillbench's build has none",
    ("environment", "storage_mb"): "Harbor's disk limit; podman's storage here is not limited",
    ("environment", "env"): "Harbor's environment variables for the task's container; not set here",
    ("verifier", "env"): "the checker's environment is fixed",
    ("solution", "env"): "the oracle runs with the agent's environment",
}
# Harbor's `allow_internet = true` becomes an allowlist: the hosts its verifiers install from
# (their first step is `apt-get update && apt-get install -y curl` on a Debian or Ubuntu
# image, then pytest with uv: uv's installer, its GitHub downloads, PyPI). A sandbox never
# gets the whole internet; a task that needs more lists its hosts in the case's `network`.
APT_ARCHIVES = (
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
)
INTERNET = (
    *APT_ARCHIVES,
    "pypi.org",
    "files.pythonhosted.org",
    "astral.sh",
    "github.com",
    "objects.githubusercontent.com",
    "release-assets.githubusercontent.com",
)
_METADATA = (("environment", "gpus"),)
# every task.toml field this importer reads, maps or names as dropped; any other is listed
_KNOWN = {
    *_DROPPED,
    *_METADATA,
    ("environment", "cpus"),
    ("environment", "memory_mb"),
    ("environment", "docker_image"),
    ("environment", "allow_internet"),
    ("environment", "network_mode"),
    ("environment", "allowed_hosts"),
    ("environment", "mcp_servers"),
    ("agent", "timeout_sec"),
    ("agent", "user"),
    ("verifier", "timeout_sec"),
    ("verifier", "user"),
    ("metadata",),
}
_COMPOSE = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


def _fields(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of a task.toml: a table's own keys, down to the known tables' leaves."""
    paths = []
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, dict) and path != ("metadata",) and not prefix:
            paths += _fields(value, path)
        else:
            paths.append(path)
    return paths


def _resources(get: Any, where: str, extra: dict[str, str], out: Imported) -> None:
    """Harbor's `cpus` and `memory_mb`, as the case's own (evals/resources.py: more CPUs than
    the machine has are capped, and `check` says so)."""
    cpus, memory = get("environment", "cpus"), get("environment", "memory_mb")
    if isinstance(cpus, int | float) and not isinstance(cpus, bool) and cpus > 0:
        extra["cpus"] = f"{cpus:g}"
        have = machine_cpus()
        if cpus > have:
            out.unmapped.append(
                f"{where}: environment.cpus = {cpus:g} — this machine has {have}: the "
                f"sandbox gets {have} (capped)"
            )
    elif cpus is not None:
        out.unmapped.append(f"{where}: environment.cpus = {cpus!r} — not a number: ignored")
    if isinstance(memory, int) and not isinstance(memory, bool) and memory > 0:
        extra["memory"] = f"{memory}m"
    elif memory is not None:
        out.unmapped.append(f"{where}: environment.memory_mb = {memory!r} — not a number: ignored")


def _harbor_unmapped(folder: Path, task: dict[str, Any], where: str, out: Imported) -> None:
    """What the task has that no native field takes: compose services, skills_dir, and any
    field this importer does not know (never dropped without a word)."""
    for path in _fields(task):
        if path in _KNOWN:
            continue
        if path[-1] == "skills_dir":
            out.mapped.append(
                f"{where}: {'.'.join(path)} — the skill under test: the --into skill, staged "
                "in the candidate's arm as the agent's skill (the baseline has none)"
            )
        elif path in SAID:  # a field of Harbor's reference no native field takes
            out.unmapped.append(f"{where}: {'.'.join(path)} — {SAID[path]}")
        else:
            out.unmapped.append(
                f"{where}: {'.'.join(path)} — not in Harbor's task.toml reference; ignored"
            )


def _network(get: Any, where: str, extra: dict[str, str], out: Imported) -> None:
    """Harbor's network, as its task.toml reference gives it: `allow_internet` defaults to
    true (every phase online); `network_mode` (public, no-network, allowlist with
    `allowed_hosts`) is its newer spelling. A sandbox never gets the whole internet: public
    becomes the package indexes its verifiers install from, in both phases, said in a note."""
    mode, allow = get("environment", "network_mode"), get("environment", "allow_internet")
    if mode == "no-network" or (mode is None and allow is False):
        return  # no network: skillbench's own default, the same meaning
    if mode == "allowlist":
        hosts = get("environment", "allowed_hosts")
        if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts) and hosts:
            extra["network"] = f"[{', '.join(hosts)}]"
            out.mapped.append(
                f"{where}: environment.network_mode = allowlist — `network: {extra['network']}`"
            )
        else:
            out.unmapped.append(
                f"{where}: environment.network_mode = allowlist without `allowed_hosts`: no network"
            )
        return
    extra["network"] = f"[{', '.join(INTERNET)}]"
    said = (
        f"environment.network_mode = {mode}"
        if mode is not None
        else "environment.allow_internet"
        + (" (absent: Harbor's default is true, internet in every phase)" if allow is None else "")
    )
    out.unmapped.append(
        f"{where}: {said} — mapped to `network: {extra['network']}` (the apt archives and "
        "package indexes verifiers install from; never the whole internet), for the agent and "
        "the verifier; add any other host the task needs, or `network: none` to run it offline"
    )


def _root_phases(get: Any, where: str, out: Imported) -> list[str]:
    """Harbor runs its verifier as `[verifier] user` and the agent phase (the oracle's
    solve.sh too) as `[agent] user`; absent, as the image's default USER, root in the images
    Harbor tasks are written for (apt-get install first). Root here is only ever a container
    the agent never touched: the checker, and the oracle's own sandbox (docs/trust.md). The
    agent always works as `agent`, unprivileged: said when the task names its user."""
    phases = []
    for table, phase in (("verifier", "verifier"), ("agent", "oracle")):
        user = get(table, "user")
        if user is None or str(user) in ("root", "0"):
            phases.append(phase)
        else:
            out.unmapped.append(
                f"{where}: {table}.user = {user} — runs as skillbench's "
                f"{'checker' if table == 'verifier' else 'agent'} user (unprivileged), not {user}"
            )
    said = {
        "verifier": "test.sh as root in the checker (a fresh container the agent never "
        "touched, on a writable layer, with the image's PATH)",
        "oracle": "solve.sh as root in the oracle's own sandbox",
    }
    out.mapped.append(
        f"{where}: `as_root: [{', '.join(phases)}]` — "
        + "; ".join(said[p] for p in phases)
        + ", as Harbor runs them; the agent still works as the unprivileged `agent` user "
        "on a read-only root (Harbor gives it the image's default user)"
        if phases
        else f"{where}: the agent works as the unprivileged `agent` user on a read-only root"
    )
    return phases


def _harbor_task(folder: Path, name: str, out: Imported) -> None:
    where, source = folder.name, f"harbor task {folder}"
    task = read_toml(folder / "task.toml")
    if "steps" in task:
        raise ImportError_(
            f"{folder / 'task.toml'}: a multi-step task ([[steps]], one instruction each) is "
            "not supported: a case here is one task and one verdict"
        )
    instruction = text(folder / "instruction.md", missing="")
    if not instruction.strip():
        raise ImportError_(f"{folder / 'instruction.md'}: missing or empty (the agent's task)")
    test = folder / "tests" / "test.sh"
    if not is_file(test):
        raise ImportError_(f"{test}: missing (the verifier that writes the reward)")

    def get(*keys: str) -> Any:
        value: Any = task
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    extra: dict[str, str] = {}
    minutes = timeout_minutes(get("agent", "timeout_sec"))
    if minutes:
        extra["timeout_minutes"] = str(minutes)
    _resources(get, where, extra, out)
    notes = [f"{'.'.join(k)} = {get(*k)}" for k in _METADATA if get(*k) is not None]
    notes += [f"metadata: {task['metadata']}"] if "metadata" in task else []
    for keys, why in _DROPPED.items():
        if get(*keys) is not None:
            out.unmapped.append(f"{where}: {'.'.join(keys)} — dropped: {why}")
    _harbor_unmapped(folder, task, where, out)
    _network(get, where, extra, out)
    docker = folder / "environment" / "Dockerfile"
    if get("environment", "docker_image"):
        extra.update(image_field(str(get("environment", "docker_image")), where, out))
    elif is_file(docker):
        extra.update(containerfile_field(docker, name, where, source, out))
        # Harbor builds a task's image with the network (its RUN steps install packages);
        # the build is apart from every phase: its network is never the agent's
        extra["build_network"] = "true"
        out.unmapped.append(
            f"{where}: environment/Dockerfile — built with the network, as Harbor builds it "
            "(`build_network: true`)"
        )
    services: dict[str, Any] = {}
    for compose in (folder / "environment" / n for n in _COMPOSE):
        if is_file(compose):  # its sidecars run in the arm's pod; `main` is the sandbox
            found = compose_services(compose, where, out, name)
            services = found.services
            if main_offline(compose) and "network" in extra:
                # the internet note no longer holds: main's own setting wins, as in Harbor
                said = f"— mapped to `network: {extra.pop('network')}`"
                out.unmapped = [u for u in out.unmapped if not (u.startswith(where) and said in u)]
                out.mapped.append(
                    f"{where}: environment/{compose.name}: services.main.network_mode = none — "
                    "no network in any phase (Harbor's main container, where the agent, the "
                    "solution and the verifier run, has none)"
                )
            if services:
                extra["services"] = services_field(services)
                out.mapped.append(
                    f"{where}: environment/{compose.name} — {', '.join(services)}: services "
                    "in the arm's own pod, reached by name (`main` is the sandbox)"
                )
            if found.volumes:
                extra["volumes"] = json.dumps(found.volumes)
            if any("build" in body for body in services.values()):
                # Harbor builds them (`docker compose build`) with the network, from the
                # task's environment/ folder: copied beside the case when no Dockerfile of
                # the task's own has copied it already
                extra["build_network"] = "true"
                if "containerfile" not in extra:
                    out.files += support(
                        folder / "environment", f"cases/{name}/environment", source
                    )
            break
    if get("environment", "mcp_servers") is not None:
        mcp = harbor_mcp(get("environment", "mcp_servers"), set(services), where, out)
        if mcp:
            extra["mcp_servers"] = json.dumps(mcp)
    workdirs = (
        re.findall(r"(?im)^\s*WORKDIR\s+(\S+)", docker.read_text()) if (is_file(docker)) else []
    )
    if workdirs and workdirs[-1] not in ("/work", "/work/"):
        # the Dockerfile's last WORKDIR: where the task's files are and its tests run
        problem = workdir_problem(workdirs[-1])
        if problem is None:
            extra["workdir"] = workdirs[-1]
        else:
            out.unmapped.append(f"{where}: WORKDIR {workdirs[-1]} — {problem}; /work is used")
    tests = test.read_text(encoding="utf-8", errors="replace")
    reward = (
        "/logs/verifier/reward.json" if "reward.json" in tests else ("/logs/verifier/reward.txt")
    )
    # the task's files go beside the case unmodified; the checker shows tests/ and solution/
    # at /tests and /solution (`harbor:`), as Harbor does, and makes /logs/verifier
    wrapper = (
        "#!/bin/sh\n# run the task's verifier where Harbor puts it; the reward file, not the "
        'exit code, is the verdict\ncd "$WORK" && bash /tests/test.sh\nexit 0\n'
    )
    extra["harbor"] = name
    root = _root_phases(get, where, out)
    if root:
        extra["as_root"] = f"[{', '.join(root)}]"
    if is_file(folder / "solution" / "solve.sh"):
        extra["oracle"] = f"{name}/solution/solve.sh"
        out.files += support(folder / "solution", f"cases/{name}/solution", source)
    limit = get("verifier", "timeout_sec")  # Harbor's, kept (600 s when absent)
    timeout = f", timeout: {float(limit):g}" if isinstance(limit, int | float) and limit > 0 else ""
    check = f"reward: {{file: {reward}, min: 1, run: {name}/run-tests.sh{timeout}}}"
    out.files += [
        NewFile(f"cases/{name}.yaml", case_yaml(source, instruction, [check], extra, notes)),
        NewFile(f"cases/{name}/run-tests.sh", headed(wrapper, source), executable=True),
        *support(folder / "tests", f"cases/{name}/tests", source),
    ]
    out.cases.append(name)
