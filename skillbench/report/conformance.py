"""The report format conformance suite (a `ReportFormat`, report/formats.py): every format,
built in or from a package (entry-point group `skillbench.report_formats`), runs it by
subclassing `ReportFormatConformance` in a test module and giving two fixtures:
`report_format` (the function) and `run_folder` (a finished run's `RunFolder`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from skillbench.report.formats import ReportFormat
from skillbench.results.run_folder import RunFolder


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


class ReportFormatConformance:
    def test_renders_text(self, report_format: ReportFormat, run_folder: RunFolder) -> None:
        text = report_format(run_folder)
        assert isinstance(text, str) and text.strip()

    def test_the_same_folder_renders_the_same_text(
        self, report_format: ReportFormat, run_folder: RunFolder
    ) -> None:
        assert report_format(run_folder) == report_format(run_folder)

    def test_reads_the_run_folder_and_changes_nothing_in_it(
        self, report_format: ReportFormat, run_folder: RunFolder
    ) -> None:
        before = _tree(Path(run_folder.path))
        report_format(run_folder)
        assert _tree(Path(run_folder.path)) == before
