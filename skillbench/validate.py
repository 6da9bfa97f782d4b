"""Validate skills and their eval assets without any model call (`skillbench check`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.evals import EvalAssets, Problem, SpecError, load_assets
from skillbench.evals.skills import (
    eval_files,
    is_library_root,
    is_skill,
    read_skill,
    root_children,
    skill_files,
)
from skillbench.sandbox.podman.image_check import image_problems


class NotASkill(SkillbenchError):
    """The path is neither a skill folder nor a library root."""


class SkillCheck(msgspec.Struct, frozen=True):
    """What checking one skill found: its name (None when SKILL.md is broken) and assets."""

    path: str
    name: str | None
    assets: EvalAssets
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> int:
        return sum(p.severity == "error" for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(p.severity == "warning" for p in self.problems)


def skills_at(path: Path) -> list[Path]:
    """The skill folders named by a path (a skill or a library root); raise NotASkill."""
    if not path.exists():
        raise NotASkill(f"{path}: no such file or folder")
    if is_skill(path):
        return [path]
    if is_library_root(path):
        return root_children(path)
    raise NotASkill(
        f"{path}: not a skill (no {path / 'SKILL.md'}) and not a library root "
        "(no child folder holds a SKILL.md)"
    )


def check_skill(folder: Path, extra: Sequence[Path] = ()) -> SkillCheck:
    """Read SKILL.md, the skill's tree and its eval assets; collect every problem."""
    problems: list[Problem] = []
    name = None
    try:
        skill = read_skill(folder)
        name = skill.name
        problems.extend(skill.warnings)
    except SpecError as exc:
        problems.extend(exc.problems)
    for files in (skill_files, eval_files):
        try:
            files(folder)
        except SpecError as exc:
            problems.extend(exc.problems)
    assets = load_assets(folder, name, extra)
    problems.extend(assets.problems)
    problems.extend(image_problems([*assets.cases, *([assets.suite] if assets.suite else [])]))
    problems.sort(key=lambda p: (p.path, p.line))
    return SkillCheck(str(folder), name, assets, tuple(problems))
