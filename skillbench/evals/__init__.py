"""Eval asset schemas and their strict loaders (docs/formats.md)."""

from skillbench.evals.cases import load_case, load_suite
from skillbench.evals.load import load_assets
from skillbench.evals.model import Case, Check, EvalAssets, SubCase, Suite, Triggers
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.triggers_file import load_triggers

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
