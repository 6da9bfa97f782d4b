"""GR-TB1 (BROKEN, low): a receipt row whose `outcome` is not a known word is a KeyError
traceback out of `skillbench gate` (derive() indexes a table by the row's outcome).

Receipts are typed at the gate (receipts.Receipt: rows are `list[dict[str, Any]]`, converted
to RowSummary whose `outcome` is a plain str), so `"outcome": "banana"` reaches
skillbench/engine/score.derive and raises KeyError: 'banana'.

Expected: `gate refused: greeter: ... its rows are not rows skillbench writes` (exit 1).
Observed: KeyError traceback from cli.main (the gate does fail closed, but with a traceback;
the same receipt crashes anything else that derives it).
Fix: type RowSummary.outcome as a Literal of the outcomes (or validate in inconsistency()).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from skillbench.cli import main
from skillbench.receipts import store_dir
from skillbench.skills import digest
from tests.helpers import engine_receipt
from tests.test_receipt_trust import git_identity, greeter, team_repo  # noqa: F401


def test_an_unknown_row_outcome_is_a_one_line_refusal(tmp_path: Path, capsys):
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    run = engine_receipt(skill, "run-1", {"baseline": "WWWWWW"})
    shutil.rmtree(store_dir("greeter", digest(skill)))
    shutil.copytree(skill, repo / "skills/greeter/v1")
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["rows"][0]["outcome"] = "banana"
    target = repo / "evals/greeter/v1/run-1.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(receipt))
    code = main(["gate", str(repo / "skills/greeter/v1"), "--team", str(repo)])  # KeyError
    assert code == 1
    assert "not rows skillbench writes" in capsys.readouterr().out
