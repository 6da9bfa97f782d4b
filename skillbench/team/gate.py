"""The gate (docs/results.md): does the newest receipt that measured a skill's exact bytes meet the
team's policy? Receipts come from the team repo (team/repo.py) and the local store."""

from __future__ import annotations

import os
import tempfile
import tomllib
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import msgspec

from skillbench.evals.skills import VERSION_RE, digest, skill_files
from skillbench.models import PROVIDER_ENDPOINTS, origin
from skillbench.results.receipt import Claimed, Filed, Receipt, Unchecked, parse
from skillbench.results.score import derive
from skillbench.results.sequential import problem, stimuli_of, stop_of
from skillbench.results.verdict import INCONCLUSIVE, MIN_NET_LIFT, Verdict
from skillbench.team.anchors import (
    Revision,
    anchor,
    files_under,
    gitlinks,
    show,
    tree_entries,
    work_entries,
)
from skillbench.team.receipts import inconsistency, signed_message
from skillbench.team.repo import (
    SIGNERS,
    TeamError,
    Version,
    known_receipts,
    measured,
    skill_at,
    versions,
)
from skillbench.team.signing import SigningError, verify
from skillbench.util.inputs import MAX_JSON, InputError, load_toml, read_capped


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
    # a proxy counts as an endpoint (listed, or refused); a trust store other than the
    # system's (SSL_CERT_FILE, ...) lets anything answer as the provider: refused unless set
    allow_custom_ca: bool = False
    # the practical floor verdicts are re-derived with: the team's, never the one a receipt
    # names (a receipt's own -5 turns a lift too small to matter into PASS)
    min_net_lift: float = MIN_NET_LIFT
    # the cells (agent/model patterns, fnmatch: `claude-code/*`) that must each pass on their
    # newest receipt for these bytes; None: every cell that has a receipt for them
    require_cells: list[str] | None = None
    # with require = "PASS": a required cell may be NEUTRAL, so long as another one passes
    allow_neutral_cells: bool = False


def _stricter(team: Policy, local: Policy) -> Policy:
    """`team` with `local` applied only where it asks more: a pack's own file (its folder
    holds the skill gated) may tighten the team's policy, never relax it."""
    cells = (
        None if team.require_cells is None else [*team.require_cells, *(local.require_cells or [])]
    )
    return Policy(
        require="PASS" if "PASS" in (team.require, local.require) else team.require,
        allow_incumbent_fail=team.allow_incumbent_fail and local.allow_incumbent_fail,
        allow_partial=team.allow_partial and local.allow_partial,
        require_agent=team.require_agent or local.require_agent,
        require_power=team.require_power or local.require_power,
        allow_inconclusive=team.allow_inconclusive and local.allow_inconclusive,
        trigger_method=team.trigger_method or local.trigger_method,
        min_recall=max(
            (x for x in (team.min_recall, local.min_recall) if x is not None), default=None
        ),
        min_precision=max(
            (x for x in (team.min_precision, local.min_precision) if x is not None), default=None
        ),
        require_signed=True if local.require_signed else team.require_signed,
        allow_endpoints=[e for e in team.allow_endpoints if e in local.allow_endpoints],
        allow_custom_ca=team.allow_custom_ca and local.allow_custom_ca,
        min_net_lift=max(team.min_net_lift, local.min_net_lift),
        require_cells=cells,
        # a cell the pack adds is one more that must pass, never the passing partner a
        # NEUTRAL cell of the team's needs to be let through
        allow_neutral_cells=(
            team.allow_neutral_cells and local.allow_neutral_cells and not local.require_cells
        ),
    )


def _toml_at(rev: Revision, name: str) -> dict[str, Any] | None:
    data = show(rev, name)
    if data is None:
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise TeamError(f"{rev.ref}:{name}: not valid TOML ({exc})") from None


