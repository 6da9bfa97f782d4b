"""A set run (docs/results.md, "Set runs"): the skills of a library and/or several agents ×
models, each cell one complete paired eval in its own run folder under `cells/`, all cells'
sessions in one `--parallel` pool and one `--max-cost` ledger (engine/pool.py). What
`skillbench.evaluate_set` does; the on-disk contract is skillbench/results/cellset.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import subprocess
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from skillbench.engine.options import (
    Log,
    Options,
    check_options,
    eval_options,
    generate_for,
    settings_for,
)
from skillbench.errors import EvalError, OptionsError, SkillbenchError
from skillbench.evals.skills import digest, evals_digest, is_skill, read_skill
from skillbench.results.cellset import (
    Cell,
    CellSet,
    cell_dir,
    cell_id,
    read_set,
    write_set,
)
from skillbench.validate import skills_at

if TYPE_CHECKING:
    from skillbench.engine.plan import EvalOptions, Prepared
    from skillbench.engine.pool import Pool
    from skillbench.engine.run import EvalResult
    from skillbench.engine.session import Progress
    from skillbench.results.records import SessionRecord

PLAN_FILE = "plan.json"


class CellResult(msgspec.Struct):
    """One cell and, when it ran, its eval's result (None: refused or failed; `cell.reason`
    says why)."""

    cell: Cell
    result: EvalResult | None = None


class SetResult(msgspec.Struct):
    set_dir: str
    cells: list[CellResult]
    spend_usd: float  # every cell's spend, and the generation of missing evals


class CellEstimate(msgspec.Struct):
    id: str
    sessions: int
    reused: int
    cost_usd: float | None
    seconds: float


class SetPlan(msgspec.Struct):
    """The set folder's plan.json: each cell's estimate and the whole set's (every cell's
    own plan.json is in its run folder)."""

    run_id: str
    cells: list[CellEstimate]
    sessions: int
    cost_usd: float | None  # None: some cell's model has no known price
    seconds: float  # at `parallel` sessions at once, across every cell
    parallel: int
    max_cost: float | None
    kind: str = "set"


def split_list(value: str | None) -> list[str]:
    """`a,b` → ["a", "b"] (a flag's comma-separated list; empty items dropped)."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def is_set(
    path: str | os.PathLike[str] | None, options: Options, only: Sequence[str], since: str | None
) -> bool:
    """Whether an eval of `path` under `options` is a set run: a library root, a list of
    agents or models (flag or [matrix]), --only or --changed-since, or --resume of a set."""
    from skillbench.config import ConfigError, load_settings
    from skillbench.evals.skills import is_library_root
    from skillbench.results.cellset import is_set_run

    if options.resume:
        return is_set_run(Path(options.resume))
    if path is None:
        return False
    if only or since or is_library_root(Path(path)):
        return True
    if "," in (options.agent or "") or "," in (options.model or ""):
        return True
    # only the config's [matrix] counts here, read quietly: the run itself names a config file
    # it ignores, and says what is wrong with a flag or the config, once
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            matrix = load_settings(Path(path)).settings.matrix
    except ConfigError:
        return False
    return bool(matrix.agents or matrix.models)


def _single(options: Options) -> Options:
    """`options` with a list in --agent or --model left out (the config decides there)."""
    agent = None if "," in (options.agent or "") else options.agent
    model = None if "," in (options.model or "") else options.model
    return msgspec.structs.replace(options, agent=agent, model=model)


def select_skills(
    paths: Sequence[str | os.PathLike[str]], only: Sequence[str], since: str | None
) -> list[Path]:
    """The skill folders of `paths` (skills and library roots), kept to the names in
    `only` (by folder or skill name) and to those changed since the git revision `since`."""
    found: list[Path] = []
    for path in paths:
        found += [p for p in skills_at(Path(path)) if p not in found]
    if only:
        names = {p: {p.name, _name(p)} for p in found}
        unknown = [n for n in only if not any(n in v for v in names.values())]
        if unknown:
            known = ", ".join(sorted(p.name for p in found))
            raise OptionsError(f"--only {' '.join(unknown)}: no such skill here (skills: {known})")
        found = [p for p in found if names[p] & set(only)]
    if since is not None:
        found = [p for p in found if changed_since(p, since)]
    return found


def _name(folder: Path) -> str:
    try:
        return read_skill(folder).name
    except SkillbenchError:
        return folder.name


def _git(top: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(top), *args], capture_output=True, check=False)


