"""A Harbor task's `environment/docker-compose.yaml` as the case's `services:` (docs/formats.md):
`main` is the arm's sandbox itself; every other service runs in the arm's pod, started in
`depends_on` order, healthy (its healthcheck) before the next one and the agent. Harbor's
variables are understood: `${MAIN_IMAGE_NAME}` is the case's own image, `${CONTEXT_DIR}` the
task's environment/ folder. A service's `build:` is the service's `build` (compose's
meaning: its context relative to the compose file, as Harbor runs compose with the
environment/ folder as the project directory; `dockerfile` relative to the context;
`args`), built before the run with the network, as Harbor's `docker compose build` does.
Its volumes (a bind mount of a task folder, a named volume) become the case's volumes:
fresh per arm, shared by the services that mount them and the checker, and the agent's
sandbox when `main` mounts them; never a host folder. What cannot be mapped is listed
with the file's line and the reason.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

import msgspec

from skillbench.evals.problems import SpecError
from skillbench.evals.services import MAX_HEALTH_TIMEOUT, SERVICE_FIELDS, mount_problem
from skillbench.evals.yamlsrc import Doc, KeyPath, load_yaml_file
from skillbench.importers.base import Imported, ImportError_

MAIN = "main"
_MAIN_IMAGE = "\0main-image\0"  # what ${MAIN_IMAGE_NAME} stands for until it is resolved
_VAR = re.compile(r"\$\{(\w+)(?:(:?-)([^}]*))?\}|\$(\w+)")
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_MAIN_MAPPED = {"build", "image", "depends_on", "volumes"}  # image, start order, volumes
_MAIN_WHY = {
    "command": "the sandbox runs skillbench's executor; the agent's commands run in it",
    "environment": "the agent's sandbox gets the environment skillbench gives every arm",
    "ports": "nothing is published to the host",
}
_BUILD_MAPPED = ("context", "dockerfile", "args")
_WHY = {
    "entrypoint": "the image's own entrypoint is used; fold it into `command`",
    "ports": "not published to the host: in the arm's pod it is reachable at "
    "localhost:<port> and <service>:<port>",
    "networks": "every service shares the arm's own pod network (loopback only)",
    "network_mode": "every service shares the arm's own pod network (loopback only)",
}
_QUIET = {"depends_on", "expose", "container_name", "hostname", "restart"}
_LOGS = "\0harbor-logs\0"  # what Harbor's HOST_*_PATH variables stand for: its own folders
# Harbor's log folders inside the task's container (EnvironmentPaths), which its base
# compose file mounts from the trial folder; the checker makes /logs/verifier itself
_HARBOR_LOGS = {
    "ENV_VERIFIER_LOGS_PATH": "/logs/verifier",
    "ENV_AGENT_LOGS_PATH": "/logs/agent",
    "ENV_ARTIFACTS_PATH": "/logs/artifacts",
}


class Compose(msgspec.Struct):
    """What a compose file becomes: the case's services (name -> fields, in start order)
    and its volumes (name -> a path, or {path, agent: false})."""

    services: dict[str, Any] = {}
    volumes: dict[str, Any] = {}


class _Where:
    """Names a part of the compose file as `<task>: <file>:<line>: <key path>`."""

    def __init__(self, doc: Doc, where: str, path: Path):
        self.doc, self.head = doc, f"{where}: {path.name}"

    def __call__(self, *at: str | int) -> str:
        keys: KeyPath = ("services", *at)
        shown = ".".join(str(k) for k in keys)
        return f"{self.head}:{self.doc.key_line(keys)}: {shown}"


def compose_services(path: Path, where: str, out: Imported, case: str) -> Compose:
    """The case's services and volumes from a compose file beside `case`'s environment/
    folder (copied to `cases/<case>/environment/`); unmapped parts listed with their line."""
    try:
        doc = load_yaml_file(path)
    except SpecError as exc:
        raise ImportError_(f"{path}: cannot read it as YAML: {exc}") from None
    services = doc.value.get("services") if isinstance(doc.value, dict) else None
    if not isinstance(services, dict):
        raise ImportError_(f"{path}: no `services:` mapping (a compose file names its services)")
    # Harbor's own compose variables; TEST_DIR is where Harbor (and the checker) puts tests/
    variables = {
        "MAIN_IMAGE_NAME": _MAIN_IMAGE,
        "CONTEXT_DIR": ".",  # the project directory: relative paths resolve from it too
        "TEST_DIR": "/tests",
        **_HARBOR_LOGS,
        **{k.replace("ENV_", "HOST_"): _LOGS for k in _HARBOR_LOGS},
    }
    at = _Where(doc, where, path)
    resolved = _resolve(services, variables, f"{where}: {path.name}", out)
    main = resolved.get(MAIN) if isinstance(resolved.get(MAIN), dict) else {}
    for key, value in main.items():
        if key == "network_mode" and value == "none":
            continue  # the case's network (importers/harbor.py: main_offline)
        if key not in _MAIN_MAPPED:
            why = _MAIN_WHY.get(key, "not supported for the agent's own sandbox")
            out.unmapped.append(f"{at(MAIN, key)} — {why}")
    volumes = _Volumes(path.parent, at, out)
    agent_mounts = volumes.of(MAIN, main.get("volumes"))
    found = Compose()
    for name in _start_order(resolved, f"{where}: {path.name}", out):
        body = resolved[name]
        if not _NAME.match(name):
            out.unmapped.append(
                f"{at(name)} — dropped: the name is not a host name (letters, digits, -)"
            )
            continue
        if not isinstance(body, dict):
            out.unmapped.append(f"{at(name)} — dropped: not a mapping")
            continue
        fields = _fields(body, name, at, out)
        if "build" in body:
            build = _build(body["build"], path.parent, name, at, out, case)
            if build is None:
                continue  # (why is listed)
            if "image" in body:  # compose builds it: the image is the build's
                out.unmapped.append(
                    f"{at(name, 'image')} — compose builds it (Harbor runs `docker compose "
                    "build`) and the built image is the one used; the name is not"
                )
            fields.pop("image", None)
            fields["build"] = build
        mounts = volumes.of(name, body.get("volumes"))
        if mounts:
            fields["volumes"] = mounts
        found.services[name] = {k: v for k, v in fields.items() if k in SERVICE_FIELDS}
    for volume, target in agent_mounts.items():
        found.volumes[volume] = target
    for volume, target in volumes.first.items():  # the services' only: the checker's too
        if volume not in found.volumes:
            found.volumes[volume] = {"path": target, "agent": False}
    return found


def _build(
    value: Any, project: Path, name: str, at: _Where, out: Imported, case: str
) -> dict[str, Any] | None:
    """Compose's `build:` (a context, or {context, dockerfile, args}) as the service's
    `build`, its paths under the copy of environment/ beside the case; None, said, when
    it cannot be built from the task's own files."""
    body = {"context": value} if isinstance(value, str) else value
    if not isinstance(body, dict):
        out.unmapped.append(f"{at(name, 'build')} — dropped: not a folder or a mapping")
        return None
    context = posixpath.normpath(str(body.get("context", ".")))  # compose's default: `.`
    dockerfile = posixpath.normpath(
        posixpath.join(context, str(body.get("dockerfile", "Dockerfile")))
    )
    for shown, rel in (("context", context), ("dockerfile", dockerfile)):
        if rel.startswith(("/", "../")) or rel == ".." or "://" in str(body.get(shown, "")):
            out.unmapped.append(
                f"{at(name, 'build', shown)} {body.get(shown)!r} — dropped: it leads out of the "
                "task's environment/ folder (an import copies only the task's own files)"
            )
            return None
    if not (project / dockerfile).is_file():
        out.unmapped.append(
            f"{at(name, 'build')} — dropped: {dockerfile} is not a file of the task's "
            "environment/ folder"
        )
        return None
    build: dict[str, Any] = {"context": posixpath.join(case, "environment", context)}
    if "dockerfile" in body:
        build["dockerfile"] = posixpath.relpath(dockerfile, context)
    args = _args(body.get("args"), name, at, out)
    if args:
        build["args"] = args
    for key in body:
        if key not in _BUILD_MAPPED:
            out.unmapped.append(
                f"{at(name, 'build', key)} — not supported (a build here takes context, "
                "dockerfile and args); left out"
            )
    out.mapped.append(
        f"{at(name, 'build')} — built before the run from environment/{context} with the "
        "network, as Harbor builds it (`docker compose build`), and started in the arm's pod"
    )
    return build


