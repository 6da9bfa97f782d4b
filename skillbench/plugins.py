"""Extensions from outside the tree (docs/architecture.md, "Extending skillbench"): a package
names an agent class or a check kind in an entry-point group, as pytest plugins do, and the
registry that group feeds reads it once, on first use. A broken one is one line naming the entry
point and its distribution; skillbench never runs on with half a plugin."""

from __future__ import annotations

from collections.abc import Callable, Collection
from importlib.metadata import EntryPoint, entry_points

from skillbench.errors import SkillbenchError

AGENT_GROUP = "skillbench.agents"
CHECK_KIND_GROUP = "skillbench.check_kinds"


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
