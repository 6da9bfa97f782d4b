"""Builders for skill folders on disk, shared by the tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (relative path → text or bytes) under `root`; return `root`."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def make_skill(
    parent: Path, name: str, files: dict[str, str | bytes] | None = None, description: str = ""
) -> Path:
    """A skill folder `parent/name` with a valid SKILL.md plus `files`."""
    folder = parent / name
    desc = description or f"Helps with {name} tasks."
    write(folder, {"SKILL.md": f"---\nname: {name}\ndescription: {desc}\n---\n# {name}\n"})
    return write(folder, files or {})
