"""The triggers file (evals/triggers.yaml): prompts that should and should not load the
skill."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillbench.evals.fields import Report, root_mapping, type_name
from skillbench.evals.model import Triggers
from skillbench.evals.problems import Problem, SpecError, errors_in
from skillbench.evals.yamlsrc import KeyPath, load_yaml_file

TRIGGER_FIELDS = ("should_trigger", "should_not_trigger")


def load_triggers(path: Path, skill_name: str | None = None) -> tuple[Triggers, list[Problem]]:
    """Load `evals/triggers.yaml`: `should_trigger` and `should_not_trigger` prompt lists."""
    doc = load_yaml_file(path)
    data = root_mapping(doc, "a triggers file", "should_trigger, should_not_trigger")
    rep = Report(doc)
    rep.fields((), data, TRIGGER_FIELDS, "a triggers file")
    lists: dict[str, tuple[str, ...]] = {}
    for field in TRIGGER_FIELDS:
        if field in data:
            got = rep.string_list((field,), data[field], field)
            if got is not None:
                lists[field] = tuple(got)
    positives = lists.get("should_trigger", ())
    negatives = lists.get("should_not_trigger", ())
    if not errors_in(rep.problems) and not positives and not negatives:
        rep.error(
            (), "a triggers file needs prompts in `should_trigger` and/or `should_not_trigger`"
        )
    for field, items in lists.items():
        seen: set[str] = set()
        for i, prompt in enumerate(items):
            if prompt in seen:
                rep.warn((field, i), f"duplicate prompt in `{field}`: {prompt!r}")
            seen.add(prompt)
    for i, prompt in enumerate(negatives):
        if prompt in positives:
            rep.error(("should_not_trigger", i), f"prompt {prompt!r} is in both lists")
        elif skill_name and re.search(rf"(?<![\w-]){re.escape(skill_name)}(?![\w-])", prompt, re.I):
            rep.warn(
                ("should_not_trigger", i),
                f"should-not-trigger prompt names the skill {skill_name!r}; it tests nothing",
            )
    rep.raise_if_errors()
    return Triggers(str(path), positives, negatives), rep.warnings()


# The names trigger sets are published under (skill-creator's and its forks'), in evals/ or at
# the skill root: `[{"query" | "prompt", "should_trigger"}]`, bare or wrapped (see _WRAPPERS).
TRIGGER_JSON_NAMES = (
    "trigger-evals.json",
    "trigger-eval.json",
    "trigger-queries.json",
    "triggers.json",
    "trigger_eval.json",
    "trigger_evals.json",
    "eval_queries.json",
    "eval_set.json",
)


_WRAPPERS = ("evals", "queries")  # `{"evals": [...]}`, `{"skill_name", "queries": [...]}`


def trigger_files(skill_dir: Path) -> list[Path]:
    """Every trigger file of a skill: evals/triggers.yaml, then the JSON ones found."""
    found = [skill_dir / "evals" / "triggers.yaml"]
    for name in TRIGGER_JSON_NAMES:
        found += [skill_dir / "evals" / name, skill_dir / name]
    return [p for p in found if p.is_file()]


def load_trigger_json(path: Path, skill_name: str | None = None) -> tuple[Triggers, list[Problem]]:
    """A trigger set in JSON; raises `SpecError` with every error found."""
    doc = load_yaml_file(path)  # JSON is YAML: the reader keeps every value's line
    rep = Report(doc)
    items: Any = doc.value
    at0: KeyPath = ()
    wrapper = next(
        (k for k in _WRAPPERS if isinstance(items, dict) and isinstance(items.get(k), list)), None
    )
    if wrapper is not None:
        for key in items:
            if key != wrapper:
                rep.note((key,), f"`{key}` is not part of a trigger set; not used", key=True)
        items, at0 = items[wrapper], (wrapper,)
    if not isinstance(items, list):
        rep.error((), 'a trigger set is a list of {"query", "should_trigger"}')
        rep.raise_if_errors()
    pos: list[str] = []
    neg: list[str] = []
    for i, item in enumerate(items):
        at = (*at0, i)
        if not isinstance(item, dict):
            rep.error(at, f'a trigger item is {{"query", "should_trigger"}}, got {type_name(item)}')
            continue
        field = "query" if "query" in item else "prompt"
        text, want = item.get(field), item.get("should_trigger")
        if not isinstance(text, str) or not text.strip():
            rep.error(at, "a trigger item needs `query` (or `prompt`): the text to route")
            continue
        if not isinstance(want, bool):
            rep.error((*at, "should_trigger"), "`should_trigger` must be true or false")
            continue
        for key in item:
            if key not in (field, "should_trigger", "id"):
                rep.note((*at, key), f"`{key}` is not used in trigger measurement", key=True)
        (pos if want else neg).append(text)
    rep.raise_if_errors()
    if not pos and not neg:
        rep.error((), "the trigger set holds no prompts")
        rep.raise_if_errors()
    return Triggers(str(path), tuple(pos), tuple(neg)), rep.warnings()


def load_skill_triggers(
    skill_dir: Path, skill_name: str | None = None
) -> tuple[Triggers | None, list[Problem]]:
    """All trigger files of a skill as one set; a prompt two files label differently is an
    error naming both. Raises `SpecError` holding every problem when any file has errors."""
    problems: list[Problem] = []
    sets: list[Triggers] = []
    for path in trigger_files(skill_dir):
        loader = load_triggers if path.suffix == ".yaml" else load_trigger_json
        try:
            got, warnings = loader(path, skill_name)
        except SpecError as exc:
            problems += exc.problems
            continue
        sets.append(got)
        problems += warnings
    if errors_in(problems):
        raise SpecError(problems)
    if not sets:
        return None, problems
    if len(sets) == 1:
        return sets[0], problems
    label: dict[str, tuple[bool, str]] = {}
    pos: list[str] = []
    neg: list[str] = []
    for t in sets:
        for want, prompts in ((True, t.should_trigger), (False, t.should_not_trigger)):
            for prompt in prompts:
                if prompt in label:
                    if label[prompt][0] != want:
                        problems.append(
                            Problem(
                                t.path,
                                1,
                                "error",
                                f"prompt {prompt!r} is should_trigger={want} here but "
                                f"{label[prompt][0]} in {label[prompt][1]}; the files are one "
                                "set, so label it the same in both",
                            )
                        )
                    continue
                label[prompt] = (want, t.path)
                (pos if want else neg).append(prompt)
    if errors_in(problems):
        raise SpecError(problems)
    names = ", ".join(Path(t.path).name for t in sets)
    problems.append(Problem(sets[0].path, 1, "note", f"trigger files {names} are read as one set"))
    return Triggers(sets[0].path, tuple(pos), tuple(neg)), problems