def _args(value: Any, name: str, at: _Where, out: Imported) -> dict[str, str]:
    """Build args, a mapping or `KEY=value` items; one without a value would come from the
    environment compose runs in (the host's), which never enters a build here: listed."""
    items: list[tuple[Any, Any]] = list(value.items()) if isinstance(value, dict) else []
    for entry in value if isinstance(value, list) else ():
        key, eq, val = str(entry).partition("=")
        items.append((key, val if eq else None))
    args: dict[str, str] = {}
    for key, val in items:
        if val is None:
            out.unmapped.append(
                f"{at(name, 'build', 'args')} {key} — no value: compose takes it from the "
                "host's environment, which never enters a build here; left out"
            )
        else:
            args[str(key)] = str(val)
    return args


class _Volumes:
    """Compose's volumes as the case's: a bind mount of a task folder and a named volume
    are each one volume of the arm, shared by every container that mounts it."""

    def __init__(self, project: Path, at: _Where, out: Imported):
        self.project, self.at, self.out = project, at, out
        self.first: dict[str, str] = {}  # volume -> where the first service mounts it

    def of(self, service: str, value: Any) -> dict[str, str]:
        mounts: dict[str, str] = {}
        for i, item in enumerate(value if isinstance(value, list) else ()):
            found = self._one(service, i, item)
            if found is not None:
                mounts[found[0]] = found[1]
                if service != MAIN:
                    self.first.setdefault(*found)
        return mounts

    def _one(self, service: str, i: int, item: Any) -> tuple[str, str] | None:
        where = f"{self.at(service, 'volumes', i)} {item}"
        if isinstance(item, dict):
            kind, source = item.get("type", "volume"), str(item.get("source", ""))
            target = str(item.get("target", ""))
        else:
            parts = str(item).split(":")
            source, target = (parts[0], parts[1]) if len(parts) > 1 else ("", parts[0])
            kind = "bind" if source.startswith((".", "/", "~", _LOGS)) else "volume"
        if source == _LOGS or target in _HARBOR_LOGS.values():
            if service != MAIN:
                self.out.unmapped.append(f"{where} — Harbor's log folder: only main has it")
            return None  # the checker makes /logs/verifier and /logs/agent itself
        if kind == "tmpfs" or not source:
            self.out.unmapped.append(
                f"{where} — an anonymous volume: the service keeps it in its own container"
            )
            return None
        if kind not in ("bind", "volume"):
            self.out.unmapped.append(f"{where} — a {kind} mount is not supported; left out")
            return None
        problem = mount_problem(target)
        if problem:
            self.out.unmapped.append(f"{where} — left out: {problem}")
            return None
        name = re.sub(r"[^A-Za-z0-9-]+", "-", source.strip("./~")).strip("-").lower() or "root"
        name = name[:63].strip("-")
        if kind == "bind":
            folder = self.project / source
            seeded = folder.is_dir() and any(folder.iterdir())
            self.out.mapped.append(
                f"{where} — the arm's volume {name!r}: fresh for each arm, shared by every "
                "container that mounts it and the checker, never the host folder"
                + (
                    f" (it starts empty: the task's files in {source} are not copied in)"
                    if seeded
                    else ""
                )
            )
        else:
            self.out.mapped.append(
                f"{where} — the arm's volume {name!r}: fresh for each arm, shared by every "
                "container that mounts it and the checker"
            )
        if (isinstance(item, dict) and item.get("read_only")) or str(item).endswith(":ro"):
            self.out.unmapped.append(f"{where} — read-only in compose; writable here")
        return name, target


