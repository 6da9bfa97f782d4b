"""Reading one YAML document's fields strictly: every problem is kept against the line it is
on (`path:line: severity: message`), so one `skillbench check` shows all of them."""

from __future__ import annotations

import difflib
from typing import Any

from skillbench.evals.problems import Problem, SpecError, errors_in
from skillbench.evals.yamlsrc import Doc, KeyPath

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    list: "a list",
    dict: "a mapping",
    bool: "a boolean",
    float: "a number",
    type(None): "empty",
}


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class Report:
    """Collects problems against one document."""

    def __init__(self, doc: Doc):
        self.doc = doc
        self.problems: list[Problem] = []

    def error(self, at: KeyPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(at, message, key=key))

    def warn(self, at: KeyPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(at, message, severity="warning", key=key))

    def note(self, at: KeyPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(at, message, severity="note", key=key))

    def expect(self, at: KeyPath, value: Any, want: type, field: str) -> bool:
        # bool is an int subclass in Python; YAML `yes` must not pass as a number.
        if isinstance(value, want) and not (want is int and isinstance(value, bool)):
            return True
        self.error(at, f"`{field}` must be {_TYPE_NAMES[want]}, got {type_name(value)}")
        return False

    def string_list(self, at: KeyPath, value: Any, field: str) -> list[str] | None:
        if not self.expect(at, value, list, field):
            return None
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.error(
                    (*at, i), f"`{field}` item {i + 1} must be a string, got {type_name(item)}"
                )
                ok = False
            elif not item.strip():
                self.error((*at, i), f"`{field}` item {i + 1} is empty")
                ok = False
        return list(value) if ok else None

    def fields(self, at: KeyPath, data: dict[str, Any], allowed: tuple[str, ...], what: str):
        for key in data:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else f" (known: {', '.join(allowed)})"
            self.error((*at, key), f"unknown field `{key}` in {what}{hint}", key=True)

    def raise_if_errors(self) -> None:
        if errors_in(self.problems):
            raise SpecError(self.problems)

    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]


def root_mapping(doc: Doc, what: str, example: str) -> dict[str, Any]:
    if isinstance(doc.value, dict):
        return doc.value
    got = "nothing (the file is empty)" if doc.value is None else type_name(doc.value)
    raise SpecError([doc.problem((), f"{what} must be a mapping of fields ({example}), got {got}")])
