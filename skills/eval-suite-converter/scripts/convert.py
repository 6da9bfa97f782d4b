#!/usr/bin/env python3
"""Convert a task dataset (task.toml, instruction.md, environment/, tests/, solution/ per
task) into a container-task eval suite. Never overwrites an existing case.

Usage: convert.py DATASET_DIR SUITE_DIR
"""

import re
import shutil
import sys
import tomllib
from pathlib import Path

WRAPPER = """#!/usr/bin/env bash
# Wraps the dataset's verifier (tests/verify.sh, unchanged) in the suite's exit-code contract:
# 0 solved, 1 not solved, 2 the verifier could not run.
here="$(cd "$(dirname "$0")" && pwd)"
[ -f "$here/verify.sh" ] || exit 2
command -v bash >/dev/null || exit 2
bash "$here/verify.sh"
status=$?
[ "$status" -eq 0 ] && exit 0
[ "$status" -eq 126 ] || [ "$status" -eq 127 ] && exit 2
exit 1
"""


def convert_task(src: Path, dest: Path) -> str:
    meta = tomllib.loads((src / "task.toml").read_text())
    task_id = re.sub(r"[^a-z0-9-]+", "-", src.name.lower()).strip("-")
    case = dest / "cases" / task_id
    if case.exists():
        return f"{task_id}: exists, left untouched"
    (case / "tests").mkdir(parents=True)
    title = meta.get("description") or meta.get("name") or task_id
    timeout = int(meta.get("verifier", {}).get("timeout_sec", 600))
    (case / "case.toml").write_text(
        f'id = "{task_id}"\ntitle = {title!r}\n'.replace("'", '"')
        + f'difficulty = "{meta.get("difficulty", "medium")}"\ntimeout_seconds = {timeout}\n'
    )
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
        f'name = "{dest.resolve().name}"\ndescription = "converted from {src.name}"\n'
        "cases = [" + ", ".join(f'"{i}"' for i in ids) + "]\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
