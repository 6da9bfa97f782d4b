# skillbench: `make demo` runs the main job on the bundled skills, `make test` runs the tests;
# `make unit` is the fast tier to run before each commit (no podman).
# Both install what they need first (idempotent: each step skips what is already there).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup host venv image test lint unit demo bench clean

setup: host venv image

host:
	@bash scripts/setup-host.sh

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "skillbench needs Python >= 3.11"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

image: host venv
	@$(BIN)/skillbench image build --agent claude-code --agent codex --agent opencode \
	  --agent gemini-cli --agent copilot

lint: venv
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	@bash scripts/check-fmt-markers.sh
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet

test: setup lint
	@echo "(before each commit: 'make unit', the fast tier with no podman)"
	$(BIN)/pytest

# The tier to run before each commit: lint, types and the unit tests, no podman, on both
# cores (pytest-xdist). Bytecode is written so the test modules' rewritten asserts are
# cached between runs.
unit: venv lint
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -m "not sandbox and not e2e" -n 2
	@echo "unit tier green; 'make test' runs everything (real podman sandboxes)"

demo: setup
	@bash scripts/demo.sh

bench: setup
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
