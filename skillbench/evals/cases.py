"""Case files (evals/cases/*.yaml) and the suite (evals/suite.yaml): the session fields
they share (task, files, fixture, image, workdir, limits...) and the suite's sub-cases."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from skillbench.evals.checks import parse_checks, script_path
from skillbench.evals.containerfile import NETWORK_FIELD, lint
from skillbench.evals.fields import Report, root_mapping, type_name
from skillbench.evals.imageref import ref_problem
from skillbench.evals.mcp import parse_mcp_servers
from skillbench.evals.model import (
    BUCKETS,
    CASE_TIMEOUT_MINUTES,
    MAX_TIMEOUT_MINUTES,
    Case,
    SubCase,
    Suite,
    timeout_note,
)
from skillbench.evals.network import lint_service_hosts, parse_network
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.resources import parse_resources
from skillbench.evals.services import parse_services, parse_volumes
from skillbench.evals.yamlsrc import KeyPath, load_yaml_file, read_text

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
    "build_network",
    "cpus",
    "memory",
    "workdir",
    "network",
    "services",
    "volumes",
    "mcp_servers",
    "harbor",
    "skill_in_workspace",
    "as_root",
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

_REQUIRES = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._+-]*|python3:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
_FOLDER = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_SUBCASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Words that leak how a case is scored into the prompt the agent sees.
_EVAL_INTERNALS = re.compile(r"evals/|\bchecks\b|\bgrader\b|\brubric\b|triggers\.ya?ml", re.I)


def _session_fields(
    rep: Report, data: dict[str, Any], case_file: Path, skill_dir: Path
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
        out["oracle"] = script_path(rep, ("oracle",), data["oracle"], case_file, "oracle")
    if "workdir" in data and rep.expect(("workdir",), data["workdir"], str, "workdir"):
        problem = workdir_problem(data["workdir"])
        if problem:
            rep.error(("workdir",), problem)
        else:
            out["workdir"] = data["workdir"]
    if "harbor" in data and rep.expect(("harbor",), data["harbor"], str, "harbor"):
        out["harbor"] = _harbor(rep, data["harbor"], case_file)
    if "skill_in_workspace" in data and rep.expect(
        ("skill_in_workspace",), data["skill_in_workspace"], str, "skill_in_workspace"
    ):
        folder = data["skill_in_workspace"]
        if _FOLDER.match(folder) and folder not in (".", ".."):
            out["skill_in_workspace"] = folder
        else:
            rep.error(
                ("skill_in_workspace",),
                f"`skill_in_workspace` {folder!r} must be one folder name of the workspace "
                "(letters, digits, . _ -), such as pdf-skill",
            )
    if "as_root" in data:
        out["as_root"] = _as_root(rep, data["as_root"])
    out.update(_image(rep, data, case_file, skill_dir))
    out.update(parse_resources(rep, data))
    if "network" in data:
        network = parse_network(rep, data["network"])
        if network is not None:
            out["network"] = network
    if "services" in data:
        build_network = out.get(NETWORK_FIELD, False)
        out["services"] = parse_services(
            rep, data["services"], case_file, skill_dir, build_network is True
        )
        if "network" in data:
            names = {s.name.lower() for s in out["services"]}
            lint_service_hosts(rep, data["network"], names)
    if "volumes" in data:
        out["volumes"] = parse_volumes(rep, data["volumes"], out.get("workdir"))
    if "mcp_servers" in data:
        names = {s.name.lower() for s in out.get("services", ())}
        agent = out["network"].agent if "network" in out else ()
        out["mcp_servers"] = parse_mcp_servers(rep, data["mcp_servers"], names, agent)
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
            if value > MAX_TIMEOUT_MINUTES and value <= CASE_TIMEOUT_MINUTES:
                rep.note(("timeout_minutes",), timeout_note(value))
            if not 1 <= value <= CASE_TIMEOUT_MINUTES:
                rep.error(
                    ("timeout_minutes",),
                    f"`timeout_minutes` must be between 1 and {CASE_TIMEOUT_MINUTES}, got {value}",
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


def _image(rep: Report, data: dict[str, Any], case_file: Path, skill_dir: Path) -> dict[str, Any]:
    """`image` or `containerfile` (whose instructions may not leave its build context), and
    `build_network`."""
    out: dict[str, Any] = {}
    network = data.get(NETWORK_FIELD, False)
    if NETWORK_FIELD in data and rep.expect((NETWORK_FIELD,), network, bool, NETWORK_FIELD):
        builds = isinstance(data.get("services"), dict) and any(
            isinstance(b, dict) and "build" in b for b in data["services"].values()
        )
        if "containerfile" not in data and not builds:
            rep.warn(
                (NETWORK_FIELD,),
                f"`{NETWORK_FIELD}` without a `containerfile` or a service's `build` does nothing",
            )
        out[NETWORK_FIELD] = network
    if "image" in data and "containerfile" in data:
        rep.error(("containerfile",), "give `image` or `containerfile`, not both")
    elif "image" in data and rep.expect(("image",), data["image"], str, "image"):
        problem = ref_problem(data["image"].strip())
        if data["image"].strip() and problem:
            rep.error(("image",), problem)
        elif data["image"].strip():
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
            try:
                rep.problems += lint(target, read_text(target), network=network is True)
            except SpecError as exc:
                rep.problems += exc.problems
    return out


AS_ROOT = ("verifier", "oracle")  # what `as_root` may name


def _as_root(rep: Report, value: Any) -> tuple[str, ...]:
    """`as_root: [verifier, oracle]`: which of the case's own scripts run as root (in a
    fresh container the agent never touched; docs/trust.md)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        rep.error(("as_root",), "`as_root` is a list of `verifier` and `oracle`")
        return ()
    unknown = [v for v in items if v not in AS_ROOT]
    if unknown:
        rep.error(
            ("as_root",),
            f"`as_root` names {', '.join(map(repr, unknown))}; it may name only "
            f"{' and '.join(AS_ROOT)} (the agent never runs as root)",
        )
    named = tuple(v for v in AS_ROOT if v in items)
    if named:  # what differs from the source, said where it is written (docs/trust.md)
        rep.note(
            ("as_root",),
            f"{' and '.join(named)} run as root in a container the agent never touched "
            "(a writable layer, the image's PATH), as their source runs them; the agent "
            "still works unprivileged on a read-only root, where the source may give it root",
        )
    return named