def changed_since(skill: Path, ref: str) -> bool:
    """Whether the skill's digest or its evals' digest differ from those of the same folder at
    git revision `ref` (True when the folder was no skill there). The old tree is rebuilt from
    git's objects, blob by blob, under a temporary folder: never through a link it wrote, and
    without `git archive`, whose export attributes would change what is compared."""
    here = skill.resolve()
    top_run = _git(here, "rev-parse", "--show-toplevel")
    if top_run.returncode != 0:
        raise OptionsError(f"--changed-since {ref}: {skill} is not in a git repository")
    top = Path(os.fsdecode(top_run.stdout.strip()))
    if _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise OptionsError(f"--changed-since {ref}: no such revision in {top}")
    rel = here.relative_to(top.resolve()).as_posix()
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", ref, "--", rel)
    if listing.returncode != 0:
        raise OptionsError(f"--changed-since {ref}: git ls-tree failed in {top}")
    with tempfile.TemporaryDirectory(prefix="skillbench-since-") as tmp:
        root = Path(tmp).resolve()
        for entry in listing.stdout.split(b"\0"):
            if not entry:
                continue
            meta, _, name = entry.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            path = Path(os.fsdecode(name))
            if kind != "blob" or path.is_absolute() or ".." in path.parts:
                continue  # a submodule is no file of the skill; a path out is no file of it
            dest = root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.parent.resolve().is_relative_to(root):
                return True  # through a link the old tree made: compare nothing, evaluate it
            blob = _git(top, "cat-file", "blob", sha).stdout
            if mode == "120000":
                dest.symlink_to(os.fsdecode(blob))
            else:
                dest.write_bytes(blob)
        old = root / rel
        if not is_skill(old):
            return True
        try:
            return digest(old) != digest(skill) or evals_digest(old) != evals_digest(skill)
        except SkillbenchError:  # the old tree's links go outside it: it counts as changed
            return True


class CellProgress:
    """A cell's progress into the set's one display: keys named by cell, the set's spend."""

    def __init__(self, inner: Progress, cell: str, spend: Callable[[], float]):
        self.inner, self.cell, self.spend = inner, cell, spend

    def planned(self, total: int, done: int) -> None:
        self.inner.planned(total, done)

    def started(self, key: str) -> None:
        self.inner.started(f"{self.cell} {key}")

    def finished(self, record: SessionRecord, spend: float) -> None:
        named = msgspec.structs.replace(record, key=f"{self.cell} {record.key}")
        self.inner.finished(named, self.spend())


class _Ready(NamedTuple):
    """A cell prepared to run: its options and its prepared plan."""

    cell: Cell
    opts: EvalOptions
    prepared: Prepared


def cells_of(skills: list[Path], agents: list[str], models: list[str]) -> list[Cell]:
    cells = []
    for folder in skills:
        name = _name(folder)
        for agent in agents:
            for model in models:
                cells.append(
                    Cell(
                        id=cell_id(name, agent, model),
                        skill=name,
                        skill_path=str(folder),
                        agent=agent,
                        model=model,
                        run=cell_dir(name, agent, model),
                    )
                )
    ids = [c.id for c in cells]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise OptionsError(f"two skills share the name of cell {twice[0]}; name each once")
    return cells


def refusal(agent: str, model: str, settings: Any) -> str | None:
    """Why `agent` cannot use `model` (each agent declares the model wires it speaks), or
    None."""
    from skillbench.agents import AgentError, make_agent

    try:
        make_agent(agent, **settings.agents.get(agent, {})).check_model(model)
    except AgentError as exc:
        return str(exc)  # (it names the --agent and the --model)
    return None


def _new_cells(
    paths: Sequence[str | os.PathLike[str]],
    agents: Sequence[str],
    models: Sequence[str],
    only: Sequence[str],
    since: str | None,
    options: Options,
) -> tuple[CellSet, Path, Path]:
    """A new set's cells (every one pending), its folder, and where its settings come from."""
    from skillbench.engine.plan import new_run_id, run_folder

    skills = select_skills(paths, only, since)
    if not skills:
        raise OptionsError("no skill to evaluate" + (f": none changed since {since}" * bool(since)))
    settings = settings_for(skills[0], _single(options))
    agent_list = list(agents) or settings.matrix.agents or [settings.agent]
    model_list = list(models) or settings.matrix.models or [settings.model]
    run_id = new_run_id()
    for folder in skills:  # never inside any skill under test
        set_dir = run_folder(folder, options.out, run_id)
    return (
        CellSet(run_id=run_id, cells=cells_of(skills, agent_list, model_list)),
        set_dir,
        skills[0],
    )


