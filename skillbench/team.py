"""The team repo (design §6): published versions, their evals and receipts, and the gate.

skills/<name>/v<N>/**            immutable: identical bytes reuse the version
skills/<name>/versions.json      {"v1": "sha256:..."}: what each version folder must hash to
skills/<name>/evals/**           mutable: files are added or modified, never removed
evals/<name>/v<N>/<run_id>.json  receipts
.skillbench/allowed_signers      optional: who may sign receipts (git's allowed_signers format);
                                 when present the gate accepts only receipts signed by them
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from skillbench.engine.score import RowSummary, derive
from skillbench.errors import SkillbenchError
from skillbench.inputs import MAX_JSON, InputError, load_json, load_toml, read_capped
from skillbench.models import PROVIDER_ENDPOINTS, origin
from skillbench.receipts import (
    Receipt,
    inconsistency,
    local_receipts,
    read_receipt,
    signed,
    signed_message,
)
from skillbench.signing import SigningError, verify
from skillbench.skills import Skill, copy_files, digest, read_skill, skill_files
from skillbench.verdict import INCONCLUSIVE, NONE

_VERSION = re.compile(r"^v([1-9][0-9]*)$")
SIGNERS = Path(".skillbench/allowed_signers")  # in the team repo
PUBLISH_WAIT = 120.0  # seconds a publish waits for another one in the same team repo


class TeamError(SkillbenchError):
    """The team repo refuses the operation; the message says why and what to do."""


class Version(msgspec.Struct, frozen=True):
    name: str  # v3
    number: int
    path: str
    digest: str


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        said = "; ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
        raise TeamError(f"git {args[0]} failed in {repo}: {said}")
    return done.stdout


def _index(path: Path) -> dict[str, str]:
    try:
        return load_json(path, dict[str, str]) if path.exists() else {}
    except InputError as exc:
        raise TeamError(f"{exc}; restore it from git") from None


def check_repo(repo: Path) -> None:
    """A git work tree with no uncommitted changes."""
    if not (repo / ".git").exists():
        raise TeamError(f"{repo}: not a git work tree (run `git init` there first)")
    dirty = _git(repo, "status", "--porcelain").splitlines()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:3]) + (", ..." if len(dirty) > 3 else "")
        raise TeamError(f"{repo}: has uncommitted changes ({shown}); commit or stash them first")


def versions(repo: Path, name: str) -> list[Version]:
    """The published versions of a skill, checked against versions.json (oldest first)."""
    folder = repo / "skills" / name
    index_path = folder / "versions.json"
    index = _index(index_path)
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


@contextlib.contextmanager
def _locked(repo: Path, wait: float = PUBLISH_WAIT) -> Iterator[None]:
    """One publish at a time in a team repo: an flock on a file in its git folder (never in
    the work tree, so never committed); a second publish waits its turn."""
    if not (repo / ".git").exists():
        check_repo(repo)  # (says it is not a git work tree)
    git_dir = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
    with (git_dir / "skillbench-publish.lock").open("a") as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TeamError(
                        f"{repo}: another publish has held it for {wait:.0f} s; try again "
                        "when that one is done"
                    ) from None
                time.sleep(0.05)
        yield  # (closing the file releases the lock)


def _restore(repo: Path, paths: tuple[str, ...]) -> None:
    """Put the skill's folders back as HEAD has them (the tree was clean when publish began):
    unstage, restore what is tracked, remove what is not."""
    present = [p for p in paths if (repo / p).exists()]
    if not present:
        return
    _git(repo, "reset", "-q", "--", *present)
    tracked = [p for p in present if _git(repo, "ls-files", "--", p).strip()]
    if tracked:
        _git(repo, "checkout", "-q", "--", *tracked)
    _git(repo, "clean", "-fdq", "--", *present)
    for path in present:  # and the skills/ or evals/ folder made for it, if now empty
        with contextlib.suppress(OSError):
            (repo / path).parent.rmdir()


def publish(skill_dir: Path, repo: Path, sign_key: Path | None = None) -> str:
    """Publish the skill's bytes, its evals and its local receipts; one commit. With
    `sign_key`, every receipt attached unsigned is signed with it. Returns a one-line account
    of what happened. Holds the repo's lock; a failure leaves it clean."""
    with _locked(repo):
        check_repo(repo)
        skill = read_skill(skill_dir)
        try:
            return _publish(skill_dir, repo, skill, sign_key)
        except BaseException as exc:
            try:
                _restore(repo, (f"skills/{skill.name}", f"evals/{skill.name}"))
            except TeamError as also:
                raise TeamError(f"{exc}; restoring the team repo failed too: {also}") from None
            if isinstance(exc, TeamError):
                raise TeamError(f"{exc}; nothing was published") from None
            raise


