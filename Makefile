# Each target does its own setup on a fresh machine: find Python >= 3.12, build .venv, install the locked deps.
VENV := .venv
export HARBOR_TELEMETRY ?= 0
export LITELLM_LOCAL_MODEL_COST_MAP ?= True

.PHONY: demo test lint typecheck setup clean

$(VENV)/.installed: pyproject.toml constraints.txt scripts/bootstrap.sh
	scripts/bootstrap.sh

setup: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider --skill-eval examples/hello-skill --agents replay --env-mode local --n-attempts 2

test: $(VENV)/.installed
	$(VENV)/bin/pytest -n 2 tests

# ruff's rules and format, and mypy's settings, are in pyproject.toml.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
