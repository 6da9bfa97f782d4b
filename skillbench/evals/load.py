"""Loaders for a skill's eval assets, with every problem reported as `path:line`.

Each loader returns the typed object and its warnings, or raises `SpecError` holding all
the errors (and warnings) it found, so one run of `skillbench check` shows everything.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from pathlib import Path
from typing import Any

import msgspec

from skillbench.evals.model import (
    BUCKETS,
    CHECK_KINDS,
    MAX_TIMEOUT_MINUTES,
    PATH_KINDS,
    REGEX_KINDS,
    Case,
    Check,
    EvalAssets,
    SubCase,
    Suite,
    Triggers,
)
from skillbench.evals.problems import Problem, SpecError, errors_in
from skillbench.evals.yamlsrc import Doc, KeyPath, load_yaml_file

SESSION_FIELDS = (
    "task",
    "checks",
    "judge",
    "files",
    "fixture",
    "setup",
    "bucket",
    "requires",
    "timeout_minutes",
    "max_turns",
    "oracle",
    "image",
    "containerfile",
    "workdir",
)
# Where a workspace may not go: the sandbox's own mounts and the system's folders.
_RESERVED = (
    "/proc",
    "/sys",
    "/dev",
    "/tmp",
    "/home",
    "/skills",
    "/case",
    "/logs",
    "/run",
    "/opt/skillbench",
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/var",
)
CASE_FIELDS = (*SESSION_FIELDS, "expect_activation")
SUITE_FIELDS = (*SESSION_FIELDS, "cases")
SUBCASE_FIELDS = ("name", "checks", "distractor")
TRIGGER_FIELDS = ("should_trigger", "should_not_trigger")

_REQUIRES = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._+-]*|python3:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
_SUBCASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Words that leak how a case is scored into the prompt the agent sees.
_EVAL_INTERNALS = re.compile(r"evals/|\bchecks\b|\bgrader\b|\brubric\b|triggers\.ya?ml", re.I)

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    list: "a list",
    dict: "a mapping",
    bool: "a boolean",
    float: "a number",
    type(None): "empty",
}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Report:
    """Collects problems against one document."""

    def __init__(self, doc: Doc):
        self.doc = doc
        self.problems: list[Problem] = []

    def error(self, at: KeyPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(at, message, key=key))

    def warn(self, at: KeyPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(at, message, severity="warning", key=key))

    def expect(self, at: KeyPath, value: Any, want: type, field: str) -> bool:
        # bool is an int subclass in Python; YAML `yes` must not pass as a number.
        if isinstance(value, want) and not (want is int and isinstance(value, bool)):
            return True
        self.error(at, f"`{field}` must be {_TYPE_NAMES[want]}, got {_type_name(value)}")
        return False

    def string_list(self, at: KeyPath, value: Any, field: str) -> list[str] | None:
        if not self.expect(at, value, list, field):
            return None
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.error(
                    (*at, i), f"`{field}` item {i + 1} must be a string, got {_type_name(item)}"
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
        return [p for p in self.problems if p.severity == "warning"]


def _root_mapping(doc: Doc, what: str, example: str) -> dict[str, Any]:
    if isinstance(doc.value, dict):
        return doc.value
    got = "nothing (the file is empty)" if doc.value is None else _type_name(doc.value)
    raise SpecError([doc.problem((), f"{what} must be a mapping of fields ({example}), got {got}")])


# --- checks -----------------------------------------------------------------------------


def parse_checks(
    rep: _Report, at: KeyPath, value: Any, case_file: Path | None = None
) -> tuple[Check, ...]:
    """Read a `checks` list; unknown kinds and bad regexes are warnings, shape errors errors.
    A script a check runs is resolved against `case_file`'s folder and must be in evals/."""
    if not rep.expect(at, value, list, "checks"):
        return ()
    out: list[Check] = []
    for i, item in enumerate(value):
        where = (*at, i)
        line = rep.doc.line(where)
        if isinstance(item, str):
            check = Check(item, None, line)
        elif isinstance(item, dict) and len(item) == 1 and "reward" in item:
            found = _reward(rep, where, item["reward"], line, case_file)
            if found is None:
                continue
            check = found
        elif isinstance(item, dict) and len(item) == 1:
            kind, arg = next(iter(item.items()))
            if not isinstance(arg, str):
                rep.error(where, f"check `{kind}` takes a string argument, got {_type_name(arg)}")
                continue
            check = Check(str(kind), arg, line)
        else:
            rep.error(
                where,
                "a check is a single-key map `{kind: argument}` "
                f"(e.g. `file_exists: out.txt`), got {_type_name(item)}"
                + (f" with {len(item)} keys" if isinstance(item, dict) else ""),
            )
            continue
        if check.kind == "verifier" and check.arg:
            check = msgspec.structs.replace(
                check, script=_script(rep, where, check.arg, case_file, "verifier")
            )
        _lint_check(rep, where, check)
        out.append(check)
    return tuple(out)


