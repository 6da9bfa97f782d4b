"""Check kinds as objects (docs/architecture.md, "Extending skillbench"): a kind is one object
with its name, its doc line, how its YAML argument is parsed and linted, and how it runs. Kinds
from installed packages (entry-point group `skillbench.check_kinds`) live in this registry; the
built-in kinds are still dispatched in evals/checks.py and checks/run.py, and only their names and
docs (model.CHECK_KINDS) are here, so a plugin cannot take one."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeGuard

import msgspec

from skillbench.evals.model import CHECK_KINDS
from skillbench.plugins import CHECK_KIND_GROUP, load_group, missing
from skillbench.results.transcript import Transcript

if TYPE_CHECKING:  # (the sandbox contract imports the eval assets: a type here, no import)
    from skillbench.sandbox.base import Sandbox


class Verdict(msgspec.Struct, frozen=True):
    """What a check kind decides about one session: passed or not, why, and a score if any."""

    passed: bool
    detail: str = ""
    score: float | None = None


@dataclass(frozen=True)
class CheckContext:
    """What a check reads: the session's transcript as it happened, and the checker holding
    the arm's workspace (`sandbox.workdir`), None when the session errored before one."""

    transcript: Transcript
    sandbox: Sandbox | None


class CheckKind(Protocol):
    """A check kind: `name` is its YAML key and `doc` one line for `skillbench` help."""

    name: str
    doc: str

    def parse(self, value: object) -> str:
        """The argument from the YAML value under the kind's key; ValueError (its message
        shown at the check's file:line) when the value is not one."""
        ...

    def lint(self, arg: str) -> Sequence[str]:
        """Warnings about an argument that parses but cannot work as meant."""
        ...

    async def run(self, arg: str, context: CheckContext) -> Verdict:
        """The verdict on one finished session; an exception fails the check with its text."""
        ...


def _check_kind(name: str, obj: object) -> str | None:
    if inspect.isclass(obj):
        return "is a class; point the entry point at an instance of it"
    why = missing(obj, ("name", "doc", "parse", "lint", "run"))
    if why is not None:
        return why
    if getattr(obj, "name", None) != name:
        return f"has name {getattr(obj, 'name', None)!r}; it must be the entry point's, {name!r}"
    if not isinstance(getattr(obj, "doc", None), str):
        return "has no `doc` text"
    if not inspect.iscoroutinefunction(getattr(obj, "run", None)):
        return "has a `run` that is not `async def`"
    return None


@functools.cache
def plugin_kinds() -> dict[str, CheckKind]:
    """The check kinds installed packages register (read once, on first use)."""
    found = load_group(CHECK_KIND_GROUP, CHECK_KINDS, _check_kind)
    return {name: kind for name, kind in found.items() if _is_kind(kind)}


def _is_kind(obj: object) -> TypeGuard[CheckKind]:  # load_group checked it; this tells mypy
    return _check_kind(getattr(obj, "name", ""), obj) is None


def kind_docs() -> dict[str, str]:
    """Every check kind a case may use, with its doc line."""
    return {**CHECK_KINDS, **{name: kind.doc for name, kind in plugin_kinds().items()}}
