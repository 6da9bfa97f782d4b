"""Receipts (design §6): one per eval run, naming the exact skill bytes it measured.

Written into the run folder and into a local store keyed by digest:
`$SKILLBENCH_HOME/receipts/<skill>/<digest hex>/<run_id>.json` (default `~/.skillbench`).
Every free-text field is scrubbed of credentials before it is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from skillbench.scrub import scrub_obj
from skillbench.verdict import MIN_NET_LIFT

SCHEMA_VERSION = 2  # 2: expected/scored rows say what was measured; complete, agent, driver


class Provenance(msgspec.Struct, kw_only=True):
    engine_version: str
    models: dict[str, str]  # agent, judge
    k: int
    seed: int
    arms: dict[str, list[str]]  # arm -> the skills it staged, as name@digest
    created_at: str


class Receipt(msgspec.Struct, kw_only=True):
    """What a run established about one version of a skill."""

    schema_version: int = SCHEMA_VERSION
    skill: str
    digest: str
    run_id: str
    verdict: str  # PASS | NEUTRAL | FAIL | INCONCLUSIVE, or NONE when nothing was scored
    why: str
    expected_rows: int
    scored_rows: int
    # Every row that could be measured was (cases skipped for a tool the image lacks aside),
    # and no --max-cost stop. Receipts older than schema 2 read as incomplete.
    complete: bool = False
    stopped: str | None = None
    agent: str = ""  # what ran the arms: builtin, claude-code, codex
    agent_version: str = ""
    models: dict[str, str] = {}  # agent, judge
    driver: str = ""  # "model", or "scripted" (a fixed script: shows the pipeline, not the skill)
    comparisons: dict[str, Any]
    stats: dict[str, Any] = {}  # per opponent: decided, needed, underpowered, intervals
    rows: list[dict[str, Any]]
    triggers: dict[str, Any] | None
    efficiency: dict[str, Any]
    spend_usd: float = 0.0  # every call of the run: sessions, judge, triggers, generation
    reused: dict[str, Any] | None = None  # baseline/incumbent sessions taken from earlier runs
    noise_floor: dict[str, Any] | None = None  # eval --aa: flips between two baseline arms
    min_net_lift: float = MIN_NET_LIFT  # the practical floor its verdict used (design §16)
    provenance: Provenance


def home() -> Path:
    return Path(os.environ.get("SKILLBENCH_HOME") or Path.home() / ".skillbench")


def store_dir(skill: str, digest: str) -> Path:
    return home() / "receipts" / skill / digest.removeprefix("sha256:")


def encode(receipt: Receipt) -> bytes:
    return msgspec.json.format(msgspec.json.encode(scrub_obj(msgspec.to_builtins(receipt))))


def write_receipt(receipt: Receipt, run_dir: Path) -> Path:
    """Write the receipt into the run folder and the local store; return the store path."""
    data = encode(receipt)
    (run_dir / "receipt.json").write_bytes(data)
    folder = store_dir(receipt.skill, receipt.digest)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{receipt.run_id}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def read_receipt(path: Path) -> Receipt:
    return msgspec.json.decode(path.read_bytes(), type=Receipt)


def local_receipts(skill: str, digest: str | None = None) -> list[tuple[Path, Receipt]]:
    """Receipts in the local store for a skill (one version, or all), oldest first."""
    base = home() / "receipts" / skill
    folders = (
        [base / digest.removeprefix("sha256:")]
        if digest
        else (sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else [])
    )
    found = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                found.append((path, read_receipt(path)))
            except (OSError, msgspec.DecodeError):
                continue
    return sorted(found, key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id))
