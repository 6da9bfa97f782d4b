"""The tests/ fixtures (podman service, isolated SKILLBENCH_HOME, fake model server) for the
reproducers here; pytest's testpaths is tests/, so these files only run when named."""

from tests.conftest import *  # noqa: F403
