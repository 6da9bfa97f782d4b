"""The `checks:` list of a case or a suite's sub-case: each check's shape and its kind (each
kind parses and lints its own value: evals/kinds/), and the scripts a case names (which must
live in the skill's evals/)."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from skillbench.evals.fields import Report, type_name
from skillbench.evals.kinds import At, Kind, kinds
from skillbench.evals.kinds.base import string_check
from skillbench.evals.model import Check
from skillbench.evals.paths import case_script
from skillbench.evals.yamlsrc import KeyPath


def parse_checks(
    rep: Report, at: KeyPath, value: Any, case_file: Path | None = None
) -> tuple[Check, ...]:
    """Read a `checks` list; unknown kinds and bad regexes are warnings, shape errors errors.
    Each kind parses its own value (evals/kinds/); a script a check runs is resolved against
    `case_file`'s folder and must be in evals/."""
    if not rep.expect(at, value, list, "checks"):
        return ()
    out: list[Check] = []
    known = kinds()
    for i, item in enumerate(value):
        where = (*at, i)
        line = rep.doc.line(where)
        if isinstance(item, str):
            check: Check | None = Check(item, None, line)
        elif isinstance(item, dict) and len(item) == 1:
            name, arg = next(iter(item.items()))
            here = At(line, case_file, functools.partial(rep.error, where))
            kind = known.get(name)
            check = (
                kind.parse(arg, here) if kind is not None else string_check(str(name), arg, here)
            )
        else:
            rep.error(
                where,
                "a check is a single-key map `{kind: argument}` "
                f"(e.g. `file_exists: out.txt`), got {type_name(item)}"
                + (f" with {len(item)} keys" if isinstance(item, dict) else ""),
            )
            continue
        if check is None:
            continue
        _lint_check(rep, where, check, known)
        out.append(check)
    return tuple(out)


def script_path(
    rep: Report, at: KeyPath, value: str, case_file: Path | None, field: str
) -> str | None:
    """A script's path under evals/ (relative to the case file's folder), or None (reported)."""
    try:
        return case_script(value, case_file, field)
    except ValueError as exc:
        rep.error(at, str(exc))
        return None


def _lint_check(rep: Report, at: KeyPath, check: Check, known: dict[str, Kind]) -> None:
    kind = known.get(check.kind)
    if kind is None:
        close = difflib.get_close_matches(check.kind, list(known), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        rep.warn(at, f"unknown check kind `{check.kind}`: it will fail at run time{hint}")
        return
    if check.arg is None:
        rep.error(at, f"check `{check.kind}` needs an argument: `{check.kind}: ...`")
        return
    for found in kind.lint(check):
        (rep.error if found.error else rep.warn)(at, found.message)
