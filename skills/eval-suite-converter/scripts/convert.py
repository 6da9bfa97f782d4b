#!/usr/bin/env python3
"""Convert Harbor tasks (task.toml, instruction.md, environment/, tests/, solution/ per task)
into a Margin Eval suite. Never overwrites an existing case.

Usage: convert.py DATASET_DIR SUITE_DIR
"""

import re
import shutil
import sys
import tomllib
from pathlib import Path

# Harbor's tests read their files at /tests/ and write the verdict to a reward file; Margin
# stages tests/ at {test_cwd}/tests and reads test.sh's exit code. So test_cwd is "/" (the
# tests land at /tests, where they expect to be) and test.sh turns the reward into 0/1/2.
WRAPPER = """#!/usr/bin/env bash
# Wraps the Harbor verifier (tests/verify.sh, unchanged) in Margin's exit-code contract:
# 0 solved (reward >= 1), 1 not solved, 2 the verifier could not give a verdict.
here="$(cd "$(dirname "$0")" && pwd)"
[ -f "$here/verify.sh" ] || exit 2
rm -f /logs/verifier/reward.txt /logs/verifier/reward.json
bash "$here/verify.sh"
status=$?
[ "$status" -eq 126 ] || [ "$status" -eq 127 ] && exit 2
if [ -f /logs/verifier/reward.txt ]; then
  reward=$(cat /logs/verifier/reward.txt)
elif [ -f /logs/verifier/reward.json ]; then
  reward=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["reward"])' \\
    /logs/verifier/reward.json) || exit 2
else
  exit 2  # no reward written: no verdict
fi
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 1 else 1)' "$reward" 2>/dev/null
status=$?
[ "$status" -le 1 ] && exit "$status"
exit 2
"""


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def convert_task(src: Path, dest: Path) -> str:
    meta = tomllib.loads((src / "task.toml").read_text())
    task_id = re.sub(r"[^a-z0-9-]+", "-", src.name.lower()).strip("-")
    case = dest / "cases" / task_id
    if case.exists():
        return f"{task_id}: exists, left untouched"
    (case / "tests").mkdir(parents=True)
    instruction = (src / "instruction.md").read_text()
    first = next(
        (line.strip("# ").strip() for line in instruction.splitlines() if line.strip()), task_id
    )
    timeout = int(meta.get("verifier", {}).get("timeout_sec", 600))
    lines = [
        'kind = "test_case"',
        f'name = "{task_id}"',
        f"description = {_toml_str(first)}",
        'agent_cwd = "/work"',
        'test_cwd = "/"',
        f"test_timeout_seconds = {timeout}",
    ]
    extra = dict(meta.get("metadata", {}))
    if "agent" in meta and "timeout_sec" in meta["agent"]:
        extra["agent_timeout_sec"] = meta["agent"]["timeout_sec"]
    if extra:
        lines.append("\n[metadata]")
        for key, value in extra.items():
            lines.append(f"{key} = {_toml_str(value) if isinstance(value, str) else value}")
    (case / "case.toml").write_text("\n".join(lines) + "\n")
    shutil.copyfile(src / "instruction.md", case / "prompt.md")
    if (src / "environment").is_dir():
        shutil.copytree(src / "environment", case / "env")
    for item in (src / "tests").iterdir():
        target = case / "tests" / ("verify.sh" if item.name == "test.sh" else item.name)
        (shutil.copytree if item.is_dir() else shutil.copy)(item, target)
    (case / "tests" / "test.sh").write_text(WRAPPER)
    (case / "tests" / "test.sh").chmod(0o755)
    if (src / "solution" / "solve.sh").is_file():
        (case / "oracle").mkdir()
        shutil.copy(src / "solution" / "solve.sh", case / "oracle" / "solve.sh")
        (case / "oracle" / "solve.sh").chmod(0o755)
    return f"{task_id}: converted"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    tasks = sorted(p for p in src.iterdir() if (p / "task.toml").is_file())
    if not tasks:
        print(f"{src}: no task folders (with task.toml) found", file=sys.stderr)
        return 2
    dest.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        print(convert_task(task, dest))
    ids = sorted(p.name for p in (dest / "cases").iterdir() if p.is_dir())
    (dest / "suite.toml").write_text(
        f'kind = "test_suite"\nname = "{dest.resolve().name}"\n'
        f'description = "converted from {src.name}"\n'
        "cases = [" + ", ".join(f'"{i}"' for i in ids) + "]\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
