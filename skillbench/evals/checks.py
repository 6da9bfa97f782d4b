"""The `checks:` list of a case or a suite's sub-case: each check's shape, its kind, and the
script a `verifier` or `reward` check runs (which must live in the skill's evals/)."""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from pathlib import Path
from typing import Any

import msgspec

from skillbench.evals.fields import Report, type_name
from skillbench.evals.kinds import kind_docs, plugin_kinds
from skillbench.evals.model import PATH_KINDS, REGEX_KINDS, Check
from skillbench.evals.yamlsrc import KeyPath


def parse_checks(
    rep: Report, at: KeyPath, value: Any, case_file: Path | None = None
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
        elif isinstance(item, dict) and len(item) == 1 and isinstance(item.get("grader"), dict):
            found = _scored_grader(rep, where, item["grader"], line)
            if found is None:
                continue
            check = found
        elif isinstance(item, dict) and len(item) == 1 and isinstance(item.get("verifier"), dict):
            found = _verifier(rep, where, item["verifier"], line, case_file)
            if found is None:
                continue
            check = found
        elif isinstance(item, dict) and len(item) == 1 and "reward" in item:
            found = _reward(rep, where, item["reward"], line, case_file)
            if found is None:
                continue
            check = found
        elif isinstance(item, dict) and len(item) == 1 and next(iter(item)) in plugin_kinds():
            kind, value = next(iter(item.items()))
            try:
                check = Check(kind, plugin_kinds()[kind].parse(value), line)
            except ValueError as exc:
                rep.error(where, f"check `{kind}`: {exc}")
                continue
        elif isinstance(item, dict) and len(item) == 1:
            kind, arg = next(iter(item.items()))
            if not isinstance(arg, str):
                rep.error(where, f"check `{kind}` takes a string argument, got {type_name(arg)}")
                continue
            check = Check(str(kind), arg, line)
        else:
            rep.error(
                where,
                "a check is a single-key map `{kind: argument}` "
                f"(e.g. `file_exists: out.txt`), got {type_name(item)}"
                + (f" with {len(item)} keys" if isinstance(item, dict) else ""),
            )
            continue
        if check.kind == "verifier" and check.arg and check.script is None:
            check = msgspec.structs.replace(
                check, script=script_path(rep, where, check.arg, case_file, "verifier")
            )
        _lint_check(rep, where, check)
        out.append(check)
    return tuple(out)


def script_path(
    rep: Report, at: KeyPath, value: str, case_file: Path | None, field: str
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


def _scored_grader(rep: Report, at: KeyPath, value: dict[str, Any], line: int) -> Check | None:
    """`grader: {run: CMD, min: N}`: a command printing a JSON `score` that passes at `min`
    (Skillgrade's deterministic grader, as `skillbench import skillgrade` writes it);
    `grader: {run: CMD, vally: {stimulus, config}, timeout: S}`: Vally's program grader (as
    `skillbench import vally` writes it), given Vally's EVALUATE_GRADER_INPUT."""
    unknown = sorted(set(value) - {"run", "min", "vally", "timeout"})
    run, least = value.get("run"), value.get("min")
    if unknown:
        rep.error(
            at,
            f"`grader` has unknown field(s) {', '.join(unknown)}; it takes run and min, or "
            "run, vally and timeout",
        )
        return None
    if not isinstance(run, str) or not run.strip():
        rep.error(at, '`grader` needs `run`: the command that prints {"score": N}')
        return None
    if "vally" in value:
        given, limit = value["vally"], value.get("timeout", 60)
        if not isinstance(given, dict) or least is not None:
            rep.error(at, "`grader` `vally` is a mapping {stimulus, config}, without `min`")
            return None
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0:
            rep.error(at, "`grader` `timeout` must be a number of seconds")
            return None
        context = json.dumps(given, default=str)
        return Check("grader", run, line, timeout=float(limit), program=context)
    if isinstance(least, bool) or not isinstance(least, int | float) or not 0 <= least <= 1:
        rep.error(at, "`grader` `min` must be a score from 0 to 1")
        return None
    return Check("grader", run, line, min=float(least))


MAX_RUN = 86_400  # a day: a reward script's `timeout` (Harbor tasks give up to hours)


def _verifier(
    rep: Report, at: KeyPath, value: dict[str, Any], line: int, case_file: Path | None
) -> Check | None:
    """`verifier: {run: SCRIPT, timeout: S}`: a verifier with its source's time limit (a
    Margin case's `test_timeout_seconds`, as `skillbench import margin` writes it)."""
    unknown = sorted(set(value) - {"run", "timeout"})
    if unknown:
        rep.error(
            at, f"`verifier` has unknown field(s) {', '.join(unknown)}; it takes run and timeout"
        )
        return None
    run = value.get("run")
    if not isinstance(run, str) or not run.strip():
        rep.error(at, "`verifier` needs `run`: the script, relative to the case file")
        return None
    limit = value.get("timeout")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit <= MAX_RUN
    ):
        rep.error(at, f"`verifier` `timeout` must be seconds, more than 0 and at most {MAX_RUN}")
        return None
    script = script_path(rep, at, run, case_file, "verifier")
    if script is None:
        return None
    timeout = None if limit is None else float(limit)
    return Check("verifier", run, line, script=script, timeout=timeout)


def _reward(
    rep: Report, at: KeyPath, value: Any, line: int, case_file: Path | None
) -> Check | None:
    """`reward: FILE` or `reward: {file: FILE, min: N, metric: NAME, run: SCRIPT, timeout: S}`."""
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        rep.error(at, f"`reward` is a file or a mapping {{file, min, run}}, got {type_name(value)}")
        return None
    unknown = sorted(set(value) - {"file", "min", "metric", "run", "timeout"})
    if unknown:
        rep.error(
            at,
            f"`reward` has unknown field(s) {', '.join(unknown)}; it takes file, min, metric, "
            "run and timeout",
        )
        return None
    limit = value.get("timeout")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit <= MAX_RUN
    ):
        rep.error(at, f"`reward` `timeout` must be seconds, more than 0 and at most {MAX_RUN}")
        return None
    metric = value.get("metric")
    if metric is not None and (not isinstance(metric, str) or not metric.strip()):
        rep.error(at, f"`reward` `metric` must be a reward.json key, got {type_name(metric)}")
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
        rep.error(at, f"`reward` `min` must be a number, got {type_name(least)}")
        return None
    script = None
    if run is not None:
        if not isinstance(run, str):
            rep.error(at, f"`reward` `run` must be a script path, got {type_name(run)}")
            return None
        script = script_path(rep, at, run, case_file, "reward run")
        if script is None:
            return None
    timeout = None if limit is None else float(limit)
    return Check(
        "reward", file, line, script=script, min=float(least), metric=metric, timeout=timeout
    )


def _lint_check(rep: Report, at: KeyPath, check: Check) -> None:
    if check.kind not in (known := kind_docs()):
        close = difflib.get_close_matches(check.kind, list(known), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        rep.warn(at, f"unknown check kind `{check.kind}`: it will fail at run time{hint}")
        return
    if check.arg is None:
        rep.error(at, f"check `{check.kind}` needs an argument: `{check.kind}: ...`")
        return
    arg = check.arg
    if (plugin := plugin_kinds().get(check.kind)) is not None:
        for warning in plugin.lint(arg):
            rep.warn(at, f"`{check.kind}`: {warning}")
        return
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
