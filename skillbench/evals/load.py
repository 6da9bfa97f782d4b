"""Finding and loading all of a skill's eval assets, with every problem reported as
`path:line`.

Each loader (cases.py, triggers_file.py) returns the typed object and its warnings, or raises
`SpecError` holding all the errors (and warnings) it found, so one run of `skillbench check`
shows everything; `load_assets` gathers them over the whole evals/ folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillbench.evals.cases import load_case, load_suite
from skillbench.evals.eval_yaml import eval_yaml_files, load_eval_yaml
from skillbench.evals.evals_json import EVALS_JSON, load_evals_json
from skillbench.evals.model import Case, EvalAssets, Suite, Triggers
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.triggers_file import load_skill_triggers, load_triggers


def case_files(skill_dir: Path) -> list[Path]:
    """`evals/cases/*.yaml|*.yml`, sorted by file name (docs/formats.md)."""
    folder = skill_dir / "evals" / "cases"
    if not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()),
        key=lambda p: p.name,
    )


def load_assets(
    skill_dir: Path, skill_name: str | None = None, extra: Sequence[Path] = ()
) -> EvalAssets:
    """Discover and load all eval assets of a skill, collecting every problem. `extra`:
    foreign eval files named with `--evals FILE`, wherever they are (dotnet/skills keeps its
    Vally files in a tests/ tree beside the skills): evals.json or an eval.yaml."""
    problems: list[Problem] = []
    cases: list[Case] = []
    stems: dict[str, Path] = {}
    evals = skill_dir / "evals"
    for path in case_files(skill_dir):
        if path.stem == "suite":
            problems.append(
                Problem(
                    str(path),
                    1,
                    "error",
                    "the case name `suite` is taken by "
                    "evals/suite.yaml (its rows are named suite/<name>); rename "
                    "this file",
                )
            )
            continue
        if path.stem in stems:
            problems.append(
                Problem(
                    str(path),
                    1,
                    "error",
                    f"case name {path.stem!r} is also {stems[path.stem].name}; rename one",
                )
            )
            continue
        stems[path.stem] = path
        _collect(problems, cases, load_case, path, skill_dir)
    _note_ignored(problems, evals)
    suite = None
    if (evals / "suite.yaml").exists():
        found: list[Suite] = []
        _collect(problems, found, load_suite, evals / "suite.yaml", skill_dir)
        suite = found[0] if found else None
    foreign: list[tuple[Any, Path]] = []  # other tools' evals, read where they stand
    if (evals / EVALS_JSON).is_file():  # skill-creator's
        foreign.append((load_evals_json, evals / EVALS_JSON))
    foreign += [(load_eval_yaml, p) for p in eval_yaml_files(skill_dir)]  # Vally's, Skillgrade's
    for path in extra:
        if not path.is_file():
            problems.append(Problem(str(path), 1, "error", "--evals: no such file"))
        elif path.suffix == ".json":
            foreign.append((load_evals_json, path))
        else:
            foreign.append((load_eval_yaml, path))
    for loader, path in foreign:
        found_cases: list[list[Case]] = []
        args = (path, skill_dir, skill_name) if loader is load_eval_yaml else (path, skill_dir)
        _collect(problems, found_cases, loader, *args)
        for case in found_cases[0] if found_cases else ():
            if case.name in stems and stems[case.name].parent == evals / "cases":
                problems.append(  # its import: the native file is the one used
                    Problem(
                        str(path),
                        1,
                        "note",
                        f"case {case.name!r} is also {stems[case.name]} (its import?): that "
                        f"file is used; remove {path.name} when the migration is done",
                    )
                )
            elif case.name in stems:
                problems.append(
                    Problem(
                        str(path),
                        1,
                        "error",
                        f"case name {case.name!r} is also {stems[case.name].name}; rename one",
                    )
                )
            else:
                stems[case.name] = path
                cases.append(case)
    triggers = None
    got: list[Triggers | None] = []
    _collect(problems, got, load_skill_triggers, skill_dir, skill_name)
    triggers = got[0] if got else None
    if (evals / "triggers.test.yaml").exists():  # `skillbench tune`'s held-apart test set
        _collect(problems, [], load_triggers, evals / "triggers.test.yaml", skill_name)
    return EvalAssets(str(skill_dir), tuple(cases), suite, triggers, tuple(problems))


def _collect(problems: list[Problem], sink: list[Any], loader: Any, *args: Any) -> None:
    try:
        value, warnings = loader(*args)
    except SpecError as exc:
        problems.extend(exc.problems)
        return
    sink.append(value)
    problems.extend(warnings)


def _note_ignored(problems: list[Problem], evals: Path) -> None:
    """Warn about files that look like assets but discovery (which is exact) skips."""
    for near, exact in (("suite.yml", "suite.yaml"), ("triggers.yml", "triggers.yaml")):
        if (evals / near).exists():
            problems.append(
                Problem(
                    str(evals / near),
                    1,
                    "warning",
                    f"ignored: the file must be named exactly {exact}",
                )
            )
    folder = evals / "cases"
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.is_file() and p.suffix not in (".yaml", ".yml"):
                problems.append(
                    Problem(str(p), 1, "warning", "ignored: case files end in .yaml or .yml")
                )
