"""Writing a description into SKILL.md (issue 25, part 4): only the description's line changes.

The front matter's `description:` entry (its key line, and the indented lines of a value that
spans several) becomes one line; every other byte of the file is kept, line endings included.
The value is written in the entry's own quoting style when that reads back as the same text,
else double-quoted; it is read back before anything is written.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tempfile
from pathlib import Path

import yaml

from skillbench.errors import SkillbenchError
from skillbench.evals.skills import SKILL_FILE

_KEY = re.compile(r"description[ \t]*:")
# A plain YAML scalar may not start with an indicator, nor hold ": " or " #".
_PLAIN_START = set("-?:,[]{}#&*!|>'\"%@`")


class ApplyError(SkillbenchError):
    """SKILL.md's front matter cannot take the description as one line."""


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].rstrip("\r") != "---":
        raise ApplyError("SKILL.md does not start with front matter")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") == "---":
            return i
    raise ApplyError("SKILL.md's front matter is not closed")


def _span(lines: list[str], end: int) -> tuple[int, int]:
    """[first, last) lines of the description entry: the key line and its continuation
    (indented lines, and blank lines between them)."""
    first = next((i for i in range(1, end) if _KEY.match(lines[i])), None)
    if first is None:
        raise ApplyError("SKILL.md's front matter has no top-level `description:` line")
    last = first + 1
    while last < end and (lines[last][:1] in (" ", "\t") or not lines[last].strip("\r")):
        last += 1
    while last > first + 1 and not lines[last - 1].strip("\r"):  # blank lines before the next key
        last -= 1
    return first, last


def _quoted(style: str, text: str) -> str:
    if style == "'":
        return "'" + text.replace("'", "''") + "'"
    if style == '"':
        return json.dumps(text, ensure_ascii=False)  # JSON escapes are YAML double-quote escapes
    return text


def _reads_back(front: list[str], description: str) -> bool:
    try:
        doc = yaml.safe_load("\n".join(line.rstrip("\r") for line in front))
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and doc.get("description") == description


def rewrite_description(text: str, description: str) -> str:
    """`text` (a SKILL.md) with its description entry replaced by one line holding
    `description`; raises ApplyError when that cannot be done faithfully."""
    lines = text.split("\n")
    end = _front_matter_end(lines)
    first, last = _span(lines, end)
    old = lines[first]
    eol = "\r" if lines[last - 1].endswith("\r") else ""
    value = old.split(":", 1)[1].strip()
    own = value[:1] if value[:1] in ("'", '"') else ""
    plain_ok = (
        description[:1] not in _PLAIN_START
        and ": " not in description
        and " #" not in description
        and not description.endswith(":")
    )
    styles = [own] if own or plain_ok else []
    for style in [*styles, '"']:
        line = f"description: {_quoted(style, description)}{eol}"
        new = [*lines[:first], line, *lines[last:]]
        if _reads_back(new[1 : end - (last - first) + 1], description):
            return "\n".join(new)
    raise ApplyError("the description does not read back from SKILL.md as written")


def shown_path(path: Path) -> str:
    """`path` relative to the current folder when it is inside it, else as it is."""
    here = Path.cwd()
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def description_diff(skill_dir: Path, description: str) -> list[str]:
    """The unified diff that applying `description` would make to SKILL.md."""
    path = Path(shown_path(skill_dir / SKILL_FILE))
    before = path.read_text(encoding="utf-8")
    after = rewrite_description(before, description)
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            str(path),
            f"{path} (tuned)",
            n=0,
        )
    ]


def apply_description(skill_dir: Path, description: str) -> None:
    """Rewrite SKILL.md's description line in place (atomically: a crash leaves the old
    file), keeping the file's mode."""
    path = skill_dir / SKILL_FILE
    raw = path.read_bytes()
    after = rewrite_description(raw.decode("utf-8"), description).encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=skill_dir, prefix=".SKILL.md.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(after)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
