"""How many sessions fit in memory, and the warning `eval --parallel` gives past it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillbench.api import Options, evaluate
from skillbench.errors import SkillbenchError
from skillbench.sandbox import capacity
from skillbench.sandbox.capacity import MIB, PEAKS, fits, mem_available, parallel_warning


def test_fits_divides_what_is_left_after_the_fixed_part() -> None:
    assert fits(100 * MIB, 200 * MIB, 1200 * MIB) == 10
    assert fits(100 * MIB, 200 * MIB, 1299 * MIB) == 10  # whole sessions only
    assert fits(100 * MIB, 200 * MIB, 100 * MIB) == 1  # one always runs


def test_the_warning_names_the_number_that_fits() -> None:
    per_session, fixed = PEAKS["claude-code"]
    available = fixed + 3 * per_session + per_session // 2  # room for three and a half
    assert parallel_warning("claude-code", 3, available) is None
    warning = parallel_warning("claude-code", 8, available)
    assert warning is not None and "\n" not in warning
    assert warning.startswith("--parallel 8 claude-code sessions need about ")
    assert "about 3 fit (set --parallel 3" in warning
    assert f"{available // MIB} MiB is available" in warning
    assert parallel_warning("claude-code", 8, 0) is None  # nothing known: no warning


def test_an_unmeasured_agent_is_counted_as_the_largest() -> None:
    largest = max(PEAKS.values())
    available = largest[1] + 2 * largest[0]
    assert capacity.parallel_for("some-new-agent", available) == 2


def test_mem_available_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  8000 kB\nMemAvailable:    2048 kB\n")
    assert mem_available(meminfo) == 2048 * 1024
    assert mem_available(tmp_path / "missing") == 0
    assert mem_available() > 0  # this machine's own


def test_eval_warns_before_its_sessions_when_parallel_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a small machine: the real /proc/meminfo cannot be made small, so this file stands in
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemAvailable: {600 * 1024} kB\n")
    monkeypatch.setattr(capacity, "mem_available", lambda: mem_available(meminfo))
    lines: list[str] = []
    not_a_skill = tmp_path / "empty"
    not_a_skill.mkdir()
    # the warning comes before the run's first step (here: finding the skill) fails
    with pytest.raises(SkillbenchError):
        evaluate(not_a_skill, options=Options(parallel=8, agent="claude-code"), log=lines.append)
    fit = capacity.parallel_for("claude-code", 600 * MIB)
    assert lines[0] == f"warning: {parallel_warning('claude-code', 8, 600 * MIB)}"
    assert f"about {fit} fit" in lines[0]
    lines.clear()
    with pytest.raises(SkillbenchError):
        evaluate(not_a_skill, options=Options(parallel=fit, agent="claude-code"), log=lines.append)
    assert not any(line.startswith("warning:") for line in lines)
