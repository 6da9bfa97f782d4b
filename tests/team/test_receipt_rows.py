"""A receipt's rows are typed where the gate reads them: an outcome skillbench never writes, or
a scored row with no outcome, is a one-line refusal, never a KeyError out of the tally
(redteam4 GR-TB1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.team.receipts import store_dir
from tests.helpers import engine_receipt
from tests.security.test_receipt_trust import git_identity, greeter, team_repo  # noqa: F401


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"outcome": "banana"}, "its rows are not rows skillbench writes (Invalid enum value"),
        (
            {"outcome": "unscored", "decided_by": "checks"},
            "is decided by 'checks' but has no outcome",
        ),
    ],
)
def test_an_unknown_row_outcome_is_a_one_line_refusal(
    tmp_path: Path, capsys, change: dict[str, str], said: str
) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    run = engine_receipt(skill, "run-1", {"baseline": "WWWWWW"})
    shutil.rmtree(store_dir("greeter", digest(skill)))
    shutil.copytree(skill, repo / "skills/greeter/v1")
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["rows"][0].update(change)
    target = repo / "evals/greeter/v1/run-1.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(receipt))
    code = main(["gate", str(repo / "skills/greeter/v1"), "--team", str(repo)])
    out = capsys.readouterr().out
    assert code == 1
    assert said in out and "Traceback" not in out
