"""Which network each phase of each case had (docs/eval-assets.md, "Network per phase"): the
case's `network:` as declared, or none under `--network none` (the `network` setting), and the
image build's. Kept in summary.json and printed by the report."""

from __future__ import annotations

from collections.abc import Sequence

from skillbench.evals.model import Session

NETWORK_MODES = ("declared", "none")


def phase_hosts(hosts: Sequence[str], mode: str) -> tuple[str, ...]:
    """What a phase may reach: its declared hosts, or nothing under `--network none`."""
    return () if mode == "none" else tuple(hosts)


def _said(hosts: Sequence[str], declared: Sequence[str]) -> str:
    if hosts:
        return "egress proxy to " + ", ".join(hosts) + " (each connection in network/)"
    return "none (--network none)" if declared else "none"


def networks(sessions: dict[str, Session], mode: str) -> dict[str, dict[str, str]]:
    """Case -> phase (agent, verifier, build) -> what it had; only cases that declare one."""
    out: dict[str, dict[str, str]] = {}
    for name, s in sessions.items():
        agent, verifier = s.network.agent, s.network.verifier
        if not (agent or verifier or s.build_network):
            continue
        out[name] = {
            "agent": _said(phase_hosts(agent, mode), agent),
            "verifier": _said(phase_hosts(verifier, mode), verifier),
        }
        if s.containerfile:
            out[name]["build"] = "podman's network" if s.build_network else "none"
    return out


def network_lines(network: dict[str, dict[str, str]]) -> list[str]:
    return [
        f"network: {case}: " + " · ".join(f"{phase} {what}" for phase, what in phases.items())
        for case, phases in network.items()
    ]
