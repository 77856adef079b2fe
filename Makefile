# canasta-rl developer tasks. Everything runs from the project virtualenv in .venv.
#
#   make demo    set up .venv if needed, then run the engine benchmark (`canasta bench`)
#   make test    set up .venv (and Chromium, for the browser test) if needed, then run the test suite
#   make lint    ruff, mypy and the import layers (lint-imports)
#   make warm    compile the numba kernels once (fills the on-disk cache)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# torch pinned and installed BEFORE the project, so the [train] extra finds it already satisfied (an
# unpinned torch resolved with the extras pulls a multi-GB CUDA build). Where pip's index serves the
# CUDA build (PyPI on Linux), `make venv TORCH_INDEX=https://download.pytorch.org/whl/cpu` gets the
# CPU one.
TORCH  := torch==2.13.0
TORCH_INDEX ?=

.DEFAULT_GOAL := help
.PHONY: help venv chromium demo test lint warm

help:
	@echo "targets: venv demo test lint warm"

venv: $(STAMP)

# Re-runs only when pyproject.toml changes (or .venv is missing); otherwise `make venv` is a no-op.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip "setuptools>=77" wheel
	$(BIN)/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[dev,train,ray,rllib,web]"
	@touch $(STAMP)

demo: venv
	$(BIN)/canasta bench

chromium:
	@bash scripts/ensure_chromium.sh

test: venv chromium
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=25 -q

lint: venv
	$(BIN)/ruff check $(wildcard canasta_env agents train tests examples)
	$(BIN)/mypy canasta_env
	$(BIN)/lint-imports

warm: venv
	$(BIN)/python -m train.common.warmup
