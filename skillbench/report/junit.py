"""JUnit XML for CI systems: one test case per eval row, or one for a gate decision."""

from __future__ import annotations

import re
from xml.sax import saxutils

from skillbench.report.why import failing_checks, verifier_outputs
from skillbench.results.summary import Summary
from skillbench.results.verdict import UNSCORED

# what XML 1.0 cannot hold at all, escaped or not: control characters (a verifier's colours,
# a NUL), lone surrogates, U+FFFE/U+FFFF. A report with one does not parse, and CI drops it
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def escape(text: str) -> str:
    return saxutils.escape(_clean(text))


def quoteattr(text: str) -> str:
    return saxutils.quoteattr(_clean(text))


def _suite(name: str, cases: list[str], failures: int, skipped: int = 0) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name={quoteattr(name)} tests="{len(cases)}" failures="{failures}" '
        f'skipped="{skipped}">\n' + "".join(f"  {c}\n" for c in cases) + "</testsuite>\n"
    )


def gate_junit(skill: str, passed: bool, reason: str) -> str:
    """One test case: the gate's decision on a skill."""
    body = "" if passed else f"<failure message={quoteattr(reason)}/>"
    case = (
        f'<testcase classname="skillbench.gate" name={quoteattr(skill)}>{body}'
        f"<system-out>{escape(reason)}</system-out></testcase>"
    )
    return _suite("skillbench-gate", [case], 0 if passed else 1)


def eval_junit(summary: Summary) -> str:
    """One test case per row (a loss fails it, an unscored tie is skipped), and one skipped
    test case per row a skipped case or suite would have had, under a suite named for the
    skill and its verdict."""
    cases, failures, skipped = [], 0, 0
    cls = quoteattr(f"skillbench.eval.{summary.skill}")
    for row in summary.rows:
        name = f"{row.case} rep {row.rep} vs {row.opponent}"
        detail = f"{row.outcome} ({row.decided_by})"
        why = failing_checks(row.arms)  # the failing checks: what a CI reader looks for
        text = "\n".join([detail, *why, *verifier_outputs(row.arms)])
        if row.outcome == "loss":
            failures += 1
            message = f"{detail}: {why[0]}" if why else detail
            body = f"<failure message={quoteattr(message)}>{escape(text)}</failure>"
        elif row.decided_by in UNSCORED:
            skipped += 1
            body = f"<skipped message={quoteattr(detail)}/><system-out>{escape(text)}</system-out>"
        else:
            body = f"<system-out>{escape(text)}</system-out>"
        cases.append(f"<testcase classname={cls} name={quoteattr(name)}>{body}</testcase>")
    for skip in summary.skipped:  # the rows a skipped case (or suite) would have had
        reason = quoteattr(skip.reason)
        for unit in skip.units or [skip.case]:
            for rep in range(1, summary.k + 1):
                for opponent in summary.comparisons:
                    skipped += 1
                    name = quoteattr(f"{unit} rep {rep} vs {opponent}")
                    cases.append(
                        f"<testcase classname={cls} name={name}>"
                        f"<skipped message={reason}/></testcase>"
                    )
    return _suite(f"skillbench eval {summary.skill}: {summary.verdict}", cases, failures, skipped)
