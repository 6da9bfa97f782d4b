"""The three foreign formats (design §13; facts in shared/formats.md), each mapped onto native
cases: a Margin Eval suite, Harbor tasks, a skill-optimizer suite.

What cannot be mapped is said, never dropped silently. A case's own image or Dockerfile
becomes its `image:` / `containerfile:`; offline, a base image that is not on this machine is
said at import time (the eval refuses the case until it is there).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from skillbench.evals.cases import workdir_problem
from skillbench.evals.yamlsrc import CappedLoader
from skillbench.importers.base import (
    Imported,
    ImportError_,
    NewFile,
    each,
    headed,
    is_dir,
    is_file,
    none_left,
    refuse_link,
    safe_name,
    source_links,
    support,
    text,
    yaml_str,
)
from skillbench.importers.compose import compose_services, services_field
from skillbench.inputs import InputError, load_toml, read_capped
from skillbench.sandbox.base import HANDOVER, WORKDIR
from skillbench.sandbox.case_image import SANDBOX_FROM
from skillbench.sandbox.image import image_exists
from skillbench.skills import is_skill


def _containerfile(
    dockerfile: Path, name: str, where: str, source: str, out: Imported
) -> dict[str, str]:
    """The case's `containerfile:` field, with its build context copied beside the case; a
    note when its base image is not on this machine (offline, nothing is pulled)."""
    context = dockerfile.parent
    out.files += support(context, f"cases/{name}/{context.name}", source)
    bases = re.findall(r"(?im)^\s*FROM\s+(\S+)", dockerfile.read_text(errors="replace"))
    missing = [b for b in bases if b != SANDBOX_FROM and not image_exists(b)]
    if missing:
        out.unmapped.append(
            f"{where}: {context.name}/{dockerfile.name} FROM {missing[0]} — not a "
            "local image here: the eval refuses the case until it is (podman "
            f"pull or load it), or make it FROM {SANDBOX_FROM}"
        )
    return {"containerfile": f"{name}/{context.name}/{dockerfile.name}"}


def _image(ref: str, where: str, out: Imported) -> dict[str, str]:
    if not image_exists(ref):
        out.unmapped.append(
            f"{where}: image {ref} — not a local image here: the eval refuses "
            "the case until it is (podman pull or load it)"
        )
    return {"image": ref}


def _toml(path: Path) -> dict[str, Any]:
    try:
        return load_toml(refuse_link(path))
    except InputError as exc:
        why = str(exc).removeprefix(f"{path}: ")
        raise ImportError_(f"{path}: cannot read it as TOML: {why}") from None


def _case_yaml(
    source: str, task: str, checks: list[str], extra: dict[str, str], notes: list[str]
) -> bytes:
    """A native case file: the task, the mapped fields, the checks; notes as comments."""
    lines = [f"# {n}" for n in notes]
    lines.append("task: " + yaml_str(task).rstrip("\n"))
    lines += [f"{k}: {v}" for k, v in extra.items()]
    lines.append("checks:")
    lines += [f"  - {c}" for c in checks]
    return headed("\n".join(lines) + "\n", source)


def _minutes(seconds: Any) -> int | None:
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        return min(120, max(1, math.ceil(seconds / 60)))
    return None


# --- Margin Eval --------------------------------------------------------------------------


def import_margin(src: Path, into: Path | None = None) -> Imported:
    """A Margin suite: suite.toml and cases/<id>/{case.toml, prompt.md, tests/test.sh}."""
    src = src.resolve()
    suite = _toml(src / "suite.toml") if is_file(src / "suite.toml") else None
    if suite is None:
        raise ImportError_(
            f"{src}: no suite.toml; a Margin suite holds suite.toml and cases/<id>/case.toml"
        )
    out = Imported(source=f"margin suite {src}", unmapped=source_links(src))
    listed = suite.get("cases")
    folders = (
        sorted(p.name for p in (src / "cases").iterdir() if is_dir(p))
        if is_dir(src / "cases")
        else []
    )
    names = [str(n) for n in listed] if isinstance(listed, list) else folders
    unlisted = sorted(set(folders) - set(names))
    if unlisted:  # a Margin suite lists every case folder
        raise ImportError_(
            f"{src / 'suite.toml'}: `cases` does not list {', '.join(unlisted)} "
            "(a suite lists every folder under cases/)"
        )
    if suite.get("kind") != "test_suite":
        raise ImportError_(f'{src / "suite.toml"}: kind must be "test_suite"')
    for key in sorted(set(suite) - {"kind", "name", "description", "cases"}):
        out.unmapped.append(f"suite.toml: `{key}` — not a Margin suite field; ignored")
    for case in names:
        each(out, f"cases/{case}", partial(_margin_case, src / "cases" / case, out))
    none_left(out, src)
    return out


def _margin_case(folder: Path, out: Imported) -> None:
    where = f"cases/{folder.name}"
    meta = _toml(folder / "case.toml") if is_file(folder / "case.toml") else None
    if meta is None:
        raise ImportError_(f"{folder}: no case.toml")
    if meta.get("kind") != "test_case":
        raise ImportError_(f'{folder / "case.toml"}: kind must be "test_case"')
    if meta.get("name") != folder.name:
        raise ImportError_(
            f"{folder / 'case.toml'}: name {meta.get('name')!r} must equal the "
            f"folder name {folder.name!r}"
        )
    prompt = text(folder / "prompt.md", missing="")
    if not prompt.strip():
        raise ImportError_(f"{folder / 'prompt.md'}: missing or empty (the agent's whole task)")
    if not is_file(folder / "tests" / "test.sh"):
        raise ImportError_(f"{folder / 'tests' / 'test.sh'}: missing (the verifier)")
    name = safe_name(folder.name)
    source = f"margin case {folder}"
    notes = [f"description: {meta['description']}"] if meta.get("description") else []
    extra: dict[str, str] = {}
    if is_file(folder / "oracle" / "solve.sh"):
        extra["oracle"] = f"{name}/oracle/solve.sh"
        out.files += support(folder / "oracle", f"cases/{name}/oracle", source)
    workdir = _margin_workdir(meta.get("agent_cwd"), where, out)
    if workdir != WORKDIR:
        extra["workdir"] = workdir
    test_cwd = str(meta.get("test_cwd") or workdir).rstrip("/") or "/"
    if "test_timeout_seconds" in meta:
        out.unmapped.append(f"{where}: test_timeout_seconds — a verifier gets 600 s here")
    if "image" in meta:
        extra.update(_image(str(meta["image"]), where, out))
    elif is_file(folder / "env" / "Dockerfile"):
        extra.update(_containerfile(folder / "env" / "Dockerfile", name, where, source, out))
    if "metadata" in meta:
        notes.append(f"metadata: {meta['metadata']}")
    # Margin stages tests/ at {test_cwd}/tests after the agent and runs test.sh there: so does
    # this. In the workspace: a fresh copy (every link the agent made into it cut first); at
    # / it is /tests, shown read-only by the checker as a Harbor task's tests are (`harbor:`)
    if test_cwd == "/":
        extra["harbor"] = name
        run = "cd / && exec bash /tests/test.sh\n"
    else:
        if test_cwd != workdir:
            out.unmapped.append(
                f"{where}: test_cwd {test_cwd} — tests/ is staged in the workspace and test.sh "
                f"runs in {workdir} (the checker writes only there or at /tests)"
            )
        run = (
            f'python3 -I {HANDOVER} stage "$CASE/tests" "$WORK/tests" "$WORK" || exit 2\n'
            'cd "$WORK" && exec bash tests/test.sh\n'
        )
    wrapper = (
        "#!/bin/sh\n# stage tests/ where Margin does, then run its verifier (exit 0 pass, "
        "1 fail, 2 no verdict)\n" + run
    )
    out.files += [
        NewFile(
            f"cases/{name}.yaml",
            _case_yaml(source, prompt, [f"verifier: {name}/verify.sh"], extra, notes),
        ),
        NewFile(f"cases/{name}/verify.sh", headed(wrapper, source), executable=True),
        *support(folder / "tests", f"cases/{name}/tests", source),
    ]
    out.cases.append(name)


def _margin_workdir(agent_cwd: Any, where: str, out: Imported) -> str:
    """Where the agent starts is the workspace (`workdir:`): a repository the image holds
    there (/testbed) seeds it."""
    if agent_cwd is None or str(agent_cwd).rstrip("/") == WORKDIR:
        return WORKDIR
    why = workdir_problem(str(agent_cwd).rstrip("/") or "/")
    if why is not None:
        out.unmapped.append(f"{where}: agent_cwd {agent_cwd} — {why}; {WORKDIR} is used")
        return WORKDIR
    return str(agent_cwd).rstrip("/")


# --- Harbor ---------------------------------------------------------------------------------


def _harbor_tasks(src: Path) -> list[tuple[Path, str | None]]:
    """(task folder, its dataset UUID folder name or None) for a task or a dataset."""
    if is_file(src / "task.toml"):
        return [(src, None)]
    found: list[tuple[Path, str | None]] = []
    for child in sorted(p for p in src.iterdir() if is_dir(p)):
        if is_file(child / "task.toml"):
            found.append((child, None))
            continue
        inner = [p for p in child.iterdir() if is_dir(p) and is_file(p / "task.toml")]
        if len(inner) == 1:  # a downloaded dataset: <uuid>/<task-name>/
            found.append((inner[0], child.name))
    if not found:
        raise ImportError_(
            f"{src}: no Harbor task here (a task folder holds task.toml, "
            "instruction.md, tests/test.sh; a dataset <uuid>/<task>/)"
        )
    return found


def import_harbor(src: Path, into: Path | None = None) -> Imported:
    """One Harbor task folder, a folder of them, or a downloaded dataset of UUID folders."""
    src = src.resolve()
    out = Imported(source=f"harbor {src}", unmapped=source_links(src))
    tasks = _harbor_tasks(src)
    taken: dict[str, int] = {}
    for folder, _ in tasks:
        taken[safe_name(folder.name)] = taken.get(safe_name(folder.name), 0) + 1
    for folder, uuid in tasks:
        name = safe_name(folder.name)
        if taken[name] > 1:  # a collision after sanitising: a stable suffix from the UUID
            seed = uuid or str(folder.relative_to(src))
            name = f"{name}-{hashlib.sha256(seed.encode()).hexdigest()[:8]}"
        where = str(folder.relative_to(src)) if folder != src else folder.name
        each(out, where, partial(_harbor_task, folder, name, out))
    none_left(out, src)
    return out


_DROPPED = {
    ("version",): "the task format's version",
    ("environment", "build_timeout_sec"): "no image is built",
    ("environment", "mcp_servers"): "no MCP servers in the sandbox",
    ("verifier", "env"): "the checker's environment is fixed",
    ("solution", "env"): "the oracle runs with the agent's environment",
}
# Harbor's `allow_internet = true` becomes an allowlist: the hosts its verifiers install from
# (pytest with uv: uv's installer, its GitHub downloads, PyPI). A sandbox never gets the
# whole internet; a task that needs more lists its hosts in the case's `network`.
INTERNET = (
    "pypi.org",
    "files.pythonhosted.org",
    "astral.sh",
    "github.com",
    "objects.githubusercontent.com",
    "release-assets.githubusercontent.com",
)
_METADATA = (("environment", "cpus"), ("environment", "memory_mb"), ("environment", "gpus"))
# every task.toml field this importer reads, maps or names as dropped; any other is listed
_KNOWN = {
    *_DROPPED,
    *_METADATA,
    ("environment", "docker_image"),
    ("environment", "allow_internet"),
    ("agent", "timeout_sec"),
    ("verifier", "timeout_sec"),
    ("metadata",),
}
_COMPOSE = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


def _fields(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of a task.toml: a table's own keys, down to the known tables' leaves."""
    paths = []
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, dict) and path != ("metadata",) and not prefix:
            paths += _fields(value, path)
        else:
            paths.append(path)
    return paths


