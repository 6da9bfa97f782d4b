"""The sandbox image: built locally from Debian packages, or from the Containerfile.

No container registry is reachable on many machines, so the default build assembles a
minimal Debian root filesystem with mmdebstrap (from the host's own apt sources) and
imports it. Where a registry is reachable, `--from-registry REF` (or `image_from_registry`
in skillbench.toml) builds the bundled Containerfile FROM a Debian image pinned by digest,
pulled first through the API (sandbox/podman/pull.py: the pin is verified). Where mmdebstrap is
missing, the Containerfile is built FROM Debian's tag as the last resort.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from skillbench.evals.imageref import is_remote, pinned_digest, ref_problem
from skillbench.sandbox.base import ImageBuildError
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.pull import PullError, pull

PACKAGES = ("python3", "git", "ca-certificates", "procps")
CONTAINERFILE = Path(__file__).parent / "files" / "Containerfile"
_EXCLUDES = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*")
# The users of docs/trust.md: the agent runs as `agent`, checks as `checker`, a user the agent
# never was; /work belongs to the agent. The Containerfile does the same.
USERS_SCRIPT = (
    "useradd -m -u 1000 -U -s /bin/bash agent && "
    "useradd -m -u 1001 -U -s /bin/bash checker && "
    "mkdir -p /work && chown 1000:1000 /work"
)


def recipe_digest(packages: tuple[str, ...] = PACKAGES) -> str:
    """The digest of the recipe with `packages` (the sandbox image's, or a variant's)."""
    h = hashlib.sha256()
    h.update(" ".join(packages).encode())
    h.update(USERS_SCRIPT.encode())
    h.update(CONTAINERFILE.read_bytes())
    return h.hexdigest()[:12]


# The tag follows the recipe, so changing the package list makes a new image.
IMAGE = f"localhost/skillbench-sandbox:{recipe_digest()}"


def image_exists(name: str = IMAGE) -> bool:
    """True when podman has an image called `name`."""
    if shutil.which("podman") is None:
        return False
    done = subprocess.run(["podman", "image", "exists", name], capture_output=True, env=host_env())
    return done.returncode == 0


def _host_suite() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"') or "bookworm"
    except OSError:
        pass
    return "bookworm"


def _host_sources() -> list[str]:
    """The host's apt sources file, handed to mmdebstrap so it uses the same mirror."""
    for candidate in (
        Path("/etc/apt/sources.list.d/debian.sources"),
        Path("/etc/apt/sources.list"),
    ):
        if candidate.is_file() and candidate.stat().st_size > 0:
            return [str(candidate)]
    return []


def build_image(
    *,
    force: bool = False,
    name: str = IMAGE,
    log: Callable[[str], None] = print,
    from_registry: str | None = None,
) -> str:
    """Build the sandbox image unless it exists (or `force`); return its name.
    `from_registry`: a digest-pinned Debian image to build FROM instead of mmdebstrap."""
    if shutil.which("podman") is None:
        raise ImageBuildError("podman is not installed; run `make setup` (or `skillbench doctor`)")
    if from_registry is not None:
        _check_base(from_registry)
    if not force and image_exists(name):
        log(f"image {name} already present")
        return name
    if from_registry is not None:
        try:
            pull(from_registry, log=log)
        except PullError as exc:
            raise ImageBuildError(str(exc)) from None
        _build_with_containerfile(name, log, base=from_registry)
    elif shutil.which("mmdebstrap"):
        build_with_mmdebstrap(name, log)
    else:
        _build_with_containerfile(name, log)
    return name


def first_use(name: str, log: Callable[[str], None]) -> None:
    """Make sure the sandbox image `name` is there: the default one is built now, saying so
    (an installed `skillbench` has no `make setup` to run first); another one is refused."""
    if image_exists(name):
        return
    if name != IMAGE:
        raise ImageBuildError(f"the sandbox image {name} is missing: build it, or drop --image")
    log(f"the sandbox image {name} is missing; building it now (first use)")
    try:
        build_image(name=name, log=log)
    except ImageBuildError as exc:
        raise ImageBuildError(f"the sandbox image {name} could not be built: {exc}") from None


def _check_base(ref: str) -> None:
    """A registry base must be named with its registry and pinned by digest: the sandbox is
    then built from bytes known in advance, whatever the tag points to today."""
    problem = ref_problem(ref)
    if problem:
        raise ImageBuildError(f"--from-registry: {problem}")
    if not is_remote(ref) or pinned_digest(ref) is None:
        raise ImageBuildError(
            f"--from-registry {ref}: name the registry and pin the digest, e.g. "
            "docker.io/library/debian:bookworm-slim@sha256:<digest> (`podman pull` it once "
            "and read `podman image inspect --format '{{.Digest}}' IMAGE`)"
        )


def build_with_mmdebstrap(
    name: str, log: Callable[[str], None], packages: tuple[str, ...] = PACKAGES
) -> None:
    """A minimal Debian root filesystem with `packages` and the sandbox users, imported into
    podman as `name`: from the host's apt sources, so no registry is needed."""
    suite = _host_suite()
    log(f"building {name} from Debian {suite} with mmdebstrap (about a minute)")
    cmd = [
        "mmdebstrap",
        "--variant=minbase",
        "--quiet",
        f"--include={','.join(packages)}",
        *[f"--dpkgopt=path-exclude={p}" for p in _EXCLUDES],
        f'--customize-hook=chroot "$1" sh -c {shlex.quote(USERS_SCRIPT)}',
        suite,
        "-",
        *_host_sources(),
    ]
    importer = [
        "podman",
        "import",
        "--change",
        "WORKDIR /work",
        "--change",
        'CMD ["sleep","infinity"]',
        "-",
        name,
    ]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as debootstrap:
        imported = subprocess.run(
            importer, stdin=debootstrap.stdout, capture_output=True, env=host_env()
        )
        assert debootstrap.stderr is not None
        err = debootstrap.stderr.read().decode(errors="replace")
        debootstrap.wait()
    if debootstrap.returncode != 0:
        raise ImageBuildError(f"mmdebstrap failed (exit {debootstrap.returncode}): {err[-2000:]}")
    if imported.returncode != 0:
        raise ImageBuildError(f"podman import failed: {imported.stderr.decode(errors='replace')}")
    log(f"built {name}")


def _build_with_containerfile(
    name: str, log: Callable[[str], None], *, base: str | None = None
) -> None:
    """`podman build` of the Containerfile: FROM `base` (podman's `--from` replaces the file's
    FROM; the base is already pulled, so the build never pulls), or FROM Debian's tag as the
    file says when none is given (pulled by the build)."""
    log(f"building {name} from {CONTAINERFILE} FROM {base or 'its own FROM'}")
    pinned = ("--pull=never", f"--from={base}") if base else ()
    done = subprocess.run(
        [
            *("podman", "build", *pinned, "-t", name),
            *("-f", str(CONTAINERFILE), str(CONTAINERFILE.parent)),
        ],
        capture_output=True,
        env=host_env(),
    )
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise ImageBuildError(
            "podman build failed; without a registry, install mmdebstrap "
            f"(apt-get install mmdebstrap) and retry:\n{tail}"
        )
    log(f"built {name}")
