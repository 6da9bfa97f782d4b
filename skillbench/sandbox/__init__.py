"""Sandboxes: the protocol (base.py), its providers by name, the image, arm staging.

The engine asks `make_provider()` for a provider and `images_of()` for its images, and sees only
the protocols; a new provider (docs/trust.md: remote podman hosts, Kubernetes) is one package
and a line in PROVIDERS and IMAGES, and must pass skillbench/sandbox/conformance.py.
"""

from __future__ import annotations

import contextlib
import difflib
import weakref
from collections.abc import Callable

from skillbench.sandbox.base import Images, SandboxError, SandboxProvider


def _podman() -> SandboxProvider:
    from skillbench.sandbox.podman.provider import PodmanProvider

    return PodmanProvider()


def _podman_images() -> Images:
    from skillbench.sandbox.podman.images import PodmanImages

    return PodmanImages()


PROVIDERS: dict[str, Callable[[], SandboxProvider]] = {"podman": _podman}
# each provider's images, asked without starting it (a plan builds them before any sandbox)
IMAGES: dict[str, Callable[[], Images]] = {"podman": _podman_images}
_MADE: weakref.WeakSet[SandboxProvider] = weakref.WeakSet()  # for `stop_all`


def _known(name: str) -> None:
    if name not in PROVIDERS:
        near = difflib.get_close_matches(name, PROVIDERS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise SandboxError(
            f"no sandbox provider {name!r} (providers: {', '.join(PROVIDERS)}){hint}"
        )


def make_provider(name: str = "podman") -> SandboxProvider:
    """A started provider called `name`; SandboxError (with a did-you-mean) for others."""
    _known(name)
    provider = PROVIDERS[name]()
    _MADE.add(provider)
    return provider


def images_of(name: str = "podman") -> Images:
    """The images of the provider called `name` (the engine's only way to them)."""
    _known(name)
    return IMAGES[name]()


def stop_all() -> None:
    """Remove every sandbox and workspace of every provider this process made, now."""
    for provider in list(_MADE):
        with contextlib.suppress(Exception):  # (the process exits next: remove what can be)
            provider.stop_now()
