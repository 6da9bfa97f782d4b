"""Fill in missing eval kinds with generated ones (docs/formats.md), for `eval` and `skillbench
gen`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from skillbench.config import Settings, sandbox_spec
from skillbench.engine.generate import (
    Generated,
    GenerationFailed,
    SeedCheck,
    generate_cases,
    generate_triggers,
    write_new,
)
from skillbench.engine.plan import EvalError, check_credentials, setup_case
from skillbench.evals import load_assets, load_case
from skillbench.evals.skills import catalog, read_skill
from skillbench.evals.triggers_file import trigger_files
from skillbench.models import parse_model, resolve_model
from skillbench.models.ledger import MeteredModel, RunLedger
from skillbench.sandbox import images_of, make_provider
from skillbench.sandbox.base import SandboxError, SandboxProvider, SandboxSpec
from skillbench.sandbox.stage import SetupFailed, stage_arm

KINDS = ("cases", "triggers")


def missing_kinds(skill_dir: Path) -> list[str]:
    """The kinds a skill lacks: cases (no case and no suite), triggers (no triggers file)."""
    assets = load_assets(skill_dir)
    evals = skill_dir / "evals"
    missing = []
    if not assets.cases and not (evals / "suite.yaml").exists() and not _case_files(evals):
        missing.append("cases")
    if not trigger_files(skill_dir):
        missing.append("triggers")
    return missing


def _case_files(evals: Path) -> list[Path]:
    folder = evals / "cases"
    return [p for p in folder.iterdir() if p.suffix in (".yaml", ".yml")] if folder.is_dir() else []


async def fill_missing(
    skill_dir: Path,
    settings: Settings,
    kinds: Sequence[str],
    log: Callable[[str], None],
    ceiling: float | None = None,
) -> float:
    """Generate each kind in `kinds` that the skill lacks; existing files are left untouched.
    Every call reserves and settles in a ledger under `ceiling` (the run's --max-cost; the run
    starts its own from what this spent). Returns what the calls cost (USD; 0 when the price
    is unknown)."""
    skill = read_skill(skill_dir)
    ledger = RunLedger(ceiling)
    model = MeteredModel(
        resolve_model(
            settings.model, max_retries=settings.max_retries, timeout=settings.request_timeout
        ),
        ledger,
        settings.prices,
        "generation",
    )
    lacking = missing_kinds(skill_dir)
    provider: SandboxProvider | None = None
    try:
        for kind in kinds:
            if kind not in lacking:
                log(f"{skill_dir}: {kind} already exist, left untouched")
                continue
            if kind == "triggers":
                siblings = catalog(skill_dir.resolve().parent, include=skill)
                made = await generate_triggers(model, skill, siblings)
            else:
                provider = provider or make_provider(settings.sandbox.provider)
                spec = sandbox_spec(settings, images_of(settings.sandbox.provider).sandbox_image)
                made = await generate_cases(model, skill, _dry_run(provider, spec))
            _write(skill_dir, made, settings.model, log)
    finally:
        await model.aclose()
        if provider is not None:
            await provider.aclose()
    return ledger.snapshot().spent


def _dry_run(provider: SandboxProvider, spec: SandboxSpec) -> SeedCheck:
    async def seed(case_file: Path, skill_dir: Path) -> str | None:
        case, _ = load_case(case_file, skill_dir)
        try:
            arm = await stage_arm(
                provider, spec, case, {skill_dir.name: skill_dir}, case=setup_case(case, skill_dir)
            )
        except (SetupFailed, SandboxError) as exc:
            return str(exc)
        await arm.close()
        return None

    return seed


def _write(skill_dir: Path, made: Generated, model: str, log: Callable[[str], None]) -> None:
    for rel, text in made.files.items():
        if write_new(skill_dir / rel, text):
            log(
                f"generated {skill_dir / rel} with {model} ({made.calls} call"
                f"{'s' * (made.calls != 1)}); review it before trusting it"
            )
        else:
            log(f"{skill_dir / rel} exists, left untouched")


def generate_missing(
    skill_dir: Path,
    settings: Settings,
    kinds: Sequence[str],
    log: Callable[[str], None],
    *,
    only_missing: bool,
    ceiling: float | None = None,
) -> float:
    """Write the evals of `kinds` with the model (only those the skill lacks, when
    `only_missing`); return what the calls cost. EvalError when that cannot be done. A
    scripted driver cannot write evals: asked explicitly, that is an error; implicitly (an
    eval filling gaps), generation is skipped with a note."""
    if only_missing:
        kinds = [k for k in kinds if k in missing_kinds(skill_dir)]
        if not kinds:
            return 0.0
    if parse_model(settings.model).scripted:
        why = f"{settings.model} is a fixed script, not a model, and cannot write evals"
        if not only_missing:
            raise EvalError(f"{why}; use a real --model")
        log(f"note: {why}; not generating {' or '.join(kinds)} (write them, or use a real --model)")
        return 0.0
    check_credentials(settings.model)
    try:
        return asyncio.run(fill_missing(skill_dir, settings, kinds, log, ceiling))
    except GenerationFailed as exc:
        raise EvalError(
            f"generating evals failed: {exc}; write them by hand, or pass --no-gen"
        ) from None
