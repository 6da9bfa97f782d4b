"""Remote images a case names (docs/formats.md): pulled through the podman API, digest pins
verified, and cached in podman's own storage (a present image is never pulled again).

Which references are remote is evals/imageref.py's rule. A pin (`name@sha256:…`) must
match what arrives: podman checks the manifest against it, and we check again that the
image it stored carries that digest. Registries on a loopback address are reached over plain
HTTP (`tls_verify=False`): such traffic never leaves the machine, and a registry started for
a test or a local mirror seldom has a certificate. Every other registry needs TLS.

A pull that fails because the registry cannot be reached is `ImageUnavailable`: the run skips
only the cases that need that image. Any other failure (no such tag, a pin the registry does
not serve) is `PullError`: the case is wrong and the run is refused.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Callable

from podman import PodmanClient

from skillbench.errors import SkillbenchError
from skillbench.evals.imageref import REFERENCE, pinned_digest, ref_problem
from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.service import PodmanService

# What podman says when the registry cannot be reached at all (as opposed to refusing).
_OFFLINE = (
    "connection refused",
    "no such host",
    "i/o timeout",
    "network is unreachable",
    "no route to host",
    "connection reset",
    "tls handshake timeout",
    "temporary failure in name resolution",
)
PULL_TIMEOUT = 1800.0  # a large image over a slow link; the stream shows it is alive


class PullError(SkillbenchError):
    """The image cannot be had as named: the message says what to change."""


class ImageUnavailable(PullError):
    """The registry could not be reached and the image is not cached locally."""


def _loopback(ref: str) -> bool:
    found = REFERENCE.match(ref)
    host = (found["host"] or "") if found else ""
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]")[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def present(ref: str) -> bool:
    """True when podman holds `ref` (a pinned ref: an image that carries that digest)."""
    done = subprocess.run(["podman", "image", "exists", ref], capture_output=True, env=host_env())
    return done.returncode == 0


def pull(ref: str, *, log: Callable[[str], None], url: str | None = None) -> str:
    """Make `ref` a local image (pulled unless cached) and return it; raise PullError (or
    ImageUnavailable when the registry cannot be reached). `log` gets the progress lines."""
    problem = ref_problem(ref)
    if problem:
        raise PullError(problem)
    if present(ref):
        return ref
    plain = _loopback(ref)
    log(f"pulling {ref}" + (" (plain HTTP: a loopback registry)" if plain else ""))
    try:  # (into the images builds use; a service of our own is stopped after the pull)
        service = PodmanService(url) if url else PodmanService.start_or_reuse(host_storage=True)
    except SandboxError as exc:
        raise PullError(f"image {ref} could not be pulled: {exc}") from None
    try:
        with service.client(PULL_TIMEOUT) as client:
            _stream(client, ref, tls_verify=not plain, log=log)
            stored = client.images.get(ref).attrs
    finally:
        service.stop()
    digest = pinned_digest(ref)
    carried = [d.rsplit("@", 1)[-1] for d in stored.get("RepoDigests") or []]
    if digest is not None and digest not in carried:
        raise PullError(f"image {ref}: what arrived does not carry the pinned digest {digest}")
    log(f"pulled {ref} ({stored.get('Digest', '?')})")
    return ref


def _stream(client: PodmanClient, ref: str, *, tls_verify: bool, log: Callable[[str], None]):
    """The libpod pull: one JSON object a line, progress as `stream`, a failure as `error`
    (the HTTP status is 200 either way once the pull has started)."""
    params = {"reference": ref, "tlsVerify": tls_verify, "policy": "missing"}
    try:
        response = client.api.post("/images/pull", params=params, stream=True)
        response.raise_for_status()
        for line in response.iter_lines():
            item = json.loads(line)
            if "error" in item:
                raise _failure(ref, str(item["error"]))
            if item.get("stream"):
                log(f"  {str(item['stream']).strip()}")
    except PullError:
        raise
    except Exception as exc:  # the API itself failed (podman-py's APIError, a timeout)
        raise _failure(ref, str(exc)) from None


def _failure(ref: str, error: str) -> PullError:
    said = error.strip().splitlines()[-1] if error.strip() else "no reason given"
    if any(marker in said.lower() for marker in _OFFLINE):
        return ImageUnavailable(
            f"image {ref} is not available locally and its registry cannot be reached "
            f"({said[-300:]}); pull it where the registry is reachable (`podman pull {ref}`)"
        )
    if pinned_digest(ref) and "manifest unknown" in said.lower():
        return PullError(
            f"image {ref}: the registry serves no image with that digest pin; "
            "correct the pin (`podman image inspect --format '{{.Digest}}' IMAGE`)"
        )
    return PullError(f"image {ref} could not be pulled: {said[-300:]}")
