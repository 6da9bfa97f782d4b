"""`triggers`: trigger recall and precision of a skill or a whole library."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbench import api
from skillbench.cli.common import EXIT_OK, check_output, command, err, out

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_triggers(args: argparse.Namespace) -> int:
    import json

    from skillbench.engine.triggers import disagreements, steals
    from skillbench.report.terminal import trigger_lines

    if args.html:
        check_output(Path(args.html), "--html")
    options = api.Options(
        model=args.model,
        agent=args.agent,
        parallel=args.parallel,
        runs=args.runs,
        threshold=args.threshold,
        trigger_method=args.method,
        max_cost=args.max_cost,
    )
    measured = api.measure_triggers(args.path, options=options, log=err)
    methods, by_method = list(measured), list(measured.values())
    if args.html:
        from skillbench.report.html import render_triggers

        page = render_triggers(
            {
                reports[0].method: [r.summary() | {"skill": r.skill} for r in reports]
                for reports in by_method
            }
        )
        Path(args.html).write_text(page, encoding="utf-8")
    if args.json:
        by_skill: dict[str, Any] = {}
        for pair in zip(*by_method, strict=True):  # both methods: keyed by method
            shown = {m: r.summary() for m, r in zip(methods, pair, strict=True)}
            by_skill[pair[0].skill] = shown if len(pair) == 2 else pair[0].summary()
        print(json.dumps(by_skill, indent=2))
        return EXIT_OK
    many = len(by_method[0]) > 1  # a library root: each skill's lines under its name
    for reports in zip(*by_method, strict=True):
        if many:
            out(f"{reports[0].skill}:")
        for report in reports:
            for line in trigger_lines(report.summary()):
                out(("  " if many else "") + line)
        if len(reports) == 2:
            differ = disagreements(*reports)
            pad = "  " if many else ""
            out(f"{pad}methods disagree on {len(differ)} prompt(s)" + (":" if differ else ""))
            for prompt, expected, first, second in differ:
                out(
                    f'{pad}  "{prompt}" (should{"" if expected else " not"} trigger): '
                    f"{reports[0].method} {_fired(first)}, "
                    f"{reports[1].method} {_fired(second)}"
                )
    for one in by_method:
        stolen = steals(one)
        if many and stolen:
            label = f", {one[0].method}" if len(by_method) > 1 else ""
            out(f"confusion (who took each miss{label}):")
            for skill, prompt, by in stolen:
                out(f'  {skill}: "{prompt}" -> {", ".join(by) or "nothing selected"}')
    return EXIT_OK


def _fired(fired: bool | None) -> str:
    return {True: "fired", False: "did not fire", None: "errored"}[fired]


def register_triggers(sub: Subparsers) -> None:
    p = command(
        sub,
        "triggers",
        cmd_triggers,
        "measure trigger recall and precision",
        "For every prompt in evals/triggers.yaml, find which skills of the library get picked "
        "for that request, and count how often the skill is picked when it should be (recall) "
        "and only then (precision). Two methods: the catalog call (the model, no tools, is "
        "shown the library's catalog and asked which skills it would load) and the agent (the "
        "real agent CLI runs the request in a sandbox with every skill of the library staged; "
        "what it loads is what it picked; a canary prompt naming the skill must fire first). "
        "Given a library root, evaluate every skill with a triggers file and show which "
        "sibling took each miss.",
    )
    p.add_argument("path", metavar="SKILL|ROOT", help="a skill folder or a library root")
    p.add_argument("--model", help="anthropic/<m>, openai/<m> or scripted/<name>")
    p.add_argument(
        "--agent",
        help="measure by this agent's own routing: claude-code, codex, opencode, gemini-cli "
        "or copilot (implies --method agent)",
    )
    p.add_argument(
        "--method",
        choices=["catalog", "agent", "both"],
        help="catalog call (default without --agent), agent routing, or both side "
        "by side with the prompts they disagree on",
    )
    p.add_argument("--runs", type=int, default=1, help="ask each prompt N times (default 1)")
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="trigger rate that counts as fired (default 0.5)",
    )
    p.add_argument(
        "--parallel", type=int, help="calls at once, at most 64 (default: config `parallel`, or 4)"
    )
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="a ceiling on the measurement's spend: every catalog call and routing session "
        "reserves its worst case in one ledger first; what the cap leaves unrun is reported "
        "as not run",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write the results as a page, with the "
        "library's confusion matrix (who took each skill's prompts)",
    )
