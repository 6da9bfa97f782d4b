"""report.html in a real browser (issue 16): headless Chromium from Debian's packages, driven
by its chromedriver, loads the report of a real end-to-end run (real sandboxes, the fake model
server) and is asserted on from the DOM. A screenshot is kept in .artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts"
# Chromium without a network to reach: the background services would only log refusals.
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1800",
]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_a_real_runs_report_in_chromium(fake, tmp_path: Path, capsys, browser: Any) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n",
            "evals/cases/bye.yaml": "task: Create bye.txt\nchecks:\n  - file_exists: bye.txt\n",
        },
    )
    fake(
        {
            "conversations": [
                conv(
                    CAND, "Create hello", write_file("hello.txt", "hi\n"), {"text": "hello written"}
                ),
                conv(CAND, "Create bye", bash("echo '<b>not markup</b>'"), {"text": "skipped it"}),
                conv(BASE, "Create hello", {"text": "cannot"}),
                conv(BASE, "Create bye", write_file("bye.txt", "bye\n"), {"text": "bye written"}),
            ]
        }
    )
    code, lines, summary = run_eval(capsys, folder, tmp_path / "run", "--execution-only", "--aa")
    page = tmp_path / "run/report.html"
    assert code == 3 and f"report: {page}" in lines  # two units: INCONCLUSIVE
    browser.get(page.as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows tbody tr.row")
    # every row is there, the regression first
    assert len(rows) == len(summary["rows"]) == 2
    assert [r.get_attribute("data-outcome") for r in rows] == ["loss", "win"]
    assert rows[0].find_elements(By.TAG_NAME, "td")[0].text == "bye"
    # a row opens to its three arms, each with its transcript
    rows[0].click()
    arms = browser.find_elements(By.CSS_SELECTOR, "tr.detail .arm")
    assert [a.get_attribute("data-arm") for a in arms] == ["baseline", "candidate", "baseline-b"]
    for arm in arms:
        assert arm.find_elements(By.CSS_SELECTOR, ".transcript .ev")
    candidate = arms[1]
    # the failed check shows its text
    failed = candidate.find_element(By.CSS_SELECTOR, ".check.fail")
    assert failed.text.splitlines() == ["file_exists: bye.txt", "missing"]
    # the agent's output is text on the page, never markup
    assert "<b>not markup</b>" in candidate.find_element(By.CSS_SELECTOR, ".transcript").text
    assert not browser.find_elements(By.CSS_SELECTOR, ".transcript b")
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "report.png"))
    # opening it again closes it; the filter shows only wins
    rows[0].click()
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.detail")
    browser.find_element(By.CSS_SELECTOR, ".filters button[data-filter='win']").click()
    assert [r.is_displayed() for r in rows] == [False, True]
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], json.dumps(errors)


@pytest.fixture
def rebinding_browser(tmp_path: Path) -> Iterator[Any]:
    """Chromium where a name of the attacker's resolves to 127.0.0.1 (DNS rebinding)."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    flags = [*FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"]
    for flag in [*flags, "--host-resolver-rules=MAP rebind.example 127.0.0.1"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_view_runs_no_agent_script_and_answers_only_its_own_name(
    tmp_path: Path, rebinding_browser: Any
) -> None:
    """Attacks on `skillbench view` in a real browser: a page of the attacker's whose name
    rebinds to 127.0.0.1 reads the report; an HTML file an agent left in its workspace runs
    script in the report's origin (here: it reads report.html into the title)."""
    import threading

    from skillbench.report.serve import server_for

    run = tmp_path / "run"
    (run / "workspaces/x.candidate.1").mkdir(parents=True)
    (run / "report.html").write_text("<title>report</title><p>SECRET TRANSCRIPT</p>")
    (run / "workspaces/x.candidate.1/index.html").write_text(
        "<title>agent</title><script>fetch('/report.html').then(r => r.text())"
        ".then(t => { document.title = 'pwned ' + t.length; })</script>"
    )
    server = server_for(run)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        browser = rebinding_browser
        browser.get(f"http://127.0.0.1:{port}/report.html")
        assert "SECRET TRANSCRIPT" in browser.page_source  # the report itself is served
        browser.get(f"http://localhost:{port}/report.html")
        assert "SECRET TRANSCRIPT" in browser.page_source
        browser.get(f"http://127.0.0.1:{port}/workspaces/x.candidate.1/index.html")
        browser.implicitly_wait(0)
        import time

        time.sleep(1.0)  # time enough for the script's fetch, had it run
        assert not browser.title.startswith("pwned"), browser.title
        assert "<script>" in browser.find_element(By.TAG_NAME, "body").text  # shown as text
        browser.get(f"http://rebind.example:{port}/report.html")
        assert "SECRET TRANSCRIPT" not in browser.page_source
    finally:
        server.shutdown()
        server.server_close()


def test_a_set_runs_grid_in_chromium_opens_each_cells_report(
    fake, tmp_path: Path, capsys, browser: Any
) -> None:
    """A set folder made of two ordinary evals (one skill, two models: the cells of a matrix)
    and set.json; `report SETDIR --format html` is the grid, each cell linking to its report."""
    from skillbench.cli import main
    from skillbench.results.cellset import Cell, CellSet, cell_dir, cell_id, write_set

    folder = skill(
        tmp_path,
        {"evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n"},
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hi\n"), {"text": "done"}),
                conv(BASE, "Create hello", {"text": "cannot"}),
            ]
        }
    )
    root = tmp_path / "set"
    cells = []
    for model in ("anthropic/claude-sonnet-4-6", "anthropic/claude-haiku-4-5"):
        run = cell_dir("greeter", "builtin", model)
        code, _, summary = run_eval(
            capsys, folder, root / run, "--model", model, "--execution-only"
        )
        assert code == 3 and summary["models"]["agent"] == model  # one unit: INCONCLUSIVE
        ident = cell_id("greeter", "builtin", model)
        cells.append(Cell(ident, "greeter", str(folder), "builtin", model, run, "done"))
    write_set(root, CellSet(run_id="set-1", cells=cells))
    assert main(["report", str(root), "--format", "html"]) == 0
    (root / "report.html").write_text(capsys.readouterr().out, encoding="utf-8")
    browser.get((root / "report.html").as_uri())
    grid = browser.find_elements(By.CSS_SELECTOR, "#grid td.cell")
    assert [td.get_attribute("data-cell") for td in grid] == [c.id for c in cells]
    assert [td.get_attribute("data-verdict") for td in grid] == ["INCONCLUSIVE"] * 2
    # coloured by verdict: INCONCLUSIVE is amber, and a lift of +100% is the strongest shade
    assert grid[0].value_of_css_property("background-color") == "rgba(191, 135, 0, 0.85)"
    assert "+100%" in grid[0].text and "1 of 1 decided" in grid[0].text
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "matrix.png"))
    grid[1].find_element(By.TAG_NAME, "a").click()
    assert browser.current_url == (root / cells[1].run / "report.html").as_uri()
    assert browser.find_elements(By.CSS_SELECTOR, "#rows tbody tr.row")  # the cell's own page
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], json.dumps(errors)
