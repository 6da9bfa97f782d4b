"""`skillbench doctor` and `skillbench image build` on this (set-up) machine."""

from __future__ import annotations

import pytest

from skillbench.cli import main
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


def test_image_build_skips_an_existing_image(capsys) -> None:
    assert main(["image", "build"]) == 0
    assert capsys.readouterr().out == f"image {IMAGE} already present\n"
