"""What `skillbench check` can tell about the cases' own images (docs/formats.md) before a run:
which are missing locally (a remote one would be pulled, which needs its registry), which
`requires` entries a present image lacks (the run would skip those cases), and which variant
of the sandbox image a case's `requires` needs that is not built yet (sandbox/podman/variants.py).

The probe is one short `podman run` per image, without network, as the image's own user:
only `command -v` and `python3 -c 'import …'`, the same probes the run makes.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from skillbench.evals.imageref import is_remote, ref_problem
from skillbench.evals.model import Session
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.yamlsrc import load_yaml_file
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.image import IMAGE, image_exists
from skillbench.sandbox.podman.pull import present
from skillbench.sandbox.podman.variants import variant_for
from skillbench.sandbox.stage import requirement_probe

PROBE_TIMEOUT = 60.0


def image_problems(sessions: Iterable[Session]) -> list[Problem]:
    """A warning for each case whose own `image:` is missing locally or lacks a `requires`
    entry, at the `image:` line, with the fix; and, at its `requires:` line, for each case
    whose variant of the sandbox image is not built yet or lacks a `requires` entry."""
    found: list[Problem] = []
    # a present image -> the cases with `requires` on it, and the field a warning is at
    probed: dict[str, list[tuple[Session, str]]] = {}
    for spec in sessions:
        ref = spec.image
        if ref is None and spec.containerfile is None:
            _variant(spec, probed, found)
            continue
        if ref is None or ref_problem(ref):  # (a malformed reference is already an error)
            continue
        if shutil.which("podman") is None:
            found.append(
                _warn(spec, f"image {ref}: podman is not installed, so it cannot be found")
            )
        elif not present(ref):
            how = (
                f"the run pulls it, which needs its registry: `podman pull {ref}` now to have it "
                "offline"
                if is_remote(ref)
                else "build or load it (`podman images` lists the local ones), or name it with "
                "its registry so it can be pulled"
            )
            found.append(_warn(spec, f"image {ref} is missing locally; {how}"))
        elif spec.requires:
            probed.setdefault(ref, []).append((spec, "image"))
    for ref, specs in probed.items():  # one probe per image, for every case's entries
        missing = _lacks(ref, [item for spec, _ in specs for item in spec.requires])
        for spec, field in specs:
            if missing is None:
                found.append(
                    _warn(
                        spec,
                        f"image {ref}: could not probe it for `requires` (it needs a shell, sh)",
                        field,
                    )
                )
            elif wanted := [item for item in spec.requires if item in missing]:
                found.append(
                    _warn(
                        spec,
                        f"image {ref} lacks {', '.join(wanted)} (`requires`): "
                        "the run would skip this case; install them in the image or "
                        "use one that has them",
                        field,
                    )
                )
    return found


def _variant(
    spec: Session, probed: dict[str, list[tuple[Session, str]]], found: list[Problem]
) -> None:
    """A case without an image of its own whose `requires` needs a variant of the sandbox
    image (sandbox/podman/variants.py): a warning while it is not built; once it is, its `requires`
    are probed there, as the run probes them."""
    variant = variant_for(IMAGE, spec.requires)
    if variant is None:
        return
    if image_exists(variant):
        probed.setdefault(variant, []).append((spec, "requires"))
        return
    how = (
        "the first eval builds it (about a minute, from the apt mirror), or "
        "`skillbench image build --node` now"
        if shutil.which("mmdebstrap")
        else "it is built with mmdebstrap, which is missing: apt-get install "
        "mmdebstrap, then `skillbench image build --node`"
    )
    found.append(
        _warn(
            spec,
            f"`requires` {', '.join(spec.requires)}: the case runs in the sandbox "
            f"image's variant {variant}, not built yet: {how}",
            "requires",
        )
    )


def _warn(spec: Session, message: str, field: str = "image") -> Problem:
    """A warning at the case's `image:` (or `field`) line."""
    try:
        line = load_yaml_file(Path(spec.path)).line((field,))
    except SpecError:
        line = 1
    return Problem(spec.path, line, "warning", message)


def _lacks(ref: str, requires: Iterable[str]) -> list[str] | None:
    """The entries of `requires` the image lacks, or None when it could not be probed."""
    items = list(dict.fromkeys(requires))
    script = "; ".join(
        f"{requirement_probe(item)} 2>/dev/null || echo {shlex.quote(item)}" for item in items
    )
    try:
        done = subprocess.run(
            ["podman", "run", "--rm", "--network=none", "--pull=never", ref, "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            env=host_env(),
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return [line for line in done.stdout.splitlines() if line in items]
