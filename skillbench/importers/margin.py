"""Margin Eval suites as native cases (docs/formats.md)."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Any

from skillbench.evals.cases import workdir_problem
from skillbench.evals.kinds.scripts import MAX_RUN
from skillbench.importers.base import (
    Imported,
    ImportError_,
    NewFile,
    case_yaml,
    confined,
    containerfile_field,
    each,
    headed,
    image_field,
    is_dir,
    is_file,
    none_left,
    read_toml,
    safe_name,
    source_links,
    support,
    text,
)
from skillbench.sandbox.base import HANDOVER, WORKDIR


def import_margin(src: Path, into: Path | None = None) -> Imported:
    """A Margin suite: suite.toml and cases/<id>/{case.toml, prompt.md, tests/test.sh}."""
    src = src.resolve()
    suite = read_toml(src / "suite.toml") if is_file(src / "suite.toml") else None
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
    # a listed name is a folder of cases/, never a path out of it (`..`, absolute)
    for name in names:
        confined(src / "cases", name, src / "suite.toml", "cases entry")
    for left in sorted(set(folders) - set(names)):  # Margin's compiler never reads them
        out.unmapped.append(f"cases/{left}: not listed in suite.toml `cases` — ignored")
    if suite.get("kind") != "test_suite":
        raise ImportError_(f'{src / "suite.toml"}: kind must be "test_suite"')
    for key in sorted(set(suite) - {"kind", "name", "description", "cases"}):
        out.unmapped.append(f"suite.toml: `{key}` — not a Margin suite field; ignored")
    preamble = _preamble(src / "preamble-prompt.md")
    for case in names:
        each(out, f"cases/{case}", partial(_margin_case, src / "cases" / case, out, preamble))
    none_left(out, src)
    return out


def _preamble(path: Path) -> str:
    """Margin prepends the suite's preamble-prompt.md, then a blank line, to every prompt."""
    if not is_file(path):
        return ""
    preamble = text(path, missing="")
    if not preamble.strip():
        raise ImportError_(
            f"{path}: empty; write the preamble every prompt starts with, or delete it"
        )
    return preamble.rstrip() + "\n\n"


# Margin's case.toml fields (Margin-Lab/evals: docs/cli/creating-your-own-eval/,
# .agents/skills/suite-converter/references/harbor-mapping.md);
# tests/importers/test_format_fields.py lists them
CASE_FIELDS = (
    "kind",
    "name",
    "description",
    "image",
    "agent_cwd",
    "test_cwd",
    "test_timeout_seconds",
    "metadata",
)


def _margin_case(folder: Path, out: Imported, preamble: str = "") -> None:
    where = f"cases/{folder.name}"
    meta = read_toml(folder / "case.toml") if is_file(folder / "case.toml") else None
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
    for key in sorted(set(meta) - set(CASE_FIELDS)):  # never dropped without a word
        out.unmapped.append(f"{where}: `{key}` — not in Margin's case.toml reference; ignored")
    name = safe_name(folder.name)
    source = f"margin case {folder}"
    notes = [f"description: {meta['description']}"] if meta.get("description") else []
    extra: dict[str, str] = {}
    workdir = _margin_workdir(meta.get("agent_cwd"), where, out)
    if workdir != WORKDIR:
        extra["workdir"] = workdir
    test_cwd = str(meta.get("test_cwd") or workdir).rstrip("/") or "/"
    if is_file(folder / "oracle" / "solve.sh"):
        extra["oracle"] = f"{name}/oracle/{_SOLVE}"
        # Margin's oracle/solve.sh is written for root (its image's user: apt-get, edits
        # outside the repository): root in the oracle's own sandbox, never the agent's
        extra["as_root"] = "[oracle]"
        out.files += support(folder / "oracle", f"cases/{name}/oracle", source)
        out.files.append(
            NewFile(
                f"cases/{name}/oracle/{_SOLVE}",
                headed(_solve_wrapper(workdir, test_cwd), source),
                executable=True,
            )
        )
    # Margin's hard limit on test.sh (a required field there), kept as written
    limit = meta.get("test_timeout_seconds")
    verifier = f"verifier: {name}/verify.sh"
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit <= MAX_RUN:
        verifier = f"verifier: {{run: {name}/verify.sh, timeout: {limit}}}"
    elif limit is not None:
        out.unmapped.append(
            f"{where}: test_timeout_seconds {limit!r} — not a number of seconds from 1 to "
            f"{MAX_RUN}; the verifier gets 600 s"
        )
    if "image" in meta:
        extra.update(image_field(str(meta["image"]), where, out))
    elif is_file(folder / "env" / "Dockerfile"):
        extra.update(containerfile_field(folder / "env" / "Dockerfile", name, where, source, out))
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
            case_yaml(source, preamble + prompt, [verifier], extra, notes),
        ),
        NewFile(f"cases/{name}/verify.sh", headed(wrapper, source), executable=True),
        *support(folder / "tests", f"cases/{name}/tests", source),
    ]
    out.cases.append(name)


_SOLVE = ".margin-solve.sh"  # beside solve.sh, so the whole oracle/ folder is staged with it


def _solve_wrapper(agent_cwd: str, test_cwd: str) -> str:
    """solve.sh as Margin runs it: from test_cwd, told where the agent worked, where the
    tests run and where its own staged files are."""
    return (
        "#!/bin/sh\n# run Margin's oracle/solve.sh from test_cwd, with Margin's environment\n"
        'MARGIN_ORACLE_DIR="$(cd "$(dirname "$0")" && pwd)" || exit 2\n'
        f"export MARGIN_AGENT_CWD={shlex.quote(agent_cwd)} "
        f"MARGIN_TEST_CWD={shlex.quote(test_cwd)} MARGIN_ORACLE_DIR\n"
        f'cd {shlex.quote(test_cwd)} && exec bash "$MARGIN_ORACLE_DIR/solve.sh"\n'
    )


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
