"""skillbench: does an agent skill make an LLM agent better, and does it get picked?

The Python API (skillbench/api.py) is importable from here: `skillbench.evaluate(...)`,
`skillbench.Options`, `skillbench.errors.SkillbenchError`; docs/api.md shows it in use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillbench.version import __version__

if TYPE_CHECKING:
    from skillbench.api import (
        GateOptions,
        Options,
        estimate,
        estimate_set,
        evaluate,
        evaluate_async,
        evaluate_set,
        evaluate_set_async,
        evaluate_triggers,
        evaluate_triggers_async,
        gate,
        generate_evals,
        measure_triggers,
        measure_triggers_async,
        read_run,
        read_set,
        run_oracles,
        run_oracles_async,
    )
    from skillbench.engine.run import EvalResult
    from skillbench.engine.sets import CellResult, SetResult
    from skillbench.errors import SkillbenchError
    from skillbench.results.summary import Summary

_API = {
    "GateOptions": "skillbench.api",
    "Options": "skillbench.api",
    "estimate": "skillbench.api",
    "estimate_set": "skillbench.api",
    "evaluate": "skillbench.api",
    "evaluate_triggers": "skillbench.api",
    "gate": "skillbench.api",
    "generate_evals": "skillbench.api",
    "measure_triggers": "skillbench.api",
    "run_oracles": "skillbench.api",
    "evaluate_async": "skillbench.api",
    "evaluate_set": "skillbench.api",
    "evaluate_set_async": "skillbench.api",
    "CellResult": "skillbench.engine.sets",
    "SetResult": "skillbench.engine.sets",
    "evaluate_triggers_async": "skillbench.api",
    "measure_triggers_async": "skillbench.api",
    "run_oracles_async": "skillbench.api",
    "read_run": "skillbench.api",
    "read_set": "skillbench.api",
    "EvalResult": "skillbench.engine.run",
    "Summary": "skillbench.results.summary",
    "SkillbenchError": "skillbench.errors",
}
__all__ = [
    "CellResult",
    "EvalResult",
    "GateOptions",
    "Options",
    "SetResult",
    "SkillbenchError",
    "Summary",
    "__version__",
    "estimate",
    "estimate_set",
    "evaluate",
    "evaluate_async",
    "evaluate_set",
    "evaluate_set_async",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "gate",
    "generate_evals",
    "measure_triggers",
    "measure_triggers_async",
    "read_run",
    "read_set",
    "run_oracles",
    "run_oracles_async",
]


def __getattr__(name: str) -> Any:
    # imported on first use: `import skillbench` (every CLI start, every checker's
    # `skillbench` in a sandbox) does not pay for the engine it may never run
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'skillbench' has no attribute {name!r}")
