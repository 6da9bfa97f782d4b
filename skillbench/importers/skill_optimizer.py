"""skill-optimizer suites as native cases (docs/formats.md): suite.yml
with inline or file cases, graders printing {pass, score, evidence}, its support folders."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any

from skillbench.evals import SpecError
from skillbench.evals.skills import is_skill, staged_files
from skillbench.importers.base import (
    Imported,
    ImportError_,
    NewFile,
    case_yaml,
    confined,
    each,
    is_dir,
    is_file,
    load_yaml,
    none_left,
    safe_name,
    source_links,
    support,
    timeout_minutes,
    yaml_str,
)
from skillbench.importers.mcp import optimizer_mcp

_SUITE_DROPPED = {
    "models": "the model is skillbench's --model",
    "env": "host variables never enter a sandbox",
    "cleanup": "every case gets a fresh sandbox",
    "appendSystemPrompt": "the agent's prompt is the agent's own",
    "model": "the model is skillbench's --model",
}


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
            confined(path.parent, named["references"], origin, "references", base=root)
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
    if "mcpServers" in case or "mcpServices" in case:
        mcp = optimizer_mcp(case.get("mcpServers"), case.get("mcpServices"), where, out)
        if mcp:
            extra["mcp_servers"] = json.dumps(mcp)
    out.files.append(
        NewFile(f"cases/{name}.yaml", case_yaml(source, str(case["task"]), checks, extra, []))
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
        mine = into.resolve().name if into is not None else None
        if mine is not None and folder.name != mine:
            out.warnings.append(
                f"{where}: {shown}/ is the skill {folder.name}, not the --into skill "
                f"{mine}: {mine} is the one under test; "
                f"{shown}/ is left out of the workspace"
            )
        elif into is not None and (changed := _differing(folder, into.resolve())):
            out.warnings.append(
                f"{where}: {shown}/ differs from the --into skill {mine} ({changed}): the "
                f"--into skill is the one under test; {shown}/ is left out of the workspace"
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
