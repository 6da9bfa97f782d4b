"""IM2 (BROKEN, low-medium): a Margin suite's `cases = [...]` entries are joined to
`<suite>/cases/` unconfined, so a hostile suite imports a folder from anywhere on the host.

importers/margin.py builds `src / "cases" / case` from each name in suite.toml's `cases` list
with no confined() check (skill_optimizer.py uses confined() for its case files and
references; issue 38 item 6 asks every importer to confine every referenced path). With
`cases = ["../../../private/cases/held-out"]`, a case folder outside the suite (another suite's
held-out tests, here a stand-in) is read and its tests/, oracle/ and env/ copied into the
skill's evals/ — and from there into every arm's check phase and the run folder. importers'
linked() does not catch it: no symlink is involved, only `..`.

Expected: refused in one line, "cases entry '../../../private/cases/held-out' leads outside".
Observed: exit 0; evals/cases/held-out/tests/secret.txt holds the host file's bytes.
"""

from __future__ import annotations

from pathlib import Path

from skillbench.cli import main
from tests.helpers import skill, write
from tests.test_import import MARGIN


def test_a_cases_entry_with_dotdot_is_confined(tmp_path: Path, capsys) -> None:
    private = {
        k.replace("cases/add-two/", "cases/held-out/"): v.replace("add-two", "held-out")
        for k, v in MARGIN.items()
        if k.startswith("cases/")
    }
    private["cases/held-out/tests/secret.txt"] = "the held-out answer key\n"
    write(tmp_path / "private", private)
    hostile = dict(MARGIN)
    hostile["suite.toml"] = (
        'kind = "test_suite"\nname = "arith"\ndescription = "d"\n'
        'cases = ["add-two", "../../../private/cases/held-out"]\n'
    )
    src = write(tmp_path / "downloads/margin", hostile)
    into = skill(tmp_path, {})
    code = main(["import", "margin", str(src), "--into", str(into)])
    captured = capsys.readouterr()
    leaked = list(into.rglob("secret.txt"))
    assert code == 2 and not leaked, (code, leaked, captured.out[-300:])
