"""The podman provider's images (the Images contract in sandbox/base.py): the sandbox image
(image.py), its variants (variants.py) and a case's own (case_image.py), built with the
podman CLI on this host."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from skillbench.evals.services import ServiceBuild
from skillbench.sandbox.base import ImageBuildError
from skillbench.sandbox.podman import case_image, image, variants
from skillbench.sandbox.podman.hostcli import host_env


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

    def service_image(self, build: ServiceBuild, name: str, log: Callable[[str], None]) -> str:
        return case_image.service_image(build, name, log)

    def build(self, name: str, recipe: str, context: Path) -> None:
        argv = ["podman", "build", "--pull=never", "-q", "-t", name, "-f", "-", str(context)]
        done = subprocess.run(argv, input=recipe.encode(), capture_output=True, env=host_env())
        if done.returncode != 0:
            raise ImageBuildError(done.stderr.decode(errors="replace")[-500:])

    def probe(self, name: str, command: str, timeout: float) -> tuple[str, str]:
        argv = ["podman", "run", "--rm", "--network=none", name, "sh", "-c", command]
        done = subprocess.run(argv, capture_output=True, text=True, env=host_env(), timeout=timeout)
        return done.stdout, done.stderr

    def remove(self, name: str) -> None:
        subprocess.run(["podman", "rmi", "-f", name], capture_output=True, env=host_env())
