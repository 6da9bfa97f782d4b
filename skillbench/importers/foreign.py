"""`skillbench import skill-creator|vally|skillgrade`: the evals skillbench already reads where
they stand (evals/evals.json, Vally's and Skillgrade's eval.yaml) written out as native case
files, for users who want to migrate. The same loaders `check` uses read the source, so the
field report is the same: every note and warning, with its path:line, is listed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from skillbench.evals.eval_yaml import EVAL_YAML_NAMES, eval_yaml_files, load_eval_yaml, schema_of
from skillbench.evals.evals_json import EVALS_JSON, load_evals_json
from skillbench.evals.model import DEFAULT_MAX_TURNS, MAX_TIMEOUT_MINUTES, Case, Check
from skillbench.evals.problems import SpecError
from skillbench.evals.yamlsrc import load_yaml_file
from skillbench.importers.base import Imported, ImportError_, NewFile, headed, refuse_link

SCHEMAS = {"vally": ("vally", "skill-validator"), "skillgrade": ("skillgrade",)}


def import_skill_creator(src: Path, into: Path | None = None) -> Imported:
    """skill-creator's evals.json: the file, or a skill folder holding evals/evals.json."""
    path = src / "evals" / EVALS_JSON if src.is_dir() else src
    return _import(path, "skill-creator evals.json", load_evals_json)


def import_vally(src: Path, into: Path | None = None) -> Imported:
    return _import(_eval_yaml(src, "vally"), "Vally eval.yaml", _yaml_loader("vally"))


def import_skillgrade(src: Path, into: Path | None = None) -> Imported:
    return _import(
        _eval_yaml(src, "skillgrade"), "Skillgrade eval.yaml", _yaml_loader("skillgrade")
    )


def _eval_yaml(src: Path, tool: str) -> Path:
    if not src.is_dir():
        return src
    found = eval_yaml_files(src)
    if not found:
        raise ImportError_(f"{src}: no {' or '.join(EVAL_YAML_NAMES)} at the root or in evals/")
    return found[0]


def _yaml_loader(tool: str) -> Any:
    def load(path: Path, root: Path) -> Any:
        try:
            schema = schema_of(load_yaml_file(path).value)
        except SpecError as exc:
            raise ImportError_("; ".join(str(p) for p in exc.problems[:3])) from None
        if schema not in SCHEMAS[tool]:
            what = f"a {schema} eval.yaml" if schema else "no schema skillbench reads"
            raise ImportError_(f"{path}: this is {what}, not {tool}'s; name its format instead")
        return load_eval_yaml(path, root)

    return load


def _root(path: Path) -> Path:
    """The skill the source's relative paths start from: the folder holding SKILL.md above
    it (evals/ or the root), else the file's own folder."""
    for folder in (path.parent, path.parent.parent):
        if (folder / "SKILL.md").is_file():
            return folder
    return path.parent


def _import(path: Path, what: str, loader: Any) -> Imported:
    path = refuse_link(path.resolve())
    if not path.is_file():
        raise ImportError_(f"{path}: no such {what}")
    try:
        cases, problems = loader(path, _root(path))
    except SpecError as exc:
        lines = [str(p) for p in exc.problems if p.severity == "error"]
        raise ImportError_("; ".join(lines[:5]) + (" …" if len(lines) > 5 else "")) from None
    out = Imported(source=f"{what} {path}")
    for p in problems:  # the field report `check` prints, kept with the source's lines
        (out.warnings if p.severity == "warning" else out.mapped).append(str(p))
    for case in cases:
        out.files.append(NewFile(f"cases/{case.name}.yaml", headed(case_file(case), out.source)))
        out.cases.append(case.name)
    if not cases:
        raise ImportError_(f"{path}: no case to import")
    return out


def case_file(case: Case) -> str:
    """A native case file holding what the loader made of the foreign one."""
    doc: dict[str, Any] = {"task": case.task}
    if case.files:
        doc["files"] = dict(case.files)
    if case.setup:
        doc["setup"] = case.setup
    if case.timeout_minutes != MAX_TIMEOUT_MINUTES:
        doc["timeout_minutes"] = case.timeout_minutes
    if case.max_turns != DEFAULT_MAX_TURNS:
        doc["max_turns"] = case.max_turns
    if not case.expect_activation:
        doc["expect_activation"] = False
    doc["checks"] = [_check(c) for c in case.checks]
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _check(check: Check) -> Any:
    if check.kind == "grader" and check.program is not None:
        return {
            "grader": {
                "run": check.arg,
                "vally": json.loads(check.program),
                "timeout": check.timeout,
            }
        }
    if check.kind == "grader" and check.min is not None:
        return {"grader": {"run": check.arg, "min": check.min}}
    return check.kind if check.arg is None else {check.kind: check.arg}
