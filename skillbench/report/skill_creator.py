"""A run in skill-creator's result shapes (its references/schemas.md, read by its eval viewer
and scripts/aggregate_benchmark.py): one `grading.json` per run of an eval in a
configuration, in aggregate_benchmark's workspace layout under `skill-creator/`, and
`benchmark.json` beside summary.json, with skill-creator's own figures: each run's pass rate
over its expectations, their mean ± stddev per configuration, and the delta.

skill-creator's run is skillbench's session (a case, a repetition, an arm); its
expectations are the session's checks. Arms map to its configurations: the candidate is
`with_skill`, the baseline `without_skill`, the incumbent `old_skill`. A session that errored
has no grading, as skill-creator has none for a run that did not finish.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillbench.results.records import BASELINE, CANDIDATE, INCUMBENT
from skillbench.results.summary import Summary

CONFIGURATIONS = {CANDIDATE: "with_skill", BASELINE: "without_skill", INCUMBENT: "old_skill"}
FOLDER = "skill-creator"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def runs_of(summary: Summary) -> list[dict[str, Any]]:
    """benchmark.json's `runs`: one per (case, repetition, arm) that finished."""
    seen: set[tuple[str, int, str]] = set()
    names = sorted({r.case for r in summary.rows})
    out = []
    for row in summary.rows:
        for arm, result in row.arms.items():
            key = (row.case, row.rep, arm)
            if key in seen or arm not in CONFIGURATIONS or result.error or not result.checks:
                continue
            seen.add(key)
            expectations = [
                {"text": _text(c.name), "passed": c.passed, "evidence": c.detail}
                for c in result.checks
            ]
            passed = sum(c.passed for c in result.checks)
            total = len(expectations)
            out.append(
                {
                    "eval_id": _eval_id(row.case, names),
                    "eval_name": row.case,
                    "configuration": CONFIGURATIONS[arm],
                    "run_number": row.rep,
                    "result": {
                        "pass_rate": round(passed / total, 4),
                        "passed": passed,
                        "failed": total - passed,
                        "total": total,
                        "time_seconds": 0.0,
                        "tokens": 0,
                        "tool_calls": 0,
                        "errors": 0,
                    },
                    "expectations": expectations,
                    "notes": [],
                }
            )
    return out


def stats(values: list[float]) -> dict[str, float]:
    """aggregate_benchmark's calculate_stats: mean, sample stddev (n-1), min, max."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    mean = sum(values) / len(values)
    var = sum((x - mean) ** 2 for x in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return {
        "mean": round(mean, 4),
        "stddev": round(math.sqrt(var), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def run_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per configuration (with_skill first), and the delta of with_skill against the first
    other one, as aggregate_benchmark computes it."""
    order = [c for c in CONFIGURATIONS.values() if any(r["configuration"] == c for r in runs)]
    out: dict[str, Any] = {}
    for config in order:
        mine = [r["result"] for r in runs if r["configuration"] == config]
        out[config] = {
            "pass_rate": stats([r["pass_rate"] for r in mine]),
            "time_seconds": stats([r["time_seconds"] for r in mine]),
            "tokens": stats([float(r["tokens"]) for r in mine]),
        }
    first = out.get(order[0], {}) if order else {}
    other = out.get(order[1], {}) if len(order) > 1 else {}

    def delta(metric: str) -> float:
        return float(first.get(metric, {}).get("mean", 0) - other.get(metric, {}).get("mean", 0))

    out["delta"] = {
        "pass_rate": f"{delta('pass_rate'):+.2f}",
        "time_seconds": f"{delta('time_seconds'):+.1f}",
        "tokens": f"{delta('tokens'):+.0f}",
    }
    return out


def benchmark(summary: Summary, skill_path: str = "") -> dict[str, Any]:
    runs = runs_of(summary)
    return {
        "metadata": {
            "skill_name": summary.skill,
            "skill_path": skill_path,
            "executor_model": summary.models.get("agent", ""),
            "analyzer_model": summary.models.get("grader", summary.models.get("judge", "")),
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "evals_run": sorted({r["eval_id"] for r in runs}, key=str),
            "runs_per_configuration": summary.k,
        },
        "runs": runs,
        "run_summary": run_summary(runs),
        "notes": [
            "written by skillbench: a run is one session (case, repetition, arm); its "
            "expectations are the session's checks; time and tokens are not recorded here "
            "(summary.json's efficiency has them per arm)"
        ],
    }


def write(run_dir: Path, summary: Summary, skill_path: str = "") -> dict[str, Any]:
    """benchmark.json, and each run's grading.json under skill-creator/ (its layout:
    eval-<name>/<configuration>/run-<n>/grading.json). Returns the benchmark."""
    bench = benchmark(summary, skill_path)
    for run in bench["runs"]:
        folder = (
            run_dir
            / FOLDER
            / ("eval-" + _SAFE.sub("-", run["eval_name"]).removeprefix("eval-"))
            / run["configuration"]
            / f"run-{run['run_number']}"
        )
        folder.mkdir(parents=True, exist_ok=True)
        result = run["result"]
        grading = {
            "expectations": run["expectations"],
            "summary": {k: result[k] for k in ("passed", "failed", "total", "pass_rate")},
        }
        (folder / "grading.json").write_text(json.dumps(grading, indent=2) + "\n")
        meta = folder.parent.parent / "eval_metadata.json"
        if not meta.exists():
            meta.write_text(json.dumps({"eval_id": run["eval_id"], "eval_name": run["eval_name"]}))
    (run_dir / "benchmark.json").write_text(json.dumps(bench, indent=2) + "\n")
    return bench


def figures_line(summary: Summary) -> str | None:
    """skill-creator's figures for the report: pass rate mean ± stddev per configuration
    (over its runs' pass rates over expectations), and the delta; shown for a run that grades
    expectations (`expect:` checks, what skill-creator's evals hold), None otherwise."""
    runs = runs_of(summary)
    if not runs or not any(_expects(summary)):
        return None
    rs = run_summary(runs)
    parts = [
        f"{config} {rs[config]['pass_rate']['mean']:.2f} ± {rs[config]['pass_rate']['stddev']:.2f}"
        f" ({sum(r['configuration'] == config for r in runs)} runs)"
        for config in rs
        if config != "delta"
    ]
    return f"skill-creator pass rate: {' · '.join(parts)} · delta {rs['delta']['pass_rate']}"


def _expects(summary: Summary) -> list[bool]:
    return [
        c.name.startswith("expect: ")
        for row in summary.rows
        for arm in row.arms.values()
        for c in arm.checks
    ]


def _text(name: str) -> str:
    return name.removeprefix("expect: ")


def _eval_id(case: str, names: list[str]) -> int | str:
    ident = case.removeprefix("eval-")
    if case.startswith("eval-") and ident.isdigit():
        return int(ident)
    return names.index(case) + 1 if case in names else case
