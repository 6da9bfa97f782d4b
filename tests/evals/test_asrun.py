"""What a case ran under that differs from what it asked (evals/asrun.py): kept in the
summary and printed as `as run:` lines; a case given what it asked has none."""

from __future__ import annotations

from skillbench.evals.asrun import difference_lines, differences
from skillbench.evals.model import Session
from skillbench.evals.resources import machine_cpus


def _session(**fields) -> Session:
    return Session(name="c", path="evals/cases/c.yaml", task="t", **fields)


def test_each_difference_is_said_and_only_those() -> None:
    have = machine_cpus()
    sessions = {
        "asked": _session(timeout_minutes=30, cpus=float(have)),
        "long": _session(timeout_minutes=300),
        "wide": _session(cpus=have + 6.0),
        "root": _session(as_root=("verifier", "oracle")),
        "big": _session(memory="1100g"),  # a case of a downloaded skill asks for the host
        "fits": _session(memory="4096m"),
    }
    found = differences(sessions, max_timeout=120, max_memory="8g")
    assert found == {
        "long": ["agent phase cut at 120 min, not its 300 (--max-timeout)"],
        "wide": [f"{have:g} CPUs, not its {have + 6:g} (this machine's)"],
        "root": ["verifier as root in the checker, as its source wrote it (as_root)"],
        "big": ["memory 8g, not its 1100g (max_memory)"],
    }
    assert differences(sessions, max_timeout=300, max_memory="8g").get("long") is None
    assert differences(sessions, max_timeout=120, max_memory="2000g").get("big") is None
    oracle = differences(sessions, max_timeout=120, max_memory="8g", oracle=True)["root"]
    assert oracle[1] == "reference solution as root, as its source wrote it (as_root)"
    assert difference_lines({"long": found["long"], "root": oracle}) == [
        "as run: long: agent phase cut at 120 min, not its 300 (--max-timeout)",
        "as run: root: verifier as root in the checker, as its source wrote it (as_root) · "
        "reference solution as root, as its source wrote it (as_root)",
    ]


def test_a_cases_memory_is_capped_at_the_runs_max_memory() -> None:
    # outside review (C3): a case file's `memory: 1100g` gave both arms' containers 1.1 TB
    from skillbench.engine.plan import case_spec
    from skillbench.sandbox.base import SandboxSpec

    base = SandboxSpec(image="img", memory="2g")
    assert case_spec(base, _session(memory="1100g"), None, "8g").memory == "8g"
    assert case_spec(base, _session(memory="4g"), None, "8g").memory == "4g"
    assert case_spec(base, _session(), None, "8g").memory == "2g"
