"""The importer conformance suite (an `Importer`, importers/formats.py): every import format,
built in or from a package (entry-point group `skillbench.importers`), runs it by subclassing
`ImporterConformance` in a test module and giving three fixtures: `importer` (the function),
`source` (a source of its format on disk) and `skill` (a skill folder to import into)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from skillbench.importers.base import Imported, check_import
from skillbench.importers.formats import Importer


def _tree(root: Path) -> dict[str, str]:
    """Every file under `root` with its digest: what an importer must leave as it found."""
    if root.is_file():
        return {root.name: hashlib.sha256(root.read_bytes()).hexdigest()}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


class ImporterConformance:
    def test_gives_an_imported_naming_its_cases_and_source(
        self, importer: Importer, source: Path
    ) -> None:
        result = importer(source, None)
        assert isinstance(result, Imported)
        assert result.cases, "an import of a source with cases names them"
        assert result.source.strip(), "`source` says where the cases came from"

    def test_writes_files_only_under_evals(self, importer: Importer, source: Path) -> None:
        for new in importer(source, None).files:
            parts = Path(new.rel).parts
            assert not Path(new.rel).is_absolute() and ".." not in parts, new.rel
            assert isinstance(new.content, bytes)

    def test_the_imported_evals_load_without_errors(
        self, importer: Importer, source: Path, skill: Path
    ) -> None:
        problems = check_import(importer(source, skill), skill)
        assert [p for p in problems if p.severity == "error"] == []

    def test_is_deterministic_and_leaves_the_source_as_it_was(
        self, importer: Importer, source: Path
    ) -> None:
        before = _tree(source)
        first, second = importer(source, None), importer(source, None)
        assert first.files == second.files and first.cases == second.cases
        assert _tree(source) == before
