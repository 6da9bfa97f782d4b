"""What `skillbench check` can tell about the cases' own images (design §17) before a run:
which are missing locally (a remote one would be pulled, which needs its registry), and which
`requires` entries a present image lacks (the run would skip those cases).

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
from skillbench.sandbox.hostcli import host_env
from skillbench.sandbox.pull import present
from skillbench.sandbox.stage import requirement_probe

PROBE_TIMEOUT = 60.0


def image_problems(sessions: Iterable[Session]) -> list[Problem]:
    """A warning for each case whose own `image:` is missing locally or lacks a `requires`
    entry, at the `image:` line, with the fix."""
    found: list[Problem] = []
    probed: dict[str, list[Session]] = {}  # a present image -> the cases with `requires` on it
    for spec in sessions:
        ref = spec.image
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
            probed.setdefault(ref, []).append(spec)
    for ref, specs in probed.items():  # one probe per image, for every case's entries
        missing = _lacks(ref, [item for spec in specs for item in spec.requires])
        for spec in specs:
            if missing is None:
                found.append(
                    _warn(
                        spec,
                        f"image {ref}: could not probe it for `requires` (it needs a shell, sh)",
                    )
                )
            elif wanted := [item for item in spec.requires if item in missing]:
                found.append(
                    _warn(
                        spec,
                        f"image {ref} lacks {', '.join(wanted)} (`requires`): "
                        "the run would skip this case; install them in the image or "
                        "use one that has them",
                    )
                )
    return found


def _warn(spec: Session, message: str) -> Problem:
    """A warning at the case's `image:` line."""
    try:
        line = load_yaml_file(Path(spec.path)).line(("image",))
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
