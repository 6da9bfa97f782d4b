#!/usr/bin/env python3
"""Validate a Margin Eval suite's layout. Exit 0 valid, 1 problems, 2 unusable.

Usage: validate_suite.py SUITE_DIR
"""

import os
import sys
import tomllib
from pathlib import Path

REQUIRED = ("case.toml", "prompt.md", "tests/test.sh")
CASE_KEYS = {"kind", "name", "description", "agent_cwd", "test_cwd", "test_timeout_seconds"}


def problems_of(suite: Path) -> list[str]:
    out = []
    try:
        manifest = tomllib.loads((suite / "suite.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"suite.toml: {exc}"]
    if manifest.get("kind") != "test_suite":
        out.append('suite.toml: kind must be "test_suite"')
    listed = manifest.get("cases")
    if not isinstance(listed, list) or not all(isinstance(c, str) for c in listed):
        return ["suite.toml: `cases` must be a list of case ids"]
    folders = (
        sorted(p.name for p in (suite / "cases").iterdir() if p.is_dir())
        if (suite / "cases").is_dir()
        else []
    )
    for missing in sorted(set(listed) - set(folders)):
        out.append(f"suite.toml lists {missing!r} but cases/{missing} does not exist")
    for extra in sorted(set(folders) - set(listed)):
        out.append(f"cases/{extra} is not listed in suite.toml")
    for case in sorted(set(listed) & set(folders)):
        root = suite / "cases" / case
        for rel in REQUIRED:
            if not (root / rel).is_file():
                out.append(f"cases/{case}/{rel} is missing")
        test = root / "tests" / "test.sh"
        if test.is_file():
            if not os.access(test, os.X_OK):
                out.append(f"cases/{case}/tests/test.sh is not executable")
            if not test.read_text().startswith("#!"):
                out.append(f"cases/{case}/tests/test.sh has no shebang line")
        try:
            meta = tomllib.loads((root / "case.toml").read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            out.append(f"cases/{case}/case.toml: {exc}")
            continue
        if meta.get("kind") != "test_case":
            out.append(f'cases/{case}/case.toml: kind must be "test_case"')
        if meta.get("name") != case:
            out.append(f"cases/{case}/case.toml: name must be {case!r} (the folder name)")
        if not (root / "prompt.md").is_file() or not (root / "prompt.md").read_text().strip():
            out.append(f"cases/{case}/prompt.md is empty")
        has_image, has_env = "image" in meta, (root / "env" / "Dockerfile").is_file()
        if has_image == has_env:
            out.append(f"cases/{case}: give exactly one of `image` in case.toml or env/Dockerfile")
        for key in sorted(CASE_KEYS - set(meta)):
            out.append(f"cases/{case}/case.toml: missing {key}")
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    suite = Path(sys.argv[1])
    if not suite.is_dir():
        print(f"{suite}: not a folder", file=sys.stderr)
        return 2
    found = problems_of(suite)
    for problem in found:
        print(problem)
    print("suite is valid" if not found else f"{len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
