#!/usr/bin/env python3
"""Check a converted suite against its source dataset: every task became a case, prompts
are unchanged, the original verifier is kept, and test.sh maps verdicts to 0/1/2.

Usage: check_converted.py DATASET_DIR SUITE_DIR
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    src, suite = Path(sys.argv[1]), Path(sys.argv[2])
    problems = []
    for task in sorted(p for p in src.iterdir() if (p / "task.toml").is_file()):
        case = suite / "cases" / task.name
        if not case.is_dir():
            problems.append(f"{task.name}: no case")
            continue
        if (case / "prompt.md").read_text() != (task / "instruction.md").read_text():
            problems.append(f"{task.name}: prompt.md differs from instruction.md")
        kept = [
            p
            for p in (case / "tests").iterdir()
            if p.read_text() == (task / "tests/test.sh").read_text()
        ]
        if not kept:
            problems.append(f"{task.name}: the original verifier was not kept")
        test = case / "tests" / "test.sh"
        if not os.access(test, os.X_OK):
            problems.append(f"{task.name}: tests/test.sh is not executable")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            # an unsolved task must be a plain failure (1), not an infrastructure error (2)
            done = subprocess.run([str(test.resolve())], cwd=tmp, capture_output=True, timeout=60)
            if done.returncode != 1:
                problems.append(f"{task.name}: unsolved task exits {done.returncode}, expected 1")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
