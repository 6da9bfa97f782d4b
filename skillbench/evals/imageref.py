"""Image references in case files (`image:`): their grammar, and which ones name a registry.

The grammar is distribution/reference's, enough to refuse a typo at `check` time rather than
as podman's error mid-run. A reference is remote when its first path component is a registry
host: it has a dot or a port (`localhost:5000/x` too), as podman itself decides; a bare
`localhost/x` is podman's name for a local image and is never pulled.
"""

from __future__ import annotations

import re

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*|\[[0-9a-fA-F:]+\])"
REFERENCE = re.compile(
    rf"^(?:(?P<host>{_HOST}(?::[0-9]+)?)/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*:[0-9A-Za-z]+))?$"
)
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def ref_problem(ref: str) -> str | None:
    """Why `ref` is not an image reference skillbench can use, or None."""
    found = REFERENCE.match(ref)
    if found is None:
        return (
            f"image {ref!r} is not an image reference; write `[registry/]name[:tag]` or "
            "`registry/name@sha256:<64 hex digits>` (lower case)"
        )
    digest = found["digest"]
    if digest is not None and not _SHA256.match(digest):
        return f"image {ref!r}: a digest pin must be `sha256:` and 64 lower-case hex digits"
    return None


def is_remote(ref: str) -> bool:
    """True when `ref` names a registry host, so it can be pulled."""
    found = REFERENCE.match(ref)
    host = found["host"] if found else None
    return host is not None and (host.startswith("localhost:") or "." in host or ":" in host)


def pinned_digest(ref: str) -> str | None:
    """The `sha256:…` a reference is pinned to, or None."""
    found = REFERENCE.match(ref)
    return found["digest"] if found else None
