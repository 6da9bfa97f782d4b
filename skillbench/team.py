"""The team repo (design §6): published versions, their evals and receipts, and the gate.

skills/<name>/v<N>/**            immutable: identical bytes reuse the version
skills/<name>/versions.json      {"v1": "sha256:..."}: what each version folder must hash to
skills/<name>/evals/**           mutable: files are added or modified, never removed
evals/<name>/v<N>/<run_id>.json  receipts
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import msgspec

from skillbench.receipts import Receipt, local_receipts, read_receipt
from skillbench.skills import Skill, copy_files, digest, read_skill, skill_files
from skillbench.verdict import INCONCLUSIVE, NONE, Row, decide

_VERSION = re.compile(r"^v([1-9][0-9]*)$")


class TeamError(Exception):
    """The team repo refuses the operation; the message says why and what to do."""


class Version(msgspec.Struct, frozen=True):
    name: str  # v3
    number: int
    path: str
    digest: str


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise TeamError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout


def check_repo(repo: Path) -> None:
    """A git work tree with no uncommitted changes."""
    if not (repo / ".git").exists():
        raise TeamError(f"{repo}: not a git work tree (run `git init` there first)")
    dirty = _git(repo, "status", "--porcelain")
    if dirty.strip():
        raise TeamError(f"{repo}: has uncommitted changes; commit or stash them first:\n{dirty}")


def versions(repo: Path, name: str) -> list[Version]:
    """The published versions of a skill, checked against versions.json (oldest first)."""
    folder = repo / "skills" / name
    index_path = folder / "versions.json"
    index: dict[str, str] = json.loads(index_path.read_text()) if index_path.exists() else {}
    found = []
    for child in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = _VERSION.match(child.name)
        if not match or not child.is_dir():
            continue
        actual = digest(child)
        if index.get(child.name) != actual:
            raise TeamError(
                f"{child}: its files no longer match the digest recorded in {index_path} "
                "(edited by hand?); published versions are immutable, restore it with "
                f"`git -C {repo} checkout -- {child.relative_to(repo)}`"
            )
        found.append(Version(child.name, int(match.group(1)), str(child), actual))
    return sorted(found, key=lambda v: v.number)


def receipts_of(repo: Path, name: str, version: str) -> list[Receipt]:
    folder = repo / "evals" / name / version
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(read_receipt(path))
        except (OSError, msgspec.DecodeError):
            continue
    return sorted(out, key=lambda r: (r.provenance.created_at, r.run_id))


def incumbent(repo: Path, name: str, current: str) -> Version | None:
    """The newest published version with a receipt whose bytes differ from `current`."""
    for version in reversed(versions(repo, name)):
        if version.digest != current and receipts_of(repo, name, version.name):
            return version
    return None


def publish(skill_dir: Path, repo: Path) -> str:
    """Publish the skill's bytes, its evals and its local receipts; one commit. Returns a
    one-line account of what happened."""
    check_repo(repo)
    skill = read_skill(skill_dir)
    current = digest(skill_dir)
    existing = versions(repo, skill.name)
    same = next((v for v in existing if v.digest == current), None)
    folder = repo / "skills" / skill.name
    if same is None:
        number = max((v.number for v in existing), default=0) + 1
        target = folder / f"v{number}"
        copy_files(skill_files(skill_dir), target)
        index_path = folder / "versions.json"
        index = json.loads(index_path.read_text()) if index_path.exists() else {}
        index[target.name] = current
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
        version = target.name
    else:
        version = same.name
    evals = skill_dir / "evals"
    if evals.is_dir():  # add or modify, never remove
        shutil.copytree(evals, folder / "evals", dirs_exist_ok=True, symlinks=True)
    attached = left_out = 0
    for path, receipt in local_receipts(skill.name, current):
        if not measured(receipt) or receipt.driver != "model":
            left_out += 1  # a scripted or empty run says nothing a team should keep
            continue
        dest = repo / "evals" / skill.name / version / path.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            attached += 1
    paths = [p for p in (f"skills/{skill.name}", f"evals/{skill.name}") if (repo / p).exists()]
    _git(repo, "add", "-A", "--", *paths)
    if not _git(repo, "status", "--porcelain").strip():
        return f"{skill.name} {version} ({current[:19]}) is already published; nothing to do"
    what = "new version" if same is None else "same bytes as the published version"
    message = (
        f"publish {skill.name} {version} ({current[:19]})\n\n{what}; "
        f"{attached} receipt{'s' * (attached != 1)} attached"
    )
    _git(repo, "commit", "-q", "-m", message)
    left = f" ({left_out} scripted or unscored left out)" if left_out else ""
    return f"published {skill.name} {version} ({current[:19]}): {what}, {attached} receipt(s){left}"


# --- the gate -------------------------------------------------------------------------------


class Policy(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a receipt must show for the gate to pass."""

    require: str = "NEUTRAL"  # the weakest verdict vs baseline allowed: PASS or NEUTRAL
    allow_incumbent_fail: bool = False
    allow_partial: bool = False  # accept a receipt whose run did not score every row
    require_agent: str | None = None  # e.g. "claude-code": only measurements by that agent
    require_power: bool = False  # refuse a verdict resting on too few decided comparisons
    allow_inconclusive: bool = False  # accept INCONCLUSIVE (too few decided units) vs baseline
    trigger_method: str | None = None  # "agent" (real routing) or "catalog": how triggers
    # must have been measured for min-recall / min-precision to count
    min_recall: float | None = None
    min_precision: float | None = None


