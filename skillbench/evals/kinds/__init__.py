"""Check kinds, one registry (docs/architecture.md, "Where things vary"): each kind is one
object with its name, its doc line, how its YAML value is parsed and linted, and how it runs
(`base.Kind`). The built-in kinds are one line each in BUILTIN; a package's kinds come from
the entry-point group `skillbench.check_kinds` (`plugin.py`) and join them here, so the loader
(evals/checks.py), the checker (checks/run.py) and `skillbench check --help` see one set."""

from __future__ import annotations

import functools
from typing import TypeGuard

from skillbench.evals.kinds import scripts, transcript, workspace
from skillbench.evals.kinds.base import (
    At,
    CheckContext,
    Checker,
    CheckKind,
    Kind,
    Lint,
    Verdict,
)
from skillbench.evals.kinds.plugin import PluginKind, refusal
from skillbench.plugins import CHECK_KIND_GROUP, load_group

__all__ = ["At", "CheckContext", "CheckKind", "Checker", "Kind", "Lint", "Verdict"]

BUILTIN: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        transcript.Mentions(),
        transcript.Omits(),
        transcript.Matching(),
        transcript.NoMatching(),
        transcript.CommandMatching(),
        transcript.NoCommandMatching(),
        workspace.FileExists(),
        workspace.FileAbsent(),
        workspace.CommandSucceeds(),
        scripts.Verifier(),
        scripts.Reward(),
        transcript.Expect(),
        scripts.Grader(),
    )
}


@functools.cache
def plugin_kinds() -> dict[str, Kind]:
    """The check kinds installed packages register (read once, on first use)."""
    found = load_group(CHECK_KIND_GROUP, BUILTIN, refusal)
    return {name: PluginKind(kind) for name, kind in found.items() if _is_kind(kind)}


def _is_kind(obj: object) -> TypeGuard[CheckKind]:  # load_group checked it; this tells mypy
    return refusal(getattr(obj, "name", ""), obj) is None


def kinds() -> dict[str, Kind]:
    """Every check kind a case may use, by name: the built-ins, then the packages'."""
    return {**BUILTIN, **plugin_kinds()}


def kind_docs() -> dict[str, str]:
    """Every check kind a case may use, with its doc line."""
    return {name: kind.doc for name, kind in kinds().items()}