def _publish(skill_dir: Path, repo: Path, skill: Skill, sign_key: Path | None) -> str:
    current = digest(skill_dir)
    existing = versions(repo, skill.name)
    same = next((v for v in existing if v.digest == current), None)
    version = same.name if same else f"v{max((v.number for v in existing), default=0) + 1}"
    # every receipt is read, checked and signed before anything is written: a key that
    # cannot sign leaves the repo as it was
    attach: list[tuple[Path, bytes]] = []
    left_out = underived = signed_count = 0
    for path, receipt in local_receipts(skill.name, current):
        if not measured(receipt) or receipt.driver != "model":
            left_out += 1  # a scripted or empty run says nothing a team should keep
            continue
        dest = repo / "evals" / skill.name / version / path.name
        if dest.exists():
            continue
        if inconsistency(receipt) is not None:
            underived += 1  # the gate would refuse it; a key must never vouch for it
            continue
        data = path.read_bytes()
        if sign_key is not None and signed_message(data)[1] is None:
            try:
                data = signed(data, sign_key)
            except SigningError as exc:
                raise TeamError(f"--sign-key: {exc}") from None
            signed_count += 1
        attach.append((dest, data))
    folder = repo / "skills" / skill.name
    if same is None:
        target = folder / version
        copy_files(skill_files(skill_dir), target)
        index_path = folder / "versions.json"
        index = _index(index_path)
        index[target.name] = current
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    evals = skill_dir / "evals"
    if evals.is_dir():  # add or modify, never remove
        shutil.copytree(evals, folder / "evals", dirs_exist_ok=True, symlinks=True)
    for dest, data in attach:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    attached = len(attach)
    paths = [p for p in (f"skills/{skill.name}", f"evals/{skill.name}") if (repo / p).exists()]
    _git(repo, "add", "-A", "--", *paths)
    if not _git(repo, "status", "--porcelain").strip():
        return f"{skill.name} {version} ({current[:19]}) is already published; nothing to do"
    what = "new version" if same is None else "same bytes as the published version"
    signing = f", {signed_count} signed" if signed_count else ""
    message = (
        f"publish {skill.name} {version} ({current[:19]})\n\n{what}; "
        f"{attached} receipt{'s' * (attached != 1)} attached{signing}"
    )
    _git(repo, "commit", "-q", "-m", message)
    notes = [f"{left_out} scripted or unscored"] if left_out else []
    notes += [f"{underived} that do not re-derive"] if underived else []
    left = f" ({' and '.join(notes)} left out)" if notes else ""
    return (
        f"published {skill.name} {version} ({current[:19]}): {what}, {attached} receipt(s)"
        f"{signing}{left}"
    )


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
    # only receipts signed by a key in the team repo's .skillbench/allowed_signers count;
    # None: required exactly when that file exists
    require_signed: bool | None = None
    # where the models may have been reached (scheme://host[:port]): the providers' own by
    # default, so a run against a local or stub server is refused unless listed
    allow_endpoints: list[str] = msgspec.field(default_factory=lambda: list(PROVIDER_ENDPOINTS))


def load_policy(repo: Path | None, flags: dict[str, Any]) -> Policy:
    """Policy from the team repo's [tool.skillbench.gate] / skillbench.toml [gate], then flags."""
    data: dict[str, Any] = {}
    if repo is not None:
        for name, table in (
            ("pyproject.toml", ("tool", "skillbench", "gate")),
            ("skillbench.toml", ("gate",)),
        ):
            path = repo / name
            if path.is_file():
                try:
                    found: Any = load_toml(path)
                except InputError as exc:
                    raise TeamError(str(exc)) from None
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
    for entry in policy.allow_endpoints:
        if origin(entry) == "unknown":
            raise TeamError(
                f"gate policy: allow-endpoints entry {entry!r} is not a URL; write it like "
                "http://127.0.0.1:8080"
            )
    policy.allow_endpoints = [origin(e) for e in policy.allow_endpoints]
    return policy


class GateResult(msgspec.Struct, frozen=True):
    passed: bool
    reason: str
    receipt: str | None = None


