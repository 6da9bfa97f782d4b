"""Eval asset schemas and their strict loaders (design §1)."""

from skillbench.evals.load import load_assets, load_case, load_suite, load_triggers
from skillbench.evals.model import Case, Check, EvalAssets, SubCase, Suite, Triggers
from skillbench.evals.problems import Problem, SpecError

__all__ = [
    "Case",
    "Check",
    "EvalAssets",
    "Problem",
    "SpecError",
    "SubCase",
    "Suite",
    "Triggers",
    "load_assets",
    "load_case",
    "load_suite",
    "load_triggers",
]
