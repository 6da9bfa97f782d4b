"""Every path an imported source names stays inside the source (issue 38 item 6; redteam4
IM2): a Margin `cases` entry or a skill-optimizer case name with `..` reads nothing of the
host. (skill-optimizer's case files and references: tests/importers/test_import.py.)"""

from __future__ import annotations

from pathlib import Path

from skillbench.cli import main
from tests.helpers import skill, write
from tests.importers.test_import import MARGIN, OPTIMIZER


def test_a_margin_cases_entry_with_dotdot_is_confined(tmp_path: Path, capsys) -> None:
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
    err = capsys.readouterr().err.strip()
    assert code == 2 and not list(into.rglob("secret.txt"))
    assert err == (
        f"skillbench: error: {src / 'suite.toml'}:4: cases entry "
        f"'../../../private/cases/held-out' leads outside {src / 'cases'}; an import reads "
        "only the source's own files (copy it in)"
    )


def test_a_skill_optimizer_case_name_never_finds_a_solution_outside(tmp_path: Path, capsys) -> None:
    write(tmp_path / "private/sol", {"solution.sh": "echo the held-out answer key\n"})
    files = dict(OPTIMIZER)
    files["cases/limerick.yml"] = OPTIMIZER["cases/limerick.yml"].replace(
        "name: limerick", "name: ../../../private/sol"
    )
    files["solutions/haiku/solution.sh"] = "echo a haiku > poem.txt\n"  # (solutions/ exists)
    src = write(tmp_path / "downloads/so", files)
    into = skill(tmp_path, {})
    code = main(["import", "skill-optimizer", str(src), "--into", str(into)])
    capsys.readouterr()
    leaked = [p for p in into.rglob("*") if p.is_file() and b"held-out" in p.read_bytes()]
    assert code == 0 and leaked == []