def signed_receipt(path: str, signers: Path) -> tuple[Receipt, str]:
    """The receipt file at `path` as its signer signed it, and the principal in `signers`
    whose key did; SigningError saying why when there is none. The receipt is read from the
    signed bytes themselves, so the gate judges exactly what was signed, whatever else the
    file holds (a key written twice, say)."""
    try:
        message, signature = signed_message(read_capped(Path(path), MAX_JSON))
    except (OSError, ValueError, RecursionError) as exc:
        raise SigningError(f"cannot be read ({exc})") from None
    if signature is None:
        raise SigningError("is not signed")
    principal = verify(message, signature, signers)
    try:
        return msgspec.json.decode(message, type=Receipt), principal
    except (msgspec.DecodeError, RecursionError) as exc:
        raise SigningError(f"is signed, but what was signed is not a receipt ({exc})") from None


class _Signed(msgspec.Struct, frozen=True):
    where: str
    receipt: Receipt
    signer: str | None  # None: signatures not required


def _signed_only(
    useful: list[tuple[str, Receipt]], repo: Path | None, current: str
) -> _Signed | GateResult:
    """The newest measured receipt whose signature verifies against the team repo's
    allowed_signers; a refusal saying why the newest was not accepted when there is none."""
    signers = repo / SIGNERS if repo is not None else None
    if signers is None or not signers.is_file():
        where = f"{signers}" if signers else "a team repo (--team)"
        return GateResult(
            False,
            f"require-signed is set, but there is no {where} listing who may sign receipts; "
            f"add {SIGNERS} to the team repo (docs/ci.md)",
        )
    first: str | None = None
    for where, r in reversed(useful):
        try:
            return _Signed(where, *signed_receipt(where, signers))
        except SigningError as exc:
            first = first or f"the newest measured (run {r.run_id}) {exc}"
    return GateResult(
        False,
        f"no receipt for {current[:19]} is signed by a key in {SIGNERS}: {first}; receipts "
        "made on a laptop are advisory, sign them in CI (docs/ci.md)",
        useful[-1][0],
    )


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


def gate(
    skill_dir: Path, repo: Path | None, policy: Policy, now: datetime | None = None
) -> GateResult:
    """Does the newest receipt that measured these exact bytes meet the policy?

    A later run that scored nothing (NONE) never shadows an earlier measured one. Under
    require-signed only receipts signed by an allowed signer count. The receipt used must
    re-derive (its verdict, counts and power follow from its rows, its created_at is not in
    the future), come from a real model (not the scripted driver) reached at an allowed
    endpoint, and be complete unless the policy allows partial runs.
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
    required = policy.require_signed
    if required is None:
        required = repo is not None and (repo / SIGNERS).is_file()
    chosen = _signed_only(useful, repo, current) if required else _Signed(*useful[-1], None)
    if isinstance(chosen, GateResult):
        return chosen
    where, r = chosen.where, chosen.receipt
    problem = inconsistency(r, now)
    if problem is not None:
        why = f"the newest measured receipt (run {r.run_id}) {problem}"
        return GateResult(False, why, where)
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
    ends = r.provenance.endpoints
    off = [
        f"its {role} model at {e.url}"
        for role, e in ends.items()
        if e.url not in policy.allow_endpoints
    ]
    if off or not ends:
        reached = ", ".join(off) if off else "no recorded endpoint"
        why = (
            f"the newest measured receipt (run {r.run_id}) reached {reached}, not an allowed "
            f"endpoint ({', '.join(policy.allow_endpoints)}): a local or stub server says "
            "nothing about the provider's model; list it in allow-endpoints "
            "(--allow-endpoint) to accept it"
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
            f"underpowered: {power.get('decided', 0)} decided units, "
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
    # the incumbent's verdict is re-derived too: the receipt's counts just matched its rows
    lost = versus(r, "incumbent") == "FAIL"
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
    signed_by = f", signed by {chosen.signer}" if chosen.signer else ""
    return GateResult(
        True,
        f"{r.verdict} (run {r.run_id}, {r.scored_rows}/{r.expected_rows} rows scored{signed_by})",
        where,
    )


def versus(r: Receipt, opponent: str) -> str | None:
    """The verdict against one opponent, re-derived from the receipt's rows by the engine's
    rule; None when the run had no such opponent."""
    p = r.provenance
    if opponent not in p.opponents:
        return None
    rows = msgspec.convert(r.rows, list[RowSummary])
    found = derive(
        rows, opponents=p.opponents, units=p.units, k=p.k, seed=p.seed, min_net_lift=p.min_net_lift
    )
    return found.verdicts[opponent]
