"""skill-optimizer suites as native cases (docs/formats.md): suite.yml
with inline or file cases, graders printing {pass, score, evidence}, its support folders."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any

from skillbench.evals import SpecError
from skillbench.evals.skills import is_skill, read_skill, staged_files
from skillbench.importers.base import (
    Imported,
    ImportError_,
    NewFile,
    case_yaml,
    confined,
    each,
    is_dir,
    is_file,
    line_of,
    load_yaml,
    none_left,
    safe_name,
    source_links,
    support,
    timeout_minutes,
    yaml_str,
)
from skillbench.importers.mcp import optimizer_mcp, optimizer_services
from skillbench.sandbox.inside import mcpcall

_SUITE_DROPPED = {
    "models": "the model is skillbench's --model",
    "env": "host variables never enter a sandbox",
    "cleanup": "every case gets a fresh sandbox",
    "appendSystemPrompt": "the agent's prompt is the agent's own",
    "model": "the model is skillbench's --model",
}


# skill-optimizer's own fields the importer does not map, in its words (its
# src/workbench/suite-loader.ts and types.ts, WorkbenchCaseConfig); every other field is
# read (READ) or dropped with a word (_SUITE_DROPPED): tests/importers/test_format_fields.py
_ARTIFACTS = (
    "differs: the files skill-optimizer copies out after a trial; here the checks read the "
    "workspace in the checker and these files are not kept"
)
_SUITE_SAID = {
    "name": "ignored: the suite's name (each case keeps its own)",
    "kind": "differs: capability or regression sets skill-optimizer's pass-rate target; "
    "skillbench's verdict is the paired lift (docs/statistics.md)",
    "targetPassRate": "differs: skill-optimizer's suite pass-rate target is not applied; "
    "skillbench's verdict is the paired lift (docs/statistics.md)",
    "source": "ignored: the suite's provenance (the git url and ref it was fetched from)",
    "artifacts": _ARTIFACTS,
}
_CASE_SAID = {"artifacts": _ARTIFACTS}
READ = frozenset(
    {"cases", "name", "task", "graders", "references", "setup", "timeoutSeconds"}
    | {"mcpServers", "mcpServices"}
)


def _said(table: dict[str, Any], said: dict[str, str], where: str, out: Imported) -> None:
    """Each field of `table` no native field takes, in skill-optimizer's words; a field its
    reference does not have, as such (never dropped without a word)."""
    for key in table:
        if key in said:
            out.unmapped.append(f"{where}: `{key}` — {said[key]}")
        elif key not in READ and key not in _SUITE_DROPPED:
            out.unmapped.append(f"{where}: `{key}` — not a skill-optimizer field; ignored")


def import_skill_optimizer(src: Path, into: Path | None = None) -> Imported:
    """A skill-optimizer suite: suite.yml (or the file given) with inline or file cases,
    graders printing {pass, score, evidence}, and the checks/, bin/, workspace/ folders."""
    src = src.resolve()
    path = src / "suite.yml" if is_dir(src) else src
    if not is_file(path):
        raise ImportError_(f"{src}: no suite.yml (a skill-optimizer suite file)")
    suite = load_yaml(path)
    if not isinstance(suite, dict) or not isinstance(suite.get("cases"), list):
        raise ImportError_(f"{path}: a suite is a mapping with a `cases` list")
    out = Imported(source=f"skill-optimizer suite {path}", unmapped=source_links(path.parent))
    for key, why in _SUITE_DROPPED.items():
        if key in suite:
            out.unmapped.append(f"{path.name}: `{key}` — dropped: {why}")
    _said(suite, _SUITE_SAID, path.name, out)
    for i, item in enumerate(suite["cases"]):
        if isinstance(item, str):  # a case file: it does not inherit the suite's defaults
            file = confined(path.parent, item, path, "case file")
            case = load_yaml(file)
            base, root = {}, file.parent
        else:
            case, base, root = item, suite, path.parent
        named = case if isinstance(case, dict) and "references" in case else base
        if isinstance(named, dict) and named.get("references"):  # (checked before any case)
            origin = file if named is case and isinstance(item, str) else path
            refs = named["references"]
            folder = confined(path.parent, refs, origin, "references", base=root)
            if not isinstance(refs, str) or not is_dir(folder):
                shown = str(refs)[:200]
                at = line_of(origin, shown if isinstance(refs, str) else "references:")
                raise ImportError_(
                    f"{origin}:{at}: references {shown!r} is not a "
                    "folder of the suite; name the folder whose files seed /work"
                )
        if not isinstance(case, dict) or not case.get("name") or not case.get("task"):
            out.skipped.append(f"{path.name}: case {i + 1} — it needs `name` and `task`")
            continue
        merged = {
            **{k: base[k] for k in ("timeoutSeconds", "setup", "references") if k in base},
            **case,
            # MCP servers merge by name, the inline case winning (skill-optimizer's rule)
            **{
                k: {**base[k], **case.get(k, {})}
                for k in ("mcpServers", "mcpServices")
                if isinstance(base.get(k), dict) and isinstance(case.get(k, {}), dict)
            },
        }
        each(
            out,
            f"case {case['name']}",
            partial(_optimizer_case, merged, root, path.parent, into, out),
        )
    none_left(out, path)
    return out


# skill-optimizer's system prompt lines for the `mcp` command (workbench/pi-agent.ts), with
# where it is here: the agent's PATH is its image's
_MCP_PROMPT = (
    "\n\nAdditional command:\n"
    "- `bin/mcp` (in the workspace, /work/bin/mcp) is available for configured MCP servers.\n"
    "- Run `bin/mcp list <server> --schema` to inspect available tools when needed.\n"
    "- Run `bin/mcp call <server.tool> key=value` to call a tool from bash.\n"
)
_NODE = re.compile(r"(?:^|[\s;&|(])(node|npx|npm)(?=\s|$)")


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
    minutes = timeout_minutes(case.get("timeoutSeconds"))
    if minutes:
        extra["timeout_minutes"] = str(minutes)
    setup = case.get("setup")
    if setup:
        text = "\n".join(setup) if isinstance(setup, list) else str(setup)
        extra["setup"] = yaml_str(text).rstrip("\n")
    commands = [*(g["command"] for g in graders), extra.get("setup", "")]
    used = {m for c in commands for m in _NODE.findall(c)}
    if used:
        # the sandbox image has no node; a case that requires it runs in the node variant,
        # which has no npm or npx (Debian's npm is hundreds of packages): a case that runs
        # them requires them too, so check and the run say it lacks them
        needs = ["node", *sorted(used - {"node"})]
        extra["requires"] = f"[{', '.join(needs)}]"
        out.mapped.append(
            f"{where}: its setup or graders run {', '.join(sorted(used))} — `requires: "
            f"{extra['requires']}`: it runs in the sandbox image's node variant (built on first "
            "use, or `skillbench image build --node`)"
            + ("; npm and npx are not in it" if used - {"node"} else "")
        )
    solution = _solution(suite_dir, str(case["name"]))
    if solution is not None:  # `skill-optimizer verify-suite` runs it: our `eval --oracle`
        out.files += support(solution, f"cases/{name}/solution", source)
        extra["oracle"] = f"{name}/solution/solution.sh"
        out.mapped.append(
            f"{where}: {solution.relative_to(suite_dir)}/solution.sh — its reference solution: "
            "`eval --oracle` runs it"
        )
    # references, then workspace/, then bin/ make the seed of /work: the fixture
    seed: list[NewFile] = []
    # skill-optimizer's default is ./references, when there is one
    refs = case.get("references") or ("references" if is_dir(root / "references") else None)
    if refs:
        files, shown = _references(
            root / str(refs), f"cases/{name}/fixture", where, into, source, out
        )
        seed += files
        if shown is not None:
            extra["skill_in_workspace"] = shown
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
    _said(case, _CASE_SAID, where, out)
    task = str(case["task"])
    if "mcpServers" in case or "mcpServices" in case:
        servers, hidden = case.get("mcpServers"), case.get("mcpServices")
        has_mcp = is_dir(root / "mcp")
        services = optimizer_services(hidden, servers, name, has_mcp, where, out)
        if services:
            extra["services"] = json.dumps(services)
            out.files += support(root / "mcp", f"cases/{name}/mcp", source)
            used = {m for s in services.values() for m in _NODE.findall(s["command"][-1])}
            if used and "requires" not in extra:
                extra["requires"] = f"[{', '.join(['node', *sorted(used - {'node'})])}]"
        mcp = optimizer_mcp(servers, services, where, out)
        if mcp:
            extra["mcp_servers"] = json.dumps(mcp)
        if isinstance(servers, dict) and servers:
            # the workbench's `mcp` command and its config in /work (workbench/mcp/config.ts)
            config = {"imports": [], "mcpServers": servers}
            seed_files = [
                NewFile(
                    f"cases/{name}/fixture/mcporter.json",
                    (json.dumps(config, indent=2) + "\n").encode(),
                ),
                NewFile(
                    f"cases/{name}/fixture/bin/mcp",
                    Path(mcpcall.__file__).read_bytes(),
                    executable=True,
                ),
            ]
            out.files += seed_files
            extra["fixture"] = f"{name}/fixture"
            task += _MCP_PROMPT
            out.mapped.append(
                f"{where}: mcpServers — the workbench's `mcp` command (`mcp call <server.tool> "
                "key=value`, `mcp list`) at /work/bin/mcp with /work/mcporter.json, and its "
                "system prompt's lines after the task; skill-optimizer puts /work/bin on the "
                "agent's PATH, here the task names bin/mcp"
            )
    out.files.append(NewFile(f"cases/{name}.yaml", case_yaml(source, task, checks, extra, [])))
    out.cases.append(name)


def _references(
    refs: Path, dest: str, where: str, into: Path | None, source: str, out: Imported
) -> tuple[list[NewFile], str | None]:
    """The references folder as the workspace's seed, minus the skills in it: such a suite
    keeps the skill under test there (references/<skill>/SKILL.md), and a skill copied into
    the workspace would be the baseline's too. The --into skill is the one under test; the
    folder of references/ that holds it is returned: skill-optimizer copies references into
    /work (workspace.ts), so the candidate's arm finds it at /work/<folder>/ as well."""
    skills = [refs] if is_skill(refs) else sorted(p for p in refs.iterdir() if is_skill(p))
    files = [
        f
        for f in support(refs, dest, source)
        if not any(f.rel.startswith(_rel(dest, refs, s)) for s in skills)
    ]
    under_test: str | None = None
    for folder in skills:
        shown = refs.name if folder == refs else f"{refs.name}/{folder.name}"
        # the same skill by its `name`, not its folder: a published skill's folder need not
        # be its name (skill-optimizer's references/pdf-skill is `pdf`)
        mine = _skill_name(into.resolve()) if into is not None else None
        theirs = _skill_name(folder)
        if mine is not None and theirs != mine:
            out.warnings.append(
                f"{where}: {shown}/ is the skill {theirs}, not the --into skill "
                f"{mine}: {mine} is the one under test; "
                f"{shown}/ is left out of the workspace"
            )
        elif into is not None and (changed := _differing(folder, into.resolve())):
            out.warnings.append(
                f"{where}: {shown}/ differs from the --into skill {mine} ({changed}): the "
                f"--into skill is the one under test; {shown}/ is left out of the workspace"
            )
        elif folder == refs:  # skill-optimizer would spread it over /work itself
            out.unmapped.append(
                f"{where}: {shown}/ — the skill under test: the candidate's arm stages it as "
                f"/skills/{theirs}; skill-optimizer copies it over /work itself, which a "
                "baseline without the skill cannot have: left out of the workspace"
            )
        else:
            under_test = folder.name
            out.mapped.append(
                f"{where}: {shown}/ — the skill under test: the candidate's arm finds it at "
                f"/work/{folder.name}/ (where skill-optimizer copies references; "
                f"`skill_in_workspace: {folder.name}`) and as /skills/{theirs}; the baseline "
                "never sees it"
            )
    return files, under_test


