# Two entry points for a fresh machine: `make demo` and `make test`. Both set up .venv first.
VENV ?= .venv
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup demo test test-slow lint format clean
setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/cooper demo

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint
	$(VENV)/bin/python -m pytest -q

test-slow: setup
	$(VENV)/bin/python -m pytest -q -m slow

clean:
	rm -rf $(VENV) results .pytest_cache
