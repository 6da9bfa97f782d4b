#!/usr/bin/env python3
"""Create the skeleton of one case in a Margin Eval suite (never overwrites).

Usage: new_case.py SUITE_DIR CASE_ID [--title TITLE] [--difficulty easy|medium|hard]
"""

import argparse
import re
import sys
from pathlib import Path

TEST_SH = """#!/usr/bin/env bash
# Verifier: exit 0 solved, 1 not solved, 2 the verifier could not run.
set -u
command -v python3 >/dev/null || exit 2
# TODO: check the outcome, e.g.
# test "$(cat /work/answer.txt 2>/dev/null)" = "42" || exit 1
exit 1
"""
SOLVE_SH = """#!/usr/bin/env bash
# Reference solution: the verifier must pass after this runs.
set -eu
# TODO
"""
DOCKERFILE = """FROM debian:bookworm-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3 \\
 && rm -rf /var/lib/apt/lists/*
WORKDIR /work
"""


def write_new(path: Path, text: str, mode: int = 0o644) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("suite")
    parser.add_argument("case")
    parser.add_argument("--title", default="")
    parser.add_argument("--difficulty", default="medium", choices=["easy", "medium", "hard"])
    args = parser.parse_args()
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", args.case):
        print("case id: lowercase letters, digits and hyphens", file=sys.stderr)
        return 2
    suite = Path(args.suite)
    case = suite / "cases" / args.case
    title = args.title or args.case.replace("-", " ").capitalize()
    write_new(
        case / "case.toml",
        f'kind = "test_case"\nname = "{args.case}"\ndescription = "{title}"\n'
        'agent_cwd = "/work"\ntest_cwd = "/work"\ntest_timeout_seconds = 600\n'
        f'\n[metadata]\ndifficulty = "{args.difficulty}"\n',
    )
    write_new(case / "prompt.md", f"# {title}\n\nTODO: the task, as the user would ask it.\n")
    write_new(case / "env" / "Dockerfile", DOCKERFILE)
    write_new(case / "tests" / "test.sh", TEST_SH, 0o755)
    write_new(case / "oracle" / "solve.sh", SOLVE_SH, 0o755)
    manifest = suite / "suite.toml"
    if not manifest.exists():
        manifest.write_text(
            f'kind = "test_suite"\nname = "{suite.resolve().name}"\ndescription = ""\ncases = []\n'
        )
    text = manifest.read_text()
    match = re.search(r"^cases\s*=\s*\[(.*?)\]", text, re.S | re.M)
    listed = re.findall(r'"([^"]+)"', match.group(1)) if match else []
    if args.case not in listed:
        listed.append(args.case)
        body = "cases = [" + ", ".join(f'"{c}"' for c in listed) + "]"
        text = text[: match.start()] + body + text[match.end() :] if match else text + body + "\n"
        manifest.write_text(text)
    print(f"{case}: ready (edit prompt.md, tests/test.sh and env/Dockerfile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
