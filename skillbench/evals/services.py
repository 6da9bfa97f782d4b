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
      calc:
        build:                              # built before the run (instead of `image`)
          context: calc                     # relative to the case file, inside the skill
          dockerfile: Dockerfile            # relative to the context (the default)
          args: {VERSION: "1"}
        volumes: {shared: /shared}          # the case's volume `shared`, at /shared here

A built service's image is named by the digest of everything that goes into it (its
Containerfile, its context's files, its args, and whether the case's `build_network` lets
the build reach the network), so it is known here and built once, before the run
(sandbox/podman/case_image.py). It runs as its Containerfile says (its own USER and CMD):
it is no sandbox, it runs no agent, and like every service it shares only the arm's pod.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shlex
from pathlib import Path
from typing import Any

import msgspec

from skillbench.evals.containerfile import lint, tree_digest
from skillbench.evals.fields import Report, type_name
from skillbench.evals.problems import SpecError
from skillbench.evals.yamlsrc import KeyPath, read_text

SERVICE_FIELDS = ("image", "build", "command", "environment", "healthcheck", "volumes", "files")
HEALTH_FIELDS = ("test", "timeout")
BUILD_FIELDS = ("context", "dockerfile", "args")
BUILT = "localhost/skillbench-service"  # a built service's image: BUILT:<digest>
# where no volume may be mounted: what the sandbox, its checker and the system need
RESERVED_PATHS = (
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/tmp",
    "/home",
    "/root",
    "/run",
    "/opt/skillbench",
    "/work",
    "/case",
    "/tests",
    "/solution",
    "/logs",
    "/skills",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
)
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
    build: ServiceBuild | None = None  # built before the run as `image` (BUILT:<digest>)
    volumes: dict[str, str] = {}  # the case's volume name -> where this service mounts it
    # folders of the skill copied into the service before it starts (its path -> the
    # folder's absolute path): skill-optimizer's mcp/ at /mcp
    files: dict[str, str] = {}


class ServiceBuild(msgspec.Struct, frozen=True, kw_only=True):
    """How a service's image is built, as a compose file's `build:` means it: a context
    folder, a Containerfile in it (or elsewhere in the skill), build arguments."""

    context: str  # absolute path of the build context
    dockerfile: str  # absolute path of the Containerfile
    args: dict[str, str] = {}
    network: bool = False  # the case's `build_network`: RUN steps reach the network


class Volume(msgspec.Struct, frozen=True, kw_only=True):
    """A volume of the case, fresh per arm, shared by the services that mount it and the
    checker (and the agent's sandbox with `agent`): compose's bind mount or named volume,
    never a host folder (docs/formats.md)."""

    name: str
    path: str  # where the checker (and the agent's sandbox) mount it
    agent: bool = True  # the agent's sandbox mounts it too (compose gave it to `main`)


VOLUME_FIELDS = ("path", "agent")
VOLUME_SIZE = "256m"  # each volume's cap (a tmpfs, counted like /tmp)


def parse_volumes(rep: Report, value: Any, workdir: str | None) -> tuple[Volume, ...]:
    """The case's `volumes:`, `{name: /path}` (the agent's sandbox and the checker) or
    `{name: {path: /path, agent: false}}` (the checker only)."""
    if not rep.expect(("volumes",), value, dict, "volumes"):
        return ()
    paths: dict[str, str] = {}
    agent: dict[str, bool] = {}
    for name, body in value.items():
        at: KeyPath = ("volumes", name)
        if isinstance(body, dict):
            rep.fields(at, body, VOLUME_FIELDS, f"volume {name!r}")
            if "agent" in body and rep.expect((*at, "agent"), body["agent"], bool, "agent"):
                agent[str(name)] = body["agent"]
            if "path" not in body:
                rep.error(at, f"volume {name!r} needs `path`: where the checker mounts it")
                continue
            paths.update(parse_mounts(rep, (*at, "path"), {name: body["path"]}))
        else:
            paths.update(parse_mounts(rep, at, {name: body}))
    root = workdir or "/work"
    out = []
    for name, path in paths.items():
        if path == root or path.startswith(root.rstrip("/") + "/") or root.startswith(path + "/"):
            rep.error(("volumes", name), f"volume {name!r}: {path} overlaps the workspace {root}")
            continue
        out.append(Volume(name=name, path=path, agent=agent.get(name, True)))
    return tuple(out)


def parse_services(
    rep: Report, value: Any, case_file: Path, skill_dir: Path, network: bool = False
) -> tuple[Service, ...]:
    """The case's `services:`; a `build` is checked here (its paths, its Containerfile's
    instructions, as `check` reads them) and named by its digest. `network`: the case's
    `build_network`."""
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
            service = _service(rep, at, name, body, (case_file, skill_dir, network))
            if service is not None:
                out.append(service)
    return tuple(out)


def _service(
    rep: Report,
    at: KeyPath,
    name: str,
    body: dict[str, Any],
    where: tuple[Path, Path, bool],
) -> Service | None:
    errors = _errors(rep)
    rep.fields(at, body, SERVICE_FIELDS, f"service {name!r}")
    fields: dict[str, Any] = {}
    if "image" in body and "build" in body:
        rep.error((*at, "build"), f"service {name!r}: give `image` or `build`, not both")
    elif "build" in body:
        build = _build(rep, (*at, "build"), body["build"], *where)
        if build is not None:
            fields["build"] = build
            fields["image"] = built_image(build)
    if "volumes" in body:
        fields["volumes"] = parse_mounts(rep, (*at, "volumes"), body["volumes"])
    if "files" in body:
        fields["files"] = _files(rep, (*at, "files"), body["files"], where[0], where[1])
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


