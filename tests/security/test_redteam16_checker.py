"""Sixteenth outside review (issue 38), the check phase: git configs the first handover tames
(real podman, the handover and the checker as a run has them)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from skillbench.evals.model import Check
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.security.test_redteam11_checker import checked

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

# one subsection 1,000 bytes long, 120,000 keys under it (721 KB, under the 1 MiB cap)
MANY_KEYS = r"""
python3 - <<'PY'
import itertools, os
a = 'abcdefghijklmnopqrstuvwxyz0123456789'
keys = itertools.islice(itertools.product(a, repeat=4), 120000)
os.makedirs('r1', exist_ok=True)
open('r1/HEAD', 'w').write('ref: refs/heads/main\n')
open('r1/config', 'w').write('[a "' + 's' * 1000 + '"]\n' + ''.join('b' + ''.join(k) + '\n' for k in keys))
PY
"""


async def test_a_git_config_of_many_keys_is_emptied_quickly(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """Each key was looked up in a list of the keys to drop (quadratic, and each comparison
    a memcmp of the long shared prefix), uncharged and unclocked: the first handover outlasted
    the host's wait, the sandbox was declared hung and a losing arm's row went unscored."""
    started = time.monotonic()
    results = await checked(
        provider,
        spec,
        tmp_path,
        "true",
        [Check("command_succeeds", "test -f r1/config && test ! -s r1/config")],
        prep=f" && {{ {MANY_KEYS} }}",
    )
    assert time.monotonic() - started < 120
    assert results[0].passed, results[0].detail


async def test_a_git_config_linked_to_a_root_only_image_file_is_not_read_for_the_agent(
    provider: PodmanProvider, spec: SandboxSpec, tmp_path: Path
) -> None:
    """The handover, as root, copied what a linked config led to into the workspace: a link
    to /etc/shadow (or a key a case image keeps for its root verifier) was handed to the
    candidate's code, the model grader and the kept workspace."""
    results = await checked(
        provider,
        spec,
        tmp_path,
        "true",
        [
            Check("command_succeeds", "! cat /etc/shadow"),  # (root's only, as the test needs)
            Check("command_succeeds", "test -f r/config && ! grep -q root: r/config"),
        ],
        prep=" && mkdir r && echo 'ref: refs/heads/main' > r/HEAD && ln -s /etc/shadow r/config",
    )
    assert [r.passed for r in results] == [True, True], results