def _script(
    rep: _Report, at: KeyPath, value: str, case_file: Path | None, field: str
) -> str | None:
    """A script's path under evals/ (relative to the case file's folder), or None (reported)."""
    if case_file is None:
        return value
    evals = next((p for p in case_file.resolve().parents if p.name == "evals"), None)
    target = (case_file.parent / value).resolve()
    if evals is None or not target.is_relative_to(evals):
        rep.error(
            at,
            f"`{field}` script {value!r} is outside the skill's evals/ folder; "
            "keep it with the case (the checker sees only evals/)",
        )
        return None
    if not target.is_file():
        rep.error(
            at,
            f"`{field}` script {value!r} does not exist (looked for {target}); "
            "scripts are relative to the case file",
        )
        return None
    return str(target.relative_to(evals))


def _reward(
    rep: _Report, at: KeyPath, value: Any, line: int, case_file: Path | None
) -> Check | None:
    """`reward: FILE` or `reward: {file: FILE, min: N, run: SCRIPT}`."""
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        rep.error(
            at, f"`reward` is a file or a mapping {{file, min, run}}, got {_type_name(value)}"
        )
        return None
    unknown = sorted(set(value) - {"file", "min", "run"})
    if unknown:
        rep.error(
            at, f"`reward` has unknown field(s) {', '.join(unknown)}; it takes file, min and run"
        )
        return None
    file, least, run = value.get("file"), value.get("min", 1), value.get("run")
    if not isinstance(file, str) or not file.strip():
        rep.error(
            at,
            "`reward` needs `file`: the reward file the verifier writes "
            "(e.g. /logs/verifier/reward.txt)",
        )
        return None
    if isinstance(least, bool) or not isinstance(least, int | float):
        rep.error(at, f"`reward` `min` must be a number, got {_type_name(least)}")
        return None
    script = None
    if run is not None:
        if not isinstance(run, str):
            rep.error(at, f"`reward` `run` must be a script path, got {_type_name(run)}")
            return None
        script = _script(rep, at, run, case_file, "reward run")
        if script is None:
            return None
    return Check("reward", file, line, script=script, min=float(least))