def load_policy(
    repo: Path | None,
    flags: dict[str, Any],
    rev: Revision | None = None,
    stricter: dict[str, Any] | None = None,
) -> Policy:
    """Policy from the team repo's [tool.skillbench.gate] / skillbench.toml [gate] (at `rev`
    when given, never the work tree then), then `stricter` where it is stricter, then flags."""
    data: dict[str, Any] = {}
    if repo is not None:
        for name, table in (
            ("pyproject.toml", ("tool", "skillbench", "gate")),
            ("skillbench.toml", ("gate",)),
        ):
            found: Any = None
            if rev is not None:
                found = _toml_at(anchor(rev), name)
            elif (repo / name).is_file():
                try:
                    found = load_toml(repo / name)
                except InputError as exc:
                    raise TeamError(str(exc)) from None
            if found is not None:
                for key in table:
                    found = found.get(key, {}) if isinstance(found, dict) else {}
                data.update({k.replace("-", "_"): v for k, v in found.items()})
    try:
        if stricter:
            team = _checked(msgspec.convert(data, Policy))
            local = _checked(msgspec.convert({**data, **stricter}, Policy))
            data = msgspec.structs.asdict(_stricter(team, local))
        data.update({k: v for k, v in flags.items() if v is not None})
        policy = msgspec.convert(data, Policy)
    except msgspec.ValidationError as exc:
        raise TeamError(f"gate policy: {exc}") from None
    return _checked(policy)


def _checked(policy: Policy) -> Policy:
    """`policy` if its values mean something (its endpoints as origins), else TeamError."""
    if policy.require not in ("PASS", "NEUTRAL"):
        raise TeamError("gate policy: `require` is PASS or NEUTRAL")
    if policy.trigger_method not in (None, "agent", "catalog"):
        raise TeamError("gate policy: `trigger-method` is agent or catalog")
    if not 0.0 <= policy.min_net_lift <= 1.0:
        raise TeamError(
            "gate policy: `min-net-lift` is a share of units between 0 and 1 "
            f"(default {MIN_NET_LIFT}), got {policy.min_net_lift}"
        )
    for entry in policy.allow_endpoints:
        if origin(entry) == "unknown":
            raise TeamError(
                f"gate policy: allow-endpoints entry {entry!r} is not a URL; write it like "
                "http://127.0.0.1:8080"
            )
    policy.allow_endpoints = [origin(e) for e in policy.allow_endpoints]
    if policy.require_cells == []:  # (a gate that requires no cell would check nothing)
        raise TeamError(
            "gate policy: require-cells is empty; name the agent/model cells that must pass, or "
            "leave it out to require every cell with a receipt"
        )
    for pattern in policy.require_cells or []:
        agent, _, model = pattern.partition("/")
        if not agent or not model:
            raise TeamError(
                f"gate policy: require-cells entry {pattern!r} is not agent/model; write it "
                'like "claude-code/*" or "*/anthropic/claude-haiku-4-5"'
            )
    return policy


class _Triggers(msgspec.Struct):
    method: str | None = None
    invalid: str | None = None
    recall: float | None = None
    precision: float | None = None


class _Read(msgspec.Struct):
    """The part of a receipt the gate reads that the Receipt type leaves open, summary.json's
    triggers object (so a hostile value is a one-line refusal, not a traceback)."""

    triggers: _Triggers | None = None


class GateResult(msgspec.Struct, frozen=True):
    passed: bool
    reason: str
    receipt: str | None = None
    cell: str | None = None  # agent/model of the receipt decided on
    verdict: str | None = None  # its verdict vs baseline, re-derived
    cells: list[GateResult] = []  # a gate over several cells: each cell's own decision
    note: str | None = None  # what the trust anchors were read from, when no flag said


def cell_of(r: Filed) -> str:
    """The cell a receipt measured, as require-cells names it: agent/model."""
    model = r.provenance.models.get("agent") or r.models.get("agent") or "unknown"
    return f"{r.agent or 'unknown'}/{model}"


