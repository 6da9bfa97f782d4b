"""RT5-CF-LINK (redteam5, partial): the folders "above the current one" are the physical
cwd's (Path.cwd().resolve()), not the ones the user sees ($PWD). A user in ~/work/dl, a link
to a downloaded pack's skills/ folder, running `skillbench eval foo`, gets pack/skillbench.toml
(above the link's target), a folder that is above neither the skill nor ~/work in their view.

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_config_symlinked_cwd.py
Expected: path None. Observed: .../pack/skillbench.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillbench.config import load_settings


def test_a_symlinked_cwd_reads_the_config_above_its_target(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    (pack / "skills/foo").mkdir(parents=True)
    (pack / "skills/foo/SKILL.md").write_text("---\nname: foo\ndescription: X.\n---\n")
    (pack / "skillbench.toml").write_text('[cluster]\naddress = "ray://evil.example:1"\n')
    (tmp_path / "work").mkdir()
    (tmp_path / "work/dl").symlink_to(pack / "skills")
    os.chdir(tmp_path / "work/dl")
    os.environ["PWD"] = str(tmp_path / "work/dl")
    assert load_settings(Path("foo")).path is None