def _lint_check(rep: _Report, at: KeyPath, check: Check) -> None:
    if check.kind not in CHECK_KINDS:
        close = difflib.get_close_matches(check.kind, list(CHECK_KINDS), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        rep.warn(at, f"unknown check kind `{check.kind}`: it will fail at run time{hint}")
        return
    if check.arg is None:
        rep.error(at, f"check `{check.kind}` needs an argument: `{check.kind}: ...`")
        return
    arg = check.arg
    if check.kind in REGEX_KINDS:
        try:
            re.compile(arg)
        except re.error as exc:
            rep.warn(at, f"invalid regex for `{check.kind}`: {exc}; it will fail at run time")
    if check.kind in PATH_KINDS:
        reason = path_escape(arg)
        if reason:
            always = "fail" if check.kind == "file_exists" else "fail (it cannot pass)"
            rep.warn(at, f"`{check.kind}` path {arg!r} {reason}; the check will always {always}")
    if check.kind == "transcript_mentions" and not arg.strip():
        rep.warn(at, "`transcript_mentions` of empty text always passes; it cannot fail")
    if check.kind == "transcript_omits" and not arg.strip():
        rep.warn(at, "`transcript_omits` of empty text always fails; it cannot pass")
    if check.kind in PATH_KINDS and posixpath.normpath(arg) == "." and not path_escape(arg):
        rep.warn(at, f"`{check.kind}` of the workspace itself does not depend on the agent")
    if check.kind in ("command_succeeds", "grader") and not arg.strip():
        rep.error(at, f"`{check.kind}` needs a command")


def path_escape(path: str) -> str | None:
    """Why a workspace-relative path is not one (absolute, `..`), or None when it is fine."""
    if path.startswith("/"):
        return "is absolute; check paths are relative to the workspace"
    if not path.strip():
        return "is empty"
    if ".." in path.replace("\\", "/").split("/"):
        return "contains `..` and may leave the workspace"
    return None


# --- cases and the suite ----------------------------------------------------------------


def _session_fields(
    rep: _Report, data: dict[str, Any], case_file: Path, skill_dir: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "task" not in data:
        rep.error((), "missing required field `task` (the prompt the agent is given)")
    elif rep.expect(("task",), data["task"], str, "task"):
        if not data["task"].strip():
            rep.error(("task",), "`task` is empty")
        else:
            out["task"] = data["task"]
            hit = _EVAL_INTERNALS.search(data["task"])
            if hit:
                rep.warn(
                    ("task",),
                    f"task mentions {hit.group(0)!r}: the agent never sees the "
                    "evals, so do not describe how it is scored",
                )
    if "checks" in data:
        out["checks"] = parse_checks(rep, ("checks",), data["checks"], case_file)
    for field in ("judge", "setup"):
        if field in data and rep.expect((field,), data[field], str, field):
            if data[field].strip():
                out[field] = data[field]
            else:
                rep.error((field,), f"`{field}` is empty; give it text or remove the line")
    if "files" in data:
        out["files"] = _files(rep, data["files"])
    if "fixture" in data and rep.expect(("fixture",), data["fixture"], str, "fixture"):
        out["fixture"] = _fixture(rep, data["fixture"], case_file, skill_dir)
    if "oracle" in data and rep.expect(("oracle",), data["oracle"], str, "oracle"):
        out["oracle"] = _script(rep, ("oracle",), data["oracle"], case_file, "oracle")
    if "workdir" in data and rep.expect(("workdir",), data["workdir"], str, "workdir"):
        problem = workdir_problem(data["workdir"])
        if problem:
            rep.error(("workdir",), problem)
        else:
            out["workdir"] = data["workdir"]
    if "image" in data and "containerfile" in data:
        rep.error(("containerfile",), "give `image` or `containerfile`, not both")
    elif "image" in data and rep.expect(("image",), data["image"], str, "image"):
        if data["image"].strip():
            out["image"] = data["image"].strip()
        else:
            rep.error(("image",), "`image` is empty; name a local image or remove the line")
    elif "containerfile" in data and rep.expect(
        ("containerfile",), data["containerfile"], str, "containerfile"
    ):
        target = (case_file.parent / data["containerfile"]).resolve()
        if not target.is_file():
            rep.error(
                ("containerfile",),
                f"containerfile {data['containerfile']!r} does not "
                f"exist (looked for {target}); it is relative to the "
                "case file",
            )
        elif not target.is_relative_to(skill_dir.resolve()):
            rep.error(
                ("containerfile",),
                f"containerfile {data['containerfile']!r} is outside the skill folder",
            )
        else:
            out["containerfile"] = str(target)
    if "bucket" in data:
        bucket = data["bucket"]
        if bucket in BUCKETS:
            out["bucket"] = bucket
        else:
            rep.error(("bucket",), f"`bucket` must be one of {', '.join(BUCKETS)}, got {bucket!r}")
    if "requires" in data:
        items = rep.string_list(("requires",), data["requires"], "requires")
        for i, item in enumerate(items or ()):
            if not _REQUIRES.match(item):
                rep.error(
                    ("requires", i),
                    f"`requires` entry {item!r} is neither a program name nor `python3:<module>`",
                )
        if items is not None:
            out["requires"] = tuple(items)
    if "timeout_minutes" in data:
        value = data["timeout_minutes"]
        if rep.expect(("timeout_minutes",), value, int, "timeout_minutes"):
            if not 1 <= value <= MAX_TIMEOUT_MINUTES:
                rep.error(
                    ("timeout_minutes",),
                    f"`timeout_minutes` must be between 1 and {MAX_TIMEOUT_MINUTES}, got {value}",
                )
            else:
                out["timeout_minutes"] = value
    if "max_turns" in data:
        value = data["max_turns"]
        if rep.expect(("max_turns",), value, int, "max_turns"):
            if value < 1:
                rep.error(("max_turns",), f"`max_turns` must be at least 1, got {value}")
            else:
                out["max_turns"] = value
    return out


def _files(rep: _Report, value: Any) -> dict[str, str]:
    if not rep.expect(("files",), value, dict, "files"):
        return {}
    out: dict[str, str] = {}
    for path, content in value.items():
        at = ("files", path)
        reason = _bad_file_path(str(path))
        if reason:
            rep.error(at, f"`files` path {path!r} {reason}", key=True)
        elif not isinstance(content, str):
            rep.error(at, f"`files` entry {path!r} must be text, got {_type_name(content)}")
        else:
            out[str(path)] = content
    return out


def workdir_problem(value: str) -> str | None:
    """Why `value` cannot be a case's workdir, or None when it can."""
    if not value.startswith("/") or posixpath.normpath(value) != value or value == "/":
        return f"`workdir` {value!r} must be an absolute folder such as /app (not /, no "
        "trailing slash or ..)"
    if any(value == r or value.startswith(r + "/") for r in _RESERVED):
        return f"`workdir` {value!r} is a folder the sandbox or the system needs; use your own"
    return None


def _bad_file_path(path: str) -> str | None:
    norm = path.replace("\\", "/")
    if not norm.strip():
        return "is empty"
    if norm.startswith("/"):
        return "is absolute; give a path relative to the workspace"
    if ".." in norm.split("/"):
        return "contains `..`"
    if norm.split("/")[0].startswith(".claude"):
        return "starts with `.claude`, which is reserved for the agent's own settings"
    if norm.endswith("/"):
        return "names a folder; give a file path"
    return None


def _fixture(rep: _Report, value: str, case_file: Path, skill_dir: Path) -> str | None:
    target = (case_file.parent / value).resolve()
    if not target.is_dir():
        rep.error(
            ("fixture",),
            f"fixture folder {value!r} does not exist "
            f"(looked for {target}); fixtures are relative to the case file",
        )
        return None
    if not target.is_relative_to(skill_dir.resolve()):
        rep.error(("fixture",), f"fixture {value!r} is outside the skill folder")
        return None
    return str(target)


def load_case(path: Path, skill_dir: Path) -> tuple[Case, list[Problem]]:
    """Load one case file; the case name is the file stem."""
    doc = load_yaml_file(path)
    data = _root_mapping(doc, "a case", "task, checks, ...")
    rep = _Report(doc)
    rep.fields((), data, CASE_FIELDS, "a case")
    fields = _session_fields(rep, data, path, skill_dir)
    if "expect_activation" in data:
        value = data["expect_activation"]
        if rep.expect(("expect_activation",), value, bool, "expect_activation"):
            fields["expect_activation"] = value
    rep.raise_if_errors()
    case = Case(name=path.stem, path=str(path), **fields)
    name = skill_dir.resolve().name
    if not case.expect_activation and re.search(
        rf"(?<![\w-]){re.escape(name)}(?![\w-])", case.task, re.I
    ):
        rep.warn(
            ("task",),
            f"the task names the skill {name!r} but the case says "
            "`expect_activation: false`: loading it is asked for, yet scored as a loss",
        )
    if not case.checks and case.judge is None and case.expect_activation:
        # (with expect_activation: false, loading the skill decides the row on its own)
        rep.warn((), "case has no checks and no judge rubric: every row will be a tie")
    return case, rep.warnings()


def load_suite(path: Path, skill_dir: Path) -> tuple[Suite, list[Problem]]:
    """Load `evals/suite.yaml`: session fields plus `cases`, a list of {name, checks}."""
    doc = load_yaml_file(path)
    data = _root_mapping(doc, "a suite", "task, cases, ...")
    rep = _Report(doc)
    if "expect_activation" in data:
        rep.error(
            ("expect_activation",),
            "`expect_activation` is a field of a case, not of the suite (its sub-cases share "
            "one session); write a case in evals/cases/ for a task the skill is not for",
            key=True,
        )
    rep.fields(
        (), {k: v for k, v in data.items() if k != "expect_activation"}, SUITE_FIELDS, "the suite"
    )
    fields = _session_fields(rep, data, path, skill_dir)
    if "judge" in data:
        rep.warn(("judge",), "a suite is never judged; `judge` is ignored", key=True)
        fields.pop("judge", None)
    subcases: list[SubCase] = []
    if "cases" not in data:
        rep.error((), "a suite needs `cases`: a list of {name, checks}")
    elif rep.expect(("cases",), data["cases"], list, "cases"):
        if not data["cases"]:
            rep.error(("cases",), "`cases` is empty; a suite needs at least one sub-case")
        seen: dict[str, int] = {}
        for i, item in enumerate(data["cases"]):
            sub = _subcase(rep, ("cases", i), item, path)
            if sub is None:
                continue
            if sub.name in seen:
                rep.error(
                    ("cases", i, "name"),
                    f"duplicate sub-case name {sub.name!r} (first on line {seen[sub.name]})",
                )
            else:
                seen[sub.name] = sub.line
                subcases.append(sub)
    rep.raise_if_errors()
    suite = Suite(name="suite", path=str(path), cases=tuple(subcases), **fields)
    return suite, rep.warnings()


def _subcase(rep: _Report, at: KeyPath, item: Any, path: Path) -> SubCase | None:
    if not isinstance(item, dict):
        rep.error(at, f"a suite sub-case is a mapping {{name, checks}}, got {_type_name(item)}")
        return None
    rep.fields(at, item, SUBCASE_FIELDS, "a sub-case")
    name = item.get("name")
    if name is None:
        rep.error(at, "sub-case is missing `name`")
        return None
    if not rep.expect((*at, "name"), name, str, "name"):
        return None
    if not _SUBCASE_NAME.match(name):
        rep.error(
            (*at, "name"),
            f"sub-case name {name!r} must be letters, digits, `.`, `_` or "
            "`-`, starting with a letter or digit",
        )
        return None
    checks = parse_checks(rep, (*at, "checks"), item["checks"], path) if "checks" in item else ()
    if not checks:
        rep.warn(at, f"sub-case {name!r} has no checks: it passes in every arm")
    distractor = item.get("distractor", False)
    if not rep.expect((*at, "distractor"), distractor, bool, "distractor"):
        return None
    return SubCase(name, checks, rep.doc.line(at), distractor)


# --- triggers ---------------------------------------------------------------------------


def load_triggers(path: Path, skill_name: str | None = None) -> tuple[Triggers, list[Problem]]:
    """Load `evals/triggers.yaml`: `should_trigger` and `should_not_trigger` prompt lists."""
    doc = load_yaml_file(path)
    data = _root_mapping(doc, "a triggers file", "should_trigger, should_not_trigger")
    rep = _Report(doc)
    rep.fields((), data, TRIGGER_FIELDS, "a triggers file")
    lists: dict[str, tuple[str, ...]] = {}
    for field in TRIGGER_FIELDS:
        if field in data:
            got = rep.string_list((field,), data[field], field)
            if got is not None:
                lists[field] = tuple(got)
    positives = lists.get("should_trigger", ())
    negatives = lists.get("should_not_trigger", ())
    if not errors_in(rep.problems) and not positives and not negatives:
        rep.error(
            (), "a triggers file needs prompts in `should_trigger` and/or `should_not_trigger`"
        )
    for field, items in lists.items():
        seen: set[str] = set()
        for i, prompt in enumerate(items):
            if prompt in seen:
                rep.warn((field, i), f"duplicate prompt in `{field}`: {prompt!r}")
            seen.add(prompt)
    for i, prompt in enumerate(negatives):
        if prompt in positives:
            rep.error(("should_not_trigger", i), f"prompt {prompt!r} is in both lists")
        elif skill_name and re.search(rf"(?<![\w-]){re.escape(skill_name)}(?![\w-])", prompt, re.I):
            rep.warn(
                ("should_not_trigger", i),
                f"should-not-trigger prompt names the skill {skill_name!r}; it tests nothing",
            )
    rep.raise_if_errors()
    return Triggers(str(path), positives, negatives), rep.warnings()


# --- discovery --------------------------------------------------------------------------


def case_files(skill_dir: Path) -> list[Path]:
    """`evals/cases/*.yaml|*.yml`, sorted by file name (design §1)."""
    folder = skill_dir / "evals" / "cases"
    if not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()),
        key=lambda p: p.name,
    )


