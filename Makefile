# The README's two commands are `make demo` and `make test`; both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# CI and development pin the CPU build of torch that this machine has on disk; users' runners
# bring their own torch (the `torch` extra only asks for a range).
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup demo test pytest lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)" -e ".[dev,server,torch]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/perfgate demo

test: lint pytest

pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# Python, then ci/: shellcheck and actionlint (tests/github/test_ci_lint.py also checks action.yml).
lint: $(STAMP)
	$(BIN)/ruff check service tests bench migrations examples
	$(BIN)/ruff format --check service tests bench migrations examples
	$(BIN)/mypy
	$(BIN)/shellcheck --external-sources ci/scripts/*.sh
	$(BIN)/actionlint -config-file ci/actionlint.yaml -shellcheck $(BIN)/shellcheck -pyflakes "" \
		ci/workflows/*.yml

format: $(STAMP)
	$(BIN)/ruff format service tests bench migrations examples
	$(BIN)/ruff check --fix service tests bench migrations examples

bench: $(STAMP)
	$(BIN)/python bench/upload_throughput.py

clean:
	rm -rf $(VENV) .perfgate .pytest_cache .mypy_cache .ruff_cache dist build
