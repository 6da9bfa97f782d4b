"""A case's `cpus:` and `memory:` (docs/formats.md): what the source format gives its sandbox
(Harbor's `cpus`, `memory_mb`), applied to both arms' sandboxes and checker in place of the
settings' defaults. More CPUs than the machine has are capped to what it has, and `check`
says so at the field's line."""

from __future__ import annotations

import os
from typing import Any

from skillbench.evals.fields import Report


def machine_cpus() -> int:
    """The CPUs this process may use (a cgroup or affinity mask may hold fewer than exist)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_memory() -> int:
    """This machine's physical memory in bytes (0 when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return 0


def capped_cpus(cpus: float) -> float:
    return min(cpus, float(machine_cpus()))


def capped_memory(asked: str, cap: str) -> str:
    """A case's `memory` cut at the run's `max_memory` (a setting of the user's or the team's,
    never the skill's): a case file, which a downloaded skill brings, asks; it does not decide
    how much of the host its sandboxes may hold."""
    from skillbench.sandbox.base import parse_size  # (sandbox.base imports evals)

    return cap if parse_size(asked) > parse_size(cap) else asked


def parse_resources(rep: Report, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "cpus" in data:
        value = data["cpus"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            rep.error(("cpus",), f"`cpus` must be a number of CPUs above 0, got {value!r}")
        else:
            have = machine_cpus()
            if value > have:
                rep.warn(
                    ("cpus",),
                    f"`cpus: {value:g}` is more than this machine's {have}: the sandbox gets "
                    f"{have} (capped)",
                )
            out["cpus"] = float(value)
    if "memory" in data:
        value = data["memory"]
        from skillbench.sandbox.base import parse_size  # (sandbox.base imports evals)

        try:
            ok = isinstance(value, str) and parse_size(value) > 0
        except ValueError:
            ok = False
        if ok:
            out["memory"] = value
        else:
            rep.error(("memory",), f"`memory` must be a size such as 4g or 512m, got {value!r}")
    return out
