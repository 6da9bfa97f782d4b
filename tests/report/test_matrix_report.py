"""The matrix report of a set run (issue 35), from set folders whose cells are run folders written
from records as the engine writes them (test_report.fixed_run): every format, --cell, the where
line, the heterogeneity flag, compare between two sets, and the set reader's refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest

import skillbench
from skillbench.cli import main
from skillbench.results.cellset import Cell, CellSet, CellSetError, cell_dir, cell_id, write_set
from skillbench.results.stats import fisher_exact, heterogeneity, holm
from tests.report.test_report import fixed_run


def outcomes(wins: int, losses: int, ties: int = 0) -> dict[str, str]:
    cases = ["win"] * wins + ["loss"] * losses + ["tie"] * ties
    return {f"c{i:02}": o for i, o in enumerate(cases)}


def make_set(root: Path, cells: dict[tuple[str, str, str], dict[str, str] | str]) -> Path:
    """A set folder: each cell a fixed run folder (or, given a string, a refused cell)."""
    root.mkdir(parents=True, exist_ok=True)
    listed = []
    for (skill, agent, model), what in cells.items():
        run = cell_dir(skill, agent, model)
        if isinstance(what, str):
            cell = Cell(cell_id(skill, agent, model), skill, f"skills/{skill}", agent, model, run)
            cell.status, cell.reason = "refused", what
        else:
            fixed_run(root / run, what, run_id=f"{root.name}-{agent}-{model}".replace("/", "_"))
            cell = Cell(
                cell_id(skill, agent, model), skill, f"skills/{skill}", agent, model, run, "done"
            )
        listed.append(cell)
    write_set(root, CellSet(run_id=root.name, cells=listed))
    return root


SONNET, HAIKU = "anthropic/claude-sonnet-4-6", "anthropic/claude-haiku-4-5"
MATRIX = {
    ("greeter", "claude-code", SONNET): outcomes(8, 0),
    ("greeter", "codex", SONNET): outcomes(7, 1),
    ("greeter", "claude-code", HAIKU): outcomes(1, 7),
}


def test_fisher_exact_and_holm_match_known_values() -> None:
    # R: fisher.test(matrix(c(3,1,1,3),2)) p = 0.4857; the classic 1/9 vs 11/3 table p = 0.002759
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857142857, abs=1e-9)
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.0027594562, abs=1e-9)
    # all ten one way against all ten the other: the two extreme tables, 2 / C(20, 10)
    assert fisher_exact(10, 0, 0, 10) == pytest.approx(2 / 184756)
    assert fisher_exact(5, 0, 0, 0) == 1.0  # one margin is empty: nothing to test
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_heterogeneity_flags_the_cell_that_differs_and_not_noise() -> None:
    # 8-0, 7-1 and 1-7: the third against the pooled rest (15-1) is Fisher p = 0.000175,
    # x3 by Holm; set aside, 8-0 against 7-1 is p = 1: only the outlier is flagged (the first
    # cell against a rest of 8-8 is p = 0.022, which would flag it too without the step)
    assert fisher_exact(1, 7, 15, 1) == pytest.approx(0.000175, abs=5e-6)
    ps = heterogeneity([(8, 0), (7, 1), (1, 7)])
    assert ps[0] is None and ps[1] is None
    assert ps[2] == pytest.approx(3 * fisher_exact(1, 7, 15, 1))
    # the same split everywhere is noise, never a flag
    assert heterogeneity([(6, 2), (5, 3), (6, 2)]) == [None, None, None]
    # one cell with decided units: nothing to compare
    assert heterogeneity([(8, 0), (0, 0)]) == [None, None]
    # two cells that split opposite ways: each differs from the other, the first set aside
    assert heterogeneity([(9, 0), (0, 9)])[0] == pytest.approx(2 * fisher_exact(9, 0, 0, 9))


def test_report_of_a_set_renders_the_matrix_in_every_format(tmp_path: Path, capsys) -> None:
    root = make_set(tmp_path / "set-a", {**MATRIX, ("greeter", "codex", HAIKU): "no such model"})
    assert main(["report", str(root)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("set run set-a: 4 cells")
    assert f"greeter@claude-code@{SONNET}  PASS" in text
    assert (
        f"where: PASS on {SONNET} in claude-code and codex; FAIL on {HAIKU} in claude-code; "
        f"REFUSED on {HAIKU} in codex"
    ) in text
    assert f"differs: greeter@claude-code@{HAIKU}: 1W/7L of 8 decided units" in text
    # one agent: the models are the places; a library names each skill
    from skillbench.report.matrix import matrix, where_lines
    from skillbench.results.set_folder import load_set

    one = make_set(
        tmp_path / "set-b",
        {
            ("greeter", "builtin", SONNET): outcomes(5, 0),
            ("greeter", "builtin", HAIKU): outcomes(6, 0),
            ("farewell", "builtin", SONNET): outcomes(4, 4),
            ("farewell", "builtin", HAIKU): outcomes(5, 0),
        },
    )
    assert where_lines(matrix(load_set(one))) == [
        f"greeter: PASS on {SONNET} and {HAIKU}",
        f"farewell: PASS on {HAIKU}; NEUTRAL on {SONNET}",
    ]

    assert main(["report", str(root), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_id = {c["id"]: c for c in data["cells"]}
    assert len(by_id) == 4 and data["kind"] == "set"
    sonnet = by_id[f"greeter@claude-code@{SONNET}"]
    summary = json.loads((root / sonnet["run"] / "summary.json").read_text())
    assert sonnet["summary"] == summary and sonnet["verdict"] == "PASS"
    assert sonnet["decided"] == 8 and sonnet["net_lift"] == 1.0 and sonnet["low"] is not None
    assert by_id[f"greeter@claude-code@{HAIKU}"]["differs"] is True
    assert by_id[f"greeter@codex@{HAIKU}"]["summary"] is None

    assert main(["report", str(root), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    rows = [line for line in md.splitlines() if line.startswith("| greeter")]
    assert rows[0].startswith(f"| greeter | claude-code | {SONNET} | PASS | +100% [")
    assert f"| greeter | claude-code | {HAIKU} | **FAIL** (differs) | -75% [" in rows[2]
    assert "| 8 of 8 |" in rows[0]

    assert main(["report", str(root), "--format", "junit"]) == 0
    suite = ElementTree.fromstring(capsys.readouterr().out)
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "1")
    failed = suite.find(f"testcase[@name='claude-code / {HAIKU}']/failure")
    assert failed is not None and failed.get("message", "").startswith("FAIL: net lift -75%")
    assert suite.find(f"testcase[@name='codex / {HAIKU}']/skipped") is not None

    assert main(["report", str(root), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert page.count("<td class='cell'") == 4
    assert f"href='{cell_dir('greeter', 'codex', SONNET)}/report.html'" in page


def test_report_cell_renders_that_cells_own_report(tmp_path: Path, capsys) -> None:
    root = make_set(tmp_path / "set-a", MATRIX)
    ident = f"greeter@claude-code@{HAIKU}"
    assert main(["report", str(root), "--cell", ident, "--format", "json"]) == 0
    run = root / cell_dir("greeter", "claude-code", HAIKU)
    assert json.loads(capsys.readouterr().out) == json.loads((run / "summary.json").read_text())
    assert main(["report", str(root), "--cell", "nope@x@y"]) == 2
    err = capsys.readouterr().err
    assert "--cell nope@x@y: no such cell" in err and ident in err and "Traceback" not in err
    assert main(["report", str(run), "--cell", ident]) == 2
    assert "is a single run, not a set run" in capsys.readouterr().err


def test_read_set_gives_typed_cells_with_their_run_folders(tmp_path: Path) -> None:
    root = make_set(tmp_path / "set-a", {**MATRIX, ("greeter", "codex", HAIKU): "no such model"})
    folder = skillbench.read_set(root)
    assert [c.verdict for c in folder.cells] == ["PASS", "PASS", "FAIL", None]
    first = folder.cells[0]
    assert first.run is not None and first.run.summary.skill == "greeter"
    assert first.run.plan.run_id == skillbench.read_run(root / first.cell.run).plan.run_id
    assert folder.cells[3].problem == "refused: no such model"


def test_a_cell_run_that_leads_outside_the_set_folder_is_refused(tmp_path: Path, capsys) -> None:
    # set.json names cells/<slug>; a link there to another folder must not be read (or linked)
    root = make_set(tmp_path / "set-a", MATRIX)
    outside = fixed_run(tmp_path / "elsewhere", outcomes(5, 0), run_id="elsewhere")
    target = root / cell_dir("greeter", "codex", SONNET)
    os.rename(target, tmp_path / "moved")
    target.symlink_to(outside, target_is_directory=True)
    with pytest.raises(CellSetError, match="leads outside the set folder"):
        skillbench.read_set(root)
    assert main(["report", str(root)]) == 2
    err = capsys.readouterr().err
    assert "leads outside the set folder" in err and "Traceback" not in err


def test_compare_two_set_runs_cell_by_cell(tmp_path: Path, capsys) -> None:
    a = make_set(tmp_path / "set-a", MATRIX)
    later = {**MATRIX, ("greeter", "claude-code", HAIKU): outcomes(6, 2)}
    del later[("greeter", "codex", SONNET)]
    later[("greeter", "codex", HAIKU)] = outcomes(5, 0)
    b = make_set(tmp_path / "set-b", later)
    html_out = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(html_out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "A: set run set-a",
        "B: set run set-b",
        "cells: 3 changed verdict, 1 the same",
    ]
    assert (
        f"  greeter@claude-code@{SONNET}: PASS -> PASS (net lift +100% -> +100%) · rows: 0 changed, 8 the same"
        in lines
    )
    assert (
        f"  greeter@claude-code@{HAIKU}: FAIL -> NEUTRAL (net lift -75% -> +50%) · rows: 5 changed, 3 the same"
        in lines
    )
    assert f"  greeter@codex@{SONNET}: PASS -> (none in B) (net lift +75% -> n/a)" in lines
    assert f"  greeter@codex@{HAIKU}: (none in A) -> PASS (net lift n/a -> +100%)" in lines
    assert "    c01 #1 vs baseline: loss (checks) -> win (checks)" in lines
    assert html_out.read_text().count("<tr data-cell=") == 4
    # a set and a single run are not compared: one line says what to compare instead
    single = a / cell_dir("greeter", "codex", SONNET)
    assert main(["compare", str(a), str(single)]) == 2
    err = capsys.readouterr().err
    assert "is a set run and" in err and "Traceback" not in err


def test_view_serves_the_grid_and_each_cells_report_and_no_other_page(tmp_path: Path) -> None:
    """A set is served as its grid and the cells' own report.html (the paths set.json names);
    a report.html an agent left in a workspace copied out of a cell stays text, never a page."""
    import threading

    import httpx

    from skillbench.report.matrix import write_set_report
    from skillbench.report.serve import server_for

    root = make_set(tmp_path / "set-a", MATRIX)
    run = cell_dir("greeter", "codex", SONNET)
    (root / run / "report.html").write_text("<title>cell</title>")
    planted = root / run / "workspaces/x.candidate.1/report.html"
    planted.parent.mkdir(parents=True)
    planted.write_text("<script>document.title = 'pwned'</script>")
    assert write_set_report(root).read_text().count("<td class='cell'") == 3
    server = server_for(root, cells=tuple(c.cell.run for c in skillbench.read_set(root).cells))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        kinds = {
            path: httpx.get(base + path).headers["content-type"]
            for path in (
                "/report.html",
                f"/{run}/report.html",
                f"/{run}/workspaces/x.candidate.1/report.html",
            )
        }
    finally:
        server.shutdown()
        server.server_close()
    assert list(kinds.values()) == [
        "text/html; charset=utf-8",
        "text/html; charset=utf-8",
        "text/plain; charset=utf-8",
    ]
