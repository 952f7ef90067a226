# The README's two commands are `make demo` and `make test`; both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# CI and development pin the CPU build of torch that this machine has on disk; users' runners
# bring their own torch (the `torch` extra only asks for a range).
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup demo test pytest browser lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_PIN)" -e ".[dev,server,torch]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/perfgate demo

test: lint pytest

# Four pytest-xdist workers on two cores: most of the suite's time is spent waiting on
# subprocesses, servers and databases, not computing (one file per worker keeps each file's
# module-scoped fixtures in one process). Files start in collection order, which
# tests/conftest.py makes longest first (tests/suite_order.py): xdist's own order (most tests
# first) could start a minute-long file last. PYTEST_WORKERS=0 runs everything in this process.
PYTEST_WORKERS ?= 4
pytest: $(STAMP) browser
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The dashboard's browser tests drive Debian's headless Chromium and chromedriver: installed here
# when missing and possible (root, apt-get); otherwise those tests skip, said loudly (under CI=1
# they fail instead).
CHROMIUM_PKGS := chromium chromium-driver
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing $(CHROMIUM_PKGS) for the dashboard's browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq $(CHROMIUM_PKGS) >/dev/null; } || \
		echo "*** WARNING: could not install $(CHROMIUM_PKGS): the browser tests will skip ***"; \
	else \
		echo "*** WARNING: /usr/bin/chromium or /usr/bin/chromedriver missing and not root:"; \
		echo "*** the dashboard's browser tests will skip (apt-get install $(CHROMIUM_PKGS)) ***"; \
	fi

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
