# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := $(CURDIR)/.demo

# Prefect's environment defaults are set by memvault/prefect_env.py (the CLI, `make run` and
# the tests call it); these keep the embedding model offline for every command below.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false

.PHONY: install run test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first (the tests' reference embedder), pinned to the CPU build, so nothing pulls a CUDA wheel.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m pip check
	touch $(STAMP)

# A demo home under ./.demo (reset each time), the bundled samples, the full nightly flow
# in Prefect's ephemeral mode with a private PREFECT_HOME, then a recall.
run: install
	rm -rf $(DEMO)
	PREFECT_HOME=$(DEMO)/prefect MEMVAULT_HOME=$(DEMO)/home MEMVAULT_ENGINE=none \
		$(BIN)/python -m memvault.demo --samples samples

# Types first (strict on stores/, tasks/, flows/; see [tool.mypy] in pyproject.toml), then the tests.
test: install
	$(BIN)/python -m mypy
	PREFECT_HOME=$$(mktemp -d) $(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(DEMO)
