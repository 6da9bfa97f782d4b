"""The podman provider's images (the Images contract in sandbox/base.py): the sandbox image
(image.py), its variants (variants.py) and a case's own (case_image.py), built with the
podman CLI on this host."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from skillbench.sandbox import case_image, image, variants


class PodmanImages:
    sandbox_image = image.IMAGE

    def exists(self, name: str) -> bool:
        return image.image_exists(name)

    def ensure(self, name: str, log: Callable[[str], None]) -> None:
        image.first_use(name, log)

    def variant_for(self, base: str, requires: Sequence[str]) -> str | None:
        return variants.variant_for(base, requires)

    def variant(self, name: str, log: Callable[[str], None]) -> str:
        return variants.build_variant(name, log)

    def case_image(
        self,
        *,
        image: str | None,
        containerfile: Path | None,
        base: str,
        log: Callable[[str], None],
        network: bool = False,
    ) -> str:
        return case_image.case_image(
            image=image, containerfile=containerfile, base=base, log=log, network=network
        )
