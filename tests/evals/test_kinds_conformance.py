"""Every built-in check kind passes the kind conformance suite (evals/kinds/conformance.py),
as a package's kind does (tests/api/test_plugins.py)."""

from __future__ import annotations

import pytest

from skillbench.evals.kinds import BUILTIN, Kind
from skillbench.evals.kinds.conformance import KindConformance

ACCEPTED: dict[str, object] = {
    "reward": {"file": "/logs/verifier/reward.txt", "min": 0.5},
    "grader": {"run": "python3 grade.py", "min": 0.5},
}


@pytest.fixture(params=sorted(BUILTIN))
def kind(request: pytest.FixtureRequest) -> Kind:
    return BUILTIN[request.param]


@pytest.fixture
def argument(kind: Kind) -> object:
    return ACCEPTED.get(kind.name, "out.txt")


class TestBuiltinKinds(KindConformance):
    pass


def test_every_built_in_kind_is_tested() -> None:
    assert len(BUILTIN) == 13