def load_assets(skill_dir: Path, skill_name: str | None = None) -> EvalAssets:
    """Discover and load all eval assets of a skill, collecting every problem."""
    problems: list[Problem] = []
    cases: list[Case] = []
    stems: dict[str, Path] = {}
    evals = skill_dir / "evals"
    for path in case_files(skill_dir):
        if path.stem == "suite":
            problems.append(
                Problem(
                    str(path),
                    1,
                    "error",
                    "the case name `suite` is taken by "
                    "evals/suite.yaml (its rows are named suite/<name>); rename "
                    "this file",
                )
            )
            continue
        if path.stem in stems:
            problems.append(
                Problem(
                    str(path),
                    1,
                    "error",
                    f"case name {path.stem!r} is also {stems[path.stem].name}; rename one",
                )
            )
            continue
        stems[path.stem] = path
        _collect(problems, cases, load_case, path, skill_dir)
    _note_ignored(problems, evals)
    suite = None
    if (evals / "suite.yaml").exists():
        found: list[Suite] = []
        _collect(problems, found, load_suite, evals / "suite.yaml", skill_dir)
        suite = found[0] if found else None
    triggers = None
    if (evals / "triggers.yaml").exists():
        got: list[Triggers] = []
        _collect(problems, got, load_triggers, evals / "triggers.yaml", skill_name)
        triggers = got[0] if got else None
    return EvalAssets(str(skill_dir), tuple(cases), suite, triggers, tuple(problems))


def _collect(problems: list[Problem], sink: list[Any], loader: Any, *args: Any) -> None:
    try:
        value, warnings = loader(*args)
    except SpecError as exc:
        problems.extend(exc.problems)
        return
    sink.append(value)
    problems.extend(warnings)


def _note_ignored(problems: list[Problem], evals: Path) -> None:
    """Warn about files that look like assets but discovery (which is exact) skips."""
    for near, exact in (("suite.yml", "suite.yaml"), ("triggers.yml", "triggers.yaml")):
        if (evals / near).exists():
            problems.append(
                Problem(
                    str(evals / near),
                    1,
                    "warning",
                    f"ignored: the file must be named exactly {exact}",
                )
            )
    folder = evals / "cases"
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.is_file() and p.suffix not in (".yaml", ".yml"):
                problems.append(
                    Problem(str(p), 1, "warning", "ignored: case files end in .yaml or .yml")
                )
