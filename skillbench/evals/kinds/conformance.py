"""The check kind conformance suite (a `Kind`, evals/kinds/base.py): every kind in the
registry, built in or from a package (entry-point group `skillbench.check_kinds`, adapted by
plugin.py), runs it by subclassing `KindConformance` in a test module and giving a `kind`
fixture (`kinds()[NAME]`) and an `argument` fixture (a YAML value the kind accepts)."""

from __future__ import annotations

import asyncio

from skillbench.evals.kinds import Kind, Lint, kinds
from skillbench.evals.kinds.base import At, CheckContext
from skillbench.evals.model import Check
from skillbench.results.checks import CheckResult
from skillbench.results.transcript import Transcript


def _at(errors: list[str]) -> At:
    return At(7, None, errors.append)


class KindConformance:
    def test_is_in_the_registry_under_its_name_with_one_doc_line(self, kind: Kind) -> None:
        assert kinds()[kind.name] is kind
        assert kind.doc.strip() and "\n" not in kind.doc

    def test_parses_what_it_accepts_into_a_check_at_its_line(
        self, kind: Kind, argument: object
    ) -> None:
        errors: list[str] = []
        check = kind.parse(argument, _at(errors))
        assert errors == [] and check is not None
        assert (check.kind, check.line) == (kind.name, 7)

    def test_a_value_it_cannot_take_is_one_error_not_an_exception(self, kind: Kind) -> None:
        errors: list[str] = []
        assert kind.parse(object(), _at(errors)) is None
        assert len(errors) == 1 and errors[0].strip()

    def test_lints_are_findings(self, kind: Kind, argument: object) -> None:
        check = kind.parse(argument, _at([]))
        assert check is not None
        assert all(isinstance(found, Lint) for found in kind.lint(check))

    def test_a_session_without_a_sandbox_gets_a_result_not_an_exception(
        self, kind: Kind, argument: object
    ) -> None:
        check = kind.parse(argument, _at([]))
        assert check is not None
        result = asyncio.run(kind.run(check, CheckContext(Transcript([]), None)))
        assert isinstance(result, CheckResult) and result.name == check.name

    def test_an_empty_argument_gets_a_result_not_an_exception(self, kind: Kind) -> None:
        found = kind.run(Check(kind.name, "", 1), CheckContext(Transcript([]), None))
        assert isinstance(asyncio.run(found), CheckResult)