def _bytes_of(where: str, rev: Revision | None) -> bytes:
    """A receipt's file: from a trusted revision (the merge base, or the base branch's tip)
    when `where` names one, else the disk."""
    for at in _revisions(rev):
        if where.startswith(f"{at.ref}:"):
            data = show(at, where.removeprefix(f"{at.ref}:"))
            if data is None:
                raise OSError(f"{where} is gone")
            return data
    return read_capped(Path(where), MAX_JSON)


def _revisions(rev: Revision | None) -> list[Revision]:
    """The trusted revisions receipts are read from: the revision, and the base branch's tip
    when that is another commit."""
    if rev is None:
        return []
    tip = anchor(rev)
    return [rev] if tip.commit == rev.commit else [rev, tip]


def signed_receipt(path: str, signers: Path, rev: Revision | None = None) -> tuple[Filed, str]:
    """The receipt file at `path` as its signer signed it, and the principal in `signers`
    whose key did; SigningError saying why when there is none. The receipt is read from the
    signed bytes themselves, so the gate judges exactly what was signed, whatever else the
    file holds (a key written twice, say)."""
    try:
        message, signature = signed_message(_bytes_of(path, rev))
    except (OSError, ValueError, RecursionError) as exc:
        raise SigningError(f"cannot be read ({exc})") from None
    if signature is None:
        raise SigningError("is not signed")
    principal = verify(message, signature, signers)
    try:
        return parse(message), principal
    except (msgspec.DecodeError, RecursionError) as exc:
        raise SigningError(f"is signed, but what was signed is not a receipt ({exc})") from None


class _Signed(msgspec.Struct, frozen=True):
    where: str
    receipt: Filed
    signer: str | None  # None: signatures not required


def _signed_only(
    useful: list[tuple[str, Filed]],
    repo: Path | None,
    current: str,
    rev: Revision | None = None,
) -> _Signed | GateResult:
    """The measured receipt with the newest signed time among those whose signature verifies
    against the team's allowed_signers (the trusted revision's, when given); a refusal saying
    why the newest was not accepted when there is none. The order is the signed content's,
    so no file order, name or mtime the PR controls can make an older PASS the newest."""
    if rev is not None:
        listed = show(anchor(rev), SIGNERS)
        where = f"{anchor(rev).ref}:{SIGNERS}"
    else:
        signers = repo / SIGNERS if repo is not None else None
        listed = signers.read_bytes() if signers is not None and signers.is_file() else None
        where = f"{signers}" if signers else "a team repo (--team)"
    if listed is None:
        return GateResult(
            False,
            f"require-signed is set, but there is no {where} listing who may sign receipts; "
            f"add {SIGNERS} to the team repo (docs/ci.md)",
        )
    first: str | None = None
    verified: list[_Signed] = []
    with tempfile.TemporaryDirectory(prefix="skillbench-signers-") as tmp:
        signers = Path(tmp) / "allowed_signers"
        signers.write_bytes(listed)
        for found, r in reversed(useful):
            try:
                verified.append(_Signed(found, *signed_receipt(found, signers, rev)))
            except SigningError as exc:
                shown = str(exc).replace(str(signers), where)
                first = first or f"the newest measured (run {r.run_id}) {shown}"
    signed = [s for s in verified if measured(s.receipt)]
    if signed:
        return max(signed, key=lambda s: (s.receipt.provenance.created_at, s.receipt.run_id))
    return GateResult(
        False,
        f"no receipt for {current[:19]} is signed by a key in {SIGNERS}: {first}; receipts "
        "made on a laptop are advisory, sign them in CI (docs/ci.md)",
        useful[-1][0],
    )


