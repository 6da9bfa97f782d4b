"""`skillbench import`: eval suites people already have, as native evals (docs/formats.md)."""

from skillbench.importers.base import Imported, ImportError_, check_import, write_import
from skillbench.importers.formats import IMPORTERS

__all__ = ["IMPORTERS", "ImportError_", "Imported", "check_import", "write_import"]
