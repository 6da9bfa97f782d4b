"""`publish`, `gate`, `receipts`: a skill's versions in the team repo, the receipts for them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench import api
from skillbench.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    UsageError,
    check_output,
    command,
    err,
    out,
    settings_for,
)
from skillbench.evals.skills import digest, is_skill, read_skill

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_publish(args: argparse.Namespace) -> int:
    from skillbench.evals.skills import is_library_root
    from skillbench.team.repo import TeamError, publish

    loaded = settings_for(Path(args.skill), args, ("team",))
    team = loaded.settings.team
    if not team:
        raise UsageError("publish needs --team REPO (or `team` in skillbench.toml)")
    path = Path(args.skill)
    library = not is_skill(path) and is_library_root(path)
    if not is_skill(path) and not library:
        raise UsageError(
            f"{args.skill}: not a skill folder (no SKILL.md) and not a library root (no child "
            "folder holds a SKILL.md)"
        )
    key = args.sign_key or loaded.settings.sign.key
    sign_key = Path(key) if key else None
    if library:
        return _publish_library(path, Path(team), sign_key)
    try:
        out(publish(path, Path(team), sign_key=sign_key))
    except TeamError as exc:
        err(f"skillbench: publish refused: {exc}")
        return EXIT_FAIL
    return EXIT_OK


def _publish_library(root: Path, team: Path, sign_key: Path | None) -> int:
    """Each skill of the library whose receipts pass the team's gate policy (as `gate` decides
    it, over every required cell) is published; the others are reported, one line each, and
    make the exit code 1."""
    from skillbench.errors import SkillbenchError
    from skillbench.evals.skills import root_children
    from skillbench.team.repo import publish

    skills = root_children(root)
    published, held = 0, []
    for skill in skills:
        try:
            result = api.gate(skill, options=api.GateOptions(team=str(team)))
            if not result.passed:
                held.append(f"{skill.name}: the gate refused it: {result.reason}")
                continue
            out(publish(skill, team, sign_key=sign_key))
            published += 1
        except SkillbenchError as exc:
            held.append(f"{skill.name}: {exc}")
    for line in held:
        out(f"not published: {line}")
    out(f"published {published} of {len(skills)} skills of {root}; {len(held)} not")
    return EXIT_FAIL if held else EXIT_OK


def cmd_gate(args: argparse.Namespace) -> int:
    from skillbench.report.junit import gate_junit
    from skillbench.team.repo import skill_at

    if args.junit:
        check_output(Path(args.junit), "--junit")
    options = api.GateOptions(
        team=args.team,
        require=args.require,
        min_recall=args.min_recall,
        min_precision=args.min_precision,
        allow_incumbent_fail=True if args.allow_incumbent_fail else None,
        allow_partial=True if args.allow_partial else None,
        require_power=True if args.require_power else None,
        allow_inconclusive=True if args.allow_inconclusive else None,
        trigger_method=args.trigger_method,
        require_signed=args.require_signed,
        allow_endpoints=args.allow_endpoints,
        require_cells=args.require_cells,
        allow_neutral_cells=True if args.allow_neutral_cells else None,
        allow_custom_ca=True if args.allow_custom_ca else None,
        policy_from=args.policy_from,
        base=args.base,
    )
    result = api.gate(args.skill, options=options)
    if result.passed and result.note:  # a refusal stays one line; a pass says what it trusted
        err(f"skillbench: note: {result.note}")
    skill_dir = Path(args.skill)
    name = skill_at(skill_dir).name
    if args.junit:
        Path(args.junit).write_text(gate_junit(name, result.passed, result.reason), "utf-8")
    if result.passed:
        out(f"gate passed: {name}: {result.reason}")
        return EXIT_OK
    out(f"gate refused: {name}: {result.reason}")
    return EXIT_FAIL


def cmd_receipts(args: argparse.Namespace) -> int:
    from skillbench.team.repo import known_receipts

    skill_dir = Path(args.skill)
    skill = read_skill(skill_dir)
    current = digest(skill_dir)
    loaded = settings_for(skill_dir, args, ("team",))
    team = Path(loaded.settings.team) if loaded.settings.team else None
    found = known_receipts(skill.name, team)
    if not found:
        out(f"no receipts for {skill.name}")
        return EXIT_OK
    for where, r in found:
        mark = "*" if r.digest == current else " "
        out(
            f"{mark} {r.digest[:19]}  {r.provenance.created_at}  {r.run_id}  {r.verdict:8}  {where}"
        )
    out("(* = the skill's current bytes)")
    return EXIT_OK


def register_publish(sub: Subparsers) -> None:
    p = command(
        sub,
        "publish",
        cmd_publish,
        "publish the skill into a team repo",
        "Copy the skill's bytes into the team repo as skills/<name>/v<N>/ (identical bytes "
        "reuse their version; version folders are never modified), update skills/<name>/evals/ "
        "(add or modify, never remove), attach the local receipts for these exact bytes under "
        "evals/<name>/v<N>/ (signed with --sign-key, or [sign] key, when they are not), and make "
        "one commit. Refuses a repo with uncommitted changes or a version folder edited by "
        "hand. Given a library root, publishes each skill whose receipts pass the team's gate "
        "policy (as `skillbench gate` decides it) and reports the others (exit 1 when any "
        "is not published).",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill folder, or a library root")
    p.add_argument("--team", metavar="REPO", help="the team repo (a git work tree)")
    p.add_argument(
        "--sign-key",
        dest="sign_key",
        metavar="PATH",
        help="sign the receipts attached unsigned with this SSH private key ([sign] key)",
    )


def register_gate(sub: Subparsers) -> None:
    p = command(
        sub,
        "gate",
        cmd_gate,
        "pre-publish gate: exit 0 only when a receipt meets the policy",
        "Find the newest receipt that measured the skill's exact current bytes (team repo and "
        "local store; a run that scored nothing never counts; under require-signed only "
        "receipts signed by an allowed signer) and check it against the policy: its verdict, "
        "counts and stats follow from its rows and it is not dated in the future, made by a "
        "real model (not the scripted driver) at an allowed endpoint, complete (unless "
        "--allow-partial), verdict vs baseline (INCONCLUSIVE only with --allow-inconclusive), "
        "not FAIL vs the incumbent, trigger recall and "
        "precision minimums. With receipts from several agents or models (a matrix), each "
        "required cell (agent/model: require-cells, default every cell with a receipt) is "
        "checked on its own newest receipt, and any refused cell refuses. Policy from flags, else "
        "[tool.skillbench.gate] in the team repo's pyproject.toml or [gate] in its "
        "skillbench.toml. Exit 0 pass, 1 refused (with a one-line reason).",
    )
    p.add_argument(
        "skill", metavar="SKILL", help="the skill folder, or a published skills/<name>/v<N> folder"
    )
    p.add_argument("--team", metavar="REPO", help="the team repo")
    p.add_argument("--require", choices=["PASS", "NEUTRAL"], help="weakest verdict allowed")
    p.add_argument("--min-recall", dest="min_recall", type=float, help="trigger recall floor")
    p.add_argument(
        "--min-precision", dest="min_precision", type=float, help="trigger precision floor"
    )
    p.add_argument(
        "--allow-incumbent-fail",
        action="store_true",
        help="do not refuse a FAIL against the incumbent",
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept a receipt whose run did not score every row",
    )
    p.add_argument(
        "--require-power",
        action="store_true",
        help="refuse a verdict the sign test could not make significant",
    )
    p.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="accept an INCONCLUSIVE verdict (fewer than 5 decided units)",
    )
    p.add_argument(
        "--trigger-method",
        dest="trigger_method",
        choices=["agent", "catalog"],
        help="accept trigger numbers only from this method",
    )
    p.add_argument(
        "--require-signed",
        dest="require_signed",
        action=argparse.BooleanOptionalAction,
        help="accept only receipts signed by a key in the team repo's "
        ".skillbench/allowed_signers (default: when that file exists)",
    )
    p.add_argument(
        "--allow-endpoint",
        dest="allow_endpoints",
        action="append",
        metavar="URL",
        help="accept models reached at this endpoint or through this proxy (repeatable; "
        "replaces the default, the providers' own APIs)",
    )
    p.add_argument(
        "--allow-custom-ca",
        dest="allow_custom_ca",
        action="store_true",
        help="accept runs whose model calls trusted a CA other than the system's "
        "(SSL_CERT_FILE, SSL_CERT_DIR, ...)",
    )
    p.add_argument(
        "--require-cell",
        dest="require_cells",
        action="append",
        metavar="AGENT/MODEL",
        help="a cell that must pass on its newest receipt, as an fnmatch pattern (e.g. "
        "'claude-code/*'; repeatable; replaces require-cells; default: every cell with a "
        "receipt for these bytes)",
    )
    p.add_argument(
        "--allow-neutral-cells",
        dest="allow_neutral_cells",
        action="store_true",
        help="with --require PASS: a required cell may be NEUTRAL beside one that passes",
    )
    p.add_argument(
        "--policy-from",
        dest="policy_from",
        metavar="REF",
        help="read the policy, allowed_signers and the team's receipts at this revision of the "
        "team repo (git show REF:path), never from its work tree: a full ref (refs/...), a "
        "commit id or a branch name",
    )
    p.add_argument(
        "--base",
        metavar="BRANCH",
        help="like --policy-from, at the merge base of HEAD with BRANCH (default in GitHub "
        "Actions: origin/$GITHUB_BASE_REF on a pull request, else the default branch); a "
        "short name is a branch, anything else is given in full (refs/...)",
    )
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")


def register_receipts(sub: Subparsers) -> None:
    p = command(
        sub,
        "receipts",
        cmd_receipts,
        "list the receipts known for a skill's versions",
        "List receipts from the local store ($SKILLBENCH_HOME, default ~/.skillbench) and, "
        "with --team, from the team repo; the skill's current bytes are starred.",
    )
    p.add_argument("skill", metavar="SKILL", help="the skill folder")
    p.add_argument("--team", metavar="REPO", help="the team repo")