def main_offline(path: Path) -> bool:
    """`services.main.network_mode: none`: Harbor's main container, where the agent, the
    solution and the verifier all run, has no network (harbor-workshop's airgapped task)."""
    try:
        doc = load_yaml_file(path).value
    except SpecError:
        return False  # compose_services has said why it cannot be read
    services = doc.get("services") if isinstance(doc, dict) else None
    main = services.get(MAIN) if isinstance(services, dict) else None
    return isinstance(main, dict) and main.get("network_mode") == "none"


# Harbor's log folders, bind-mounted from its trial folder into the container at /logs/...
_LOGS_NOTE = (
    "Harbor's, its trial folder's log mount: the checker makes /logs/verifier and /logs/agent "
    "itself"
)
_HARBOR_VARIABLES = {
    **{
        f"{side}_{what}_PATH": _LOGS_NOTE
        for side in ("HOST", "ENV")
        for what in ("VERIFIER_LOGS", "AGENT_LOGS", "ARTIFACTS")
    },
    "CPUS": "Harbor's, the task's `cpus`: a sidecar's CPUs are not limited here",
    "MEMORY": "Harbor's, the task's memory: a sidecar's memory is not limited here",
}


def _resolve(value: Any, variables: dict[str, str], here: str, out: Imported) -> Any:
    """Compose's `${VAR}`, `${VAR:-default}`, `$VAR` replaced in every string."""
    if isinstance(value, dict):
        return {k: _resolve(v, variables, here, out) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, variables, here, out) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        if name in variables:
            return variables[name]
        if match.group(2) is not None:
            return match.group(3)
        why = _HARBOR_VARIABLES.get(name, "not a variable Harbor sets")
        out.unmapped.append(f"{here}: ${{{name}}} — {why}; replaced by nothing")
        return ""

    return _VAR.sub(one, value.replace("$$", "\0dollar\0")).replace("\0dollar\0", "$")