def built_image(build: ServiceBuild) -> str:
    """The name of the image `build` makes: the digest of everything that goes into it."""
    h = hashlib.sha256(read_text(Path(build.dockerfile)).encode())
    h.update(tree_digest(Path(build.context)).encode())
    h.update(json.dumps(build.args, sort_keys=True).encode())
    h.update(b"\0network" if build.network else b"")  # (built online is another image)
    h.update(posixpath.relpath(build.dockerfile, build.context).encode())
    return f"{BUILT}:{h.hexdigest()[:12]}"


def _build(
    rep: Report, at: KeyPath, value: Any, case_file: Path, skill_dir: Path, network: bool
) -> ServiceBuild | None:
    """`build: <context>` or `build: {context, dockerfile, args}` (compose's forms): the
    context relative to the case file, the Containerfile relative to the context, both
    inside the skill folder."""
    body = {"context": value} if isinstance(value, str) else value
    if not isinstance(body, dict):
        rep.error(
            at, f"`build` must be a folder or a mapping (context, ...), got {type_name(value)}"
        )
        return None
    rep.fields(at, body, BUILD_FIELDS, "a build")
    if "context" not in body:
        rep.error(at, "a build needs `context`: the folder its Containerfile builds from")
        return None
    if not rep.expect((*at, "context"), body["context"], str, "context"):
        return None
    skill = skill_dir.resolve()
    context = (case_file.parent / body["context"]).resolve()
    context_at = at if isinstance(value, str) else (*at, "context")
    if not context.is_dir():
        rep.error(
            context_at,
            f"build context {body['context']!r} is not a folder (looked for {context}); it is "
            "relative to the case file",
        )
        return None
    if not context.is_relative_to(skill):
        rep.error(context_at, f"build context {body['context']!r} is outside the skill folder")
        return None
    name = body.get("dockerfile", "Dockerfile")
    if not rep.expect((*at, "dockerfile"), name, str, "dockerfile"):
        return None
    dockerfile = (context / name).resolve()
    if not dockerfile.is_file() or not dockerfile.is_relative_to(skill):
        rep.error(
            (*at, "dockerfile") if "dockerfile" in body else context_at,
            f"Containerfile {name!r} is not a file of the skill (looked for {dockerfile}); it "
            "is relative to the build context",
        )
        return None
    args: dict[str, str] = {}
    if "args" in body and rep.expect((*at, "args"), body["args"], dict, "args"):
        for key, val in body["args"].items():
            if isinstance(val, dict | list) or val is None:
                rep.error((*at, "args", key), f"build arg {key!r} must be text or a number")
            else:
                args[str(key)] = _text(val)
    try:
        rep.problems += lint(dockerfile, read_text(dockerfile), network=network, context=context)
    except SpecError as exc:
        rep.problems += exc.problems
        return None
    return ServiceBuild(
        context=str(context), dockerfile=str(dockerfile), args=args, network=network
    )


def _files(
    rep: Report, at: KeyPath, value: Any, case_file: Path, skill_dir: Path
) -> dict[str, str]:
    """`{/path: folder}`: folders of the skill (relative to the case file) copied into the
    service at `path` before it starts."""
    out: dict[str, str] = {}
    if not rep.expect(at, value, dict, "files"):
        return out
    for path, folder in value.items():
        if (
            not isinstance(path, str)
            or not path.startswith("/")
            or posixpath.normpath(path) != path
            or path == "/"
        ):
            rep.error(
                (*at, path),
                f"`files` path {path!r} must be an absolute folder such as /mcp",
                key=True,
            )
        elif rep.expect((*at, path), folder, str, f"files.{path}"):
            found = (case_file.parent / folder).resolve()
            if not found.is_dir() or not found.is_relative_to(skill_dir.resolve()):
                rep.error(
                    (*at, path),
                    f"`files` folder {folder!r} is not a folder of the skill (looked for "
                    f"{found}); it is relative to the case file",
                )
            else:
                out[path] = str(found)
    return out


def parse_mounts(rep: Report, at: KeyPath, value: Any) -> dict[str, str]:
    """`{volume: /path}`: which of the case's volumes a container mounts, and where."""
    out: dict[str, str] = {}
    if not rep.expect(at, value, dict, "volumes"):
        return out
    for name, path in value.items():
        if not isinstance(name, str) or not _NAME.match(name):
            rep.error(
                (*at, name),
                f"volume name {name!r} must be letters, digits and `-` (at most 63)",
                key=True,
            )
        elif rep.expect((*at, name), path, str, f"volumes.{name}"):
            problem = mount_problem(path)
            if problem:
                rep.error((*at, name), f"volume {name!r}: {problem}")
            elif path in out.values():
                rep.error((*at, name), f"volume {name!r}: {path} is mounted twice")
            else:
                out[name] = path
    return out


def mount_problem(path: str) -> str | None:
    """Why a volume cannot be mounted at `path`, or None when it can."""
    if not path.startswith("/") or posixpath.normpath(path) != path or path == "/":
        return f"{path!r} must be an absolute folder such as /shared (not /, no trailing / or ..)"
    if any(path == r or path.startswith(r + "/") for r in RESERVED_PATHS):
        return f"{path} is a folder the sandbox, its checker or the system needs; use your own"
    return None


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
