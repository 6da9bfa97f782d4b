"""A Harbor task's `environment/docker-compose.yaml` as the case's `services:` (docs/formats.md):
`main` is the arm's sandbox itself; every other service runs in the arm's pod, started in
`depends_on` order, healthy (its healthcheck) before the next one and the agent. Harbor's
variables are understood: `${MAIN_IMAGE_NAME}` is the case's own image, `${CONTEXT_DIR}` the
task's environment/ folder. What cannot be mapped is listed with the reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from skillbench.evals.services import MAX_HEALTH_TIMEOUT, SERVICE_FIELDS
from skillbench.evals.yamlsrc import CappedLoader
from skillbench.importers.base import Imported, ImportError_
from skillbench.util.inputs import read_capped

MAIN = "main"
_MAIN_IMAGE = "\0main-image\0"  # what ${MAIN_IMAGE_NAME} stands for until it is resolved
_VAR = re.compile(r"\$\{(\w+)(?:(:?-)([^}]*))?\}|\$(\w+)")
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_MAIN_MAPPED = {"build", "image", "depends_on"}  # the case's own image, and the start order
_MAIN_WHY = {
    "command": "the sandbox runs skillbench's executor; the agent's commands run in it",
    "environment": "the agent's sandbox gets the environment skillbench gives every arm",
    "volumes": "host folders are never mounted into the agent's sandbox",
    "ports": "nothing is published to the host",
}
_WHY = {
    "build": "services are not built: give the service an `image` that is on this machine",
    "entrypoint": "the image's own entrypoint is used; fold it into `command`",
    "ports": "not published to the host: in the arm's pod it is reachable at "
    "localhost:<port> and <service>:<port>",
    "networks": "every service shares the arm's own pod network (loopback only)",
    "network_mode": "every service shares the arm's own pod network (loopback only)",
}
_QUIET = {"depends_on", "expose", "container_name", "hostname", "restart"}


def compose_services(path: Path, where: str, out: Imported) -> dict[str, Any]:
    """The `services:` of the case (name -> fields), in start order; unmapped parts listed."""
    try:
        doc = yaml.load(read_capped(path, 1 << 20).decode("utf-8"), Loader=CappedLoader)
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise ImportError_(f"{path}: cannot read it as YAML: {exc}") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict):
        raise ImportError_(f"{path}: no `services:` mapping (a compose file names its services)")
    # Harbor's own compose variables; TEST_DIR is where Harbor (and the checker) puts tests/
    variables = {
        "MAIN_IMAGE_NAME": _MAIN_IMAGE,
        "CONTEXT_DIR": str(path.parent),
        "TEST_DIR": "/tests",
    }
    here = f"{where}: {path.name}"
    resolved = _resolve(services, variables, here, out)
    for key, value in (resolved.get(MAIN, {}) or {}).items():
        if key == "network_mode" and value == "none":
            continue  # the case's network (importers/harbor.py: main_offline)
        if key not in _MAIN_MAPPED:
            why = _MAIN_WHY.get(key, "not supported for the agent's own sandbox")
            out.unmapped.append(f"{here}: services.main.{key} — {why}")
    mapped: dict[str, Any] = {}
    for name in _start_order(resolved, here, out):
        body = resolved[name]
        at = f"{here}: services.{name}"
        if not _NAME.match(name):
            out.unmapped.append(f"{at} — dropped: the name is not a host name (letters, digits, -)")
            continue
        if not isinstance(body, dict):
            out.unmapped.append(f"{at} — dropped: not a mapping")
            continue
        if "build" in body and "image" not in body:
            out.unmapped.append(f"{at}.build — dropped: {_WHY['build']}")
            continue
        fields = _fields(body, at, out)
        mapped[name] = {k: v for k, v in fields.items() if k in SERVICE_FIELDS}
    return mapped


def main_offline(path: Path) -> bool:
    """`services.main.network_mode: none`: Harbor's main container, where the agent, the
    solution and the verifier all run, has no network (harbor-workshop's airgapped task)."""
    try:
        doc = yaml.load(read_capped(path, 1 << 20).decode("utf-8"), Loader=CappedLoader)
    except (yaml.YAMLError, UnicodeDecodeError, OSError):
        return False  # compose_services has said why it cannot be read
    main = (doc.get("services") or {}).get(MAIN) if isinstance(doc, dict) else None
    return isinstance(main, dict) and main.get("network_mode") == "none"


# Harbor's log folders, bind-mounted from its trial folder into the container at /logs/...
_LOGS = (
    "Harbor's, its trial folder's log mount: the checker makes /logs/verifier and /logs/agent "
    "itself"
)
_HARBOR_VARIABLES = {
    **{
        f"{side}_{what}_PATH": _LOGS
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


def _fields(body: dict[str, Any], at: str, out: Imported) -> dict[str, Any]:
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
        if key in ("image", "command", "environment", "healthcheck") or key in _QUIET:
            continue
        if key == "volumes":
            for volume in body[key] or ():
                out.unmapped.append(f"{at}.volumes {volume} — {_volume_why(volume)}")
            continue
        if key == "build":  # beside an image: the image is used as it is
            out.unmapped.append(f"{at}.build — not built; its `image` is used as it is")
            continue
        out.unmapped.append(f"{at}.{key} — {_WHY.get(key, 'not supported; left out')}")
    return fields


def _volume_why(volume: Any) -> str:
    source = str(volume.get("source", "") if isinstance(volume, dict) else volume).split(":")[0]
    if source.startswith((".", "/", "~")):
        return "a host path is never mounted into a service; bake it into the image"
    return "a named volume: the service keeps its files in its own container, fresh per arm"


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