def load_policy(repo: Path | None, flags: dict[str, Any]) -> Policy:
    """Policy from the team repo's [tool.skillbench.gate] / skillbench.toml [gate], then flags."""
    import tomllib

    data: dict[str, Any] = {}
    if repo is not None:
        for name, table in (
            ("pyproject.toml", ("tool", "skillbench", "gate")),
            ("skillbench.toml", ("gate",)),
        ):
            path = repo / name
            if path.is_file():
                found: Any = tomllib.loads(path.read_text())
                for key in table:
                    found = found.get(key, {}) if isinstance(found, dict) else {}
                data.update({k.replace("-", "_"): v for k, v in found.items()})
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        policy = msgspec.convert(data, Policy)
    except msgspec.ValidationError as exc:
        raise TeamError(f"gate policy: {exc}") from None
    if policy.require not in ("PASS", "NEUTRAL"):
        raise TeamError("gate policy: `require` is PASS or NEUTRAL")
    if policy.trigger_method not in (None, "agent", "catalog"):
        raise TeamError("gate policy: `trigger-method` is agent or catalog")
    return policy


class GateResult(msgspec.Struct, frozen=True):
    passed: bool
    reason: str
    receipt: str | None = None


def skill_at(folder: Path) -> Skill:
    """A skill folder, or a published version folder `skills/<name>/v<N>/`."""
    if _VERSION.match(folder.resolve().name):
        return read_skill(folder, folder_name=folder.resolve().parent.name)
    return read_skill(folder)


def known_receipts(name: str, repo: Path | None) -> list[tuple[str, Receipt]]:
    """Every receipt for a skill, from the team repo (if any) and the local store, oldest
    first, each with where it lives."""
    found: list[tuple[str, Receipt]] = []
    if repo is not None:
        for folder in sorted((repo / "evals" / name).glob("v*")):
            for path in sorted(folder.glob("*.json")):
                try:
                    found.append((str(path), read_receipt(path)))
                except (OSError, msgspec.DecodeError):
                    continue
    found += [(str(p), r) for p, r in local_receipts(name)]
    return sorted(found, key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id))


def measured(r: Receipt) -> bool:
    """The receipt scored something (its verdict is not NONE)."""
    return r.scored_rows > 0 and r.verdict != NONE


