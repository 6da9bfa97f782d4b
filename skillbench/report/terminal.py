"""The terminal report of docs/statistics.md, rendered from the summary (so it matches
summary.json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillbench.evals.asrun import difference_lines
from skillbench.evals.netreport import network_lines
from skillbench.grading.judge import family_warning
from skillbench.report.evidence import evidence_lines
from skillbench.report.skill_creator import figures_line
from skillbench.results.stats import ALPHA, MIN_DECIDED
from skillbench.results.summary import Accounting, Comparison, Efficiency, Summary
from skillbench.results.verdict import INCONCLUSIVE


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.0f}%"


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "n/a" if x is None else format(x, fmt)


def stop_line(summary: Summary) -> str:
    """What the sequential stopping rule decided, and what stopping saved."""
    s = summary.stop
    assert s is not None
    what = {
        "boundary": "crossed its boundary",
        "futility": "could no longer cross (futility)",
        "curtailed": "no repetition left could change its verdict",
        "final": "reached its last look",
    }[s.reason]
    head = "stopped early" if summary.not_run else "sequential"
    return (
        f"{head}: {what} at look {s.look} ({s.units} stimuli, {s.decided[-1]} decided, "
        f"boundary {s.bounds[-1] if s.bounds[-1] is not None else 'unreachable'}); "
        f"{summary.not_run} session(s) not run"
    )


def accounting_lines(a: Accounting) -> list[str]:
    """The run's spend against its plan, by call kind and by arm; what was refused for the
    budget and what stopping saved."""
    against = [f"plan ~${a.planned_usd:.2f}"] if a.planned_usd is not None else []
    against += [f"--max-cost ${a.ceiling_usd:.2f}"] if a.ceiling_usd is not None else []
    head = f"spend: ${a.spent_usd:.2f}" + (f" (against {', '.join(against)})" if against else "")
    kinds = " · ".join(f"{k} ${v:.2f}" for k, v in a.by_kind.items())
    arms = " · ".join(
        f"{arm} ${cost:.2f} ({a.sessions.get(arm, 0)} sessions)" for arm, cost in a.by_arm.items()
    )
    lines = [head + (f": {kinds}" if kinds else "")]
    if arms:
        lines.append(f"spend by arm: {arms}")
    if a.refused_calls or a.refused_sessions:
        lines.append(
            f"refused for --max-cost: {a.refused_calls} call(s) never sent; "
            f"{a.refused_sessions} session(s) cut, recorded as not run (no loss, no tie)"
        )
    if a.not_run:
        saved = "n/a" if a.saved_usd is None else f"~${a.saved_usd:.2f}"
        lines.append(f"stopping saved {saved}: {a.not_run} session(s) not run")
    return lines


def report_lines(summary: Summary) -> list[str]:
    """The report, line by line."""
    partial = ""
    if summary.verdict == "NONE":
        partial = " (nothing scored)"
    elif summary.scored_rows < summary.expected_rows and not (summary.stop and summary.complete):
        partial = f" [partial — {summary.scored_rows}/{summary.expected_rows} scored]"
    lines = [f"verdict: {summary.verdict}{partial}{_power(summary)}", f"why: {summary.why}"]
    if summary.stopped:
        lines.append(f"stopped: {summary.stopped}")
    if summary.stop is not None:
        lines.append(stop_line(summary))
    for skip in summary.skipped:
        kind = "environment" if skip.environment else "setup failed"
        lines.append(f"skipped ({kind}): {skip.case} — {skip.reason}")
    for opponent, c in summary.comparisons.items():
        lines.append(f"candidate-vs-{opponent}: {comparison_text(c)}")
    lines.extend(evidence_lines(summary))
    arms = list(summary.case_runs)
    scores, runs = summary.arm_scores, summary.case_runs
    lines.append("arm scores: " + " · ".join(f"{a} {_num(scores.get(a))}" for a in arms))
    lines.append("case-runs passed: " + " · ".join(f"{a} {runs[a][0]}/{runs[a][1]}" for a in arms))
    figures = figures_line(summary)
    if figures:
        lines.append(figures)
    lines.extend(network_lines(summary.network))
    lines.extend(difference_lines(summary.differences))
    if summary.triggers:
        lines.extend(trigger_lines(summary.triggers))
    elif summary.triggers_note:
        lines.append(f"triggers: {summary.triggers_note}")
    if summary.efficiency:
        parts = []
        for arm, e in summary.efficiency.items():
            cost = "$n/a" if e.cost_usd is None else f"${e.cost_usd:.2f}"
            parts.append(f"{arm} {e.turns:.1f} turns · {e.seconds:.1f}s · {cost}")
        # the arms' cost per session, then what the whole run spent (judge, triggers and
        # generation included)
        lines.append("efficiency: " + " | ".join(parts) + f" · run total ${summary.spend_usd:.2f}")
        if (used := models_line(summary.efficiency)) is not None:
            lines.append(used)
    if summary.accounting is not None:
        lines.extend(accounting_lines(summary.accounting))
    if summary.noise_floor is not None:
        floor = summary.noise_floor
        rate = "n/a" if floor.flip_rate is None else f"{floor.flip_rate:.0%}"
        lines.append(
            f"noise floor (A/A): the two baseline arms differ on {floor.flips} of "
            f"{floor.compared} comparisons ({rate}): a lift must clear it"
        )
    if summary.reused:
        r = summary.reused
        lines.append(
            f"baseline: {r.sessions} of {r.of} sessions reused from run "
            f"{', '.join(r.runs)} (--fresh-baseline reruns them)"
        )
    agent, judge = summary.models.get("agent", ""), summary.models.get("judge", "")
    if summary.agent != "builtin":
        who = f"{summary.agent} {summary.agent_version}".strip()
        lines.append(f"models: agent {who} · model {agent} · judge {judge}")
    else:
        note = " (scripted driver: a fixed script, not a model)" * (summary.driver == "scripted")
        lines.append(f"models: agent {agent} · judge {judge}{note}")
    warning = family_warning(agent, judge)
    if warning:
        lines.append(f"  {warning}")
    if summary.diagnostics:
        lines.append("diagnostics (the eval itself):")
        for d in summary.diagnostics:
            what = f"{d.case}: {d.check}" if d.check else d.case
            lines.append(
                f"  {d.kind.upper()}: {what} — {d.detail}"
                if what
                else f"  {d.kind.upper()}: {d.detail}"
            )
    return lines


def comparison_text(c: Comparison) -> str:
    """The rows and the independent units they make (docs/statistics.md), and what the units give:
    `4W/0L/4T rows · 3 of 3 units decided (3W/0L) · net lift +100% · sign test p=0.125`."""
    u = c.units
    return (
        f"{c.win}W/{c.loss}L/{c.tie}T rows · {u.decided} of {u.total} unit"
        f"{'s' * (u.total != 1)} decided ({u.win}W/{u.loss}L) · net lift {_pct(c.net_lift)} · "
        f"sign test p={c.sign_p:.3f}"
    )


def _power(summary: Summary) -> str:
    """Why a verdict is not PASS or FAIL: too few decided units for any verdict, too few for
    this split, a lead the test cannot call significant, or a lift under the floor."""
    first = next(iter(summary.stats.values()), None)
    if summary.verdict not in (INCONCLUSIVE, "NEUTRAL") or first is None:
        return ""
    units = f"{first.decided} decided unit{'s' * (first.decided != 1)}"
    if summary.verdict == INCONCLUSIVE:
        return f" ({units}, at least {MIN_DECIDED} needed)"
    if first.underpowered:
        need = "more than 200" if first.needed is None else str(first.needed)
        return f" (underpowered: {units}, {need} needed at this split)"
    if first.sign_p > ALPHA:
        return f" (not significant: sign test p={first.sign_p:.3f} over {units})"
    return f" (net lift under the {summary.min_net_lift:.0%} floor)"


def trigger_lines(t: dict[str, Any]) -> list[str]:
    """The triggers line and one indented line per wrong (or failed) answer."""

    def ratio(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    head = f"triggers ({t['method']})" if t.get("method") else "triggers"
    if t.get("invalid"):
        return [f"{head}: INVALID: {t['invalid']}"]
    lines = [
        f"{head}: recall={ratio(t['recall'])} precision={ratio(t['precision'])} "
        f"(tp={t['tp']} fn={t['fn']} fp={t['fp']} tn={t['tn']})"
    ]
    for d in t.get("details") or []:
        rate = d.get("rate")
        shown = f" [rate {rate:.2f}]" if rate is not None and 0 < rate < 1 else ""
        failed = f" ({d['error']})" if d.get("fired") is None else ""
        if d["should_trigger"] and d.get("fired") is not True:
            lines.append(f'  MISS: "{d["prompt"]}"{shown}{failed}')
        elif not d["should_trigger"] and d.get("fired") is True:
            lines.append(f'  FALSE-FIRE: "{d["prompt"]}"{shown}')
        elif d.get("fired") is None:
            lines.append(f'  ERRORED: "{d["prompt"]}"{failed}')
    return lines


def models_line(efficiency: Mapping[str, Efficiency]) -> str | None:
    """Which models an agent CLI's calls named, per arm (its subagents' and aliases' too, as
    its broker saw them); None for an agent without a broker (builtin)."""
    parts = [
        f"{arm} " + ", ".join(f"{name} x{calls}" for name, calls in sorted(e.models.items()))
        for arm, e in efficiency.items()
        if e.models
    ]
    return "model calls: " + " | ".join(parts) if parts else None