def versions_to_gate(skill_dir: Path, repo: Path | None, rev: Revision | None) -> list[Path]:
    """The other published versions a gate of `skill_dir` must pass too, when it is a version
    folder `skills/<name>/v<N>` of the team repo; TeamError when that skill's published tree is
    not one a gate can stand for. The CI loop gates each skill's newest folder, so a pull
    request could add a decoy the loop picks (`v3x/`, a copy of a measured version's bytes),
    a version below the newest that nothing gates, or rewrite a published one in place. So:
    every folder there but `evals/` is a `v<N>` version listed in versions.json at its
    digest; and, against a trusted revision, every version the base has is still there at
    the base's digest, and each version the work tree adds is returned to be gated as well."""
    if repo is None:
        return []
    root = Path(os.path.abspath(repo)) / "skills"
    here = Path(os.path.abspath(skill_dir))
    try:  # read where it is named (a link on the way must not move it out of sight) ...
        rel = here.relative_to(root)
    except ValueError:  # ... or where it is, when named by another path to the same place
        try:
            rel = here.resolve().relative_to(root.resolve())
        except ValueError:
            return []
    if len(rel.parts) != 2:
        return []
    name = rel.parts[0]
    folder = root / name
    children = list(folder.iterdir())
    # a link there makes the tree git holds and the one read differ (a version folder, or
    # the skill's folder, linked to bytes kept elsewhere)
    linked = [p for p in (root, folder, folder / "versions.json", *children) if p.is_symlink()]
    if linked:
        raise TeamError(
            f"{linked[0].relative_to(root.parent)} is a link: a skill's published tree holds "
            "its own folders and versions.json, never links; replace it with the files"
        )
    odd = sorted(
        c.name
        for c in children
        if c.is_dir() and c.name != "evals" and not VERSION_RE.match(c.name)
    )
    if odd:
        raise TeamError(
            f"skills/{name}/{odd[0]} is not a version folder (v<N>): a gate of the newest "
            "version stands for the skill's whole published tree; remove it"
        )
    published = {v.name: v for v in versions(repo, name)}  # (TeamError: edited in place)
    if rev is None:
        return []
    _library_kept(root, rev)
    linked_repos = gitlinks(rev, folder)
    if linked_repos:
        raise TeamError(
            f"{linked_repos[0]} is a git submodule: its files are another repository's, which "
            "no receipt measured; a published skill holds its own files"
        )
    raw = show(rev, f"skills/{name}/versions.json")
    try:
        base = msgspec.json.decode(raw, type=dict[str, str]) if raw else {}
    except msgspec.DecodeError:
        raise TeamError(f"{rev.ref}:skills/{name}/versions.json is not a version index") from None
    for version, was in sorted(base.items()):
        if published.get(version) is None or published[version].digest != was:
            raise TeamError(
                f"skills/{name}/{version} is published at {rev.ref} as {was[:19]}, and this "
                "tree removes or rewrites it: published versions are immutable"
            )
        # file for file, beyond the digest: what it leaves out (evals/, litter) is deployed
        # with the version too, and must not change after it was measured
        then = tree_entries(rev, f"skills/{name}/{version}")
        now = work_entries(rev, folder / version)
        if then != now:
            changed = sorted(set(then) ^ set(now) | {p for p in then if now.get(p) != then[p]})
            raise TeamError(
                f"skills/{name}/{version}/{changed[0]} differs from {rev.ref}: a published "
                "version is immutable, every file of it (digested or not); put changes in a "
                "new version"
            )
    added = [v for v in published.values() if v.name not in base]
    for v in added:
        _as_published(name, v.name, Path(v.path), rev, published.values())
    return [Path(v.path) for v in added if Path(v.path).resolve() != skill_dir.resolve()]


