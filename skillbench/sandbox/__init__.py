"""Sandboxes: the protocol (base.py), its providers by name, the image, arm staging.

The engine asks `make_provider()` for a provider and sees only the protocol; a new provider
(docs/trust.md: remote podman hosts, Kubernetes) is one module and one line in PROVIDERS, and
must pass tests/sandbox_conformance.py.
"""

from __future__ import annotations

import contextlib
import difflib
import weakref
from collections.abc import Callable

from skillbench.sandbox.base import SandboxError, SandboxProvider


def _podman() -> SandboxProvider:
    from skillbench.sandbox.podman.provider import PodmanProvider

    return PodmanProvider()


PROVIDERS: dict[str, Callable[[], SandboxProvider]] = {"podman": _podman}
_MADE: weakref.WeakSet[SandboxProvider] = weakref.WeakSet()  # for `stop_all`


def make_provider(name: str = "podman") -> SandboxProvider:
    """A started provider called `name`; SandboxError (with a did-you-mean) for others."""
    if name not in PROVIDERS:
        near = difflib.get_close_matches(name, PROVIDERS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise SandboxError(
            f"no sandbox provider {name!r} (providers: {', '.join(PROVIDERS)}){hint}"
        )
    provider = PROVIDERS[name]()
    _MADE.add(provider)
    return provider


def stop_all() -> None:
    """Remove every sandbox and workspace of every provider this process made, now."""
    for provider in list(_MADE):
        with contextlib.suppress(Exception):  # (the process exits next: remove what can be)
            provider.stop_now()
