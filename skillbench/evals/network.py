"""A case's `network:` field (docs/formats.md): which hosts each phase may reach through the egress
proxy. `none` (the default), one allowlist for both phases, or `{agent: …, verifier: …}`.

An entry is `host` (ports 80 and 443, the web's) or `host:port`; a host is a DNS name or an
IP address (IPv6 in brackets when a port follows). Parsing lives here, beside the rest of the
format, so `check` and the proxy (skillbench/sandbox/egress.py) read entries the same way.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import msgspec

from skillbench.evals.fields import Report, type_name
from skillbench.evals.yamlsrc import KeyPath

NONE = "none"
PHASES = ("agent", "verifier")
WEB_PORTS = (80, 443)  # what a bare `host` allows
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class Network(msgspec.Struct, frozen=True):
    """Each phase's allowlist, as written; empty: the phase reaches nothing."""

    agent: tuple[str, ...] = ()
    verifier: tuple[str, ...] = ()

    def of(self, phase: str) -> tuple[str, ...]:
        return self.agent if phase == "agent" else self.verifier


class Allowed(msgspec.Struct, frozen=True):
    """One entry: a lower-cased host (a name or an address) and its ports."""

    host: str
    ports: tuple[int, ...]

    @property
    def address(self) -> bool:
        """Whether the host is an IP address (an explicit one is honoured even when private)."""
        return _address(self.host) is not None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def parse_entry(text: str) -> Allowed:
    """The entry `text` (`host`, `host:port`, `[v6]:port`); ValueError saying what is wrong."""
    entry = text.strip().lower()
    if "://" in entry or "/" in entry:
        raise ValueError(f"{text!r} is a URL; give `host` or `host:port` (e.g. pypi.org:443)")
    port: str | None = None
    if entry.startswith("["):
        host, sep, rest = entry[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")) or _address(host) is None:
            raise ValueError(f"{text!r}: write an IPv6 address with a port as [::1]:8080")
        port = rest[1:] if rest else None
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    else:
        host = entry  # a name, an IPv4 address, or a bare IPv6 address
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    host = host.rstrip(".")
    if _address(host) is None and not (
        host and len(host) <= 253 and all(_LABEL.match(label) for label in host.split("."))
    ):
        raise ValueError(f"{text!r} is not a host name or an IP address (no wildcards)")
    return Allowed(host, (int(port),) if port else WEB_PORTS)


def parse_network(rep: Report, value: Any) -> Network | None:
    """The `network` field, every problem reported at its line; None when it has errors."""
    at: KeyPath = ("network",)
    if isinstance(value, dict):
        phases: dict[str, tuple[str, ...]] = {}
        ok = True
        for key, item in value.items():
            if key not in PHASES:
                rep.error(
                    (*at, key),
                    f"unknown phase `{key}` in `network` (known: agent, verifier)",
                    key=True,
                )
                ok = False
                continue
            hosts = _allowlist(rep, (*at, key), item, f"network.{key}")
            ok = ok and hosts is not None
            phases[key] = hosts or ()
        return Network(**phases) if ok else None
    hosts = _allowlist(rep, at, value, "network")
    return None if hosts is None else Network(hosts, hosts)


def lint_service_hosts(rep: Report, value: Any, services: set[str]) -> None:
    """An allowlist entry that names one of the case's services is an error: a service is
    reached directly in the arm's pod, and the proxy refuses its name (on the host the
    name could resolve to a listener of the host's own)."""
    lists = value.items() if isinstance(value, dict) else [(None, value)]
    for phase, items in lists:
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            try:
                host = parse_entry(item).host if isinstance(item, str) else None
            except ValueError:
                continue
            if host in services:
                at: KeyPath = ("network", i) if phase is None else ("network", phase, i)
                rep.error(
                    at,
                    f"`network` entry {item!r} names the case's service `{host}`: services "
                    "are reached directly in the arm's pod, never through the egress proxy; "
                    "remove the entry",
                )


def _allowlist(rep: Report, at: KeyPath, value: Any, field: str) -> tuple[str, ...] | None:
    if value == NONE:
        return ()
    if not isinstance(value, list):
        rep.error(
            at,
            f"`{field}` must be `none`, a list of `host` or `host:port` entries, or (for "
            f"`network`) {{agent: …, verifier: …}}; got {type_name(value)}",
        )
        return None
    ok = True
    for i, item in enumerate(value):
        if not isinstance(item, str):
            rep.error((*at, i), f"`{field}` entry {i + 1} must be a string, got {type_name(item)}")
            ok = False
            continue
        try:
            parse_entry(item)
        except ValueError as exc:
            rep.error((*at, i), f"`{field}` entry {exc}")
            ok = False
    return tuple(str(item).strip() for item in value) if ok else None
