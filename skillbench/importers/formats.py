"""The registry of foreign formats (docs/formats.md), each mapped onto
native cases: a Margin Eval suite, Harbor tasks, a skill-optimizer suite (one module each).

What cannot be mapped is said, never dropped silently. A case's own image or Dockerfile
becomes its `image:` / `containerfile:`; offline, a base image that is not on this machine is
said at import time (the eval refuses the case until it is there).
"""

from skillbench.importers.foreign import import_skill_creator, import_skillgrade, import_vally
from skillbench.importers.harbor import import_harbor
from skillbench.importers.margin import import_margin
from skillbench.importers.skill_optimizer import import_skill_optimizer

IMPORTERS = {
    "harbor": import_harbor,
    "margin": import_margin,
    "skill-optimizer": import_skill_optimizer,
    "skill-creator": import_skill_creator,
    "vally": import_vally,
    "skillgrade": import_skillgrade,
}