def _as_published(
    name: str, version: str, folder: Path, rev: Revision, every: Iterable[Version]
) -> None:
    """TeamError unless a version the work tree adds is one publish writes: the files its
    digest measures and nothing else (files it leaves out, evals/ or litter, would ship
    unmeasured under a receipt for its bytes), and bytes no other version has (a copy of a
    measured version, plus such files, would pass on that version's receipt)."""
    measured = {f.rel for f in skill_files(folder)}
    extra = sorted(
        p for p in work_entries(rev, folder) if unicodedata.normalize("NFC", p) not in measured
    )
    if extra:
        raise TeamError(
            f"skills/{name}/{version}/{extra[0]} is not a file of the version's digest (evals/, "
            "eval files and litter are not measured, and would ship with it unmeasured); "
            "remove it"
        )
    mine = digest(folder)
    same = sorted(o.name for o in every if o.name != version and o.digest == mine)
    if same:
        raise TeamError(
            f"skills/{name}/{version} holds the same bytes as {same[0]}: publish never adds a "
            "version for bytes already published; remove it"
        )


def _library_kept(root: Path, rev: Revision) -> None:
    """TeamError when the work tree's skills/ drops a skill the revision publishes (the CI
    loop gates the skills it finds, so a removed one is never looked at), or holds a hidden
    folder (`skills/.name/`, which the loop's glob passes over)."""
    hidden = sorted(p.name for p in root.iterdir() if p.name.startswith(".") and p.is_dir())
    if hidden:
        raise TeamError(
            f"skills/{hidden[0]} is a hidden folder: every skill in skills/ is gated, and "
            "the gate loop does not see this one; rename or remove it"
        )
    for rel in files_under(rev, "skills"):
        parts = Path(rel).parts
        kept = root / parts[1] / "versions.json"
        if len(parts) == 3 and parts[2] == "versions.json" and not kept.is_file():
            raise TeamError(
                f"skills/{parts[1]} is published at {rev.ref}, and this tree removes it: "
                "published versions are immutable"
            )


def with_base_receipts(
    found: list[tuple[str, Filed]], rev: Revision, name: str
) -> list[tuple[str, Filed]]:
    """`found` with every team receipt the trusted revisions hold read from them instead: a
    PR can add receipts, but not delete or rewrite one the base branch holds, at the merge
    base (what the PR started from) or at its tip (a receipt recorded after the PR forked: a
    fork point from before a newer signed FAIL must not hide it)."""
    at_base: dict[tuple[str, bytes], tuple[str, Filed]] = {}
    for at in _revisions(rev):
        for rel in files_under(at, f"evals/{name}"):
            parts = Path(rel).parts
            if len(parts) != 4 or not parts[2].startswith("v") or not rel.endswith(".json"):
                continue
            where = f"{at.ref}:{rel}"
            data = _bytes_of(where, rev)
            if (str(rev.repo / rel), data) in at_base:  # the same file at both revisions
                continue
            try:
                r = parse(data)
            except (msgspec.DecodeError, RecursionError) as exc:
                raise TeamError(f"{where}: not a receipt skillbench writes ({exc})") from None
            at_base[(str(rev.repo / rel), data)] = (where, r)
    held = {path for path, _ in at_base}
    kept = [pr for pr in found if pr[0] not in held]
    both = kept + list(at_base.values())
    return sorted(both, key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id))