def _harbor_unmapped(folder: Path, task: dict[str, Any], where: str, out: Imported) -> None:
    """What the task has that no native field takes: compose services, skills_dir, and any
    field this importer does not know (never dropped without a word)."""
    for path in _fields(task):
        if path in _KNOWN:
            continue
        if path[-1] == "skills_dir":
            out.mapped.append(
                f"{where}: {'.'.join(path)} — the skill under test: the --into skill, staged "
                "in the candidate's arm as the agent's skill (the baseline has none)"
            )
        else:
            out.unmapped.append(f"{where}: {'.'.join(path)} — not a Harbor field skillbench maps")
    for name in _COMPOSE:
        compose = folder / "environment" / name
        if compose.is_file():
            services = _compose_services(compose)
            out.unmapped.append(
                f"{where}: environment/{name} — its services ({services}) are not started: "
                "the case runs in the sandbox alone, so a task that needs them fails"
            )


def _compose_services(compose: Path) -> str:
    try:
        data = _load_yaml(compose)
    except ImportError_:
        return "unreadable"
    services = data.get("services") if isinstance(data, dict) else None
    return ", ".join(map(str, services)) if isinstance(services, dict) and services else "none"


def _harbor_task(folder: Path, name: str, out: Imported) -> None:
    where, source = folder.name, f"harbor task {folder}"
    task = _toml(folder / "task.toml")
    if "steps" in task:
        raise ImportError_(
            f"{folder / 'task.toml'}: a multi-step task ([[steps]], one instruction each) is "
            "not supported: a case here is one task and one verdict"
        )
    instruction = text(folder / "instruction.md", missing="")
    if not instruction.strip():
        raise ImportError_(f"{folder / 'instruction.md'}: missing or empty (the agent's task)")
    test = folder / "tests" / "test.sh"
    if not is_file(test):
        raise ImportError_(f"{test}: missing (the verifier that writes the reward)")

    def get(*keys: str) -> Any:
        value: Any = task
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    extra: dict[str, str] = {}
    minutes = _minutes(get("agent", "timeout_sec"))
    if minutes:
        extra["timeout_minutes"] = str(minutes)
    notes = [f"{'.'.join(k)} = {get(*k)}" for k in _METADATA if get(*k) is not None]
    notes += [f"metadata: {task['metadata']}"] if "metadata" in task else []
    for keys, why in _DROPPED.items():
        if get(*keys) is not None:
            out.unmapped.append(f"{where}: {'.'.join(keys)} — dropped: {why}")
    _harbor_unmapped(folder, task, where, out)
    if get("environment", "allow_internet") is True:
        extra["network"] = f"[{', '.join(INTERNET)}]"
        out.unmapped.append(
            f"{where}: environment.allow_internet — mapped to `network: {extra['network']}` "
            "(the package indexes verifiers install from); add any other host the task needs"
        )
    if get("verifier", "timeout_sec") is not None:
        out.unmapped.append(f"{where}: verifier.timeout_sec — a verifier gets 600 s here")
    docker = folder / "environment" / "Dockerfile"
    if get("environment", "docker_image"):
        extra.update(_image(str(get("environment", "docker_image")), where, out))
    elif is_file(docker):
        extra.update(_containerfile(docker, name, where, source, out))
    for compose in (
        folder / "environment" / n for n in ("docker-compose.yaml", "docker-compose.yml")
    ):
        if compose.is_file():  # its sidecars run in the arm's pod; `main` is the sandbox
            services = compose_services(compose, where, out)
            if services:
                extra["services"] = services_field(services)
            break
    workdirs = (
        re.findall(r"(?im)^\s*WORKDIR\s+(\S+)", docker.read_text()) if (is_file(docker)) else []
    )
    if workdirs and workdirs[-1] not in ("/work", "/work/"):
        # the Dockerfile's last WORKDIR: where the task's files are and its tests run
        problem = workdir_problem(workdirs[-1])
        if problem is None:
            extra["workdir"] = workdirs[-1]
        else:
            out.unmapped.append(f"{where}: WORKDIR {workdirs[-1]} — {problem}; /work is used")
    tests = test.read_text(encoding="utf-8", errors="replace")
    reward = (
        "/logs/verifier/reward.json" if "reward.json" in tests else ("/logs/verifier/reward.txt")
    )
    # the task's files go beside the case unmodified; the checker shows tests/ and solution/
    # at /tests and /solution (`harbor:`), as Harbor does, and makes /logs/verifier
    wrapper = (
        "#!/bin/sh\n# run the task's verifier where Harbor puts it; the reward file, not the "
        'exit code, is the verdict\ncd "$WORK" && bash /tests/test.sh\nexit 0\n'
    )
    extra["harbor"] = name
    if is_file(folder / "solution" / "solve.sh"):
        extra["oracle"] = f"{name}/solution/solve.sh"
        out.files += support(folder / "solution", f"cases/{name}/solution", source)
    check = f"reward: {{file: {reward}, min: 1, run: {name}/run-tests.sh}}"
    out.files += [
        NewFile(f"cases/{name}.yaml", _case_yaml(source, instruction, [check], extra, notes)),
        NewFile(f"cases/{name}/run-tests.sh", headed(wrapper, source), executable=True),
        *support(folder / "tests", f"cases/{name}/tests", source),
    ]
    out.cases.append(name)


