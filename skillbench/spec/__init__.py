"""Eval asset schemas and their strict loaders (design §1)."""

from skillbench.spec.load import load_assets, load_case, load_suite, load_triggers
from skillbench.spec.model import Case, Check, EvalAssets, SubCase, Suite, Triggers
from skillbench.spec.problems import Problem, SpecError

__all__ = [
    "Case", "Check", "EvalAssets", "Problem", "SpecError", "SubCase", "Suite", "Triggers",
    "load_assets", "load_case", "load_suite", "load_triggers",
]  # fmt: skip
