"""The engine's version: in `skillbench --version`, run plans, the reuse cache's key and
generated files. It stands alone so that any module can name it without importing the API."""

__version__ = "0.1.0"
