#!/usr/bin/env python3
"""A dependency-free lint of a skill's evals/ (the full validation is `skillbench check`).

Checks: case files exist and each has `task:` and `checks:`; tasks do not mention how they
are scored; triggers.yaml has both lists with at least 5 prompts each; no should-not
prompt names the skill. Exit 0 clean, 1 problems, 2 not a skill.

Usage: lint_evals.py SKILL_DIR
"""

import re
import sys
from pathlib import Path

LEAKS = re.compile(r"evals/|\bchecks\b|\bgrader\b|\brubric\b|triggers\.ya?ml", re.I)


def list_items(text: str, key: str) -> list[str]:
    match = re.search(rf"^{key}:\s*\n((?:[ \t]+-.*\n?)+)", text, re.M)
    if not match:
        inline = re.search(rf"^{key}:\s*\[(.*)\]\s*$", text, re.M)
        return (
            [s.strip().strip("'\"") for s in inline.group(1).split(",") if s.strip()]
            if inline
            else []
        )
    return [
        line.strip()[1:].strip().strip("'\"")
        for line in match.group(1).splitlines()
        if line.strip()
    ]


def main() -> int:
    skill = Path(sys.argv[1]) if len(sys.argv) == 2 else None
    if skill is None or not (skill / "SKILL.md").is_file():
        print(__doc__, file=sys.stderr)
        return 2
    name = skill.resolve().name
    problems = []
    cases = sorted((skill / "evals" / "cases").glob("*.y*ml"))
    if not cases and not (skill / "evals" / "suite.yaml").is_file():
        problems.append("no execution cases (evals/cases/*.yaml) and no suite")
    for case in cases:
        text = case.read_text()
        if not re.search(r"^task:", text, re.M):
            problems.append(f"{case.name}: no task")
        if not re.search(r"^(checks|judge):", text, re.M):
            problems.append(f"{case.name}: no checks and no judge: every row would tie")
        task = re.search(r"^task:\s*\|?\s*\n?((?:.*\n)*?)(?=^\w)", text + "\nend:", re.M)
        if task and LEAKS.search(task.group(1)):
            problems.append(f"{case.name}: the task mentions how it is scored")
    triggers = skill / "evals" / "triggers.yaml"
    if not triggers.is_file():
        problems.append("no evals/triggers.yaml")
    else:
        text = triggers.read_text()
        positives, negatives = (
            list_items(text, "should_trigger"),
            list_items(text, "should_not_trigger"),
        )
        if len(positives) < 5 or len(negatives) < 5:
            problems.append(
                "triggers.yaml: want at least 5 should_trigger and 5 should_not_trigger"
            )
        for prompt in negatives:
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", prompt, re.I):
                problems.append(f"triggers.yaml: should-not prompt names the skill: {prompt!r}")
    for problem in problems:
        print(problem)
    print("evals look fine" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
