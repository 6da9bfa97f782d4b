"""The registry of foreign formats (docs/formats.md), each mapped onto
native cases: a Margin Eval suite, Harbor tasks, a skill-optimizer suite (one module each).

What cannot be mapped is said, never dropped silently. A case's own image or Dockerfile
becomes its `image:` / `containerfile:`; offline, a base image that is not on this machine is
said at import time (the eval refuses the case until it is there).

Each is an `Importer`: the source path (and the skill it goes into, when there is one) to an
`Imported` built with importers/base.py. A new format is a module and one line in IMPORTERS,
or, from another package, a function in the entry-point group `skillbench.importers`; it must
pass importers/conformance.py.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Protocol, TypeGuard

from skillbench.importers.base import Imported
from skillbench.importers.foreign import import_skill_creator, import_skillgrade, import_vally
from skillbench.importers.harbor import import_harbor
from skillbench.importers.margin import import_margin
from skillbench.importers.skill_optimizer import import_skill_optimizer
from skillbench.plugins import IMPORTER_GROUP, function, load_group


class Importer(Protocol):
    def __call__(self, src: Path, into: Path | None = None, /) -> Imported: ...


IMPORTERS: dict[str, Importer] = {
    "harbor": import_harbor,
    "margin": import_margin,
    "skill-optimizer": import_skill_optimizer,
    "skill-creator": import_skill_creator,
    "vally": import_vally,
    "skillgrade": import_skillgrade,
}


_accept = function("an importer function")


@functools.cache
def plugin_importers() -> dict[str, Importer]:
    """The importers installed packages register (read once, on first use)."""
    found = load_group(IMPORTER_GROUP, IMPORTERS, _accept)
    return {name: obj for name, obj in found.items() if _is_importer(obj)}


def _is_importer(obj: object) -> TypeGuard[Importer]:  # load_group checked it
    return _accept("", obj) is None


def importers() -> dict[str, Importer]:
    """Every import format by name: the built-ins, then the packages'."""
    return {**IMPORTERS, **plugin_importers()}
