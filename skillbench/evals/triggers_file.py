"""The triggers file (evals/triggers.yaml): prompts that should and should not load the
skill."""

from __future__ import annotations

import re
from pathlib import Path

from skillbench.evals.fields import Report, root_mapping
from skillbench.evals.model import Triggers
from skillbench.evals.problems import Problem, errors_in
from skillbench.evals.yamlsrc import load_yaml_file

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
