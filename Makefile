# Each target does its own setup on a fresh machine: find Python >= 3.12, build .venv, install the locked deps.
VENV := .venv
export HARBOR_TELEMETRY ?= 0
export LITELLM_LOCAL_MODEL_COST_MAP ?= True

.PHONY: demo test setup clean

$(VENV)/.installed: pyproject.toml constraints.txt scripts/bootstrap.sh
	scripts/bootstrap.sh

setup: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider --skill-eval examples/hello-skill --agents replay --env-mode local --n-attempts 2

test: $(VENV)/.installed
	$(VENV)/bin/pytest -n 2 tests

clean:
	rm -rf $(VENV) .pytest_cache