def gate(
    skill_dir: Path,
    repo: Path | None,
    policy: Policy,
    now: datetime | None = None,
    rev: Revision | None = None,
) -> GateResult:
    """Do the newest receipts that measured these exact bytes meet the policy, in every
    required cell (agent/model)?

    Each cell is decided on its own newest receipt as a single run is (`_gate_cell`); the
    required cells are those `require-cells` names, else every cell with a receipt for these
    bytes from a model, not the scripted driver (with a trusted revision the base's receipts
    count: a PR cannot drop a cell by deleting its receipt). A required cell without a
    receipt, or whose receipt is refused, refuses the whole, naming the cell.
    """
    current = digest(skill_dir)
    name = skill_at(skill_dir).name
    everything = known_receipts(name, repo)
    if rev is not None:
        everything = with_base_receipts(everything, rev, name)
    found = [pr for pr in everything if pr[1].digest == current]
    if not found:
        return GateResult(
            False, f"no receipt for {current[:19]}: run `skillbench eval {skill_dir}` first"
        )
    by_cell: dict[str, list[tuple[str, Filed]]] = {}
    for pr in found:
        by_cell.setdefault(cell_of(pr[1]), []).append(pr)
    patterns = policy.require_cells
    if patterns is not None:
        missing = [p for p in patterns if not any(fnmatchcase(c, p) for c in by_cell)]
        if missing:
            return GateResult(
                False,
                f"required cell {', '.join(missing)} has no receipt for {current[:19]} (cells "
                f"with one: {', '.join(by_cell)}); run `skillbench eval {skill_dir}` with that "
                "--agent and --model",
            )
        by_cell = {c: rs for c, rs in by_cell.items() if any(fnmatchcase(c, p) for p in patterns)}
    else:
        # a scripted run's cell (scripted/demo) is not required beside a model's, but a
        # scripted receipt newer than every model's is refused as the newest measurement (as
        # for a single cell; only a cell with no model's receipt at all, so always refused: a
        # newer one could otherwise narrow the gate to one cell and leave another's FAIL out)
        newest = max(
            (pr for pr in found if measured(pr[1])),
            key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id),
            default=None,
        )
        real = {c: rs for c, rs in by_cell.items() if any(r.driver == "model" for _, r in rs)}
        if newest is not None and cell_of(newest[1]) not in real:
            real = {cell_of(newest[1]): by_cell[cell_of(newest[1])]}
        by_cell = real or by_cell
    lenient = policy.allow_neutral_cells and policy.require == "PASS" and len(by_cell) > 1
    each = msgspec.structs.replace(policy, require="NEUTRAL") if lenient else policy
    decided = [_gate_cell(cell, rs, repo, each, current, now, rev) for cell, rs in by_cell.items()]
    if len(decided) == 1:
        return decided[0]
    refused = [d for d in decided if not d.passed]
    if not refused and lenient and not any(d.verdict == "PASS" for d in decided):
        refused = [
            msgspec.structs.replace(
                d,
                passed=False,
                reason=f"{d.verdict}: no required cell is PASS (allow-neutral-cells lets a cell "
                "be NEUTRAL only beside one that passes; policy requires PASS)",
            )
            for d in decided
        ]
    if refused:
        reason = "; ".join(f"cell {d.cell}: {d.reason}" for d in refused)
        return GateResult(False, reason, refused[0].receipt, cells=decided)
    reason = f"{len(decided)} cells: " + "; ".join(f"{d.cell} {d.reason}" for d in decided)
    return GateResult(True, reason, decided[0].receipt, cells=decided)


