"""Per-case images (docs/formats.md): a case may run in its own image (`image:`, pulled once
when it names a registry: sandbox/podman/pull.py) or one built from its own Containerfile
(`containerfile:`), as imported Harbor and Margin tasks do.

Offline, a Containerfile must start FROM a local image; `FROM skillbench-sandbox` builds on
the sandbox image. Either way a thin layer is added that the sandbox needs (the `agent` and
`checker` users, /work), and the build refuses an image without python3 (the executor runs on
it). Images are named by the digest of everything that went in, so an edit rebuilds and an
unchanged case reuses its image (and its cached baseline sessions).

Builds run as root on the host, so they are kept to their context (docs/trust.md): the recipe
is linted (evals/containerfile.py) right before the build, as `check` does; RUN steps get no
network unless the case says `build_network: true`; and each build has its own temporary
folder, where buildah keeps cache mounts, so no build sees another's (or plants links in it).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from skillbench.evals.containerfile import NETWORK_FIELD, lint, tree_digest
from skillbench.evals.imageref import is_remote
from skillbench.evals.problems import SpecError
from skillbench.evals.services import ServiceBuild
from skillbench.evals.yamlsrc import read_text
from skillbench.sandbox.base import CaseImageError
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.image import IMAGE as SANDBOX_IMAGE
from skillbench.sandbox.podman.image import USERS_SCRIPT, image_exists
from skillbench.sandbox.podman.pull import ImageUnavailable, PullError, pull
from skillbench.sandbox.runtime import runtime_dir

SANDBOX_FROM = "skillbench-sandbox"  # `FROM skillbench-sandbox`: the sandbox image
_FROM = re.compile(r"(?im)^(\s*FROM\s+)skillbench-sandbox(\s|$)")
# Each user only when the image lacks it (an image may ship its own uid 1000 user: the
# build then says so rather than renaming it).
_LAYER = (
    "FROM {base}\nUSER root\n{python}"
    "RUN (id agent >/dev/null 2>&1 && id checker >/dev/null 2>&1 && mkdir -p /work && "
    "chown 1000:1000 /work) || ({users})\n"
)
NO_PYTHON = "this image has no python3, which the sandbox executor runs on"
_REFUSE = f"echo 'skillbench: {NO_PYTHON}: install it in the image' >&2; exit 1"
_NEEDS_PYTHON = "RUN command -v python3 >/dev/null || { " + _REFUSE + "; }\n"
# A base image without python3 (ubuntu:24.04, gcc, eclipse-temurin: what Harbor tasks start
# FROM, and Harbor needs none) gets Debian's or Ubuntu's own python3 when the case's build has
# the network its source builds with; the build log says so. Else the build is refused.
_ADDS_PYTHON = (
    "RUN command -v python3 >/dev/null || { command -v apt-get >/dev/null && "
    f"echo 'skillbench: {NO_PYTHON}: installing python3 with apt-get' >&2 && "
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
    "--no-install-recommends python3 >/dev/null && rm -rf /var/lib/apt/lists/* && "
    "command -v python3 >/dev/null; } || "
    "{ " + _REFUSE + "; }\n"
)


class CaseImageUnavailable(CaseImageError):
    """A case's remote image is not cached and its registry cannot be reached: only the
    cases that need it are skipped."""


def _build(
    name: str,
    recipe: str,
    context: Path,
    *,
    network: bool = False,
    args: dict[str, str] | None = None,
) -> None:
    with tempfile.TemporaryDirectory(prefix="build-", dir=runtime_dir()) as scratch:
        done = subprocess.run(
            [
                *("podman", "build", "--pull=never", "-q", "-t", name, "-f", "-"),
                *(() if network else ("--network=none",)),
                *(f"--build-arg={k}={v}" for k, v in (args or {}).items()),
                str(context),
            ],
            input=recipe.encode(),
            capture_output=True,
            env={**host_env(), "TMPDIR": scratch},  # buildah's cache mounts live here
        )
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip()[-800:]
        offline = (
            ""
            if network
            else f" (it ran without network: `{NETWORK_FIELD}: true` in the case allows it)"
        )
        raise CaseImageError(f"podman build failed{offline}: {tail}")


def _image_id(ref: str) -> str:
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", ref],
        capture_output=True,
        text=True,
        env=host_env(),
    )
    return done.stdout.strip()


def case_image(
    *,
    image: str | None,
    containerfile: Path | None,
    base: str,
    log: Callable[[str], None],
    network: bool = False,
) -> str:
    """The image a case runs in, built on first use."""
    if containerfile is not None:
        try:
            text = read_text(containerfile)
        except SpecError as exc:
            raise CaseImageError(str(exc)) from None
        refused = lint(containerfile, text, network=network)
        if refused:
            raise CaseImageError(f"{refused[0]} (the image was not built)")
        recipe = _FROM.sub(lambda m: m.group(1) + base + m.group(2), text)
        online = b"\0network" if network else b""  # (an image built online is another image)
        source = hashlib.sha256(
            recipe.encode() + tree_digest(containerfile.parent).encode() + online
        )
        own = f"localhost/skillbench-case-src:{source.hexdigest()[:12]}"
        if not image_exists(own):
            log(f"building {own} from {containerfile}")
            try:
                _build(own, recipe, containerfile.parent, network=network)
            except CaseImageError as exc:
                # the FROM hint only when the base is what was missing (not a failed RUN)
                hint = (
                    f"; offline, FROM must name a local image (`FROM {SANDBOX_FROM}` is the "
                    "sandbox image)"
                    if "image not known" in str(exc)
                    else ""
                )
                raise CaseImageError(f"{containerfile}: {exc}{hint}") from None
    else:
        assert image is not None
        if is_remote(image):
            try:
                pull(image, log=log)
            except ImageUnavailable as exc:
                raise CaseImageUnavailable(str(exc)) from None
            except PullError as exc:
                raise CaseImageError(str(exc)) from None
        elif not image_exists(image):
            raise CaseImageError(
                f"image {image!r} is not a local image: build or load it "
                "(`podman images` lists them), or use a containerfile"
            )
        own = image
    python = _ADDS_PYTHON if network else _NEEDS_PYTHON
    layer = _LAYER.format(base=own, users=USERS_SCRIPT, python=python)
    digest = hashlib.sha256((_image_id(own) + layer).encode()).hexdigest()[:12]
    name = f"localhost/skillbench-case:{digest}"
    if not image_exists(name):
        added = " (and python3 with apt-get, if it has none)" if network else ""
        log(f"adding the sandbox users{added} to {own} as {name}")
        with tempfile.TemporaryDirectory() as empty:  # the layer copies nothing
            try:
                _build(name, layer, Path(empty), network=network)
            except CaseImageError as exc:
                raise CaseImageError(f"{own}: {_layer_failure(str(exc), network)}") from None
    return name


def service_image(build: ServiceBuild, name: str, log: Callable[[str], None]) -> str:
    """A service's image (`build:`, evals/services.py), built on first use as `name` (the
    digest of what goes into it). It is the service's own, as compose builds it: no
    sandbox layer (it runs no executor), its USER and CMD kept. Linted like a case's
    Containerfile right before the build, its context its own."""
    if image_exists(name):
        return name
    dockerfile, context = Path(build.dockerfile), Path(build.context)
    try:
        text = read_text(dockerfile)
    except SpecError as exc:
        raise CaseImageError(str(exc)) from None
    refused = lint(dockerfile, text, network=build.network, context=context)
    if refused:
        raise CaseImageError(f"{refused[0]} (the image was not built)")
    recipe = _FROM.sub(lambda m: m.group(1) + SANDBOX_IMAGE + m.group(2), text)
    log(f"building {name} from {dockerfile}")
    try:
        _build(name, recipe, context, network=build.network, args=build.args)
    except CaseImageError as exc:
        raise CaseImageError(f"{dockerfile}: {exc}") from None
    return name


def _layer_failure(why: str, network: bool) -> str:
    """What a failed sandbox layer says: an image without python3 is told what fixes it (the
    build's network hint is about the case's own build, and is kept only when it applies)."""
    if NO_PYTHON not in why:
        return why
    fix = (
        "install python3 in the image (apt-get could not: no apt-get, or it failed)"
        if network
        else f"install python3 in the image, or give the case `{NETWORK_FIELD}: true` so "
        "skillbench installs it with the image's apt-get"
    )
    tail = why[why.index(NO_PYTHON) :].split("\n", 1)[0]
    return f"skillbench: {tail.split(':', 1)[0]}: {fix}"