# --- skill-optimizer -----------------------------------------------------------------------

_SUITE_DROPPED = {
    "models": "the model is skillbench's --model",
    "env": "host variables never enter a sandbox",
    "cleanup": "every case gets a fresh sandbox",
    "appendSystemPrompt": "the agent's prompt is the agent's own",
    "mcpServers": "no MCP servers in the sandbox",
    "mcpServices": "no MCP services in the sandbox",
    "model": "the model is skillbench's --model",
}


MAX_YAML = 4 << 20  # a suite file with its cases inline


def _load_yaml(path: Path) -> Any:
    try:
        data = read_capped(refuse_link(path), MAX_YAML).decode("utf-8")
        return yaml.load(data, Loader=CappedLoader)
    except (InputError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ImportError_(f"{path}: cannot read it: {exc}") from None


def import_skill_optimizer(src: Path, into: Path | None = None) -> Imported:
    """A skill-optimizer suite: suite.yml (or the file given) with inline or file cases,
    graders printing {pass, score, evidence}, and the checks/, bin/, workspace/ folders."""
    src = src.resolve()
    path = src / "suite.yml" if is_dir(src) else src
    if not is_file(path):
        raise ImportError_(f"{src}: no suite.yml (a skill-optimizer suite file)")
    suite = _load_yaml(path)
    if not isinstance(suite, dict) or not isinstance(suite.get("cases"), list):
        raise ImportError_(f"{path}: a suite is a mapping with a `cases` list")
    out = Imported(source=f"skill-optimizer suite {path}", unmapped=source_links(path.parent))
    for key, why in _SUITE_DROPPED.items():
        if key in suite:
            out.unmapped.append(f"{path.name}: `{key}` — dropped: {why}")
    for i, item in enumerate(suite["cases"]):
        if isinstance(item, str):  # a case file: it does not inherit the suite's defaults
            file = path.parent / item
            case = _load_yaml(file)
            base, root = {}, file.parent
        else:
            case, base, root = item, suite, path.parent
        if not isinstance(case, dict) or not case.get("name") or not case.get("task"):
            out.skipped.append(f"{path.name}: case {i + 1} — it needs `name` and `task`")
            continue
        merged = {
            **{k: base[k] for k in ("timeoutSeconds", "setup", "references") if k in base},
            **case,
        }
        each(
            out,
            f"case {case['name']}",
            partial(_optimizer_case, merged, root, path.parent, into, out),
        )
    none_left(out, path)
    return out


_NODE = re.compile(r"(?:^|[\s;&|(])(?:node|npx|npm)(?:\s|$)")


def _optimizer_case(
    case: dict[str, Any], root: Path, suite_dir: Path, into: Path | None, out: Imported
) -> None:
    name = safe_name(str(case["name"]))
    where, source = f"case {case['name']}", f"skill-optimizer case {case['name']} ({root})"
    graders = case.get("graders") or []
    if not graders:
        raise ImportError_(f"{root}: {where} has no graders")
    checks = []
    for g in graders:
        command = g.get("command") if isinstance(g, dict) else None
        if not isinstance(command, str):
            raise ImportError_(f"{root}: {where}: a grader is {{name, command}}")
        checks.append("grader: " + json.dumps(command))  # a JSON string is a YAML scalar
    extra: dict[str, str] = {}
    minutes = _minutes(case.get("timeoutSeconds"))
    if minutes:
        extra["timeout_minutes"] = str(minutes)
    setup = case.get("setup")
    if setup:
        text = "\n".join(setup) if isinstance(setup, list) else str(setup)
        extra["setup"] = yaml_str(text).rstrip("\n")
    if any(_NODE.search(c) for c in [*(g["command"] for g in graders), extra.get("setup", "")]):
        # the sandbox image has no node: `requires` makes check and eval say so up front
        extra["requires"] = "[node]"
        out.unmapped.append(
            f"{where}: its setup or graders run node — not in the sandbox image: the case "
            "requires node (give it an `image:` with nodejs) or it is refused"
        )
    # references, then workspace/, then bin/ make the seed of /work: the fixture
    seed: list[NewFile] = []
    refs = case.get("references")
    if refs:
        seed += _references(root / str(refs), f"cases/{name}/fixture", where, into, source, out)
    if is_dir(suite_dir / "workspace"):
        seed += support(suite_dir / "workspace", f"cases/{name}/fixture", source)
    if is_dir(suite_dir / "bin"):
        seed += support(suite_dir / "bin", f"cases/{name}/fixture/bin", source)
    if seed:
        extra["fixture"] = f"{name}/fixture"
        out.files += list({f.rel: f for f in seed}.values())  # later folders win, as copied
    if is_dir(suite_dir / "checks"):
        out.files += support(suite_dir / "checks", f"cases/{name}/checks", source)
    for key, why in _SUITE_DROPPED.items():
        if key in case:
            out.unmapped.append(f"{where}: `{key}` — dropped: {why}")
    out.files.append(
        NewFile(f"cases/{name}.yaml", _case_yaml(source, str(case["task"]), checks, extra, []))
    )
    out.cases.append(name)


def _references(
    refs: Path, dest: str, where: str, into: Path | None, source: str, out: Imported
) -> list[NewFile]:
    """The references folder as the workspace's seed, minus the skills in it: such a suite
    keeps the skill under test there (references/<skill>/SKILL.md), and a skill copied into
    the workspace would be the baseline's too. The --into skill is the one under test."""
    skills = [refs] if is_skill(refs) else sorted(p for p in refs.iterdir() if is_skill(p))
    files = [
        f
        for f in support(refs, dest, source)
        if not any(f.rel.startswith(_rel(dest, refs, s)) for s in skills)
    ]
    for folder in skills:
        shown = refs.name if folder == refs else f"{refs.name}/{folder.name}"
        if into is not None and folder.name != into.resolve().name:
            out.warnings.append(
                f"{where}: {shown}/ is the skill {folder.name}, not the --into skill "
                f"{into.resolve().name}: {into.resolve().name} is the one under test; "
                f"{shown}/ is left out of the workspace"
            )
        else:
            out.unmapped.append(
                f"{where}: {shown}/ — the skill under test: the candidate's arm stages it as "
                "the --into skill; left out of the workspace so the baseline never sees it"
            )
    return files


def _rel(dest: str, refs: Path, skill: Path) -> str:
    """Where `skill` (in `refs`) would land under `dest`, as a prefix of file paths."""
    inner = skill.relative_to(refs).as_posix()
    return f"{dest}/" if inner == "." else f"{dest}/{inner}/"


IMPORTERS = {
    "harbor": import_harbor,
    "margin": import_margin,
    "skill-optimizer": import_skill_optimizer,
}
