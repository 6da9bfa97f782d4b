"""Extensions from outside the tree (docs/architecture.md, "Extending skillbench"): a package
names an agent class, a check kind, a model or sandbox provider, an importer or a report format
in an entry-point group, as pytest plugins do, and the registry that group feeds reads it once,
on first use. A broken one is one line naming the entry
point and its distribution; skillbench never runs on with half a plugin."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points

from skillbench.errors import SkillbenchError

AGENT_GROUP = "skillbench.agents"
CHECK_KIND_GROUP = "skillbench.check_kinds"
MODEL_PROVIDER_GROUP = "skillbench.model_providers"
SANDBOX_PROVIDER_GROUP = "skillbench.sandbox_providers"
IMPORTER_GROUP = "skillbench.importers"
REPORT_FORMAT_GROUP = "skillbench.report_formats"


class PluginError(SkillbenchError):
    """An installed package's entry point cannot be loaded as what its group needs."""


def load_group(
    group: str, builtin: Collection[str], accept: Callable[[str, object], str | None]
) -> dict[str, object]:
    """Every entry point of `group`, loaded and checked: `accept(name, obj)` says why `obj`
    is not what the group needs (None: it is). A name a built-in or another package holds is
    refused: which one would run must never depend on install order."""
    found: dict[str, object] = {}
    owners: dict[str, str] = {}
    for point in entry_points(group=group):
        where = _where(point, group)
        if point.name in builtin:
            raise PluginError(
                f"{where}: {point.name!r} is a built-in name; the package must register "
                "another name"
            )
        if point.name in found:
            raise PluginError(f"{where}: {point.name!r} is also registered by {owners[point.name]}")
        try:
            obj = point.load()
        except Exception as exc:  # the plugin's own import: any error is the package's
            raise PluginError(
                f"{where} does not load ({point.value}): {type(exc).__name__}: {exc}"
            ) from None
        why = accept(point.name, obj)
        if why is not None:
            raise PluginError(f"{where}: {point.value} {why}")
        found[point.name] = obj
        owners[point.name] = _distribution(point)
    return found


def _distribution(point: EntryPoint) -> str:
    dist = point.dist
    return f"distribution {dist.name} {dist.version}" if dist is not None else "no distribution"


def _where(point: EntryPoint, group: str) -> str:
    return f"entry point {point.name!r} in group {group} ({_distribution(point)})"


def missing(obj: object, members: Collection[str]) -> str | None:
    """Why `obj` lacks the protocol's `members` (None: it has them all)."""
    absent = [m for m in members if not hasattr(obj, m)]
    return f"lacks {', '.join(absent)}" if absent else None


def function(what: str) -> Callable[[str, object], str | None]:
    """`load_group`'s check for a group of plain functions (an importer, a report format)."""

    def accept(name: str, obj: object) -> str | None:
        if inspect.isclass(obj) or not callable(obj):
            return f"is a {type(obj).__name__}, not {what}"
        return None

    return accept


class Names(Collection[str]):
    """A registry's names, read when first asked: argparse's `choices=` and help take it, so a
    package's names join the built-ins without every group being read at the CLI's start."""

    def __init__(self, registry: Callable[[], Mapping[str, object]]):
        self.registry = registry

    def __contains__(self, name: object) -> bool:
        return name in self.registry()

    def __iter__(self) -> Iterator[str]:
        return iter(self.registry())

    def __len__(self) -> int:
        return len(self.registry())
