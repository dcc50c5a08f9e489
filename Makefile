# Each target does its own setup on a fresh machine: find Python >= 3.12, build .venv, install the locked deps.
VENV := .venv
export HARBOR_TELEMETRY ?= 0
export LITELLM_LOCAL_MODEL_COST_MAP ?= True

.PHONY: demo test test-harbor-0.24 lint typecheck setup clean

$(VENV)/.installed: pyproject.toml constraints.txt scripts/bootstrap.sh
	scripts/bootstrap.sh

setup: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider --skill-eval examples/hello-skill --agents replay --env-mode local --n-attempts 2

# --dist worksteal: xdist's default (load) hands each worker a first chunk of a quarter of the suite in collection
# order, so one worker starts with nearly all of tests/e2e and the other ends idle; worksteal splits the suite in
# halves and a worker that runs out takes half of the other's remaining tests.
test: $(VENV)/.installed
	$(VENV)/bin/pytest -n 2 --dist worksteal --durations=25 tests

# The oldest supported Harbor (pyproject: harbor>=0.24,<0.26) in its own venv, on a focused subset: the demo, the
# local environment, Docker, the real agent CLIs and terminus-2 (in local: Docker runs are test_docker_runs').
HARBOR_024 := .venv-harbor-0.24.0
$(HARBOR_024)/.installed: pyproject.toml constraints.txt scripts/bootstrap-harbor.sh
	scripts/bootstrap-harbor.sh 0.24.0

test-harbor-0.24: $(HARBOR_024)/.installed
	$(HARBOR_024)/bin/python -c "import importlib.metadata as m; assert m.version('harbor') == '0.24.0'"
	$(HARBOR_024)/bin/pytest -p no:cacheprovider --skill-eval examples/hello-skill --agents replay --env-mode local \
		--results-dir $(HARBOR_024)/demo-results
	$(HARBOR_024)/bin/pytest -n 2 -p no:cacheprovider tests/e2e/test_harbor_mounts.py tests/e2e/test_local_env.py \
		tests/e2e/test_replay_agent.py tests/e2e/test_docker_runs.py tests/e2e/test_agent_clis.py \
		tests/e2e/test_terminus2.py tests/plugin/test_runs.py tests/plugin/test_judge_runs.py \
		tests/plugin/test_credential_check.py --deselect "tests/e2e/test_terminus2.py::test_terminus2_on_the_demo_skill[docker]"

# ruff's rules and format, and mypy's settings, are in pyproject.toml.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(HARBOR_024) .pytest_cache .mypy_cache .ruff_cache