def _harbor(rep: Report, value: str, case_file: Path) -> str | None:
    """A Harbor task's folder under evals/ (relative to the case file), holding tests/."""
    evals = next((p for p in case_file.resolve().parents if p.name == "evals"), None)
    target = (case_file.parent / value).resolve()
    if evals is None or not target.is_relative_to(evals) or target == evals:
        rep.error(
            ("harbor",),
            f"`harbor` folder {value!r} is not inside the skill's evals/ folder; keep the "
            "task's tests/ and solution/ beside the case (the checker sees only evals/)",
        )
        return None
    if not (target / "tests").is_dir():
        rep.error(
            ("harbor",),
            f"`harbor` folder {value!r} holds no tests/ (looked for {target / 'tests'}); it "
            "is relative to the case file",
        )
        return None
    return str(target.relative_to(evals))


def _files(rep: Report, value: Any) -> dict[str, str]:
    if not rep.expect(("files",), value, dict, "files"):
        return {}
    out: dict[str, str] = {}
    for path, content in value.items():
        at = ("files", path)
        reason = bad_file_path(str(path))
        if reason:
            rep.error(at, f"`files` path {path!r} {reason}", key=True)
        elif not isinstance(content, str):
            rep.error(at, f"`files` entry {path!r} must be text, got {type_name(content)}")
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


def bad_file_path(path: str) -> str | None:
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


def _fixture(rep: Report, value: str, case_file: Path, skill_dir: Path) -> str | None:
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
    data = root_mapping(doc, "a case", "task, checks, ...")
    rep = Report(doc)
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
    data = root_mapping(doc, "a suite", "task, cases, ...")
    rep = Report(doc)
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
    if "as_root" in data:
        # a root script runs after every other check of its checker (checks.run_checks);
        # a suite's sub-cases share one checker, so one would run after it
        rep.error(("as_root",), "`as_root` is for a case, not a suite; make it a case file")
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


def _subcase(rep: Report, at: KeyPath, item: Any, path: Path) -> SubCase | None:
    if not isinstance(item, dict):
        rep.error(at, f"a suite sub-case is a mapping {{name, checks}}, got {type_name(item)}")
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
