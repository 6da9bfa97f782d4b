"""How many sessions fit in this machine's memory at once: measured peaks per agent times
MemAvailable. `skillbench doctor` prints the figure; `eval --parallel` above it warns.

The constants come from bench/memory.py (see its docstring for the method); rerun it and
update them when an agent's image or the sandbox layer changes much.
"""

from __future__ import annotations

from pathlib import Path

MIB = 1 << 20
# Per agent: (peak bytes one more concurrent session adds, fixed peak bytes of a run): the
# session's sandbox cgroup (agent sandbox, checker, conmon) plus the host side (broker, relay)
# in the skillbench process; the fixed part is skillbench itself and a session's overlap with
# its checker. Measured by `bench/memory.py --parallel 4` on the 2-core build machine
# (issue 27): builtin 15 + 0 MiB, claude-code 100 + 1 MiB, codex 24 + 1 MiB per session;
# builtin 17 + 0 MiB once the checker started with the agent (its idle executor overlaps the
# whole agent phase; the others were not measured again: ~2 MiB more each). gemini-cli
# (Node running its bundle) 190 + 1 MiB, measured the same way. copilot: bench/memory.py gave
# 10 + 0 MiB per session, because its cgroup is not charged the pages of the 197 MB executable
# and the 235 MB package it runs (shared page cache); the CLI's own peak RSS under
# `/usr/bin/time -v` (one shell turn against the fake server) is 264 MiB, taken as its figure.
PEAKS = {
    "builtin": (17 * MIB, 108 * MIB),
    "claude-code": (101 * MIB, 147 * MIB),
    "codex": (25 * MIB, 87 * MIB),
    "gemini-cli": (191 * MIB, 83 * MIB),
    "copilot": (264 * MIB, 89 * MIB),
}


def mem_available(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemAvailable in bytes (0 where there is no /proc/meminfo)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def fits(per_session: int, fixed: int, available: int) -> int:
    """Sessions that fit at once in `available` bytes (at least 1: one always runs)."""
    return max(1, (available - fixed) // max(1, per_session))


def _peaks(agent: str) -> tuple[int, int]:
    return PEAKS.get(agent, max(PEAKS.values()))  # an agent not measured: the largest known


def parallel_for(agent: str, available: int) -> int:
    """The --parallel that fits `available` bytes for `agent`."""
    return fits(*_peaks(agent), available)


def parallel_warning(agent: str, parallel: int, available: int) -> str | None:
    """One line when `parallel` sessions of `agent` need more memory than is available."""
    if available <= 0:  # not Linux: nothing known
        return None
    fit = parallel_for(agent, available)
    if parallel <= fit:
        return None
    per_session, fixed = _peaks(agent)
    need = fixed + parallel * per_session
    return (
        f"--parallel {parallel} {agent} sessions need about {need // MIB} MiB, but "
        f"{available // MIB} MiB is available: about {fit} fit (set --parallel {fit}, or "
        "free memory); past it the kernel kills sandboxes"
    )


def doctor_line(available: int) -> str | None:
    """`doctor`'s line: how many sessions of each agent fit in `available` bytes at once."""
    if available <= 0:
        return None
    each = ", ".join(f"{parallel_for(agent, available)} {agent}" for agent in PEAKS)
    return (
        f"memory: {available / (1 << 30):.1f} GiB available holds {each} sessions "
        "at once, memory alone (peaks measured by bench/memory.py)"
    )