def _gate_cell(
    cell: str,
    found: list[tuple[str, Filed]],
    repo: Path | None,
    policy: Policy,
    current: str,
    now: datetime | None,
    rev: Revision | None,
) -> GateResult:
    """Does the newest receipt of one cell meet the policy?

    A later run that scored nothing (NONE) never shadows an earlier measured one. Under
    require-signed only receipts signed by an allowed signer count. The receipt used must
    re-derive (its verdict, counts and power follow from its rows, its created_at is not in
    the future), come from a real model (not the scripted driver) reached at an allowed
    endpoint, and be complete unless the policy allows partial runs.
    """
    useful = [pr for pr in found if measured(pr[1])]
    if not useful:
        where, r = found[-1]
        why = (
            f"no receipt for {current[:19]} measured anything: the newest (run {r.run_id}) "
            f"scored {r.scored_rows}/{r.expected_rows} rows (verdict NONE: {r.why}); run "
            "`skillbench eval` again"
        )
        return GateResult(False, why, where, cell)
    required = policy.require_signed
    base_signers = rev is not None and show(anchor(rev), SIGNERS) is not None
    if rev is not None and base_signers and not (rev.repo / SIGNERS).is_file():
        return GateResult(
            False,
            f"{rev.repo / SIGNERS} is missing from the work tree but {anchor(rev).ref} has it: a "
            "change may not delete who may sign receipts (restore it; change it on the base "
            "branch)",
            cell=cell,
        )
    if required is None:
        if rev is not None:
            required = base_signers
        else:
            required = repo is not None and (repo / SIGNERS).is_file()
    chosen = _signed_only(useful, repo, current, rev) if required else _Signed(*useful[-1], None)
    if isinstance(chosen, GateResult):
        return msgspec.structs.replace(chosen, cell=cell)
    where, r = chosen.where, chosen.receipt
    if isinstance(r, Unchecked):  # an older schema's, or values skillbench never writes
        return GateResult(
            False, f"the newest measured receipt (run {r.run_id}) {r.problem}", where, cell
        )
    try:
        view = msgspec.convert({"triggers": r.triggers}, _Read)
    except msgspec.ValidationError as exc:
        return GateResult(False, f"{where}: not a receipt skillbench writes ({exc})", where, cell)
    problem = inconsistency(r, now) or stopping_problem(r)
    if problem is not None:
        why = f"the newest measured receipt (run {r.run_id}) {problem}"
        return GateResult(False, why, where, cell)
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
        return GateResult(False, why, where, cell)
    ends = r.provenance.endpoints
    off = [
        f"its {role} model at {e.url}" + (f" through the proxy {e.proxy}" if e.proxy else "")
        for role, e in ends.items()
        if e.url not in policy.allow_endpoints
        or (e.proxy is not None and e.proxy not in policy.allow_endpoints)
    ]
    if off or not ends:
        reached = ", ".join(off) if off else "no recorded endpoint"
        why = (
            f"the newest measured receipt (run {r.run_id}) reached {reached}, not an allowed "
            f"endpoint ({', '.join(policy.allow_endpoints)}): a local or stub server says "
            "nothing about the provider's model; list it in allow-endpoints "
            "(--allow-endpoint) to accept it"
        )
        return GateResult(False, why, where, cell)
    trusted = [f"its {role} model ({', '.join(e.ca)})" for role, e in ends.items() if e.ca]
    if trusted and not policy.allow_custom_ca:
        why = (
            f"the newest measured receipt (run {r.run_id}) reached {', '.join(trusted)} "
            "trusting a custom CA, under which any server can answer as the provider; set "
            "allow-custom-ca = true (--allow-custom-ca) to accept it"
        )
        return GateResult(False, why, where, cell)
    if not r.complete and not policy.allow_partial:
        stop = f", {r.stopped}" if r.stopped else ""
        why = (
            f"the newest measured receipt (run {r.run_id}) is incomplete: {r.scored_rows}/"
            f"{r.expected_rows} rows scored{stop}; resume or rerun the eval, or set "
            "allow-partial = true"
        )
        return GateResult(False, why, where, cell)
    reasons = []
    if policy.require_agent and r.agent != policy.require_agent:
        reasons.append(
            f"measured with agent {r.agent or 'unknown'} (policy requires {policy.require_agent})"
        )
    power = r.stats.get("baseline") or Claimed()
    # (what a receipt leaves out counts against it: no units decided, underpowered)
    decided = power.decided if isinstance(power.decided, int) else 0
    if policy.require_power and power.underpowered is not False:
        needs = power.needed if isinstance(power.needed, int) else None
        reasons.append(
            f"underpowered: {decided} decided units, "
            f"{needs if needs is not None else 'more than any run'} needed for "
            "p <= 0.05"
        )
    verdicts = rederived(r, policy.min_net_lift)
    verdict = verdicts[r.provenance.opponents[0]]
    floor = (
        f" under the policy's min-net-lift {policy.min_net_lift:g}" if verdict != r.verdict else ""
    )
    if verdict == INCONCLUSIVE and not policy.allow_inconclusive:
        units = decided
        reasons.append(
            f"verdict vs baseline is INCONCLUSIVE: {units} decided unit(s), and no verdict "
            "rests on fewer than 5; add cases (or --k for flaky ones), or set "
            "allow-inconclusive = true"
        )
    elif verdict == "FAIL" or (policy.require == "PASS" and verdict != "PASS"):
        reasons.append(
            f"verdict vs baseline is {verdict}{floor} (policy requires {policy.require})"
        )
    # the incumbent's verdict is re-derived too: the receipt's counts just matched its rows
    lost = verdicts.get("incumbent") == "FAIL"
    if lost and not policy.allow_incumbent_fail:
        reasons.append("FAIL vs the incumbent (the published version does better)")
    t = view.triggers or _Triggers()
    method = t.method or "catalog call"  # receipts before methods: the catalog
    if (
        policy.trigger_method
        and r.triggers is not None
        and not method.startswith(policy.trigger_method)
    ):
        reasons.append(
            f"triggers measured by {method} (policy requires trigger-method = "
            f'"{policy.trigger_method}")'
        )
    if t.invalid:
        reasons.append(f"the trigger measurement is invalid: {t.invalid}")
    for key, minimum in (("recall", policy.min_recall), ("precision", policy.min_precision)):
        if minimum is None:
            continue
        value = getattr(t, key)
        if value is None or value < minimum:
            shown = "n/a" if value is None else f"{value:.2f}"
            reasons.append(f"trigger {key} {shown} is under {minimum:.2f}")
    if reasons:
        return GateResult(False, "; ".join(reasons), where, cell, verdict)
    signed_by = f", signed by {chosen.signer}" if chosen.signer else ""
    return GateResult(
        True,
        f"{verdict} (run {r.run_id}, {r.scored_rows}/{r.expected_rows} rows scored{signed_by})",
        where,
        cell,
        verdict,
    )


