"""What a case was given that differs from what it asked for (docs/results.md, the summary's
`differences`): an agent phase cut at the run's `max_timeout`, CPUs capped to the
machine's, memory capped at the run's `max_memory`, scripts run as root where their source
wrote them for root. `check` says each at the case's line; the run keeps them in
summary.json and the report prints them, beside the network each phase had (netreport.py)."""

from __future__ import annotations

from skillbench.evals.model import Session
from skillbench.evals.resources import capped_cpus, capped_memory


def differences(
    sessions: dict[str, Session], max_timeout: int, max_memory: str, oracle: bool = False
) -> dict[str, list[str]]:
    """Case -> what it ran under that differs from what it asked; only cases with one. The
    oracle's own root difference only in an oracle run (`oracle`)."""
    out: dict[str, list[str]] = {}
    for name, s in sessions.items():
        said = []
        if s.timeout_minutes > max_timeout:
            said.append(
                f"agent phase cut at {max_timeout} min, not its {s.timeout_minutes} (--max-timeout)"
            )
        if s.cpus is not None and (have := capped_cpus(s.cpus)) < s.cpus:
            said.append(f"{have:g} CPUs, not its {s.cpus:g} (this machine's)")
        if s.memory is not None and (got := capped_memory(s.memory, max_memory)) != s.memory:
            said.append(f"memory {got}, not its {s.memory} (max_memory)")
        if "verifier" in s.as_root:
            said.append("verifier as root in the checker, as its source wrote it (as_root)")
        if oracle and "oracle" in s.as_root:
            said.append("reference solution as root, as its source wrote it (as_root)")
        if said:
            out[name] = said
    return out


def difference_lines(found: dict[str, list[str]]) -> list[str]:
    return [f"as run: {case}: " + " · ".join(said) for case, said in found.items()]
