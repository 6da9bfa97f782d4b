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
    }
    found = differences(sessions, max_timeout=120)
    assert found == {
        "long": ["agent phase cut at 120 min, not its 300 (--max-timeout)"],
        "wide": [f"{have:g} CPUs, not its {have + 6:g} (this machine's)"],
        "root": ["verifier as root in the checker, as its source wrote it (as_root)"],
    }
    assert differences(sessions, max_timeout=300).get("long") is None  # raised: as asked
    oracle = differences(sessions, max_timeout=120, oracle=True)["root"]
    assert oracle[1] == "reference solution as root, as its source wrote it (as_root)"
    assert difference_lines({"long": found["long"], "root": oracle}) == [
        "as run: long: agent phase cut at 120 min, not its 300 (--max-timeout)",
        "as run: root: verifier as root in the checker, as its source wrote it (as_root) · "
        "reference solution as root, as its source wrote it (as_root)",
    ]
