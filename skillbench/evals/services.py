"""A case's `services:` (docs/formats.md): containers started beside each arm's sandbox, in its
own pod, reachable by name, healthy before the agent starts.

    services:
      api:                                  # the host name the agent and the checks use
        image: localhost/my-api             # optional: the case's own sandbox image
        command: python3 -m http.server 8000   # a string (split like a shell) or a list
        environment: {MODE: test}
        healthcheck:
          test: curl -fs http://localhost:8000/   # a string runs in /bin/sh -c, a list as is
          timeout: 30                       # seconds it may take (default 60)
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

from skillbench.evals.fields import Report, type_name
from skillbench.evals.yamlsrc import KeyPath

SERVICE_FIELDS = ("image", "command", "environment", "healthcheck")
HEALTH_FIELDS = ("test", "timeout")
MAX_HEALTH_TIMEOUT = 600
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")  # a host name label
# `main` is the sandbox itself in Harbor's compose files; `localhost` is loopback already
_RESERVED = ("main", "localhost")


class Service(msgspec.Struct, frozen=True, kw_only=True):
    """A container a case runs beside its arm's sandbox (a database, an HTTP API): in the
    arm's own pod, reachable on localhost and by `name`, healthy before the agent starts."""

    name: str
    image: str | None = None  # None: the arm's own sandbox image
    command: tuple[str, ...] = ()  # () : the image's own command
    env: dict[str, str] = {}
    healthcheck: tuple[str, ...] = ()  # an argv run in the service until it exits 0
    health_timeout: float = 60.0  # seconds it may take to become healthy


def parse_services(rep: Report, value: Any) -> tuple[Service, ...]:
    if not rep.expect(("services",), value, dict, "services"):
        return ()
    out = []
    for name, body in value.items():
        at: KeyPath = ("services", name)
        if not isinstance(name, str) or not _NAME.match(name):
            rep.error(
                at,
                f"service name {name!r} must be a host name: letters, digits and `-`, "
                "at most 63, not starting or ending with `-`",
                key=True,
            )
        elif name.lower() in _RESERVED:
            rep.error(at, f"service name {name!r} is reserved; choose another", key=True)
        elif not isinstance(body, dict):
            rep.error(
                at,
                f"service {name!r} must be a mapping (image, command, ...), got {type_name(body)}",
            )
        else:
            service = _service(rep, at, name, body)
            if service is not None:
                out.append(service)
    return tuple(out)


def _service(rep: Report, at: KeyPath, name: str, body: dict[str, Any]) -> Service | None:
    errors = _errors(rep)
    rep.fields(at, body, SERVICE_FIELDS, f"service {name!r}")
    fields: dict[str, Any] = {}
    if "image" in body and rep.expect((*at, "image"), body["image"], str, "image"):
        if body["image"].strip():
            fields["image"] = body["image"].strip()
        else:
            rep.error((*at, "image"), "`image` is empty; name a local image or remove the line")
    if "command" in body:
        command = _argv(rep, (*at, "command"), body["command"], "command", shell=False)
        if command:
            fields["command"] = command
    if "environment" in body:
        env = body["environment"]
        if rep.expect((*at, "environment"), env, dict, "environment"):
            for key, val in env.items():
                if isinstance(val, dict | list) or val is None:
                    rep.error(
                        (*at, "environment", key),
                        f"`environment` value of {key!r} must be text or a number, "
                        f"got {type_name(val)}",
                    )
            fields["env"] = {str(k): _text(v) for k, v in env.items()}
    if "healthcheck" in body:
        fields.update(_health(rep, (*at, "healthcheck"), body["healthcheck"]))
    return Service(name=name, **fields) if _errors(rep) == errors else None


def _errors(rep: Report) -> int:
    return sum(p.severity == "error" for p in rep.problems)


def _health(rep: Report, at: KeyPath, value: Any) -> dict[str, Any]:
    body = value if isinstance(value, dict) else {"test": value}
    if isinstance(value, dict):
        rep.fields(at, value, HEALTH_FIELDS, "a healthcheck")
    out: dict[str, Any] = {}
    if "test" not in body:
        rep.error(at, "a healthcheck needs `test`: the command that exits 0 once it is healthy")
    else:
        test_at = (*at, "test") if isinstance(value, dict) else at
        test = _argv(rep, test_at, body["test"], "test", shell=True)
        if test:
            out["healthcheck"] = test
    if "timeout" in body:
        limit = body["timeout"]
        if not isinstance(limit, int | float) or isinstance(limit, bool):
            rep.error(
                (*at, "timeout"), f"`timeout` must be a number of seconds, got {type_name(limit)}"
            )
        elif not 1 <= limit <= MAX_HEALTH_TIMEOUT:
            rep.error(
                (*at, "timeout"),
                f"`timeout` must be between 1 and {MAX_HEALTH_TIMEOUT} seconds, got {limit}",
            )
        else:
            out["health_timeout"] = float(limit)
    return out


def _argv(rep: Report, at: KeyPath, value: Any, field: str, *, shell: bool) -> tuple[str, ...]:
    """A command as an argv: a list as given; a string through /bin/sh -c (`shell`) or split
    as compose splits it. Compose's own `["CMD", ...]` / `["CMD-SHELL", "..."]` forms too."""
    if isinstance(value, str):
        if not value.strip():
            rep.error(at, f"`{field}` is empty; give a command or remove the line")
            return ()
        if shell:
            return ("/bin/sh", "-c", value)
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            rep.error(at, f"`{field}` {value!r} cannot be split into words: {exc}")
            return ()
    items = rep.string_list(at, value, field)
    if not items:
        if items == []:
            rep.error(at, f"`{field}` is an empty list; give a command")
        return ()
    if items[0] == "CMD-SHELL" and len(items) == 2:
        return ("/bin/sh", "-c", items[1])
    if items[0] == "CMD" and len(items) > 1:
        return tuple(items[1:])
    return tuple(items)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
