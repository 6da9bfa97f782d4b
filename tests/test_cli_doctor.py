"""`skillbench doctor` and `skillbench image build` on this (set-up) machine."""

from __future__ import annotations

import re

import pytest

from skillbench.cli import main
from skillbench.sandbox.capacity import mem_available, parallel_for
from skillbench.sandbox.image import IMAGE

pytestmark = pytest.mark.sandbox


def test_doctor_reports_a_ready_machine(capsys) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert out[-1] == "all set"
    names = [
        line.split(":")[0].split(maxsplit=1)[1] for line in out[:-1] if not line.startswith("note")
    ]
    assert names == [
        "podman",
        "runc",
        "mmdebstrap",
        "podman config",
        "podman runtime",
        "sandbox image",
    ]
    assert f"ok      sandbox image: {IMAGE}" in out
    assert any(
        line.startswith("note    agent claude-code: localhost/skillbench-claude-code:")
        and " built;" in line
        for line in out
    )  # make setup built it
    memory = [line for line in out if line.startswith("note    memory: ")]
    assert len(memory) == 1, out
    found = re.search(r"holds (\d+) builtin, (\d+) claude-code, (\d+) codex ", memory[0])
    assert found, memory[0]
    builtin, claude, codex = map(int, found.groups())
    assert builtin > codex > claude >= 1  # a Claude Code session is the largest
    # this machine's figure (MemAvailable moves a little between the two reads)
    assert abs(claude - parallel_for("claude-code", mem_available())) <= max(2, claude // 20)


def test_image_build_skips_an_existing_image(capsys) -> None:
    assert main(["image", "build"]) == 0
    assert capsys.readouterr().out == f"image {IMAGE} already present\n"
