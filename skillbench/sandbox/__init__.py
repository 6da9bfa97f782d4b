"""Sandboxes: the protocol (base.py), its providers by name, the image, arm staging.

The engine and the agents ask `make_provider()` for a provider and `images_of()` for its
images, and see only the protocols. Which provider: the one `[sandbox] provider` names in the
settings (config.py chooses it with `choose`; default podman). A new provider (docs/trust.md:
remote podman hosts, Kubernetes) is one package and one `Backend` line in BACKENDS, or, from
another package, the entry-point group `skillbench.sandbox_providers`; it must pass
skillbench/sandbox/conformance.py.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import weakref
from typing import Protocol, TypeGuard

from skillbench.plugins import SANDBOX_PROVIDER_GROUP, load_group, missing
from skillbench.sandbox.base import Images, SandboxError, SandboxProvider

DEFAULT = "podman"


class Backend(Protocol):
    """What the registry holds for one provider name (and what an entry point names): how to
    start the provider, and its images, asked without starting it (a plan builds them before
    any sandbox)."""

    def provider(self) -> SandboxProvider: ...

    def images(self) -> Images: ...


class _Podman:
    def provider(self) -> SandboxProvider:
        from skillbench.sandbox.podman.provider import PodmanProvider

        return PodmanProvider()

    def images(self) -> Images:
        from skillbench.sandbox.podman.images import PodmanImages

        return PodmanImages()


BACKENDS: dict[str, Backend] = {"podman": _Podman()}
_MADE: weakref.WeakSet[SandboxProvider] = weakref.WeakSet()  # for `stop_all`
_CHOSEN = [DEFAULT]  # the provider of this process's settings (`choose`)


def _backend(name: str, obj: object) -> str | None:
    return missing(obj, ("provider", "images"))


@functools.cache
def plugin_backends() -> dict[str, Backend]:
    """The sandbox providers installed packages register (read once, on first use)."""
    found = load_group(SANDBOX_PROVIDER_GROUP, BACKENDS, _backend)
    return {name: obj for name, obj in found.items() if _is_backend(obj)}


def _is_backend(obj: object) -> TypeGuard[Backend]:  # load_group checked it; this tells mypy
    return _backend("", obj) is None


def backends() -> dict[str, Backend]:
    """Every sandbox provider by name: the built-ins, then the packages'."""
    return {**BACKENDS, **plugin_backends()}


def unknown(name: str) -> str | None:
    """Why `name` is no sandbox provider (naming the known ones), or None when it is one."""
    known = backends()
    if name in known:
        return None
    near = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"no sandbox provider {name!r} (providers: {', '.join(known)}){hint}"


def choose(name: str) -> None:
    """Make `name` the provider `make_provider()` and `images_of()` give (the settings'
    `[sandbox] provider`); SandboxError for an unknown one."""
    why = unknown(name)
    if why is not None:
        raise SandboxError(why)
    _CHOSEN[0] = name


def chosen() -> str:
    """The provider the settings chose (podman unless `[sandbox] provider` says otherwise)."""
    return _CHOSEN[0]


def _named(name: str | None) -> Backend:
    name = chosen() if name is None else name
    why = unknown(name)
    if why is not None:
        raise SandboxError(why)
    return backends()[name]


def make_provider(name: str | None = None) -> SandboxProvider:
    """A started provider called `name` (default: the chosen one); SandboxError (with a
    did-you-mean) for others."""
    provider = _named(name).provider()
    _MADE.add(provider)
    return provider


def images_of(name: str | None = None) -> Images:
    """The images of the provider called `name` (default: the chosen one): the engine's and
    the agents' only way to them."""
    return _named(name).images()


def stop_all() -> None:
    """Remove every sandbox and workspace of every provider this process made, now."""
    for provider in list(_MADE):
        with contextlib.suppress(Exception):  # (the process exits next: remove what can be)
            provider.stop_now()
