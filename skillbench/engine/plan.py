"""Planning a run (docs/statistics.md): validate the assets, choose the sessions and the scored
units, find the incumbent, and make (or reopen, for --resume) the run folder with its plan.json."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from skillbench.agents import Agent, AgentError, make_agent
from skillbench.config import Settings
from skillbench.errors import EvalError
from skillbench.evals import EvalAssets, Problem, SpecError, load_assets
from skillbench.evals.model import Session, Suite
from skillbench.evals.problems import errors_in
from skillbench.evals.resources import capped_cpus, capped_memory
from skillbench.evals.skills import (
    RUNS_DIR,
    Skill,
    digest,
    eval_files,
    evals_digest,
    is_library_root,
    read_skill,
    root_children,
    skill_files,
)
from skillbench.models import Endpoint, ModelRefError, endpoint, parse_model
from skillbench.models.pricing import price_for
from skillbench.results.records import (
    AA,
    BASELINE,
    CANDIDATE,
    INCUMBENT,
    SUITE,
    Incumbent,
    Library,
    LibrarySkill,
    Plan,
    Unit,
)
from skillbench.results.sequential import MAX_STIMULI, Rule, rule_for
from skillbench.sandbox import images_of
from skillbench.sandbox.base import (
    CASE_DIR,
    CaseImageError,
    ImageBuildError,
    SandboxProvider,
    SandboxSpec,
)
from skillbench.sandbox.stage import missing_requirements
from skillbench.team.repo import TeamError, incumbent
from skillbench.util.inputs import load_json
from skillbench.version import __version__


class EvalOptions(msgspec.Struct, kw_only=True):
    skill_dir: str
    settings: Settings
    out: str | None = None
    resume: str | None = None
    case: str | None = None
    max_cost: float | None = None
    seed: int | None = None
    # the chosen sandbox provider's image (settings' `[sandbox] provider`) when none is given
    image: str = msgspec.field(default_factory=lambda: images_of().sandbox_image)
    team: str | None = None  # a team repo: adds the incumbent arm
    triggers: bool = True  # also measure triggers when the skill has a triggers file
    runs: int = 1
    threshold: float = 0.5
    trigger_method: str | None = None  # "catalog" or "agent"; None: agent for a CLI agent
    fresh_baseline: bool = False  # rerun baseline and incumbent sessions, never reuse them
    aa: bool = False  # also run a second baseline arm: the A/A noise floor
    case_images: dict[str, str] = {}  # session -> the image it runs in, when it has its own
    unavailable: dict[str, str] = {}  # session -> why its remote image cannot be had offline
    spent_before: float = 0.0  # generation calls made for this run, counted toward --max-cost
    planned_usd: float | None = None  # the estimate made before the run (with --max-cost)
    grader: str | None = None  # --grader: the `expect` checks' model (default: the judge)
    grader_runs: int | None = None  # --grader-runs (None: 1, or the resumed run's)
    library: str | None = None  # --with-library: a library root whose other skills every arm stages
    evals: list[str] = []  # --evals: foreign eval files outside the skill (absolute paths)


def trigger_method(opts: EvalOptions) -> str:
    """How the run measures triggers: as asked, else by the real agent's routing when the
    arms run an agent CLI, else by the catalog call."""
    if opts.trigger_method:
        return opts.trigger_method
    return "catalog" if opts.settings.agent == "builtin" else "agent"


def case_home(spec: Session, skill_dir: Path) -> str:
    """$CASE for a session's verifiers and graders: its own folder beside its file
    (`evals/cases/<name>/`, where imported cases keep their support files) when there is one,
    else its file's folder, as the checker sees it under /case."""
    evals = (skill_dir / "evals").resolve()
    case_file = Path(spec.path).resolve()
    own = case_file.with_suffix("")
    folder = own if own.is_dir() else case_file.parent
    if not folder.is_relative_to(evals):
        return CASE_DIR
    rel = folder.relative_to(evals).as_posix()
    return CASE_DIR if rel == "." else f"{CASE_DIR}/{rel}"