def _refuse(cells: CellSet, settings: Any, log: Log) -> None:
    """Mark (and name, one line each) the cells whose agent cannot use their model."""
    for cell in cells.cells:
        if cell.status in ("pending", "refused"):
            why = refusal(cell.agent, cell.model, settings)
            cell.status, cell.reason = ("refused", why) if why else ("pending", None)
            if why:
                log(f"refused {cell.id}: {why}")
    if all(c.status == "refused" for c in cells.cells):
        raise OptionsError("every cell was refused: no agent given can use a model given")


def estimate_set(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agents: Sequence[str],
    models: Sequence[str],
    only: Sequence[str],
    changed_since: str | None,
    options: Options,
    log: Log,
) -> SetPlan:
    """What a set run would do (`eval --plan` of a set): each cell's estimate and the whole
    set's; nothing is started or written."""

    check_options(options)
    cells, _, start = _new_cells(paths, agents, models, only, changed_since, options)
    settings = settings_for(start, _single(options))
    _refuse(cells, settings, log)
    items = []
    for cell in cells.cells:
        if cell.status == "pending":
            own = msgspec.structs.replace(options, agent=cell.agent, model=cell.model, out=None)
            items.append((cell.id, eval_options(cell.skill_path, own)))
    return _plan_of(cells.run_id, items, settings.parallel, options.max_cost)


def start_set(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agents: Sequence[str],
    models: Sequence[str],
    only: Sequence[str],
    changed_since: str | None,
    options: Options,
    progress: Progress,
    log: Log,
) -> tuple[Coroutine[Any, Any, SetResult], Path]:
    """Everything before the set's first session (the cells, generation, every cell's plan,
    set.json with every cell pending, the set's plan.json), and the run as a coroutine."""
    from skillbench.engine.plan import prepare
    from skillbench.engine.pool import Pool
    from skillbench.models import parse_model

    if options.cluster:
        raise OptionsError("--cluster runs one skill's eval; run a set run on this machine")
    check_options(options)
    if options.max_cost is not None and options.max_cost < 0:
        raise OptionsError("--max-cost is a spend cap in USD: 0 or more")
    if options.resume:
        set_dir = Path(options.resume)
        cells = read_set(set_dir)
        start = Path(cells.cells[0].skill_path) if cells.cells else set_dir
    else:
        cells, set_dir, start = _new_cells(paths, agents, models, only, changed_since, options)
        if (set_dir / PLAN_FILE).exists():
            raise OptionsError(
                f"--out {set_dir}: already holds a run; use --resume {set_dir} to continue it"
            )
    settings = settings_for(start, _single(options))
    pool = Pool(settings.parallel, options.max_cost)
    _refuse(cells, settings, log)
    try:
        set_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionsError(
            f"--out {set_dir}: cannot make the set folder ({exc.strerror})"
        ) from None
    if options.generate and not options.resume:  # once per skill, with its first cell's model
        kinds = ["cases", "triggers"] if options.triggers else ["cases"]
        first: dict[str, Cell] = {}
        for cell in cells.cells:
            if cell.status == "pending":
                first.setdefault(cell.skill_path, cell)
        for path, cell in first.items():
            own = msgspec.structs.replace(options, agent=cell.agent, model=cell.model)
            spend = generate_for(Path(path), settings_for(Path(path), own), kinds, log, True)
            pool.ledger.charge(spend, "generation")
    ready: list[_Ready] = []
    results: dict[str, EvalResult] = {}
    said: set[str] = set()

    def once(line: str) -> None:  # what every cell's preparation says (an image built), once
        if line not in said:
            said.add(line)
            log(line)

    for cell in cells.cells:
        if cell.status == "done":
            results[cell.id] = _finished(set_dir / cell.run)
            pool.ledger.charge(results[cell.id].summary.spend_usd, "earlier")
            continue
        if cell.status == "refused":
            continue
        folder = set_dir / cell.run
        again = (folder / "plan.json").is_file()
        cell_options = msgspec.structs.replace(
            options,
            agent=cell.agent,
            model=cell.model,
            out=None if again else str(folder),
            resume=str(folder) if again else None,
            generate=False,
        )
        try:
            # a resumed cell's skill folder is its plan's (absolute): the set may resume elsewhere
            opts = eval_options(None if again else cell.skill_path, cell_options)
            ready.append(_Ready(cell, opts, prepare(opts, log=once)))
            cell.status, cell.reason = "pending", None
        except SkillbenchError as exc:
            cell.status, cell.reason = "failed", str(exc).splitlines()[0]
            log(f"cell {cell.id}: {cell.reason}")
    write_set(set_dir, cells)  # before the first session: every cell that will run, pending
    if not options.resume:  # each cell estimated as a fresh run would be (nothing started)
        fresh = [(r.cell.id, msgspec.structs.replace(r.opts, resume=None)) for r in ready]
        plan = _plan_of(cells.run_id, fresh, settings.parallel, options.max_cost)
        (set_dir / PLAN_FILE).write_bytes(msgspec.json.format(msgspec.json.encode(plan)))
        over = plan.max_cost is not None and (plan.cost_usd or 0.0) > plan.max_cost
        if over:
            log(
                f"note: the set's estimated cost ~${plan.cost_usd:.2f} exceeds --max-cost "
                f"${plan.max_cost:.2f}: it will stop at the cap with some cells' rows unscored"
            )
    _memory(cells, settings, log)
    if any(parse_model(c.model).scripted for c in cells.cells if c.status == "pending"):
        log(
            "note: using the scripted driver: a fixed script, not a model; the verdicts show "
            "the pipeline works, not that the skills help"
        )
    return _run(set_dir, cells, ready, results, pool, progress), set_dir


