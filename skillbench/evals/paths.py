"""The paths a check or a case names: workspace-relative paths and the eval's own scripts
(which must live in the skill's evals/, the only folder the checker sees)."""

from __future__ import annotations

from pathlib import Path


def path_escape(path: str) -> str | None:
    """Why a workspace-relative path is not one (absolute, `..`), or None when it is fine."""
    if path.startswith("/"):
        return "is absolute; check paths are relative to the workspace"
    if not path.strip():
        return "is empty"
    if ".." in path.replace("\\", "/").split("/"):
        return "contains `..` and may leave the workspace"
    return None


def case_script(value: str, case_file: Path | None, field: str) -> str:
    """A script's path under evals/ (relative to the case file's folder); ValueError saying
    why when it is outside evals/ or missing. No case file (a check built in code): as given."""
    if case_file is None:
        return value
    evals = next((p for p in case_file.resolve().parents if p.name == "evals"), None)
    target = (case_file.parent / value).resolve()
    if evals is None or not target.is_relative_to(evals):
        raise ValueError(
            f"`{field}` script {value!r} is outside the skill's evals/ folder; "
            "keep it with the case (the checker sees only evals/)"
        )
    if not target.is_file():
        raise ValueError(
            f"`{field}` script {value!r} does not exist (looked for {target}); "
            "scripts are relative to the case file"
        )
    return str(target.relative_to(evals))