def gate(skill_dir: Path, repo: Path | None, policy: Policy) -> GateResult:
    """Does the newest receipt that measured these exact bytes meet the policy?

    A later run that scored nothing (NONE) never shadows an earlier measured one; the
    receipt used must come from a real model (not the scripted driver) and be complete
    unless the policy allows partial runs.
    """
    current = digest(skill_dir)
    found = [pr for pr in known_receipts(skill_at(skill_dir).name, repo) if pr[1].digest == current]
    if not found:
        return GateResult(
            False, f"no receipt for {current[:19]}: run `skillbench eval {skill_dir}` first"
        )
    useful = [pr for pr in found if measured(pr[1])]
    if not useful:
        where, r = found[-1]
        why = (
            f"no receipt for {current[:19]} measured anything: the newest (run {r.run_id}) "
            f"scored {r.scored_rows}/{r.expected_rows} rows (verdict NONE: {r.why}); run "
            "`skillbench eval` again"
        )
        return GateResult(False, why, where)
    where, r = useful[-1]
    if r.driver != "model":
        what = (
            f"the scripted driver ({r.models.get('agent') or r.provenance.models.get('agent')}"
            "), a fixed script, not a model: it shows the pipeline works, not that the "
            "skill helps"
            if r.driver == "scripted"
            else "a skillbench that did not record its driver"
        )
        why = (
            f"the newest measured receipt (run {r.run_id}) comes from {what}; run "
            "`skillbench eval` with a real --model"
        )
        return GateResult(False, why, where)
    if not r.complete and not policy.allow_partial:
        stop = f", {r.stopped}" if r.stopped else ""
        why = (
            f"the newest measured receipt (run {r.run_id}) is incomplete: {r.scored_rows}/"
            f"{r.expected_rows} rows scored{stop}; resume or rerun the eval, or set "
            "allow-partial = true"
        )
        return GateResult(False, why, where)
    reasons = []
    if policy.require_agent and r.agent != policy.require_agent:
        reasons.append(
            f"measured with agent {r.agent or 'unknown'} (policy requires {policy.require_agent})"
        )
    power = r.stats.get("baseline") or {}
    if policy.require_power and power.get("underpowered", True):
        needs = power.get("needed")
        reasons.append(
            f"underpowered: {power.get('decided', 0)} decided comparisons, "
            f"{needs if needs is not None else 'more than any run'} needed for "
            "p <= 0.05"
        )
    if r.verdict == INCONCLUSIVE and not policy.allow_inconclusive:
        units = (r.stats.get("baseline") or {}).get("decided", 0)
        reasons.append(
            f"verdict vs baseline is INCONCLUSIVE: {units} decided unit(s), and no verdict "
            "rests on fewer than 5; add cases (or --k for flaky ones), or set "
            "allow-inconclusive = true"
        )
    elif r.verdict == "FAIL" or (policy.require == "PASS" and r.verdict != "PASS"):
        reasons.append(f"verdict vs baseline is {r.verdict} (policy requires {policy.require})")
    try:
        rows = msgspec.convert(r.rows, list[Row])
    except msgspec.ValidationError as exc:
        return GateResult(False, f"{where}: its rows do not parse ({exc}); run the eval again")
    lost = decide(rows, "incumbent", r.min_net_lift) == "FAIL"
    if lost and not policy.allow_incumbent_fail:
        reasons.append("FAIL vs the incumbent (the published version does better)")
    t = r.triggers or {}
    method = str(t.get("method") or "catalog call")  # receipts before methods: the catalog
    if (
        policy.trigger_method
        and r.triggers is not None
        and not method.startswith(policy.trigger_method)
    ):
        reasons.append(
            f"triggers measured by {method} (policy requires trigger-method = "
            f'"{policy.trigger_method}")'
        )
    if t.get("invalid"):
        reasons.append(f"the trigger measurement is invalid: {t['invalid']}")
    for key, minimum in (("recall", policy.min_recall), ("precision", policy.min_precision)):
        if minimum is None:
            continue
        value = t.get(key)
        if value is None or value < minimum:
            shown = "n/a" if value is None else f"{value:.2f}"
            reasons.append(f"trigger {key} {shown} is under {minimum:.2f}")
    if reasons:
        return GateResult(False, "; ".join(reasons), where)
    return GateResult(
        True, f"{r.verdict} (run {r.run_id}, {r.scored_rows}/{r.expected_rows} rows scored)", where
    )
