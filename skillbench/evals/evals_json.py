"""skill-creator's `evals/evals.json`, read where it stands: each eval is one case whose
expectations are its scored rows (one vote per eval), graded by the model grader (`expect`).

The shapes seen in public skills: the list is `expectations` or `assertions`; its items are
strings, `{name, description}` or `{text}`; `id` is an integer or a string; `category:
"non-trigger"` marks a task the skill is not for; `files` are paths relative to the skill
root; other keys (`name`, `version`, ...) are informational. Every field is reported (a note)
with what it became, so `check` never ignores one silently.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillbench.evals.cases import bad_file_path
from skillbench.evals.fields import Report, root_mapping, type_name
from skillbench.evals.model import Case, Check
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.yamlsrc import KeyPath, load_yaml_file, read_text

EVALS_JSON = "evals.json"
_LISTS = ("expectations", "assertions", "expect")
_INFORMATIONAL = ("name", "version", "description", "tags", "difficulty")
_MAX_FILES = 200  # a `files` folder staged beyond this is a fixture, not an input
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def load_evals_json(path: Path, skill_dir: Path) -> tuple[list[Case], list[Problem]]:
    """The cases of an `evals.json`; raises `SpecError` with every error found."""
    doc = load_yaml_file(path)  # JSON is YAML: the reader keeps every value's line
    rep = Report(doc)
    if isinstance(doc.value, list):  # seen in public skills: the evals list alone
        doc.value = {"evals": doc.value}
        doc._lines = {("evals", *k): v for k, v in doc._lines.items()}
        doc._keys = {("evals", *k): v for k, v in doc._keys.items()}
    data = root_mapping(doc, "skill-creator's evals.json", '"skill_name", "evals": [...]')
    for key in data:
        if key not in ("skill_name", "evals"):
            rep.note((key,), f"`{key}` is not a field of evals.json; not used", key=True)
    _skill_name(rep, data.get("skill_name"), skill_dir)
    cases: list[Case] = []
    evals = data.get("evals")
    if "evals" not in data:  # seen in public skills: the list under another name
        lists = [k for k, v in data.items() if isinstance(v, list) and v]
        also = f" (the file has {', '.join(f'`{k}`' for k in lists)})" if lists else ""
        rep.error(
            (),
            f"no `evals` list{also}: skill-creator's evals.json lists its evals under "
            '`evals`, each {"id", "prompt", "expectations"}',
        )
        rep.raise_if_errors()
    if not isinstance(evals, list):
        rep.error(("evals",), f"`evals` must be a list of evals, got {type_name(evals)}")
        rep.raise_if_errors()
    seen: dict[str, int] = {}
    for i, item in enumerate(evals or ()):
        case = _case(rep, ("evals", i), item, path, skill_dir)
        if case is None:
            continue
        if case.name in seen:
            rep.error(
                ("evals", i, "id"),
                f"eval id gives the case name {case.name!r} again (first on line "
                f"{seen[case.name]}); give each eval its own id",
            )
            continue
        seen[case.name] = doc.line(("evals", i))
        cases.append(case)
    if not evals:
        rep.warn(("evals",), "evals.json has no evals: nothing to run")
    rep.raise_if_errors()
    return cases, rep.warnings()


_NAME_LINE = re.compile(r"^name:\s*['\"]?(.*?)['\"]?\s*$", re.M)


def _skill_name(rep: Report, named: Any, skill_dir: Path) -> None:
    """skill-creator's `skill_name` is the name in the skill's front matter: evals.json of
    another skill is said, since these evals then grade a skill they were not written for."""
    if named is None:
        return
    try:
        head = (skill_dir / "SKILL.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    parts = head.split("---", 2)
    found = _NAME_LINE.search(parts[1]) if head.startswith("---") and len(parts) > 2 else None
    if found and str(named) != found.group(1):
        rep.warn(
            ("skill_name",),
            f"`skill_name` {named!r} is not this skill's name {found.group(1)!r}: these evals "
            "were written for another skill; they grade this one",
        )


def _case(rep: Report, at: KeyPath, item: Any, path: Path, skill_dir: Path) -> Case | None:
    if not isinstance(item, dict):
        rep.error(at, f"an eval is a mapping {{id, prompt, expectations}}, got {type_name(item)}")
        return None
    ident = item.get("id", at[-1])
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or not str(ident).strip():
        rep.error((*at, "id"), f"`id` must be an integer or a string, got {type_name(ident)}")
        return None
    name = "eval-" + _SAFE.sub("-", str(ident).strip()).strip("-")
    if "id" not in item:
        rep.note(at, f"eval has no `id`; it runs as {name!r} (its place in the list)")
    prompt = item.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        rep.error((*at, "prompt"), "an eval needs `prompt`: the task the agent is given")
        return None
    checks = _expectations(rep, at, item)
    if not checks and isinstance(item.get("expected_output"), str) and item["expected_output"]:
        checks = [Check("expect", item["expected_output"], rep.doc.line((*at, "expected_output")))]
        rep.note(
            (*at, "expected_output"),
            "no expectations: `expected_output` is graded as the one expectation",
            key=True,
        )
    elif "expected_output" in item:
        rep.note(
            (*at, "expected_output"),
            "`expected_output` is a description for people; the expectations decide",
            key=True,
        )
    negative = item.get("category") == "non-trigger"
    if negative:
        rep.note(
            (*at, "category"),
            "`non-trigger`: a task the skill is not for (expect_activation: false); the "
            "candidate loading the skill loses the row",
            key=True,
        )
    elif "category" in item:
        rep.note((*at, "category"), f"`category` {item['category']!r} is informational", key=True)
    files = _files(rep, at, item.get("files"), skill_dir) if "files" in item else {}
    known = {"id", "prompt", "expected_output", "files", "category", *_LISTS}
    for key in item:
        if key in known:
            continue
        why = "informational" if key in _INFORMATIONAL else "not a field skillbench knows"
        rep.note((*at, key), f"`{key}` is {why}; not used", key=True)
    if not checks and not negative:
        rep.warn(at, f"eval {ident!r} has no expectations: every row will be a tie")
    return Case(
        name=name,
        path=str(path),
        task=prompt,
        checks=tuple(checks),
        files=files,
        expect_activation=not negative,
    )


def _expectations(rep: Report, at: KeyPath, item: dict[str, Any]) -> list[Check]:
    present = [k for k in _LISTS if k in item]
    if len(present) > 1:
        rep.error((*at, present[1]), f"give one of {', '.join(present)}, not both", key=True)
        return []
    if not present:
        return []
    field = present[0]
    value = item[field]
    if not isinstance(value, list):
        rep.error((*at, field), f"`{field}` must be a list, got {type_name(value)}")
        return []
    checks: list[Check] = []
    for j, entry in enumerate(value):
        where = (*at, field, j)
        text = _expectation_text(entry)
        if text is None:
            rep.error(
                where,
                f"`{field}` item {j + 1} must be a string, {{name, description}} or {{text}}, "
                f"got {type_name(entry)}",
            )
            continue
        checks.append(Check("expect", text, rep.doc.line(where)))
    if checks:
        rep.note(
            (*at, field),
            f"{len(checks)} expectation(s) become `expect:` checks, graded by the model grader; "
            "each is a row of this eval, which counts one vote",
            key=True,
        )
    return checks


def _expectation_text(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry.strip() or None
    if isinstance(entry, dict):
        if isinstance(entry.get("text"), str) and entry["text"].strip():
            return entry["text"].strip()
        desc, name = entry.get("description"), entry.get("name")
        if isinstance(desc, str) and desc.strip():
            return f"{name}: {desc.strip()}" if isinstance(name, str) and name else desc.strip()
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def _files(rep: Report, at: KeyPath, value: Any, skill_dir: Path) -> dict[str, str]:
    """`files`: paths relative to the skill root, staged in the workspace at the same path."""
    where = (*at, "files")
    if not isinstance(value, list):
        rep.error(where, f"`files` must be a list of paths, got {type_name(value)}")
        return {}
    root = skill_dir.resolve()
    out: dict[str, str] = {}
    for j, rel in enumerate(value):
        spot = (*where, j)
        if isinstance(rel, dict) and isinstance(rel.get("path"), str):  # {path, purpose}
            rel = rel["path"]
        if not isinstance(rel, str) or not rel.strip():
            rep.error(spot, f"`files` item {j + 1} must be a path, got {type_name(rel)}")
            continue
        norm = rel.replace("\\", "/")
        while norm.startswith("./"):
            norm = norm[2:]
        target = (root / norm).resolve()  # resolved: a link out of the skill is refused too
        reason = bad_file_path(norm)
        if reason:
            rep.error(spot, f"`files` path {rel!r} {reason}")
            continue
        if not target.is_relative_to(root):
            rep.error(spot, f"`files` path {rel!r} leaves the skill folder; give a path inside it")
            continue
        if not target.exists():
            rep.warn(
                spot,
                f"`files` path {rel!r} does not exist (looked for {target}); the eval runs "
                "without it",
            )
            continue
        members = [target] if target.is_file() else sorted(target.rglob("*"))[:_MAX_FILES]
        skipped = []
        for member in members:
            if not member.is_file() or not member.resolve().is_relative_to(root):
                continue
            try:
                out[member.relative_to(root).as_posix()] = read_text(member)
            except SpecError:  # binary or too large: the workspace takes text files only
                skipped.append(member.relative_to(root).as_posix())
        if skipped:
            rep.warn(
                spot,
                f"`files` {', '.join(skipped[:3])}{' ...' if len(skipped) > 3 else ''}: not "
                "small text files, not staged (the agent will not find them)",
            )
        if not target.is_relative_to(root / "evals"):
            rep.warn(
                spot,
                f"`files` path {rel!r} is part of the skill (outside evals/): staged into every "
                "arm's workspace, it shows the baseline part of the skill (contamination); move "
                "the input under evals/files/",
            )
    if out:
        rep.note(where, "files are staged in the workspace at the same relative path", key=True)
    return out