def _start_order(services: dict[str, Any], here: str, out: Imported) -> list[str]:
    """The services other than main, each after those it depends on (compose's order)."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name == MAIN or name not in services:
            return
        if name in visiting:
            out.unmapped.append(f"{here}: services.{name}.depends_on — a cycle; order as written")
            return
        visiting.add(name)
        body = services[name]
        needs = body.get("depends_on", ()) if isinstance(body, dict) else ()
        for dep in needs if isinstance(needs, list | dict) else ():
            visit(str(dep))
        visiting.discard(name)
        order.append(name)

    for name in services:
        visit(str(name))
    return order


def _fields(body: dict[str, Any], name: str, at: _Where, out: Imported) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    image = body.get("image")
    if isinstance(image, str) and image != _MAIN_IMAGE:
        fields["image"] = image.replace(_MAIN_IMAGE, "")
    if "command" in body:
        fields["command"] = body["command"]
    env = body.get("environment")
    if isinstance(env, list):  # ["KEY=value", ...]
        env = dict(str(e).partition("=")[::2] for e in env)
    if isinstance(env, dict):
        fields["environment"] = {str(k): "" if v is None else str(v) for k, v in env.items()}
    health = body.get("healthcheck")
    if isinstance(health, dict) and not health.get("disable"):
        test = health.get("test")
        if test not in (None, ["NONE"], "NONE"):
            fields["healthcheck"] = {"test": test, "timeout": _health_timeout(health)}
    for key in body:
        if key in ("image", "command", "environment", "healthcheck", "build", "volumes"):
            continue
        if key in _QUIET:
            continue
        out.unmapped.append(f"{at(name, key)} — {_WHY.get(key, 'not supported; left out')}")
    return fields


def _health_timeout(health: dict[str, Any]) -> float:
    """How long compose would wait: start_period + retries x (interval + timeout)."""
    interval = _seconds(health.get("interval"), 30.0)
    probe = _seconds(health.get("timeout"), 30.0)
    retries = health.get("retries", 3)
    retries = retries if isinstance(retries, int) and retries > 0 else 3
    total = _seconds(health.get("start_period"), 0.0) + retries * (interval + probe)
    return float(min(MAX_HEALTH_TIMEOUT, max(10, round(total))))


def _seconds(value: Any, default: float) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip():
        parts = _DURATION.findall(value.strip())
        if parts and "".join(n + u for n, u in parts) == value.strip():
            return sum(float(n) * _UNITS[u] for n, u in parts)
    return default


def services_field(services: dict[str, Any]) -> str:
    """The case file's `services:` value, in YAML's flow style (JSON)."""
    return json.dumps(services)
