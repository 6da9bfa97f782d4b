#!/usr/bin/env python3
"""Print `file:identifier` for every hunk of the uncommitted diff (against HEAD).

The identifier is the nearest `def`/`class` above the first changed line of the hunk: in the
hunk's leading context, else the one git names in the hunk header
(`@@ -12,7 +12,7 @@ def apply_discount(...)`), else `<module>`. Usage: changed_identifiers.py [REPO]
"""

import re
import subprocess
import sys

HUNK = re.compile(r"^@@ [^@]+ @@ ?(.*)$")
DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def main() -> int:
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    diff = subprocess.run(
        ["git", "-C", repo, "diff", "HEAD", "--unified=3", "--no-color"],
        capture_output=True,
        text=True,
    )
    if diff.returncode != 0:
        print(diff.stderr.strip(), file=sys.stderr)
        return 2
    current_file, seen = None, []
    lines = diff.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("+++ "):
            current_file = line[6:] if line.startswith("+++ b/") else None
        match = HUNK.match(line)
        if match and current_file:
            # The nearest def/class above the first changed line: inside the hunk's context,
            # else the one git names in the hunk header.
            header = DEF.match(match.group(1))
            name = header.group(1) if header else None
            for body in lines[i + 1 :]:
                if body.startswith(("@@", "diff --git")) or body[:1] in ("+", "-"):
                    break
                inner = DEF.match(body[1:])
                if inner:
                    name = inner.group(1)
            item = f"{current_file}:{name or '<module>'}"
            if item not in seen:
                seen.append(item)
    for item in seen:
        print(item)
    if not seen:
        print("no uncommitted changes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