def stopping_problem(r: Receipt) -> str | None:
    """Why a receipt's stop was not legitimate, or None: a complete run ran every repetition
    of the fixed design, or, under its declared stopping rule, every one that rule asked for
    up to the look where it stops (results/sequential.py's problem re-derives it); and the
    stop it claims is the one its rule makes on its rows."""
    p = r.provenance
    rows = r.rows
    if r.stop is not None and p.sequential is None:
        return (
            f"claims a stop at look {r.stop.look} ({r.stop.reason}) but declares no stopping rule"
        )
    skipped = {s.case for s in r.skipped}
    if p.sequential is not None:
        order = stimuli_of(u.name for u in p.units)
        looks = len(p.sequential.looks)
        made = stop_of(rows, p.sequential, p.opponents[0], order, looks, p.k, skipped)
        if made != r.stop:
            claimed = f"look {r.stop.look} ({r.stop.reason})" if r.stop else "no stop"
            real = f"look {made.look} ({made.reason})" if made else "no stop"
            return f"claims {claimed}, but its stopping rule stops its rows at {real}"
    if not r.complete:
        return None  # an incomplete run is refused (or allowed) as such
    found = problem(
        rows,
        p.sequential,
        units=[u.name for u in p.units],
        k=p.k,
        opponents=p.opponents,
        skipped=skipped,
    )
    return None if found is None else f"claims a complete run, but {found}"


def rederived(r: Receipt, min_net_lift: float) -> dict[str, Verdict]:
    """The verdict against each opponent, re-derived from the receipt's rows by the engine's
    rule with the policy's floor (a sequential rule's too: the floor is the policy's, never
    the one the receipt declares)."""
    p = r.provenance
    rule = p.sequential and msgspec.structs.replace(p.sequential, min_net_lift=min_net_lift)
    found = derive(
        r.rows,
        opponents=p.opponents,
        units=p.units,
        k=p.k,
        seed=p.seed,
        min_net_lift=min_net_lift,
        sequential=rule,
        skipped={s.case for s in r.skipped},
    )
    return found.verdicts
