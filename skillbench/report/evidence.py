"""The report lines of docs/statistics.md that say what the verdict is evidence of: the library arm
it ran in, whether the skill loaded (and the lift where it did), and the skills the agent CLI
brought on its own. Every renderer (terminal, markdown, html) shows these same lines."""

from __future__ import annotations

from pathlib import Path

from skillbench.results.activation import FIRED_WHERE_NOT, Activation, Ambient
from skillbench.results.records import Library
from skillbench.results.summary import Summary


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.0f}%"


def evidence_lines(summary: Summary) -> list[str]:
    """The library, activation and ambient lines (each only when there is something)."""
    lines = []
    if summary.library is not None:
        lines.append(library_line(summary.library, summary.skill))
    if summary.activation is not None:
        lines.extend(activation_lines(summary.activation))
    if summary.ambient is not None:
        lines.append(ambient_line(summary.ambient))
    return lines


def library_line(library: Library, skill: str) -> str:
    names = ", ".join(s.name for s in library.skills)
    n = len(library.skills)
    return (
        f"library arm: every arm stages {n} other skill{'s' * (n != 1)} of "
        f"{Path(library.path).name}/ ({names}); the candidate adds {skill}"
    )


def activation_lines(a: Activation) -> list[str]:
    """`activation:` with the lift where it fired beside the overall lift, then the cases
    where it did not load (or loaded where it should not)."""
    lines = []
    if a.sessions:
        lines.append(
            f"activation: fired in {a.fired} of {a.sessions} candidate "
            f"session{'s' * (a.sessions != 1)} · net lift {_pct(a.lift_when_fired)} where it "
            f"fired ({a.units_when_fired} unit{'s' * (a.units_when_fired != 1)}) vs "
            f"{_pct(a.lift)} overall"
        )
        missed = [c for c in a.cases if c.expected and c.fired < c.sessions]
        if missed and a.fired:
            lines.append(
                "  not loaded in: "
                + ", ".join(f"{c.case} ({c.sessions - c.fired} of {c.sessions})" for c in missed)
            )
    if a.opened or a.by_tool:
        lines.append(
            f"  seen: a file of it opened in {a.opened}, only its skill tool's call in {a.by_tool}"
        )
    if a.invocations:
        lines.append(
            f"activation: invoked explicitly (`/{a.skill}`) in {a.invocations} candidate "
            f"session{'s' * (a.invocations != 1)}, loaded in {a.invoked}: not counted as "
            "triggering"
        )
    if a.unexpected:
        wrong = [c for c in a.cases if not c.expected and c.fired]
        detail = f" ({', '.join(c.case for c in wrong)}: those rows are losses)" if wrong else ""
        lines.append(
            f"activation: {FIRED_WHERE_NOT} in {a.misfired} of {a.unexpected} "
            f"session{'s' * (a.unexpected != 1)} of expect_activation: false cases{detail}"
        )
    return lines


def ambient_line(ambient: Ambient) -> str:
    """The skills each arm was shown that nobody staged, and what was done about them: said
    once, for the whole run."""
    shown = {arm: names for arm, names in ambient.arms.items() if names}
    if not shown:
        return f"ambient skills: none in any arm ({ambient.policy})"
    lists = {", ".join(names) for names in shown.values()}
    if len(lists) == 1 and len(shown) == len(ambient.arms):
        listed = f"every arm: {lists.pop()}"
    else:
        listed = " · ".join(
            f"{arm} {', '.join(names) or 'none'}" for arm, names in ambient.arms.items()
        )
    return f"ambient skills: {listed} ({ambient.policy})"