def case_folder(spec: Session, skill_dir: Path) -> Path | None:
    """The case's own folder (the one case_home names) on the host, or None without one."""
    home = case_home(spec, skill_dir)
    folder = (skill_dir / "evals" / home.removeprefix(CASE_DIR).lstrip("/")).resolve()
    return folder if home != CASE_DIR and folder.is_dir() else None


def setup_case(spec: Session, skill_dir: Path) -> Path | None:
    """What `setup` sees at $CASE: the case's own folder on the host; None without a setup
    or such a folder."""
    return case_folder(spec, skill_dir) if spec.setup else None


def _rule(stimuli: int, settings: Settings) -> Rule:
    """The stopping rule of a sequential run of `stimuli` stimuli at the settings' floor."""
    if stimuli > MAX_STIMULI:
        raise EvalError(
            f"--sequential: {stimuli} stimuli, and the stopping rule's exact boundaries take at "
            f"most {MAX_STIMULI}; run the fixed design (without --sequential) or fewer cases"
        )
    return rule_for(stimuli, settings.min_net_lift)


def case_spec(
    base: SandboxSpec, session: Session, image: str | None, max_memory: str
) -> SandboxSpec:
    """The sandbox a session runs in: `base` with the session's own image, workdir,
    services, CPUs (capped to the machine's: evals/resources.py) and memory (capped at the
    run's `max_memory`)."""
    return msgspec.structs.replace(
        base,
        image=image or base.image,
        workdir=session.workdir or base.workdir,
        services=session.services,
        volumes=session.volumes,
        as_root=session.as_root,
        cpus=base.cpus if session.cpus is None else capped_cpus(session.cpus),
        memory=capped_memory(session.memory, max_memory) if session.memory else base.memory,
    )


def build_case_images(
    sessions: dict[str, Session], base: str, agent: Agent, log: Callable[[str], None]
) -> tuple[dict[str, str], dict[str, str]]:
    """The image of every session that has its own, or needs a variant of the sandbox image
    for its `requires` (sandbox/podman/variants.py), with the agent's CLI added for a CLI agent;
    and why each session whose image cannot be built or pulled is skipped (naming the case
    file): one broken case of a suite does not stop the others."""
    store = images_of()
    images: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    for name, spec in sessions.items():
        try:  # its services' own images (compose's `build:`), as Harbor builds them first
            for service in spec.services:
                if service.build is not None and service.image is not None:
                    store.service_image(service.build, service.image, log)
        except CaseImageError as exc:
            unavailable[name] = f"{spec.path}: service {service.name!r}: {exc}"
            continue
        if spec.image is None and spec.containerfile is None:
            variant = store.variant_for(base, spec.requires)  # e.g. `requires: [node]`
            if variant is not None:
                try:
                    images[name] = agent.image(store.variant(variant, log), log)
                except (ImageBuildError, AgentError) as exc:
                    unavailable[name] = f"{spec.path}: `requires`: {exc}"
            continue
        try:
            own = store.case_image(
                image=spec.image,
                containerfile=Path(spec.containerfile) if spec.containerfile else None,
                base=base,
                log=log,
                network=spec.build_network,
            )
            images[name] = agent.image(own, log)
        except (CaseImageError, AgentError) as exc:
            unavailable[name] = f"{spec.path}: the case's image: {exc}"
    return images, unavailable


def runnable(sessions: dict[str, Session], unavailable: dict[str, str]) -> None:
    """EvalError when not one session is left to run: each reason is one line."""
    if not sessions or len(unavailable) < len(sessions):
        return
    reasons = list(unavailable.values())
    if len(reasons) == 1:
        raise EvalError(reasons[0])
    raise EvalError("no case can run: none of their images can be built or pulled", reasons)


def validated(skill_dir: Path, extra: Sequence[str] = ()) -> tuple[Skill, EvalAssets]:
    """The skill and its assets (with the `--evals` files), or EvalError with every problem
    (same rules as `check`)."""
    problems: list[Problem] = []
    skill = None
    try:
        skill = read_skill(skill_dir)
    except SpecError as exc:
        problems.extend(exc.problems)
    for files in (skill_files, eval_files):
        try:
            files(skill_dir)
        except SpecError as exc:
            problems.extend(exc.problems)
    assets = load_assets(skill_dir, skill.name if skill else None, [Path(e) for e in extra])
    problems.extend(assets.problems)
    if skill is None or errors_in(problems):
        raise EvalError(f"{skill_dir}: the skill or its eval assets have errors", problems)
    return skill, assets


