"""Variants of the sandbox image for what a case `requires` beyond it (docs/formats.md): `node`
(skill-optimizer graders and setups are `node $CASE/checks/…` scripts) gets the sandbox
image's own recipe plus Debian's `nodejs`.

A variant is built as the sandbox image is: mmdebstrap from the host's apt sources, so it
needs no registry, only the Debian mirror the host already uses; it is named by the digest of
its recipe (packages, users, Containerfile), so a change of recipe is a new image and an
unchanged one is built once per machine. Only the default sandbox image has variants: a run
with `--image` (or a case with its own image) brings what it requires itself, and the
`requires` probe skips the case when it does not.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence

from skillbench.sandbox.podman.image import (
    IMAGE,
    PACKAGES,
    ImageBuildError,
    build_with_mmdebstrap,
    image_exists,
    recipe_digest,
)

# a `requires` entry -> the Debian packages its variant adds to the sandbox image's
VARIANTS: dict[str, tuple[str, ...]] = {"node": ("nodejs",)}


def variant_name(need: str) -> str:
    """The image name of the variant for the `requires` entry `need` (in VARIANTS)."""
    return f"localhost/skillbench-sandbox-{need}:{recipe_digest(PACKAGES + VARIANTS[need])}"


def variant_for(base: str, requires: Sequence[str]) -> str | None:
    """The variant a case without its own image runs in, for its `requires` on `base`: the
    node variant when it requires node and `base` is the sandbox image; else None."""
    if base != IMAGE:
        return None
    needs = [item for item in requires if item in VARIANTS]
    return variant_name(needs[0]) if needs else None


def build_variant(name: str, log: Callable[[str], None]) -> str:
    """The variant image `name` (a variant_name), built now unless it exists, saying so."""
    if image_exists(name):
        return name
    need = next(n for n in VARIANTS if variant_name(n) == name)
    if shutil.which("mmdebstrap") is None:
        raise ImageBuildError(
            f"the {need} variant {name} is built with mmdebstrap, which is missing: "
            "apt-get install mmdebstrap (or give the case an `image:` that has it)"
        )
    log(f"the {need} variant {name} is missing; building it now (first use)")
    try:
        build_with_mmdebstrap(name, log, PACKAGES + VARIANTS[need])
    except ImageBuildError as exc:
        raise ImageBuildError(f"the {need} variant {name} could not be built: {exc}") from None
    return name