def _finished(run_dir: Path) -> EvalResult:
    from skillbench.engine.run import EvalResult
    from skillbench.results.summary import Summary
    from skillbench.util.inputs import InputError, load_json

    try:
        return EvalResult(str(run_dir), load_json(run_dir / "summary.json", Summary))
    except (OSError, InputError, msgspec.DecodeError) as exc:
        raise EvalError(
            f"{run_dir}: a finished cell without a readable summary.json ({exc})"
        ) from None


def _memory(cells: CellSet, settings: Any, log: Log) -> None:
    """Warn, per agent of the set, when --parallel sessions of it would not fit in memory."""
    from skillbench.sandbox import capacity

    for agent in dict.fromkeys(c.agent for c in cells.cells if c.status == "pending"):
        warning = capacity.parallel_warning(agent, settings.parallel, capacity.mem_available())
        if warning:
            log(f"warning: {warning}")


def _plan_of(
    run_id: str, items: list[tuple[str, EvalOptions]], parallel: int, max_cost: float | None
) -> SetPlan:
    from skillbench.engine.estimate import estimate

    cells = []
    for cid, opts in items:
        e = estimate(opts)
        cells.append(CellEstimate(cid, e.sessions, e.reused, e.cost_usd, e.seconds))
    costs = [c.cost_usd for c in cells]
    return SetPlan(
        run_id=run_id,
        cells=cells,
        sessions=sum(c.sessions for c in cells),
        cost_usd=None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        # every cell's estimate is at the set's --parallel, and the cells share that pool
        seconds=sum(c.seconds for c in cells),
        parallel=parallel,
        max_cost=max_cost,
    )


async def _run(
    set_dir: Path,
    cells: CellSet,
    ready: list[_Ready],
    results: dict[str, EvalResult],
    pool: Pool,
    progress: Progress,
) -> SetResult:
    from skillbench.engine.run import execute

    def spent() -> float:
        return pool.ledger.snapshot().spent

    async def one(item: _Ready) -> None:
        cell = item.cell
        try:
            results[cell.id] = await execute(
                item.prepared, item.opts, CellProgress(progress, cell.id, spent), None, pool
            )
            cell.status = "done"
        except SkillbenchError as exc:
            cell.status, cell.reason = "failed", str(exc).splitlines()[0]
        write_set(set_dir, cells)  # one loop: the writes never interleave

    tasks = [asyncio.create_task(one(item)) for item in ready]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:  # Ctrl-C (or a crash) stops every cell; each keeps its journal
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return SetResult(
        str(set_dir),
        [CellResult(c, results.get(c.id)) for c in cells.cells],
        round(spent(), 6),
    )


def set_plan_lines(plan: SetPlan) -> list[str]:
    """The set's estimate for the terminal (`eval --plan` of a set): a line per cell, the
    totals."""

    def cost(usd: float | None) -> str:
        return "cost unknown (no price for the model)" if usd is None else f"~${usd:.2f}"

    lines = [
        f"  {c.id}: {c.sessions} session(s) to run"
        + (f" ({c.reused} reused from earlier runs)" if c.reused else "")
        + f", {cost(c.cost_usd)}"
        for c in plan.cells
    ]
    lines.insert(
        0,
        f"plan: {len(plan.cells)} cell(s), {plan.sessions} session(s), {cost(plan.cost_usd)}, "
        f"~{plan.seconds / 60:.0f} min at --parallel {plan.parallel}",
    )
    if plan.max_cost is not None and plan.cost_usd is not None and plan.cost_usd > plan.max_cost:
        lines.append(
            f"  the estimated cost exceeds --max-cost ${plan.max_cost:.2f}: the set will stop "
            "at the cap with some cells' rows unscored"
        )
    return lines