def expects_skill(spec: Session) -> bool:
    """False for a case that says `expect_activation: false` (loading the skill decides it)."""
    return getattr(spec, "expect_activation", True)


def assets_digest_of(skill_dir: Path, extra: Sequence[str]) -> str:
    """The eval assets' digest (what --resume compares): evals/, and each --evals file."""
    base = evals_digest(skill_dir)
    if not extra:
        return base
    h = hashlib.sha256(base.encode())
    for name in extra:
        h.update(b"\0" + name.encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(Path(name).read_bytes())
    return "sha256:" + h.hexdigest()


def sessions_of(assets: EvalAssets, case: str | None) -> dict[str, Session]:
    """The sessions to run by name: each case, and the suite as one session."""
    found: dict[str, Session] = {c.name: c for c in assets.cases}
    if assets.suite is not None:
        found[SUITE] = assets.suite
    if case is not None:
        if case not in found:
            known = ", ".join(found) or "none"
            raise EvalError(f"--case {case}: no such case (cases: {known})")
        found = {case: found[case]}
    if not found:
        raise EvalError(
            f"{assets.skill_dir}: no execution cases (evals/cases/*.yaml) and no suite "
            "(evals/suite.yaml); write some, or run `skillbench check` to see what was found"
        )
    return found


async def probe_requires(
    provider: SandboxProvider, base: SandboxSpec, wanted: Mapping[str, tuple[str, Sequence[str]]]
) -> dict[str, list[str]]:
    """What each session's image lacks of its `requires` (session -> (image, requires)),
    for the sessions that lack something; one probe sandbox per image."""
    by_image: dict[str, dict[str, Sequence[str]]] = {}
    for name, (image, requires) in wanted.items():
        if requires:
            by_image.setdefault(image, {})[name] = requires
    found = {}
    for image, sessions in by_image.items():
        box = await provider.create(msgspec.structs.replace(base, image=image))
        try:
            for name, requires in sessions.items():
                missing = await missing_requirements(box, requires)
                if missing:
                    found[name] = missing
        finally:
            await box.close()
    return found


def units_of(sessions: dict[str, Session]) -> list[Unit]:
    units = []
    for name, spec in sessions.items():
        if isinstance(spec, Suite):
            units += [
                Unit(f"{SUITE}/{sub.name}", SUITE, distractor=sub.distractor) for sub in spec.cases
            ]
        else:
            units.append(Unit(name, name, judge=spec.judge is not None))
    return units


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


Prepared = tuple[Plan, Path, Skill, dict[str, Session]]


def find_incumbent(opts: EvalOptions, skill: Skill, version: str) -> Incumbent | None:
    """The team repo's newest receipted version whose bytes differ from the candidate's."""
    if not opts.team:
        return None
    try:
        found = incumbent(Path(opts.team), skill.name, version)
    except TeamError as exc:
        raise EvalError(f"--team {opts.team}: {exc}") from None
    return Incumbent(found.name, found.digest, found.path) if found else None


def library_of(opts: EvalOptions, skill: Skill) -> Library | None:
    """--with-library: the library's skills other than the one under test (by name: another
    copy or version of it is left out too), each with its digest; EvalError when the folder
    is no library root, a child is not a valid skill, or nothing is left beside the skill."""
    if opts.library is None:
        return None
    root = Path(opts.library)
    if not is_library_root(root):
        raise EvalError(
            f"--with-library {root}: not a library root (a folder whose sub-folders each hold "
            "a SKILL.md); name the folder that holds the skills"
        )
    siblings = []
    for child in root_children(root):
        try:
            other = read_skill(child)
            version = digest(child)
        except SpecError as exc:
            raise EvalError(
                f"--with-library {root}: {child.name} is not a valid skill "
                f"({exc.problems[0].message}); fix it (skillbench check {child}) or move it out"
            ) from None
        if other.name != skill.name:
            siblings.append(LibrarySkill(other.name, str(child.resolve()), version))
    if not siblings:
        raise EvalError(
            f"--with-library {root}: holds no skill besides {skill.name}; the library arm "
            "needs other skills for it to compete with"
        )
    key = hashlib.sha256(msgspec.json.encode([(s.name, s.digest) for s in siblings]))
    return Library(str(root.resolve()), tuple(siblings), "sha256:" + key.hexdigest())


def prepare(opts: EvalOptions, log: Callable[[str], None] = lambda _: None) -> Prepared:
    """Validate, then make a new run folder with its plan (or reopen one for --resume).
    The agent's image is built here on first use (`log` tells the user)."""
    skill_dir = Path(opts.skill_dir)
    skill, assets = validated(skill_dir, opts.evals)
    settings = opts.settings
    check_credentials(settings.model, settings.judge_model or settings.model)
    if settings.sign.key and not Path(settings.sign.key).is_file():
        # found now, not after the run: the receipt is signed when the run ends
        raise EvalError(f"[sign] key = {settings.sign.key}: no such key file")
    try:
        agent = make_agent(settings.agent, **settings.agents.get(settings.agent, {}))
        agent.check_model(settings.model)
    except AgentError as exc:
        raise EvalError(f"--agent {settings.agent}: {exc}") from None
    if opts.max_cost is not None:
        for ref in {settings.model, settings.judge_model or settings.model}:
            if price_for(ref, settings.prices) is None:
                raise EvalError(
                    f"--max-cost: no price is known for {ref}, so its spend cannot "
                    f'be counted; add [prices."{ref}"] with input and output (USD '
                    "per million tokens) to skillbench.toml"
                )
    try:
        images_of(opts.settings.sandbox.provider).ensure(opts.image, log)
    except ImageBuildError as exc:
        raise EvalError(str(exc)) from None
    base = opts.image
    try:
        opts.image = agent.image(base, log)  # the arms (and their checkers) run there
    except AgentError as exc:
        raise EvalError(f"--agent {settings.agent}: {exc}") from None
    to_run = sessions_of(assets, opts.case)
    opts.case_images, opts.unavailable = build_case_images(to_run, base, agent, log)
    for name, spec in to_run.items():  # a foreign case none of whose graders can run here
        if spec.not_graded and not spec.checks and not spec.judge and expects_skill(spec):
            opts.unavailable[name] = "no grader of it can run here: " + "; ".join(spec.not_graded)
    runnable(to_run, opts.unavailable)
    for name, why in opts.unavailable.items():  # the others still run and score
        log(f"skipping {name}: {why}")
    if settings.agent == "builtin":
        for name, session in sessions_of(assets, opts.case).items():
            if session.mcp_servers:
                servers = ", ".join(s.name for s in session.mcp_servers)
                log(
                    f"note: {name}: its MCP servers ({servers}) go only to an agent CLI "
                    "(--agent claude-code, codex, opencode, gemini-cli or copilot); the builtin "
                    "agent has no MCP client"
                )
    version, assets_digest = digest(skill_dir), assets_digest_of(skill_dir, opts.evals)
    if opts.resume:
        run_dir = Path(opts.resume)
        try:
            plan = load_json(run_dir / "plan.json", Plan)
        except (OSError, msgspec.DecodeError) as exc:
            raise EvalError(f"--resume {run_dir}: no readable plan.json ({exc})") from None
        changed = [
            what
            for what, old, new in (
                ("the skill's files (version)", plan.version, version),
                ("the eval assets", plan.assets_digest, assets_digest),
                ("the model", plan.model, settings.model),
                ("the judge model", plan.judge_model, settings.judge_model),
                ("the agent", plan.agent, settings.agent),
                ("min-net-lift", plan.min_net_lift, settings.min_net_lift),
                ("the model endpoints", plan.endpoints, endpoints_of(settings)),
                ("the incumbent", plan.incumbent, find_incumbent(opts, skill, version)),
                ("the library (--with-library)", plan.library, library_of(opts, skill)),
                # the grader the run started with is kept unless another one is asked for
                ("the grader (--grader)", plan.grader_model, opts.grader or plan.grader_model),
                ("--grader-runs", plan.grader_runs, opts.grader_runs or plan.grader_runs),
            )
            if old != new
        ]
        if {"the model", "the judge model"} & set(changed):  # another model says it already
            changed = [c for c in changed if c != "the model endpoints"]
        if changed:
            raise EvalError(
                f"--resume {run_dir}: refused, {' and '.join(changed)} changed since "
                "the run started; start a new run instead"
            )
        sessions = sessions_of(assets, plan.case_filter)
        return plan, run_dir, skill, sessions
    sessions = sessions_of(assets, opts.case)
    found = find_incumbent(opts, skill, version)
    library = library_of(opts, skill)
    run_id = new_run_id()
    run_dir = run_folder(skill_dir, opts.out, run_id)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvalError(
            f"--out {run_dir}: cannot make the run folder there "
            f"({exc.strerror or exc}); choose another --out"
        ) from None
    if (run_dir / "journal.jsonl").exists():
        raise EvalError(
            f"--out {run_dir}: already holds a run; use --resume {run_dir} to continue it"
        )
    plan = Plan(
        run_id=run_id,
        skill=skill.name,
        skill_dir=str(skill_dir.resolve()),
        version=version,
        assets_digest=assets_digest,
        model=settings.model,
        judge_model=settings.judge_model or settings.model,
        grader_model=opts.grader,
        grader_runs=opts.grader_runs or 1,
        k=settings.k,
        min_net_lift=settings.min_net_lift,
        seed=opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31),
        arms=[BASELINE, CANDIDATE] + ([INCUMBENT] if found else []) + ([AA] if opts.aa else []),
        opponents=[BASELINE] + ([INCUMBENT] if found else []),
        sessions=list(sessions),
        incumbent=found,
        team=str(Path(opts.team).resolve()) if opts.team else None,
        units=units_of(sessions),
        engine_version=__version__,
        agent=settings.agent,
        agent_version=agent.version(),
        endpoints=endpoints_of(settings),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        case_filter=opts.case,
        evals=list(opts.evals),
        library=library,
        sequential=_rule(len(sessions), settings) if settings.stats.sequential else None,
    )
    try:
        (run_dir / "plan.json").write_bytes(msgspec.json.format(msgspec.json.encode(plan)))
    except OSError as exc:
        raise EvalError(
            f"--out {run_dir}: cannot write the run folder ({exc.strerror or exc});"
            " choose another --out"
        ) from None
    return plan, run_dir, skill, sessions