def _skill_name(folder: Path) -> str:
    """The skill's `name` (its folder's name when its SKILL.md does not say one)."""
    try:
        return read_skill(folder).name
    except SpecError:
        return folder.name


def _rel(dest: str, refs: Path, skill: Path) -> str:
    """Where `skill` (in `refs`) would land under `dest`, as a prefix of file paths."""
    inner = skill.relative_to(refs).as_posix()
    return f"{dest}/" if inner == "." else f"{dest}/{inner}/"


def _solution(suite_dir: Path, case: str) -> Path | None:
    """The case's reference solution folder, solutions/<case slug>/ with a solution.sh (the
    slug is the name in lower case, each run of other characters one `-`; the name itself
    is tried too)."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", case.lower()).strip("-")
    for folder in dict.fromkeys((slug, case, safe_name(case))):
        if not folder or folder in (".", "..") or Path(folder).name != folder:
            continue  # a case name is one folder of solutions/, never a path out of it
        if is_file(suite_dir / "solutions" / folder / "solution.sh"):
            return suite_dir / "solutions" / folder
    return None


def _differing(ref: Path, into: Path) -> str:
    """What differs between the skill in references/ and the --into skill, as the candidate
    sees them (skills.staged_files: without evals/, fixtures/, .skillbench/), or "" when they
    are the same bytes."""

    def files(root: Path) -> dict[str, bytes]:
        try:
            found = staged_files(root)
        except SpecError:  # a link out of the skill: not what the candidate would see
            return {"(a link out of the skill)": b""}
        return {
            f.rel: (b"L" + f.link.encode()) if f.link is not None else Path(f.abspath).read_bytes()
            for f in found
        }

    theirs, mine = files(ref), files(into)
    changed = sorted(k for k in theirs.keys() | mine.keys() if theirs.get(k) != mine.get(k))
    return ", ".join(changed[:3]) + (" …" if len(changed) > 3 else "")