def endpoints_of(settings: Settings) -> dict[str, Endpoint]:
    """Where the agent and the judge models are reached from this environment."""
    judge = settings.judge_model or settings.model
    return {"agent": endpoint(settings.model), "judge": endpoint(judge)}


def run_folder(skill_dir: Path, out: str | None, run_id: str, kind: str = "runs") -> Path:
    """Where a new run goes: `--out`, else `.skillbench/<kind>/<run_id>` under the current
    folder, or beside the skill when the current folder is inside it. Never inside the skill:
    later arms would see the journal (the checks' text) and other arms' transcripts."""
    skill = skill_dir.resolve()
    if out is not None:
        if Path(out).resolve().is_relative_to(skill):
            raise EvalError(
                f"--out {out}: is inside the skill under test ({skill_dir}), where the agent "
                "could read it; choose a folder outside the skill"
            )
        if Path(out).exists() and not Path(out).is_dir():
            raise EvalError(f"--out {out}: is a file, not a folder; name a new or empty folder")
        return Path(out)
    base = Path.cwd()
    if base.resolve().is_relative_to(skill):
        base = skill.parent
    return base / RUNS_DIR / kind / run_id


def check_credentials(*refs: str) -> None:
    """Refuse early, before any sandbox starts, a model that cannot be reached: an unknown
    provider or script, or a provider without its API key."""
    for ref in refs:
        try:
            var = parse_model(ref).key_var
        except ModelRefError as exc:
            raise EvalError(str(exc)) from None
        if var and not os.environ.get(var):
            raise EvalError(
                f"{var} is not set, and the model {ref} needs it: export it, or "
                "use --model scripted/<name> for an offline run"
            )
